//! The `shellcheck` catalog pack against the real program.
