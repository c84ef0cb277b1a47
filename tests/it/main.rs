//! The single integration test binary: the real `hcpx` against temporary state.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::disallowed_methods,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "tests and benchmarks start processes, print, and stop loudly on failure"
)]

mod common;

mod adopt;
mod adopt_command;
mod adopt_native;
mod bindings;
mod builtins;
mod catalog;
mod catalog_packs;
mod cli;
mod confine;
mod confine_git;
mod docs_wrap;
mod egress;
mod egress_forwards;
mod egress_header;
mod exec;
mod exec_trust;
mod grants;
mod hosts;
mod http;
mod index;
mod inert;
mod inspector;
mod install;
mod ipc;
mod layouts;
mod leftovers;
mod mcp;
mod mcp_changes;
mod mcp_modern;
mod mcp_process;
mod mcp_skills;
mod mcp_tasks;
mod npm;
mod own_servers;
mod pack;
mod packs;
mod policy;
mod programs;
mod readme;
mod registry;
mod reparent;
mod resident;
mod sandbox;
mod server_layers;
mod siblings;
mod sockets;
mod start;
mod transit;
