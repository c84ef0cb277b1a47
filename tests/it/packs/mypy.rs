//! The `mypy` catalog pack against the real program.
