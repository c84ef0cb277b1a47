//! The `uv` catalog pack against the real program.
