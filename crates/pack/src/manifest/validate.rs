//! The manifest validator: walks the JSON value and collects every problem by JSON
//! path, so that a bad manifest is refused as a whole.

use std::collections::BTreeSet;

use serde_json::Value;

use super::bindings::bindings;
use super::command_sandbox::{binding_placeholders, command_sandbox};
use super::environment::env;
use super::model::*;
use super::placement::template;
use super::program::program;
use super::walk::{Walk, join};
use super::*;
use crate::template::{is_name, is_pack_id};

/// Parses and validates a manifest. On failure, every problem found is returned.
pub fn parse(text: &str) -> Result<Manifest, Vec<Problem>> {
    let value: Value = serde_json::from_str(text).map_err(|error| {
        vec![Problem {
            path: String::new(),
            message: format!(
                "not valid JSON (line {}, column {}): {error}",
                error.line(),
                error.column()
            ),
        }]
    })?;
    let mut walk = Walk { problems: Vec::new() };
    let manifest = manifest(&mut walk, &value);
    match manifest {
        Some(manifest) if walk.problems.is_empty() => Ok(manifest),
        _ => Err(walk.problems),
    }
}

const TOP_FIELDS: [&str; 10] = [
    "hcp",
    "id",
    "version",
    "description",
    "keywords",
    "bin",
    "bindings",
    "sandbox",
    "commands",
    "program",
];

fn manifest(walk: &mut Walk, value: &Value) -> Option<Manifest> {
    let root = walk.object("", value)?;
    walk.unknown_fields("", root, &TOP_FIELDS);
    match root.get("hcp") {
        Some(Value::Number(number)) if number.as_u64() == Some(FORMAT_VERSION) => {}
        None => walk.problem("hcp", "is required (the format version, 1)"),
        Some(_) => walk.problem("hcp", "must be 1, the only format version this hcpx reads"),
    }
    let id = walk.string("id", root.get("id"), true);
    if let Some(id) = &id
        && !is_pack_id(id)
    {
        walk.problem("id", "must match ^[a-z0-9][a-z0-9._-]{0,63}$");
    }
    let version = walk
        .string("version", root.get("version"), true)
        .and_then(|text| {
            semver::Version::parse(&text)
                .map_err(|_| walk.problem("version", "must be a semantic version such as 1.2.0"))
                .ok()
        });
    let description = walk.string("description", root.get("description"), true);
    if let Some(text) = &description
        && text.chars().count() > MAX_DESCRIPTION
    {
        walk.problem(
            "description",
            format!("must be at most {MAX_DESCRIPTION} characters"),
        );
    }
    let keywords = walk.strings("keywords", root.get("keywords"));
    if keywords.len() > MAX_KEYWORDS {
        walk.problem("keywords", format!("at most {MAX_KEYWORDS} keywords"));
    }
    for (index, keyword) in keywords.iter().enumerate() {
        if keyword.trim().is_empty() || keyword.len() > MAX_KEYWORD_LEN {
            walk.problem(
                &format!("keywords[{index}]"),
                format!("must be 1 to {MAX_KEYWORD_LEN} bytes"),
            );
        }
    }
    let bin = bin(walk, root.get("bin"));
    let bindings = bindings(walk, root.get("bindings"));
    let sandbox = sandbox(walk, root.get("sandbox"));
    // A header binding sets no variable: its name may hold a placeholder for a CLI
    // that wants a token of its own.
    for (name, _) in &sandbox.env {
        if bindings
            .iter()
            .any(|(key, spec)| key == name && !matches!(spec.delivery, Delivery::Header { .. }))
        {
            walk.problem(
                &format!("sandbox.env.{name}"),
                "is also a binding; the binding sets it, so drop one",
            );
        }
    }
    let commands = commands(walk, root.get("commands"), &bindings);
    for (name, spec) in &bindings {
        if spec.delivery == Delivery::Stdin
            && !commands
                .iter()
                .any(|command| command.stdin.as_deref() == Some(name))
        {
            walk.problem(
                &format!("bindings.{name}.as"),
                "is stdin, but no command names this binding in its \"stdin\"",
            );
        }
    }
    header_hosts(walk, &bindings, &sandbox, &commands);
    let program = program(walk, root.get("program"), &bin);
    Some(Manifest {
        id: id?,
        version: version?,
        description: description?,
        keywords,
        bin,
        bindings,
        sandbox,
        commands,
        program,
    })
}

/// A header binding goes only through the proxy: some allowlist must name each of
/// its hosts.
fn header_hosts(
    walk: &mut Walk,
    bindings: &[(String, BindingSpec)],
    sandbox: &SandboxSpec,
    commands: &[Command],
) {
    let allowed: Vec<&super::network::Endpoint> = std::iter::once(&sandbox.network)
        .chain(commands.iter().filter_map(|command| command.network.as_ref()))
        .filter_map(super::network::Network::allowlist)
        .flatten()
        .collect();
    for (name, spec) in bindings {
        let Delivery::Header { hosts, .. } = &spec.delivery else {
            continue;
        };
        if allowed.is_empty() {
            walk.problem(
                &format!("bindings.{name}.as"),
                "is header, which hcpx's proxy adds on the way out: declare sandbox.network {\"allow\": [\"host:port\"]} (or a command's network) naming its hosts",
            );
            continue;
        }
        for (index, host) in hosts.iter().enumerate() {
            let named = allowed.iter().any(|endpoint| {
                endpoint.host == *host
                    || matches!(host, super::network::Host::Name(name) if endpoint.host.matches(name))
            });
            if !named {
                walk.problem(
                    &format!("bindings.{name}.hosts[{index}]"),
                    format!("`{host}` is in no network.allow entry; the header goes only where the pack may connect"),
                );
            }
        }
    }
}

fn bin(walk: &mut Walk, value: Option<&Value>) -> Vec<String> {
    if value.is_none() {
        walk.problem(
            "bin",
            "is required (the CLI's argv prefix, such as [\"./tool\"] or [\"git\"])",
        );
        return Vec::new();
    }
    let bin = walk.strings("bin", value);
    let Some(first) = bin.first() else {
        if matches!(value, Some(Value::Array(items)) if items.is_empty()) {
            walk.problem(
                "bin",
                "must name the CLI: [\"./FILE\"] inside the pack or [\"PROGRAM\"] on PATH",
            );
        }
        return bin;
    };
    if let Some(file) = first.strip_prefix("./") {
        let clean = !file.is_empty()
            && !file.contains('/')
            && file != "."
            && file != ".."
            && file != "hcp.json"
            && file != "SKILL.md";
        if !clean {
            walk.problem(
                "bin[0]",
                "must be ./FILE, a file at the top of the pack other than hcp.json and SKILL.md",
            );
        }
    } else if first.is_empty() || first.contains('/') || first.starts_with('-') {
        walk.problem(
            "bin[0]",
            "must be ./FILE inside the pack or a program name found on PATH (no slashes)",
        );
    }
    for (index, arg) in bin.iter().enumerate() {
        if arg.contains('\0') {
            walk.problem(&format!("bin[{index}]"), "must not contain NUL");
        }
        if arg.contains('{') || arg.contains('}') {
            walk.problem(
                &format!("bin[{index}]"),
                "must not contain placeholders; put them in a command's argv",
            );
        }
    }
    bin
}

fn sandbox(walk: &mut Walk, value: Option<&Value>) -> SandboxSpec {
    let mut sandbox = SandboxSpec::default();
    let Some(value) = value else { return sandbox };
    let Some(object) = walk.object("sandbox", value) else {
        return sandbox;
    };
    walk.unknown_fields(
        "sandbox",
        object,
        &["network", "write", "read", "sockets", "env", "timeoutMs"],
    );
    sandbox.env = env(walk, object.get("env"));
    sandbox.network = super::network::network(walk, "sandbox.network", object.get("network"));
    sandbox.write = walk.strings("sandbox.write", object.get("write"));
    for (index, path) in sandbox.write.iter().enumerate() {
        if let Err(message) = check_relative_path(path) {
            walk.problem(
                &format!("sandbox.write[{index}]"),
                format!("{message} (write paths are relative)"),
            );
        }
    }
    sandbox.read = walk.strings("sandbox.read", object.get("read"));
    for (index, path) in sandbox.read.iter().enumerate() {
        let rest = path.strip_prefix("~/").or_else(|| path.strip_prefix('/'));
        if rest.is_none_or(|rest| rest.split('/').any(|part| part == ".." || part == ".")) {
            walk.problem(
                &format!("sandbox.read[{index}]"),
                "must be an absolute path or start with ~/, without . or .. parts",
            );
        }
    }
    sandbox.sockets = walk.strings("sandbox.sockets", object.get("sockets"));
    for (index, path) in sandbox.sockets.iter().enumerate() {
        let rest = path.strip_prefix('/');
        if rest.is_none_or(|rest| {
            rest.is_empty()
                || rest
                    .split('/')
                    .any(|part| part.is_empty() || part == ".." || part == ".")
        }) || path.len() > MAX_SOCKET_PATH
        {
            walk.problem(
                &format!("sandbox.sockets[{index}]"),
                format!("must be an absolute path of at most {MAX_SOCKET_PATH} bytes, without empty, . or .. parts"),
            );
        }
    }
    match object.get("timeoutMs") {
        None => {}
        Some(Value::Number(number)) => match number.as_u64() {
            Some(ms) if (1..=MAX_TIMEOUT_MS).contains(&ms) => sandbox.timeout_ms = ms,
            _ => walk.problem(
                "sandbox.timeoutMs",
                format!("must be an integer from 1 to {MAX_TIMEOUT_MS}"),
            ),
        },
        Some(_) => walk.problem("sandbox.timeoutMs", "must be an integer (milliseconds)"),
    }
    sandbox
}

fn commands(walk: &mut Walk, value: Option<&Value>, bindings: &[(String, BindingSpec)]) -> Vec<Command> {
    let Some(value) = value else {
        walk.problem("commands", "is required (at least one command)");
        return Vec::new();
    };
    let Some(object) = walk.object("commands", value) else {
        return Vec::new();
    };
    if object.is_empty() {
        walk.problem("commands", "must declare at least one command");
    }
    let mut out = Vec::new();
    for (name, spec) in object {
        let path = format!("commands.{name}");
        if !is_name(name) {
            walk.problem(&path, "command names match ^[a-z][a-z0-9_-]{0,63}$");
        }
        if let Some(command) = command(walk, &path, name, spec, bindings) {
            out.push(command);
        }
    }
    out
}

const COMMAND_FIELDS: [&str; 10] = [
    "summary",
    "description",
    "effect",
    "params",
    "argv",
    "json",
    "write",
    "network",
    "okExitCodes",
    "stdin",
];

fn command(
    walk: &mut Walk,
    path: &str,
    name: &str,
    value: &Value,
    bindings: &[(String, BindingSpec)],
) -> Option<Command> {
    let object = walk.object(path, value)?;
    walk.unknown_fields(path, object, &COMMAND_FIELDS);
    let summary = walk.string(&join(path, "summary"), object.get("summary"), true);
    let description = walk.string(&join(path, "description"), object.get("description"), false);
    let effect = match walk.string(&join(path, "effect"), object.get("effect"), true) {
        Some(text) => Effect::parse(&text).or_else(|| {
            walk.problem(&join(path, "effect"), "must be read, write or destructive");
            None
        }),
        None => None,
    };
    let mut params = Vec::new();
    let mut declared = BTreeSet::new();
    if let Some(value) = object.get("params")
        && let Some(map) = walk.object(&join(path, "params"), value)
    {
        for (param_name, spec) in map {
            let param_path = format!("{path}.params.{param_name}");
            if !is_name(param_name) {
                walk.problem(&param_path, "parameter names match ^[a-z][a-z0-9_-]{0,63}$");
            }
            declared.insert(param_name.clone());
            if let Some(param) = param(walk, &param_path, param_name, spec) {
                params.push(param);
            }
        }
    }
    let argv = template(walk, path, object.get("argv"), &params, &declared);
    binding_placeholders(walk, path, &argv, bindings);
    let own = command_sandbox(walk, path, object, effect, &params, bindings);
    let json = walk.strings(&join(path, "json"), object.get("json"));
    for (index, arg) in json.iter().enumerate() {
        if arg.contains('{') || arg.contains('}') {
            walk.problem(&format!("{path}.json[{index}]"), "must not contain placeholders");
        }
    }
    Some(Command {
        name: name.to_owned(),
        summary: summary?,
        description,
        effect: effect?,
        params,
        argv,
        json,
        write: own.write,
        network: own.network,
        ok_exit_codes: own.ok_exit_codes,
        stdin: own.stdin,
    })
}

const PARAM_FIELDS: [&str; 11] = [
    "type",
    "items",
    "values",
    "required",
    "positional",
    "pattern",
    "refuse",
    "default",
    "description",
    "maxLength",
    "flag",
];

fn param(walk: &mut Walk, path: &str, name: &str, value: &Value) -> Option<Param> {
    let object = walk.object(path, value)?;
    walk.unknown_fields(path, object, &PARAM_FIELDS);
    let type_name = walk
        .string(&join(path, "type"), object.get("type"), false)
        .unwrap_or_else(|| "string".into());
    let (ty, array) = if type_name == "array" {
        let items = match object.get("items") {
            None => "string".to_owned(),
            Some(value) => walk
                .string(&join(path, "items"), Some(value), true)
                .unwrap_or_default(),
        };
        match ScalarType::parse(&items) {
            Some(ty) => (ty, true),
            None => {
                walk.problem(
                    &join(path, "items"),
                    "must be string, integer, number, boolean, enum or path",
                );
                return None;
            }
        }
    } else {
        if object.contains_key("items") {
            walk.problem(&join(path, "items"), "is only for type array");
        }
        match ScalarType::parse(&type_name) {
            Some(ty) => (ty, false),
            None => {
                walk.problem(
                    &join(path, "type"),
                    "must be string, integer, number, boolean, enum, path or array",
                );
                return None;
            }
        }
    };
    let values = walk.strings(&join(path, "values"), object.get("values"));
    if ty == ScalarType::Enum && values.is_empty() {
        walk.problem(&join(path, "values"), "an enum needs a non-empty list of values");
    }
    if ty != ScalarType::Enum && object.contains_key("values") {
        walk.problem(&join(path, "values"), "is only for type enum");
    }
    let unique: BTreeSet<&String> = values.iter().collect();
    if unique.len() != values.len() {
        walk.problem(&join(path, "values"), "lists a value twice");
    }
    let required = walk.bool(&join(path, "required"), object.get("required"), false);
    let positional = walk.bool(&join(path, "positional"), object.get("positional"), false);
    let description = walk.string(&join(path, "description"), object.get("description"), false);
    let max_length = match object.get("maxLength") {
        None => DEFAULT_MAX_LENGTH,
        Some(value) => match value.as_u64() {
            Some(n) if n >= 1 && n <= DEFAULT_MAX_LENGTH as u64 => {
                usize::try_from(n).unwrap_or(DEFAULT_MAX_LENGTH)
            }
            _ => {
                walk.problem(
                    &join(path, "maxLength"),
                    format!("must be an integer from 1 to {DEFAULT_MAX_LENGTH}"),
                );
                DEFAULT_MAX_LENGTH
            }
        },
    };
    let pattern_source = walk.string(&join(path, "pattern"), object.get("pattern"), false);
    let pattern = pattern_source.as_ref().and_then(|source| {
        // Full match, as docs/packs.md says, whatever anchors the author wrote. The source
        // must be a regular expression by itself: `a)|(b` only parses once wrapped,
        // and then `^(?:a)|(b)$` matches any text that starts with `a`.
        Pattern::new(source)
            .and_then(|_| Pattern::new(&format!("^(?:{source})$")))
            .or_else(|| {
                walk.problem(&join(path, "pattern"), "is not a valid regular expression");
                None
            })
    });
    let refuse_source = walk.string(&join(path, "refuse"), object.get("refuse"), false);
    let refuse = refuse_source.as_ref().and_then(|source| {
        // Matched anywhere in the value, unanchored.
        Pattern::new(source).or_else(|| {
            walk.problem(&join(path, "refuse"), "is not a valid regular expression");
            None
        })
    });
    let mut param = Param {
        name: name.to_owned(),
        ty,
        array,
        required,
        positional,
        values,
        pattern,
        pattern_source,
        refuse,
        refuse_source,
        default: None,
        description,
        max_length,
        flag: flag_text(walk, path, object.get("flag"), ty, array),
    };
    if let Some(default) = object.get("default") {
        if required {
            walk.problem(
                &join(path, "default"),
                "a required parameter cannot have a default",
            );
        }
        match default_values(&param, default) {
            Ok(values) => param.default = Some(values),
            Err(message) => {
                walk.problem(&join(path, "default"), message);
                // Count it as given, so the template is not blamed for it too.
                param.default = Some(Vec::new());
            }
        }
    }
    Some(param)
}

/// The `flag` field: fixed option text, for a boolean that is not an array.
fn flag_text(
    walk: &mut Walk,
    path: &str,
    value: Option<&Value>,
    ty: ScalarType,
    array: bool,
) -> Option<String> {
    let path = join(path, "flag");
    let text = walk.string(&path, value, false)?;
    if ty != ScalarType::Boolean || array {
        walk.problem(
            &path,
            "is only for type boolean; a value goes in the element after its option (\"--opt\", \"{name}\")",
        );
        return None;
    }
    let option = text.starts_with('-') && text != "-" && text != "--";
    if !option || text.chars().any(|c| c.is_whitespace() || c.is_control()) {
        walk.problem(&path, "must be one option, such as --utc or -u (no spaces)");
        return None;
    }
    Some(text)
}

/// Renders a JSON default to argv strings and checks it like a caller value.
pub(super) fn default_values(param: &Param, value: &Value) -> Result<Vec<String>, String> {
    let items: Vec<&Value> = match (param.array, value) {
        (true, Value::Array(items)) => items.iter().collect(),
        (true, _) => return Err("must be an array for an array parameter".to_owned()),
        (false, value) => vec![value],
    };
    let mut out = Vec::new();
    for item in items {
        let text = match (param.ty, item) {
            (ScalarType::Integer, Value::Number(n)) if n.is_i64() => n.to_string(),
            (ScalarType::Number, Value::Number(n)) => n.to_string(),
            (ScalarType::Boolean, Value::Bool(flag)) => flag.to_string(),
            (ScalarType::String | ScalarType::Enum | ScalarType::Path, Value::String(text)) => text.clone(),
            _ => {
                let article = if matches!(param.ty, ScalarType::Integer | ScalarType::Enum) {
                    "an"
                } else {
                    "a"
                };
                return Err(format!("must be {article} {} value", param.ty.as_str()));
            }
        };
        param
            .check(&text)
            .map_err(|message| format!("the default {message}"))?;
        out.push(text);
    }
    Ok(out)
}
