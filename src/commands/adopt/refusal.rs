//! `adopt`'s refusals about a host's file: the one mapping of an [`AdoptError`] from
//! editing it to a [`Failure`], with the file, why, and the command to run again
//! (forced when only `--force` is missing), and the data each carries. Part of
//! [`super`].

use std::path::Path;

use serde::Serialize;

use super::{Request, backup_path};
use crate::adopt::{AdoptError, Found, Position, Syntax};
use crate::error::{Failure, Reason};
use crate::next::Next;

/// A file's data in a refusal: which file.
#[derive(Serialize)]
struct InFile<'a> {
    path: &'a Path,
}

/// Why a host's file cannot be edited, and where in it, as a refusal's data.
#[derive(Serialize)]
struct Uneditable<'a> {
    path: &'a Path,
    #[serde(flatten)]
    why: Why<'a>,
}

#[derive(Serialize)]
#[serde(tag = "why", rename_all = "snake_case")]
enum Why<'a> {
    Unparsable {
        syntax: &'a Syntax,
        at: &'a Option<Position>,
    },
    Duplicate {
        key: &'a [String],
        count: usize,
    },
    NotAnObject {
        key: &'a [String],
    },
    NotATable {
        key: &'a [String],
    },
    NoTomlForm {
        key: [&'a str; 1],
    },
}

/// The one mapping of an [`AdoptError`] from editing a host's file to a [`Failure`],
/// with the file and the command to run again; the rest is the error's own
/// ([`Failure`]'s `From`).
pub(super) fn edit_failure(path: &Path, request: &Request<'_>, error: AdoptError) -> Failure {
    let why = match &error {
        AdoptError::Foreign { key, entry } => return foreign_failure(path, request, key, entry),
        AdoptError::ForeignFile => {
            return Failure::new(
                Reason::InvalidArguments,
                format!(
                    "{} is there and hcpx did not write it; nothing was written. Replace it \
                     with --force (it is kept as {}, and --remove puts it back), or move it",
                    path.display(),
                    backup_path(path).display()
                ),
            )
            .data(InFile { path })
            .next(forced(request));
        }
        // The file was read; what it holds cannot be edited without guessing, so a
        // person fixes the file (a file hcpx needs: io_error): `data` says where.
        AdoptError::Unparsable { syntax, at, .. } => Why::Unparsable { syntax, at },
        AdoptError::Duplicate { path: key, count } => Why::Duplicate { key, count: *count },
        AdoptError::NotAJsonObject => Why::NotAnObject { key: &[] },
        AdoptError::NotAnObject { path: key } => Why::NotAnObject { key },
        AdoptError::NotATable { path: key } => Why::NotATable { key },
        AdoptError::NoTomlForm { key } => Why::NoTomlForm { key: [key] },
        AdoptError::Record { .. } | AdoptError::LinkLoop(_) | AdoptError::State(_) => {
            return Failure::from(error);
        }
    };
    Failure::new(
        Reason::Io,
        format!(
            "{} cannot be edited ({error}); it was left untouched",
            path.display()
        ),
    )
    .data(Uneditable { path, why })
    .next(Next::advice(format!(
        "fix {} by hand, then run {} again",
        path.display(),
        request.command_line(request.write, false)
    )))
}

/// The refusal to replace an entry adopt did not write: the entry as the file has
/// it, and the two ways on.
fn foreign_failure(path: &Path, request: &Request<'_>, key: &str, entry: &Found) -> Failure {
    let mut details = vec![format!("`{key}` now:")];
    details.extend(entry.text.lines().map(|line| format!("  {line}")));
    Failure::new(
        Reason::InvalidArguments,
        format!(
            "{} has a `{key}` entry that hcpx did not write; nothing was written. \
             Replace it with --force (--remove puts it back), or rename or remove that entry",
            path.display()
        ),
    )
    .details(details)
    .data(Foreign {
        path,
        key,
        entry: &entry.text,
    })
    .next(forced(request))
}

/// An entry hcpx did not write, as a refusal's data.
#[derive(Serialize)]
struct Foreign<'a> {
    path: &'a Path,
    key: &'a str,
    entry: &'a str,
}

/// The same adopt, forced, written, with every other flag the caller gave.
fn forced(request: &Request<'_>) -> Next {
    Request {
        force: true,
        ..*request
    }
    .command_line(true, false)
}
