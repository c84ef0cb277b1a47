//! The text of `hcpx bind`, `unbind` and `bindings`, and the rows `bindings` lists.
//! Part of [`crate::render`], which re-exports it.

use serde::Serialize;

use crate::binding::Identity;

/// What `hcpx bind PACK KEY` asks for at a terminal.
pub(crate) fn secret_prompt(pack: &str, key: &str) -> String {
    format!("Value for {pack} {key} (not shown): ")
}

/// `hcpx bind PACK KEY`: `from_env` is the variable bound, `None` for a value.
pub(crate) fn bind_text(pack: &str, key: &str, from_env: Option<&str>) -> String {
    let how = match from_env {
        Some(var) => format!("to the environment variable {var}, read at each exec"),
        None => "(the value is stored in HCP_HOME/bindings.json, mode 0600)".to_owned(),
    };
    format!("bound {pack} {key} {how}\n")
}

/// `hcpx bind PACK KEY --keep`: `kept` is the pack installed now and the one the
/// binding was given to before (`None` when unrecorded), or `None` when the
/// binding already was for the pack installed now.
pub(crate) fn keep_text(pack: &str, key: &str, kept: Option<(&Identity, Option<&Identity>)>) -> String {
    match kept {
        Some((now, before)) => {
            let was = before.map_or_else(|| "an unrecorded pack".to_owned(), ToString::to_string);
            format!("kept {pack} {key} for the {pack} installed now, from {now} (it was given to {was})\n")
        }
        None => format!("{pack} {key} is already bound for the {pack} installed now; nothing changed\n"),
    }
}

/// `hcpx unbind PACK KEY`.
pub(crate) fn unbind_text(pack: &str, key: &str, removed: bool) -> String {
    if removed {
        format!("unbound {pack} {key}\n")
    } else {
        format!("{pack} {key} was not bound\n")
    }
}

/// One row of `hcpx bindings`: a binding a pack declares, or one the store holds.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct BindingRow {
    pub pack: String,
    pub key: String,
    pub declared: bool,
    pub required: bool,
    pub set: bool,
    /// `value`, `env` or null; never the value itself.
    pub source: Option<&'static str>,
    /// How the pack's CLI receives it (`env`, `file` or `stdin`, the manifest's
    /// `as`); null when the pack no longer declares it.
    #[serde(rename = "as")]
    pub delivery: Option<&'static str>,
    pub variable: Option<String>,
    /// Why the binding is held back from the pack installed now (it was given to
    /// another pack with this id), or null.
    pub held_back: Option<String>,
}

/// `hcpx bindings`: one line per row, with what is missing and how to fix it.
pub(crate) fn bindings_text(rows: &[BindingRow]) -> String {
    let mut text = String::new();
    if rows.is_empty() {
        text.push_str("No pack declares a binding, and none is stored.\n");
    }
    for row in rows {
        let state = match (row.set, &row.held_back, &row.variable) {
            (_, Some(why), _) => format!(
                "HELD BACK ({why}); a person who trusts this pack runs: hcpx bind {} {} --keep",
                row.pack, row.key
            ),
            (true, None, Some(var)) => format!("set (from ${var})"),
            (false, None, Some(var)) => format!("NOT set (${var} is empty or unset)"),
            (true, None, None) => "set".to_owned(),
            (false, None, None) if row.required => "NOT set (required)".to_owned(),
            (false, None, None) => "not set".to_owned(),
        };
        let note = if row.declared {
            ""
        } else {
            "  (no longer declared by the pack)"
        };
        let delivery = row.delivery.map(|how| format!(" (as {how})")).unwrap_or_default();
        text.push_str(&format!("{} {}{delivery}: {state}{note}\n", row.pack, row.key));
    }
    text
}
