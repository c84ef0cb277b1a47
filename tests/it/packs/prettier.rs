//! The `prettier` catalog pack against the real program.
