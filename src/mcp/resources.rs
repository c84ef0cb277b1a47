//! The MCP resources (see docs/mcp.md): `hcp://catalog`, `hcp://help`, one
//! `hcp://skill/{pack_id}` a pack and `hcp://output/{id}` for kept outputs, read
//! through the same command tree as the tool. [`super::Changes`] tells clients
//! when their list changes.

use rmcp::model::ResourceTemplate;
use serde_json::{Value, json};

use super::{Server, fit, help};

impl Server {
    /// A resource's text and MIME type, or `None` when there is no such resource.
    /// `owner` is the OAuth caller's subject: a kept output is only its own.
    pub async fn resource(&self, uri: &str, owner: Option<&str>) -> Option<(String, &'static str)> {
        let run = |argv: &[&str]| {
            let argv: Vec<String> = argv.iter().map(|word| (*word).to_owned()).collect();
            let ctx = self.base.clone();
            async move { crate::execute(argv, &ctx).await }
        };
        match uri {
            "hcp://catalog" => {
                let executed = run(&["--json", "search", "--limit", "10000"]).await;
                let data = executed.envelope.data.unwrap_or(Value::Null);
                let packs = data.get("results").cloned().unwrap_or_else(|| json!([]));
                let broken = data.get("broken").cloned().unwrap_or_else(|| json!([]));
                let mut text = serde_json::to_string_pretty(&json!({ "packs": packs, "broken": broken }))
                    .unwrap_or_default();
                fit::resource_text(&mut text, "search with the tool for the rest");
                Some((text, "application/json"))
            }
            "hcp://help" => Some((help::markdown(self.options.read_only), "text/markdown")),
            _ => {
                if let Some(id) = uri.strip_prefix("hcp://skill/") {
                    let mut executed = run(&["skill", id]).await;
                    fit::resource_text(
                        &mut executed.text,
                        "the pack's skill is longer than a message may be",
                    );
                    return executed.envelope.ok.then_some((executed.text, "text/markdown"));
                }
                let id = uri.strip_prefix("hcp://output/")?;
                let stored = self.base.session.captures.get(id, owner)?;
                let mut text = stored.stdout;
                if !stored.stderr.is_empty() {
                    text.push_str("\n[stderr]\n");
                    text.push_str(&stored.stderr);
                }
                fit::resource_text(
                    &mut text,
                    &format!("read on with {{\"argv\": [\"output\", \"{id}\", \"--offset\", \"N\"]}}"),
                );
                Some((text, "text/plain"))
            }
        }
    }

    /// The resources as (URI, name, MIME type): catalog, help and one skill per pack
    /// that runs (built in or installed).
    pub async fn resources(&self) -> Vec<(String, String, &'static str)> {
        let mut list = vec![
            (
                "hcp://catalog".to_owned(),
                "catalog".to_owned(),
                "application/json",
            ),
            ("hcp://help".to_owned(), "help".to_owned(), "text/markdown"),
        ];
        let executed = crate::execute(
            vec!["--json".into(), "search".into(), "--limit".into(), "10000".into()],
            &self.base,
        )
        .await;
        if let Some(results) = executed
            .envelope
            .data
            .as_ref()
            .and_then(|data| data["results"].as_array())
        {
            // A catalog pack that is not installed is in `hcp://catalog`, with
            // `"installed": false`; its skill is read once it is installed.
            for pack in results.iter().filter(|pack| pack["installed"] != json!(false)) {
                if let Some(id) = pack["id"].as_str() {
                    list.push((
                        format!("hcp://skill/{id}"),
                        format!("skill: {id}"),
                        "text/markdown",
                    ));
                }
            }
        }
        list
    }
}

/// The resource templates: a pack's skill and a kept output.
pub(crate) fn templates() -> Vec<ResourceTemplate> {
    vec![
        ResourceTemplate::new("hcp://skill/{pack_id}", "skill").with_mime_type("text/markdown"),
        ResourceTemplate::new("hcp://output/{id}", "output").with_mime_type("text/plain"),
    ]
}
