//! The `make` catalog pack against the real program.
