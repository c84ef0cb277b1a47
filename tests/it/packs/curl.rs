//! The `curl` catalog pack against the real program.
