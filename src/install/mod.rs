//! Installing packs (see README.md): from a local folder, a built-in or catalog id
//! ([`embedded`]), or an npm
//! tarball fetched by the machine's own `npm pack` (run by the install command,
//! `commands/install.rs`; this module reads what it fetched). Only the pack's three
//! files are taken; a path that escapes, a link, a device file or a file over 16 MiB
//! refuses the whole install; the manifest is validated before anything is placed;
//! the pack is staged beside its place and swapped in, so a failure leaves the
//! previous one.
//!
//! The parts: reading a source ([`folder`], [`tarball`]) into [`files`] and their
//! refusals ([`error`]); the lock file ([`lock`]); the journal of a change in flight
//! and recovery ([`journal`]); placing and removing ([`place`]); what an installed
//! pack is for its bindings ([`identity`]); and the copies of its CLI that bound
//! calls run ([`copies`]).

mod check;
mod copies;
mod embedded;
mod error;
mod files;
mod folder;
mod identity;
mod journal;
mod lock;
mod place;
mod tarball;

pub use crate::layout::LOCK_FILE;
pub use check::{Checked, check_folder};
pub use copies::pinned_copy;
pub use embedded::{Shelved, embedded};
pub use error::{InstallError, Limit, LinkKind, MAX_ENTRIES, MAX_FILE, MAX_UNPACKED};
pub use files::{Files, integrity, validate};
pub use folder::read_folder;
pub use identity::{
    identity, identity_and_files, installed_source, locked_identity, same_place, source, source_place,
};
pub use journal::recover_if_needed;
pub use lock::{LockFile, Locked};
pub use place::{Placed, place, remove};
pub use tarball::read_tarball;

#[cfg(test)]
mod tests;
