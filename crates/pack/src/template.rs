//! The argv template language (see docs/packs.md): `{name}` and `{name?}` placeholders inside
//! one argv element, `{{` and `}}` for literal braces. Parsing only; the manifest
//! validator checks what the placeholders name and where they stand (an option's value
//! in the element after it, for one), and exec renders them.

use std::fmt;

/// One piece of a template element.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    Literal(String),
    Param {
        name: String,
        optional: bool,
    },
    /// `{API_TOKEN}`: the path of a file binding's file (an upper-case name, as
    /// bindings have), supplied by exec when it renders the argv.
    Binding {
        name: String,
    },
}

/// A parsed argv element: literal text and placeholders in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Element {
    pub pieces: Vec<Piece>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    #[error("unclosed `{{` at byte {0}")]
    Unclosed(usize),
    #[error("stray `}}` at byte {0} (write `}}}}` for a literal brace)")]
    StrayClose(usize),
    #[error(
        "placeholder at byte {0} does not name a parameter (names match ^[a-z][a-z0-9_-]{{0,63}}$) or a binding (^[A-Z_][A-Z0-9_]*$)"
    )]
    BadName(usize),
}

impl Element {
    pub fn parse(text: &str) -> Result<Self, TemplateError> {
        let mut pieces = Vec::new();
        let mut literal = String::new();
        let bytes = text.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'{' if bytes.get(i + 1) == Some(&b'{') => {
                    literal.push('{');
                    i += 2;
                }
                b'}' if bytes.get(i + 1) == Some(&b'}') => {
                    literal.push('}');
                    i += 2;
                }
                b'{' => {
                    let close = text[i..].find('}').ok_or(TemplateError::Unclosed(i))? + i;
                    let inner = &text[i + 1..close];
                    let (name, optional) = match inner.strip_suffix('?') {
                        Some(name) => (name, true),
                        None => (inner, false),
                    };
                    let binding = !optional && is_binding_name(name);
                    if !is_name(name) && !binding {
                        return Err(TemplateError::BadName(i));
                    }
                    if !literal.is_empty() {
                        pieces.push(Piece::Literal(std::mem::take(&mut literal)));
                    }
                    pieces.push(if binding {
                        Piece::Binding {
                            name: name.to_owned(),
                        }
                    } else {
                        Piece::Param {
                            name: name.to_owned(),
                            optional,
                        }
                    });
                    i = close + 1;
                }
                b'}' => return Err(TemplateError::StrayClose(i)),
                _ => {
                    // Copy the whole UTF-8 scalar, not one byte of it.
                    let ch_len = text[i..].chars().next().map_or(1, char::len_utf8);
                    literal.push_str(&text[i..i + ch_len]);
                    i += ch_len;
                }
            }
        }
        if !literal.is_empty() {
            pieces.push(Piece::Literal(literal));
        }
        Ok(Self { pieces })
    }

    /// The parameters this element names, in order.
    pub fn params(&self) -> impl Iterator<Item = (&str, bool)> {
        self.pieces.iter().filter_map(|piece| match piece {
            Piece::Param { name, optional } => Some((name.as_str(), *optional)),
            Piece::Literal(_) | Piece::Binding { .. } => None,
        })
    }

    /// The bindings whose file path this element names, in order.
    pub fn bindings(&self) -> impl Iterator<Item = &str> {
        self.pieces.iter().filter_map(|piece| match piece {
            Piece::Binding { name } => Some(name.as_str()),
            _ => None,
        })
    }

    /// `Some((name, optional))` when the element is one value placeholder and
    /// nothing else: `{url}`, `{out?}`.
    pub fn lone_param(&self) -> Option<(&str, bool)> {
        match self.pieces.as_slice() {
            [Piece::Param { name, optional }] => Some((name.as_str(), *optional)),
            _ => None,
        }
    }

    /// True when the element is fixed text that a CLI reads as an option which may
    /// take the next argument as its value (`--url`, `-H`): a dash, then letters,
    /// digits, `-`, `_` or `.` only (no `=`: `--a=b` has its value already), and
    /// neither `-` nor `--`.
    pub fn is_option_literal(&self) -> bool {
        matches!(self.pieces.as_slice(), [Piece::Literal(text)]
            if text.starts_with('-') && text != "-" && text != "--" && text.bytes().all(option_byte))
    }

    /// True when a value placeholder opens the element, so the value's first
    /// character is the argument's first character.
    pub fn starts_with_value(&self) -> bool {
        matches!(self.pieces.first(), Some(Piece::Param { .. }))
    }

    /// The literal text before the first placeholder.
    pub fn prefix(&self) -> &str {
        match self.pieces.first() {
            Some(Piece::Literal(text)) => text,
            _ => "",
        }
    }

    /// True when the element is exactly the literal `--`.
    pub fn is_end_of_options(&self) -> bool {
        matches!(self.pieces.as_slice(), [Piece::Literal(text)] if text == "--")
    }

    /// Whether a caller value fused after this element's prefix can never be read
    /// as an option of its own: `--name=` (a long option with its `=`) or `-X`
    /// (a short option that takes a value).
    pub fn is_option_fused(&self) -> bool {
        let prefix = self.prefix();
        if let Some(long) = prefix.strip_prefix("--") {
            return long
                .find('=')
                .is_some_and(|eq| eq > 0 && long[..eq].bytes().all(option_byte));
        }
        if let Some(short) = prefix.strip_prefix('-') {
            return short.len() == 1 && short.bytes().all(|b| b.is_ascii_alphanumeric());
        }
        false
    }
}

fn option_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.'
}

impl fmt::Display for Element {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for piece in &self.pieces {
            match piece {
                Piece::Literal(text) => write!(f, "{}", text.replace('{', "{{").replace('}', "}}"))?,
                Piece::Param { name, optional: true } => write!(f, "{{{name}?}}")?,
                Piece::Param {
                    name,
                    optional: false,
                } => write!(f, "{{{name}}}")?,
                Piece::Binding { name } => write!(f, "{{{name}}}")?,
            }
        }
        Ok(())
    }
}

/// A binding's name: an environment variable name, `^[A-Z_][A-Z0-9_]*$`, at most
/// 128 bytes.
pub fn is_binding_name(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= 128
        && text
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_uppercase() || b == b'_')
        && text
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
}

/// Command and parameter names: `^[a-z][a-z0-9_-]{0,63}$` (see docs/packs.md).
pub fn is_name(text: &str) -> bool {
    let bytes = text.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 64
        && bytes[0].is_ascii_lowercase()
        && bytes[1..]
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'_' || *b == b'-')
}

/// Pack ids: `^[a-z0-9][a-z0-9._-]{0,63}$` (see docs/packs.md).
pub fn is_pack_id(text: &str) -> bool {
    let bytes = text.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 64
        && (bytes[0].is_ascii_lowercase() || bytes[0].is_ascii_digit())
        && bytes[1..]
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'.' | b'_' | b'-'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn param(name: &str, optional: bool) -> Piece {
        Piece::Param {
            name: name.to_owned(),
            optional,
        }
    }

    #[test]
    fn parses_fused_and_optional_placeholders() {
        let element = Element::parse("--at={at?}").unwrap();
        assert_eq!(
            element.pieces,
            vec![Piece::Literal("--at=".into()), param("at", true)]
        );
        assert!(element.is_option_fused());
        let element = Element::parse("{a}..{b}").unwrap();
        assert_eq!(
            element.pieces,
            vec![param("a", false), Piece::Literal("..".into()), param("b", false)]
        );
        assert!(!element.is_option_fused());
    }

    #[test]
    fn doubled_braces_are_literal_and_round_trip() {
        let element = Element::parse("{{x}}-{y}").unwrap();
        assert_eq!(
            element.pieces,
            vec![Piece::Literal("{x}-".into()), param("y", false)]
        );
        assert_eq!(element.to_string(), "{{x}}-{y}");
    }

    #[test]
    fn option_literals_and_lone_values() {
        for yes in ["--url", "-H", "-readonly", "--max-count"] {
            assert!(Element::parse(yes).unwrap().is_option_literal(), "{yes}");
        }
        for no in ["-", "--", "url", "--url={u}", "{u}", "--a=b", "-a b"] {
            assert!(!Element::parse(no).unwrap().is_option_literal(), "{no}");
        }
        assert_eq!(Element::parse("{u}").unwrap().lone_param(), Some(("u", false)));
        assert_eq!(Element::parse("x{u}").unwrap().lone_param(), None);
        assert!(Element::parse("{u}.txt").unwrap().starts_with_value());
        assert!(!Element::parse("x{u}").unwrap().starts_with_value());
    }

    #[test]
    fn refuses_malformed_placeholders() {
        assert_eq!(Element::parse("--a={b"), Err(TemplateError::Unclosed(4)));
        assert_eq!(Element::parse("a}b"), Err(TemplateError::StrayClose(1)));
        assert_eq!(Element::parse("{Bad}"), Err(TemplateError::BadName(0)));
        assert_eq!(Element::parse("{}"), Err(TemplateError::BadName(0)));
    }

    #[test]
    fn option_fusing_rule() {
        for ok in ["--to={to}", "-n{n}", "--max-count={n}", "--a.b={x}"] {
            assert!(Element::parse(ok).unwrap().is_option_fused(), "{ok}");
        }
        // A bare dash, a long option without `=`, or two short letters would let the
        // value change which option is read.
        for bad in ["-{x}", "--{x}", "--to{x}", "-ab{x}", "{x}", "x={x}", "--={x}"] {
            assert!(!Element::parse(bad).unwrap().is_option_fused(), "{bad}");
        }
    }

    #[test]
    fn keeps_multibyte_literals() {
        let element = Element::parse("été={x}").unwrap();
        assert_eq!(element.prefix(), "été=");
    }

    #[test]
    fn names_and_ids() {
        assert!(is_name("plan"));
        assert!(is_name("reset-hard"));
        assert!(!is_name("Plan"));
        assert!(!is_name("1plan"));
        assert!(!is_name(&"a".repeat(65)));
        assert!(is_pack_id("transit"));
        assert!(is_pack_id("0x.tools_v2-beta"));
        assert!(!is_pack_id(".hidden"));
        assert!(!is_pack_id("Git"));
        assert!(!is_pack_id(""));
    }
}
