//! The `pip` catalog pack against the real program.
