//! The `tar` catalog pack against the real program.
