//! `hcpx availability`'s text: the four flags, and what fixes each that is false.
//! Part of [`crate::render`], which re-exports it.

use std::fmt::Write as _;

use crate::availability::Availability;

pub(crate) fn availability_text(id: &str, availability: &Availability) -> String {
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
    for problem in &availability.problems {
        let flag = serde_json::to_value(problem.flag)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        let _ = writeln!(text, "  {flag}: {}\n    fix: {}", problem.reason, problem.fix);
    }
    text
}
