//! The `fd` catalog pack against the real program.
