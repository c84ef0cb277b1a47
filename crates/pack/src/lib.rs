//! The pack model of hcpx, as pure functions of text: a manifest (`hcp.json`) and its
//! validation, the argv templates in it, an invocation's `KEY=VALUE` words checked and
//! rendered to an argv, and a `SKILL.md`. No I/O: the caller reads the files and
//! checks what needs the disk (a `path` value against the working directory) through
//! [`invocation::PathCheck`]. The manifest and args fuzz targets drive this crate.

#![forbid(unsafe_code)]
#![warn(unreachable_pub)]

pub mod invocation;
pub mod manifest;
pub mod skill;
pub mod suggest;
pub mod template;
