//! `hcpx install SOURCE [--yes]` and `hcpx uninstall PACK [--yes]`: write commands of
//! the pseudo-pack `hcp` (see README.md), through the same policy and confirmation as
//! exec. SOURCE is `npm:NAME[@VERSION]`, a local folder, or the id of a built-in
//! or catalog pack (materialised from the binary, no network).

use std::time::Duration;

use serde::Serialize;
use serde_json::json;

use super::{Asked, confirm, to_json};
use crate::Reply;
use crate::audit;
use crate::audit::Disposition;
use crate::binding::{Identity, Store};
use crate::catalog::MANIFEST_FILE;
use crate::catalog::builtin_files;
use crate::context::{Context, Principal};
use crate::error::{Failure, Reason};
use crate::install::{self, Files, InstallError, LinkKind, Placed};
use crate::next::Next;
use crate::render::{self, Installed};
use crate::reply::Effects;
use crate::runtime;

/// `npm pack` gets this long.
const NPM_TIMEOUT: Duration = Duration::from_secs(180);

/// The one mapping of an [`InstallError`] to a [`Failure`]. Refusals keep the message
/// users see, with "; nothing was installed", and carry `data` naming the entry and
/// why. Their reasons:
///
/// - `too_large`: a file over the 16 MiB bound, as the tarball bounds are.
/// - `io_error`: a file changed while it was read (reading again may work), and
///   hcpx's own lock file or journal cannot be parsed: the caller asked nothing
///   wrong, hcpx cannot read its state (docs/mcp.md).
/// - `invalid_pack`: the source is not a pack hcpx takes (an invalid manifest, a
///   link, a device, a missing or doubled file, a path that escapes, a manifest
///   that is not text): the caller's words are right, what they name is not.
/// - `invalid_arguments`: only the caller's own words, an id that is not one.
impl From<InstallError> for Failure {
    fn from(error: InstallError) -> Self {
        use InstallError as E;
        let entry =
            |entry: &dyn std::fmt::Display, why: &str| json!({ "entry": entry.to_string(), "why": why });
        let (reason, data) = match &error {
            E::Invalid(problems) => {
                return Failure::new(
                    Reason::InvalidPack,
                    format!(
                        "the pack is invalid ({}); nothing was installed",
                        crate::render::count(problems.len(), "problem")
                    ),
                )
                .details(problems.iter().map(ToString::to_string).collect())
                .data(json!({ "problems": problems }));
            }
            E::Bound { bound, limit } => (Reason::TooLarge, json!({ "bound": bound, "limit": limit })),
            E::State(state) => return Failure::io("the packs folder", state),
            E::Io { what, source } => return Failure::io(what, source),
            #[cfg(test)]
            E::Crash(_) => return Failure::new(Reason::Failed, error.to_string()),
            E::FolderMissing { name } | E::PackageMissing { name } => {
                (Reason::InvalidPack, entry(name, "missing"))
            }
            E::PackageNoManifest => (Reason::InvalidPack, entry(&MANIFEST_FILE, "missing")),
            E::FolderLink { name } => (Reason::InvalidPack, entry(name, "symbolic_link")),
            E::PackageLink { path, link } => {
                let why = match link {
                    LinkKind::Symbolic => "symbolic_link",
                    LinkKind::Hard => "hard_link",
                };
                (Reason::InvalidPack, entry(&path.display(), why))
            }
            E::FolderHardLink { name, links } => (
                Reason::InvalidPack,
                json!({ "entry": name, "why": "hard_link", "links": links }),
            ),
            E::FolderNotRegular { name } => (Reason::InvalidPack, entry(name, "not_regular")),
            E::PackageSpecial { path } => (Reason::InvalidPack, entry(&path.display(), "not_regular")),
            E::PackageEscapes { path } => (Reason::InvalidPack, entry(&path.display(), "escapes")),
            E::PackageTwice { name } => (Reason::InvalidPack, entry(name, "twice")),
            E::ManifestNotUtf8 => (Reason::InvalidPack, entry(&MANIFEST_FILE, "not_utf8")),
            E::FolderTooLarge { name, size } => (
                Reason::TooLarge,
                json!({ "entry": name, "why": "too_large", "size": size, "limit": install::MAX_FILE }),
            ),
            E::PackageTooLarge { path, size } => (
                Reason::TooLarge,
                json!({ "entry": path, "why": "too_large", "size": size, "limit": install::MAX_FILE }),
            ),
            E::FolderChanged { name } => (Reason::Io, entry(name, "changed")),
            E::PackageChanged => (Reason::Io, entry(&MANIFEST_FILE, "changed")),
            E::LockUnparsable { path, line } => (Reason::Io, json!({ "path": path, "line": line })),
            E::JournalUnparsable { journal, work } => (Reason::Io, json!({ "path": journal, "work": work })),
            E::NotAPackId { id } => (Reason::InvalidArguments, json!({ "id": id })),
        };
        Failure::new(reason, format!("{error}; nothing was installed")).data(data)
    }
}

/// What `install` returns in `data` (see docs/mcp.md).
#[derive(Serialize)]
struct InstalledData<'a> {
    id: &'a str,
    version: &'a str,
    source: &'a str,
    changed: bool,
    /// The version this install replaced, if one was recorded.
    replaced: Option<&'a str>,
    integrity: &'a str,
    bindings: KeptBindings<'a>,
}

/// The pack's bindings after an install: carried over to it, or held back for a
/// person to confirm.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct KeptBindings<'a> {
    kept: &'a [String],
    held_back: &'a [String],
}

/// What `uninstall` returns in `data`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct UninstalledData<'a> {
    id: &'a str,
    removed: bool,
    /// The pack's cache folder, removed with it; `None` when it had none.
    cache_removed: Option<&'a std::path::Path>,
}

fn not_a_pack_id(id: &str) -> String {
    format!(
        "{id:?} is not a pack id: pack ids are 1 to 64 lowercase letters, digits, '.', '_' or '-', starting with a letter or digit"
    )
}

/// The policy step for `hcp.install` / `hcp.uninstall`.
async fn permitted(
    ctx: &Context,
    command: &str,
    target: &str,
    yes: bool,
    argv: &[String],
) -> Result<(), Failure> {
    let started = std::time::Instant::now();
    let evaluation = super::pseudo_evaluation(ctx, command);
    let plan = json!({
        "pack": super::policy::PSEUDO_PACK, "command": command, "target": target,
        "decision": evaluation.decision, "rule": to_json(&evaluation.rule),
    });
    let asked = Asked {
        what: render::install_question(command, target),
        yes,
        // Quoted: a folder's path may hold spaces or shell characters.
        retry: Next::hcpx([command, target, "--yes"]),
        by_hand: Next::hcpx([command, target]),
    };
    confirm(ctx, &asked, &evaluation, &plan)
        .await
        .inspect_err(|refusal| {
            let decision = Disposition::of_unconfirmed(refusal.reason);
            let _ =
                super::write_audit_line(ctx, argv, super::policy::PSEUDO_PACK, command, decision, started);
        })
}

/// NAME of `NAME[@VERSION]`; a scoped NAME starts with `@`.
fn package_name(spec: &str) -> &str {
    match spec.get(1..).and_then(|rest| rest.rfind('@')) {
        Some(at) => &spec[..=at],
        None => spec,
    }
}

/// Whether `spec` names a package in the registry: `NAME` or `NAME@VERSION`, NAME being
/// `name` or `@scope/name` in npm's lowercase URL-safe letters. Everything else npm
/// would take (a folder, `file:`, `git+…`, a URL, an alias) is not: its package.json
/// could claim any name, and the install would be recorded, and keep bindings, as if
/// that package had come from the registry.
pub(crate) fn is_registry_spec(spec: &str) -> bool {
    let name = package_name(spec);
    let part = |text: &str| {
        !text.is_empty()
            && text.len() <= 214
            && !text.starts_with(['.', '_', '-'])
            && text
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-._~".contains(&b))
    };
    let name_ok = match name.strip_prefix('@') {
        Some(scoped) => scoped
            .split_once('/')
            .is_some_and(|(scope, name)| part(scope) && part(name)),
        None => part(name),
    };
    let version_ok = match spec[name.len()..].strip_prefix('@') {
        None => spec.len() == name.len(),
        Some(version) => {
            !version.is_empty()
                && version
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b".-+^~<>=*| ".contains(&b))
        }
    };
    name_ok && version_ok
}

/// Fetches `npm:NAME[@VERSION]` with the machine's own npm, scripts off.
async fn fetch_npm(ctx: &Context, spec: &str) -> Result<(Files, String), Failure> {
    let npm = crate::npm::find(ctx).ok_or_else(|| {
        Failure::new(
            Reason::NotRunnable,
            "npm is not on PATH, so npm: sources cannot be fetched",
        )
        .next(Next::advice("install Node.js and npm"))
    })?;
    // A folder of the process's own (mode 0700, swept should hcpx be killed).
    let dir = ctx.session.sandbox.private_temp(&ctx.temp_dir).map_err(|error| {
        Failure::new(
            Reason::NotRunnable,
            format!("cannot create a temporary folder: {error}"),
        )
    })?;
    let args = vec![
        "pack".into(),
        spec.into(),
        "--ignore-scripts".into(),
        "--json".into(),
        "--pack-destination".into(),
        dir.path().display().to_string(),
    ];
    let finished = crate::npm::run(ctx, npm, args, dir.path(), NPM_TIMEOUT)
        .await
        .map_err(|error| Failure::new(Reason::NotRunnable, error.to_string()))?;
    if finished.exit_code != 0 || finished.ending != runtime::Ending::Exited {
        // npm's own reason: `npm error code E404` and the lines around it.
        let said = crate::npm::said(&finished.stderr, 6);
        let message = match crate::npm::code(&said) {
            Some(code) => format!("npm could not fetch that package ({code}); nothing was installed"),
            None => "npm could not fetch that package; nothing was installed".to_owned(),
        };
        let details = if said.is_empty() {
            let stderr = String::from_utf8_lossy(&finished.stderr);
            stderr.lines().rev().take(3).map(str::to_owned).collect()
        } else {
            said
        };
        return Err(Failure::new(Reason::UnknownPack, message)
            .details(details)
            .next(Next::advice(format!(
                "npm view {} versions   (check the name and version)",
                shell_words::quote(package_name(spec))
            ))));
    }
    let packed: serde_json::Value = serde_json::from_slice(&finished.stdout).unwrap_or_default();
    let filename = packed[0]["filename"]
        .as_str()
        .unwrap_or_default()
        .replace('/', "-")
        .replace('@', "");
    let tarball = std::fs::read_dir(dir.path())
        .ok()
        .and_then(|entries| {
            entries
                .flatten()
                .map(|entry| entry.path())
                .find(|path| path.extension().is_some_and(|e| e == "tgz"))
        })
        .or_else(|| Some(dir.path().join(&filename)).filter(|path| path.exists()))
        .ok_or_else(|| {
            Failure::new(
                Reason::UnknownPack,
                "npm pack produced no tarball; nothing was installed",
            )
        })?;
    let tarball =
        std::fs::File::open(&tarball).map_err(|error| Failure::io("the tarball npm made", error))?;
    let files = install::read_tarball(tarball)?;
    let version = packed[0]["version"].as_str().unwrap_or_default();
    let name = packed[0]["name"].as_str().unwrap_or_default();
    if name != package_name(spec) {
        return Err(Failure::new(
            Reason::InvalidPack,
            format!(
                "npm returned the package {name:?} for {:?}; nothing was installed",
                package_name(spec)
            ),
        ));
    }
    Ok((files, format!("npm:{name}@{version}")))
}

pub(crate) async fn install(
    ctx: &Context,
    source: &str,
    yes: bool,
    argv: &[String],
) -> Result<Reply, Failure> {
    let started = std::time::Instant::now();
    permitted(ctx, "install", source, yes, argv).await?;
    let (files, recorded) = if let Some(spec) = source.strip_prefix("npm:") {
        if !is_registry_spec(spec) {
            return Err(Failure::new(
                Reason::InvalidArguments,
                "npm: takes a package name from the registry, as npm:NAME, npm:@SCOPE/NAME or \
                 npm:NAME@VERSION; to install a folder, name the folder itself",
            )
            .next(Next::hcpx(["install", "./my-pack"])));
        }
        fetch_npm(ctx, spec).await?
    } else if ctx.cwd.join(source).is_dir() {
        let dir = ctx.cwd.join(source);
        let absolute = dir.canonicalize().unwrap_or(dir);
        (install::read_folder(&absolute)?, absolute.display().to_string())
    } else if let Some((files, recorded)) = install::embedded(source) {
        (files, recorded)
    } else {
        return Err(Failure::new(
            Reason::InvalidArguments,
            "SOURCE is npm:NAME[@VERSION], a folder that exists here, or the id of a built-in or catalog pack",
        )
        .next(Next::hcpx(["search", "--all"]).note("every pack there is, installed or not")));
    };
    let manifest = install::validate(&files)?;
    if let Err(refusal) = may_replace(ctx, &manifest.id, &recorded, source) {
        let _ = super::write_audit_line(
            ctx,
            argv,
            super::policy::PSEUDO_PACK,
            "install",
            Disposition::Refused,
            started,
        );
        return Err(refusal);
    }
    let outcome = install::place(&ctx.home, &files, &manifest, &recorded, audit::now())?;
    let (id, version) = (&manifest.id, manifest.version.to_string());
    let sum = install::integrity(&files);
    let changed = matches!(outcome, Placed::Installed { .. });
    let now = Identity {
        source: recorded.clone(),
        integrity: Some(sum.clone()),
    };
    let mut bindings_error = None;
    let (kept, held_back) = match &outcome {
        Placed::Installed { previous } => follow_bindings(ctx, id, previous.as_ref(), &now),
        Placed::Unchanged => Ok((Vec::new(), Vec::new())),
    }
    .unwrap_or_else(|error| {
        bindings_error = Some(error);
        (Vec::new(), Vec::new())
    });
    let warning = super::write_audit_line(
        ctx,
        argv,
        super::policy::PSEUDO_PACK,
        "install",
        if changed {
            Disposition::Installed
        } else {
            Disposition::Unchanged
        },
        started,
    );
    let replaced = match &outcome {
        Placed::Installed { previous } => previous.as_ref().map(|old| old.version.clone()),
        Placed::Unchanged => None,
    };
    let text = render::install_text(&Installed {
        id,
        version: &version,
        source: &recorded,
        outcome: &outcome,
        bindings_error: bindings_error.as_ref(),
        kept: &kept,
        held_back: &held_back,
    });
    Ok(Reply {
        note: None,
        text,
        data: Some(to_json(&InstalledData {
            id,
            version: &version,
            source: &recorded,
            changed,
            replaced: replaced.as_deref(),
            integrity: &sum,
            bindings: KeptBindings {
                kept: &kept,
                held_back: &held_back,
            },
        })),
        warnings: warning.into_iter().collect(),
        effects: Effects {
            packs_changed: changed,
        },
        run: None,
        next: None,
    })
}

/// Replacing a built-in or catalog pack with a pack from another source (a folder
/// or an npm package whose id is `git` or `rg`) is a person's act, as binding is: it
/// decides what the person's own `hcpx exec git` runs next. An agent is refused
/// whatever the policy says; installing the built-in or catalog id itself stays an
/// ordinary install.
fn may_replace(ctx: &Context, id: &str, recorded: &str, source: &str) -> Result<(), Failure> {
    let shelved = install::Shelved::of(id);
    let (what, data) = match shelved {
        install::Shelved::Builtin => ("a built-in pack", json!({ "id": id, "builtin": true })),
        install::Shelved::Catalog => ("a catalog pack", json!({ "id": id, "catalog": true })),
        install::Shelved::Nothing => return Ok(()),
    };
    let person = crate::policy::access(ctx.principal).decision == crate::policy::Decision::Allow;
    if shelved.source(id).as_deref() == Some(recorded) || person {
        return Ok(());
    }
    Err(Failure::new(
        Reason::AccessRefused,
        format!("an agent cannot replace {what} with a pack from another source; nothing was installed"),
    )
    .next(Next::advice(format!(
        "a person runs, at a terminal and without HCP_AGENT=1: hcpx install {}",
        shell_words::quote(source)
    )))
    .data(data))
}

/// After an install: a person's update from the same place (the same npm package,
/// folder or built-in) keeps the bindings given to the version it replaces; any
/// other install (an agent's, or from elsewhere) carries nothing over, and the
/// pack's bindings stay held back until a person confirms them. Returns the keys
/// kept and the keys held back.
fn follow_bindings(
    ctx: &Context,
    id: &str,
    previous: Option<&install::Locked>,
    now: &Identity,
) -> Result<(Vec<String>, Vec<String>), Failure> {
    if !Store::load(&ctx.bindings_path()).is_ok_and(|store| store.has_any(id)) {
        return Ok((Vec::new(), Vec::new()));
    }
    let before = match previous {
        Some(entry) => Some(install::locked_identity(entry)),
        // The first install over a built-in of that id replaces the built-in.
        None => builtin_files(id).map(|_| Identity {
            source: format!("builtin:{id}"),
            integrity: None,
        }),
    };
    let person = ctx.principal == Principal::Terminal;
    let mut kept = Vec::new();
    let mut held_back = Vec::new();
    super::bind::update(ctx, |store| {
        if let Some(before) = &before
            && person
            && install::same_place(&before.source, &now.source)
        {
            kept = store.carry_over(id, before, now);
        }
        held_back = store
            .packs
            .get(id)
            .map(|keys| {
                keys.iter()
                    .filter(|(_, binding)| binding.pack.as_ref() != Some(now))
                    .map(|(key, _)| key.clone())
                    .collect()
            })
            .unwrap_or_default();
        !kept.is_empty()
    })?;
    Ok((kept, held_back))
}

pub(crate) async fn uninstall(ctx: &Context, id: &str, yes: bool, argv: &[String]) -> Result<Reply, Failure> {
    let started = std::time::Instant::now();
    if !crate::template::is_pack_id(id) {
        return Err(Failure::new(Reason::InvalidArguments, not_a_pack_id(id)));
    }
    if !ctx.packs_dir().join(id).is_dir() {
        let (message, next) = match install::Shelved::of(id) {
            install::Shelved::Builtin => (
                "that pack is built in, not installed; built-in packs stay",
                Next::hcpx(["search"]),
            ),
            install::Shelved::Catalog => (
                "that pack is in the catalog and not installed; nothing to remove",
                Next::hcpx(["search", "--all"]),
            ),
            install::Shelved::Nothing => ("no installed pack by that name", Next::hcpx(["search"])),
        };
        return Err(Failure::new(Reason::UnknownPack, message).next(next));
    }
    permitted(ctx, "uninstall", id, yes, argv).await?;
    // Named from the lock entry, which the removal takes away.
    let cache = crate::pack_cache::installed_folder(ctx, id);
    let removed = install::remove(&ctx.home, id)?;
    let mut warnings = Vec::new();
    let cache_removed = match cache.as_deref().map(crate::pack_cache::remove) {
        Some(Ok(true)) => cache.as_deref(),
        Some(Err(error)) => {
            warnings.push(crate::reply::Warning::CacheLeft {
                path: cache.clone().unwrap_or_default(),
                error: error.to_string(),
            });
            None
        }
        Some(Ok(false)) | None => None,
    };
    let warning = super::write_audit_line(
        ctx,
        argv,
        super::policy::PSEUDO_PACK,
        "uninstall",
        Disposition::Uninstalled,
        started,
    );
    Ok(Reply {
        note: None,
        text: render::uninstall_text(id, removed, install::Shelved::of(id), cache_removed),
        data: Some(to_json(&UninstalledData {
            id,
            removed,
            cache_removed,
        })),
        warnings: warnings.into_iter().chain(warning).collect(),
        effects: Effects {
            packs_changed: removed,
        },
        run: None,
        next: None,
    })
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use serde_json::json;

    use super::is_registry_spec;
    use crate::error::Failure;
    use crate::error::Reason;
    use crate::install::{InstallError, LinkKind, MAX_FILE};

    /// Each refusal keeps its message and gets its reason and `data` here, in one place.
    #[test]
    fn refusals_map_to_their_reason_and_data() {
        let cases = [
            (
                InstallError::PackageLink {
                    path: PathBuf::from("package/x"),
                    link: LinkKind::Hard,
                },
                Reason::InvalidPack,
                "the package holds a link; packs carry regular files only; nothing was installed",
                json!({ "entry": "package/x", "why": "hard_link" }),
            ),
            (
                InstallError::FolderTooLarge {
                    name: "SKILL.md".into(),
                    size: MAX_FILE + 1,
                },
                Reason::TooLarge,
                "SKILL.md is larger than 16 MiB; nothing was installed",
                json!({ "entry": "SKILL.md", "why": "too_large", "size": MAX_FILE + 1, "limit": MAX_FILE }),
            ),
            (
                InstallError::FolderChanged { name: "demo".into() },
                Reason::Io,
                "demo changed while it was read; install again once nothing writes to it; nothing was installed",
                json!({ "entry": "demo", "why": "changed" }),
            ),
            (
                InstallError::LockUnparsable {
                    path: PathBuf::from("/h/packs.lock.json"),
                    line: 3,
                },
                Reason::Io,
                "/h/packs.lock.json cannot be parsed (line 3); fix or remove it, it is never overwritten; nothing was installed",
                json!({ "path": "/h/packs.lock.json", "line": 3 }),
            ),
        ];
        for (error, reason, message, data) in cases {
            let failure = Failure::from(error);
            assert_eq!(
                (failure.reason, failure.message.as_str(), failure.data.clone()),
                (reason, message, Some(data))
            );
        }
    }

    /// `invalid_arguments` is for the caller's own words only; a source that is not
    /// a pack hcpx takes is `invalid_pack`.
    #[test]
    fn only_the_callers_words_are_invalid_arguments() {
        let not_an_id = Failure::from(InstallError::NotAPackId { id: "A B".into() });
        assert_eq!(not_an_id.reason, Reason::InvalidArguments);
        for error in [
            InstallError::FolderLink { name: "demo".into() },
            InstallError::FolderHardLink {
                name: "demo".into(),
                links: 2,
            },
            InstallError::FolderMissing {
                name: "SKILL.md".into(),
            },
            InstallError::PackageNoManifest,
            InstallError::PackageEscapes {
                path: PathBuf::from("package/../x"),
            },
            InstallError::PackageSpecial {
                path: PathBuf::from("package/dev"),
            },
            InstallError::PackageTwice { name: "demo".into() },
            InstallError::ManifestNotUtf8,
            InstallError::Invalid(Vec::new()),
        ] {
            let shown = error.to_string();
            assert_eq!(Failure::from(error).reason, Reason::InvalidPack, "{shown}");
        }
    }

    #[test]
    fn only_registry_names_are_npm_specs() {
        for spec in [
            "probe",
            "probe@1.0.0",
            "@acme/rt",
            "@acme/rt@^2.1",
            "a.b-c_d~e@latest",
            "x@>=1 <2",
        ] {
            assert!(is_registry_spec(spec), "{spec}");
        }
        for spec in [
            "",
            "-x",
            "./dir",
            "/abs/dir",
            "../up",
            "file:/x",
            "file:dir",
            "git+file:///x",
            "git+https://h/x.git",
            "https://h/x.tgz",
            "alias@npm:real",
            "Probe",
            "@acme",
            "@acme/",
            "@/rt",
            "probe@",
            ".hidden",
            "_x",
            "user/repo",
            "probe#main",
            "a b",
        ] {
            assert!(!is_registry_spec(spec), "{spec:?}");
        }
    }
}
