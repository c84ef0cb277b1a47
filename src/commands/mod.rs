//! One handler per command, and what several share (loading packs, policies and
//! bindings; asking for a confirmation; the audit line). A handler only
//! orchestrates: it takes the resolved [`Context`], calls the domain modules (which
//! decide: policy, the sandbox's grants, install), and returns a
//! [`Reply`](crate::Reply), whose text for people comes from [`crate::render`], or a
//! [`Failure`]. `exec` is a folder, one file per step.

pub(crate) mod adopt;
pub(crate) mod availability;
pub(crate) mod bind;
pub(crate) mod complete;
pub(crate) mod completions;
pub(crate) mod doctor;
pub(crate) mod exec;
pub(crate) mod help;
pub(crate) mod install;
pub(crate) mod output;
pub(crate) mod pack;
pub(crate) mod policy;
pub(crate) mod search;
pub(crate) mod skill;

use crate::binding::Store;
use crate::catalog::{Catalog, Pack};
use crate::context::Context;
use crate::error::{Failure, Reason};
use crate::next::Next;
use crate::policy::Policies;
use crate::reply::Warning;

/// Every pack: the server's cached catalog, or read now.
pub(crate) fn load_catalog(ctx: &Context) -> std::sync::Arc<Catalog> {
    recover_installs(ctx);
    match &ctx.session.catalog {
        Some(cache) => cache.get(&ctx.packs_dir()),
        None => std::sync::Arc::new(Catalog::load(&ctx.packs_dir())),
    }
}

/// One pack by id, read from its files now (what `skill` and `exec` need): through
/// the server's cache, or from its folder or the built-ins. An id found nowhere
/// gets the ids there are from the packs index, for the closest ones, instead of
/// every installed manifest being parsed.
pub(crate) fn load_one(ctx: &Context, id: &str) -> Catalog {
    recover_installs(ctx);
    let packs_dir = ctx.packs_dir();
    match &ctx.session.catalog {
        Some(cache) => cache.one(&packs_dir, id),
        None => Catalog::find_one(&packs_dir, id)
            .unwrap_or_else(|| crate::index::known(&ctx.home, ctx.self_exe.get())),
    }
}

/// The packs matching `query`, best first, and the broken installed packs: from
/// the packs index (the server's, held in memory, or the file), which reads only
/// the results' files.
/// `all` keeps the matches under the relevance floor.
pub(crate) fn search_catalog(ctx: &Context, query: &str, limit: usize, all: bool) -> crate::index::Found {
    recover_installs(ctx);
    let program = ctx.self_exe.get();
    let query = crate::index::Query::new(query, limit, all);
    match &ctx.session.catalog {
        Some(cache) => cache.search(&ctx.home, program, query),
        None => crate::index::search(&ctx.home, program, query),
    }
}

/// Finishes or rolls back an install or uninstall a crash interrupted, before the
/// packs folder is read. One `stat` when there is none; a failure is logged and
/// the call goes on (a pack whose lock entry disagrees with its files gets none of
/// its bindings).
pub(crate) fn recover_installs(ctx: &Context) {
    if let Err(error) = crate::install::recover_if_needed(&ctx.home) {
        tracing::warn!("an interrupted install could not be recovered: {error}");
    }
}

/// Looks a pack up, or refuses with `unknown_pack`: a broken install by that id
/// says so, else the closest ids and a next step
/// ([`crate::catalog::CatalogError`]'s `Failure`).
pub(crate) fn find_pack<'c>(catalog: &'c Catalog, id: &str) -> Result<&'c Pack, Failure> {
    if let Some(broken) = catalog.broken(id)
        && catalog.get(id).is_err()
    {
        #[derive(serde::Serialize)]
        struct Broken<'a> {
            broken: &'a crate::catalog::BrokenPack,
        }
        let details = broken.problems.iter().map(ToString::to_string).collect();
        return Err(
            Failure::new(Reason::UnknownPack, "the installed pack by that name is broken")
                .details(details)
                .next(Next::hcpx([
                    "pack".to_owned(),
                    "check".to_owned(),
                    broken.dir.display().to_string(),
                ]))
                .data(Broken { broken }),
        );
    }
    Ok(catalog.get(id)?)
}

/// The access commands (`policy set`, `bind`, `unbind`, and `adopt` with `--write`,
/// `--remove` or `--native`): an agent never widens its own access nor changes how
/// it is recognised (see docs/bindings.md).
pub(crate) fn refuse_agents(ctx: &Context) -> Result<(), Failure> {
    match crate::policy::access(ctx.principal).decision {
        crate::policy::Decision::Allow => Ok(()),
        _ => Err(Failure::new(
            Reason::AccessRefused,
            "an agent cannot change bindings, policy or host configuration; a person runs this command at a terminal",
        )
        .next(Next::advice("ask the person you work for to run it at their terminal"))),
    }
}

/// The policy files, as this call read them before its command ran, else read now.
pub(crate) fn load_policies(ctx: &Context) -> std::sync::Arc<Policies> {
    ctx.policies.clone().unwrap_or_else(|| {
        std::sync::Arc::new(crate::policy::load(
            ctx.user_policy_path(),
            ctx.project_policy_path(),
        ))
    })
}

/// Each installed pack's recorded source, by id (empty when the lock cannot be read:
/// it only decides whether a catalog update is offered).
pub(crate) fn lock_sources(ctx: &Context) -> std::collections::BTreeMap<String, String> {
    crate::install::LockFile::load(&crate::layout::lock_file(&ctx.home))
        .map(|lock| {
            lock.packs
                .into_iter()
                .map(|(id, entry)| (id, entry.source))
                .collect()
        })
        .unwrap_or_default()
}

/// The binding store, or why it cannot be read (which makes `bound` false).
pub(crate) fn load_bindings(ctx: &Context) -> Result<Store, String> {
    Store::load(&ctx.bindings_path()).map_err(|error| error.to_string())
}

/// The availability flags of one pack for this caller.
pub(crate) fn flags(
    ctx: &Context,
    pack: &Pack,
    policies: &Policies,
    bindings: &Result<Store, String>,
    machine: &crate::sandbox::Machine,
    exposed: Option<&str>,
) -> crate::availability::Availability {
    crate::availability::check(
        pack,
        &crate::availability::Here {
            env: &ctx.env,
            policies,
            caller: ctx.caller.as_deref(),
            bindings: bindings.as_ref().map_err(String::as_str),
            identity: &|pack| crate::install::identity(&ctx.home, pack),
            machine,
            mode: ctx.sandbox_mode,
            exposed,
            os: &|| ctx.os(),
        },
    )
}

pub(crate) fn to_json<T: serde::Serialize>(value: &T) -> serde_json::Value {
    serde_json::to_value(value).unwrap_or(serde_json::Value::Null)
}

/// Appends the audit line ([`crate::audit::append`]) of a decision other than an exec
/// (exec writes its own, with the run's numbers; see README.md); returns the
/// warning when it could not be written, never failing the call.
pub(crate) fn write_audit_line(
    ctx: &Context,
    argv: &[String],
    pack: &str,
    command: &str,
    decision: crate::audit::Disposition,
    started: std::time::Instant,
) -> Option<Warning> {
    let entry = crate::audit::Entry {
        ts: crate::audit::now(),
        principal: ctx.principal,
        subject: ctx.subject(),
        argv,
        pack,
        command,
        decision,
        exit_code: None,
        duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        output_bytes: 0,
        connection: None,
    };
    crate::audit::append(&ctx.home, &entry)
        .err()
        .map(|error| Warning::AuditLine(error.to_string()))
}

/// The decision for one of hcpx's own write commands (`hcp.install`,
/// `hcp.uninstall`, `hcp.adopt`): denied on a read-only server, else the policy's.
pub(crate) fn pseudo_evaluation(ctx: &Context, command: &str) -> crate::policy::Evaluation {
    use crate::manifest::Effect;
    match ctx
        .read_only
        .then(|| crate::policy::read_only(Effect::Write))
        .flatten()
    {
        Some(denied) => denied,
        None => crate::policy::evaluate(
            &crate::policy::Subject {
                pack: policy::PSEUDO_PACK,
                command,
                effect: Effect::Write,
                caller: ctx.caller.as_deref(),
            },
            &load_policies(ctx),
        ),
    }
}

/// What a confirmation is about.
pub(crate) struct Asked {
    /// The question (`Run git commit?`), then on lines of their own what will run.
    pub what: String,
    /// The caller passed `--yes`.
    pub yes: bool,
    /// The same command with `--yes`, for `next`.
    pub retry: Next,
    /// The command a person runs themselves.
    pub by_hand: Next,
}

/// A `deny`: by the policy (whose rules `policy show` lists), or by a read-only
/// server, which no policy change opens.
pub(crate) fn denied(evaluation: &crate::policy::Evaluation, plan: &impl serde::Serialize) -> Failure {
    let failure = Failure::new(Reason::DeniedByPolicy, evaluation.denial());
    let failure = if evaluation.rule.kind == crate::policy::RuleKind::ReadOnly {
        failure.next(Next::advice("this server is read-only (hcpx mcp --read-only): only commands that read run here; ask the user to run this one themselves"))
    } else {
        failure.next(Next::hcpx(["policy", "show"]))
    };
    failure.data(plan)
}

/// The policy step's confirmation, shared by exec, install and uninstall: `Ok` to go
/// on, or the refusal (`denied_by_policy`, `needs_confirmation`, `declined`).
pub(crate) async fn confirm(
    ctx: &Context,
    asked: &Asked,
    evaluation: &crate::policy::Evaluation,
    plan: &(impl serde::Serialize + Sync),
) -> Result<(), Failure> {
    use crate::context::Answer;
    use crate::policy::Decision;
    match evaluation.decision {
        Decision::Allow => Ok(()),
        Decision::Confirm if ctx.confirmed || asked.yes => Ok(()),
        Decision::Deny => Err(denied(evaluation, plan)),
        Decision::Confirm | Decision::ConfirmHuman => {
            // Only someone who is certainly a person is asked: `main.rs` hands in the
            // terminal only for a terminal caller (an agent's shell may drive a
            // terminal), the MCP server hands in the host's elicitation.
            if let Some(human) = &ctx.human {
                let question = crate::render::confirm_prompt(&asked.what, evaluation.decision);
                return match human.confirm(&question).await {
                    Answer::Yes => Ok(()),
                    // The person who just said no reads this at their terminal: no
                    // advice meant for an agent. An agent whose host's user declined
                    // learns not to ask again.
                    Answer::No | Answer::Cancelled if ctx.principal == crate::Principal::Terminal => {
                        Err(Failure::new(Reason::Declined, "you answered no; nothing ran").data(plan))
                    }
                    Answer::No | Answer::Cancelled => {
                        Err(Failure::new(Reason::Declined, "not confirmed; nothing ran")
                            .next(Next::advice(
                                "ask the person what to do instead; do not retry the same command",
                            ))
                            .data(plan))
                    }
                    Answer::Later => Err(Failure::new(
                        Reason::NeedsConfirmation,
                        "the host's user is asked to confirm; nothing ran yet",
                    )
                    .data(plan)),
                };
            }
            let failure = if evaluation.decision == Decision::ConfirmHuman {
                let message = if asked.yes || ctx.confirmed {
                    "only a person can confirm this command, at a terminal prompt; --yes is not enough"
                } else {
                    "only a person can confirm this command, at a terminal prompt"
                };
                Failure::new(Reason::NeedsConfirmation, message).next(Next::advice(format!(
                    "a person runs, at a terminal and without HCP_AGENT=1: {}",
                    asked.by_hand
                )))
            } else {
                Failure::new(
                    Reason::NeedsConfirmation,
                    "this command needs confirmation; nothing ran",
                )
                .next(asked.retry.clone())
            };
            Err(failure.data(plan))
        }
    }
}
