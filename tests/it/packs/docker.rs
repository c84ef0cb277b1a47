//! The `docker` catalog pack against the real program.
