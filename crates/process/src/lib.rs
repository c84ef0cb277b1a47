//! Process containment for hcpx: the only crate with `unsafe` code, and the only one
//! that starts processes.
//!
//! Three layers, each importing only the ones below it:
//! - [`sandbox`]: the transform. A [`sandbox::ChildPlan`] (what a pack's CLI should
//!   run, with which grants) becomes a [`runtime::Spawn`] carrying a
//!   [`sandbox::Confinement`] prepared in the parent; it also probes what this
//!   machine enforces and reports the layers of a call.
//! - [`runtime`]: runs a spawn, captures its output up to a cap, and ends it on
//!   timeout, overflow or cancellation.
//! - `confine`: the code a call's own processes run on themselves (the keeper's loop,
//!   the child's layers) between `clone` and `exec`, and the data it needs.

#![warn(unreachable_pub)]

mod confine;
pub mod runtime;
pub mod sandbox;
mod secret;

pub use secret::Secret;

/// Marks a step of a call, for `cargo bench --bench exec --features marks`
/// (`HCP_BENCH_PROFILE=N`), which prints how long each step took; without the
/// feature, nothing (and nothing is compiled in).
#[cfg(feature = "marks")]
pub fn mark(name: &'static str) {
    MARKS.with(|marks| marks.borrow_mut().push((name, std::time::Instant::now())));
}

/// Without the feature `marks`: nothing.
#[cfg(not(feature = "marks"))]
#[inline(always)]
pub fn mark(_name: &'static str) {}

/// The steps marked on this thread since the last call, and when.
#[doc(hidden)]
pub fn take_marks() -> Vec<(&'static str, std::time::Instant)> {
    #[cfg(feature = "marks")]
    return MARKS.with(|marks| std::mem::take(&mut *marks.borrow_mut()));
    #[cfg(not(feature = "marks"))]
    Vec::new()
}

#[cfg(feature = "marks")]
thread_local! {
    static MARKS: std::cell::RefCell<Vec<(&'static str, std::time::Instant)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}
