//! What a pack's command is granted, derived from its manifest and the call's values,
//! and what that comes to for one call on this machine: the read allowlist, the
//! layers, and the write grants that nothing would keep away from `$HCP_HOME`. The
//! sandbox's rules are decided here; a handler only asks.
//!
//! A command's `write` and `network` replace the pack's `sandbox.write` and
//! `sandbox.network`; a `write` item that names a `path` parameter grants the folder
//! the caller gave (made at spawn when missing), and nothing when it is absent. A
//! `read` command writes nothing but its temporary folder and the pack's cache
//! folder, which every command of the pack may write.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use hcpx_pack::invocation::{Values, absolute_under};
use hcpx_pack::manifest::{Command, Effect, EnvValue, Manifest, Network, SandboxSpec, WriteItem};

use super::folders::{CacheFolder, CacheInHome};
use super::reads::{self, Reads, ReadsError};
use super::{HomeView, LayerReport, Machine, Needs, PASSED_ENV, TMPDIR, home, layers};

/// A command's grants, as its manifest declares them (and, for one call, as the
/// caller's values fill them in).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Grants {
    pub network: Network,
    /// Write grants relative to the working directory: the command's `write` or else
    /// the pack's, with a `path` parameter's value in its place; none for a read, so
    /// a read runs in any folder (`$HOME` included).
    pub writes: Vec<String>,
    /// The grants of [`Self::writes`] that a `path` parameter named: made, with their
    /// missing parents, beneath the working directory when the call spawns.
    pub made: Vec<String>,
    /// The unix sockets it may connect to (absolute, as declared).
    pub sockets: Vec<String>,
    /// `sandbox.read`: what every command of the pack may read beyond the allowlist.
    pub declared_reads: Vec<String>,
    /// `sandbox.env`, as declared: fixed text, or paths in the pack's cache folder.
    pub env: Vec<(String, EnvValue)>,
    /// The pack's cache folder, when its `sandbox.env` names one and the caller knows
    /// where it is ([`Self::with_cache`]): readable and writable by every command of
    /// the pack, and by no other pack.
    pub cache: Option<CacheFolder>,
}

impl Grants {
    /// For one call of a command, with the caller's values (`path` values as the
    /// invocation keeps them: relative, checked to stay inside the working directory).
    pub fn for_command(spec: &SandboxSpec, command: &Command, values: &Values) -> Self {
        let mut grants = Self::of(spec, command);
        let mut writes = Vec::new();
        let mut made = Vec::new();
        match (&command.write, command.effect) {
            (_, Effect::Read) => {}
            (None, _) => writes.clone_from(&spec.write),
            (Some(items), _) => {
                for item in items {
                    match item {
                        WriteItem::Path(path) => writes.push(path.clone()),
                        WriteItem::Param(name) => {
                            for value in values.get(name).into_iter().flatten() {
                                // `./out` as the CLI gets it is `out` as people read it.
                                let path = value.strip_prefix("./").filter(|rest| !rest.is_empty());
                                let path = path.unwrap_or(value).to_owned();
                                writes.push(path.clone());
                                made.push(path);
                            }
                        }
                    }
                }
            }
        }
        grants.writes = writes;
        grants.made = made;
        grants
    }

    /// For a command before any call: a `path` parameter's grant as written
    /// (`{into}`), for people and availability.
    pub fn declared(spec: &SandboxSpec, command: &Command) -> Self {
        let mut grants = Self::of(spec, command);
        grants.writes = match (&command.write, command.effect) {
            (_, Effect::Read) => Vec::new(),
            (None, _) => spec.write.clone(),
            (Some(items), _) => items
                .iter()
                .map(|item| match item {
                    WriteItem::Path(path) => path.clone(),
                    WriteItem::Param(name) => format!("{{{name}}}"),
                })
                .collect(),
        };
        grants
    }

    /// What a command shares with the rest of its pack: the pack's sockets, reads and
    /// environment; and its network, or else the pack's.
    fn of(spec: &SandboxSpec, command: &Command) -> Self {
        Self {
            network: command.network.clone().unwrap_or_else(|| spec.network.clone()),
            writes: Vec::new(),
            made: Vec::new(),
            sockets: spec.sockets.clone(),
            declared_reads: spec.read.clone(),
            env: spec.env.clone(),
            cache: None,
        }
    }

    /// For the pack as a whole: what its most demanding command needs of the machine
    /// (the network layer when any command goes without the network), with every
    /// command's write grants as declared.
    pub fn for_pack(manifest: &Manifest) -> Self {
        let spec = &manifest.sandbox;
        let mut grants = Self {
            network: spec.network.clone(),
            writes: spec.write.clone(),
            made: Vec::new(),
            sockets: spec.sockets.clone(),
            declared_reads: spec.read.clone(),
            env: spec.env.clone(),
            cache: None,
        };
        if !manifest.commands.is_empty() {
            grants.network = most_demanding(
                manifest
                    .commands
                    .iter()
                    .map(|command| command.network.as_ref().unwrap_or(&spec.network)),
            );
            grants.writes.clear();
            for command in &manifest.commands {
                for write in Self::declared(spec, command).writes {
                    if !grants.writes.contains(&write) {
                        grants.writes.push(write);
                    }
                }
            }
        }
        grants
    }

    /// The same grants with the pack's cache folder, when `sandbox.env` names one:
    /// the folders it names in it are made with it.
    #[must_use]
    pub fn with_cache(mut self, mut folder: CacheFolder) -> Self {
        if !self.uses_cache() {
            return self;
        }
        folder.sub = self
            .env
            .iter()
            .filter_map(|(_, value)| match value {
                EnvValue::Cache(sub) if !sub.is_empty() => Some(sub.clone()),
                _ => None,
            })
            .collect();
        self.cache = Some(folder);
        self
    }

    /// Whether `sandbox.env` names a path in the pack's cache folder.
    pub fn uses_cache(&self) -> bool {
        self.env
            .iter()
            .any(|(_, value)| matches!(value, EnvValue::Cache(_)))
    }

    /// `sandbox.env` as the child gets it: fixed text as declared, `{cache}` paths in
    /// the cache folder (left out while it is unknown).
    pub fn env_values(&self) -> Vec<(String, String)> {
        self.env
            .iter()
            .filter_map(|(name, value)| match value {
                EnvValue::Fixed(text) => Some((name.clone(), text.clone())),
                EnvValue::Cache(sub) => self.cache.as_ref().map(|folder| {
                    let path = match sub.is_empty() {
                        true => folder.path(),
                        false => folder.path().join(sub),
                    };
                    (name.clone(), path.display().to_string())
                }),
            })
            .collect()
    }

    /// The names of `sandbox.env` (never its values in a plan: names only, as for
    /// bindings).
    pub fn env_names(&self) -> impl Iterator<Item = &str> {
        self.env.iter().map(|(name, _)| name.as_str())
    }

    /// What these grants need from the machine, with why `$HCP_HOME` can be read past
    /// the filesystem layer here (see [`home::exposure`]).
    pub fn needs<'a>(&'a self, exposed: Option<&'a str>, cache: Option<&'a Path>) -> Needs<'a> {
        Needs {
            network: &self.network,
            writes: &self.writes,
            sockets: &self.sockets,
            exposed,
            cache,
        }
    }

    /// The declared sockets as paths.
    pub fn socket_paths(&self) -> Vec<PathBuf> {
        self.sockets.iter().map(PathBuf::from).collect()
    }
}

/// What the commands' networks need of the machine together: the layer that takes
/// the network away when any goes without it, else the namespace when any has an
/// allowlist (every entry of every allowlist), else the network as it is.
fn most_demanding<'a>(networks: impl Iterator<Item = &'a Network>) -> Network {
    let mut all_on = true;
    let mut allowed = Vec::new();
    for network in networks {
        match network {
            Network::Off => return Network::Off,
            Network::On => {}
            Network::Allow(endpoints) => {
                all_on = false;
                for endpoint in endpoints {
                    if !allowed.contains(endpoint) {
                        allowed.push(endpoint.clone());
                    }
                }
            }
        }
    }
    match all_on {
        true => Network::On,
        false => Network::Allow(allowed),
    }
}

/// The child's environment with the pack's `sandbox.env` added (see
/// [`super::child_env`]), sorted.
pub fn with_declared_env(mut env: Vec<(String, String)>, grants: &Grants) -> Vec<(String, String)> {
    env.extend(grants.env_values());
    env.sort();
    env
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
    /// The folder that holds every pack's cache folder (`…/hcpx/packs`), when the
    /// caller has one: no pack reads it but its own folder, through its write grant.
    pub caches: Option<&'a Path>,
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
    /// The pack's cache folder is inside `$HCP_HOME` or holds it: the call must not
    /// run.
    pub cache_in_home: Option<CacheInHome>,
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
            caches: site.caches,
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
    let cache = grants.cache.as_ref().map(CacheFolder::path);
    let layers = layers(machine, grants.needs(exposed.as_deref(), cache.as_deref()));
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
        cache_in_home: grants.cache.as_ref().and_then(|folder| folder.in_home(site.home)),
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
            network: Network::On,
            write: vec!["out".to_owned()],
            read: vec!["/opt/data".to_owned()],
            sockets: vec!["/run/x.sock".to_owned()],
            ..SandboxSpec::default()
        }
    }

    /// A pack with the pack-wide grants of [`spec`] and one command of each kind.
    const MANIFEST: &str = r#"{
        "hcp": 1, "id": "t", "version": "1.0.0", "description": "grants",
        "bin": ["t"],
        "sandbox": {
            "network": true, "write": ["out"], "read": ["/opt/data"], "sockets": ["/run/x.sock"],
            "env": { "NO_COLOR": "1", "CARGO_HOME": "{cache}/cargo", "CACHE": "{cache}" }
        },
        "commands": {
            "look": { "summary": "read", "effect": "read", "argv": [] },
            "save": { "summary": "pack grants", "effect": "write", "argv": [] },
            "wipe": { "summary": "pack grants", "effect": "destructive", "argv": [] },
            "extract": {
                "summary": "its own", "effect": "write", "network": false,
                "write": ["{into}", "logs"],
                "params": { "into": { "type": "path" } },
                "argv": ["--into={into?}"]
            }
        }
    }"#;

    fn manifest() -> Manifest {
        hcpx_pack::manifest::parse(MANIFEST).unwrap()
    }

    fn values(pairs: &[(&str, &str)]) -> Values {
        pairs
            .iter()
            .map(|(key, value)| ((*key).to_owned(), vec![(*value).to_owned()]))
            .collect()
    }

    #[test]
    fn a_read_gets_no_write_grant_and_every_other_effect_gets_the_manifests() {
        let manifest = manifest();
        let command = |name: &str| manifest.command(name).unwrap();
        let read = Grants::for_command(&manifest.sandbox, command("look"), &Values::new());
        assert_eq!(
            read,
            Grants {
                network: Network::On,
                writes: Vec::new(),
                made: Vec::new(),
                sockets: vec!["/run/x.sock".to_owned()],
                declared_reads: vec!["/opt/data".to_owned()],
                env: manifest.sandbox.env.clone(),
                cache: None,
            }
        );
        for name in ["save", "wipe"] {
            let grants = Grants::for_command(&manifest.sandbox, command(name), &Values::new());
            assert_eq!((grants.writes, grants.made), (vec!["out".to_owned()], Vec::new()));
        }
        assert_eq!(spec().write, ["out"]);
    }

    #[test]
    fn a_commands_write_and_network_replace_the_packs() {
        let manifest = manifest();
        let extract = manifest.command("extract").unwrap();
        let grants = Grants::for_command(&manifest.sandbox, extract, &values(&[("into", "./dest/sub")]));
        assert_eq!(grants.network, Network::Off);
        assert_eq!(grants.writes, ["dest/sub", "logs"]);
        assert_eq!(grants.made, ["dest/sub"]);
        // No value, no grant: not the pack's `out`, not the working directory.
        let grants = Grants::for_command(&manifest.sandbox, extract, &Values::new());
        assert_eq!(
            (grants.writes, grants.made),
            (vec!["logs".to_owned()], Vec::new())
        );
        assert_eq!(
            Grants::declared(&manifest.sandbox, extract).writes,
            ["{into}", "logs"]
        );
    }

    #[test]
    fn the_pack_as_a_whole_needs_what_its_most_demanding_command_does() {
        let pack = Grants::for_pack(&manifest());
        // One command goes without the network: the network layer is needed.
        assert_eq!(pack.network, Network::Off);
        assert_eq!(pack.writes, ["out", "{into}", "logs"]);
        assert_eq!(pack.sockets, ["/run/x.sock"]);
    }

    #[test]
    fn sandbox_env_is_fixed_text_and_paths_in_the_cache_folder() {
        let manifest = manifest();
        let grants = Grants::for_command(
            &manifest.sandbox,
            manifest.command("look").unwrap(),
            &Values::new(),
        );
        // Unknown cache folder: only the fixed values.
        assert_eq!(grants.env_values(), [("NO_COLOR".to_owned(), "1".to_owned())]);
        let grants = grants.with_cache(CacheFolder {
            base: "/c".into(),
            beneath: "hcpx/packs/t-1".into(),
            sub: Vec::new(),
        });
        assert_eq!(grants.cache.as_ref().unwrap().sub, ["cargo"]);
        assert_eq!(
            grants.env_values(),
            [
                ("NO_COLOR".to_owned(), "1".to_owned()),
                ("CARGO_HOME".to_owned(), "/c/hcpx/packs/t-1/cargo".to_owned()),
                ("CACHE".to_owned(), "/c/hcpx/packs/t-1".to_owned()),
            ]
        );
        let names: Vec<&str> = grants.env_names().collect();
        assert_eq!(names, ["NO_COLOR", "CARGO_HOME", "CACHE"]);
        assert_eq!(
            with_declared_env(vec![("PATH".to_owned(), "/bin".to_owned())], &grants)
                .iter()
                .map(|(name, _)| name.as_str())
                .collect::<Vec<_>>(),
            ["CACHE", "CARGO_HOME", "NO_COLOR", "PATH"]
        );
        // A pack whose env names no cache gets no folder.
        let plain = Grants::default().with_cache(CacheFolder {
            base: "/c".into(),
            beneath: "x".into(),
            sub: Vec::new(),
        });
        assert_eq!(plain.cache, None);
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
            caches: None,
        };
        let grants = Grants {
            writes: spec().write,
            ..Grants::default()
        };
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
