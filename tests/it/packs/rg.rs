//! The `rg` catalog pack against the real program.
