//! The `kubectl` catalog pack against the real program.
