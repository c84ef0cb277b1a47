//! The one module that starts processes. It runs a [`Spawn`] with stdin closed
//! (or a pipe it writes the spawn's stdin bytes to, then closes), capturing stdout
//! and stderr up to a byte cap, and ends the call (TERM to the
//! child's process group, then KILL after a grace period) on timeout, output overflow
//! or cancellation. With a keeper (see [`crate::sandbox`]) TERM is a byte on the
//! control pipe and KILL is closing it: the keeper then kills every process of the
//! call, wherever it went, and so it does when the child exits or hcpx dies. Pipes
//! still held open by a process that escaped are drained only for a short while, so
//! no call can hang on them.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio_util::sync::CancellationToken;

use crate::Secret;
use crate::confine::{Confinement, SIGNAL_BASE};

#[cfg(target_os = "linux")]
mod calls;
#[cfg(target_os = "linux")]
pub(crate) use calls::KEEPER_NAME_C;
#[cfg(target_os = "linux")]
pub use calls::{Clear, Holder, KEEPER_NAME, Tie, socket_holder, tie, tie_remembering};
#[cfg(target_os = "linux")]
mod clone;
#[cfg(target_os = "linux")]
pub(crate) use clone::{Cover, proc_namespace};
#[cfg(target_os = "linux")]
mod mounts;
mod netns;
#[cfg(target_os = "linux")]
mod peer;
pub(crate) mod procfs;
#[cfg(target_os = "linux")]
pub use peer::{Credentials, Peer, Surroundings};
#[cfg(target_os = "linux")]
mod spawner;
#[cfg(target_os = "linux")]
pub use netns::{MAX_LISTENERS, NetNamespace, net_namespace};
#[cfg(target_os = "linux")]
pub use spawner::Spawner;

/// Largest capture per call, both streams together (see docs/mcp.md).
pub const MAX_OUTPUT: usize = 8 * 1024 * 1024;
/// [`MAX_OUTPUT`] in MiB, for messages.
pub const MAX_OUTPUT_MIB: usize = MAX_OUTPUT / (1024 * 1024);
/// Between TERM and KILL (see docs/sandbox.md).
pub(crate) const KILL_GRACE: Duration = Duration::from_secs(2);
/// How long to keep reading pipes after the child is gone: long enough for output
/// already written, short enough that a grandchild holding a pipe cannot hang us.
pub(crate) const DRAIN: Duration = Duration::from_millis(300);
/// How long to wait for a keeper to finish killing the call after it was told to:
/// past this, the call reports the child killed rather than hang on a process the
/// kernel cannot kill yet (one blocked in uninterruptible I/O).
pub(crate) const KEEPER_GRACE: Duration = Duration::from_secs(5);
/// A capture larger than this grows to its full room in one step.
const GROW_AT_ONCE: usize = 1024 * 1024;
/// What one read of a child's stdout or stderr takes at most.
const READ_CHUNK: usize = 64 * 1024;
/// How often a progress callback is called while the child runs.
pub(crate) const PROGRESS_EVERY: Duration = Duration::from_secs(1);

/// A ready-to-start process, for [`run_child`].
#[derive(Debug)]
pub struct Spawn {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub cwd: PathBuf,
    /// Applied by the call's processes before the pack's CLI runs; `None` for a
    /// program hcpx runs for itself (`npm pack`), which runs unconfined.
    pub confinement: Option<Confinement>,
    /// How the runtime ends the call when a keeper runs it; `None` when the runtime
    /// signals the child's process group itself.
    pub control: Option<Control>,
    /// Written to the child's standard input, a pipe closed once it is all written
    /// (at most [`Secret::MAX_LEN`] bytes, nothing added); `None`: stdin is
    /// `/dev/null`.
    pub stdin: Option<Secret>,
    /// Work done once the child has started, while hcpx only waits for it (a
    /// server's temporary folders, see `sandbox::CallFolder::meanwhile`).
    pub meanwhile: Option<Meanwhile>,
}

/// Work a call does while its child runs (see [`Spawn::meanwhile`]).
pub struct Meanwhile(pub Box<dyn FnOnce() + Send>);

impl std::fmt::Debug for Meanwhile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Meanwhile")
    }
}

/// The runtime's line to the keeper: one byte asks it to TERM the child's process
/// group; closing it (dropping this, or hcpx dying) makes the keeper kill every
/// process of the call at once.
#[derive(Debug)]
pub struct Control(#[cfg(unix)] pub(crate) std::os::fd::OwnedFd);

impl Control {
    /// Asks the keeper to send TERM to the child's process group.
    pub fn terminate(&self) {
        #[cfg(unix)]
        // A keeper that is gone has nothing left to stop.
        let _ = rustix::io::write(&self.0, b"T");
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// The child exited by itself (or was killed by a signal nobody here sent).
    Exited,
    TimedOut,
    /// Output passed the cap; the child was killed.
    Overflow,
    Cancelled,
}

#[derive(Debug, Clone)]
pub struct Finished {
    pub ending: Ending,
    /// The exit code, or 128 + the signal that killed it.
    pub exit_code: i32,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// Bytes the child wrote, kept or not.
    pub stdout_total: u64,
    pub stderr_total: u64,
}

impl Finished {
    #[cfg(test)]
    fn truncated(&self) -> bool {
        self.stdout_total > self.stdout.len() as u64 || self.stderr_total > self.stderr.len() as u64
    }
}

/// Progress while the child runs.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    pub elapsed: Duration,
    pub output_bytes: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    #[error("cannot start {program}: {source}")]
    Spawn {
        program: String,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "the standard input for {program} is {len} bytes, more than the {} a bound value may hold",
        Secret::MAX_LEN
    )]
    StdinTooLarge { program: String, len: usize },
}

/// Where captured bytes go, with the shared cap.
struct Capture {
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    stdout_total: u64,
    stderr_total: u64,
    cap: usize,
}

impl Capture {
    /// Keeps what fits; returns false once the cap is passed.
    fn take(&mut self, is_stdout: bool, bytes: &[u8]) -> bool {
        let room = self.cap.saturating_sub(self.stdout.len() + self.stderr.len());
        let (buffer, total) = if is_stdout {
            (&mut self.stdout, &mut self.stdout_total)
        } else {
            (&mut self.stderr, &mut self.stderr_total)
        };
        *total += bytes.len() as u64;
        let kept = &bytes[..bytes.len().min(room)];
        // Past a small size, grow once to all the room there is: doubling would
        // leave the pages of every outgrown buffer behind, twice the capture.
        if buffer.capacity() - buffer.len() < kept.len() && buffer.len() + kept.len() > GROW_AT_ONCE {
            buffer.reserve_exact(room);
        }
        buffer.extend_from_slice(kept);
        bytes.len() <= room
    }

    /// Takes one read of a stream: a chunk is kept, an end or error closes the
    /// stream. Returns false once the cap is passed.
    fn read(
        &mut self,
        is_stdout: bool,
        read: Option<usize>,
        chunk: &[u8],
        stream: &mut Option<Stream>,
    ) -> bool {
        match read {
            Some(n) if n > 0 => self.take(is_stdout, &chunk[..n]),
            _ => {
                *stream = None;
                true
            }
        }
    }

    fn total(&self) -> u64 {
        self.stdout_total + self.stderr_total
    }
}

/// A deadline that may not be set: unset, it is far enough away never to fire
/// (its `select!` arm is also switched off).
fn or_never(at: Option<tokio::time::Instant>) -> tokio::time::Instant {
    at.unwrap_or_else(|| tokio::time::Instant::now() + Duration::from_secs(86_400))
}

fn signal_group(pid: Option<u32>, kill: bool) {
    #[cfg(unix)]
    if let Some(pid) = pid
        .and_then(|pid| i32::try_from(pid).ok())
        .and_then(rustix::process::Pid::from_raw)
    {
        let signal = if kill {
            rustix::process::Signal::KILL
        } else {
            rustix::process::Signal::TERM
        };
        // The group may be gone already; that is the point.
        let _ = rustix::process::kill_process_group(pid, signal);
    }
    #[cfg(not(unix))]
    let _ = (pid, kill);
}

/// How a running call is stopped: through its keeper, or by signalling the child's
/// process group.
struct Stopper {
    control: Option<Control>,
    pid: Option<u32>,
}

impl Stopper {
    /// Starts ending the call for `why`: TERM to the child's group now; returns when
    /// to kill it all.
    fn stop(&self, ending: &mut Ending, why: Ending) -> tokio::time::Instant {
        *ending = why;
        match &self.control {
            Some(control) => control.terminate(),
            None => signal_group(self.pid, false),
        }
        tokio::time::Instant::now() + KILL_GRACE
    }

    /// Kills the whole call: closing the control pipe makes the keeper do it (when
    /// the child has exited, it already has); without one, KILL to the group.
    fn kill(&mut self) {
        if self.control.take().is_none() {
            signal_group(self.pid, true);
        }
    }
}

fn exit_code(status: std::process::ExitStatus) -> i32 {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return SIGNAL_BASE + signal;
        }
    }
    status.code().unwrap_or(SIGNAL_BASE)
}

/// The read end of one of the child's output pipes.
type Stream = Box<dyn tokio::io::AsyncRead + Unpin + Send>;
/// The write end of the child's standard input, when the spawn has bytes for it.
type Sink = Box<dyn tokio::io::AsyncWrite + Unpin + Send>;

/// What [`start`] hands the loop: the process, the parent's ends of its pipes, and
/// how to stop it.
struct Running {
    process: Process,
    stdout: Option<Stream>,
    stderr: Option<Stream>,
    stdin: Option<Sink>,
    stopper: Stopper,
}

/// A started call: a child tokio started, or (Linux) a keeper started by `clone`.
enum Process {
    Child(tokio::process::Child),
    #[cfg(target_os = "linux")]
    Keeper(Keeper),
}

impl Process {
    /// Waits for the process to end: its exit code, or 128 + the signal.
    async fn wait(&mut self) -> i32 {
        match self {
            Self::Child(child) => child.wait().await.map(exit_code).unwrap_or(SIGNAL_BASE),
            #[cfg(target_os = "linux")]
            Self::Keeper(keeper) => keeper.wait().await,
        }
    }
}

/// A keeper, watched through its pidfd, and the stack it runs on, which is freed
/// only once the keeper is reaped: here, or in a thread of its own when the call
/// is dropped before (the keeper then sweeps the call and exits).
#[cfg(target_os = "linux")]
struct Keeper {
    pidfd: Option<tokio::io::unix::AsyncFd<std::os::fd::OwnedFd>>,
    stack: Option<clone::Stack>,
}

#[cfg(target_os = "linux")]
impl Keeper {
    async fn wait(&mut self) -> i32 {
        use rustix::process::{WaitId, WaitIdOptions, waitid};
        let Some(pidfd) = self.pidfd.as_ref() else {
            return SIGNAL_BASE;
        };
        loop {
            let Ok(mut ready) = pidfd.readable().await else {
                return SIGNAL_BASE;
            };
            match waitid(
                WaitId::PidFd(std::os::fd::AsFd::as_fd(pidfd.get_ref())),
                WaitIdOptions::EXITED | WaitIdOptions::NOHANG,
            ) {
                Ok(Some(status)) => {
                    self.pidfd = None;
                    self.stack = None;
                    return match (status.exit_status(), status.terminating_signal()) {
                        (Some(code), _) => code,
                        (None, Some(signal)) => SIGNAL_BASE + signal,
                        (None, None) => SIGNAL_BASE,
                    };
                }
                Ok(None) | Err(rustix::io::Errno::INTR) => ready.clear_ready(),
                Err(_) => return SIGNAL_BASE,
            }
        }
    }
}

#[cfg(target_os = "linux")]
impl Drop for Keeper {
    fn drop(&mut self) {
        if let (Some(pidfd), Some(stack)) = (self.pidfd.take(), self.stack.take()) {
            abandon(pidfd.into_inner(), stack);
        }
    }
}

/// Reaps a keeper that the call no longer waits for, then frees its stack, in a
/// thread of its own so that nothing here waits: the control pipe, dropped with the
/// call, has already told the keeper to end it.
#[cfg(target_os = "linux")]
fn abandon(pidfd: std::os::fd::OwnedFd, stack: clone::Stack) {
    // Should the thread not start, the closure is dropped with the stack still
    // mapped: better a leaked stack than one pulled from under a running keeper.
    let stack = std::mem::ManuallyDrop::new(stack);
    let reaped = std::thread::Builder::new()
        .name("hcpx-keeper-reaper".into())
        .spawn(move || {
            let _ = rustix::process::waitid(
                rustix::process::WaitId::PidFd(std::os::fd::AsFd::as_fd(&pidfd)),
                rustix::process::WaitIdOptions::EXITED,
            );
            drop(std::mem::ManuallyDrop::into_inner(stack));
        });
    if reaped.is_err() {
        tracing::warn!("a keeper's stack is left mapped: no thread to reap it");
    }
}

/// How long to wait before each new start of a program found busy ("Text file
/// busy"): a third of a second in all.
#[cfg(target_os = "linux")]
const TEXT_BUSY_WAITS: [Duration; 5] = [
    Duration::from_millis(10),
    Duration::from_millis(20),
    Duration::from_millis(40),
    Duration::from_millis(80),
    Duration::from_millis(160),
];

/// Starts the call: under its keeper (Linux), else through tokio, with the
/// confinement applied between fork and exec. `stdin`: whether the child's
/// standard input is a pipe (the write end comes back) rather than `/dev/null`.
fn start(spawn: Spawn, stdin: bool) -> Result<Running, RuntimeError> {
    let failed = |source| RuntimeError::Spawn {
        program: spawn.program.display().to_string(),
        source,
    };
    #[cfg(target_os = "linux")]
    if let Some(confinement) = &spawn.confinement
        && let Some(keeper) = &confinement.keeper
        && spawn.control.is_some()
    {
        use std::os::fd::AsRawFd as _;
        // A program written a moment ago (a built-in pack's CLI, which this or another
        // process sharing `$HCP_HOME` materializes on a first call) may be "busy": a
        // process cloned while the writer had it open holds a copy of that descriptor
        // until it execs or closes it, within milliseconds. Started again a few times,
        // unless the failed start already sent hcpx a listener (declared sockets).
        let mut waits = TEXT_BUSY_WAITS.iter();
        let started = loop {
            match clone::start(&spawn, confinement, keeper.control.as_raw_fd(), stdin) {
                Err(error) if error.raw_os_error() == Some(libc::ETXTBSY) && confinement.notify.is_none() => {
                    let Some(wait) = waits.next() else {
                        break Err(error);
                    };
                    tracing::debug!("{} is busy; starting it again", spawn.program.display());
                    std::thread::sleep(*wait);
                }
                other => break other,
            }
        }
        .map_err(failed)?;
        let registered = (|| {
            use tokio::net::unix::pipe;
            let stdout = pipe::Receiver::from_owned_fd(started.stdout)?;
            let stderr = pipe::Receiver::from_owned_fd(started.stderr)?;
            // Non-blocking from here (the child's end is another open file, left
            // blocking): a child that does not read cannot stall the loop.
            let stdin = started.stdin.map(pipe::Sender::from_owned_fd).transpose()?;
            Ok::<_, std::io::Error>((stdout, stderr, stdin))
        })();
        let (stdout, stderr, stdin) = match registered {
            Ok(pipes) => pipes,
            Err(error) => {
                // The control pipe closes with `spawn`: the keeper ends the call.
                abandon(started.pidfd, started.stack);
                return Err(failed(error));
            }
        };
        #[expect(unsafe_code, reason = "registering the keeper's pidfd with tokio")]
        // SAFETY: the AsyncFd owns the pidfd, which stays open until it is dropped.
        let pidfd = match unsafe {
            tokio::io::unix::AsyncFd::register_with_interest(started.pidfd, tokio::io::Interest::READABLE)
        } {
            Ok(pidfd) => pidfd,
            Err(error) => {
                let (pidfd, error) = error.into_parts();
                abandon(pidfd, started.stack);
                return Err(failed(error));
            }
        };
        let (stdout, stderr): (Stream, Stream) = (Box::new(stdout), Box::new(stderr));
        let Spawn { control, .. } = spawn;
        return Ok(Running {
            process: Process::Keeper(Keeper {
                pidfd: Some(pidfd),
                stack: Some(started.stack),
            }),
            stdout: Some(stdout),
            stderr: Some(stderr),
            stdin: stdin.map(|sink| Box::new(sink) as Sink),
            stopper: Stopper { control, pid: None },
        });
    }
    #[expect(
        clippy::disallowed_methods,
        reason = "runtime.rs is the one place that starts processes"
    )]
    let mut command = tokio::process::Command::new(&spawn.program);
    command
        .args(&spawn.args)
        .env_clear()
        .envs(spawn.env.iter().map(|(key, value)| (key, value)))
        .current_dir(&spawn.cwd)
        .stdin(if stdin { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    #[cfg(unix)]
    match &spawn.confinement {
        Some(confinement) => {
            let confinement = ConfinementRef(std::ptr::from_ref(confinement));
            #[expect(
                unsafe_code,
                reason = "the sandbox's layers are applied between fork and exec"
            )]
            // SAFETY: the closure runs in the forked child before exec.
            // `Confinement::enter` only makes system calls on data prepared by the
            // parent, and the pointer stays valid: `spawn` is dropped only after
            // `command`, once the spawn has finished.
            unsafe {
                command.pre_exec(move || confinement.enter());
            }
        }
        // Nothing to apply: std spawns without forking, in a group of its own.
        None => {
            command.process_group(0);
        }
    }
    let spawned = command.spawn();
    drop(command);
    let mut child = spawned.map_err(failed)?;
    let stdout = child.stdout.take().map(|out| Box::new(out) as Stream);
    let stderr = child.stderr.take().map(|err| Box::new(err) as Stream);
    let stdin = child.stdin.take().map(|sink| Box::new(sink) as Sink);
    let pid = child.id();
    let Spawn { control, .. } = spawn;
    Ok(Running {
        process: Process::Child(child),
        stdout,
        stderr,
        stdin,
        stopper: Stopper { control, pid },
    })
}

/// Runs a process to its end under the limits.
pub async fn run_child(
    mut spawn: Spawn,
    timeout: Duration,
    cap: usize,
    cancel: &CancellationToken,
    progress: Option<&(dyn Fn(Progress) + Send + Sync)>,
) -> Result<Finished, RuntimeError> {
    let started = Instant::now();
    let input = spawn.stdin.take();
    let meanwhile = spawn.meanwhile.take();
    if let Some(input) = &input
        && input.len() > Secret::MAX_LEN
    {
        return Err(RuntimeError::StdinTooLarge {
            program: spawn.program.display().to_string(),
            len: input.len(),
        });
    }
    let Running {
        mut process,
        mut stdout,
        mut stderr,
        mut stdin,
        mut stopper,
    } = start(spawn, input.is_some())?;
    crate::mark("started");
    if let Some(Meanwhile(work)) = meanwhile {
        work();
    }
    crate::mark("meanwhile");
    // What is left to write to the child's stdin; an empty value closes it at once.
    let input = input.unwrap_or_else(|| Secret::new(String::new()));
    let mut fed = 0;
    if input.is_empty() {
        stdin = None;
    }
    let mut capture = Capture {
        stdout: Vec::new(),
        stderr: Vec::new(),
        stdout_total: 0,
        stderr_total: 0,
        cap,
    };
    // Read into capacity, never zeroed: a zeroed 64 KiB buffer touches every page of
    // it (16 page faults each, in a fresh CLI process) for output that is mostly a
    // few bytes.
    let mut out_chunk: Vec<u8> = Vec::with_capacity(READ_CHUNK);
    let mut err_chunk: Vec<u8> = Vec::with_capacity(READ_CHUNK);
    let mut ending = Ending::Exited;
    let mut status = None;
    let mut stop_reading_at: Option<tokio::time::Instant> = None;
    let mut kill_at: Option<tokio::time::Instant> = None;
    let mut give_up_at: Option<tokio::time::Instant> = None;
    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(deadline);
    // The first report is due a period from now. Not `interval` with its first
    // tick awaited here: tokio rounds that "immediate" tick up to the next
    // millisecond of its timer wheel, and the call waited for it, output and exit
    // unread meanwhile (up to 1 ms on every call).
    let mut ticker = progress
        .map(|_| tokio::time::interval_at(tokio::time::Instant::now() + PROGRESS_EVERY, PROGRESS_EVERY));

    loop {
        let reading = stdout.is_some() || stderr.is_some();
        if status.is_some() && !reading {
            break;
        }
        let running = ending == Ending::Exited && status.is_none();
        tokio::select! {
            read = async {
                out_chunk.clear();
                stdout.as_mut()?.read_buf(&mut out_chunk).await.ok()
            }, if stdout.is_some() => {
                if !capture.read(true, read, &out_chunk, &mut stdout) && running {
                    kill_at = Some(stopper.stop(&mut ending, Ending::Overflow));
                }
            }
            read = async {
                err_chunk.clear();
                stderr.as_mut()?.read_buf(&mut err_chunk).await.ok()
            }, if stderr.is_some() => {
                if !capture.read(false, read, &err_chunk, &mut stderr) && running {
                    kill_at = Some(stopper.stop(&mut ending, Ending::Overflow));
                }
            }
            // Never waited for: a child that does not read its stdin only leaves
            // this write pending until the call ends, which drops the pipe.
            wrote = async { stdin.as_mut()?.write(&input.expose().as_bytes()[fed..]).await.ok() }, if stdin.is_some() => {
                match wrote {
                    Some(n) if n > 0 && fed + n < input.len() => fed += n,
                    // All written: closing the pipe is the child's end of input. Or
                    // the child closed its end first (EPIPE), which is its choice,
                    // not a failure of the call.
                    _ => stdin = None,
                }
            }
            waited = process.wait(), if status.is_none() => {
                crate::mark("waited");
                status = Some(waited);
                stopper.kill();
                stop_reading_at = Some(tokio::time::Instant::now() + DRAIN);
            }
            () = &mut deadline, if running => {
                kill_at = Some(stopper.stop(&mut ending, Ending::TimedOut));
            }
            () = cancel.cancelled(), if running => {
                kill_at = Some(stopper.stop(&mut ending, Ending::Cancelled));
            }
            () = tokio::time::sleep_until(or_never(kill_at)), if kill_at.is_some() && status.is_none() => {
                stopper.kill();
                kill_at = None;
                give_up_at = Some(tokio::time::Instant::now() + KEEPER_GRACE);
            }
            () = tokio::time::sleep_until(or_never(give_up_at)), if give_up_at.is_some() && status.is_none() => {
                // As if killed: SIGKILL is 9 on every Unix.
                status = Some(SIGNAL_BASE + 9);
                stop_reading_at = Some(tokio::time::Instant::now());
            }
            () = tokio::time::sleep_until(or_never(stop_reading_at)), if stop_reading_at.is_some() => {
                stdout = None;
                stderr = None;
            }
            _ = async { Some(ticker.as_mut()?.tick().await) }, if ticker.is_some() && status.is_none() => {
                if let Some(report) = progress {
                    report(Progress { elapsed: started.elapsed(), output_bytes: capture.total() });
                }
            }
        }
    }
    crate::mark("drained");
    Ok(Finished {
        ending,
        exit_code: status.unwrap_or(SIGNAL_BASE),
        stdout: capture.stdout,
        stderr: capture.stderr,
        stdout_total: capture.stdout_total,
        stderr_total: capture.stderr_total,
    })
}

/// A pointer to the spawn's confinement, for the `pre_exec` closure, which must be
/// `'static`. The confinement lives in the [`Spawn`] until the spawn has finished.
#[cfg(unix)]
struct ConfinementRef(*const crate::confine::Confinement);

#[cfg(unix)]
impl ConfinementRef {
    #[expect(unsafe_code, reason = "reads the confinement through the pointer")]
    fn enter(&self) -> std::io::Result<()> {
        // SAFETY: the pointer comes from a live `&Confinement` that outlives the spawn.
        unsafe { (*self.0).enter() }
    }
}

// SAFETY: the pointee is only read, in the forked child, while the `Spawn` that owns
// it is alive (see `run_child`).
#[cfg(unix)]
#[expect(unsafe_code, reason = "a read-only pointer handed to the pre_exec closure")]
unsafe impl Send for ConfinementRef {}
// SAFETY: as above; nothing writes through it.
#[cfg(unix)]
#[expect(unsafe_code, reason = "a read-only pointer handed to the pre_exec closure")]
unsafe impl Sync for ConfinementRef {}

#[cfg(test)]
mod tests;
