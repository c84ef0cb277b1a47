//! The `eslint` catalog pack against the real program.
