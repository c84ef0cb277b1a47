//! `sandbox.env`: variables a pack's CLI needs set (`NO_COLOR`, `CARGO_HOME`), fixed
//! text or a path in the pack's own persistent cache folder (`{cache}/cargo`).

use serde_json::Value;

use super::bindings::reserved;
use super::model::EnvValue;
use super::walk::Walk;
use crate::template::is_binding_name;

/// Where a value names the pack's cache folder.
pub const CACHE: &str = "{cache}";

/// The proxy and certificate variables hcpx's egress proxy sets: no manifest may set
/// them (in any case).
const PROXY_ENV: [&str; 10] = [
    "HTTPS_PROXY",
    "HTTP_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "CURL_CA_BUNDLE",
    "REQUESTS_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
    "GIT_SSL_CAINFO",
];

pub(super) fn env(walk: &mut Walk, value: Option<&Value>) -> Vec<(String, EnvValue)> {
    let Some(value) = value else { return Vec::new() };
    let Some(object) = walk.object("sandbox.env", value) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (name, value) in object {
        let path = format!("sandbox.env.{name}");
        if !is_binding_name(name) {
            walk.problem(&path, "must be an environment variable name (^[A-Z_][A-Z0-9_]*$)");
            continue;
        }
        if reserved(name) || PROXY_ENV.contains(&name.to_ascii_uppercase().as_str()) {
            walk.problem(
                &path,
                "is set by hcpx itself (PATH, HOME, LANG, LC_ALL, TZ, TMPDIR, HCP_*, LD_*, DYLD_* and the proxy \
                 variables); a pack cannot declare it",
            );
            continue;
        }
        let Some(text) = walk.string(&path, Some(value), false) else {
            continue;
        };
        match parse_value(&text) {
            Ok(value) => out.push((name.clone(), value)),
            Err(message) => walk.problem(&path, message),
        }
    }
    out
}

fn parse_value(text: &str) -> Result<EnvValue, String> {
    if text.contains('\0') || text.len() > 4096 {
        return Err("must be at most 4,096 bytes, without NUL".to_owned());
    }
    let Some(rest) = text.strip_prefix(CACHE) else {
        if text.contains('{') || text.contains('}') {
            return Err(
                "may use {cache} only at its start (a path in the pack's cache folder); \
                        other braces are not replaced"
                    .to_owned(),
            );
        }
        return Ok(EnvValue::Fixed(text.to_owned()));
    };
    let sub = match rest.strip_prefix('/') {
        Some("") => return Err("must be {cache} or {cache}/SUB/FOLDER, without a trailing /".to_owned()),
        Some(sub) => sub,
        None if rest.is_empty() => "",
        None => return Err("{cache} must be followed by nothing or /SUBFOLDER".to_owned()),
    };
    if sub.contains('{')
        || sub.contains('}')
        || sub
            .split('/')
            .any(|part| part == ".." || part == "." || (part.is_empty() && !sub.is_empty()))
    {
        return Err("must be {cache} or {cache}/SUB/FOLDER, without empty, . or .. parts".to_owned());
    }
    Ok(EnvValue::Cache(sub.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_fixed_text_or_cache_paths() {
        assert_eq!(parse_value("1"), Ok(EnvValue::Fixed("1".to_owned())));
        assert_eq!(parse_value("{cache}"), Ok(EnvValue::Cache(String::new())));
        assert_eq!(
            parse_value("{cache}/cargo/home"),
            Ok(EnvValue::Cache("cargo/home".to_owned()))
        );
        for bad in [
            "{cache}/../x",
            "{cache}x",
            "{cache}/a//b",
            "{cache}/",
            "a{cache}",
            "{home}/x",
            "{cache}/./a",
        ] {
            assert!(parse_value(bad).is_err(), "{bad}");
        }
    }
}
