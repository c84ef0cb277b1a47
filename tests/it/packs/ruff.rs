//! The `ruff` catalog pack against the real program.
