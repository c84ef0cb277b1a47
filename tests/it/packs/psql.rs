//! The `psql` catalog pack against the real program.
