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
