//! `hcpx availability`'s text: the four flags, and what fixes each that is false.
//! Part of [`crate::render`], which re-exports it.

use std::fmt::Write as _;

use crate::availability::Availability;
use crate::commands::availability::Granted;

pub(crate) fn availability_text(id: &str, availability: &Availability, grants: Option<&Granted>) -> String {
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
            let network = if command.network { "network" } else { "no network" };
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
    for problem in &availability.problems {
        let flag = serde_json::to_value(problem.flag)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        let _ = writeln!(text, "  {flag}: {}\n    fix: {}", problem.reason, problem.fix);
    }
    text
}
