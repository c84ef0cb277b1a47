//! Reading the policy files, the engine's only I/O: the user's and the project's
//! file each as a [`Layer`] (absent, parsed, or unparsable, which denies), and the
//! policy in force that a confirmation is sealed with.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::rules::PolicyFile;

/// One policy file as found on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Layer {
    Absent,
    Parsed { path: PathBuf, file: PolicyFile },
    Unparsable { path: PathBuf, error: String },
}

impl Layer {
    /// The layer as `doctor` and `policy show` report it in their data: its status,
    /// its path, and why it cannot be parsed.
    pub(crate) fn to_json(&self) -> Value {
        match self {
            Self::Absent => serde_json::json!({ "status": "absent" }),
            Self::Parsed { path, .. } => serde_json::json!({ "status": "parsed", "path": path }),
            Self::Unparsable { path, error } => {
                serde_json::json!({ "status": "unparsable", "path": path, "error": error })
            }
        }
    }
}

/// The user's and the project's policy, as loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Policies {
    pub user: Layer,
    pub project: Layer,
}

impl Policies {
    /// The policy in force as bytes: each layer's path and what it says (its rules
    /// and defaults, or why it cannot be parsed). Two loads give the same bytes
    /// exactly when they decide alike; a confirmation is sealed with them.
    pub(crate) fn in_force(&self) -> Vec<u8> {
        let layer = |layer: &Layer| match layer {
            Layer::Absent => Value::Null,
            Layer::Parsed { path, file } => serde_json::json!({ "path": path, "file": file.to_json() }),
            Layer::Unparsable { path, error } => serde_json::json!({ "path": path, "error": error }),
        };
        serde_json::to_vec(&[layer(&self.user), layer(&self.project)]).unwrap_or_default()
    }
}

/// Largest policy file read; a larger one denies.
const MAX_POLICY: u64 = 1024 * 1024;

/// Reads one policy file. A missing file is [`Layer::Absent`]; anything else that
/// goes wrong is [`Layer::Unparsable`], which denies: a dangling link, a folder, a
/// FIFO or a device (opened without blocking, so a FIFO cannot hang the call), a
/// file that cannot be read or is too large.
pub(crate) fn load_layer(path: Option<PathBuf>) -> Layer {
    let Some(path) = path else { return Layer::Absent };
    match read_policy(&path) {
        Ok(None) => Layer::Absent,
        Err(error) => Layer::Unparsable { path, error },
        Ok(Some(text)) => match PolicyFile::parse(&text) {
            Ok(file) => Layer::Parsed { path, file },
            Err(error) => Layer::Unparsable {
                path,
                error: error.to_string(),
            },
        },
    }
}

/// The file's text; `None` when nothing at all is at that path.
fn read_policy(path: &Path) -> Result<Option<String>, String> {
    use std::io::Read as _;
    match std::fs::symlink_metadata(path) {
        Err(error)
            if matches!(
                error.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
            ) =>
        {
            return Ok(None);
        }
        Err(error) => return Err(format!("cannot be read: {error}")),
        Ok(_) => {}
    }
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32);
    }
    let file = options.open(path).map_err(|error| match error.kind() {
        std::io::ErrorKind::NotFound => "is a link to nothing; fix or remove it".to_owned(),
        _ => format!("cannot be read: {error}"),
    })?;
    let meta = file
        .metadata()
        .map_err(|error| format!("cannot be read: {error}"))?;
    if !meta.is_file() {
        return Err(
            "is not a regular file (a folder, FIFO or device); a policy must be a regular file".to_owned(),
        );
    }
    if meta.len() > MAX_POLICY {
        return Err("is larger than 1 MiB".to_owned());
    }
    let mut text = String::new();
    file.take(MAX_POLICY + 1)
        .read_to_string(&mut text)
        .map_err(|error| format!("cannot be read: {error}"))?;
    Ok(Some(text))
}

pub(crate) fn load(user: PathBuf, project: Option<PathBuf>) -> Policies {
    Policies {
        user: load_layer(Some(user)),
        project: load_layer(project),
    }
}
