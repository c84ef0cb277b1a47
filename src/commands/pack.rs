//! `hcpx pack check DIR` and `hcpx pack new ID`: tools for pack authors.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::Reply;
use crate::catalog::{self, MANIFEST_FILE, SKILL_FILE};
use crate::context::Context;
use crate::error::{Failure, Reason};
use crate::manifest::Problem;
use crate::next::Next;
use crate::render;
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

/// `pack new`'s data: the folder and the files written there.
#[derive(Serialize)]
struct Created<'a> {
    id: &'a str,
    dir: PathBuf,
    files: [&'a str; 3],
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

pub(crate) fn new(ctx: &Context, id: &str) -> Result<Reply, Failure> {
    if !is_pack_id(id) {
        return Err(Failure::new(
            Reason::InvalidArguments,
            "pack ids match ^[a-z0-9][a-z0-9._-]{0,63}$",
        )
        .next(Next::hcpx(["pack", "new", "my-tool"])));
    }
    let dir = ctx.cwd.join(id);
    let io = |error: std::io::Error| Failure::new(Reason::Io, format!("cannot write the pack: {error}"));
    match std::fs::create_dir(&dir) {
        Ok(()) => {}
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
            return Err(Failure::new(
                Reason::InvalidArguments,
                "a file or folder by that name exists here already",
            )
            .next(Next::hcpx(["pack", "check", id])));
        }
        Err(error) => return Err(io(error)),
    }
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
    Ok(Reply::new(&Created { id, dir, files }, text))
}
