//! The `hcp` tool's input (see docs/mcp.md): exactly one of `argv` (preferred) or `args`,
//! a string split as a POSIX shell would, after refusing every shell metacharacter
//! anywhere in it. Refusals name the character class and its position, never the
//! caller's text.

use serde_json::{Map, Value};

use crate::error::{Failure, Reason};
use crate::next::Next;

/// Most words an `argv` may hold.
pub const MAX_WORDS: usize = 1024;
/// Largest `args` string, in bytes.
pub const MAX_ARGS_BYTES: usize = 1024 * 1024;

/// The metacharacter classes a shell would act on.
fn class(c: char) -> Option<&'static str> {
    Some(match c {
        '|' => "a pipe (|)",
        '&' => "an ampersand (&)",
        ';' => "a semicolon (;)",
        '<' | '>' => "a redirection (< or >)",
        '(' | ')' => "a parenthesis",
        '$' => "a dollar sign ($)",
        '`' => "a backquote",
        '\n' => "a newline",
        '\r' => "a carriage return",
        '\0' => "a NUL byte",
        _ => return None,
    })
}

/// Splits `args`, or refuses with `metacharacter`, `too_large` or `invalid_arguments`.
pub fn split(args: &str) -> Result<Vec<String>, Failure> {
    if args.len() > MAX_ARGS_BYTES {
        return Err(Failure::new(
            Reason::TooLarge,
            format!("`args` is larger than {MAX_ARGS_BYTES} bytes"),
        )
        .next(Next::advice(
            "pass large values in a file the pack reads, not in the call",
        )));
    }
    let mut word_start = true;
    for (position, c) in args.chars().enumerate() {
        if let Some(class) = class(c) {
            return Err(metacharacter(class, position));
        }
        if c == '#' && word_start {
            return Err(metacharacter("a comment sign (#) starting a word", position));
        }
        word_start = c.is_whitespace() || c == '\'' || c == '"';
    }
    let words = shell_words::split(args).map_err(|_| {
        Failure::new(Reason::InvalidArguments, "`args` has an unterminated quote")
            .next(Next::advice("pass `argv`, an array of words, instead"))
    })?;
    if words.len() > MAX_WORDS {
        return Err(
            Failure::new(Reason::TooLarge, format!("more than {MAX_WORDS} words"))
                .next(Next::advice("split the work into several calls")),
        );
    }
    Ok(words)
}

fn metacharacter(class: &str, position: usize) -> Failure {
    Failure::new(
        Reason::Metacharacter,
        format!("`args` holds {class} at character {position}; hcp never runs a shell"),
    )
    .next(Next::advice(
        "pass `argv`, an array of words, so every character is taken literally",
    ))
}

/// The argv of one tool call, and whether it was confirmed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Input {
    pub argv: Vec<String>,
    pub confirm: bool,
}

/// Reads the tool's arguments; unknown fields are dropped.
pub fn parse(arguments: &Map<String, Value>) -> Result<Input, Failure> {
    let confirm = matches!(arguments.get("confirm"), Some(Value::Bool(true)));
    let argv = match (arguments.get("argv"), arguments.get("args")) {
        (Some(_), Some(_)) | (None, None) => {
            return Err(
                Failure::new(Reason::InvalidArguments, "pass exactly one of `argv` or `args`")
                    .next(Next::advice("{\"argv\": [\"search\", \"journey\"]}")),
            );
        }
        (Some(Value::Array(items)), None) => {
            if items.len() > MAX_WORDS {
                return Err(Failure::new(
                    Reason::TooLarge,
                    format!("`argv` has more than {MAX_WORDS} words"),
                )
                .next(Next::advice("split the work into several calls")));
            }
            items
                .iter()
                .map(|item| item.as_str().map(str::to_owned))
                .collect::<Option<Vec<String>>>()
                .ok_or_else(|| Failure::new(Reason::InvalidArguments, "every `argv` item must be a string"))?
        }
        (Some(_), None) => {
            return Err(Failure::new(
                Reason::InvalidArguments,
                "`argv` must be an array of strings",
            ));
        }
        (None, Some(Value::String(text))) => split(text)?,
        (None, Some(_)) => return Err(Failure::new(Reason::InvalidArguments, "`args` must be a string")),
    };
    if argv.iter().any(|word| word.contains('\0')) {
        return Err(metacharacter("a NUL byte", 0));
    }
    Ok(Input { argv, confirm })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn object(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn splits_like_a_shell() {
        assert_eq!(
            split(r#"exec transit plan -- from=Westgate "to=North Park" 'at=08:00' a\ b"#).unwrap(),
            [
                "exec",
                "transit",
                "plan",
                "--",
                "from=Westgate",
                "to=North Park",
                "at=08:00",
                "a b"
            ]
        );
        assert_eq!(split("search journey#1").unwrap(), ["search", "journey#1"]);
    }

    #[test]
    fn every_metacharacter_is_refused_with_class_and_position() {
        for (text, class, position) in [
            ("search a|b", "a pipe (|)", 8),
            ("search a&", "an ampersand (&)", 8),
            ("search a;b", "a semicolon (;)", 8),
            ("search <x", "a redirection (< or >)", 7),
            ("search >x", "a redirection (< or >)", 7),
            ("search (x", "a parenthesis", 7),
            ("search x)", "a parenthesis", 8),
            ("search $HOME", "a dollar sign ($)", 7),
            ("search `id`", "a backquote", 7),
            ("search a\nb", "a newline", 8),
            ("search a\rb", "a carriage return", 8),
            ("search a\0b", "a NUL byte", 8),
            ("search #x", "a comment sign (#) starting a word", 7),
            ("search '$quoted'", "a dollar sign ($)", 8),
        ] {
            let failure = split(text).unwrap_err();
            assert_eq!(failure.reason, Reason::Metacharacter, "{text:?}");
            assert_eq!(
                failure.message,
                format!("`args` holds {class} at character {position}; hcp never runs a shell"),
                "{text:?}"
            );
        }
    }

    #[test]
    fn messages_never_repeat_the_callers_text() {
        let failure = split("exec x -- token=SECRETVALUE|cat").unwrap_err();
        assert!(!failure.message.contains("SECRETVALUE"));
        let failure = split("exec 'ZZSECRET").unwrap_err();
        assert_eq!(failure.reason, Reason::InvalidArguments);
        assert!(!failure.message.contains("ZZSECRET"));
    }

    #[test]
    fn exactly_one_of_argv_or_args_and_unknown_fields_dropped() {
        let input = parse(&object(
            json!({ "argv": ["search"], "confirm": true, "extra": 1 }),
        ))
        .unwrap();
        assert_eq!(
            input,
            Input {
                argv: vec!["search".into()],
                confirm: true
            }
        );
        assert_eq!(
            parse(&object(json!({ "args": "search x" }))).unwrap().argv,
            ["search", "x"]
        );
        for bad in [
            json!({}),
            json!({ "argv": ["a"], "args": "a" }),
            json!({ "argv": "a" }),
            json!({ "argv": [1] }),
        ] {
            assert_eq!(
                parse(&object(bad.clone())).unwrap_err().reason,
                Reason::InvalidArguments,
                "{bad}"
            );
        }
    }

    #[test]
    fn limits() {
        let words: Vec<Value> = (0..=MAX_WORDS).map(|_| json!("w")).collect();
        assert_eq!(
            parse(&object(json!({ "argv": words }))).unwrap_err().reason,
            Reason::TooLarge
        );
        let big = "a".repeat(MAX_ARGS_BYTES + 1);
        assert_eq!(split(&big).unwrap_err().reason, Reason::TooLarge);
    }

    proptest::proptest! {
        /// Any text with a metacharacter of any class anywhere is refused as such,
        /// and the refusal never repeats the text.
        #[test]
        fn every_metacharacter_class_is_refused_anywhere(
            before in "[a-z =\"'-]{0,20}",
            meta in proptest::sample::select(vec!['|', '&', ';', '<', '>', '(', ')', '$', '`', '\n', '\r', '\0']),
            after in "[a-z =\"'-]{0,20}",
        ) {
            let text = format!("{before}{meta}{after}");
            let failure = split(&text).unwrap_err();
            proptest::prop_assert_eq!(failure.reason, Reason::Metacharacter);
            proptest::prop_assert!(before.len() < 4 || !failure.message.contains(&before));
        }

        /// Whatever is accepted holds no metacharacter in any word.
        #[test]
        fn accepted_words_hold_no_metacharacter(text in "\\PC{0,40}") {
            if let Ok(words) = split(&text) {
                for word in words {
                    proptest::prop_assert!(word.chars().all(|c| class(c).is_none()), "{:?}", word);
                }
            }
        }
    }
}
