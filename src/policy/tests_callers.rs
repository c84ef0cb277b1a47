//! Rules that name an OAuth caller (`subject`, `group`): whom they apply to, how
//! they rank, how they are written back and shown, asserting whole values.

use std::path::PathBuf;

use super::evaluate::RuleRef;
use super::rules::Scope;
use super::*;
use crate::manifest::Effect;

fn user(text: &str) -> Layer {
    Layer::Parsed {
        path: PathBuf::from("/h/policy.json"),
        file: PolicyFile::parse(text).unwrap(),
    }
}

fn caller(subject: &str, groups: &[&str]) -> Caller {
    Caller {
        subject: subject.to_owned(),
        groups: groups.iter().map(|group| (*group).to_owned()).collect(),
    }
}

fn decide(text: &str, pack: &str, command: &str, effect: Effect, who: Option<&Caller>) -> Evaluation {
    evaluate(
        &Subject {
            pack,
            command,
            effect,
            caller: who,
        },
        &Policies {
            user: user(text),
            project: Layer::Absent,
        },
    )
}

/// `rules[index]` of the user file, for `who`.
fn rule(matcher: &str, index: usize, who: Who) -> RuleRef {
    RuleRef {
        scope: Scope::User,
        file: Some(PathBuf::from("/h/policy.json")),
        kind: RuleKind::Rule {
            matcher: Matcher::parse(matcher).unwrap(),
            index,
            who,
        },
    }
}

const TEAM: &str = r#"{"rules":[
    {"match":"git.push","decision":"deny"},
    {"match":"git.push","group":"release","decision":"confirm"},
    {"match":"git.push","subject":"alice","decision":"allow"},
    {"match":"*.write","group":"admins","decision":"allow"}]}"#;

#[test]
fn a_rule_for_a_subject_or_group_applies_to_that_caller_only() {
    let alice = caller("alice", &[]);
    let bob = caller("bob", &["release"]);
    let carol = caller("carol", &["admins"]);
    let push = |who| decide(TEAM, "git", "push", Effect::Write, who);
    assert_eq!(
        push(Some(&alice)),
        Evaluation {
            decision: Decision::Allow,
            rule: rule("git.push", 2, Who::Subject("alice".into())),
        }
    );
    assert_eq!(
        push(Some(&bob)),
        Evaluation {
            decision: Decision::Confirm,
            rule: rule("git.push", 1, Who::Group("release".into())),
        }
    );
    // carol's group has a rule, but for `*.write`: `git.push` is more specific.
    for who in [Some(&carol), None] {
        assert_eq!(
            push(who),
            Evaluation {
                decision: Decision::Deny,
                rule: rule("git.push", 0, Who::Anyone),
            }
        );
    }
    assert_eq!(
        decide(TEAM, "git", "commit", Effect::Write, Some(&carol)),
        Evaluation {
            decision: Decision::Allow,
            rule: rule("*.write", 3, Who::Group("admins".into())),
        }
    );
    // Without an OAuth caller (a terminal, stdio, a token server), no named rule applies.
    assert_eq!(
        decide(TEAM, "git", "commit", Effect::Write, None).rule.kind,
        RuleKind::Default {
            effect: Effect::Write
        }
    );
}

#[test]
fn a_subject_outranks_a_group_and_a_group_anyone_and_then_the_strictest_wins() {
    let both = caller("alice", &["release", "admins"]);
    assert_eq!(
        decide(TEAM, "git", "push", Effect::Write, Some(&both)).rule,
        rule("git.push", 2, Who::Subject("alice".into()))
    );
    let two_groups = r#"{"rules":[
        {"match":"git.*","group":"a","decision":"allow"},
        {"match":"git.*","group":"b","decision":"confirm-human"}]}"#;
    assert_eq!(
        decide(
            two_groups,
            "git",
            "log",
            Effect::Read,
            Some(&caller("x", &["a", "b"]))
        ),
        Evaluation {
            decision: Decision::ConfirmHuman,
            rule: rule("git.*", 1, Who::Group("b".into())),
        }
    );
    // A subject's own name is no group: the names are matched exactly.
    assert_eq!(
        decide(two_groups, "git", "log", Effect::Read, Some(&caller("a", &["A"])))
            .rule
            .kind,
        RuleKind::Default { effect: Effect::Read }
    );
}

#[test]
fn the_project_can_only_tighten_a_callers_rule() {
    let alice = caller("alice", &[]);
    let policies = |project: &str| Policies {
        user: user(TEAM),
        project: Layer::Parsed {
            path: PathBuf::from("/p/.hcp/policy.json"),
            file: PolicyFile::parse(project).unwrap(),
        },
    };
    let subject = Subject {
        pack: "git",
        command: "push",
        effect: Effect::Write,
        caller: Some(&alice),
    };
    let tighter = evaluate(
        &subject,
        &policies(r#"{"rules":[{"match":"git.push","subject":"alice","decision":"confirm"}]}"#),
    );
    assert_eq!(tighter.decision, Decision::Confirm);
    assert_eq!(tighter.rule.scope, Scope::Project);
    let looser = evaluate(
        &Subject {
            caller: Some(&caller("bob", &[])),
            ..subject
        },
        &policies(r#"{"rules":[{"match":"git.push","subject":"bob","decision":"allow"}]}"#),
    );
    assert_eq!(looser.decision, Decision::Deny);
    assert_eq!(looser.rule, rule("git.push", 0, Who::Anyone));
}

#[test]
fn the_rule_behind_a_decision_names_its_caller() {
    let evaluation = decide(TEAM, "git", "push", Effect::Write, Some(&caller("alice", &[])));
    assert_eq!(
        serde_json::to_value(&evaluation.rule).unwrap(),
        serde_json::json!({ "scope": "user", "match": "git.push", "subject": "alice",
                            "file": "/h/policy.json", "index": 2 })
    );
    assert_eq!(
        evaluation.rule.to_string(),
        "rule `git.push` for subject alice (rules[2]) in /h/policy.json"
    );
    let group = decide(
        TEAM,
        "git",
        "push",
        Effect::Write,
        Some(&caller("bob", &["release"])),
    );
    assert_eq!(
        serde_json::to_value(&group.rule).unwrap(),
        serde_json::json!({ "scope": "user", "match": "git.push", "group": "release",
                            "file": "/h/policy.json", "index": 1 })
    );
}

#[test]
fn a_rule_names_one_caller_by_a_non_empty_string() {
    let error = |text: &str| PolicyFile::parse(text).unwrap_err().to_string();
    assert_eq!(
        error(r#"{"rules":[{"match":"git.*","decision":"deny","subject":"a","group":"b"}]}"#),
        "rules[0].group is beside a subject, where the format takes a subject or a group, not both: write two rules"
    );
    assert_eq!(
        error(r#"{"rules":[{"match":"git.*","decision":"deny","subject":""}]}"#),
        r#"rules[0].subject is "", where the format takes a string: an OAuth subject or group, not empty"#
    );
    assert_eq!(
        error(r#"{"rules":[{"match":"git.*","decision":"deny","group":["a"]}]}"#),
        "rules[0].group is an array, where the format takes a string: an OAuth subject or group, not empty"
    );
    assert_eq!(
        error(r#"{"rules":[{"match":"git.*","decision":"deny","user":"a"}]}"#),
        "rules[0].user is a field hcpx does not know, where the format takes only match, decision, and subject or group"
    );
}

#[test]
fn round_trips_with_its_callers() {
    let file = PolicyFile::parse(TEAM).unwrap();
    assert_eq!(
        file.to_json(),
        serde_json::json!({ "defaults": {}, "rules": [
            { "match": "git.push", "decision": "deny" },
            { "match": "git.push", "decision": "confirm", "group": "release" },
            { "match": "git.push", "decision": "allow", "subject": "alice" },
            { "match": "*.write", "decision": "allow", "group": "admins" },
        ] })
    );
    assert_eq!(PolicyFile::parse(&file.to_json().to_string()).unwrap(), file);
}

#[test]
fn show_lists_whom_a_rule_is_for_and_judges_a_project_rule_for_that_caller() {
    let policies = Policies {
        user: user(TEAM),
        project: Layer::Parsed {
            path: PathBuf::from("/p/.hcp/policy.json"),
            file: PolicyFile::parse(
                r#"{"rules":[{"match":"git.push","subject":"alice","decision":"confirm"},
                             {"match":"git.push","subject":"bob","decision":"allow"}]}"#,
            )
            .unwrap(),
        },
    };
    let shown = serde_json::to_value(show(&policies, &[("git", "push", Effect::Write)])).unwrap();
    let rules: Vec<_> = shown.as_array().unwrap()[3..].to_vec();
    assert_eq!(
        serde_json::Value::Array(rules),
        serde_json::json!([
            { "match": "git.push", "decision": "deny", "scope": "user", "file": "/h/policy.json" },
            { "match": "git.push", "decision": "confirm", "group": "release", "scope": "user", "file": "/h/policy.json" },
            { "match": "git.push", "decision": "allow", "subject": "alice", "scope": "user", "file": "/h/policy.json" },
            { "match": "*.write", "decision": "allow", "group": "admins", "scope": "user", "file": "/h/policy.json" },
            // Tighter than alice's own user rule: in force.
            { "match": "git.push", "decision": "confirm", "subject": "alice", "scope": "project", "file": "/p/.hcp/policy.json" },
            // Looser than what the user layer decides for bob (deny, for anyone).
            { "match": "git.push", "decision": "allow", "subject": "bob", "scope": "project", "file": "/p/.hcp/policy.json",
              "ignored": { "userDecision": "deny", "userRule": "rule `git.push` (rules[0]) in /h/policy.json", "onlyFor": [] } },
        ])
    );
}
