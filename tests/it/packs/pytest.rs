//! The `pytest` catalog pack against the real program.
