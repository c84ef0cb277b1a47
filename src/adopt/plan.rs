//! The plan: what adopt will write into one host file, and what its record will say
//! then. An entry adopt did not write is replaced only when forced; taking adopt's
//! entry out puts back what was under the key before, or the file's old bytes (from
//! `NAME.bak`) when nothing but adopt changed the file.

use serde_json::Value;

use super::{AdoptError, Format, containers, edit, edit_keeping, find, record};

/// One key adopt sets or takes out in one file.
pub struct KeyEdit<'a> {
    pub format: Format,
    pub path: &'a [String],
    pub key: &'a str,
    /// The entry to write; `None` takes adopt's entry out.
    pub value: Option<&'a Value>,
    /// Replace an entry adopt did not write.
    pub force: bool,
}

/// What a [`KeyEdit`] does to a file and to the record.
#[derive(Debug, PartialEq)]
pub struct Rewrite {
    /// The file's new text; `None` deletes it (adopt created it, and nothing else
    /// changed it since).
    pub new: Option<String>,
    /// The record once the edit is written.
    pub record: record::Record,
    /// `--remove` found an entry under the key that adopt did not write, and left it.
    pub kept_foreign: bool,
}

/// Plans `change` on `file` (its record name, links followed), whose text is `old`
/// (`None`: no file yet); `backup` is the text of its `NAME.bak`, when there is one.
pub fn plan(
    recorded: &record::Record,
    file: &str,
    old: Option<&str>,
    backup: Option<&str>,
    change: &KeyEdit<'_>,
) -> Result<Rewrite, AdoptError> {
    use record::{EntryRecord, FileRecord, Original, Previous, digest};
    let text = old.unwrap_or("");
    let found = find(change.format, text, change.path, change.key)?;
    let own = recorded
        .entry(file, change.path, change.key)
        .filter(|entry| found.as_ref().is_some_and(|found| found.value == entry.wrote));
    let unchanged = |kept_foreign| Rewrite {
        new: Some(text.to_owned()),
        record: recorded.clone(),
        kept_foreign,
    };
    let mut record = recorded.clone();
    let Some(value) = change.value else {
        // Take out adopt's own entry only, putting back what was there before.
        let Some(own) = own else {
            return Ok(unchanged(found.is_some()));
        };
        let previous = own.previous.as_ref().map(|previous| &previous.value);
        let mut new = Some(edit_keeping(
            change.format,
            text,
            change.path,
            change.key,
            previous,
            own.path_existed,
        )?);
        if let Some(file_record) = record.files.get_mut(file) {
            file_record
                .entries
                .retain(|entry| !(entry.path == change.path && entry.key == change.key));
            let only_adopt = digest(text.as_bytes()) == file_record.after;
            if file_record.entries.is_empty() {
                match (only_adopt, &file_record.original) {
                    (true, Some(Original::Absent)) => new = None,
                    (true, Some(Original::Sha256(sum)))
                        if backup.is_some_and(|backup| digest(backup.as_bytes()) == *sum) =>
                    {
                        new = backup.map(str::to_owned);
                    }
                    _ => {}
                }
                record.files.remove(file);
            } else {
                if !only_adopt {
                    file_record.original = None;
                }
                file_record.after = digest(new.as_deref().unwrap_or_default().as_bytes());
            }
        }
        return Ok(Rewrite {
            new,
            record,
            kept_foreign: false,
        });
    };
    if found.as_ref().is_some_and(|found| found.value == *value) {
        return Ok(unchanged(false));
    }
    let path_existed = match own {
        Some(own) => own.path_existed,
        None => containers(change.format, text, change.path)?,
    };
    let previous = match (own, found) {
        (Some(own), _) => own.previous.clone(),
        (None, Some(found)) if change.force => Some(Previous { value: found.value }),
        (None, Some(found)) => {
            return Err(AdoptError::Foreign {
                key: change.key.to_owned(),
                entry: found,
            });
        }
        (None, None) => None,
    };
    let new = edit(change.format, text, change.path, change.key, Some(value))?;
    let before = digest(text.as_bytes());
    if old.is_none() {
        // The file is gone: what adopt noted about it no longer holds, and a new
        // file holds nothing of a person's.
        record.files.remove(file);
    }
    let file_record = record.files.entry(file.to_owned()).or_insert_with(|| FileRecord {
        original: Some(match old {
            None => Original::Absent,
            Some(_) => Original::Sha256(before.clone()),
        }),
        after: before.clone(),
        entries: Vec::new(),
    });
    if file_record.after != before {
        // Someone else changed the file since adopt wrote it: its old bytes can no
        // longer simply come back.
        file_record.original = None;
    }
    file_record.after = digest(new.as_bytes());
    file_record
        .entries
        .retain(|entry| !(entry.path == change.path && entry.key == change.key));
    file_record.entries.push(EntryRecord {
        path: change.path.to_vec(),
        key: change.key.to_owned(),
        wrote: value.clone(),
        previous,
        path_existed,
    });
    Ok(Rewrite {
        new: Some(new),
        record,
        kept_foreign: false,
    })
}

/// Plans a file adopt writes whole (the hcpx skill of `--native`), `file` being its
/// record name: `ours` is what adopt writes, `old` the file now (`None`: none), and
/// `backup` its `NAME.bak`. A file there that adopt did not write is replaced only
/// when forced; `remove` takes out only adopt's own file (or one identical to it),
/// giving back the file that was there before when `NAME.bak` still holds it.
pub fn plan_file(
    recorded: &record::Record,
    file: &str,
    old: Option<&str>,
    backup: Option<&str>,
    ours: &str,
    remove: bool,
    force: bool,
) -> Result<Rewrite, AdoptError> {
    use record::{FileRecord, Original, digest};
    let own_record = recorded.files.get(file);
    let is_own =
        |text: &str| text == ours || own_record.is_some_and(|own| own.after == digest(text.as_bytes()));
    let mut record = recorded.clone();
    let unchanged = |record, kept_foreign| Rewrite {
        new: old.map(str::to_owned),
        record,
        kept_foreign,
    };
    if remove {
        let Some(old) = old else {
            record.files.remove(file);
            return Ok(unchanged(record, false));
        };
        if !is_own(old) {
            // A person's file, or adopt's since changed by someone: theirs now.
            record.files.remove(file);
            return Ok(unchanged(record, true));
        }
        let original = own_record.and_then(|own| own.original.clone());
        record.files.remove(file);
        let new = match (original, backup) {
            (Some(Original::Sha256(sum)), Some(backup)) if digest(backup.as_bytes()) == sum => {
                Some(backup.to_owned())
            }
            _ => None,
        };
        return Ok(Rewrite {
            new,
            record,
            kept_foreign: false,
        });
    }
    if old == Some(ours) {
        return Ok(unchanged(record, false));
    }
    let original = match (old, own_record) {
        (Some(old), Some(own)) if own.after == digest(old.as_bytes()) => own.original.clone(),
        (Some(_), _) if !force => return Err(AdoptError::ForeignFile),
        (Some(old), _) => Some(Original::Sha256(digest(old.as_bytes()))),
        (None, _) => Some(Original::Absent),
    };
    record.files.insert(
        file.to_owned(),
        FileRecord {
            original,
            after: digest(ours.as_bytes()),
            entries: Vec::new(),
        },
    );
    Ok(Rewrite {
        new: Some(ours.to_owned()),
        record,
        kept_foreign: false,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::adopt::Found;

    fn path(segments: &[&str]) -> Vec<String> {
        segments.iter().map(|s| (*s).to_owned()).collect()
    }

    fn ours() -> Value {
        json!({ "command": "hcpx", "args": ["mcp"] })
    }

    fn key_edit<'a>(servers: &'a [String], value: Option<&'a Value>, force: bool) -> KeyEdit<'a> {
        KeyEdit {
            format: Format::Json,
            path: servers,
            key: "hcp",
            value,
            force,
        }
    }

    #[test]
    fn plan_refuses_a_foreign_entry_and_forcing_records_it() {
        use record::{EntryRecord, FileRecord, Original, Previous, Record, digest};
        let servers = path(&["mcpServers"]);
        let ours = ours();
        let original = "{\"mcpServers\": {\"hcp\": {\"command\": \"old\"}}}\n";
        let refused = plan(
            &Record::default(),
            "/f",
            Some(original),
            None,
            &key_edit(&servers, Some(&ours), false),
        );
        let Err(AdoptError::Foreign { key, entry }) = refused else {
            panic!("{refused:?}");
        };
        assert_eq!(key, "hcp");
        assert_eq!(
            entry,
            Found {
                value: json!({ "command": "old" }),
                text: "{\"command\": \"old\"}".to_owned()
            }
        );
        let forced = plan(
            &Record::default(),
            "/f",
            Some(original),
            None,
            &key_edit(&servers, Some(&ours), true),
        )
        .unwrap();
        let new = forced.new.clone().unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&new).unwrap(),
            json!({ "mcpServers": { "hcp": ours } })
        );
        let mut expected = Record::default();
        expected.files.insert(
            "/f".to_owned(),
            FileRecord {
                original: Some(Original::Sha256(digest(original.as_bytes()))),
                after: digest(new.as_bytes()),
                entries: vec![EntryRecord {
                    path: servers.clone(),
                    key: "hcp".to_owned(),
                    wrote: ours.clone(),
                    previous: Some(Previous {
                        value: json!({ "command": "old" }),
                    }),
                    path_existed: 1,
                }],
            },
        );
        assert_eq!(
            forced,
            Rewrite {
                new: Some(new.clone()),
                record: expected.clone(),
                kept_foreign: false
            }
        );
        // Adopt's own now: writing it again changes nothing.
        assert_eq!(
            plan(
                &expected,
                "/f",
                Some(&new),
                None,
                &key_edit(&servers, Some(&ours), false)
            )
            .unwrap(),
            Rewrite {
                new: Some(new.clone()),
                record: expected.clone(),
                kept_foreign: false
            }
        );
        // Removing with the backup intact gives the old bytes back.
        assert_eq!(
            plan(
                &expected,
                "/f",
                Some(&new),
                Some(original),
                &key_edit(&servers, None, false)
            )
            .unwrap(),
            Rewrite {
                new: Some(original.to_owned()),
                record: Record::default(),
                kept_foreign: false
            }
        );
        // Without it (or with another), the previous entry goes back under the key.
        let restored = plan(
            &expected,
            "/f",
            Some(&new),
            Some("{}"),
            &key_edit(&servers, None, false),
        )
        .unwrap();
        assert_eq!(
            restored.new.as_deref(),
            Some("{\"mcpServers\": {\"hcp\": {\n      \"command\": \"old\"\n    }}}\n")
        );
        assert_eq!(restored.record, Record::default());
        // The person's entry is not adopt's: removing again leaves it and says so.
        let text = restored.new.unwrap_or_default();
        assert_eq!(
            plan(
                &Record::default(),
                "/f",
                Some(&text),
                None,
                &key_edit(&servers, None, false)
            )
            .unwrap(),
            Rewrite {
                new: Some(text.clone()),
                record: Record::default(),
                kept_foreign: true
            }
        );
    }

    #[test]
    fn plan_file_writes_only_over_its_own_and_gives_the_original_back() {
        use record::{FileRecord, Original, Record, digest};
        let file = "/h/skills/hcpx/SKILL.md";
        let (ours, theirs) = ("ours\n", "theirs\n");
        let empty = Record::default();
        // Nothing there: written, recorded as created.
        let made = plan_file(&empty, file, None, None, ours, false, false).unwrap();
        let created = FileRecord {
            original: Some(Original::Absent),
            after: digest(ours.as_bytes()),
            entries: Vec::new(),
        };
        assert_eq!(made.new.as_deref(), Some(ours));
        assert_eq!(made.record.files, [(file.to_owned(), created.clone())].into());
        // A person's file: refused, then forced with its digest kept.
        assert!(matches!(
            plan_file(&empty, file, Some(theirs), None, ours, false, false),
            Err(AdoptError::ForeignFile)
        ));
        let forced = plan_file(&empty, file, Some(theirs), None, ours, false, true).unwrap();
        let over = FileRecord {
            original: Some(Original::Sha256(digest(theirs.as_bytes()))),
            ..created.clone()
        };
        assert_eq!(forced.record.files, [(file.to_owned(), over)].into());
        // An older version adopt wrote is its own: replaced, the original kept.
        let older = Record {
            files: [(
                file.to_owned(),
                FileRecord {
                    after: digest(b"old ours\n"),
                    ..forced.record.files[file].clone()
                },
            )]
            .into(),
            ..Record::default()
        };
        let updated = plan_file(&older, file, Some("old ours\n"), None, ours, false, false).unwrap();
        assert_eq!(updated.record, forced.record);
        // Removing: the backup comes back only when it is the recorded original.
        let back = plan_file(&forced.record, file, Some(ours), Some(theirs), ours, true, false).unwrap();
        assert_eq!(
            (back.new.as_deref(), back.record.files.len(), back.kept_foreign),
            (Some(theirs), 0, false)
        );
        let gone = plan_file(
            &forced.record,
            file,
            Some(ours),
            Some("other\n"),
            ours,
            true,
            false,
        )
        .unwrap();
        assert_eq!((gone.new, gone.kept_foreign), (None, false));
        let gone = plan_file(&made.record, file, Some(ours), None, ours, true, false).unwrap();
        assert_eq!((gone.new, gone.record.files.len()), (None, 0));
        // Edited since: left, and no longer recorded.
        let kept = plan_file(&made.record, file, Some("edited\n"), None, ours, true, false).unwrap();
        assert_eq!(
            (kept.new.as_deref(), kept.record.files.len(), kept.kept_foreign),
            (Some("edited\n"), 0, true)
        );
    }

    #[test]
    fn plan_deletes_a_file_adopt_made_unless_someone_else_changed_it() {
        use record::{Original, Record};
        let servers = path(&["mcpServers"]);
        let ours = ours();
        let made = plan(
            &Record::default(),
            "/f",
            None,
            None,
            &key_edit(&servers, Some(&ours), false),
        )
        .unwrap();
        assert_eq!(made.record.files["/f"].original, Some(Original::Absent));
        let text = made.new.unwrap_or_default();
        let removed = plan(
            &made.record,
            "/f",
            Some(&text),
            None,
            &key_edit(&servers, None, false),
        )
        .unwrap();
        assert_eq!(removed.new, None, "deleted");
        // Deleted by a person and made again: adopt made it, again.
        let again = plan(
            &made.record,
            "/f",
            None,
            None,
            &key_edit(&servers, Some(&ours), false),
        )
        .unwrap();
        assert_eq!(again.record, made.record);
        // A second key in the file was changed by a person: only the entry goes.
        let edited = text.replacen('{', "{\"theme\": \"dark\",", 1);
        let removed = plan(
            &made.record,
            "/f",
            Some(&edited),
            None,
            &key_edit(&servers, None, false),
        )
        .unwrap();
        assert_eq!(removed.new.as_deref(), Some("{\"theme\": \"dark\"\n}\n"));
        assert_eq!(removed.record, Record::default());
    }
}
