//! The `gh` catalog pack against the real program.
