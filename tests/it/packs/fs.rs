//! The `fs` catalog pack against the real program.
