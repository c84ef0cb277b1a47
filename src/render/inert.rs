//! Text made inert for a terminal: control characters (C0 but for the line breaks
//! and tabs of a text's lines, DEL, C1) and the marks that reorder text
//! (bidirectional overrides and isolates) shown escaped as Rust writes them
//! (`\u{1b}]52;c;…\u{7}`), so that nothing a pack or a caller wrote can drive the
//! terminal it is shown on: write the clipboard (OSC 52), retitle the window
//! (OSC 0), move, hide or recolour text (CSI, also as the C1 character U+009B), or
//! make a line read otherwise than it runs. An escape sequence is harmless once its
//! ESC is shown as text. Part of [`crate::render`], which re-exports it.

use std::borrow::Cow;

/// `text` for a terminal: every line break (`\n`, and `\r` right before one) and
/// tab kept, everything that could drive the terminal escaped.
pub(crate) fn inert(text: &str) -> Cow<'_, str> {
    escaped(text, true)
}

/// `text` as one line of a terminal: the same, with line breaks and tabs escaped
/// too, so that a value cannot draw lines of its own.
pub(crate) fn inert_line(text: &str) -> Cow<'_, str> {
    escaped(text, false)
}

/// A character as a prompt may show it: control characters and the marks that
/// reorder text escaped, everything else itself.
pub(crate) fn printable(c: char) -> String {
    if drives_a_terminal(c) {
        c.escape_default().collect()
    } else {
        c.to_string()
    }
}

fn drives_a_terminal(c: char) -> bool {
    let reorders = matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
    c.is_control() || reorders
}

fn escaped(text: &str, lines: bool) -> Cow<'_, str> {
    let kept = |c: char, next: Option<char>| {
        !drives_a_terminal(c) || (lines && (c == '\n' || c == '\t' || (c == '\r' && next == Some('\n'))))
    };
    let mut chars = text.char_indices().peekable();
    let first = loop {
        match chars.next() {
            None => return Cow::Borrowed(text),
            Some((at, c)) if !kept(c, chars.peek().map(|(_, next)| *next)) => break at,
            Some(_) => {}
        }
    };
    let mut shown = String::with_capacity(text.len() + 16);
    shown.push_str(&text[..first]);
    let mut rest = text[first..].chars().peekable();
    while let Some(c) = rest.next() {
        if kept(c, rest.peek().copied()) {
            shown.push(c);
        } else {
            shown.extend(c.escape_default());
        }
    }
    Cow::Owned(shown)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_drives_a_terminal_is_shown_escaped() {
        for (text, shown) in [
            // OSC 52 (the clipboard) and OSC 0 (the title), ended by BEL or ST.
            ("\u{1b}]52;c;Y3VybCBldmls\u{7}", r"\u{1b}]52;c;Y3VybCBldmls\u{7}"),
            ("\u{1b}]0;owned\u{1b}\\", r"\u{1b}]0;owned\u{1b}\"),
            // CSI, as ESC [ and as the C1 character.
            ("\u{1b}[2J\u{1b}[31mred", r"\u{1b}[2J\u{1b}[31mred"),
            ("\u{9b}31m", r"\u{9b}31m"),
            // Other C0, DEL, C1.
            ("a\u{0}b\u{8}c\u{7f}d\u{85}", r"a\u{0}b\u{8}c\u{7f}d\u{85}"),
            // A carriage return that would overwrite the line.
            ("safe\rrm -rf ~", r"safe\rrm -rf ~"),
            // Marks that reorder what is shown.
            ("a\u{202e}b\u{2066}c\u{200f}", r"a\u{202e}b\u{2066}c\u{200f}"),
        ] {
            assert_eq!(inert(text), shown, "{text:?}");
            assert_eq!(inert_line(text), shown, "{text:?}");
        }
    }

    #[test]
    fn lines_and_tabs_stay_unless_it_is_one_line() {
        let text = "one\ttwo\nthree\r\nfour\n";
        assert!(matches!(inert(text), Cow::Borrowed(_)));
        assert_eq!(inert_line(text), r"one\ttwo\nthree\r\nfour\n");
        assert_eq!(inert("end\r"), r"end\r");
        for text in ["", "plain", "naïve — 日本語 ✓", "tab\tand line\n"] {
            assert_eq!(inert(text), text);
        }
    }

    #[test]
    fn printable_escapes_one_character() {
        assert_eq!(printable('\u{1b}'), r"\u{1b}");
        assert_eq!(printable('\n'), r"\n");
        assert_eq!(printable('é'), "é");
    }
}
