//! Redaction of bound secrets and common token shapes (SPEC §6). The redactor is
//! streaming: output arrives in chunks, and a secret may straddle two of them, so it
//! holds back an unfinished line (up to a bound) until the next chunk or the end.

use std::sync::OnceLock;

use regex::bytes::{Regex, RegexBuilder};

use crate::binding::Secret;

/// Values shorter than this are not redacted (SPEC §6): redacting `abc` everywhere
/// would wreck output and protect nothing.
pub const MIN_SECRET_LEN: usize = 4;
/// An unfinished line longer than this is processed anyway, keeping only the tail
/// that could still be the start of a secret.
const MAX_HOLD: usize = 64 * 1024;

/// The lazy DFA cache of each token shape.
const DFA_CACHE: usize = 256 * 1024;

/// A token shape worth hiding even when nobody bound it. Its regex is compiled only
/// when one of its literal hints appears: most output has none, and compiling every
/// shape cost a tenth of a CLI exec.
struct Shape {
    hints: &'static [&'static str],
    pattern: &'static str,
    label: &'static str,
    regex: OnceLock<Option<Regex>>,
}

impl Shape {
    const fn new(hints: &'static [&'static str], pattern: &'static str, label: &'static str) -> Self {
        Self {
            hints,
            pattern,
            label,
            regex: OnceLock::new(),
        }
    }

    fn regex(&self) -> Option<&Regex> {
        self.regex
            .get_or_init(|| {
                // A small DFA cache each: scanning an 8 MiB capture must not cost 2 MiB a
                // shape of memory.
                RegexBuilder::new(self.pattern)
                    .dfa_size_limit(DFA_CACHE)
                    .build()
                    .ok()
            })
            .as_ref()
    }

    fn may_match(&self, text: &[u8]) -> bool {
        self.hints
            .iter()
            .any(|hint| memchr::memmem::find(text, hint.as_bytes()).is_some())
    }
}

static SHAPES: [Shape; 7] = [
    Shape::new(
        &["PRIVATE KEY-----"],
        r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----",
        "private-key",
    ),
    Shape::new(
        &["ghp_", "gho_", "ghu_", "ghs_", "ghr_"],
        r"\bgh[pousr]_[A-Za-z0-9]{36,255}\b",
        "github-token",
    ),
    Shape::new(
        &["github_pat_"],
        r"\bgithub_pat_[A-Za-z0-9_]{22,255}\b",
        "github-token",
    ),
    Shape::new(&["sk-"], r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}\b", "api-key"),
    Shape::new(&["AKIA", "ASIA"], r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b", "aws-key"),
    Shape::new(
        &["eyJ"],
        r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\b",
        "jwt",
    ),
    Shape::new(
        &["xoxb-", "xoxa-", "xoxp-", "xoxr-", "xoxs-"],
        r"\bxox[baprs]-[A-Za-z0-9-]{10,}\b",
        "slack-token",
    ),
];

#[derive(Debug, Clone)]
pub struct Redactor {
    /// (value, replacement), longest first so a secret containing another wins.
    secrets: Vec<(Vec<u8>, Vec<u8>)>,
    longest: usize,
    pending: Vec<u8>,
}

impl Redactor {
    pub fn new(secrets: &[(String, Secret)]) -> Self {
        let mut list: Vec<(Vec<u8>, Vec<u8>)> = secrets
            .iter()
            .filter(|(_, secret)| secret.expose().len() >= MIN_SECRET_LEN)
            .map(|(key, secret)| {
                (
                    secret.expose().as_bytes().to_vec(),
                    format!("[REDACTED:{key}]").into_bytes(),
                )
            })
            .collect();
        list.sort_by_key(|(value, _)| std::cmp::Reverse(value.len()));
        list.dedup_by(|a, b| a.0 == b.0);
        let longest = list.first().map_or(0, |(value, _)| value.len());
        Self {
            secrets: list,
            longest,
            pending: Vec::new(),
        }
    }

    /// Redacts one complete piece of text (no holdback).
    pub fn redact_all(&self, text: &[u8]) -> Vec<u8> {
        self.redact_owned(text.to_vec())
    }

    /// Redacts in place of the input: nothing is copied when nothing matches, so a
    /// large clean capture costs no second buffer.
    pub fn redact_owned(&self, mut out: Vec<u8>) -> Vec<u8> {
        for (value, replacement) in &self.secrets {
            if find(&out, value).is_some() {
                out = replace_all(&out, value, replacement);
            }
        }
        for shape in &SHAPES {
            if !shape.may_match(&out) {
                continue;
            }
            if let Some(regex) = shape.regex()
                && regex.is_match(&out)
            {
                let replacement = format!("[REDACTED:{}]", shape.label);
                out = regex.replace_all(&out, replacement.as_bytes()).into_owned();
            }
        }
        out
    }

    /// Takes the next chunk; returns what can be released, redacted.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<u8> {
        self.pending.extend_from_slice(chunk);
        // Release whole lines, but hold an open private key block back whole.
        let mut cut = self
            .pending
            .iter()
            .rposition(|b| *b == b'\n')
            .map_or(0, |newline| newline + 1);
        if let Some(begin) = rfind(&self.pending[..cut], b"-----BEGIN ") {
            let block = &self.pending[begin..cut];
            if find(block, b"PRIVATE KEY-----").is_some() && find(block, b"-----END ").is_none() {
                cut = begin;
            }
        }
        if cut == 0 && self.pending.len() > MAX_HOLD {
            // A very long unfinished line: release all but what could still be the
            // start of a secret.
            cut = self.pending.len() - self.longest.max(256).min(self.pending.len());
        }
        let rest = self.pending.split_off(cut);
        let out = self.redact_all(&self.pending);
        self.pending = rest;
        out
    }

    /// The end of the stream: releases what was held back.
    pub fn finish(&mut self) -> Vec<u8> {
        let out = self.redact_all(&self.pending);
        self.pending.clear();
        out
    }

    /// Hides every bound value in a text that is not output (an error message).
    pub fn redact_str(&self, text: &str) -> String {
        String::from_utf8_lossy(&self.redact_all(text.as_bytes())).into_owned()
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    memchr::memmem::find(haystack, needle)
}

fn rfind(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    memchr::memmem::rfind(haystack, needle)
}

fn replace_all(text: &[u8], value: &[u8], replacement: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = find(rest, value) {
        out.extend_from_slice(&rest[..at]);
        out.extend_from_slice(replacement);
        rest = &rest[at + value.len()..];
    }
    out.extend_from_slice(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redactor() -> Redactor {
        Redactor::new(&[
            ("API_KEY".to_owned(), Secret::new("s3cr3t-value".to_owned())),
            ("SHORT".to_owned(), Secret::new("abc".to_owned())),
        ])
    }

    fn stream(redactor: &mut Redactor, chunks: &[&[u8]]) -> String {
        let mut out = Vec::new();
        for chunk in chunks {
            out.extend(redactor.push(chunk));
        }
        out.extend(redactor.finish());
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn redacts_bound_values_but_not_short_ones() {
        let text = redactor().redact_str("key=s3cr3t-value abc");
        assert_eq!(text, "key=[REDACTED:API_KEY] abc");
    }

    #[test]
    fn a_secret_split_across_chunks_is_caught() {
        let mut r = redactor();
        assert_eq!(
            stream(&mut r, &[b"token=s3cr", b"3t-val", b"ue\nnext\n"]),
            "token=[REDACTED:API_KEY]\nnext\n"
        );
        let mut r = redactor();
        assert_eq!(
            stream(&mut r, &[b"no newline s3c", b"r3t-value"]),
            "no newline [REDACTED:API_KEY]"
        );
    }

    #[test]
    fn complete_lines_are_released_at_once() {
        let mut r = redactor();
        assert_eq!(r.push(b"one\ntwo"), b"one\n");
        assert_eq!(r.finish(), b"two");
    }

    #[test]
    fn long_unfinished_lines_are_bounded() {
        let mut r = redactor();
        let released = r.push(&vec![b'x'; MAX_HOLD + 1000]);
        assert!(
            released.len() >= MAX_HOLD,
            "held back too much: {}",
            released.len()
        );
        assert!(r.pending.len() <= 256);
    }

    #[test]
    fn every_shape_compiles_and_is_found_by_its_hints() {
        for shape in &SHAPES {
            assert!(shape.regex().is_some(), "{}", shape.pattern);
        }
        assert!(
            SHAPES
                .iter()
                .all(|shape| !shape.may_match(b"plain output, nothing secret"))
        );
    }

    #[test]
    fn token_shapes() {
        let r = Redactor::new(&[]);
        let cases = [
            (
                "ghp_0123456789abcdefghijklmnopqrstuvwxyz",
                "[REDACTED:github-token]",
            ),
            ("sk-proj-abcdefghijklmnopqrstuvwx", "[REDACTED:api-key]"),
            ("AKIAIOSFODNN7EXAMPLE", "[REDACTED:aws-key]"),
            (
                "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
                "[REDACTED:jwt]",
            ),
        ];
        for (input, expected) in cases {
            assert_eq!(
                r.redact_str(&format!("x {input} y")),
                format!("x {expected} y"),
                "{input}"
            );
        }
    }

    #[test]
    fn private_key_blocks_span_chunks_and_lines() {
        let mut r = Redactor::new(&[]);
        let out = stream(
            &mut r,
            &[
                b"before\n-----BEGIN RSA PRIVATE KEY-----\nMIIE",
                b"abc\ndef\n-----END RSA PRIVATE KEY-----\nafter\n",
            ],
        );
        assert_eq!(out, "before\n[REDACTED:private-key]\nafter\n");
    }
}
