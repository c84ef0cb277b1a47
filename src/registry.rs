//! `search --registry`: packs published on npm, found by the search of the registry
//! npm is configured with, through the machine's own `npm search` (so the user's
//! registry, credentials and proxy apply; see [`crate::npm`]). A package is a pack
//! when its `package.json` has the keyword [`MARK`]. Nothing is installed: each one
//! found is listed, ranked among the local packs, with the command that installs it.
//! When npm is missing, offline or slow, the local search stands and says so in a
//! warning.

use std::collections::BTreeSet;
use std::time::Duration;

use crate::context::Context;
use crate::render::SearchResult;
use crate::reply::Warning;
use crate::runtime::{Ending, RuntimeError};

/// The keyword in `package.json` that marks a package as an hcpx pack.
pub(crate) const MARK: &str = "hcpx-pack";
/// How long each `npm search` may take, start to end, before hcpx stops it.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(8);
/// npm's own limit for one request, in milliseconds (`--fetch-timeout`), under
/// [`TIMEOUT`] so that npm's clearer reason usually comes first.
const FETCH_TIMEOUT_MS: u64 = 4000;
/// The most results asked of the registry per query (npm's registry gives at most 250).
const MOST: usize = 250;

/// A pack on the registry, as its search reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Package {
    pub name: String,
    pub version: String,
    pub description: String,
    /// Without [`MARK`].
    pub keywords: Vec<String>,
}

impl Package {
    /// What `hcpx install` takes for exactly this version.
    pub(crate) fn source(&self) -> String {
        format!("npm:{}@{}", self.name, self.version)
    }
}

/// Why the registry was not searched. The text is the warning's reason.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RegistryError {
    #[error("npm is not on PATH (install Node.js and npm to search it)")]
    NoNpm,
    #[error("no temporary folder for npm: {0}")]
    Temp(std::io::Error),
    #[error("npm did not start: {0}")]
    Spawn(RuntimeError),
    #[error("npm had no answer within {} s (offline, or the registry is slow)", TIMEOUT.as_secs())]
    TimedOut,
    #[error("the search was cancelled")]
    Cancelled,
    /// npm's code and summary, as it reports a failure under `--json`.
    #[error("npm could not reach it ({0}); check with `npm ping`")]
    Failed(String),
    #[error("npm's answer is not the JSON list `npm search --json` prints")]
    NotJson,
}

impl RegistryError {
    /// The warning `search` gives instead of registry results.
    pub(crate) fn warning(&self) -> Warning {
        Warning::Registry(format!(
            "the npm registry was not searched: {self}; only the packs on this machine are listed"
        ))
    }
}

/// What [`search`] gives [`merge`].
pub(crate) type Found = Result<Vec<Package>, RegistryError>;

/// Searches the registry for packs matching `words`, at most `limit` of them, in the
/// registry's order. Two queries run at once: `keywords:hcpx-pack WORDS…`, which a
/// registry with npm's search syntax (registry.npmjs.org) answers with packs alone,
/// and the words alone (or `hcpx-pack` for none), which a registry without it (such
/// as Verdaccio, which matches names and descriptions) answers; the results of both
/// are kept when they carry [`MARK`]. One answering is enough.
pub(crate) async fn search(ctx: &Context, words: &[String], limit: usize) -> Found {
    let npm = crate::npm::find(ctx).ok_or(RegistryError::NoNpm)?;
    // A folder of the process's own, so no project's .npmrc applies.
    let dir = ctx
        .session
        .sandbox
        .private_temp(&ctx.temp_dir)
        .map_err(RegistryError::Temp)?;
    // As typed: a registry may match case and punctuation exactly (Verdaccio does).
    let words: Vec<String> = words
        .iter()
        .flat_map(|text| text.split_whitespace().map(str::to_owned).collect::<Vec<_>>())
        .collect();
    let marked: Vec<String> = std::iter::once(format!("keywords:{MARK}"))
        .chain(words.iter().cloned())
        .collect();
    let plain: Vec<String> = if words.is_empty() {
        vec![MARK.to_owned()]
    } else {
        words
    };
    let ask = |query: Vec<String>, size: usize| {
        let mut args = vec![
            "search".to_owned(),
            "--json".to_owned(),
            format!("--searchlimit={size}"),
            format!("--fetch-timeout={FETCH_TIMEOUT_MS}"),
            "--fetch-retries=0".to_owned(),
            "--".to_owned(),
        ];
        args.extend(query);
        let npm = npm.clone();
        let dir = dir.path().to_path_buf();
        async move { answer(crate::npm::run(ctx, npm, args, &dir, TIMEOUT).await) }
    };
    let (marked, plain) = tokio::join!(
        ask(marked, limit.clamp(1, MOST)),
        // Most of a plain query's results may be other packages.
        ask(plain, limit.clamp(100, MOST))
    );
    let (found, failure) = match (marked, plain) {
        (Err(error), Err(_)) => return Err(error),
        (Ok(a), Ok(b)) => ([a, b].concat(), None),
        (Ok(found), Err(error)) | (Err(error), Ok(found)) => (found, Some(error)),
    };
    if let Some(error) = failure {
        tracing::debug!("one of the two registry queries failed: {error}");
    }
    let mut seen = BTreeSet::new();
    let mut packages: Vec<Package> = found
        .into_iter()
        .filter(|package| seen.insert(package.name.clone()))
        .collect();
    packages.truncate(limit);
    Ok(packages)
}

/// What one `npm search --json` run found, its packs only.
fn answer(finished: Result<crate::runtime::Finished, RuntimeError>) -> Result<Vec<Package>, RegistryError> {
    let finished = finished.map_err(RegistryError::Spawn)?;
    match finished.ending {
        Ending::Exited => {}
        Ending::TimedOut => return Err(RegistryError::TimedOut),
        Ending::Cancelled => return Err(RegistryError::Cancelled),
        Ending::Overflow => return Err(RegistryError::NotJson),
    }
    let value: serde_json::Value =
        serde_json::from_slice(&finished.stdout).map_err(|_| failed(&finished.stderr))?;
    // Under --json npm reports a failure as {"error": {"code", "summary"}} on stdout.
    if let Some(error) = value.get("error") {
        let code = error["code"].as_str().unwrap_or("unknown");
        let summary = without_queries(error["summary"].as_str().unwrap_or_default());
        return Err(RegistryError::Failed(if summary.is_empty() {
            code.to_owned()
        } else {
            format!("{code}: {summary}")
        }));
    }
    if finished.exit_code != 0 {
        return Err(failed(&finished.stderr));
    }
    let entries = value.as_array().ok_or(RegistryError::NotJson)?;
    Ok(entries.iter().filter_map(package).collect())
}

/// npm's summary without the query strings of the addresses in it (the search's own
/// parameters, noise in a warning), at most 300 characters.
fn without_queries(summary: &str) -> String {
    let words: Vec<&str> = summary
        .split(' ')
        .map(|word| match word.find('?') {
            Some(at) if word.contains("://") => &word[..at],
            _ => word,
        })
        .collect();
    words.join(" ").chars().take(300).collect()
}

/// A failure npm explained only on stderr.
fn failed(stderr: &[u8]) -> RegistryError {
    let said = crate::npm::said(stderr, 6);
    match crate::npm::code(&said) {
        Some(code) => RegistryError::Failed(code.to_owned()),
        None if said.is_empty() => RegistryError::NotJson,
        None => RegistryError::Failed(said.join(" ").chars().take(300).collect()),
    }
}

/// One entry of `npm search --json`, when it is a pack whose name and version make
/// an install command as they are: registry.npmjs.org gives `version`, Verdaccio
/// `dist-tags.latest`.
fn package(entry: &serde_json::Value) -> Option<Package> {
    let name = entry["name"].as_str()?;
    let version = entry["version"]
        .as_str()
        .or_else(|| entry["dist-tags"]["latest"].as_str())?;
    let keywords: Vec<String> = match &entry["keywords"] {
        serde_json::Value::Array(items) => items
            .iter()
            .filter_map(|k| k.as_str())
            .map(str::to_owned)
            .collect(),
        serde_json::Value::String(text) => text
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|k| !k.is_empty())
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    };
    if !keywords.iter().any(|keyword| keyword == MARK)
        || semver::Version::parse(version).is_err()
        || !crate::commands::install::is_registry_spec(&format!("{name}@{version}"))
    {
        return None;
    }
    Some(Package {
        name: name.to_owned(),
        version: version.to_owned(),
        description: entry["description"].as_str().unwrap_or_default().to_owned(),
        keywords: keywords.into_iter().filter(|keyword| keyword != MARK).collect(),
    })
}

/// The hook in `search`: the registry's packs, or the warning that it was not
/// searched, merged into the local `results`. Each pack is scored by the local
/// search's own weights (its name as an id, its keywords, its description) and
/// placed after the local results that score at least as much; one already
/// installed from exactly that `npm:NAME@VERSION` is left out, the local result
/// being it.
pub(crate) fn merge(
    ctx: &Context,
    query: &str,
    found: Found,
    results: &mut Vec<SearchResult>,
) -> Option<Warning> {
    let packages = match found {
        Ok(packages) => packages,
        Err(error) => return Some(error.warning()),
    };
    let installed: BTreeSet<String> = crate::install::LockFile::load(&crate::layout::lock_file(&ctx.home))
        .map(|lock| lock.packs.into_values().map(|entry| entry.source).collect())
        .unwrap_or_default();
    for package in packages {
        let source = package.source();
        if installed.contains(&source) {
            continue;
        }
        let score = crate::search::score_entry(query, &package.name, &package.keywords, &package.description);
        let score = (score * 100.0).round() / 100.0;
        let at = results.partition_point(|result| result.score >= score);
        results.insert(
            at,
            SearchResult {
                id: package.name.clone(),
                version: package.version.clone(),
                description: package.description.clone(),
                install: Some(crate::next::Next::hcpx(["install", source.as_str()]).to_string()),
                source,
                commands: Vec::new(),
                score,
                program: None,
                variant: None,
                update: None,
                installed: false,
                runnable: false,
                bound: false,
                permitted: false,
                ready: false,
            },
        );
    }
    None
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn exited(stdout: &str, stderr: &str, code: i32) -> Result<crate::runtime::Finished, RuntimeError> {
        Ok(crate::runtime::Finished {
            ending: Ending::Exited,
            exit_code: code,
            stdout: stdout.as_bytes().to_vec(),
            stderr: stderr.as_bytes().to_vec(),
            stdout_total: stdout.len() as u64,
            stderr_total: stderr.len() as u64,
        })
    }

    #[test]
    fn only_marked_packages_with_an_exact_install_command_are_packs() {
        let answer = json!([
            { "name": "@acme/rt", "version": "1.2.0", "description": "Transit", "keywords": ["hcpx-pack", "bus"] },
            { "name": "hcpx-pack-weather", "dist-tags": { "latest": "0.3.0" }, "keywords": "weather hcpx-pack" },
            { "name": "weather-lib", "version": "3.0.0", "keywords": ["weather"] },
            { "name": "bad name; rm -rf", "version": "1.0.0", "keywords": ["hcpx-pack"] },
            { "name": "ranged", "version": "^1.0.0", "keywords": ["hcpx-pack"] },
            { "name": "noversion", "keywords": ["hcpx-pack"] }
        ]);
        let found = super::answer(exited(&answer.to_string(), "", 0)).unwrap();
        assert_eq!(
            found,
            [
                Package {
                    name: "@acme/rt".into(),
                    version: "1.2.0".into(),
                    description: "Transit".into(),
                    keywords: vec!["bus".into()],
                },
                Package {
                    name: "hcpx-pack-weather".into(),
                    version: "0.3.0".into(),
                    description: String::new(),
                    keywords: vec!["weather".into()],
                },
            ]
        );
        assert_eq!(found[0].source(), "npm:@acme/rt@1.2.0");
    }

    #[test]
    fn npms_failures_become_the_reason() {
        let offline = r#"{"error": {"code": "ECONNREFUSED", "summary": "request to http://127.0.0.1:1/-/v1/search?text=x&size=20 failed"}}"#;
        let error = super::answer(exited(offline, "npm error code ECONNREFUSED\n", 1)).unwrap_err();
        assert_eq!(
            error.warning().to_string(),
            "the npm registry was not searched: npm could not reach it (ECONNREFUSED: request to \
             http://127.0.0.1:1/-/v1/search failed); check with `npm ping`; only the packs on this machine are listed"
        );
        let error = super::answer(exited("", "npm error code E500\n", 1)).unwrap_err();
        assert_eq!(
            error.to_string(),
            "npm could not reach it (E500); check with `npm ping`"
        );
        let error = super::answer(exited("not json", "", 0)).unwrap_err();
        assert_eq!(
            error.to_string(),
            "npm's answer is not the JSON list `npm search --json` prints"
        );
        let mut slow = exited("", "", 143).unwrap();
        slow.ending = Ending::TimedOut;
        assert_eq!(
            super::answer(Ok(slow)).unwrap_err().to_string(),
            "npm had no answer within 8 s (offline, or the registry is slow)"
        );
    }
}
