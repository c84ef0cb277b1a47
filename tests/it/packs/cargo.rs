//! The `cargo` catalog pack against the real program.
