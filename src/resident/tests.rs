use super::*;

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
        .collect()
}

/// Only `HCP_*` settings and `TMPDIR` are compared, but for what each call has of its
/// own.
#[test]
fn the_settings_are_the_hcp_variables_but_the_callers() {
    let env = pairs(&[
        ("PATH", "/bin"),
        ("HCP_SANDBOX", "best-effort"),
        ("HCP_AGENT", "1"),
        ("HCP_LOG", "debug"),
        ("HCP_MARKS", "1"),
        ("HCP_RESIDENT", "require"),
        ("HCP_HOME", "/h"),
        ("HCPX", "not ours"),
        ("TMPDIR", "/t"),
    ]);
    let found = settings(env.iter().map(|(name, value)| (name.as_str(), value.as_str())));
    assert_eq!(
        found,
        pairs(&[
            ("HCP_HOME", "/h"),
            ("HCP_SANDBOX", "best-effort"),
            ("TMPDIR", "/t")
        ])
    );
}

#[test]
fn the_first_difference_is_named_set_or_not() {
    let server = pairs(&[("HCP_A", "1"), ("HCP_C", "3")]);
    assert_eq!(first_difference(&server, &server), None);
    assert_eq!(
        first_difference(&pairs(&[("HCP_A", "1")]), &server),
        Some("HCP_C")
    );
    assert_eq!(
        first_difference(&pairs(&[("HCP_A", "1"), ("HCP_B", ""), ("HCP_C", "3")]), &server),
        Some("HCP_B")
    );
    assert_eq!(
        first_difference(&pairs(&[("HCP_A", "2"), ("HCP_C", "4")]), &server),
        Some("HCP_A")
    );
}

#[test]
fn hcp_resident_says_off_require_or_auto() {
    for (value, mode) in [
        (None, Mode::Auto),
        (Some(""), Mode::Auto),
        (Some("auto"), Mode::Auto),
        (Some("off"), Mode::Off),
        (Some(" OFF "), Mode::Off),
        (Some("0"), Mode::Off),
        (Some("false"), Mode::Off),
        (Some("no"), Mode::Off),
        (Some("require"), Mode::Require),
        (Some("Require"), Mode::Require),
        (Some("yes"), Mode::Auto),
    ] {
        assert_eq!(Mode::from_value(value), mode, "{value:?}");
    }
}

fn shared(env: &[(&str, &str)]) -> Shared {
    let base = Context::new(pairs(env), "/w".into(), false).unwrap();
    Shared {
        own: hcpx_process::runtime::Surroundings::own().unwrap(),
        uid: 0,
        settings: settings(
            base.env
                .iter()
                .map(|(name, value)| (name.as_str(), value.as_str())),
        ),
        base,
        retire: tokio_util::sync::CancellationToken::new(),
        marks: false,
        clear: hcpx_process::runtime::Clear::default(),
    }
}

fn request(env: &[(&str, &str)], cwd: &str) -> Request {
    Request {
        argv: vec!["exec".to_owned(), "p".to_owned(), "c".to_owned()],
        env: pairs(env),
        cwd: cwd.into(),
        terminals: (false, true),
    }
}

/// A call runs with the client's environment, folder and caller, on the server's
/// session, never interactively; other settings, another home or a relative folder
/// are refused.
#[test]
fn a_call_gets_the_clients_context_on_the_servers_session() {
    let server = shared(&[("HOME", "/u"), ("HCP_HOME", "/h")]);
    let Call { argv, ctx, terminals } = context(
        request(
            &[
                ("HOME", "/other"),
                ("HCP_HOME", "/h"),
                ("HCP_AGENT", "1"),
                ("LANG", "C"),
            ],
            "/c",
        ),
        &server,
    )
    .unwrap();
    assert_eq!(argv, ["exec", "p", "c"]);
    assert_eq!(terminals, (false, true));
    assert_eq!(ctx.cwd, std::path::Path::new("/c"));
    assert_eq!(ctx.var("LANG"), Some("C"));
    assert_eq!(ctx.principal, crate::Principal::Agent);
    assert!(!ctx.interactive && ctx.human.is_none());
    assert!(Arc::ptr_eq(&ctx.session, &server.base.session));
    assert_eq!(
        context(
            request(&[("HCP_HOME", "/h"), ("HCP_SANDBOX", "best-effort")], "/c"),
            &server
        )
        .err(),
        Some("the client's HCP_SANDBOX differs from the server's".to_owned())
    );
    assert_eq!(
        context(request(&[("HCP_HOME", "/h")], "c"), &server).err(),
        Some("the client's working folder is not absolute".to_owned())
    );
    // The same home under another name is another home.
    let by_home = shared(&[("HOME", "/u")]);
    assert_eq!(
        context(request(&[("HOME", "/v")], "/c"), &by_home).err(),
        Some("the client's HCP_HOME is /v/.hcp, the server's /u/.hcp".to_owned())
    );
}

/// A server that answers a client's connection with `frames` (after reading the
/// request), then closes it: what `hand_off` makes of it, and what it printed.
fn handed_to(frames: &[Frame]) -> (HandOff, crate::BufferSink) {
    use std::io::{Read as _, Write as _};
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(crate::layout::resident(home.path())).unwrap();
    let listener =
        std::os::unix::net::UnixListener::bind(crate::layout::resident_socket(home.path())).unwrap();
    let mut bytes = Vec::new();
    frames.iter().for_each(|frame| frame.write_to(&mut bytes));
    let server = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let mut length = [0_u8; 4];
        stream.read_exact(&mut length).unwrap();
        let mut body = vec![0_u8; u32::from_be_bytes(length) as usize];
        stream.read_exact(&mut body).unwrap();
        stream.write_all(&bytes).unwrap();
    });
    let request = request(&[("HCP_HOME", home.path().to_str().unwrap())], "/c");
    let outgoing = Outgoing {
        argv: &request.argv,
        env: &request.env,
        cwd: &request.cwd,
        terminals: request.terminals,
    };
    let mut sink = crate::BufferSink::default();
    let handed = hand_off(&outgoing, &mut sink);
    server.join().unwrap();
    (handed, sink)
}

/// Until the server says it runs the call, nothing has run: a refusal or a closed
/// connection sends the call back to the process. After it, a closed connection
/// leaves the call's fate unknown, and the call is not run again.
#[test]
fn a_call_is_run_again_in_the_process_only_if_the_server_never_started_it() {
    let (handed, _) = handed_to(&[Frame::Refused("why".to_owned())]);
    assert_eq!(
        handed,
        HandOff::Local("the resident server refused the call: why".to_owned())
    );
    let (handed, _) = handed_to(&[]);
    assert_eq!(
        handed,
        HandOff::Local("the resident server closed the connection before it ran the call".to_owned())
    );
    let (handed, sink) = handed_to(&[
        Frame::Started,
        Frame::Stdout("out".to_owned()),
        Frame::Stderr("err".to_owned()),
        Frame::Exit(3),
    ]);
    assert_eq!(
        (handed, sink.stdout.as_str(), sink.stderr.as_str()),
        (HandOff::Served(3), "out", "err")
    );
    let (handed, sink) = handed_to(&[Frame::Started, Frame::Stdout("part".to_owned())]);
    assert_eq!(
        handed,
        HandOff::Lost(
            "the resident server stopped before the call's result came back; the call may have run, \
             so it is not run again"
                .to_owned()
        )
    );
    assert_eq!(sink.stdout, "part");
    let (handed, _) = handed_to(&[Frame::Stdout("early".to_owned())]);
    assert!(matches!(handed, HandOff::Lost(_)), "{handed:?}");
}
