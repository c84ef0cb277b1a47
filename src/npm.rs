//! The machine's own npm, as hcpx runs it for `install npm:…` (`npm pack`) and
//! `search --registry` (`npm search`): found on the caller's PATH, run in the
//! caller's environment, so their registry, credentials and proxy apply, from a
//! private temporary folder, so no project's `.npmrc` does, through the one runtime
//! that spawns processes.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::context::{Context, env_vars};
use crate::program::resolve_program;
use crate::runtime::{self, Finished, RuntimeError};
use crate::sandbox::Spawn;

/// npm on the caller's PATH, if there is one.
pub(crate) fn find(ctx: &Context) -> Option<PathBuf> {
    resolve_program("npm", ctx.var(env_vars::PATH))
}

/// Runs `npm ARGS…` in `dir` (a private temporary folder of the caller's), for at
/// most `timeout`, its output captured up to [`runtime::MAX_OUTPUT`].
pub(crate) async fn run(
    ctx: &Context,
    npm: PathBuf,
    args: Vec<String>,
    dir: &Path,
    timeout: Duration,
) -> Result<Finished, RuntimeError> {
    let spawn = Spawn {
        program: npm,
        args,
        // The user's own environment: their registry, credentials and proxy apply.
        env: ctx
            .env
            .iter()
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect(),
        cwd: dir.to_path_buf(),
        confinement: None,
        control: None,
        stdin: None,
        meanwhile: None,
    };
    runtime::run_child(
        spawn,
        timeout,
        runtime::MAX_OUTPUT,
        &ctx.cancel,
        ctx.progress.as_deref(),
    )
    .await
}

/// npm's own account of a failure on stderr: the `npm error …` lines (npm 7 and
/// later) or `npm ERR! …` (before), at most `max`.
pub(crate) fn said(stderr: &[u8], max: usize) -> Vec<String> {
    String::from_utf8_lossy(stderr)
        .lines()
        .filter(|line| line.starts_with("npm error") || line.starts_with("npm ERR!"))
        .take(max)
        .map(str::to_owned)
        .collect()
}

/// The code in npm's `npm error code E404` line, if [`said`] has one.
pub(crate) fn code(said: &[String]) -> Option<&str> {
    said.iter().find_map(|line| {
        let mut words = line.split_whitespace().skip_while(|word| *word != "code");
        words.next().and(words.next())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn npms_reason_is_its_error_lines_and_code() {
        let stderr = b"npm warn config something\nnpm error code E404\nnpm error 404 Not Found\nother\n";
        let lines = said(stderr, 6);
        assert_eq!(lines, ["npm error code E404", "npm error 404 Not Found"]);
        assert_eq!(code(&lines), Some("E404"));
        let old = said(b"npm ERR! code ETARGET\n", 6);
        assert_eq!(code(&old), Some("ETARGET"));
        assert_eq!(code(&said(b"npm error something\n", 6)), None);
        assert_eq!(said(b"npm error a\nnpm error b\n", 1), ["npm error a"]);
    }
}
