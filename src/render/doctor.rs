//! `hcpx doctor`'s text. Part of [`crate::render`], which re-exports it.

use std::fmt::Write as _;
use std::path::Path;

use super::{LayerLine, layer_text};
use crate::catalog::BrokenPack;
use crate::context::Principal;
use crate::policy::Policies;
use crate::sandbox::{LayerReport, Mode};

/// What `hcpx doctor` found.
pub(crate) struct Doctor<'a> {
    pub home: &'a Path,
    pub home_exists: bool,
    /// Every path of `$HCP_HOME` the sandbox hides (its real path first).
    pub home_paths: &'a [std::path::PathBuf],
    pub principal: Principal,
    pub builtin: usize,
    pub installed: usize,
    pub broken: &'a [BrokenPack],
    pub policies: &'a Policies,
    pub mode: Mode,
    pub layers: &'a [LayerReport],
    /// Why the binding store cannot be read, or `None` when it can.
    pub bindings_error: Option<&'a str>,
}

/// `hcpx doctor`: one line per thing checked, the broken packs and the sandbox's
/// layers below theirs.
pub(crate) fn doctor_text(doctor: &Doctor<'_>) -> String {
    let mut text = String::new();
    let _ = writeln!(
        text,
        "HCP_HOME   {}{}",
        doctor.home.display(),
        if doctor.home_exists {
            ""
        } else {
            " (not created yet)"
        }
    );
    if let [real, others @ ..] = doctor.home_paths
        && (!others.is_empty() || real != doctor.home)
    {
        let paths: Vec<String> = doctor
            .home_paths
            .iter()
            .map(|path| path.display().to_string())
            .collect();
        let _ = writeln!(text, "  hidden from packs at {}", paths.join(", "));
    }
    let _ = writeln!(text, "caller     {}", doctor.principal.as_str());
    let _ = writeln!(
        text,
        "packs      {} built in, {} installed, {} broken",
        doctor.builtin,
        doctor.installed,
        doctor.broken.len()
    );
    for broken in doctor.broken {
        let _ = writeln!(
            text,
            "  broken: {} ({}): hcpx pack check {}",
            broken.id,
            super::count(broken.problems.len(), "problem"),
            broken.dir.display()
        );
    }
    let _ = writeln!(
        text,
        "policy     user: {}\n           project: {}",
        layer_text(&doctor.policies.user, &LayerLine::Status),
        layer_text(&doctor.policies.project, &LayerLine::Status)
    );
    let mode = match doctor.mode {
        Mode::Strict => "strict (a pack whose needed layer is missing does not run)",
        Mode::BestEffort => "best-effort (HCP_SANDBOX): packs run with the layers enforced here",
    };
    let _ = writeln!(text, "sandbox    mode {mode}");
    for layer in doctor.layers {
        let state = if layer.enforced {
            "enforced"
        } else {
            "NOT enforced"
        };
        let _ = writeln!(text, "  {:<18} {state:<12} {}", layer.layer, layer.detail);
    }
    let _ = writeln!(text, "bindings   {}", doctor.bindings_error.unwrap_or("ok"));
    text
}
