//! The `node` catalog pack against the real program.
