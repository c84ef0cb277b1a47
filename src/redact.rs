//! Redaction of bound secrets and common token shapes (see docs/bindings.md). A bound value is
//! found as it is and in any JSON string encoding of it (each character itself, as
//! `\uXXXX` in either case, or as its short escape, mixed at will), in output and in
//! the strings of parsed JSON data. Where a capture was cut at its limit, a tail that
//! could be the start of a bound value is cut too ([`Redactor::safe_end`]). It runs
//! over a whole capture, so a value the CLI wrote in pieces is found whole.

use std::sync::OnceLock;

use regex::bytes::{Regex, RegexBuilder};

use crate::binding::Secret;

/// Values shorter than this are not redacted (see docs/bindings.md): redacting `abc` everywhere
/// would wreck output and protect nothing.
pub(crate) const MIN_SECRET_LEN: usize = 4;

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

/// One bound value: as it is, with its replacement, and the pattern of its JSON
/// encodings (compiled on first need: most output holds no backslash at all).
#[derive(Debug, Clone)]
struct Needle {
    value: Vec<u8>,
    chars: Vec<char>,
    replacement: Vec<u8>,
    encoded: std::sync::Arc<OnceLock<Option<Regex>>>,
}

/// One way a JSON string may write a character.
struct Form {
    bytes: Vec<u8>,
    /// A `\uXXXX` escape: its hex digits may come in either case, mixed.
    any_case: bool,
}

impl Form {
    /// Whether `text` starts with this form.
    fn starts(&self, text: &[u8]) -> bool {
        text.get(..self.bytes.len()).is_some_and(|head| self.same(head))
    }

    /// Whether this form starts with `text` (a form cut short).
    fn begins_with(&self, text: &[u8]) -> bool {
        self.bytes
            .get(..text.len())
            .is_some_and(|head| self.same_as(head, text))
    }

    fn same(&self, other: &[u8]) -> bool {
        self.same_as(&self.bytes, other)
    }

    fn same_as(&self, mine: &[u8], other: &[u8]) -> bool {
        if self.any_case {
            mine.eq_ignore_ascii_case(other)
        } else {
            mine == other
        }
    }

    /// The form as a regex over bytes.
    fn pattern(&self) -> String {
        let bytes: String = self.bytes.iter().map(|b| format!("\\x{b:02x}")).collect();
        if self.any_case {
            format!("(?i:{bytes})")
        } else {
            bytes
        }
    }
}

/// The ways a JSON string may write `c`: itself, `\uXXXX` (a surrogate pair beyond
/// the BMP; hex in any case), and its short escape where it has one.
fn encodings(c: char) -> Vec<Form> {
    let mut units = [0_u16; 2];
    let escaped: String = c
        .encode_utf16(&mut units)
        .iter()
        .map(|unit| format!("\\u{unit:04x}"))
        .collect();
    let short = match c {
        '"' => Some("\\\""),
        '\\' => Some("\\\\"),
        '/' => Some("\\/"),
        '\n' => Some("\\n"),
        '\r' => Some("\\r"),
        '\t' => Some("\\t"),
        '\u{8}' => Some("\\b"),
        '\u{c}' => Some("\\f"),
        _ => None,
    };
    let literal = |bytes: Vec<u8>| Form {
        bytes,
        any_case: false,
    };
    let mut forms = vec![
        literal(c.to_string().into_bytes()),
        Form {
            bytes: escaped.into_bytes(),
            any_case: true,
        },
    ];
    forms.extend(short.map(|form| literal(form.as_bytes().to_vec())));
    forms
}

impl Needle {
    /// A regex for the value with each character in any of its encodings.
    fn encoded(&self) -> Option<&Regex> {
        self.encoded
            .get_or_init(|| {
                let mut pattern = String::from("(?-u)");
                for c in &self.chars {
                    let alternatives: Vec<String> = encodings(*c).iter().map(Form::pattern).collect();
                    pattern.push_str("(?:");
                    pattern.push_str(&alternatives.join("|"));
                    pattern.push(')');
                }
                RegexBuilder::new(&pattern).dfa_size_limit(DFA_CACHE).build().ok()
            })
            .as_ref()
    }

    /// Whether `text` spells a prefix of the value in some encoding, up to its very
    /// end (an escape cut short counts). Forms can begin alike (a raw `\\` and an
    /// escape), so every way of reading is followed: the offsets reached after each
    /// character are a small set.
    fn is_prefix_to_end(&self, text: &[u8]) -> bool {
        let mut reached = vec![0_usize];
        for c in &self.chars {
            let forms = encodings(*c);
            let mut next = Vec::new();
            for &at in &reached {
                if at == text.len() {
                    return true;
                }
                let rest = &text[at..];
                for form in &forms {
                    if form.starts(rest) {
                        next.push(at + form.bytes.len());
                    } else if form.begins_with(rest) {
                        return true;
                    }
                }
            }
            next.sort_unstable();
            next.dedup();
            if next.is_empty() {
                return false;
            }
            reached = next;
        }
        reached.contains(&text.len())
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Redactor {
    /// Longest first, so a secret containing another wins.
    secrets: Vec<Needle>,
}

impl Redactor {
    pub(crate) fn new(secrets: &[(String, Secret)]) -> Self {
        let mut list: Vec<Needle> = secrets
            .iter()
            .filter(|(_, secret)| secret.expose().len() >= MIN_SECRET_LEN)
            .map(|(key, secret)| Needle {
                value: secret.expose().as_bytes().to_vec(),
                chars: secret.expose().chars().collect(),
                replacement: format!("[REDACTED:{key}]").into_bytes(),
                encoded: std::sync::Arc::default(),
            })
            .collect();
        list.sort_by_key(|bound| std::cmp::Reverse(bound.value.len()));
        list.dedup_by(|a, b| a.value == b.value);
        Self { secrets: list }
    }

    /// Where to end a capture that was cut at its limit: before a tail that could be
    /// the first bytes of a bound value, in any encoding, so that no part of one is
    /// ever shown. A few bytes of ordinary output may go with it; the capture was cut
    /// there anyway.
    pub(crate) fn safe_end(&self, text: &[u8]) -> usize {
        // Twelve bytes is the longest a character can be written: a surrogate pair.
        let window = self
            .secrets
            .iter()
            .map(|bound| bound.chars.len() * 12)
            .max()
            .unwrap_or(0)
            .min(text.len());
        let start = text.len() - window;
        (start..text.len())
            .find(|&at| {
                self.secrets
                    .iter()
                    .any(|bound| bound.is_prefix_to_end(&text[at..]))
            })
            .unwrap_or(text.len())
    }

    /// Hides bound values and token shapes in every string of parsed JSON data,
    /// object keys included.
    pub(crate) fn redact_value(&self, value: &mut serde_json::Value) {
        use serde_json::Value;
        match value {
            Value::String(text) => {
                let redacted = self.redact_str(text);
                if redacted != *text {
                    *text = redacted;
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|item| self.redact_value(item)),
            Value::Object(map) => {
                let old = std::mem::take(map);
                for (key, mut item) in old {
                    self.redact_value(&mut item);
                    map.insert(self.redact_str(&key), item);
                }
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }

    /// Redacts one complete piece of text (no holdback).
    pub(crate) fn redact_all(&self, text: &[u8]) -> Vec<u8> {
        self.redact_owned(text.to_vec())
    }

    /// Redacts in place of the input: nothing is copied when nothing matches, so a
    /// large clean capture costs no second buffer.
    pub(crate) fn redact_owned(&self, mut out: Vec<u8>) -> Vec<u8> {
        for bound in &self.secrets {
            if find(&out, &bound.value).is_some() {
                out = replace_all(&out, &bound.value, &bound.replacement);
            }
        }
        // An escaped form needs a backslash: without one, no pattern is compiled.
        if memchr::memchr(b'\\', &out).is_some() {
            for bound in &self.secrets {
                if let Some(regex) = bound.encoded()
                    && regex.is_match(&out)
                {
                    out = regex.replace_all(&out, bound.replacement.as_slice()).into_owned();
                }
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

    /// Hides every bound value in a text that is not output (an error message).
    pub(crate) fn redact_str(&self, text: &str) -> String {
        String::from_utf8_lossy(&self.redact_all(text.as_bytes())).into_owned()
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    memchr::memmem::find(haystack, needle)
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

    #[test]
    fn redacts_bound_values_but_not_short_ones() {
        let text = redactor().redact_str("key=s3cr3t-value abc");
        assert_eq!(text, "key=[REDACTED:API_KEY] abc");
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

    /// JSON-escapes every character of `text` by `choose`: 0 itself, 1 `\\uxxxx`,
    /// 2 `\\uXXXX`, 3 its short escape (or itself when it has none), 4 `\\u` with
    /// the hex digits in alternating case.
    fn escape(text: &str, choose: impl Fn(usize) -> u8) -> String {
        text.chars()
            .enumerate()
            .map(|(index, c)| {
                let forms = encodings(c);
                let escaped = String::from_utf8(forms[1].bytes.clone()).unwrap();
                match choose(index) % 5 {
                    1 => escaped,
                    2 => escaped.to_uppercase().replace("\\U", "\\u"),
                    3 => String::from_utf8(forms.get(2).unwrap_or(&forms[0]).bytes.clone()).unwrap(),
                    4 => escaped
                        .chars()
                        .enumerate()
                        .map(|(at, c)| if at % 2 == 0 { c.to_ascii_uppercase() } else { c })
                        .collect::<String>()
                        .replace("\\U", "\\u"),
                    _ => c.to_string(),
                }
            })
            .collect()
    }

    #[test]
    fn json_escaped_secrets_are_found_in_any_mix() {
        let secret = "RT/se\"cr€t😀";
        let r = Redactor::new(&[("TOKEN".to_owned(), Secret::new(secret.to_owned()))]);
        for choose in [
            &|_: usize| 1_u8,
            &|_: usize| 2,
            &|i: usize| u8::try_from(i % 4).unwrap(),
            &|i: usize| u8::try_from((i + 1) % 3).unwrap(),
        ] as [&dyn Fn(usize) -> u8; 4]
        {
            let escaped = escape(secret, choose);
            let text = format!("{{\"token\": \"{escaped}\"}}");
            let out = r.redact_str(&text);
            assert_eq!(out, "{\"token\": \"[REDACTED:TOKEN]\"}", "{text}");
        }
        // Go's escaping of &, < and >.
        let r = Redactor::new(&[("K".to_owned(), Secret::new("a&b<c>d".to_owned()))]);
        assert_eq!(r.redact_str(r#""a\u0026b\u003cc\u003ed""#), r#""[REDACTED:K]""#);
    }

    #[test]
    fn strings_in_parsed_data_are_redacted_keys_too() {
        let r = redactor();
        let mut value = serde_json::json!({
            "s3cr3t-value": ["x s3cr3t-value y", 1, { "k": "s3cr3t-value" }],
            "n": null
        });
        r.redact_value(&mut value);
        assert_eq!(
            value,
            serde_json::json!({
                "[REDACTED:API_KEY]": ["x [REDACTED:API_KEY] y", 1, { "k": "[REDACTED:API_KEY]" }],
                "n": null
            })
        );
    }

    #[test]
    fn a_cut_capture_loses_any_tail_that_starts_a_secret() {
        let r = redactor();
        // Raw, escaped, and an escape cut in the middle.
        for tail in [
            "s3cr",
            "s3cr3t-valu",
            "\\u0073\\u0033cr",
            "s\\u00",
            "s3cr3t\\u002",
        ] {
            let text = format!("line one\nthen {tail}");
            assert_eq!(r.safe_end(text.as_bytes()), "line one\nthen ".len(), "{tail}");
        }
        // Hex digits of one escape in mixed case still spell the secret.
        let r = Redactor::new(&[("K".to_owned(), Secret::new("€uro-token".to_owned()))]);
        let text = "then \\u20Ac\\u0075\\u0072o";
        assert_eq!(r.safe_end(text.as_bytes()), "then ".len(), "{text}");
        assert_eq!(r.redact_str("\\u20aC\\u0075ro-tOken"), "\\u20aC\\u0075ro-tOken");
        assert_eq!(r.redact_str("x \\u20aCuro-\\u0074oken"), "x [REDACTED:K]");
        let r = redactor();
        // Ordinary endings stay whole.
        for text in ["line one\n", "ends with x", "s3x"] {
            assert_eq!(r.safe_end(text.as_bytes()), text.len(), "{text}");
        }
        assert_eq!(Redactor::new(&[]).safe_end(b"anything"), 8);
    }

    proptest::proptest! {
        /// For random secrets, random encodings of them (raw, JSON escapes mixed at
        /// random) in random output, cut at a random place as the capture limit
        /// would: nothing the caller sees holds the secret, decoded or not, nor ends
        /// with 4 or more of its first bytes.
        #[test]
        fn no_secret_survives_encoding_or_the_cut(
            secret in "[a-zA-Z0-9/\"\\\\€😀_-]{4,24}",
            choices in proptest::collection::vec(0_u8..5, 24),
            before in "[a-z \n]{0,40}",
            after in "[a-z \n]{0,40}",
            cut in proptest::option::of(0_usize..200),
        ) {
            let r = Redactor::new(&[("KEY".to_owned(), Secret::new(secret.clone()))]);
            let escaped = escape(&secret, |index| choices[index % choices.len()]);
            let full = format!("{before}\"{escaped}\"{after}");
            let mut bytes = full.into_bytes();
            if let Some(cut) = cut {
                bytes.truncate(cut.min(bytes.len()));
                let end = r.safe_end(&bytes);
                bytes.truncate(end);
            }
            let shown = String::from_utf8_lossy(&r.redact_owned(bytes)).into_owned();
            let decoded = decode(&shown);
            proptest::prop_assert!(!shown.contains(&secret), "{}", shown);
            proptest::prop_assert!(!decoded.contains(&secret), "{}", decoded);
            if cut.is_some() {
                let prefix: String = secret.chars().take(4).collect();
                let prefix_bytes = secret.as_bytes().get(..4).unwrap_or_default();
                proptest::prop_assert!(
                    !decoded.ends_with(&prefix) && !decoded.as_bytes().ends_with(prefix_bytes),
                    "{}", decoded
                );
            }
        }
    }

    /// Decodes the JSON escapes of a text, leaving everything else as it is.
    fn decode(text: &str) -> String {
        let mut out = String::new();
        let mut units: Vec<u16> = Vec::new();
        let mut chars = text.chars().peekable();
        let flush = |units: &mut Vec<u16>, out: &mut String| {
            out.push_str(&String::from_utf16_lossy(units));
            units.clear();
        };
        while let Some(c) = chars.next() {
            if c != '\\' {
                flush(&mut units, &mut out);
                out.push(c);
                continue;
            }
            match chars.next() {
                Some('u') => {
                    let hex: String = chars.by_ref().take(4).collect();
                    match u16::from_str_radix(&hex, 16) {
                        Ok(unit) => units.push(unit),
                        Err(_) => out.push_str(&hex),
                    }
                }
                Some(short) => {
                    flush(&mut units, &mut out);
                    out.push(match short {
                        'n' => '\n',
                        'r' => '\r',
                        't' => '\t',
                        'b' => '\u{8}',
                        'f' => '\u{c}',
                        other => other,
                    });
                }
                None => out.push('\\'),
            }
        }
        flush(&mut units, &mut out);
        out
    }

    #[test]
    fn private_key_blocks_span_lines() {
        let out = Redactor::new(&[]).redact_all(
            b"before\n-----BEGIN RSA PRIVATE KEY-----\nMIIEabc\ndef\n-----END RSA PRIVATE KEY-----\nafter\n",
        );
        assert_eq!(out, b"before\n[REDACTED:private-key]\nafter\n");
    }
}
