//! The pack validator on arbitrary text: `manifest::parse` and
//! `catalog::parse_pack`. The input is `hcp.json`, then optionally a NUL and
//! `SKILL.md`. Neither may panic, and their verdicts must be consistent.

#![no_main]

use hcpx::catalog::parse_pack;
use hcpx::manifest::{self, MAX_DESCRIPTION, MAX_TIMEOUT_MS, Manifest};
use hcpx::template::{is_name, is_pack_id};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (manifest_text, skill_text) = match text.split_once('\0') {
        Some((manifest, skill)) => (manifest, Some(skill)),
        None => (text, None),
    };

    let parsed = manifest::parse(manifest_text);
    match &parsed {
        Ok(manifest) => holds(manifest),
        Err(problems) => assert!(!problems.is_empty(), "refused without a problem"),
    }

    // The validator reads the JSON value, not the text: the same value written
    // out again must get the very same verdict.
    if let Ok(value) = serde_json::from_str::<serde_json::Value>(manifest_text) {
        let again = manifest::parse(&serde_json::to_string_pretty(&value).unwrap());
        assert_eq!(format!("{parsed:?}"), format!("{again:?}"), "verdict changed");
    }

    // A pack is never better than its manifest, and a refusal lists why.
    for bin_missing in [false, true] {
        let pack = parse_pack(manifest_text, skill_text, |file| {
            bin_missing.then(|| format!("./{file} is missing"))
        });
        match (&parsed, &pack) {
            (Err(_), Ok(_)) => panic!("pack accepted with a refused manifest"),
            (_, Err(problems)) => assert!(!problems.is_empty(), "pack refused without a problem"),
            (Ok(manifest), Ok((pack, skill))) => {
                assert_eq!(format!("{manifest:?}"), format!("{pack:?}"));
                assert_eq!(skill.name, manifest.id);
                assert!(
                    !(bin_missing && manifest.bin_file().is_some()),
                    "missing bin file accepted"
                );
                assert!(skill_text.is_some());
            }
        }
    }
});

/// What every manifest the validator accepts holds: the rules docs/packs.md gives for
/// `hcp.json` (id, description, `bin`, timeout, commands, parameters and `argv`).
fn holds(manifest: &Manifest) {
    assert!(is_pack_id(&manifest.id));
    assert!(!manifest.description.trim().is_empty());
    assert!(manifest.description.chars().count() <= MAX_DESCRIPTION);
    assert!(!manifest.bin.is_empty());
    assert!(manifest.bin.iter().all(|arg| !arg.contains(['\0', '{', '}'])));
    assert!((1..=MAX_TIMEOUT_MS).contains(&manifest.sandbox.timeout_ms));
    assert!(!manifest.commands.is_empty());
    for command in &manifest.commands {
        assert!(is_name(&command.name));
        for param in &command.params {
            assert!(is_name(&param.name));
            assert!(param.max_length >= 1);
            // `pattern` is matched whole: the author's text must be a regular
            // expression by itself, not one that only parses once wrapped in
            // the anchors (`a)|(b` would turn `^(?:a)|(b)$` into a prefix match).
            if let Some(source) = &param.pattern_source {
                assert!(
                    regex::Regex::new(source).is_ok(),
                    "pattern {source:?} is not a regex by itself"
                );
            }
            // A default is a value the parameter itself accepts.
            for value in param.default.iter().flatten() {
                assert_eq!(param.check(value), Ok(()), "default {value:?} of {}", param.name);
            }
            // Every declared parameter is used in argv.
            assert!(
                command
                    .argv
                    .iter()
                    .any(|slot| match slot {
                        manifest::Slot::Element(element) => {
                            element.params().any(|(name, _)| name == param.name)
                        }
                        manifest::Slot::Separated { param: name, .. }
                        | manifest::Slot::Flag { param: name, .. } => *name == param.name,
                    }),
                "{} unused",
                param.name
            );
        }
    }
}
