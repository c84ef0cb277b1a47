//! `hcpx availability`'s text: the four flags, the pack's program of the machine,
//! and what fixes each flag that is false. Part of [`crate::render`], which
//! re-exports it.

use std::fmt::Write as _;

use super::inert_line;
use crate::availability::{Availability, ProgramReport};
use crate::commands::availability::Granted;
use crate::next::Next;

pub(crate) fn availability_text(
    id: &str,
    availability: &Availability,
    grants: Option<&Granted>,
    next: Option<&Next>,
) -> String {
    let mut text = String::new();
    let mark = |flag: bool| if flag { "yes" } else { "NO " };
    let _ = writeln!(
        text,
        "{id}: {}",
        if availability.ready { "ready" } else { "not ready" }
    );
    for (name, flag) in [
        ("installed", availability.installed),
        ("runnable", availability.runnable),
        ("bound", availability.bound),
        ("permitted", availability.permitted),
    ] {
        let _ = writeln!(text, "  {name:<10} {}", mark(flag));
    }
    if let Some(grants) = grants {
        for (index, command) in grants.commands.iter().enumerate() {
            let writes = match command.write.is_empty() {
                true => "writes only its temporary folder".to_owned(),
                false => format!("writes {}", command.write.join(", ")),
            };
            let network = command.network.summary("network");
            let label = if index == 0 { "grants" } else { "" };
            let _ = writeln!(text, "  {label:<10} {}: {network}; {writes}", command.command);
        }
        if let Some(cache) = &grants.cache {
            let _ = writeln!(
                text,
                "  {:<10} {} (every command writes it)",
                "cache",
                cache.display()
            );
        }
    }
    if let Some(program) = &availability.program {
        let _ = writeln!(text, "  {:<10} {}", "program", inert_line(&program_line(program)));
    }
    if let Some(version) = &availability.update {
        let _ = writeln!(
            text,
            "  {:<10} {version} is in this hcpx's catalog: {}",
            "update",
            Next::hcpx(["install", id])
        );
    }
    for problem in &availability.problems {
        let flag = serde_json::to_value(problem.flag)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        let _ = writeln!(
            text,
            "  {flag}: {}\n    fix: {}",
            inert_line(&problem.reason),
            inert_line(&problem.fix)
        );
    }
    if let Some(next) = next {
        let _ = writeln!(text, "next: {next}");
    }
    text
}

/// `/usr/bin/rg (ripgrep 13.0.0); supports BurntSushi's ripgrep`, or
/// `rg: not found (supports …)`.
fn program_line(program: &ProgramReport) -> String {
    let mut line = match (&program.path, &program.version) {
        (Some(path), Some(version)) => format!("{} ({version})", path.display()),
        (Some(path), None) => path.display().to_string(),
        (None, _) => format!("{}: not found", program.name),
    };
    match (&program.variant, &program.path) {
        (Some(variant), Some(_)) => {
            let _ = write!(line, "; supports {variant}");
        }
        (Some(variant), None) => {
            let _ = write!(line, " (supports {variant})");
        }
        (None, _) => {}
    }
    line
}
