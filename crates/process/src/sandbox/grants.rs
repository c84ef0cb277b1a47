//! What a pack's command is granted, derived from its manifest, and what that comes
//! to for one call on this machine: the read allowlist, the layers, and the write
//! grants that nothing would keep away from `$HCP_HOME`. The sandbox's rules are
//! decided here; a handler only asks.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use hcpx_pack::invocation::absolute_under;
use hcpx_pack::manifest::{Effect, SandboxSpec};

use super::reads::{self, Reads, ReadsError};
use super::{HomeView, LayerReport, Machine, Needs, PASSED_ENV, TMPDIR, home, layers};

/// A command's grants, as its manifest declares them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Grants {
    pub network: bool,
    /// Write grants relative to the working directory: the manifest's, and none for
    /// a read, so a read runs in any folder (`$HOME` included).
    pub writes: Vec<String>,
    /// The unix sockets it may connect to (absolute, as declared).
    pub sockets: Vec<String>,
    /// `sandbox.read`: what every command of the pack may read beyond the allowlist.
    pub declared_reads: Vec<String>,
}

impl Grants {
    /// For one command of a pack.
    pub fn for_command(spec: &SandboxSpec, effect: Effect) -> Self {
        let mut grants = Self::for_pack(spec);
        if effect == Effect::Read {
            grants.writes.clear();
        }
        grants
    }

    /// For the pack as a whole: what its most demanding command needs.
    pub fn for_pack(spec: &SandboxSpec) -> Self {
        Self {
            network: spec.network,
            writes: spec.write.clone(),
            sockets: spec.sockets.clone(),
            declared_reads: spec.read.clone(),
        }
    }

    /// What these grants need from the machine, with why `$HCP_HOME` can be read past
    /// the filesystem layer here (see [`home::exposure`]).
    pub fn needs<'a>(&'a self, exposed: Option<&'a str>) -> Needs<'a> {
        Needs {
            network: self.network,
            writes: &self.writes,
            sockets: &self.sockets,
            exposed,
        }
    }

    /// The declared sockets as paths.
    pub fn socket_paths(&self) -> Vec<PathBuf> {
        self.sockets.iter().map(PathBuf::from).collect()
    }
}

/// Where one call runs: what its read allowlist is made from.
#[derive(Debug, Clone, Copy)]
pub struct Site<'a> {
    /// `$HCP_HOME` and every path of it.
    pub home: &'a HomeView,
    /// The caller's `HOME`, for `~/` in declared reads.
    pub user_home: Option<&'a Path>,
    pub cwd: &'a Path,
    /// The installed pack's folder (none for a built-in).
    pub pack_dir: Option<&'a Path>,
    /// The program that runs (absolute); `None` when it was not found, and then the
    /// call will not run.
    pub program: Option<&'a Path>,
    pub path_var: Option<&'a str>,
}

/// One call's sandbox, assessed before anything runs (also for `--dry-run`).
#[derive(Debug, Clone)]
pub struct Assessment {
    /// The read allowlist beyond the system folders, or why it cannot be granted.
    pub reads: Result<Reads, ReadsError>,
    /// The same as paths, for people and `--dry-run`.
    pub read: Vec<PathBuf>,
    pub layers: Vec<LayerReport>,
    /// A write grant that holds a path of `$HCP_HOME` where Landlock is not enforced,
    /// so that nothing would stop a write there: the call must not run.
    pub unguarded_write: Option<String>,
}

/// Assesses `grants` for a call at `site` on `machine`.
pub fn assess(grants: &Grants, site: &Site<'_>, machine: &Machine) -> Assessment {
    let reads = match site.program {
        Some(program) => reads::reads(&reads::Request {
            home: site.home,
            user_home: site.user_home,
            cwd: site.cwd,
            pack_dir: site.pack_dir,
            program,
            path_var: site.path_var,
            declared: &grants.declared_reads,
        }),
        None => Ok(Reads::default()),
    };
    let read = match &reads {
        Ok(reads) => reads
            .outside
            .iter()
            .cloned()
            .chain(reads.pack.iter().map(|relative| site.home.real().join(relative)))
            .collect(),
        Err(_) => Vec::new(),
    };
    let exposed = home::exposure(site.home.real());
    let layers = layers(machine, grants.needs(exposed.as_deref()));
    // Without Landlock nothing else keeps a write grant away from `$HCP_HOME` (any
    // path of it: the same check as for declared reads).
    let unguarded_write = if machine.landlock.enforced {
        None
    } else {
        grants
            .writes
            .iter()
            .find(|write| site.home.conflict(&absolute_under(site.cwd, write)).is_some())
            .cloned()
    };
    Assessment {
        reads,
        read,
        layers,
        unguarded_write,
    }
}

/// The names of the child's environment (see [`super::child_env`]): the passed ones
/// the caller has (`PATH` always), `TMPDIR`, and the bound keys, sorted.
pub fn env_names<'a>(
    caller: &BTreeMap<String, String>,
    bound: impl IntoIterator<Item = &'a str>,
) -> Vec<String> {
    let mut names: Vec<String> = PASSED_ENV
        .iter()
        .filter(|name| **name == "PATH" || caller.contains_key(**name))
        .map(|name| (*name).to_owned())
        .collect();
    names.push(TMPDIR.to_owned());
    names.extend(bound.into_iter().map(str::to_owned));
    names.sort();
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> SandboxSpec {
        SandboxSpec {
            network: true,
            write: vec!["out".to_owned()],
            read: vec!["/opt/data".to_owned()],
            sockets: vec!["/run/x.sock".to_owned()],
            ..SandboxSpec::default()
        }
    }

    #[test]
    fn a_read_gets_no_write_grant_and_every_other_effect_gets_the_manifests() {
        let read = Grants::for_command(&spec(), Effect::Read);
        assert_eq!(
            read,
            Grants {
                network: true,
                writes: Vec::new(),
                sockets: vec!["/run/x.sock".to_owned()],
                declared_reads: vec!["/opt/data".to_owned()],
            }
        );
        for effect in [Effect::Write, Effect::Destructive] {
            assert_eq!(Grants::for_command(&spec(), effect), Grants::for_pack(&spec()));
        }
        assert_eq!(Grants::for_pack(&spec()).writes, ["out"]);
    }

    #[test]
    fn without_landlock_a_write_grant_that_holds_hcp_home_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path().join("work");
        let home_dir = cwd.join("out").join("hcp");
        std::fs::create_dir_all(&home_dir).unwrap();
        let view = HomeView::new(&home_dir, None);
        let site = Site {
            home: &view,
            user_home: None,
            cwd: &cwd,
            pack_dir: None,
            program: None,
            path_var: None,
        };
        let grants = Grants::for_pack(&spec());
        let mut machine = Machine::all_enforced();
        assert_eq!(assess(&grants, &site, &machine).unguarded_write, None);
        machine.landlock.enforced = false;
        assert_eq!(
            assess(&grants, &site, &machine).unguarded_write,
            Some("out".to_owned())
        );
        let elsewhere = Grants {
            writes: vec!["logs".to_owned()],
            ..grants
        };
        assert_eq!(assess(&elsewhere, &site, &machine).unguarded_write, None);
    }

    #[test]
    fn env_names_are_the_passed_ones_present_tmpdir_and_the_bound_keys() {
        let caller: BTreeMap<String, String> = [("HOME", "/h"), ("SECRET", "x"), ("TZ", "UTC")]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        assert_eq!(
            env_names(&caller, ["API_KEY"]),
            ["API_KEY", "HOME", "PATH", "TMPDIR", "TZ"]
        );
    }
}
