//! One failing example per manifest rule, each asserting the exact problem list.

use serde_json::{Value, json};

use super::*;

fn good() -> Value {
    json!({
        "hcp": 1,
        "id": "demo",
        "version": "1.0.0",
        "description": "A demo pack",
        "keywords": ["demo"],
        "bin": ["./demo"],
        "sandbox": { "network": false, "write": ["out"], "timeoutMs": 5000 },
        "bindings": { "DEMO_TOKEN": { "description": "token", "required": true } },
        "commands": {
            "greet": {
                "summary": "Say hello",
                "effect": "read",
                "params": {
                    "name": { "type": "string", "required": true, "pattern": "[a-z]+" },
                    "times": { "type": "integer", "default": 1 },
                    "loud": { "type": "boolean" },
                    "files": { "type": "array", "items": "path" },
                    "word": { "type": "string", "positional": true }
                },
                "argv": ["greet", "--name={name}", "--times={times}", "--loud={loud?}", "{word?}", "--", "{files}"],
                "json": ["--json"]
            }
        }
    })
}

/// Applies `change` to the good manifest and returns the problems as text.
fn problems(change: impl FnOnce(&mut Value)) -> Vec<String> {
    let mut value = good();
    change(&mut value);
    match parse(&value.to_string()) {
        Ok(_) => Vec::new(),
        Err(problems) => problems.iter().map(ToString::to_string).collect(),
    }
}

#[test]
fn the_good_manifest_parses() {
    let manifest = parse(&good().to_string()).unwrap();
    assert_eq!(manifest.id, "demo");
    assert_eq!(manifest.bin_file(), Some("demo"));
    let greet = manifest.command("greet").unwrap();
    assert_eq!(greet.effect, Effect::Read);
    assert_eq!(greet.param("times").unwrap().default, Some(vec!["1".to_owned()]));
    assert_eq!(greet.param("files").unwrap().type_label(), "array of path");
    assert_eq!(manifest.sandbox.timeout_ms, 5000);
    assert!(
        manifest.bindings[0].1.secret,
        "bindings are secret unless they say otherwise"
    );
}

#[test]
fn invalid_json_is_one_problem() {
    let problems = parse("{").unwrap_err();
    assert_eq!(problems.len(), 1);
    assert!(
        problems[0]
            .message
            .starts_with("not valid JSON (line 1, column 1)")
    );
}

#[test]
fn format_version() {
    assert_eq!(
        problems(|v| v["hcp"] = json!(2)),
        ["hcp: must be 1, the only format version this hcpx reads"]
    );
    assert_eq!(
        problems(|v| {
            v.as_object_mut().unwrap().remove("hcp");
        }),
        ["hcp: is required (the format version, 1)"]
    );
}

#[test]
fn id_rule() {
    assert_eq!(
        problems(|v| v["id"] = json!("Demo")),
        ["id: must match ^[a-z0-9][a-z0-9._-]{0,63}$"]
    );
    assert_eq!(problems(|v| v["id"] = json!("")), ["id: must not be empty"]);
}

#[test]
fn version_and_description() {
    assert_eq!(
        problems(|v| v["version"] = json!("1.0")),
        ["version: must be a semantic version such as 1.2.0"]
    );
    assert_eq!(
        problems(|v| v["description"] = json!(3)),
        ["description: must be a string"]
    );
    assert_eq!(
        problems(|v| v["description"] = json!("x".repeat(1025))),
        ["description: must be at most 1024 characters"]
    );
}

#[test]
fn unknown_fields_everywhere() {
    assert_eq!(
        problems(|v| {
            v["extra"] = json!(1);
            v["commands"]["greet"]["effects"] = json!("read");
            v["commands"]["greet"]["params"]["name"]["min"] = json!(1);
        }),
        [
            "extra: unknown field (known: hcp, id, version, description, keywords, bin, bindings, sandbox, commands, program)",
            "commands.greet.effects: unknown field (known: summary, description, effect, params, argv, json, write, network, okExitCodes, stdin)",
            "commands.greet.params.name.min: unknown field (known: type, items, values, required, positional, \
             pattern, refuse, default, description, maxLength, flag)",
        ]
    );
}

#[test]
fn bin_rules() {
    assert_eq!(
        problems(|v| v["bin"] = json!([])),
        ["bin: must name the CLI: [\"./FILE\"] inside the pack or [\"PROGRAM\"] on PATH"]
    );
    assert_eq!(
        problems(|v| v["bin"] = json!(["./../evil"])),
        ["bin[0]: must be ./FILE, a file at the top of the pack other than hcp.json and SKILL.md"]
    );
    assert_eq!(
        problems(|v| v["bin"] = json!(["/usr/bin/git"])),
        ["bin[0]: must be ./FILE inside the pack or a program name found on PATH (no slashes)"]
    );
    assert_eq!(
        problems(|v| v["bin"] = json!(["git", "{x}"])),
        ["bin[1]: must not contain placeholders; put them in a command's argv"]
    );
}

#[test]
fn binding_rules() {
    assert_eq!(
        problems(|v| v["bindings"] = json!({ "lower": {} })),
        ["bindings.lower: must be an environment variable name (^[A-Z_][A-Z0-9_]*$)"]
    );
    assert_eq!(
        problems(|v| v["bindings"] = json!({ "PATH": {} })),
        ["bindings.PATH: is set by the sandbox or the loader; choose another name"]
    );
    assert_eq!(
        problems(|v| v["bindings"] = json!({ "KEY": { "secret": "yes" } })),
        ["bindings.KEY.secret: must be true or false"]
    );
}

#[test]
fn sandbox_bounds() {
    assert_eq!(
        problems(|v| v["sandbox"]["timeoutMs"] = json!(600_001)),
        ["sandbox.timeoutMs: must be an integer from 1 to 600000"]
    );
    assert_eq!(
        problems(|v| v["sandbox"]["write"] = json!(["/etc"])),
        ["sandbox.write[0]: is not a relative path inside the working directory (write paths are relative)"]
    );
    assert_eq!(
        problems(|v| v["sandbox"]["write"] = json!(["a/../../b"])),
        ["sandbox.write[0]: leaves the working directory (write paths are relative)"]
    );
    assert_eq!(
        problems(|v| v["sandbox"]["network"] = json!("no")),
        ["sandbox.network: must be true, false or {\"allow\": [\"host:port\", ...]}"]
    );
    assert_eq!(
        problems(|v| v["sandbox"]["read"] = json!(["~/.gitconfig", "/etc/x", "rel", "~/../x", "/a/./b"])),
        [
            "sandbox.read[2]: must be an absolute path or start with ~/, without . or .. parts",
            "sandbox.read[3]: must be an absolute path or start with ~/, without . or .. parts",
            "sandbox.read[4]: must be an absolute path or start with ~/, without . or .. parts"
        ]
    );
    let long = format!("/{}", "s".repeat(107));
    assert_eq!(
        problems(|v| v["sandbox"]["sockets"] = json!([
            "/run/postgresql/.s.PGSQL.5432",
            "run/x",
            "/",
            "/a//b",
            "/a/../b",
            long
        ])),
        [
            "sandbox.sockets[1]: must be an absolute path of at most 107 bytes, without empty, . or .. parts",
            "sandbox.sockets[2]: must be an absolute path of at most 107 bytes, without empty, . or .. parts",
            "sandbox.sockets[3]: must be an absolute path of at most 107 bytes, without empty, . or .. parts",
            "sandbox.sockets[4]: must be an absolute path of at most 107 bytes, without empty, . or .. parts",
            "sandbox.sockets[5]: must be an absolute path of at most 107 bytes, without empty, . or .. parts"
        ]
    );
}

#[test]
fn command_rules() {
    assert_eq!(
        problems(|v| v["commands"] = json!({})),
        ["commands: must declare at least one command"]
    );
    assert_eq!(
        problems(|v| v["commands"]["Greet"] = v["commands"]["greet"].clone()),
        ["commands.Greet: command names match ^[a-z][a-z0-9_-]{0,63}$"]
    );
    assert_eq!(
        problems(|v| v["commands"]["greet"]["effect"] = json!("delete")),
        ["commands.greet.effect: must be read, write or destructive"]
    );
    assert_eq!(
        problems(|v| {
            v["commands"]["greet"].as_object_mut().unwrap().remove("summary");
        }),
        ["commands.greet.summary: is required"]
    );
}

#[test]
fn param_type_rules() {
    assert_eq!(
        problems(|v| v["commands"]["greet"]["params"]["times"]["type"] = json!("float")),
        ["commands.greet.params.times.type: must be string, integer, number, boolean, enum, path or array"]
    );
    assert_eq!(
        problems(|v| v["commands"]["greet"]["params"]["loud"] = json!({ "type": "enum" })),
        ["commands.greet.params.loud.values: an enum needs a non-empty list of values"]
    );
    assert_eq!(
        problems(|v| v["commands"]["greet"]["params"]["loud"]["values"] = json!(["a"])),
        ["commands.greet.params.loud.values: is only for type enum"]
    );
    assert_eq!(
        problems(|v| v["commands"]["greet"]["params"]["files"]["items"] = json!("array")),
        ["commands.greet.params.files.items: must be string, integer, number, boolean, enum or path"]
    );
    assert_eq!(
        problems(|v| v["commands"]["greet"]["params"]["name"]["pattern"] = json!("(")),
        ["commands.greet.params.name.pattern: is not a valid regular expression"]
    );
    assert_eq!(
        problems(|v| v["commands"]["greet"]["params"]["name"]["refuse"] = json!("(")),
        ["commands.greet.params.name.refuse: is not a valid regular expression"]
    );
    assert_eq!(
        problems(|v| v["commands"]["greet"]["params"]["name"]["maxLength"] = json!(0)),
        ["commands.greet.params.name.maxLength: must be an integer from 1 to 65536"]
    );
    assert_eq!(
        problems(|v| v["commands"]["greet"]["params"]["bad_Name"] = json!({})),
        [
            "commands.greet.params.bad_Name: parameter names match ^[a-z][a-z0-9_-]{0,63}$",
            "commands.greet.params.bad_Name: is declared but never used in argv",
        ]
    );
}

/// Found by the `manifest` fuzz target's invariant that an accepted pattern is a
/// regular expression by itself: this one parsed only once wrapped in the anchors,
/// and then let any value that starts with a digit through.
#[test]
fn a_pattern_that_only_parses_once_anchored_is_refused() {
    let text = r#"{"hcp":1,"id":"demo","version":"1.0.0","description":"Demo.","bin":["demo"],
        "commands":{"run":{"summary":"Run.","effect":"read",
        "params":{"n":{"positional":true,"required":true,"pattern":"[0-9]+)|(x"}},"argv":["{n}"]}}}"#;
    assert_eq!(
        parse(text).unwrap_err(),
        [Problem {
            path: "commands.run.params.n.pattern".to_owned(),
            message: "is not a valid regular expression".to_owned(),
        }]
    );
}

#[test]
fn default_rules() {
    assert_eq!(
        problems(|v| v["commands"]["greet"]["params"]["times"]["default"] = json!("one")),
        ["commands.greet.params.times.default: must be an integer value"]
    );
    assert_eq!(
        problems(|v| v["commands"]["greet"]["params"]["name"]["default"] = json!("abc")),
        ["commands.greet.params.name.default: a required parameter cannot have a default"]
    );
    assert_eq!(
        problems(|v| {
            v["commands"]["greet"]["params"]["name"]["required"] = json!(false);
            v["commands"]["greet"]["params"]["name"]["default"] = json!("ABC");
        }),
        ["commands.greet.params.name.default: the default does not match the pattern [a-z]+"]
    );
}

#[test]
fn template_names_declared_parameters() {
    assert_eq!(
        problems(|v| v["commands"]["greet"]["argv"][1] = json!("--name={nmae}")),
        [
            "commands.greet.argv[1]: unknown parameter \"nmae\"",
            "commands.greet.params.name: is declared but never used in argv",
        ]
    );
    assert_eq!(
        problems(|v| v["commands"]["greet"]["argv"][1] = json!("--name={name")),
        [
            "commands.greet.argv[1]: unclosed `{` at byte 7",
            "commands.greet.params.name: is declared but never used in argv",
        ]
    );
}

#[test]
fn template_optional_marks() {
    assert_eq!(
        problems(|v| v["commands"]["greet"]["argv"][1] = json!("--name={name?}")),
        ["commands.greet.argv[1]: \"name\" is required, so write {name} without `?`"]
    );
    assert_eq!(
        problems(|v| v["commands"]["greet"]["argv"][3] = json!("--loud={loud}")),
        [
            "commands.greet.argv[3]: \"loud\" is optional, so write {loud?} (the element is dropped when it is absent)"
        ]
    );
}

#[test]
fn option_fusing_rule() {
    // A bare placeholder before `--` could be read as an option by the pack's CLI;
    // the problem suggests the forms real CLIs accept.
    assert_eq!(
        problems(|v| v["commands"]["greet"]["argv"][1] = json!("{name}")),
        [
            "commands.greet.argv[1]: \"name\" must follow its option as the next element (\"--name\", \"{name}\"), \
             be placed after a \"--\" element, or be declared \"positional\": true"
        ]
    );
    assert_eq!(
        problems(|v| v["commands"]["greet"]["argv"][1] = json!("--{name}")),
        [
            "commands.greet.argv[1]: \"name\" must follow its option as the next element (\"--name\", \"{name}\"), \
             be placed after a \"--\" element, or be declared \"positional\": true"
        ]
    );
    // A boolean is offered the on/off flag first; an optional one keeps its `?`.
    assert_eq!(
        problems(|v| v["commands"]["greet"]["argv"][3] = json!("{loud?}")),
        [
            "commands.greet.argv[3]: \"loud\" must be an on/off flag (declare \"flag\": \"--loud\"), follow its \
             option as the next element (\"--loud\", \"{loud?}\"), be placed after a \"--\" element, or be declared \"positional\": true"
        ]
    );
    // After `--`, or declared positional, a bare placeholder is fine (the good
    // manifest has both); so is a short option with its value attached.
    assert!(problems(|v| v["commands"]["greet"]["argv"][2] = json!("-t{times}")).is_empty());
}

fn with_argv(argv: Value) -> impl FnOnce(&mut Value) {
    move |v| v["commands"]["greet"]["argv"] = argv
}

#[test]
fn an_option_and_its_value_as_two_elements() {
    let argv = json!([
        "greet", "--name", "{name}", "-t", "{times}", "--loud", "{loud?}", "{word?}", "--", "{files}"
    ]);
    assert!(problems(with_argv(argv.clone())).is_empty());
    let mut value = good();
    with_argv(argv)(&mut value);
    let manifest = parse(&value.to_string()).unwrap();
    let slots = &manifest.command("greet").unwrap().argv;
    assert!(matches!(&slots[1], Slot::Separated { option, param } if option == "--name" && param == "name"));
    assert!(matches!(&slots[2], Slot::Separated { option, param } if option == "-t" && param == "times"));
    assert!(matches!(&slots[4], Slot::Element(element) if element.to_string() == "{word?}"));
    // The `?` marks apply as in any element.
    assert_eq!(
        problems(with_argv(json!([
            "--name", "{name?}", "--loud", "{loud}", "{word?}", "--", "{files}", "{times}"
        ]))),
        [
            "commands.greet.argv[1]: \"name\" is required, so write {name} without `?`",
            "commands.greet.argv[3]: \"loud\" is optional, so write {loud?} (the element is dropped when it is absent)"
        ]
    );
    // Only the element right after the option, before any `--`, is its value: not
    // a second placeholder, not one after `--` (there `-t` is an operand).
    assert_eq!(
        problems(with_argv(json!([
            "--name",
            "{name}",
            "{times}",
            "--loud={loud?}",
            "{word?}",
            "--",
            "{files}"
        ]))),
        [
            "commands.greet.argv[2]: \"times\" must follow its option as the next element (\"--times\", \"{times}\"), \
             be placed after a \"--\" element, or be declared \"positional\": true"
        ]
    );
    assert!(
        problems(with_argv(json!([
            "--name={name}",
            "--times={times}",
            "--loud={loud?}",
            "{word?}",
            "--",
            "-t",
            "{files}"
        ])))
        .is_empty()
    );
    // Neither `-` (stdin) nor a fused `--x=` nor text with a placeholder is an option
    // a value may follow.
    for option in ["-", "--name=x", "x"] {
        assert_eq!(
            problems(with_argv(json!([
                option,
                "{name}",
                "--times={times}",
                "--loud={loud?}",
                "{word?}",
                "--",
                "{files}"
            ]))),
            [
                "commands.greet.argv[1]: \"name\" must follow its option as the next element (\"--name\", \"{name}\"), \
                 be placed after a \"--\" element, or be declared \"positional\": true"
            ],
            "{option}"
        );
    }
}

#[test]
fn a_positional_parameter_after_an_option_stays_an_operand() {
    // `sqlite3 -readonly {db}`: `db` is positional, so `-readonly` is a flag of its
    // own, not the option of a value, as in the built-in packs.
    let argv = json!([
        "--name={name}",
        "--times={times}",
        "--loud={loud?}",
        "-x",
        "{word?}",
        "--",
        "{files}"
    ]);
    let mut value = good();
    with_argv(argv)(&mut value);
    let manifest = parse(&value.to_string()).unwrap();
    let slots = &manifest.command("greet").unwrap().argv;
    assert!(matches!(&slots[3], Slot::Element(element) if element.to_string() == "-x"));
    assert!(matches!(&slots[4], Slot::Element(element) if element.to_string() == "{word?}"));
}

#[test]
fn flag_rules() {
    let with_flag = |flag: Value, element: &'static str| {
        move |v: &mut Value| {
            v["commands"]["greet"]["params"]["loud"]["flag"] = flag;
            v["commands"]["greet"]["argv"][3] = json!(element);
        }
    };
    // `{loud?}` alone, anywhere: only the manifest's text can reach the CLI.
    assert!(problems(with_flag(json!("--loud"), "{loud?}")).is_empty());
    assert!(problems(with_flag(json!("-L"), "{loud?}")).is_empty());
    let mut value = good();
    with_flag(json!("--loud"), "{loud?}")(&mut value);
    let manifest = parse(&value.to_string()).unwrap();
    assert!(matches!(&manifest.command("greet").unwrap().argv[3],
        Slot::Flag { param, text } if param == "loud" && text == "--loud"));
    let loud = manifest.command("greet").unwrap().param("loud").unwrap();
    assert_eq!(loud.type_label(), "boolean (true gives --loud)");
    // The `?` marks apply as to any placeholder.
    assert_eq!(
        problems(with_flag(json!("--loud"), "{loud}")),
        [
            "commands.greet.argv[3]: \"loud\" is optional, so write {loud?} (the element is dropped when it is absent)"
        ]
    );
    assert_eq!(
        problems(with_flag(json!("--loud"), "--loud={loud?}")),
        ["commands.greet.argv[3]: \"loud\" is a flag, so {loud} must be the whole element"]
    );
    for bad in [
        json!("--lo ud"),
        json!("loud"),
        json!("-"),
        json!("--"),
        json!(""),
    ] {
        assert_eq!(
            problems(with_flag(bad.clone(), "{loud?}")),
            [
                "commands.greet.params.loud.flag: must be one option, such as --utc or -u (no spaces)",
                "commands.greet.argv[3]: \"loud\" must be an on/off flag (declare \"flag\": \"--loud\"), follow its \
                 option as the next element (\"--loud\", \"{loud?}\"), be placed after a \"--\" element, or be \
                 declared \"positional\": true"
            ],
            "{bad}"
        );
    }
    assert_eq!(
        problems(|v| {
            v["commands"]["greet"]["params"]["name"]["flag"] = json!("--name");
        }),
        [
            "commands.greet.params.name.flag: is only for type boolean; a value goes in the element after its option \
             (\"--opt\", \"{name}\")"
        ]
    );
    assert_eq!(
        problems(|v| v["commands"]["greet"]["params"]["loud"]["flag"] = json!(true)),
        ["commands.greet.params.loud.flag: must be a string"]
    );
}

#[test]
fn one_array_per_element_and_json_without_placeholders() {
    assert_eq!(
        problems(|v| {
            v["commands"]["greet"]["params"]["more"] = json!({ "type": "array" });
            v["commands"]["greet"]["argv"][6] = json!("{files}{more}");
        }),
        ["commands.greet.argv[6]: an element may repeat for at most one array parameter"]
    );
    assert_eq!(
        problems(|v| v["commands"]["greet"]["json"] = json!(["--format={name}"])),
        ["commands.greet.json[0]: must not contain placeholders"]
    );
}

#[test]
fn every_problem_is_listed_at_once() {
    let found = problems(|v| {
        v["id"] = json!("BAD");
        v["version"] = json!("x");
        v["sandbox"]["timeoutMs"] = json!(0);
        v["commands"]["greet"]["argv"][1] = json!("--name={frm}");
    });
    assert_eq!(
        found,
        [
            "id: must match ^[a-z0-9][a-z0-9._-]{0,63}$",
            "version: must be a semantic version such as 1.2.0",
            "sandbox.timeoutMs: must be an integer from 1 to 600000",
            "commands.greet.argv[1]: unknown parameter \"frm\"",
            "commands.greet.params.name: is declared but never used in argv",
        ]
    );
}

#[test]
fn param_check_values() {
    let manifest = parse(&good().to_string()).unwrap();
    let greet = manifest.command("greet").unwrap();
    let name = greet.param("name").unwrap();
    assert_eq!(name.check("abc"), Ok(()));
    assert_eq!(
        name.check("ABC"),
        Err("does not match the pattern [a-z]+".to_owned())
    );
    let times = greet.param("times").unwrap();
    assert_eq!(times.check("12"), Ok(()));
    assert_eq!(times.check("1.5"), Err("is not an integer".to_owned()));
    let loud = greet.param("loud").unwrap();
    assert_eq!(loud.check("yes"), Err("is not `true` or `false`".to_owned()));
    let files = greet.param("files").unwrap();
    assert_eq!(files.check("a/../b"), Ok(()));
    assert_eq!(
        files.check("a/../../b"),
        Err("leaves the working directory".to_owned())
    );
    assert_eq!(
        files.check("/etc/passwd"),
        Err("is not a relative path inside the working directory".to_owned())
    );
}

/// `refuse` matches anywhere in the value, unanchored, and the message names the
/// author's expression, never the caller's value.
#[test]
fn a_value_that_holds_what_a_parameter_refuses_is_refused() {
    let mut manifest = good();
    manifest["commands"]["greet"]["params"]["name"]["refuse"] = json!("(?i)fsdir|zipfile");
    let manifest = parse(&manifest.to_string()).unwrap();
    let name = manifest.command("greet").unwrap().param("name").unwrap();
    assert_eq!(name.check("abc"), Ok(()));
    assert_eq!(
        name.check("xyzfsdirxyz"),
        Err("contains what this parameter refuses ((?i)fsdir|zipfile)".to_owned())
    );
    assert_eq!(
        name.check("zipfile"),
        Err("contains what this parameter refuses ((?i)fsdir|zipfile)".to_owned())
    );
}
