//! The MCP `args` splitter, `mcp::args::split`, on arbitrary text. What it promises
//! and this target checks: text is split as a POSIX shell would (here: exactly as
//! `shell_words`), after refusing `| & ; < > ( ) $`, backquote, newline, carriage
//! return and NUL anywhere, and `#` at the start of a word; at most 1 MiB and 1,024
//! words.

#![no_main]

use std::sync::LazyLock;

use hcpx::error::Reason;
use hcpx::mcp::args::{MAX_ARGS_BYTES, MAX_WORDS, split};
use libfuzzer_sys::fuzz_target;
use regex::Regex;

const REFUSED: [char; 12] = ['|', '&', ';', '<', '>', '(', ')', '$', '`', '\n', '\r', '\0'];

const CLASSES: [&str; 11] = [
    "a pipe (|)",
    "an ampersand (&)",
    "a semicolon (;)",
    "a redirection (< or >)",
    "a parenthesis",
    "a dollar sign ($)",
    "a backquote",
    "a newline",
    "a carriage return",
    "a NUL byte",
    "a comment sign (#) starting a word",
];

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let has_refused = text.contains(REFUSED);
    match split(text) {
        Ok(words) => {
            assert!(!has_refused, "accepted a metacharacter");
            assert!(words.iter().all(|word| !word.contains(REFUSED)));
            assert!(text.len() <= MAX_ARGS_BYTES);
            assert!(words.len() <= MAX_WORDS);
            assert_eq!(
                shell_words::split(text).as_ref(),
                Ok(&words),
                "split differs from a shell's"
            );
            // No comment was taken: `#` means nothing else to a shell, so with
            // every `#` made a plain letter the words must come out the same.
            let plain: Vec<String> = words.iter().map(|word| word.replace('#', "Z")).collect();
            assert_eq!(
                shell_words::split(&text.replace('#', "Z")).as_ref(),
                Ok(&plain),
                "part of the text was a comment"
            );
        }
        Err(failure) => {
            if text.len() > MAX_ARGS_BYTES {
                assert_eq!(failure.reason, Reason::TooLarge);
            } else if has_refused {
                assert_eq!(failure.reason, Reason::Metacharacter);
            } else if !text.contains('#') {
                // Without metacharacters, only a bad quote or too many words.
                match shell_words::split(text) {
                    Err(_) => assert_eq!(failure.reason, Reason::InvalidArguments),
                    Ok(words) => {
                        assert!(words.len() > MAX_WORDS, "refused a plain line");
                        assert_eq!(failure.reason, Reason::TooLarge);
                    }
                }
            }
            if failure.reason == Reason::Metacharacter {
                at_position(text, &failure.message);
            }
        }
    }
});

/// A metacharacter refusal names the class and the position (in characters) of
/// the first offending character, and nothing of the caller's text.
fn at_position(text: &str, message: &str) {
    static FORM: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"^`args` holds (.+) at character ([0-9]+); hcp never runs a shell$").unwrap()
    });
    let captures = FORM.captures(message).expect("a refusal in the fixed form");
    assert!(CLASSES.contains(&&captures[1]), "{message}");
    let position: usize = captures[2].parse().unwrap();
    let found = text
        .chars()
        .nth(position)
        .expect("the position is inside the text");
    let first = text.chars().position(|c| REFUSED.contains(&c));
    if found == '#' {
        assert!(captures[1].starts_with("a comment sign"));
        assert!(first.is_none_or(|first| position < first));
    } else {
        assert_eq!(Some(position), first);
    }
}
