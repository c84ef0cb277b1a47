//! Steps 4 and 5 of exec: the pack's CLI is found and the sandbox it needs can be
//! enforced here (also for `--dry-run`); then the child's CLI on disk, a private
//! temporary folder, the cleared environment and the layers, prepared; then the
//! pack's CLI runs under its limits, until it ends or is stopped.

use std::path::{Path, PathBuf};

use serde_json::json;

use super::Request;
use super::bind::Pinned;
use super::decide::Plan;
use super::egress::Egress;
use super::validate::Target;
use crate::binding::Secret;
use crate::catalog::{self, Origin, Pack, ProgramError};
use crate::context::Context;
use crate::error::{Failure, Reason};
use crate::manifest::Network;
use crate::next::Next;
use crate::runtime::{self, Finished};
use crate::sandbox::reads::ReadsError;
use crate::sandbox::{self, ChildNetwork, ChildPlan, FolderError, LayerReport, Mode};

fn program_failure(error: &ProgramError, pack: &Pack, os: &dyn Fn() -> crate::program::Os) -> Failure {
    let next = match error {
        ProgramError::NotOnPath { name } => {
            // What the pack's `program` says, on this system; else its name alone.
            let how = pack
                .manifest
                .program
                .as_ref()
                .and_then(|spec| crate::program::hints::how_to_get(Some(spec), os()))
                .unwrap_or_else(|| format!("install `{name}`"));
            Next::advice(format!("{how}, then run hcpx availability {}", pack.manifest.id))
        }
        ProgramError::MissingBuiltin | ProgramError::Materialize(_) => Next::hcpx(["doctor"]),
        ProgramError::NotInstalled => Next::hcpx(["install", pack.manifest.id.as_str()]),
    };
    Failure::new(Reason::NotRunnable, error.to_string()).next(next)
}

fn sandbox_failure(error: String) -> Failure {
    Failure::new(
        Reason::NotRunnable,
        "the sandbox could not be set up; nothing of the pack ran",
    )
    .data(json!({ "details": [error] }))
    .details(vec![error])
    .next(Next::hcpx(["doctor"]))
}

/// Step 4, first half (also for `--dry-run`): the pack's CLI is found, and the
/// sandbox it needs can be enforced here (in strict mode).
pub(super) fn runnable<'p>(
    ctx: &Context,
    target: &Target<'_>,
    plan: &'p Plan,
    pinned: Option<&Pinned>,
) -> Result<&'p PathBuf, Failure> {
    let program = plan
        .program
        .as_ref()
        .map_err(|error| program_failure(error, target.pack, &|| ctx.os()))?;
    // The same answer availability gives: a CLI whose `#!` interpreter is missing,
    // or whose file is not a runnable regular file, is refused here.
    if let Some((problem, fix)) = crate::availability::cli_problem_of(
        target.pack,
        &ctx.env,
        pinned.map(|pinned| pinned.bytes.as_slice()),
        &|| ctx.os(),
    ) {
        return Err(Failure::new(Reason::NotRunnable, problem).next(fix));
    }
    if let Err(error) = &plan.sandbox.reads {
        let next = match (error, &target.pack.origin) {
            (ReadsError::CwdInHome { .. }, _) => Next::advice("run it from a folder outside HCP_HOME"),
            (ReadsError::CwdInCaches { .. }, _) => {
                Next::advice("run it from a folder outside the packs' cache folders")
            }
            (ReadsError::Declared { .. } | ReadsError::DeclaredCaches { .. }, Origin::Installed { dir }) => {
                Next::advice(format!(
                    "a person removes that read from the pack's manifest; hcpx pack check {} shows it",
                    shell_words::quote(&dir.display().to_string())
                ))
            }
            (
                ReadsError::Declared { .. } | ReadsError::DeclaredCaches { .. },
                Origin::Builtin { .. } | Origin::Catalog,
            ) => Next::hcpx(["doctor"]),
        };
        return Err(Failure::new(Reason::NotRunnable, error.to_string()).next(next));
    }
    if let Some(error) = &plan.cache_error {
        return Err(
            Failure::new(Reason::NotRunnable, error.to_string()).next(Next::advice(
                "a person sets XDG_CACHE_HOME or HOME to the user's folders",
            )),
        );
    }
    if let Some(conflict) = &plan.sandbox.cache_in_home {
        return Err(
            Failure::new(Reason::NotRunnable, conflict.to_string()).next(Next::advice(
                "a person sets XDG_CACHE_HOME to a folder outside HCP_HOME",
            )),
        );
    }
    let missing: Vec<&LayerReport> = sandbox::missing(&plan.sandbox.layers);
    if !missing.is_empty() && ctx.sandbox_mode == Mode::Strict {
        let names: Vec<&str> = missing.iter().map(|layer| layer.layer).collect();
        return Err(Failure::new(
            Reason::NotRunnable,
            format!(
                "this machine cannot enforce what the pack needs: {}",
                names.join(", ")
            ),
        )
        .details(
            missing
                .iter()
                .map(|layer| format!("{}: {}", layer.layer, layer.detail))
                .collect(),
        )
        .next(Next::advice(
            "hcpx doctor; to run with only the layers enforced here, a person sets HCP_SANDBOX=best-effort",
        ))
        .data(plan.json()));
    }
    if plan.sandbox.unguarded_write.is_some() {
        return Err(Failure::new(
            Reason::NotRunnable,
            "the pack may write to a folder that holds HCP_HOME, and without Landlock nothing stops it there",
        )
        .next(Next::advice("run it from another folder")));
    }
    Ok(program)
}

/// Step 4: the sandbox: the child's CLI on disk, a private temporary folder, the
/// cleared environment and the layers, prepared.
pub(super) fn confine(
    ctx: &Context,
    target: &Target<'_>,
    plan: &Plan,
    program: &Path,
    pinned: Option<&Pinned>,
    bound: &[(String, Secret)],
) -> Result<(sandbox::Spawn, sandbox::CallFolder, Option<Egress>), Failure> {
    match pinned {
        Some(pinned) => catalog::write_program(&ctx.home, &pinned.program, &pinned.bytes),
        None => target.pack.materialize(&ctx.home, program),
    }
    .map_err(|error| program_failure(&error, target.pack, &|| ctx.os()))?;
    let mut tmpdir = ctx.session.sandbox.private_temp(&ctx.temp_dir).map_err(|error| {
        Failure::new(
            Reason::NotRunnable,
            format!("cannot create the private temporary folder: {error}"),
        )
        .next(Next::hcpx(["doctor"]))
    })?;
    // The bindings as the manifest delivers them: files in the folder made above.
    crate::mark("temp folder");
    let delivered = super::bind::deliver(target, tmpdir.path(), bound)?;
    // A credential's file goes with its call, not after it.
    if delivered.wrote_files {
        tmpdir.remove_inline();
    }
    // With an allowlist: the call's namespace, and the proxy served into it.
    let egress = match &plan.grants.network {
        Network::Allow(allow) => Some(super::egress::prepare(
            ctx,
            allow,
            delivered.headers,
            tmpdir.path(),
        )?),
        _ => None,
    };
    let mut env = sandbox::child_env(&ctx.env, tmpdir.path(), &delivered.env);
    let network = match &egress {
        Some(egress) => {
            env.extend(egress.env.iter().cloned());
            egress.network.clone()
        }
        None if plan.grants.network.any() => ChildNetwork::On,
        None => ChildNetwork::Off,
    };
    let child_plan = ChildPlan {
        program: program.to_path_buf(),
        args: delivered.args,
        cwd: ctx.cwd.clone(),
        env: sandbox::with_declared_env(env, &plan.grants),
        tmpdir: tmpdir.path().to_path_buf(),
        writes: plan.grants.writes.clone(),
        made: plan.grants.made.clone(),
        cache: plan.grants.cache.clone(),
        home: plan.home.clone(),
        reads: plan.sandbox.reads.clone().unwrap_or_default(),
        network,
        sockets: plan.grants.socket_paths(),
        stdin: delivered.stdin,
    };
    crate::mark("child plan");
    let mut spawn = sandbox::transform(child_plan, &ctx.session.sandbox).map_err(|error| match error {
        sandbox::SandboxError::WriteOutside { .. } => Failure::new(Reason::NotRunnable, error.to_string())
            .next(Next::advice(
                "remove the link, or run the pack where its write path is a folder of the working directory",
            )),
        sandbox::SandboxError::Folder(
            folder @ (FolderError::Outside { .. }
            | FolderError::CacheLink { .. }
            | FolderError::CacheOwner { .. }
            | FolderError::InHome(_)),
        ) => {
            let next = match &folder {
                FolderError::Outside { .. } => Next::advice("give a folder of the working directory"),
                FolderError::InHome(_) => {
                    Next::advice("a person sets XDG_CACHE_HOME to a folder outside HCP_HOME")
                }
                _ => Next::advice("a person removes what the message names; hcpx makes the folder again"),
            };
            Failure::new(Reason::NotRunnable, folder.to_string()).next(next)
        }
        error => sandbox_failure(error.to_string()),
    })?;
    // While the CLI runs, a server removes finished calls' folders and makes the next.
    spawn.meanwhile = tmpdir.meanwhile();
    Ok((spawn, tmpdir, egress))
}

/// Step 5: the pack's CLI runs under its limits, until it ends or is stopped.
pub(super) async fn spawn(
    ctx: &Context,
    request: &Request,
    target: &Target<'_>,
    child: sandbox::Spawn,
) -> Result<Finished, Failure> {
    runtime::run_child(
        child,
        request.timeout(target.pack),
        runtime::MAX_OUTPUT,
        &ctx.cancel,
        ctx.progress.as_deref(),
    )
    .await
    .map_err(|error| {
        Failure::new(
            Reason::NotRunnable,
            "the pack's CLI could not be started; nothing of it ran",
        )
        .details(vec![error.to_string()])
        .data(json!({ "details": [error.to_string()] }))
        .next(Next::hcpx(["availability", request.args.pack.as_str()]))
    })
}
