//! The `go` catalog pack against the real program.
