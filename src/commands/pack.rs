//! `hcpx pack check DIR` and `hcpx pack new ID [--bin PROGRAM]`: tools for pack
//! authors. `pack new` writes a pack with a CLI script of its own; with `--bin`, a
//! pack around a program already on PATH, drafted from what the program says about
//! itself (`--version`, `--help`, each asked once under the sandbox).

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::Reply;
use crate::catalog::{self, MANIFEST_FILE, SKILL_FILE};
use crate::context::Context;
use crate::error::{Failure, Reason};
use crate::manifest::Problem;
use crate::next::Next;
use crate::render::{self, Drafted};
use crate::template::is_pack_id;

/// `pack check`'s data of a valid pack.
#[derive(Serialize)]
struct Valid<'a> {
    dir: &'a Path,
    id: &'a str,
    version: String,
    commands: &'a [&'a str],
    /// None: the same field as a refusal's.
    problems: &'a [Problem],
    /// What refuses nothing (a CLI file install will make executable).
    notes: &'a [String],
}

/// `pack check`'s refusal data: every problem.
#[derive(Serialize)]
struct Invalid<'a> {
    dir: &'a Path,
    problems: &'a [Problem],
}

/// `pack new`'s data: the folder and the files written there; with `--bin`, the
/// program it wraps and the command drafted for it.
#[derive(Serialize)]
struct Created<'a> {
    id: &'a str,
    dir: PathBuf,
    files: &'a [&'a str],
    #[serde(skip_serializing_if = "Option::is_none")]
    program: Option<&'a Path>,
    #[serde(skip_serializing_if = "Option::is_none")]
    drafted: Option<&'a Drafted>,
}

pub(crate) fn check(ctx: &Context, dir: &Path) -> Result<Reply, Failure> {
    let dir = ctx.cwd.join(dir);
    if !dir.is_dir() {
        return Err(
            Failure::new(Reason::InvalidArguments, "that folder does not exist")
                .next(Next::hcpx(["pack", "new", "ID"]).note("to start a pack")),
        );
    }
    // Judged as install judges it (`install::check_folder`), so that what passes here
    // installs, and what install refuses is refused here.
    let loaded = crate::install::check_folder(&dir).and_then(|checked| {
        let problems = home_problems(ctx, &checked.manifest.sandbox.read);
        if problems.is_empty() {
            Ok(checked)
        } else {
            Err(problems)
        }
    });
    match loaded {
        Ok(crate::install::Checked { manifest, notes }) => {
            let commands: Vec<&str> = manifest
                .commands
                .iter()
                .map(|command| command.name.as_str())
                .collect();
            let data = Valid {
                dir: &dir,
                id: &manifest.id,
                version: manifest.version.to_string(),
                commands: &commands,
                problems: &[],
                notes: &notes,
            };
            Ok(Reply::new(
                &data,
                render::pack_check_text(&manifest.id, &data.version, &commands, &notes),
            ))
        }
        // The folder is there and the pack in it is broken: not the caller's words,
        // but files a person fixes, as `next` says; the same reason install gives.
        Err(problems) => {
            let lines: Vec<String> = problems.iter().map(ToString::to_string).collect();
            Err(Failure::new(
                Reason::InvalidPack,
                format!(
                    "the pack is invalid: {}",
                    render::count(problems.len(), "problem")
                ),
            )
            .details(lines)
            .next(Next::advice(
                "fix each problem listed, then run hcpx pack check again",
            ))
            .data(Invalid {
                dir: &dir,
                problems: &problems,
            }))
        }
    }
}

/// The manifest's declared reads that reach this `$HCP_HOME`: a pack never reads it,
/// so such a pack would be refused at every exec.
fn home_problems(ctx: &Context, declared: &[String]) -> Vec<crate::manifest::Problem> {
    use crate::sandbox::reads;
    let home = ctx.session.sandbox.home_view(&ctx.home);
    let user_home = ctx.var(crate::context::env_vars::HOME).map(Path::new);
    reads::declared_conflicts(declared, &home, user_home)
        .into_iter()
        .map(|(index, conflict)| crate::manifest::Problem {
            path: format!("sandbox.read[{index}]"),
            message: format!(
                "{} HCP_HOME ({}), which no pack may read; declare only the files the CLI needs",
                reads::conflict_words(conflict),
                home.real().display()
            ),
        })
        .collect()
}

/// The example binding `pack new` declares: `WEATHER_API_KEY` for `weather`, or
/// `API_KEY` when the id does not make a name the manifest accepts (`7zip`, `ld`).
fn binding_key(id: &str) -> String {
    let stem: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect();
    let key = format!("{stem}_API_KEY");
    let reserved =
        key.starts_with(|c: char| c.is_ascii_digit()) || key.starts_with("HCP_") || key.starts_with("LD_");
    if reserved { "API_KEY".to_owned() } else { key }
}

fn manifest_template(id: &str, key: &str) -> String {
    format!(
        r#"{{
  "hcp": 1,
  "id": "{id}",
  "version": "0.1.0",
  "description": "Describe in one line what {id} does",
  "keywords": ["{id}"],
  "bin": ["./{id}"],
  "bindings": {{
    "{key}": {{
      "description": "an example credential, given to the CLI as an environment variable; the pack runs without it",
      "secret": true,
      "required": false
    }}
  }},
  "sandbox": {{ "network": false, "read": [], "write": [], "timeoutMs": 30000 }},
  "commands": {{
    "hello": {{
      "summary": "Greet someone by name",
      "effect": "read",
      "params": {{
        "name": {{ "type": "string", "required": true, "maxLength": 100, "description": "who to greet" }},
        "lang": {{ "type": "enum", "values": ["en", "fr"], "default": "en", "description": "the greeting's language" }},
        "loud": {{ "type": "boolean", "default": false, "flag": "--loud", "description": "shout the greeting" }}
      }},
      "argv": ["hello", "--name", "{{name}}", "--lang", "{{lang}}", "{{loud}}"],
      "json": ["--json"]
    }}
  }}
}}
"#
    )
}

fn skill_template(id: &str, key: &str) -> String {
    format!(
        "---\nname: {id}\ndescription: Greets people by name. Use it when someone asks for a greeting. \
         (Replace this with what {id} does and when an agent should use it.)\n---\n\n# {id}\n\n\
         ## When to use\n\nDescribe the tasks this pack is for, and the ones it is not for.\n\n\
         ## Commands\n\n- `hello`: greet someone, in English or French (`lang=fr`), shouting with `loud=true`.\n  \
         `hcpx exec {id} hello -- name=Ada`\n  \
         `hcpx exec {id} hello --json -- name=Ada lang=fr` returns `{{\"greeting\": ..., \"key\": \"set\" or \"unset\"}}`\n\n\
         ## Credentials\n\n`{key}` is optional: the pack runs without it. A person binds it with \
         `hcpx bind {id} {key}`; an agent cannot.\n\n\
         ## Pitfalls\n\nList what an agent gets wrong the first time.\n"
    )
}

fn script_template(id: &str, key: &str) -> String {
    format!(
        r#"#!/bin/sh
# The CLI of pack {id}. hcpx runs it with a cleared environment (plus the pack's
# bindings, such as {key}), stdin closed, in the caller's folder, with every
# caller value in one argument of its own.
set -eu
cmd=${{1:-}}
[ $# -gt 0 ] && shift
json=0
loud=0
name=
lang=en
# Options as hcpx passes them: each value in the argument after its option.
while [ $# -gt 0 ]; do
  case $1 in
    --json) json=1 ;;
    --loud) loud=1 ;;
    --name) name=${{2-}}; shift ;;
    --lang) lang=${{2-}}; shift ;;
    *) echo "{id}: unknown argument" >&2; exit 2 ;;
  esac
  [ $# -gt 0 ] && shift
done
# Say whether the credential is there; never print it.
if [ -n "${{{key}:-}}" ]; then key=set; else key=unset; fi
case $cmd in
  hello)
    case $lang in
      fr) word=Bonjour ;;
      *) word=Hello ;;
    esac
    greeting="$word, $name!"
    if [ "$loud" = 1 ]; then
      greeting=$(printf '%s' "$greeting" | tr '[:lower:]' '[:upper:]')
    fi
    if [ "$json" = 1 ]; then
      escaped=$(printf '%s' "$greeting" | sed 's/\\/\\\\/g; s/"/\\"/g')
      printf '{{"greeting":"%s","key":"%s"}}\n' "$escaped" "$key"
    else
      printf '%s\n' "$greeting"
    fi
    ;;
  *) echo "usage: {id} hello --name NAME [--lang en|fr] [--loud] [--json]" >&2; exit 2 ;;
esac
"#
    )
}

fn not_a_pack_id() -> Failure {
    Failure::new(
        Reason::InvalidArguments,
        "pack ids match ^[a-z0-9][a-z0-9._-]{0,63}$",
    )
    .next(Next::hcpx(["pack", "new", "my-tool"]))
}

fn write_failure(error: std::io::Error) -> Failure {
    Failure::new(Reason::Io, format!("cannot write the pack: {error}"))
}

/// Makes `./ID/`, refusing one that is there already.
fn make_folder(ctx: &Context, id: &str) -> Result<PathBuf, Failure> {
    let dir = ctx.cwd.join(id);
    match std::fs::create_dir(&dir) {
        Ok(()) => Ok(dir),
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => Err(exists_already(id)),
        Err(error) => Err(write_failure(error)),
    }
}

fn exists_already(id: &str) -> Failure {
    Failure::new(
        Reason::InvalidArguments,
        "a file or folder by that name exists here already",
    )
    .next(Next::hcpx(["pack", "check", id]))
}

pub(crate) fn new(ctx: &Context, id: &str) -> Result<Reply, Failure> {
    if !is_pack_id(id) {
        return Err(not_a_pack_id());
    }
    let dir = make_folder(ctx, id)?;
    let io = write_failure;
    let key = binding_key(id);
    std::fs::write(dir.join(MANIFEST_FILE), manifest_template(id, &key)).map_err(io)?;
    std::fs::write(dir.join(SKILL_FILE), skill_template(id, &key)).map_err(io)?;
    let script = dir.join(id);
    std::fs::write(&script, script_template(id, &key)).map_err(io)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).map_err(io)?;
    }
    // What we write must pass our own check: when it does not, the folder does not
    // hold what was written (a file system that drops the executable bit, say).
    catalog::load_dir(&dir).map_err(|problems| {
        Failure::new(Reason::Io, "the generated pack failed its own check")
            .details(problems.iter().map(ToString::to_string).collect())
    })?;
    let files = [MANIFEST_FILE, SKILL_FILE, id];
    let text = render::pack_new_text(id, &files);
    let created = Created {
        id,
        dir,
        files: &files,
        program: None,
        drafted: None,
    };
    Ok(Reply::new(&created, text))
}

/// The most characters of a program's own line the drafted description keeps.
const MAX_DRAFTED_DESCRIPTION: usize = 200;
/// How many lines of `--help` are looked at for a description.
const HELP_LINES: usize = 8;

/// A description from the head of `--help`: the first line that says what the
/// program is, not a usage line, an option, a heading, its version line or its
/// author's address.
fn description_from_help(help: &str, version_line: Option<&str>) -> Option<String> {
    help.lines()
        .take(HELP_LINES)
        .filter(|line| !line.starts_with([' ', '\t']))
        .map(str::trim)
        .find(|line| {
            !line.is_empty()
                && !line.to_ascii_lowercase().starts_with("usage")
                && !line.ends_with(':')
                && !line.contains('@')
                && !line.starts_with('-')
                && Some(*line) != version_line
                && !line.chars().any(char::is_control)
        })
        .map(|line| line.chars().take(MAX_DRAFTED_DESCRIPTION).collect())
}

/// A `versionPattern` from the first line of `--version`: its first word without
/// the version (`ripgrep 13.0.0` → `^ripgrep`, `jq-1.6` → `^jq`); `None` when
/// nothing is left.
fn version_pattern(line: &str) -> Option<String> {
    let word = line.split_whitespace().next()?;
    let name: String = word.chars().take_while(|c| !c.is_ascii_digit()).collect();
    let name = name.trim_end_matches(['-', '_', '.', 'v']);
    (!name.is_empty()).then(|| format!("^{}", regex::escape(name)))
}

fn bin_manifest(
    id: &str,
    program: &str,
    description: &str,
    drafted: &Drafted,
    pattern: Option<&str>,
) -> String {
    let mut keywords = vec![id];
    if program != id {
        keywords.push(program);
    }
    let (summary, argv) = match drafted.command {
        "version" => (
            format!("Show which {program} this is and its version"),
            ["--version"],
        ),
        _ => (
            format!("Show what {program} says about its usage and options"),
            ["--help"],
        ),
    };
    let mut manifest = serde_json::json!({
        "hcp": 1,
        "id": id,
        "version": "0.1.0",
        "description": description,
        "keywords": keywords,
        "bin": [program],
    });
    if drafted.version_args {
        let mut spec = serde_json::json!({ "versionArgs": ["--version"] });
        if let Some(pattern) = pattern {
            spec["versionPattern"] = serde_json::json!(pattern);
        }
        manifest["program"] = spec;
    }
    manifest["sandbox"] =
        serde_json::json!({ "network": false, "read": [], "write": [], "timeoutMs": 30000 });
    manifest["commands"] = serde_json::json!({
        drafted.command: { "summary": summary, "effect": "read", "argv": argv }
    });
    let mut text = serde_json::to_string_pretty(&manifest).unwrap_or_default();
    text.push('\n');
    text
}

fn bin_skill(id: &str, program: &str, description: &str, command: &str) -> String {
    // A JSON string is a YAML double-quoted scalar: the program's words cannot break
    // the front matter.
    let quoted = serde_json::to_string(&format!(
        "{description}. (Replace this with what {id} does and when an agent should use it.)"
    ))
    .unwrap_or_default();
    format!(
        "---\nname: {id}\ndescription: {quoted}\n---\n\n# {id}\n\n\
         Runs the machine's `{program}` in the working directory, under hcpx's sandbox.\n\n\
         ## Commands\n\n- `{command}`: `hcpx exec {id} {command}`\n\n\
         ## What to edit\n\n\
         This pack was drafted by `hcpx pack new {id} --bin {program}`. Before you share it:\n\n\
         1. `hcp.json`: say in `description` what the pack does; add the commands an agent needs, \
         each with its `effect` (`read`, `write`, `destructive`), its `params` and its `argv`; \
         grant `sandbox.write` or `network` only to commands that need them.\n\
         2. `hcp.json`, `program`: name the variant the pack supports (`variant`), tighten \
         `versionPattern` to match only it, list other names it goes by (`aliases`), and how to \
         install it (`install`: `apt`, `brew`, `pip`, `npm`, ...) and its `homepage`, so that \
         `hcpx availability {id}` can say how to get it.\n\
         3. This file: the description above (what the pack does and when to use it), one \
         example per command, and the pitfalls an agent meets the first time.\n\n\
         Then run `hcpx pack check {id}`.\n"
    )
}

/// `hcpx pack new ID --bin PROGRAM`: a pack around `PROGRAM`, found on PATH, with
/// no script. `PROGRAM --version` and `PROGRAM --help` are each run once under the
/// sandbox ([`crate::program::probe`]): a `--version` that answers gives
/// `program.versionArgs` (and a `versionPattern` from its first word), the head of
/// `--help` the description, and the one command drafted is `help` (or `version`
/// when only that answers). The result passes `pack check`.
pub(crate) async fn new_around(ctx: &Context, id: &str, program: &str) -> Result<Reply, Failure> {
    use crate::program::probe::{self, Probed};
    if !is_pack_id(id) {
        return Err(not_a_pack_id());
    }
    let named = !program.is_empty()
        && program.len() <= 64
        && !program.contains('/')
        && !program.starts_with(['-', '.'])
        && !program.chars().any(|c| c.is_control() || c.is_whitespace());
    if !named {
        return Err(Failure::new(
            Reason::InvalidArguments,
            "--bin takes the name of a program on PATH, as a shell would run it (rg, fdfind), not a path",
        )
        .next(Next::hcpx(["pack", "new", id, "--bin", "rg"])));
    }
    let Some(found) = crate::program::resolve_program(program, ctx.var(crate::context::env_vars::PATH))
    else {
        return Err(Failure::new(
            Reason::NotRunnable,
            "no program by that name on PATH, so there is nothing to wrap; nothing was written",
        )
        .next(Next::advice(format!(
            "install {program} (or put the folder that holds it on PATH; `command -v {program}` finds it), \
             then run hcpx pack new {id} --bin {program}; a program may go by another name here (Debian's fd is fdfind)"
        ))));
    };
    if ctx.cwd.join(id).symlink_metadata().is_ok() {
        return Err(exists_already(id));
    }
    let caller = probe::Caller {
        env: &ctx.env,
        home: &ctx.home,
        temp_dir: &ctx.temp_dir,
        sandbox: &ctx.session.sandbox,
        mode: ctx.sandbox_mode,
        cancel: &ctx.cancel,
    };
    let version = probe::run(&caller, &found, &["--version".to_owned()], &[]).await;
    let help = probe::run(&caller, &found, &["--help".to_owned()], &[]).await;
    let version_line = version
        .succeeded()
        .then(|| version.first_line())
        .flatten()
        .map(str::to_owned);
    let from_help = match &help {
        Probed::Answered { exit_code: 0, output } => description_from_help(output, version_line.as_deref()),
        _ => None,
    };
    let drafted = Drafted {
        command: if help.succeeded() || version_line.is_none() {
            "help"
        } else {
            "version"
        },
        description_from_help: from_help.is_some(),
        version_args: version_line.is_some(),
        version: version_line.clone(),
    };
    let description =
        from_help.unwrap_or_else(|| format!("Run {program}: describe in one line what {id} does"));
    let pattern = version_line.as_deref().and_then(version_pattern);
    let dir = make_folder(ctx, id)?;
    let manifest = bin_manifest(id, program, &description, &drafted, pattern.as_deref());
    std::fs::write(dir.join(MANIFEST_FILE), manifest).map_err(write_failure)?;
    std::fs::write(
        dir.join(SKILL_FILE),
        bin_skill(id, program, description.trim_end_matches('.'), drafted.command),
    )
    .map_err(write_failure)?;
    catalog::load_dir(&dir).map_err(|problems| {
        Failure::new(Reason::Io, "the generated pack failed its own check")
            .details(problems.iter().map(ToString::to_string).collect())
    })?;
    let files = [MANIFEST_FILE, SKILL_FILE];
    let text = render::pack_new_bin_text(id, &found, &drafted, &help);
    let created = Created {
        id,
        dir,
        files: &files,
        program: Some(&found),
        drafted: Some(&drafted),
    };
    Ok(Reply::new(&created, text))
}
