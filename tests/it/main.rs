//! The single integration test binary: the real `hcpx` against temporary state.

mod common;

mod catalog;
mod pack;
mod policy;
mod transit;
