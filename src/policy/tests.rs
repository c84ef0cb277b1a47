//! Every decision path of the engine, asserting whole evaluations.

use std::path::PathBuf;

use super::evaluate::RuleRef;
use super::rules::Scope;
use super::show::Ignored;
use super::*;
use crate::manifest::Effect;

fn parsed(scope_path: &str, text: &str) -> Layer {
    Layer::Parsed {
        path: PathBuf::from(scope_path),
        file: PolicyFile::parse(text).unwrap(),
    }
}

fn user(text: &str) -> Layer {
    parsed("/h/policy.json", text)
}

fn project(text: &str) -> Layer {
    parsed("/p/.hcp/policy.json", text)
}

fn decide(pack: &str, command: &str, effect: Effect, user: Layer, project: Layer) -> Evaluation {
    evaluate(
        &Subject {
            pack,
            command,
            effect,
            caller: None,
        },
        &Policies { user, project },
    )
}

/// The rule `matcher` of a file's `rules` at `index`, or with none the default
/// `defaults.EFFECT`.
fn rule(scope: Scope, matcher: &str, file: Option<&str>, index: Option<usize>) -> RuleRef {
    let kind = match index {
        Some(index) => RuleKind::Rule {
            matcher: Matcher::parse(matcher).unwrap(),
            index,
            who: Who::Anyone,
        },
        None => RuleKind::Default {
            effect: Effect::parse(matcher.strip_prefix("defaults.").unwrap()).unwrap(),
        },
    };
    let rule = RuleRef {
        scope,
        file: file.map(PathBuf::from),
        kind,
    };
    assert_eq!(rule.matcher(), matcher);
    rule
}

#[test]
fn builtin_defaults_without_files() {
    for (effect, decision) in [
        (Effect::Read, Decision::Allow),
        (Effect::Write, Decision::Confirm),
        (Effect::Destructive, Decision::ConfirmHuman),
    ] {
        let evaluation = decide("git", "x", effect, Layer::Absent, Layer::Absent);
        assert_eq!(
            evaluation,
            Evaluation {
                decision,
                rule: rule(
                    Scope::Builtin,
                    &format!("defaults.{}", effect.as_str()),
                    None,
                    None
                )
            }
        );
    }
}

#[test]
fn user_defaults_replace_builtin_ones() {
    let evaluation = decide(
        "git",
        "x",
        Effect::Write,
        user(r#"{"defaults":{"write":"allow"}}"#),
        Layer::Absent,
    );
    assert_eq!(
        evaluation,
        Evaluation {
            decision: Decision::Allow,
            rule: rule(Scope::User, "defaults.write", Some("/h/policy.json"), None)
        }
    );
}

#[test]
fn most_specific_match_wins() {
    let file = r#"{"rules":[
        {"match":"*.read","decision":"deny"},
        {"match":"git.*","decision":"confirm"},
        {"match":"git.status","decision":"allow"}]}"#;
    let status = decide("git", "status", Effect::Read, user(file), Layer::Absent);
    assert_eq!(status.decision, Decision::Allow);
    assert_eq!(
        status.rule,
        rule(Scope::User, "git.status", Some("/h/policy.json"), Some(2))
    );
    let log = decide("git", "log", Effect::Read, user(file), Layer::Absent);
    assert_eq!(log.decision, Decision::Confirm);
    assert_eq!(log.rule.matcher(), "git.*");
    let other = decide("jq", "filter", Effect::Read, user(file), Layer::Absent);
    assert_eq!(other.decision, Decision::Deny);
    assert_eq!(other.rule.matcher(), "*.read");
    let write = decide("jq", "x", Effect::Write, user(file), Layer::Absent);
    assert_eq!(write.rule.scope, Scope::Builtin);
}

/// In either order: the strictest, not the first (nor the last) of them.
#[test]
fn equally_specific_rules_take_the_strictest() {
    let file = r#"{"rules":[{"match":"git.*","decision":"deny"},{"match":"git.*","decision":"allow"}]}"#;
    let evaluation = decide("git", "log", Effect::Read, user(file), Layer::Absent);
    assert_eq!(evaluation.decision, Decision::Deny);
    assert_eq!(evaluation.rule.index(), Some(0));
    let file = r#"{"rules":[{"match":"git.*","decision":"allow"},{"match":"git.*","decision":"deny"}]}"#;
    let evaluation = decide("git", "log", Effect::Read, user(file), Layer::Absent);
    assert_eq!(evaluation.decision, Decision::Deny);
    assert_eq!(evaluation.rule.index(), Some(1));
    // Among equally strict ones, the first.
    let file = r#"{"rules":[{"match":"git.*","decision":"confirm"},{"match":"git.*","decision":"allow"},{"match":"git.*","decision":"confirm"}]}"#;
    let evaluation = decide("git", "log", Effect::Read, user(file), Layer::Absent);
    assert_eq!(
        evaluation,
        Evaluation {
            decision: Decision::Confirm,
            rule: rule(Scope::User, "git.*", Some("/h/policy.json"), Some(0))
        }
    );
}

#[test]
fn project_can_tighten() {
    let evaluation = decide(
        "git",
        "commit",
        Effect::Write,
        user(r#"{"rules":[{"match":"git.commit","decision":"allow"}]}"#),
        project(r#"{"rules":[{"match":"*.write","decision":"deny"}]}"#),
    );
    assert_eq!(
        evaluation,
        Evaluation {
            decision: Decision::Deny,
            rule: rule(Scope::Project, "*.write", Some("/p/.hcp/policy.json"), Some(0))
        }
    );
}

#[test]
fn project_cannot_loosen() {
    let evaluation = decide(
        "git",
        "push",
        Effect::Write,
        user(r#"{"rules":[{"match":"git.push","decision":"deny"}]}"#),
        project(r#"{"defaults":{"write":"allow"},"rules":[{"match":"git.push","decision":"allow"}]}"#),
    );
    assert_eq!(evaluation.decision, Decision::Deny);
    assert_eq!(evaluation.rule.scope, Scope::User);
    // Nor can it loosen a built-in default.
    let evaluation = decide(
        "x",
        "y",
        Effect::Destructive,
        Layer::Absent,
        project(r#"{"defaults":{"destructive":"allow"}}"#),
    );
    assert_eq!(evaluation.decision, Decision::ConfirmHuman);
}

#[test]
fn project_without_a_word_on_it_keeps_the_users_looser_choice() {
    // A project file that says nothing about writes must not re-impose the
    // built-in `confirm` over the user's explicit `allow`.
    let evaluation = decide(
        "git",
        "add",
        Effect::Write,
        user(r#"{"defaults":{"write":"allow"}}"#),
        project(r#"{"rules":[{"match":"sqlite.*","decision":"deny"}]}"#),
    );
    assert_eq!(evaluation.decision, Decision::Allow);
}

#[test]
fn unparsable_files_deny_everything() {
    let broken = Layer::Unparsable {
        path: "/h/policy.json".into(),
        error: "not valid JSON".into(),
    };
    let evaluation = decide("transit", "plan", Effect::Read, broken.clone(), Layer::Absent);
    assert_eq!(evaluation.decision, Decision::Deny);
    assert_eq!(evaluation.rule.matcher(), "unparsable");
    assert_eq!(
        evaluation.rule.kind,
        RuleKind::Unparsable {
            error: "not valid JSON".to_owned()
        }
    );
    assert_eq!(
        evaluation.rule.to_string(),
        "unparsable policy file /h/policy.json (not valid JSON)"
    );
    let evaluation = decide(
        "transit",
        "plan",
        Effect::Read,
        Layer::Absent,
        Layer::Unparsable {
            path: "/p/.hcp/policy.json".into(),
            error: "x".into(),
        },
    );
    assert_eq!(evaluation.decision, Decision::Deny);
    assert_eq!(evaluation.rule.scope, Scope::Project);
}

/// Every way a file can be wrong names the field by its JSON path, what it holds and
/// what the format takes there: the whole message.
#[test]
fn parse_errors_name_the_field_what_it_holds_and_what_is_taken() {
    for (text, error) in [
        (
            "[]",
            "the top level is an array, where the format takes an object with `defaults`, `rules` or both",
        ),
        (
            r#"{"rule":[]}"#,
            "rule is a field hcpx does not know, where the format takes only defaults and rules",
        ),
        (
            r#"{"defaults":"allow"}"#,
            r#"defaults is "allow", where the format takes an object such as {"write": "confirm"}"#,
        ),
        (
            r#"{"defaults":{"read":"yes"}}"#,
            r#"defaults.read is "yes", where the format takes one of allow, confirm, confirm-human, deny"#,
        ),
        (
            r#"{"defaults":{"exec":"allow"}}"#,
            "defaults.exec is a field hcpx does not know, where the format takes only read, write and destructive",
        ),
        (
            r#"{"rules":{}}"#,
            r#"rules is an object, where the format takes an array of rules such as {"match": "git.push", "decision": "deny"}"#,
        ),
        (
            r#"{"rules":[{"match":"git.*","decision":"deny"},"git.push"]}"#,
            r#"rules[1] is "git.push", where the format takes an object such as {"match": "git.push", "decision": "deny"}"#,
        ),
        (
            r#"{"rules":[{"match":"git","decision":"deny"}]}"#,
            r#"rules[0].match is "git", where the format takes a string pack.command, pack.* or *.effect (effect: read, write or destructive)"#,
        ),
        (
            r#"{"rules":[{"match":7,"decision":"deny"}]}"#,
            "rules[0].match is 7, where the format takes a string pack.command, pack.* or *.effect (effect: read, write or destructive)",
        ),
        (
            r#"{"rules":[{"match":"*.push","decision":"deny"}]}"#,
            r#"rules[0].match is "*.push", where the format takes *.read, *.write or *.destructive"#,
        ),
        (
            r#"{"rules":[{"match":"git.*","decision":"deny","why":1}]}"#,
            "rules[0].why is a field hcpx does not know, where the format takes only match, decision, and subject or group",
        ),
        (
            r#"{"rules":[{"decision":"deny"}]}"#,
            "rules[0].match is missing, where the format takes a string pack.command, pack.* or *.effect (effect: read, write or destructive)",
        ),
        (
            r#"{"rules":[{"match":"git.*"},{"match":"git.log","decision":"allow"}]}"#,
            "rules[0].decision is missing, where the format takes one of allow, confirm, confirm-human, deny",
        ),
        (
            r#"{"rules":[{"match":"git.*","decision":"deny"},{"match":"git.log","decision":"allow"},{"match":"git.push","decision":"nope"}]}"#,
            r#"rules[2].decision is "nope", where the format takes one of allow, confirm, confirm-human, deny"#,
        ),
        (
            r#"{"rules":[{"match":"git.*","decision":true}]}"#,
            "rules[0].decision is true, where the format takes one of allow, confirm, confirm-human, deny",
        ),
        (
            "{ \"rules\": [ ",
            "not valid JSON: EOF while parsing a list at line 1 column 13",
        ),
    ] {
        assert_eq!(
            PolicyFile::parse(text).map_err(|error| error.to_string()),
            Err(error.to_owned()),
            "{text}"
        );
    }
}

/// What the file holds is shown short and escaped: a key or value from the file
/// never reaches a terminal raw, nor at any length.
#[test]
fn parse_errors_show_the_file_s_text_escaped_and_short() {
    let long = "x".repeat(100);
    let text = format!(r#"{{"rules":[{{"match":"git.*","decision":"{long}"}}]}}"#);
    assert_eq!(
        PolicyFile::parse(&text).unwrap_err().to_string(),
        format!(
            r#"rules[0].decision is "{}"…, where the format takes one of allow, confirm, confirm-human, deny"#,
            "x".repeat(40)
        )
    );
    assert_eq!(
        PolicyFile::parse("{\"rules\":[{\"match\":\"git.*\",\"decision\":\"deny\",\"\\u001b[2J\":1}]}")
            .unwrap_err()
            .to_string(),
        r#"rules[0]["\u001b[2J"] is a field hcpx does not know, where the format takes only match, decision, and subject or group"#
    );
    assert_eq!(
        PolicyFile::parse("{\"defaults\":{\"write\":\"\\u001b[31mallow\"}}")
            .unwrap_err()
            .to_string(),
        r#"defaults.write is "\u001b[31mallow", where the format takes one of allow, confirm, confirm-human, deny"#
    );
}

/// The denial an unusable file causes, as exec and install give it: the file, the
/// field, and how to get out of it.
#[test]
fn a_denial_by_an_unusable_file_says_how_to_recover() {
    let text = r#"{"rules":[{"match":"git.*","decision":"deny"},{"match":"git.log","decision":"allow"},{"match":"git.push","decision":"nope"}]}"#;
    let broken = Layer::Unparsable {
        path: "/h/policy.json".into(),
        error: PolicyFile::parse(text).unwrap_err().to_string(),
    };
    let evaluation = decide("git", "log", Effect::Read, broken, Layer::Absent);
    assert_eq!(evaluation.decision, Decision::Deny);
    assert_eq!(
        decide(
            "git",
            "log",
            Effect::Read,
            user(r#"{"rules":[{"match":"git.log","decision":"deny"}]}"#),
            Layer::Absent
        )
        .denial(),
        "denied by rule `git.log` (rules[0]) in /h/policy.json"
    );
    assert_eq!(
        evaluation.denial(),
        "denied by unparsable policy file /h/policy.json (rules[2].decision is \"nope\", where the format \
         takes one of allow, confirm, confirm-human, deny); every exec and install is denied until the file \
         is fixed: correct that field (docs/policy.md describes the format) or move the file away, then \
         `hcpx policy show` shows the policy in force"
    );
}

#[test]
fn pack_ids_with_dots_split_at_the_last_dot() {
    assert_eq!(
        Matcher::parse("my.pack.run"),
        Ok(Matcher::Command {
            pack: "my.pack".into(),
            command: "run".into()
        })
    );
    assert_eq!(Matcher::parse("my.pack.*"), Ok(Matcher::Pack("my.pack".into())));
}

#[test]
fn access_refuses_agents_always() {
    assert_eq!(access(Principal::Agent).decision, Decision::Deny);
    assert_eq!(access(Principal::Terminal).decision, Decision::Allow);
    assert_eq!(access(Principal::Agent).rule.matcher(), "access.agent");
}

/// The built-in kinds read and serialize as their names always have.
#[test]
fn built_in_rules_keep_their_names() {
    let denied = read_only(Effect::Write).unwrap();
    assert_eq!(denied.rule.kind, RuleKind::ReadOnly);
    assert_eq!(denied.rule.to_string(), "built-in default `read-only`");
    assert_eq!(
        serde_json::to_value(&denied.rule).unwrap(),
        serde_json::json!({ "scope": "builtin", "match": "read-only", "file": null, "index": null })
    );
    assert!(read_only(Effect::Read).is_none());
    let broken = decide(
        "git",
        "log",
        Effect::Read,
        Layer::Unparsable {
            path: "/h/policy.json".into(),
            error: "bad".into(),
        },
        Layer::Absent,
    );
    assert_eq!(
        serde_json::to_value(&broken.rule).unwrap(),
        serde_json::json!({ "scope": "user", "match": "unparsable", "file": "/h/policy.json", "index": null, "error": "bad" })
    );
    let ruled = decide(
        "git",
        "log",
        Effect::Read,
        user(r#"{"rules":[{"match":"git.log","decision":"deny"}]}"#),
        Layer::Absent,
    );
    assert_eq!(
        serde_json::to_value(&ruled.rule).unwrap(),
        serde_json::json!({ "scope": "user", "match": "git.log", "file": "/h/policy.json", "index": 0 })
    );
    assert_eq!(
        ruled.rule.to_string(),
        "rule `git.log` (rules[0]) in /h/policy.json"
    );
}

/// What a confirmation is sealed with changes with what the files say, and only then.
#[test]
fn the_policy_in_force_is_what_the_files_say() {
    let load = |user_text: &str| Policies {
        user: user(user_text),
        project: Layer::Absent,
    };
    let confirm = r#"{"rules":[{"match":"git.*","decision":"confirm"}]}"#;
    let spaced = r#"{ "rules": [ { "match": "git.*", "decision": "confirm" } ] }"#;
    let human = r#"{"rules":[{"match":"git.*","decision":"confirm-human"}]}"#;
    assert_eq!(load(confirm).in_force(), load(spaced).in_force());
    assert_ne!(load(confirm).in_force(), load(human).in_force());
    let elsewhere = Policies {
        user: parsed("/other/policy.json", confirm),
        project: Layer::Absent,
    };
    assert_ne!(load(confirm).in_force(), elsewhere.in_force());
    let absent = Policies {
        user: Layer::Absent,
        project: Layer::Absent,
    };
    assert_ne!(absent.in_force(), load("{}").in_force());
}

#[test]
fn permitted_when_any_command_is_not_denied() {
    let policies = Policies {
        user: user(
            r#"{"rules":[{"match":"git.*","decision":"deny"},{"match":"git.status","decision":"confirm"}]}"#,
        ),
        project: Layer::Absent,
    };
    let commands = [("status", Effect::Read), ("log", Effect::Read)];
    assert!(permits_any("git", commands, None, &policies).is_ok());
    let err = permits_any("git", [("log", Effect::Read)], None, &policies).unwrap_err();
    assert_eq!(err.rule.matcher(), "git.*");
}

#[test]
fn show_lists_sources() {
    let policies = Policies {
        user: user(r#"{"defaults":{"write":"allow"},"rules":[{"match":"git.push","decision":"deny"}]}"#),
        project: project(r#"{"defaults":{"write":"deny","read":"allow"}}"#),
    };
    let shown: Vec<(String, Decision, Scope)> = show(&policies, &[])
        .into_iter()
        .map(|rule| (rule.matcher, rule.decision, rule.scope))
        .collect();
    assert_eq!(
        shown,
        [
            ("defaults.read".to_owned(), Decision::Allow, Scope::Builtin),
            ("defaults.write".to_owned(), Decision::Deny, Scope::Project),
            (
                "defaults.destructive".to_owned(),
                Decision::ConfirmHuman,
                Scope::Builtin
            ),
            ("git.push".to_owned(), Decision::Deny, Scope::User),
        ]
    );
}

/// A project rule looser than what the user layer decides is marked ignored: in full
/// where it matches only such commands, per command where it matches some.
#[test]
fn show_marks_project_rules_that_try_to_loosen() {
    let policies = Policies {
        user: user(r#"{"rules":[{"match":"git.*","decision":"allow"}]}"#),
        project: project(
            r#"{"rules":[{"match":"*.write","decision":"allow"},{"match":"git.push","decision":"deny"},
                {"match":"sqlite.*","decision":"confirm"},{"match":"jq.*","decision":"allow"}]}"#,
        ),
    };
    let commands = [
        ("git", "commit", Effect::Write),
        ("git", "push", Effect::Write),
        ("sqlite", "query", Effect::Read),
        ("sqlite", "exec", Effect::Write),
    ];
    let shown: Vec<(String, Option<Ignored>)> = show(&policies, &commands)
        .into_iter()
        .filter(|rule| rule.scope == Scope::Project)
        .map(|rule| (rule.matcher, rule.ignored))
        .collect();
    assert_eq!(
        shown,
        [
            // Looser than the built-in `confirm` for sqlite.exec; git's writes the
            // user already allows, so there it changes nothing but loosens nothing.
            (
                "*.write".to_owned(),
                Some(Ignored {
                    user_decision: Decision::Confirm,
                    user_rule: "built-in default `defaults.write`".to_owned(),
                    only_for: vec!["sqlite.exec".to_owned()],
                })
            ),
            ("git.push".to_owned(), None),
            // Tightens sqlite.query (read: allow), and equals sqlite.exec's.
            ("sqlite.*".to_owned(), None),
            // A pack no command is known for: judged for every effect.
            (
                "jq.*".to_owned(),
                Some(Ignored {
                    user_decision: Decision::Confirm,
                    user_rule: "built-in default `defaults.write`".to_owned(),
                    only_for: Vec::new(),
                })
            ),
        ]
    );
}

#[test]
fn round_trips_to_json() {
    let text =
        r#"{"defaults":{"read":"allow","write":"confirm"},"rules":[{"match":"git.*","decision":"deny"}]}"#;
    let file = PolicyFile::parse(text).unwrap();
    assert_eq!(PolicyFile::parse(&file.to_json().to_string()).unwrap(), file);
}

mod laws {
    use proptest::prelude::*;

    use super::*;

    fn decision() -> impl Strategy<Value = Decision> {
        prop_oneof![
            Just(Decision::Allow),
            Just(Decision::Confirm),
            Just(Decision::ConfirmHuman),
            Just(Decision::Deny),
        ]
    }

    fn effect() -> impl Strategy<Value = Effect> {
        prop_oneof![Just(Effect::Read), Just(Effect::Write), Just(Effect::Destructive)]
    }

    fn matcher() -> impl Strategy<Value = Matcher> {
        let pack = prop_oneof![Just("a"), Just("b")].prop_map(str::to_owned);
        let command = prop_oneof![Just("x"), Just("y")].prop_map(str::to_owned);
        prop_oneof![
            (pack.clone(), command).prop_map(|(pack, command)| Matcher::Command { pack, command }),
            pack.prop_map(Matcher::Pack),
            effect().prop_map(Matcher::Effect),
        ]
    }

    /// Rules for anyone, the subject `s` and the group `g`.
    fn who() -> impl Strategy<Value = Who> {
        prop_oneof![
            2 => Just(Who::Anyone),
            1 => Just(Who::Subject("s".to_owned())),
            1 => Just(Who::Group("g".to_owned())),
        ]
    }

    /// No OAuth caller, the subject `s` in group `g`, or another subject in none.
    fn caller() -> impl Strategy<Value = Option<Caller>> {
        prop_oneof![
            Just(None),
            Just(Some(Caller {
                subject: "s".to_owned(),
                groups: vec!["g".to_owned()]
            })),
            Just(Some(Caller {
                subject: "t".to_owned(),
                groups: Vec::new()
            })),
        ]
    }

    fn file() -> impl Strategy<Value = PolicyFile> {
        (
            [
                proptest::option::of(decision()),
                proptest::option::of(decision()),
                proptest::option::of(decision()),
            ],
            proptest::collection::vec(
                (matcher(), decision(), who()).prop_map(|(matcher, decision, who)| Rule {
                    matcher,
                    decision,
                    who,
                }),
                0..6,
            ),
        )
            .prop_map(|(defaults, rules)| PolicyFile { defaults, rules })
    }

    fn layer(path: &'static str) -> impl Strategy<Value = Layer> {
        prop_oneof![
            1 => Just(Layer::Absent),
            1 => Just(Layer::Unparsable { path: PathBuf::from(path), error: "bad".to_owned() }),
            6 => file().prop_map(move |file| Layer::Parsed { path: PathBuf::from(path), file }),
        ]
    }

    proptest! {
        /// Whatever the two files say, the project's can only make a call stricter
        /// than the user's policy alone would.
        #[test]
        fn a_project_policy_only_tightens(
            user in layer("/h/policy.json"),
            project in layer("/p/.hcp/policy.json"),
            pack in prop_oneof![Just("a"), Just("b"), Just("c")],
            command in prop_oneof![Just("x"), Just("y"), Just("z")],
            effect in effect(),
            caller in caller(),
        ) {
            let subject = Subject {
                pack,
                command,
                effect,
                caller: caller.as_ref(),
            };
            let alone = evaluate(&subject, &Policies { user: user.clone(), project: Layer::Absent });
            let both = evaluate(&subject, &Policies { user, project });
            prop_assert!(
                both.decision >= alone.decision,
                "{:?} with the project, {:?} without", both, alone
            );
        }
    }
}
