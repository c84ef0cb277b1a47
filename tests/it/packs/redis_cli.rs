//! The `redis-cli` catalog pack against the real program.
