//! The `python` catalog pack against the real program.
