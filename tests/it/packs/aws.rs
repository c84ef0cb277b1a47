//! The `aws` catalog pack against the real program.
