//! The egress of a pack whose sandbox allows only some `host:port` destinations:
//! a forward proxy (HTTP CONNECT and absolute-form plain HTTP) and plain port
//! forwards, served from outside the pack's network namespace.
//!
//! The proxy resolves names itself, connects only to what it resolved, refuses
//! loopback, link-local, metadata and other special addresses unless the
//! allowlist names them, records every refusal, and adds header bindings to
//! HTTPS requests by terminating TLS with a certificate authority of this server.

mod address;
mod authority;
mod call;
mod http;
mod mitm;
mod proxy;
mod rule;
mod serve;
mod tls;

pub use authority::{Authority, AuthorityError};
pub use call::{Call, Header, Limits, Policy, Refusal, Resolver, Tls};
pub use rule::{Allow, RuleError};
pub use serve::{Destination, Running, ServeError};
pub use tls::{TlsError, Upstream};
