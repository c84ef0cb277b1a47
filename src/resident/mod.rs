//! The resident server (`hcpx serve`): one process of the user's that keeps what
//! `hcpx exec` would otherwise work out again in every process (the sandbox probe,
//! prepared Landlock rulesets and seccomp programs, the catalog), so that a CLI
//! process hands its call over a unix socket and only writes out what comes back.
//!
//! The socket is `$HCP_HOME/run/exec.sock`, in a folder only the user can enter.
//! A call is served only when running it here is the same as running it in the
//! client ([`admit`]): the same user, not a process of a pack's call, the same
//! surroundings (namespaces, root, cgroup, LSM label, no_new_privs, seccomp,
//! capabilities, limits, umask and binary), and the same hcpx settings (`HCP_*`).
//! Anything else is refused before anything of the call runs, and the client runs
//! the call itself, as it would without a server. The call runs with the client's
//! arguments, environment and working folder, never interactively (a client at a
//! terminal that a person may answer runs its calls itself), and is cancelled,
//! its processes killed, when the client goes away.

mod client;
pub(crate) mod wire;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

pub use client::{HandOff, Mode, hand_off};
pub use wire::Outgoing;
use wire::{Frame, Request};

use crate::context::{Context, Session, env_vars};

/// The most connections served at once; more are refused (and run in their own
/// processes).
const MAX_CALLS: usize = 256;
/// How long a client has to send its request once connected.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// The `HCP_*` variables that may differ between the server and a client: the
/// caller (each call's own), logging, the marks, and this choice itself.
const PER_CALL: [&str; 4] = [
    env_vars::HCP_AGENT,
    "HCP_LOG",
    "HCP_MARKS",
    env_vars::HCP_RESIDENT,
];

/// Whether a resident server serves `home` now: its lock is held. Reads only.
pub(crate) fn running(home: &Path) -> bool {
    let Ok(file) = std::fs::File::open(crate::layout::resident_lock(home)) else {
        return false;
    };
    matches!(
        rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockShared),
        Err(rustix::io::Errno::WOULDBLOCK)
    )
}

#[derive(Debug, thiserror::Error)]
pub enum ResidentError {
    #[error(
        "hcpx cannot serve here: {0}, so it cannot tell a confined client from one that is not. \
         Start `hcpx serve` outside any sandbox"
    )]
    Confined(&'static str),
    #[error("hcpx cannot read its own process: {0}")]
    Own(String),
    #[error("{path} {problem}; remove it, or fix its owner and mode, and start again")]
    RunDir { path: PathBuf, problem: String },
    #[error("a resident server already serves {home} (its lock is {lock}); stop it first")]
    Busy { home: PathBuf, lock: PathBuf },
    #[error("cannot listen at {path}: {source}")]
    Listen {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    State(#[from] crate::state::StateError),
}

/// What every connection is checked against and every call runs with.
struct Shared {
    /// This process's surroundings, which a client's must equal.
    own: hcpx_process::runtime::Surroundings,
    uid: u32,
    /// The server's `HCP_*` settings, but for [`PER_CALL`].
    settings: Vec<(String, String)>,
    /// The server's context: its home, session and binary.
    base: Context,
    /// Fires when the server should stop taking calls and leave once its running
    /// ones are done (its binary was replaced).
    retire: tokio_util::sync::CancellationToken,
    /// Built with the feature `marks` and started with `HCP_MARKS` set: each call's
    /// steps are logged (for profiling).
    marks: bool,
    /// The clients' ancestors found in no pack's call (their shells and agents),
    /// which the next client's check stops at.
    clear: hcpx_process::runtime::Clear,
}

/// A server bound to its socket, not serving yet.
pub struct Bound {
    listener: tokio::net::UnixListener,
    path: PathBuf,
    shared: Arc<Shared>,
    /// Held while the server runs: one server per `$HCP_HOME`.
    _lock: crate::state::Lock,
}

/// Binds the socket of `ctx`'s home, after checking that this process can serve.
/// Must be called inside a tokio runtime.
pub fn bind(ctx: &Context) -> Result<Bound, ResidentError> {
    let own = hcpx_process::runtime::Surroundings::own().map_err(ResidentError::Own)?;
    if let Some(reason) = own.confined() {
        return Err(ResidentError::Confined(reason));
    }
    let uid = rustix::process::geteuid().as_raw();
    crate::state::ensure_home(&ctx.home)?;
    private_folder(&crate::layout::resident(&ctx.home), uid)?;
    let lock_path = crate::layout::resident_lock(&ctx.home);
    let lock =
        crate::state::Lock::take(&lock_path, crate::state::Wait::No)?.ok_or_else(|| ResidentError::Busy {
            home: ctx.home.clone(),
            lock: lock_path.clone(),
        })?;
    // Whoever made it before is gone (the lock was free): a stale socket file.
    let path = crate::layout::resident_socket(&ctx.home);
    let _ = std::fs::remove_file(&path);
    let listen_error = |source| ResidentError::Listen {
        path: path.clone(),
        source,
    };
    let listener = tokio::net::UnixListener::bind(&path).map_err(listen_error)?;
    // The folder is the guard; the socket is the user's alone too.
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o600))
        .map_err(listen_error)?;
    let mut base = ctx.clone();
    base.session = Arc::new(Session::server());
    base.human = None;
    base.secret_input = None;
    base.progress = None;
    let session = base.session.clone();
    tokio::task::spawn_blocking(move || {
        session.sandbox.machine();
    });
    Ok(Bound {
        listener,
        path,
        shared: Arc::new(Shared {
            own,
            uid,
            settings: settings(
                ctx.env
                    .iter()
                    .map(|(name, value)| (name.as_str(), value.as_str())),
            ),
            retire: tokio_util::sync::CancellationToken::new(),
            marks: ctx.var("HCP_MARKS").is_some(),
            clear: hcpx_process::runtime::Clear::default(),
            base,
        }),
        _lock: lock,
    })
}

/// Makes `dir` (mode 0700) or checks that it is a folder of `uid`'s that no one
/// else can enter, not a link.
fn private_folder(dir: &Path, uid: u32) -> Result<(), ResidentError> {
    use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _};
    let problem = |problem: String| ResidentError::RunDir {
        path: dir.to_path_buf(),
        problem,
    };
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(error) => return Err(problem(format!("cannot be made: {error}"))),
    }
    let found =
        std::fs::symlink_metadata(dir).map_err(|error| problem(format!("cannot be read: {error}")))?;
    if !found.is_dir() {
        return Err(problem("is not a folder".to_owned()));
    }
    if found.uid() != uid {
        return Err(problem(format!("belongs to user {}, not to {uid}", found.uid())));
    }
    if found.mode() & 0o077 != 0 {
        return Err(problem(format!(
            "can be entered by other users (mode {:o})",
            found.mode() & 0o777
        )));
    }
    Ok(())
}

/// The settings of an environment that a client must share with the server: its
/// `HCP_*` variables, and `TMPDIR`, under which the server keeps one folder for all
/// its calls' folders.
fn settings<'a>(env: impl Iterator<Item = (&'a str, &'a str)>) -> Vec<(String, String)> {
    let mut settings: Vec<(String, String)> = env
        .filter(|(name, _)| (name.starts_with("HCP_") && !PER_CALL.contains(name)) || *name == "TMPDIR")
        .map(|(name, value)| (name.to_owned(), value.to_owned()))
        .collect();
    settings.sort();
    settings
}

impl Bound {
    /// The socket's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Serves until `ctx`'s cancellation fires (running calls are cancelled first),
    /// for `idle` without a call, or until a client shows that this server's binary
    /// was replaced (running calls finish first); the socket file is removed on the
    /// way out.
    pub async fn serve(self, idle: Option<Duration>) {
        let cancel = self.shared.base.cancel.clone();
        let calls = tokio_util::task::TaskTracker::new();
        // When the server last had something to do: a call came, or was running.
        let mut busy = tokio::time::Instant::now();
        loop {
            let idle_over = async {
                match idle {
                    Some(idle) => tokio::time::sleep_until(busy + idle).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                () = cancel.cancelled() => break,
                () = self.shared.retire.cancelled() => {
                    // New clients run their calls themselves from now on; running
                    // calls finish.
                    let _ = std::fs::remove_file(&self.path);
                    calls.close();
                    calls.wait().await;
                    return;
                }
                () = idle_over => {
                    if calls.is_empty() {
                        break;
                    }
                    busy = tokio::time::Instant::now();
                }
                accepted = self.listener.accept() => {
                    busy = tokio::time::Instant::now();
                    match accepted {
                        Ok((stream, _)) => {
                            let shared = self.shared.clone();
                            let full = calls.len() >= MAX_CALLS;
                            calls.spawn(async move { serve_one(stream, &shared, full).await });
                        }
                        Err(error) => {
                            tracing::warn!("hcpx serve: a connection could not be accepted: {error}");
                            tokio::time::sleep(Duration::from_millis(10)).await;
                        }
                    }
                }
            }
        }
        let _ = std::fs::remove_file(&self.path);
        cancel.cancel();
        calls.close();
        calls.wait().await;
    }
}

/// Whether the client that connected, `peer`, may have its call run here, and
/// why not. Its ancestors are walked up to the first one an earlier client's check
/// found in no call (its shell's, its agent's): with them remembered, the walk is one
/// read, and runs here, after the surroundings, rather than on a thread of its own,
/// whose waking cost more than it saved (0.24 against 0.33 ms at p50 for the whole
/// check, with the request's reading).
async fn admit(peer: std::io::Result<hcpx_process::runtime::Peer>, shared: &Shared) -> Result<(), String> {
    let peer = peer.map_err(|error| format!("the client cannot be identified: {error}"))?;
    if peer.uid() != shared.uid {
        return Err(format!(
            "the client runs as user {}, the server as {}",
            peer.uid(),
            shared.uid
        ));
    }
    crate::mark("resident peer");
    let pid = peer.pid();
    let theirs = shared.own.peer(pid);
    crate::mark("resident surroundings");
    let tie = hcpx_process::runtime::tie_remembering(pid, &shared.clear);
    crate::mark("resident tie");
    match tie {
        Ok(None) => {}
        Ok(Some(_)) => return Err("the client is a process of a pack's call".to_owned()),
        Err(error) => return Err(format!("the client cannot be read: {error}")),
    }
    let theirs = theirs.map_err(|error| format!("the client cannot be read: {error}"))?;
    if let Some(fact) = shared.own.differs(&theirs) {
        if fact == "exe" && replaced() {
            // hcpx was upgraded under the server: it serves none of the new
            // binary's calls, so it leaves for a server of the new one.
            shared.retire.cancel();
            return Err(
                "the client runs another hcpx binary: the server's was replaced, and the server stops"
                    .to_owned(),
            );
        }
        return Err(format!("the client's {fact} differs from the server's"));
    }
    if !peer.running() {
        return Err("the client left before it could be looked at".to_owned());
    }
    Ok(())
}

/// Whether the file this process was started from is gone (replaced by an upgrade).
fn replaced() -> bool {
    std::fs::read_link("/proc/self/exe")
        .is_ok_and(|path| path.as_os_str().as_encoded_bytes().ends_with(b" (deleted)"))
}

/// Serves one connection: checks the client, reads its request, runs it, answers;
/// refuses it when `full`.
async fn serve_one(stream: tokio::net::UnixStream, shared: &Shared, full: bool) {
    crate::mark("resident accepted");
    let peer = {
        use std::os::fd::AsFd as _;
        hcpx_process::runtime::Peer::of(stream.as_fd())
    };
    let (mut reader, mut writer) = stream.into_split();
    // The request is read while the client is looked at, and read even when it is
    // refused: a socket closed with the client's bytes unread resets the
    // connection, and the client would not read why.
    let (admitted, request) = tokio::join!(
        async {
            if full {
                return Err(format!("the server runs {MAX_CALLS} calls already"));
            }
            admit(peer, shared).await
        },
        async {
            tokio::time::timeout(REQUEST_TIMEOUT, read_request(&mut reader))
                .await
                .unwrap_or_else(|_| Err("the request did not arrive in time".to_owned()))
        }
    );
    crate::mark("resident admitted, request read");
    let request = admitted.and(request);
    let frames = match request.and_then(|request| context(request, shared)) {
        Err(reason) => {
            tracing::debug!("hcpx serve: refused a call: {reason}");
            let mut frames = Vec::new();
            Frame::Refused(reason).write_to(&mut frames);
            frames
        }
        Ok(Call { argv, ctx, terminals }) => {
            // Said before anything runs: a client that is gone by then has its call
            // not run at all.
            let mut started = Vec::new();
            Frame::Started.write_to(&mut started);
            if writer.write_all(&started).await.is_err() {
                return;
            }
            // The client going away (interrupted, killed) cancels the call.
            let cancel = ctx.cancel.clone();
            let watch = tokio::spawn(async move {
                let mut byte = [0_u8; 1];
                let _ = reader.read(&mut byte).await;
                cancel.cancel();
            });
            let mut sink = Frames {
                out: Vec::new(),
                terminals,
            };
            let outcome = crate::run_to_sink(argv, &ctx, &mut sink).await;
            watch.abort();
            Frame::Exit(outcome.exit_code).write_to(&mut sink.out);
            sink.out
        }
    };
    let _ = writer.write_all(&frames).await;
    crate::mark("resident written");
    if cfg!(feature = "marks") && shared.marks {
        tracing::warn!("{}", crate::marks_text());
    }
}

/// Reads a request: its length, then its body.
async fn read_request(reader: &mut tokio::net::unix::OwnedReadHalf) -> Result<Request, String> {
    let length = reader
        .read_u32()
        .await
        .map_err(|error| format!("the request cannot be read: {error}"))?;
    let length = usize::try_from(length).unwrap_or(usize::MAX);
    if length > wire::MAX_REQUEST {
        return Err(format!(
            "the request is {length} bytes, more than {}",
            wire::MAX_REQUEST
        ));
    }
    let mut body = vec![0_u8; length];
    reader
        .read_exact(&mut body)
        .await
        .map_err(|error| format!("the request cannot be read: {error}"))?;
    Request::parse(&body)
}

/// The context a request's call runs in: the client's, on the server's session;
/// refused when its settings differ from the server's.
fn context(request: Request, shared: &Shared) -> Result<Call, String> {
    let theirs = settings(
        request
            .env
            .iter()
            .map(|(name, value)| (name.as_str(), value.as_str())),
    );
    if let Some(name) = first_difference(&theirs, &shared.settings) {
        return Err(format!("the client's {name} differs from the server's"));
    }
    if !request.cwd.is_absolute() {
        return Err("the client's working folder is not absolute".to_owned());
    }
    let mut ctx = Context::new(request.env, request.cwd, false).map_err(|error| error.to_string())?;
    if ctx.home != shared.base.home {
        return Err(format!(
            "the client's HCP_HOME is {}, the server's {}",
            ctx.home.display(),
            shared.base.home.display()
        ));
    }
    ctx.session = shared.base.session.clone();
    ctx.self_exe = shared.base.self_exe.clone();
    ctx.cancel = shared.base.cancel.child_token();
    Ok(Call {
        argv: request.argv,
        ctx,
        terminals: request.terminals,
    })
}

/// A call a request makes: its words, the context it runs in, and whether the
/// client's stdout and stderr are terminals.
struct Call {
    argv: Vec<String>,
    ctx: Context,
    terminals: (bool, bool),
}

/// The first variable, by name, set in one of `a` and `b` and not the same in the
/// other.
fn first_difference<'a>(a: &'a [(String, String)], b: &'a [(String, String)]) -> Option<&'a str> {
    let value = |settings: &'a [(String, String)], wanted: &str| {
        settings
            .iter()
            .find(|(name, _)| name == wanted)
            .map(|(_, value)| value)
    };
    let mut names: Vec<&str> = a.iter().chain(b).map(|(name, _)| name.as_str()).collect();
    names.sort_unstable();
    names.into_iter().find(|name| value(a, name) != value(b, name))
}

/// A call's rendering, as frames for the client.
struct Frames {
    out: Vec<u8>,
    terminals: (bool, bool),
}

impl crate::Sink for Frames {
    fn stdout(&mut self, text: &str) {
        Frame::Stdout(text.to_owned()).write_to(&mut self.out);
    }

    fn stderr(&mut self, text: &str) {
        Frame::Stderr(text.to_owned()).write_to(&mut self.out);
    }

    fn stdout_is_terminal(&self) -> bool {
        self.terminals.0
    }

    fn stderr_is_terminal(&self) -> bool {
        self.terminals.1
    }
}

#[cfg(test)]
mod tests;
