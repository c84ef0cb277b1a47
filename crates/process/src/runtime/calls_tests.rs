use super::*;

/// A fake `/proc`: each process with its name and parent, and its threads'
/// children files when `listed`.
fn table(processes: &[(u32, &str, u32)], listed: bool) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (pid, name, parent) in processes {
        let at = dir.path().join(pid.to_string());
        std::fs::create_dir_all(at.join("task").join(pid.to_string())).unwrap();
        std::fs::write(at.join("comm"), format!("{name}\n")).unwrap();
        std::fs::write(
            at.join("stat"),
            format!(
                "{pid} ({name}) S {parent} {pid} {pid} 0 -1 4194560 107 0 0 0 0 0 0 0 20 0 1 0 {} 0\n",
                start_of(*pid)
            ),
        )
        .unwrap();
        if listed {
            let kids: Vec<String> = processes
                .iter()
                .filter(|(_, _, of)| of == pid)
                .map(|(kid, _, _)| kid.to_string())
                .collect();
            std::fs::write(
                at.join("task").join(pid.to_string()).join("children"),
                kids.join(" "),
            )
            .unwrap();
        }
    }
    dir
}

/// The start time the fake `/proc` gives process `pid`.
fn start_of(pid: u32) -> u64 {
    1000 + u64::from(pid)
}

const TREE: [(u32, &str, u32); 7] = [
    (1, "init", 0),
    (10, "bash", 1),
    (20, "hcpx", 10),
    (21, KEEPER_NAME, 20),
    (22, "python3", 21),
    (23, "sh", 22),
    (30, "claude", 10),
];

/// How each process of [`TREE`] is tied to a call.
const TIES: [(u32, Option<Tie>); 7] = [
    (1, None),
    (10, None),
    (20, Some(Tie::ActsForCall)),
    (21, Some(Tie::InCall)),
    (22, Some(Tie::InCall)),
    (23, Some(Tie::InCall)),
    (30, None),
];

/// Each process of [`TREE`], tied as `clear` (if any) says with the table.
fn ties(proc: &Path, clear: Option<&Clear>) -> Vec<(u32, Option<Tie>)> {
    TIES.iter()
        .map(|(pid, _)| (*pid, tie_in(proc, *pid, clear).unwrap()))
        .collect()
}

#[test]
fn a_calls_processes_its_keeper_and_its_starter_are_told_apart_from_the_rest() {
    for listed in [true, false] {
        let proc = table(&TREE, listed);
        assert_eq!(ties(proc.path(), None), TIES, "children listed: {listed}");
        assert_eq!(
            tie_in(proc.path(), 99, None).unwrap_err(),
            "process 99 cannot be read"
        );
    }
}

/// Remembering the processes found clear gives the same answers, and a client
/// whose ancestors were walked before is answered from its parent: with the
/// grandparents gone from the table, only the cache can still say they are clear.
#[test]
fn a_remembered_ancestry_gives_the_same_answers_from_the_parent() {
    let proc = table(&TREE, true);
    let clear = Clear::default();
    // Twice: the second time, the walks stop at what the first remembered.
    assert_eq!(ties(proc.path(), Some(&clear)), TIES);
    assert_eq!(ties(proc.path(), Some(&clear)), TIES);
    // Only the processes walked past on the way up from a clear one: bash.
    assert_eq!(*clear.0.lock().unwrap(), vec![(10, start_of(10))]);
    // A new client of bash's: init's entry is gone, and the walk stops at bash.
    let proc = table(&[(10, "bash", 1), (40, "hcpx", 10)], true);
    assert_eq!(tie_in(proc.path(), 40, Some(&clear)), Ok(None));
    assert!(!proc.path().join("1").exists());
}

/// A pid used again by another process is not the one remembered: its start
/// time differs, and its ancestors are walked again.
#[test]
fn a_reused_pid_is_walked_again() {
    let clear = Clear::default();
    clear.remember(&[(10, start_of(10) + 1)]);
    let proc = table(
        &[
            (1, "init", 0),
            (5, KEEPER_NAME, 1),
            (10, "sh", 5),
            (11, "hcpx", 10),
        ],
        true,
    );
    assert_eq!(tie_in(proc.path(), 11, Some(&clear)), Ok(Some(Tie::InCall)));
}

/// A walk cut short (an ancestor gone before it was read) says nothing about the
/// processes it passed: none is remembered.
#[test]
fn a_walk_cut_short_remembers_nothing() {
    let clear = Clear::default();
    let proc = table(&[(10, "sh", 9), (11, "hcpx", 10)], true);
    assert_eq!(tie_in(proc.path(), 11, Some(&clear)), Ok(None));
    assert!(clear.0.lock().unwrap().is_empty());
}

/// A process's reads in turn: its name, parent and start time, or `None` (gone).
type Reads = (u32, &'static [Option<(&'static str, u32, u64)>]);

/// A process table that changes between reads: each pid gives its statuses in
/// turn, the last from then on.
fn changing(script: &[Reads]) -> impl FnMut(u32) -> Option<Status> + use<> {
    let mut script: std::collections::HashMap<u32, std::collections::VecDeque<Option<Status>>> = script
        .iter()
        .map(|(pid, reads)| {
            let reads = reads.iter().map(|read| {
                read.map(|(name, parent, start)| Status {
                    name: name.to_owned(),
                    parent,
                    start: Some(start),
                })
            });
            (*pid, reads.collect())
        })
        .collect();
    move |pid| {
        let reads = script.get_mut(&pid)?;
        if reads.len() > 1 {
            reads.pop_front()?
        } else {
            reads.front()?.clone()
        }
    }
}

const INIT: Reads = (1, &[Some(("init", 0, 1))]);
const KEEPER: Reads = (5, &[Some((KEEPER_NAME, 1, 5))]);

/// The attack: a pack's process connects, and its parent, the only process
/// between it and the keeper, exits after the client was read and before the
/// parent was. The client now has the keeper (the call's subreaper) for parent.
#[test]
fn a_parent_that_exits_during_the_walk_is_not_taken_for_the_top() {
    let mut read = changing(&[
        INIT,
        KEEPER,
        (10, &[None]),
        (11, &[Some(("hcpx", 10, 11)), Some(("hcpx", 5, 11))]),
    ]);
    assert_eq!(ancestry(&mut read, 11, None), Ok(Some(Tie::InCall)));
}

/// The attack with the parent's pid given again, to a process of no call, before
/// it was read: the client's parent is the keeper by then.
#[test]
fn a_parents_pid_given_again_during_the_walk_is_not_taken_for_the_parent() {
    let clear = Clear::default();
    let mut read = changing(&[
        INIT,
        KEEPER,
        (10, &[Some(("bash", 1, 99))]),
        (11, &[Some(("hcpx", 10, 11)), Some(("hcpx", 5, 11))]),
    ]);
    assert_eq!(ancestry(&mut read, 11, Some(&clear)), Ok(Some(Tie::InCall)));
    assert!(clear.0.lock().unwrap().is_empty());
}

/// A process whose parent keeps changing under every walk is refused, not
/// walked forever.
#[test]
fn an_ancestry_that_keeps_changing_is_refused() {
    let mut reads = 0_u32;
    let mut read = |pid: u32| {
        reads += 1;
        let parent = if pid == 11 { 20 + reads } else { 1 };
        Some(Status {
            name: "sh".to_owned(),
            parent,
            start: Some(u64::from(pid)),
        })
    };
    assert_eq!(
        ancestry(&mut read, 11, None),
        Err("the ancestors of process 11 kept changing while they were read".to_owned())
    );
}

/// The attack on the one pass over `/proc` (which a TCP connection's holder is
/// searched with): the holder's parent, between it and the keeper, exits after the
/// holder's `stat` was read and before its own was; or its pid is given again, to a
/// process of no call, before it was read (a process that started after the one
/// below it is not its parent).
#[test]
fn a_parent_that_exits_during_the_pass_does_not_hide_its_child() {
    let gone: &[Option<(&str, u32, u64)>] = &[None];
    let given_again: &[Option<(&str, u32, u64)>] = &[Some(("bash", 1, 99))];
    for parent in [gone, given_again] {
        let mut read = changing(&[
            INIT,
            KEEPER,
            (10, parent),
            (11, &[Some(("curl", 10, 11)), Some(("curl", 5, 11))]),
        ]);
        assert_eq!(
            tied_among(&[1, 5, 10, 11], &mut read),
            vec![(1, Tie::ActsForCall), (5, Tie::InCall), (11, Tie::InCall)],
            "{parent:?}"
        );
    }
}

#[test]
fn a_clear_set_keeps_the_newest_processes() {
    let clear = Clear::default();
    let many: Vec<(u32, u64)> = (0..300).map(|pid| (pid, 7)).collect();
    clear.remember(&many);
    let kept = clear.0.lock().unwrap().clone();
    assert_eq!(kept, many[300 - CLEAR_KEPT..].to_vec());
}

#[test]
fn the_keeper_gives_itself_the_name_looked_for() {
    assert_eq!(KEEPER_NAME_C.to_str(), Ok(KEEPER_NAME));
    // The kernel keeps 15 bytes of a name.
    assert!(KEEPER_NAME.len() <= 15);
}

#[test]
fn stat_gives_the_name_and_the_parent_whatever_the_name_holds() {
    assert_eq!(
        parse_stat("4243 (hcpx-keeper) S 4242 4242 4242 0 -1 4194560 107 0 0 0\n"),
        Some(Status {
            name: KEEPER_NAME.to_owned(),
            parent: 4242,
            start: None
        })
    );
    // A pack may name itself anything: `) S 1 (` does not make pid 1 its parent.
    assert_eq!(
        parse_stat("4244 (a) S 1 (b) R 4243 4242 4242 0 -1\n"),
        Some(Status {
            name: "a) S 1 (b".to_owned(),
            parent: 4243,
            start: None
        })
    );
    assert_eq!(parse_stat("4245 (x\n"), None);
    // A whole line: the start time is field 22.
    assert_eq!(
        parse_stat(
            "4246 (s h) S 4242 4246 4242 34816 4246 4194304 120 0 0 0 0 0 0 0 20 0 1 0 987654 2555904 220\n"
        ),
        Some(Status {
            name: "s h".to_owned(),
            parent: 4242,
            start: Some(987_654)
        })
    );
}

#[test]
fn the_calls_processes_are_found_in_one_pass() {
    let proc = table(&TREE, false);
    assert_eq!(
        tied(proc.path()),
        vec![
            (20, Tie::ActsForCall),
            (21, Tie::InCall),
            (22, Tie::InCall),
            (23, Tie::InCall)
        ]
    );
    let quiet = table(&TREE[..3], false);
    assert_eq!(tied(quiet.path()), Vec::new());
}

#[test]
fn a_socket_is_found_with_the_call_process_that_holds_it() {
    let proc = table(&TREE, false);
    for pid in [20, 22, 23, 30] {
        std::fs::create_dir_all(proc.path().join(pid.to_string()).join("fd")).unwrap();
    }
    std::os::unix::fs::symlink("socket:[777]", proc.path().join("23/fd/3")).unwrap();
    std::os::unix::fs::symlink("socket:[888]", proc.path().join("30/fd/3")).unwrap();
    std::os::unix::fs::symlink("socket:[999]", proc.path().join("20/fd/7")).unwrap();
    assert_eq!(
        socket_holder_in(proc.path(), 777, 1000),
        Holder::Tied(23, Tie::InCall)
    );
    assert_eq!(
        socket_holder_in(proc.path(), 999, 1000),
        Holder::Tied(20, Tie::ActsForCall)
    );
    // Held by a process of no call (the user's host): not ours to refuse.
    assert_eq!(socket_holder_in(proc.path(), 888, 1000), Holder::None);
    // The keeper's descriptors cannot be listed here: as if it hid them. It may
    // hold a socket of its own user's, not one of another user's.
    std::fs::write(proc.path().join("21/fd"), "").unwrap();
    std::fs::write(
        proc.path().join("21/status"),
        "Name:\thcpx-keeper\nUid:\t1000\t1000\t1000\t1000\n",
    )
    .unwrap();
    assert_eq!(socket_holder_in(proc.path(), 555, 1000), Holder::Hidden(21));
    assert_eq!(socket_holder_in(proc.path(), 555, 65534), Holder::None);
}

#[test]
fn this_test_is_in_no_call() {
    assert_eq!(tie(std::process::id()), Ok(None));
}
