//! `hcpx search [QUERY...] [--limit N] [--all]`: built-in, installed and catalog
//! packs, each with its availability flags (`"installed": false` for a catalog pack
//! that is not installed) and the program of the machine it needs.

use serde::Serialize;

use super::{flags, load_bindings, load_policies, search_catalog};
use crate::Reply;
use crate::catalog::BrokenPack;
use crate::context::Context;
use crate::error::Failure;
use crate::render::{self, SearchResult};
use crate::reply::Warning;

/// `search`'s data.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Found<'a> {
    query: &'a str,
    results: &'a [SearchResult],
    /// Matches under the relevance floor, not listed.
    below_floor: usize,
    broken: &'a [BrokenPack],
}

/// `all` keeps the matches under the relevance floor (see [`crate::search::RELATIVE_FLOOR`]).
/// `registry`: what `--registry` found on npm, merged in by [`crate::registry::merge`].
pub(crate) fn run(
    ctx: &Context,
    query: &[String],
    limit: usize,
    all: bool,
    registry: Option<crate::registry::Found>,
) -> Result<Reply, Failure> {
    let query = query.join(" ");
    let found = search_catalog(ctx, &query, limit, all);
    let policies = load_policies(ctx);
    let bindings = load_bindings(ctx);
    let machine = ctx.session.sandbox.machine();
    let exposed = crate::sandbox::home::exposure(&ctx.home);
    let sources = super::lock_sources(ctx);
    let mut results: Vec<SearchResult> = found
        .hits
        .iter()
        .map(|(pack, score)| {
            let report = flags(ctx, pack, &policies, &bindings, machine, exposed.as_deref());
            SearchResult {
                id: pack.manifest.id.clone(),
                version: pack.manifest.version.to_string(),
                description: pack.manifest.description.clone(),
                source: pack.source_label().to_owned(),
                install: None,
                commands: pack
                    .manifest
                    .commands
                    .iter()
                    .map(|command| command.name.clone())
                    .collect(),
                score: (score * 100.0).round() / 100.0,
                program: pack.program_name().map(str::to_owned),
                variant: pack
                    .manifest
                    .program
                    .as_ref()
                    .and_then(|program| program.variant.clone()),
                update: pack
                    .catalog_update(sources.get(pack.id()).map(String::as_str))
                    .map(|version| version.to_string()),
                installed: report.installed,
                runnable: report.runnable,
                bound: report.bound,
                permitted: report.permitted,
                ready: report.ready,
            }
        })
        .collect();
    let registry = registry.and_then(|registry| crate::registry::merge(ctx, &query, registry, &mut results));
    // The registry's packs are ranked among the local ones: the limit is the list's.
    results.truncate(limit);
    let text = render::search_text(&query, &results, found.below_floor);
    let warnings = found
        .broken
        .iter()
        .map(|pack| Warning::BrokenPack {
            id: pack.id.clone(),
            problems: pack.problems.len(),
            dir: pack.dir.clone(),
        })
        .chain(registry);
    let data = Found {
        query: &query,
        results: &results,
        below_floor: found.below_floor,
        broken: &found.broken,
    };
    Ok(Reply::new(&data, text).warn(warnings))
}
