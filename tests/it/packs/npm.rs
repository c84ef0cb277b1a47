//! The `npm` catalog pack against the real program.
