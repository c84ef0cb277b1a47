//! Tests of `invocation.rs`: the words a caller gives, the argv a pack gets.

use super::*;
use crate::manifest;

fn command() -> Command {
    let manifest = manifest::parse(
        &serde_json::json!({
            "hcp": 1, "id": "t", "version": "1.0.0", "description": "d", "bin": ["t"],
            "commands": { "c": {
                "summary": "s", "effect": "read",
                "params": {
                    "to": { "required": true },
                    "at": { "pattern": "[0-9]+" },
                    "n": { "type": "integer", "default": 5 },
                    "word": { "positional": true },
                    "file": { "type": "path" },
                    "tags": { "type": "array" }
                },
                "argv": ["c", "--to={to}", "--at={at?}", "-n{n}", "{word?}", "--", "{file?}", "{tags}"]
            }}
        })
        .to_string(),
    )
    .unwrap();
    manifest.commands.into_iter().next().unwrap()
}

/// A command with a placeholder in every place the template allows one: an
/// option's value in the next element (required, optional, array), fused to a
/// long and a short option, positional, an on/off flag, and after `--`.
fn every_place() -> Command {
    let manifest = manifest::parse(
        &serde_json::json!({
            "hcp": 1, "id": "t", "version": "1.0.0", "description": "d", "bin": ["t"],
            "commands": { "get": {
                "summary": "s", "effect": "read",
                "params": {
                    "url": { "required": true },
                    "header": { "type": "array" },
                    "out": {},
                    "to": {},
                    "n": {},
                    "word": { "positional": true },
                    "utc": { "type": "boolean", "flag": "--utc" },
                    "rest": { "type": "array" }
                },
                "argv": ["get", "--url", "{url}", "-H", "{header}", "--output", "{out?}",
                         "--to={to?}", "-n{n?}", "{word?}", "{utc?}", "--", "{rest}"]
            }}
        })
        .to_string(),
    )
    .unwrap();
    manifest.commands.into_iter().next().unwrap()
}

fn try_argv(command: &Command, values: &Values) -> Result<Vec<String>, InvocationError> {
    argv(command, values, &[])
}

const BENIGN: &str = "ok0";

/// The law: a value is either refused, or it lands exactly where a benign value
/// lands, and before the template's `--` an element starts with `-` only when
/// the template's own text put the dash there.
/// `through_parse: false` hands the value to `argv` unchecked, to show that
/// `argv` alone fails closed.
fn assert_value_never_becomes_an_option(command: &Command, name: &str, value: &str, through_parse: bool) {
    let call = |value: &str| {
        if !through_parse {
            let mut values = Values::new();
            values.insert("url".to_owned(), vec!["u".to_owned()]);
            values.insert(name.to_owned(), vec![value.to_owned()]);
            return try_argv(command, &values);
        }
        let mut list = vec![format!("{name}={value}")];
        if name != "url" {
            list.push("url=u".to_owned());
        }
        parse(command, &list, &Lexical).and_then(|values| try_argv(command, &values))
    };
    if name == "utc" {
        // A boolean's value never reaches the CLI: only the flag's own text.
        if let Ok(argv) = call(value) {
            let allowed = ["get", "--url", "u", "--utc", "--"];
            assert!(
                argv.iter().all(|arg| allowed.contains(&arg.as_str())),
                "{value:?}: {argv:?}"
            );
        }
        return;
    }
    let benign = call(BENIGN).unwrap();
    let Ok(attack) = call(value) else { return };
    assert_eq!(attack.len(), benign.len(), "{name}={value:?}: {attack:?}");
    let end = benign.iter().position(|arg| arg == "--").unwrap_or(benign.len());
    for (index, (got, want)) in attack.iter().zip(&benign).enumerate() {
        assert_eq!(got, &want.replace(BENIGN, value), "{name}={value:?}: {attack:?}");
        if index < end && got.starts_with('-') {
            assert!(
                want.starts_with('-'),
                "{name}={value:?} became an option at {index}: {attack:?}"
            );
        }
    }
}

proptest::proptest! {
    /// The law, for any text in any place, checked by `parse` or not.
    #[test]
    fn argv_never_lets_a_value_become_an_option(
        name in proptest::sample::select(vec!["url", "header", "out", "to", "n", "word", "utc", "rest"]),
        value in "(-{1,2}|[a-z./ =-]|\\PC){0,12}",
        through_parse: bool,
    ) {
        proptest::prop_assume!(!value.contains(BENIGN) && !value.contains('\0'));
        assert_value_never_becomes_an_option(&every_place(), name, &value, through_parse);
    }
}

/// An option and its value as two arguments, repeated for an array, dropped
/// together; a flag is there when its boolean is true and only then.
#[test]
fn separated_options_and_flags_reach_the_argv_as_real_clis_expect() {
    let command = every_place();
    let run = |list: &[&str]| {
        let values = parse(&command, &words(list), &Lexical).unwrap();
        argv(&command, &values, &["--json".to_owned()]).unwrap()
    };
    assert_eq!(
        run(&[
            "url=http://x/?a=1",
            "header=A: 1",
            "header=B: 2",
            "out=o.txt",
            "utc=true"
        ]),
        [
            "get",
            "--url",
            "http://x/?a=1",
            "-H",
            "A: 1",
            "-H",
            "B: 2",
            "--output",
            "o.txt",
            "--utc",
            "--json",
            "--"
        ]
    );
    assert_eq!(
        run(&["url=u", "utc=false"]),
        ["get", "--url", "u", "--json", "--"]
    );
    assert_eq!(run(&["url=u"]), ["get", "--url", "u", "--json", "--"]);
    // An empty value is still a value: `--output ""`, never `--output` alone.
    assert_eq!(
        run(&["url=u", "out="]),
        ["get", "--url", "u", "--output", "", "--json", "--"]
    );
}

/// The options a getopt-style CLI reads from `argv`, in order, knowing which of
/// the template's options take a value: its separated options and its short
/// fused ones, which take the next argument when their own is bare.
fn options_read(command: &Command, argv: &[String]) -> Vec<String> {
    let mut takes_value = Vec::new();
    for slot in &command.argv {
        match slot {
            Slot::Separated { option, .. } => takes_value.push(option.clone()),
            Slot::Element(element) if element.is_option_fused() && !element.prefix().starts_with("--") => {
                takes_value.push(element.prefix().to_owned());
            }
            _ => {}
        }
    }
    let mut read = Vec::new();
    let mut args = argv.iter();
    while let Some(arg) = args.next() {
        if arg == "--" {
            break;
        }
        let name: String = if arg.starts_with("--") {
            arg.split('=').next().unwrap_or_default().to_owned()
        } else if arg.starts_with('-') && arg.len() > 1 {
            arg.chars().take(2).collect()
        } else {
            continue;
        };
        if &name == arg && takes_value.contains(&name) {
            args.next();
        }
        read.push(name);
    }
    read
}

proptest::proptest! {
    /// The law with every parameter at once: whatever the values, the CLI reads
    /// the same options as with harmless ones (values cannot add, remove or
    /// shift an option, for example by leaving `-n` bare to eat the `--`).
    #[test]
    fn values_together_never_change_the_options_read(
        given in proptest::collection::vec(
            proptest::option::of(proptest::prop_oneof![
                proptest::strategy::Just(String::new()),
                proptest::strategy::Just("--".to_owned()),
                proptest::strategy::Just("-rf".to_owned()),
                "(-{1,2}|[a-z./ =-]|\\PC){0,12}",
            ]),
            7,
        ),
        utc: Option<bool>,
        through_parse: bool,
    ) {
        let command = every_place();
        let names = ["url", "header", "out", "to", "n", "word", "rest"];
        let call = |harmless: bool| {
            let mut list = Vec::new();
            for (name, value) in names.iter().zip(&given) {
                let value = match value {
                    Some(value) if !harmless => value.as_str(),
                    Some(_) => "v",
                    None if *name == "url" => "u",
                    None => continue,
                };
                list.push(format!("{name}={value}"));
            }
            if let Some(utc) = utc {
                list.push(format!("utc={utc}"));
            }
            if through_parse {
                return parse(&command, &list, &Lexical).and_then(|values| argv(&command, &values, &[]));
            }
            let mut values = Values::new();
            for word in &list {
                if let Some((key, value)) = word.split_once('=') {
                    values.insert(key.to_owned(), vec![value.to_owned()]);
                }
            }
            argv(&command, &values, &[])
        };
        let harmless = call(true).unwrap();
        if let Ok(argv) = call(false) {
            proptest::prop_assert_eq!(
                options_read(&command, &argv),
                options_read(&command, &harmless),
                "{:?}",
                argv
            );
        }
    }
}

/// The attack: values that a CLI would read as options, in every place.
#[test]
fn option_like_values_never_become_options_in_any_place() {
    let command = every_place();
    for value in ["-oProxyCommand=sh -c id", "--output=/x", "-", "--", "-x", "--utc"] {
        for name in ["url", "header", "out", "to", "n", "word", "rest"] {
            assert_value_never_becomes_an_option(&command, name, value, true);
            assert_value_never_becomes_an_option(&command, name, value, false);
        }
    }
    // Where a value stands alone before `--`, such values are refused.
    for name in ["url", "header", "out", "word"] {
        let mut list = vec![format!("{name}=--output=/x")];
        if name != "url" {
            list.push("url=u".to_owned());
        }
        let refused = parse(&command, &list, &Lexical).and_then(|values| try_argv(&command, &values));
        assert!(
            matches!(&refused, Err(InvocationError::Invalid { name: bad, .. }) if bad == name),
            "{name}: {refused:?}"
        );
    }
}

fn words(list: &[&str]) -> Vec<String> {
    list.iter().map(|w| (*w).to_owned()).collect()
}

fn argv_of_words(list: &[&str]) -> Result<Vec<String>, InvocationError> {
    let command = command();
    let values = parse(&command, &words(list), &Lexical)?;
    argv(&command, &values, &[])
}

#[test]
fn argv_has_one_value_per_element_with_defaults_and_arrays() {
    assert_eq!(
        argv_of_words(&["to=North Park", "tags=a b", "tags=--c"]).unwrap(),
        ["c", "--to=North Park", "-n5", "--", "a b", "--c"]
    );
    assert_eq!(
        argv_of_words(&["to=x", "at=12", "word=w", "file=a/b"]).unwrap(),
        ["c", "--to=x", "--at=12", "-n5", "w", "--", "./a/b"]
    );
}

/// A path reaches the CLI as a file here, whatever else its text could mean.
#[test]
fn paths_are_anchored_to_the_working_directory() {
    for (given, passed) in [
        ("file:/etc/x.db", "./file:/etc/x.db"),
        ("host:repo", "./host:repo"),
        ("-", "./-"),
        ("a/b", "./a/b"),
        ("./a", "./a"),
        (".", "."),
    ] {
        let words = argv_of_words(&["to=x", &format!("file={given}")]).unwrap();
        assert_eq!(words.last().map(String::as_str), Some(passed), "{given}");
    }
}

#[test]
fn values_that_look_like_options_stay_values() {
    // Fused: the CLI reads `--to=--upload-pack=evil` as the value of --to.
    assert_eq!(
        argv_of_words(&["to=--upload-pack=evil"]).unwrap()[1],
        "--to=--upload-pack=evil"
    );
    // Positional: refused outright.
    assert!(matches!(
        argv_of_words(&["to=x", "word=-rf"]),
        Err(InvocationError::Invalid { name, .. }) if name == "word"
    ));
}

/// `-n{n}` with an empty value would be `-n` alone, and the CLI would take the
/// next argument (another value, or the template's `--`) as its value.
#[test]
fn an_empty_value_never_leaves_a_short_option_bare() {
    let command = every_place();
    let run = |list: &[&str]| {
        parse(&command, &words(list), &Lexical).and_then(|values| argv(&command, &values, &[]))
    };
    assert_eq!(
        run(&["url=u", "n="]),
        Err(InvocationError::Invalid {
            name: "n".into(),
            reason: "is empty, which would leave `-n` to take the next argument as its value".into()
        })
    );
    // The hole it closes: `-n` ate the template's `--`, so `-rf` after it was
    // read as an option.
    assert!(matches!(
        run(&["url=u", "n=", "rest=-rf"]),
        Err(InvocationError::Invalid { name, .. }) if name == "n"
    ));
    // A long option keeps its `=`, and a separate value is its own argument.
    assert_eq!(
        run(&["url=u", "to=", "out="]).unwrap(),
        ["get", "--url", "u", "--output", "", "--to=", "--"]
    );
}

#[test]
fn refusals() {
    assert_eq!(
        argv_of_words(&["to"]),
        Err(InvocationError::NotAssignment { index: 1 })
    );
    assert_eq!(
        argv_of_words(&["to=x", "frm=y"]),
        Err(InvocationError::Unknown {
            key: "frm".into(),
            closest: None,
            known: words(&["to", "at", "n", "word", "file", "tags"])
        })
    );
    assert_eq!(
        argv_of_words(&["to=x", "wrod=y"]),
        Err(InvocationError::Unknown {
            key: "wrod".into(),
            closest: Some("word".into()),
            known: words(&["to", "at", "n", "word", "file", "tags"])
        })
    );
    assert_eq!(
        argv_of_words(&["to=x", "to=y"]),
        Err(InvocationError::Repeated { name: "to".into() })
    );
    assert_eq!(
        argv_of_words(&[]),
        Err(InvocationError::Missing { name: "to".into() })
    );
    assert!(matches!(
        argv_of_words(&["to=x", "at=noon"]),
        Err(InvocationError::Invalid { .. })
    ));
    assert!(matches!(
        argv_of_words(&["to=x", "n=five"]),
        Err(InvocationError::Invalid { .. })
    ));
    assert!(matches!(
        argv_of_words(&["to=x", "file=../etc"]),
        Err(InvocationError::Invalid { .. })
    ));
}

#[test]
fn messages_never_repeat_values() {
    let error = argv_of_words(&["to=x", "at=SECRET"]).unwrap_err().to_string();
    assert!(!error.contains("SECRET"), "{error}");
    let error = argv_of_words(&["SECRET=1"]).unwrap_err().to_string();
    assert!(!error.contains("SECRET"), "{error}");
}

/// A command's `json` flags are options: they go before the template's `--`,
/// never after it, where the CLI would read them as operands.
#[test]
fn options_go_before_the_templates_double_dash() {
    let command = crate::manifest::parse(
        r#"{"hcp":1,"id":"g","version":"1.0.0","description":"d","bin":["g"],
        "commands":{"c":{"summary":"s","effect":"read","params":{"p":{"type":"path","required":true}},
        "argv":["grep","-n","--","{p}"],"json":["--json"]},
        "d":{"summary":"s","effect":"read","argv":["list"],"json":["--json"]}}}"#,
    )
    .unwrap();
    let json = vec!["--json".to_owned()];
    let values = parse(command.command("c").unwrap(), &["p=x".to_owned()], &Lexical).unwrap();
    assert_eq!(
        argv(command.command("c").unwrap(), &values, &json).unwrap(),
        ["grep", "-n", "--json", "--", "./x"]
    );
    let values = Values::new();
    assert_eq!(
        argv(command.command("d").unwrap(), &values, &json).unwrap(),
        ["list", "--json"]
    );
}
