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
    /// The folder of the packs' cache folders, and each folder in it.
    pub caches_root: Option<&'a Path>,
    pub caches: &'a [crate::pack_cache::Listed],
    /// The resident server's socket when one runs.
    pub resident: Option<&'a Path>,
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
    match doctor.caches_root {
        None => text.push_str("caches     none: neither XDG_CACHE_HOME nor HOME is set\n"),
        Some(root) => {
            let count = match doctor.caches.len() {
                1 => "1 folder".to_owned(),
                n => format!("{n} folders"),
            };
            let _ = writeln!(text, "caches     {} ({count})", root.display());
            for folder in doctor.caches {
                let _ = writeln!(
                    text,
                    "  {:<18} {:>10}  {}",
                    folder.pack.as_deref().unwrap_or("(no pack)"),
                    size_text(folder.bytes),
                    folder.path.display()
                );
            }
        }
    }
    match doctor.resident {
        Some(socket) => {
            let _ = writeln!(text, "resident   hcpx serve, at {}", socket.display());
        }
        None => text.push_str("resident   none (`hcpx serve` makes each `hcpx exec` start faster)\n"),
    }
    text
}

/// A size as a person reads it: bytes, KiB, MiB or GiB, one decimal past bytes.
fn size_text(bytes: u64) -> String {
    const UNITS: [&str; 3] = ["KiB", "MiB", "GiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::size_text;

    #[test]
    fn sizes_read_as_people_say_them() {
        assert_eq!(size_text(0), "0 B");
        assert_eq!(size_text(1023), "1023 B");
        assert_eq!(size_text(1536), "1.5 KiB");
        assert_eq!(size_text(5 * 1024 * 1024), "5.0 MiB");
        assert_eq!(size_text(3 << 40), "3072.0 GiB");
    }
}
