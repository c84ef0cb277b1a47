//! A server's thread that starts keepers with the layers every call of a kind shares
//! already on it: the seccomp filter (loaded, so compiled by the kernel, once) and
//! the bounding set dropped (once, not one credential copy per capability per call).
//! Both belong to the thread, not the process, and a clone inherits them: the
//! keeper and the child it starts hold them from their first instruction. The rest
//! of a call's layers (its Landlock layer, its namespaces, its capabilities and
//! descriptors) are still applied by the child itself, per call.
//!
//! One spawner per filter (network or not, declared sockets or not), so that a call
//! never inherits another kind's filter. Only a long-lived server has spawners: a
//! process that runs one call would pay the thread and the filter all the same.

use std::sync::Arc;
use std::sync::mpsc;

use crate::confine::Filters;

type Job = Box<dyn FnOnce() + Send>;

/// The thread, reached through its queue; it ends when this is dropped.
#[derive(Debug)]
pub struct Spawner {
    jobs: mpsc::Sender<Job>,
}

/// Why work given to a [`Spawner`] did not come back.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Gone {
    /// The thread had ended before it took the work: none of it ran.
    Before,
    /// The thread ended while it ran the work.
    During,
}

impl Spawner {
    /// Starts the thread and makes it a spawner of calls under `filters`, dropping
    /// the bounding set when `drop_bounding`; why not, in words, when it could not
    /// (the calls then apply every layer themselves).
    pub(crate) fn start(filters: Arc<Filters>, drop_bounding: bool, cap_last: u32) -> Result<Self, String> {
        let (jobs, queue) = mpsc::channel::<Job>();
        let (ready, made) = mpsc::sync_channel::<Result<(), String>>(1);
        std::thread::Builder::new()
            .name("hcpx-spawner".to_owned())
            .spawn(move || {
                // SAFETY: this thread is the spawner's alone, and runs only its jobs.
                #[expect(unsafe_code, reason = "the thread's own filter and bounding set")]
                let prepared = unsafe { crate::confine::make_spawner(&filters, drop_bounding, cap_last) };
                let ok = prepared.is_ok();
                let _ = ready.send(prepared.map_err(|errno| format!("errno {}", errno.into_raw())));
                if ok {
                    for job in queue {
                        job();
                    }
                }
            })
            .map_err(|error| format!("no thread: {error}"))?;
        made.recv()
            .map_err(|_| "the thread ended before it was ready".to_owned())??;
        Ok(Self { jobs })
    }

    /// Runs `work` on the spawner's thread and waits for what it returns.
    pub(crate) fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, Gone> {
        let (reply, answer) = mpsc::sync_channel::<T>(1);
        self.jobs
            .send(Box::new(move || {
                let _ = reply.send(work());
            }))
            .map_err(|_| Gone::Before)?;
        answer.recv().map_err(|_| Gone::During)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status_of_this_thread() -> String {
        let status = std::fs::read_to_string("/proc/thread-self/status").unwrap();
        status
            .lines()
            .filter(|line| line.starts_with("Seccomp:") || line.starts_with("NoNewPrivs:"))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The spawner's thread holds the filter and `no_new_privs`; the thread that
    /// started it holds neither.
    #[test]
    fn the_layers_are_the_spawner_threads_alone() {
        let program = crate::sandbox::seccomp_program_for_bench(true).unwrap();
        let spawner = Spawner::start(Arc::new(Filters { program }), false, 0).unwrap();
        assert_eq!(
            spawner.run(status_of_this_thread),
            Ok("NoNewPrivs:\t1 Seccomp:\t2".to_owned())
        );
        assert_eq!(status_of_this_thread(), "NoNewPrivs:\t0 Seccomp:\t0");
    }
}
