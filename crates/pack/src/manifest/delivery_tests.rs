//! The fields that let a manifest wrap a real CLI without a script: binding
//! delivery, per-command sandbox and exit codes, `sandbox.env`, `program`. Each
//! failing example asserts the exact problem list.

use serde_json::{Value, json};

use super::*;

fn good() -> Value {
    json!({
        "hcp": 1,
        "id": "web",
        "version": "1.0.0",
        "description": "Fetch a page",
        "bin": ["curl"],
        "program": {
            "aliases": ["curl-real"],
            "variant": "curl 7 or later",
            "versionArgs": ["--version"],
            "versionPattern": "^curl [7-9]",
            "install": { "apt": "curl", "brew": "curl" },
            "homepage": "https://curl.se"
        },
        "bindings": {
            "API_TOKEN": { "as": "file", "format": "Authorization: Bearer {value}", "required": true },
            "PASSWORD": { "as": "stdin" }
        },
        "sandbox": { "env": { "NO_COLOR": "1", "CURL_HOME": "{cache}/curl" } },
        "commands": {
            "get": {
                "summary": "Fetch a URL",
                "effect": "read",
                "okExitCodes": [0, 22],
                "params": { "url": { "type": "string", "required": true, "positional": true } },
                "argv": ["-H", "@{API_TOKEN}", "--", "{url}"]
            },
            "save": {
                "summary": "Save a URL into a folder",
                "effect": "write",
                "stdin": "PASSWORD",
                "write": ["{into}", "logs"],
                "params": {
                    "into": { "type": "path" },
                    "url": { "type": "string", "required": true, "positional": true }
                },
                "argv": ["--output-dir={into?}", "--", "{url}"]
            }
        }
    })
}

fn problems(change: impl FnOnce(&mut Value)) -> Vec<String> {
    let mut value = good();
    change(&mut value);
    match parse(&value.to_string()) {
        Ok(_) => Vec::new(),
        Err(problems) => problems.iter().map(ToString::to_string).collect(),
    }
}

#[test]
fn the_good_manifest_reads_into_the_model() {
    let manifest = parse(&good().to_string()).unwrap();
    let token = manifest.binding("API_TOKEN").unwrap();
    assert_eq!(
        token.delivery,
        Delivery::File {
            format: Some("Authorization: Bearer {value}".to_owned())
        }
    );
    assert_eq!(manifest.binding("PASSWORD").unwrap().delivery, Delivery::Stdin);
    assert_eq!(
        manifest.sandbox.env,
        [
            ("NO_COLOR".to_owned(), EnvValue::Fixed("1".to_owned())),
            ("CURL_HOME".to_owned(), EnvValue::Cache("curl".to_owned())),
        ]
    );
    assert!(manifest.uses_cache());
    let get = manifest.command("get").unwrap();
    assert_eq!(
        (
            get.ok_exit_codes.as_slice(),
            get.write.as_ref(),
            get.stdin.as_deref()
        ),
        (&[0, 22][..], None, None)
    );
    assert!(get.exit_ok(22) && !get.exit_ok(1));
    let save = manifest.command("save").unwrap();
    assert_eq!(save.ok_exit_codes, [0]);
    assert_eq!(
        save.write,
        Some(vec![
            WriteItem::Param("into".to_owned()),
            WriteItem::Path("logs".to_owned())
        ])
    );
    assert_eq!(save.stdin.as_deref(), Some("PASSWORD"));
    assert_eq!(
        manifest.program,
        Some(ProgramSpec {
            aliases: vec!["curl-real".to_owned()],
            variant: Some("curl 7 or later".to_owned()),
            version_args: vec!["--version".to_owned()],
            version_pattern: Some("^curl [7-9]".to_owned()),
            install: vec![
                ("apt".to_owned(), "curl".to_owned()),
                ("brew".to_owned(), "curl".to_owned())
            ],
            homepage: Some("https://curl.se".to_owned()),
        })
    );
}

#[test]
fn an_env_binding_in_argv_is_refused_with_what_to_declare() {
    assert_eq!(
        problems(|m| m["bindings"]["API_TOKEN"] = json!({ "required": true })),
        [
            "commands.get.argv[1]: \"API_TOKEN\" is delivered as env: a value in argv can be read by any process of \
          the machine (ps, /proc), so only a file binding's path may appear here. Declare \"as\": \"file\" on the \
          binding (with a \"format\" if the CLI wants more than the value), and {API_TOKEN} renders the file's path"
        ]
    );
}

#[test]
fn a_file_binding_in_argv_must_be_required_and_declared() {
    assert_eq!(
        problems(|m| m["bindings"]["API_TOKEN"]["required"] = json!(false)),
        [
            "commands.get.argv[1]: \"API_TOKEN\" is not required, so its file may not exist when the command runs; \
          declare \"required\": true on the binding"
        ]
    );
    assert_eq!(
        problems(|m| m["commands"]["get"]["argv"][1] = json!("@{NOPE}")),
        ["commands.get.argv[1]: unknown binding \"NOPE\""]
    );
}

#[test]
fn delivery_fields_are_checked() {
    assert_eq!(
        problems(|m| {
            m["bindings"]["API_TOKEN"]["format"] = json!("Bearer");
            m["bindings"]["PASSWORD"]["format"] = json!("{value}");
        }),
        [
            "bindings.API_TOKEN.format: must contain {value}, which is replaced by the bound value (nothing else is replaced)",
            "bindings.PASSWORD.format: is only for \"as\": \"file\" (the content of the file); an env or stdin binding carries the value as it is",
        ]
    );
    assert_eq!(
        problems(|m| m["bindings"]["PASSWORD"]["as"] = json!("pipe")),
        [
            "bindings.PASSWORD.as: must be env, file, stdin or header",
            "commands.save.stdin: \"PASSWORD\" is not delivered on stdin; declare \"as\": \"stdin\" on the binding",
        ]
    );
    assert_eq!(
        problems(|m| m["commands"]["save"]
            .as_object_mut()
            .unwrap()
            .remove("stdin")
            .map(drop)
            .unwrap()),
        ["bindings.PASSWORD.as: is stdin, but no command names this binding in its \"stdin\""]
    );
}

#[test]
fn header_bindings_need_an_allowlist_that_names_their_hosts() {
    let header = |m: &mut Value| {
        m["bindings"]["GH"] = json!({
            "as": "header", "header": "Authorization", "format": "Bearer {value}",
            "hosts": ["api.github.com", "uploads.github.com", "127.0.0.1"]
        });
    };
    assert_eq!(
        problems(header),
        [
            "bindings.GH.as: is header, which hcpx's proxy adds on the way out: declare sandbox.network {\"allow\": [\"host:port\"]} (or a command's network) naming its hosts"
        ]
    );
    assert_eq!(
        problems(|m| {
            header(m);
            m["sandbox"]["network"] = json!({"allow": ["*.github.com:443", "127.0.0.1:8443"]});
            // A placeholder for a CLI that wants a token of its own.
            m["sandbox"]["env"]["GH"] = json!("placeholder");
        }),
        Vec::<String>::new()
    );
    assert_eq!(
        problems(|m| {
            header(m);
            m["commands"]["get"]["network"] = json!({"allow": ["api.github.com:443"]});
        }),
        [
            "bindings.GH.hosts[1]: `uploads.github.com` is in no network.allow entry; the header goes only where the pack may connect",
            "bindings.GH.hosts[2]: `127.0.0.1` is in no network.allow entry; the header goes only where the pack may connect",
        ]
    );
    let manifest = parse(
        &{
            let mut m = good();
            header(&mut m);
            m["sandbox"]["network"] = json!({"allow": ["*.github.com:443", "127.0.0.1:8443"]});
            m
        }
        .to_string(),
    )
    .unwrap();
    assert_eq!(
        serde_json::to_value(&manifest.binding("GH").unwrap().delivery).unwrap(),
        json!({"kind": "header", "header": "Authorization", "format": "Bearer {value}",
               "hosts": ["api.github.com", "uploads.github.com", "127.0.0.1"]})
    );
    assert_eq!(
        problems(|m| {
            m["sandbox"]["network"] = json!({"allow": ["a.test:443"]});
            m["bindings"]["GH"] = json!({"as": "header", "header": "Proxy-Authorization", "format": "x\ny{value}", "hosts": []});
            m["bindings"]["KEY"] = json!({"as": "header", "header": "X Key", "format": "Key"});
        }),
        [
            "bindings.GH.header: is a header of the connection, not of the request; name the one the API reads",
            "bindings.GH.format: must not hold control characters (a header value is one line)",
            "bindings.GH.hosts: is empty: name the hosts whose requests get the header",
            "bindings.KEY.header: must be an HTTP header name, such as Authorization or X-Api-Key",
            "bindings.KEY.format: must contain {value}, which is replaced by the bound value (nothing else is replaced)",
            "bindings.KEY.hosts: is required: the hosts whose requests get the header",
        ]
    );
}

#[test]
fn network_allowlists_are_checked() {
    assert_eq!(
        problems(|m| {
            m["sandbox"]["network"] = json!({"allow": ["a.test", "a.test:443", "a.test:443", "A.test:1", "[::1]:99999"], "deny": []});
            m["commands"]["get"]["network"] = json!({"allow": []});
            m["commands"]["save"]["network"] = json!({});
        }),
        [
            "sandbox.network.deny: unknown field (known: allow)",
            "sandbox.network.allow[0]: must be host:port (a port is required)",
            "sandbox.network.allow[2]: is listed twice",
            "sandbox.network.allow[3]: `A.test` is not a host name hcpx takes: lower case letters, digits, - and dots, no final dot (or `*.` and a name, or an IP address)",
            "sandbox.network.allow[4]: the port `99999` must be a number from 1 to 65535",
            "commands.get.network.allow: is empty: a pack that reaches nothing takes \"network\": false",
            "commands.save.network.allow: is required: the host:port pairs the pack may reach",
        ]
    );
}

#[test]
fn command_write_and_exit_codes_are_checked() {
    assert_eq!(
        problems(|m| {
            m["commands"]["get"]["write"] = json!(["out"]);
            m["commands"]["save"]["write"] = json!(["{url}", "../up", "{nope}", "x{into}"]);
            m["commands"]["save"]["okExitCodes"] = json!([0, 0]);
            m["commands"]["get"]["okExitCodes"] = json!([256]);
        }),
        [
            "commands.get.write: a read command writes nothing (only its temporary folder); make the command write or destructive, or drop write",
            "commands.get.okExitCodes: must be a list of exit codes from 0 to 255, each once, such as [0, 1]",
            "commands.save.write[0]: \"url\" must be a parameter of type path",
            "commands.save.write[1]: leaves the working directory (write paths are relative)",
            "commands.save.write[2]: unknown parameter \"nope\"",
            "commands.save.write[3]: must be a relative path or one path parameter alone, such as \"{into}\"",
            "commands.save.okExitCodes: must be a list of exit codes from 0 to 255, each once, such as [0, 1]",
        ]
    );
    assert_eq!(
        problems(|m| m["commands"]["save"]["okExitCodes"] = json!([])),
        ["commands.save.okExitCodes: must be a list of exit codes from 0 to 255, each once, such as [0, 1]"]
    );
}

#[test]
fn sandbox_env_cannot_set_what_hcpx_sets() {
    assert_eq!(
        problems(|m| m["sandbox"]["env"] = json!({
            "PATH": "/x", "LD_PRELOAD": "/x", "HCP_HOME": "/x", "https_proxy": "x", "API_TOKEN": "1",
            "BAD": "{cache}/../x", "lower": "1"
        })),
        [
            "sandbox.env.PATH: is set by hcpx itself (PATH, HOME, LANG, LC_ALL, TZ, TMPDIR, HCP_*, LD_*, DYLD_* and the proxy variables); a pack cannot declare it",
            "sandbox.env.LD_PRELOAD: is set by hcpx itself (PATH, HOME, LANG, LC_ALL, TZ, TMPDIR, HCP_*, LD_*, DYLD_* and the proxy variables); a pack cannot declare it",
            "sandbox.env.HCP_HOME: is set by hcpx itself (PATH, HOME, LANG, LC_ALL, TZ, TMPDIR, HCP_*, LD_*, DYLD_* and the proxy variables); a pack cannot declare it",
            "sandbox.env.https_proxy: must be an environment variable name (^[A-Z_][A-Z0-9_]*$)",
            "sandbox.env.BAD: must be {cache} or {cache}/SUB/FOLDER, without empty, . or .. parts",
            "sandbox.env.lower: must be an environment variable name (^[A-Z_][A-Z0-9_]*$)",
            "sandbox.env.API_TOKEN: is also a binding; the binding sets it, so drop one",
        ]
    );
}

#[test]
fn program_fields_are_checked() {
    assert_eq!(
        problems(|m| m["program"] = json!({
            "aliases": ["a/b"], "versionPattern": "(", "install": { "apt": "x\ny", "winget": "x" },
            "homepage": "http://x"
        })),
        [
            "program.aliases[0]: must be a program name found on PATH (no `/`, 1 to 64 bytes)",
            "program.versionPattern: is not a valid regular expression",
            "program.versionPattern: needs versionArgs, the arguments that make the program print its version",
            "program.install.winget: unknown field (known: apt, brew, dnf, pacman, pip, pipx, npm, cargo, go)",
            "program.install.apt: must be package names on one line (at most 200 bytes)",
            "program.homepage: must be an https:// address",
        ]
    );
    assert_eq!(
        problems(|m| m["bin"] = json!(["./web"])),
        ["program: is for a pack whose bin is a program of the machine; this pack carries its own CLI file"]
    );
}
