//! Which sandbox layers a pack's command gets on this machine, as `doctor`,
//! `--dry-run` and `availability` report them: each with whether it is enforced
//! here and whether the command needs it. A needed layer that is not enforced makes
//! the pack not runnable in strict mode. Reported, never claimed.

use serde::Serialize;

use hcpx_pack::manifest::{MAX_TIMEOUT_MS, Network};

use super::{Machine, PASSED_ENV, Support};
use crate::runtime::{KILL_GRACE, MAX_OUTPUT_MIB};

/// One layer as shown by `doctor`, `--dry-run` and `availability`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LayerReport {
    pub layer: &'static str,
    pub enforced: bool,
    /// Whether this pack needs it (a needed layer that is not enforced makes the
    /// pack not runnable in strict mode).
    pub needed: bool,
    pub detail: String,
}

/// What a pack's command needs from the sandbox.
#[derive(Debug, Clone, Copy)]
pub struct Needs<'a> {
    pub network: &'a Network,
    /// Write grants (relative to the working directory); empty for read commands.
    pub writes: &'a [String],
    /// The unix sockets it declares.
    pub sockets: &'a [String],
    /// Why `$HCP_HOME` can be read past the filesystem layer here (a state file
    /// with a second hard link, see [`home::exposed`]): the layer then does not
    /// hold, and is reported as not enforced.
    pub exposed: Option<&'a str>,
    /// The pack's cache folder, which it also writes.
    pub cache: Option<&'a std::path::Path>,
}

/// The layers for one command on this machine.
pub fn layers(machine: &Machine, needs: Needs<'_>) -> Vec<LayerReport> {
    let always = |layer: &'static str, detail: &str| LayerReport {
        layer,
        enforced: true,
        needed: true,
        detail: detail.to_owned(),
    };
    let kernel = |layer: &'static str, support: &Support, needed: bool, detail: String| LayerReport {
        layer,
        enforced: support.enforced,
        needed,
        detail: if support.enforced {
            detail
        } else {
            support.detail.clone()
        },
    };
    let mut written: Vec<String> = needs.writes.to_vec();
    if let Some(cache) = needs.cache {
        written.push(format!("its cache folder {}", cache.display()));
    }
    let writes = if written.is_empty() {
        "its private temporary folder".to_owned()
    } else {
        format!("{} and its private temporary folder", written.join(", "))
    };
    let network = if let Network::Allow(endpoints) = needs.network {
        let list: Vec<String> = endpoints.iter().map(ToString::to_string).collect();
        kernel(
            "network",
            &machine.egress,
            true,
            format!(
                "only {} through hcpx's proxy: a network namespace with no route out, where the proxy resolves names and refuses (and audits) the rest",
                list.join(", ")
            ),
        )
    } else if needs.network.any() {
        LayerReport {
            layer: "network",
            enforced: false,
            needed: false,
            detail: "the pack declares network access: IPv4 and IPv6 as the user has them, no other socket"
                .to_owned(),
        }
    } else {
        kernel(
            "network",
            &machine.seccomp,
            true,
            "no sockets (seccomp): no TCP, UDP, raw or unix sockets; stream socketpairs only".to_owned(),
        )
    };
    vec![
        always(
            "environment",
            &format!(
                "cleared: only {}, a private TMPDIR, the pack's bindings and its sandbox.env",
                PASSED_ENV.join(", ")
            ),
        ),
        always(
            "stdin",
            "closed (/dev/null); a command that names a stdin binding gets its value alone, then end of input",
        ),
        kernel(
            "descriptors",
            &machine.descriptors,
            true,
            "only 0, 1 and 2 reach the pack, whatever the caller had open".to_owned(),
        ),
        always("session", "a session of its own: no controlling terminal"),
        kernel(
            "containment",
            &machine.containment,
            true,
            "every process the call starts is killed and reaped when it ends, also when hcpx is killed"
                .to_owned(),
        ),
        always(
            "timeout",
            &format!(
                "the manifest's timeoutMs, or --timeout-ms up to {MAX_TIMEOUT_MS}; TERM, then KILL after {} s",
                KILL_GRACE.as_secs()
            ),
        ),
        always(
            "output-cap",
            &format!("{MAX_OUTPUT_MIB} MiB per call; past it the call is stopped"),
        ),
        always("core-dumps", "off (RLIMIT_CORE = 0)"),
        kernel(
            "privileges",
            &machine.privileges,
            true,
            "no capabilities, no_new_privs: setuid files and file capabilities give nothing".to_owned(),
        ),
        match needs.exposed {
            Some(why) if machine.landlock.enforced => LayerReport {
                layer: "filesystem",
                enforced: false,
                needed: true,
                detail: why.to_owned(),
            },
            _ => kernel(
                "filesystem",
                &machine.landlock,
                true,
                format!(
                    "Landlock: reads only the system folders, the working directory, the pack's own files and what it declares, never HCP_HOME; writes only {writes}"
                ),
            ),
        },
        kernel(
            "process-isolation",
            &machine.scopes,
            true,
            "Landlock scopes: no signal, ptrace, /proc/PID/environ or mem of any process outside the call"
                .to_owned(),
        ),
        kernel(
            "process-list",
            &machine.process_list,
            false,
            "a /proc of its own: no other process is listed, command lines included".to_owned(),
        ),
        network,
        if needs.sockets.is_empty() {
            kernel(
                "sockets",
                &machine.seccomp,
                true,
                "none declared: no unix socket by path or name (seccomp); stream socketpairs only".to_owned(),
            )
        } else {
            kernel(
                "sockets",
                &machine.sockets,
                true,
                format!(
                    "connects only to {} (seccomp user notification: hcpx checks and makes each connect)",
                    needs.sockets.join(", ")
                ),
            )
        },
        kernel(
            "syscall-filter",
            &machine.seccomp,
            true,
            "seccomp: no kernel keyrings, io_uring, terminal input injection, System V IPC or POSIX message queues".to_owned(),
        ),
    ]
}

/// The needed layers this machine cannot enforce.
pub fn missing(layers: &[LayerReport]) -> Vec<&LayerReport> {
    layers
        .iter()
        .filter(|layer| layer.needed && !layer.enforced)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn everything() -> Machine {
        Machine::all_enforced()
    }

    const READ_ONLY: Needs<'static> = Needs {
        network: &Network::Off,
        writes: &[],
        sockets: &[],
        exposed: None,
        cache: None,
    };

    #[test]
    fn a_machine_with_every_layer_misses_none() {
        assert_eq!(
            missing(&layers(&everything(), READ_ONLY)),
            Vec::<&LayerReport>::new()
        );
    }

    /// Off Linux (or on a kernel without the features) the kernel layers are needed
    /// and missing, so strict mode refuses instead of running unconfined.
    #[test]
    fn without_kernel_layers_every_confinement_is_missing() {
        let machine = Machine::without_kernel_layers("not here");
        let gaps: Vec<&str> = missing(&layers(&machine, READ_ONLY))
            .iter()
            .map(|layer| layer.layer)
            .collect();
        assert_eq!(
            gaps,
            [
                "descriptors",
                "containment",
                "privileges",
                "filesystem",
                "process-isolation",
                "network",
                "sockets",
                "syscall-filter"
            ]
        );
        // A pack with the network does not need the network layer.
        let with_network = Needs {
            network: &Network::On,
            ..READ_ONLY
        };
        let reports = layers(&machine, with_network);
        let network = reports.iter().find(|layer| layer.layer == "network").unwrap();
        assert!(!network.needed && !network.enforced);
        assert_eq!(missing(&reports).len(), 7);
    }

    /// Declared sockets need the check of each connect; where the kernel cannot make
    /// it, strict mode refuses the pack (and only a pack that declares sockets).
    #[test]
    fn declared_sockets_need_user_notification() {
        let mut machine = everything();
        machine.sockets = Support::no("no user notification here");
        let sockets = ["/run/postgresql/.s.PGSQL.5432".to_owned()];
        let declared = Needs {
            sockets: &sockets,
            ..READ_ONLY
        };
        let gaps: Vec<&str> = missing(&layers(&machine, declared))
            .iter()
            .map(|layer| layer.layer)
            .collect();
        assert_eq!(gaps, ["sockets"]);
        assert_eq!(missing(&layers(&machine, READ_ONLY)), Vec::<&LayerReport>::new());
    }

    #[test]
    fn details_say_what_each_layer_does_here() {
        let reports = layers(
            &everything(),
            Needs {
                network: &Network::Off,
                writes: &["out".to_owned()],
                sockets: &[],
                exposed: None,
                cache: None,
            },
        );
        let filesystem = reports.iter().find(|layer| layer.layer == "filesystem").unwrap();
        assert_eq!(
            filesystem.detail,
            "Landlock: reads only the system folders, the working directory, the pack's own files and what it declares, never HCP_HOME; writes only out and its private temporary folder"
        );
        let cached = layers(
            &everything(),
            Needs {
                cache: Some(std::path::Path::new("/c/hcpx/packs/t-1")),
                ..READ_ONLY
            },
        );
        let filesystem = cached.iter().find(|layer| layer.layer == "filesystem").unwrap();
        assert!(
            filesystem
                .detail
                .ends_with("writes only its cache folder /c/hcpx/packs/t-1 and its private temporary folder"),
            "{}",
            filesystem.detail
        );
        let names: Vec<&str> = reports.iter().map(|layer| layer.layer).collect();
        assert_eq!(
            names,
            [
                "environment",
                "stdin",
                "descriptors",
                "session",
                "containment",
                "timeout",
                "output-cap",
                "core-dumps",
                "privileges",
                "filesystem",
                "process-isolation",
                "process-list",
                "network",
                "sockets",
                "syscall-filter"
            ]
        );
    }
}
