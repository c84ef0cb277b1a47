//! The `yq` catalog pack against the real program.
