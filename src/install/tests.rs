//! Installs against what can go wrong: hostile folders and tarballs, crashes at every
//! point of a change, and the refusals people read.

use std::path::Path;

use super::journal::recover;
use super::place::{CRASH_AT, TWO_RENAMES};
use super::*;
use crate::catalog::{MANIFEST_FILE, SKILL_FILE};
use crate::layout;
use crate::manifest::Problem;

fn files(version: &str) -> Files {
    let manifest = format!(
        r#"{{"hcp":1,"id":"demo","version":"{version}","description":"d","bin":["./demo"],
        "commands":{{"go":{{"summary":"s","effect":"read","argv":[]}}}}}}"#
    );
    [
        (MANIFEST_FILE.to_owned(), manifest.into_bytes()),
        (
            SKILL_FILE.to_owned(),
            b"---\nname: demo\ndescription: d\n---\n".to_vec(),
        ),
        ("demo".to_owned(), b"#!/bin/sh\necho hi\n".to_vec()),
    ]
    .into()
}

#[test]
fn place_same_version_is_unchanged_and_another_replaces() {
    let home = tempfile::tempdir().unwrap();
    let v1 = files("1.0.0");
    let manifest = validate(&v1).unwrap();
    assert_eq!(
        place(home.path(), &v1, &manifest, "./demo", "t".into()).unwrap(),
        Placed::Installed { previous: None }
    );
    assert_eq!(
        place(home.path(), &v1, &manifest, "./demo", "t".into()).unwrap(),
        Placed::Unchanged
    );
    let v2 = files("2.0.0");
    let manifest = validate(&v2).unwrap();
    let Placed::Installed {
        previous: Some(previous),
    } = place(home.path(), &v2, &manifest, "./demo", "t".into()).unwrap()
    else {
        panic!("2.0.0 replaces 1.0.0")
    };
    assert_eq!(previous.version, "1.0.0");
    assert_eq!(previous.integrity, integrity(&v1));
    let lock = LockFile::load(&layout::lock_file(home.path())).unwrap();
    assert_eq!(lock.packs["demo"].version, "2.0.0");
    assert!(lock.packs["demo"].integrity.starts_with("sha512-"));
    let names: Vec<_> = std::fs::read_dir(layout::packs(home.path()))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        names,
        vec![std::ffi::OsString::from("demo")],
        "no staging left behind"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(layout::packs(home.path()).join("demo/demo"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o755);
    }
    assert!(remove(home.path(), "demo").unwrap());
    assert!(!remove(home.path(), "demo").unwrap());
}

#[test]
fn integrity_depends_on_every_byte_and_name() {
    let a = files("1.0.0");
    let mut b = a.clone();
    b.insert("demo".into(), b"#!/bin/sh\necho ho\n".to_vec());
    assert_ne!(integrity(&a), integrity(&b));
}

fn tarball(entries: &[(&str, &[u8], tar::EntryType)]) -> Vec<u8> {
    let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(
        Vec::new(),
        flate2::Compression::fast(),
    ));
    for (name, bytes, kind) in entries {
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(*kind);
        header.set_size(bytes.len() as u64);
        header.set_mode(0o644);
        if kind.is_symlink() {
            header.set_link_name("/etc/passwd").unwrap();
            header.set_size(0);
        }
        // Write the raw name so `..` survives (set_path refuses it).
        let raw = &mut header.as_old_mut().name;
        raw[..name.len()].copy_from_slice(name.as_bytes());
        header.set_cksum();
        builder.append(&header, *bytes).unwrap();
    }
    builder.into_inner().unwrap().finish().unwrap()
}

#[test]
fn tarballs_take_only_the_three_files_and_refuse_the_dangerous() {
    let good = files("1.0.0");
    let regular = tar::EntryType::Regular;
    let mut entries: Vec<(String, Vec<u8>, tar::EntryType)> = good
        .iter()
        .map(|(name, bytes)| (format!("package/{name}"), bytes.clone(), regular))
        .collect();
    entries.push(("package/README.md".into(), b"extra".to_vec(), regular));
    let view: Vec<(&str, &[u8], tar::EntryType)> = entries
        .iter()
        .map(|(n, b, k)| (n.as_str(), b.as_slice(), *k))
        .collect();
    assert_eq!(read_tarball(std::io::Cursor::new(tarball(&view))).unwrap(), good);
    for (bad, message) in [
        (("package/../evil", b"x".as_slice(), regular), "escapes"),
        (("package/link", b"".as_slice(), tar::EntryType::Symlink), "link"),
        (("package/dev", b"".as_slice(), tar::EntryType::Char), "device"),
    ] {
        let mut with = view.clone();
        with.push(bad);
        let error = read_tarball(std::io::Cursor::new(tarball(&with)))
            .unwrap_err()
            .to_string();
        assert!(error.contains(message), "{error}");
    }
}

/// A pack file swapped for a link to an outside file while it is read: the
/// outside content must never be taken. The swapper flips the name between a
/// regular file and a link with atomic renames, as fast as it can.
#[cfg(unix)]
#[test]
fn folder_read_never_follows_a_link_swapped_in() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("pack");
    std::fs::create_dir(&dir).unwrap();
    for (name, bytes) in files("1.0.0") {
        std::fs::write(dir.join(name), bytes).unwrap();
    }
    let outside = root.path().join("outside");
    std::fs::write(&outside, b"#!/bin/sh\necho SECRET-OUTSIDE\n").unwrap();
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let swapper = {
        let (dir, outside, stop) = (dir.clone(), outside.clone(), stop.clone());
        std::thread::spawn(move || {
            let (link, regular) = (dir.join(".link"), dir.join(".regular"));
            while !stop.load(Ordering::Relaxed) {
                let _ = std::os::unix::fs::symlink(&outside, &link);
                let _ = std::fs::rename(&link, dir.join("demo"));
                let _ = std::fs::write(&regular, b"#!/bin/sh\necho hi\n");
                let _ = std::fs::rename(&regular, dir.join("demo"));
            }
        })
    };
    let mut taken = 0;
    for _ in 0..20000 {
        if let Ok(read) = read_folder(&dir) {
            taken += 1;
            assert_eq!(
                read["demo"],
                b"#!/bin/sh\necho hi\n".to_vec(),
                "outside content taken"
            );
        }
    }
    stop.store(true, Ordering::Relaxed);
    swapper.join().unwrap();
    assert!(taken > 0, "no read succeeded at all");
}

#[cfg(unix)]
#[test]
fn folder_read_refuses_hard_links_and_special_files() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("pack");
    std::fs::create_dir(&dir).unwrap();
    for (name, bytes) in files("1.0.0") {
        std::fs::write(dir.join(name), bytes).unwrap();
    }
    assert_eq!(read_folder(&dir).unwrap(), files("1.0.0"));
    std::fs::hard_link(dir.join("demo"), root.path().join("elsewhere")).unwrap();
    let error = read_folder(&dir).unwrap_err();
    assert!(
        matches!(&error, InstallError::FolderHardLink { name, links: 2 } if name == "demo"),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        "demo has other hard links; packs carry files of their own"
    );
    std::fs::remove_file(root.path().join("elsewhere")).unwrap();
    std::fs::remove_file(dir.join("demo")).unwrap();
    std::os::unix::fs::symlink(dir.join(SKILL_FILE), dir.join("demo")).unwrap();
    let error = read_folder(&dir).unwrap_err();
    assert!(
        matches!(&error, InstallError::FolderLink { name } if name == "demo"),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        "demo is a link; packs carry regular files only"
    );
    std::fs::remove_file(dir.join("demo")).unwrap();
    std::fs::create_dir(dir.join("demo")).unwrap();
    let error = read_folder(&dir).unwrap_err();
    assert!(
        matches!(&error, InstallError::FolderNotRegular { name } if name == "demo"),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        "demo is not a regular file (a device, a FIFO or a folder)"
    );
}

fn pack_entries() -> Vec<(String, Vec<u8>, tar::EntryType)> {
    files("1.0.0")
        .into_iter()
        .map(|(name, bytes)| (format!("package/{name}"), bytes, tar::EntryType::Regular))
        .collect()
}

fn view(entries: &[(String, Vec<u8>, tar::EntryType)]) -> Vec<(&str, &[u8], tar::EntryType)> {
    entries
        .iter()
        .map(|(n, b, k)| (n.as_str(), b.as_slice(), *k))
        .collect()
}

/// A small tarball that unpacks to far more than the bound (zero-filled 16 MiB
/// extra files) is refused by the bound, never held in memory.
#[test]
fn tarball_bombs_stop_at_the_unpacked_bound() {
    let zeros = vec![0_u8; MAX_FILE as usize];
    let mut entries = pack_entries();
    for i in 0..5 {
        entries.push((
            format!("package/zeros{i}"),
            zeros.clone(),
            tar::EntryType::Regular,
        ));
    }
    let bytes = tarball(&view(&entries));
    assert!(bytes.len() < 1024 * 1024, "{} bytes", bytes.len());
    let error = read_tarball(std::io::Cursor::new(bytes)).unwrap_err();
    assert!(
        matches!(
            error,
            InstallError::Bound {
                bound: Limit::UnpackedBytes,
                limit: MAX_UNPACKED
            }
        ),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        "the package unpacks to more than 64 MiB, the most an install reads"
    );
}

#[test]
fn tarballs_with_too_many_entries_or_twice_a_pack_file_are_refused() {
    let mut entries = pack_entries();
    for i in 0..MAX_ENTRIES {
        entries.push((format!("package/f{i}"), Vec::new(), tar::EntryType::Regular));
    }
    let error = read_tarball(std::io::Cursor::new(tarball(&view(&entries)))).unwrap_err();
    assert!(
        matches!(
            error,
            InstallError::Bound {
                bound: Limit::Entries,
                limit: MAX_ENTRIES
            }
        ),
        "{error:?}"
    );
    let mut entries = pack_entries();
    entries.push((
        "package/demo".into(),
        b"#!/bin/sh\necho other\n".to_vec(),
        tar::EntryType::Regular,
    ));
    let error = read_tarball(std::io::Cursor::new(tarball(&view(&entries)))).unwrap_err();
    assert_eq!(error.to_string(), "the package holds demo twice");
    // Files below the top are not pack files, whatever their name.
    let mut entries = pack_entries();
    entries.push(("package/lib/demo".into(), b"x".to_vec(), tar::EntryType::Regular));
    assert_eq!(
        read_tarball(std::io::Cursor::new(tarball(&view(&entries)))).unwrap(),
        files("1.0.0")
    );
}

/// What the lock and the folder say about `demo` after recovery: the version
/// both agree on, or `None` when neither has it. Nothing may be left over.
fn agreed(home: &Path) -> Option<String> {
    let _lock = layout::lock(home).unwrap();
    recover(home).unwrap();
    let packs = layout::packs(home);
    let left: Vec<_> = std::fs::read_dir(&packs)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name != "demo")
        .collect();
    assert_eq!(left, Vec::<String>::new());
    let lock = LockFile::load(&layout::lock_file(home)).unwrap();
    match (lock.packs.get("demo"), read_folder(&packs.join("demo")).ok()) {
        (None, None) => None,
        (Some(entry), Some(files)) => {
            assert_eq!(entry.integrity, integrity(&files));
            Some(validate(&files).unwrap().version.to_string())
        }
        (entry, files) => panic!("lock {entry:?}, files {files:?}"),
    }
}

/// Every point where an install or uninstall can die, on both the one-step
/// swap and the two-rename path: recovery leaves the old state or the new one,
/// with the lock and the folder in agreement.
#[test]
fn a_crash_at_each_point_is_finished_or_rolled_back() {
    let expected = [
        // (point, two renames, what the crashed change was, state after recovery)
        ("journaled", false, "install", Some("1.0.0")),
        ("staged", false, "install", Some("1.0.0")),
        ("swapped", false, "install", Some("2.0.0")),
        ("locked", false, "install", Some("2.0.0")),
        ("staged", true, "install", Some("1.0.0")),
        ("aside", true, "install", Some("1.0.0")),
        ("swapped", true, "install", Some("2.0.0")),
        ("journaled", false, "remove", Some("1.0.0")),
        ("moved", false, "remove", None),
        ("locked", false, "remove", None),
    ];
    for (point, two, change, after) in expected {
        let home = tempfile::tempdir().unwrap();
        let v1 = files("1.0.0");
        place(home.path(), &v1, &validate(&v1).unwrap(), "./demo", "t".into()).unwrap();
        CRASH_AT.with(|at| at.set(Some(point)));
        TWO_RENAMES.with(|t| t.set(two));
        let v2 = files("2.0.0");
        let error = if change == "install" {
            place(home.path(), &v2, &validate(&v2).unwrap(), "./demo", "t".into()).unwrap_err()
        } else {
            remove(home.path(), "demo").unwrap_err()
        };
        CRASH_AT.with(|at| at.set(None));
        TWO_RENAMES.with(|t| t.set(false));
        assert!(
            matches!(error, InstallError::Crash(p) if p == point),
            "{point}: {error}"
        );
        assert!(
            layout::work(home.path()).is_dir(),
            "{point}: the work folder is there"
        );
        assert_eq!(
            agreed(home.path()).as_deref(),
            after,
            "{change} crashed at {point} (two renames: {two})"
        );
        // And the next install of 1.0.0 reports a change exactly when it is one.
        let outcome = place(home.path(), &v1, &validate(&v1).unwrap(), "./demo", "t".into()).unwrap();
        assert_eq!(outcome == Placed::Unchanged, after == Some("1.0.0"), "{point}");
    }
}

#[test]
fn same_place_is_the_npm_name_the_folder_or_the_builtin() {
    assert!(same_place("npm:rt@1.0.0", "npm:rt@2.0.0"));
    assert!(same_place("npm:@acme/rt@1.0.0", "npm:@acme/rt@2.0.0"));
    assert!(!same_place("npm:@acme/rt@1.0.0", "npm:@evil/rt@1.0.0"));
    assert!(!same_place("npm:rt@1.0.0", "npm:rtx@1.0.0"));
    assert!(!same_place("npm:rt@1.0.0", "/home/me/rt"));
    assert!(same_place("/home/me/rt", "/home/me/rt"));
    assert!(!same_place("/home/me/rt", "/tmp/rt"));
    assert!(same_place("builtin:git", "builtin:git"));
}

/// Each refusal is its own variant carrying what was refused, and reads as it
/// always has: the message is what users see, the variant is what code branches on.
#[test]
fn tarball_refusals_are_typed_and_read_as_before() {
    let refuse = |extra: Vec<(String, Vec<u8>, tar::EntryType)>| {
        let mut entries = pack_entries();
        entries.extend(extra);
        read_tarball(std::io::Cursor::new(tarball(&view(&entries)))).unwrap_err()
    };
    let entry = |name: &str, kind| vec![(name.to_owned(), b"".to_vec(), kind)];
    let cases = [
        (
            refuse(entry("package/../evil", tar::EntryType::Regular)),
            "the package has a path that escapes it",
        ),
        (
            refuse(entry("package/link", tar::EntryType::Symlink)),
            "the package holds a link; packs carry regular files only",
        ),
        (
            refuse(entry("package/hard", tar::EntryType::Link)),
            "the package holds a link; packs carry regular files only",
        ),
        (
            refuse(entry("package/dev", tar::EntryType::Char)),
            "the package holds a device or special file",
        ),
        (
            refuse(entry("package/demo", tar::EntryType::Regular)),
            "the package holds demo twice",
        ),
    ];
    let messages: Vec<String> = cases.iter().map(|(error, _)| error.to_string()).collect();
    let expected: Vec<&str> = cases.iter().map(|(_, message)| *message).collect();
    assert_eq!(messages, expected);
    let [escapes, symbolic, hard, device, twice] = cases.map(|(error, _)| error);
    assert!(
        matches!(&escapes, InstallError::PackageEscapes { path } if path == Path::new("package/../evil")),
        "{escapes:?}"
    );
    assert!(
        matches!(&symbolic, InstallError::PackageLink { path, link: LinkKind::Symbolic } if path == Path::new("package/link")),
        "{symbolic:?}"
    );
    assert!(
        matches!(&hard, InstallError::PackageLink { path, link: LinkKind::Hard } if path == Path::new("package/hard")),
        "{hard:?}"
    );
    assert!(
        matches!(&device, InstallError::PackageSpecial { path } if path == Path::new("package/dev")),
        "{device:?}"
    );
    assert!(
        matches!(&twice, InstallError::PackageTwice { name } if name == "demo"),
        "{twice:?}"
    );
    // No hcp.json at the top, and a pack file the manifest names is missing.
    let only = |names: &[&str]| {
        let entries: Vec<_> = pack_entries()
            .into_iter()
            .filter(|(name, _, _)| names.iter().any(|keep| name.ends_with(keep)))
            .collect();
        read_tarball(std::io::Cursor::new(tarball(&view(&entries)))).unwrap_err()
    };
    let no_manifest = only(&[SKILL_FILE, "demo"]);
    assert!(
        matches!(no_manifest, InstallError::PackageNoManifest),
        "{no_manifest:?}"
    );
    assert_eq!(no_manifest.to_string(), "the package has no hcp.json at its top");
    let no_cli = only(&[MANIFEST_FILE, SKILL_FILE]);
    assert!(
        matches!(&no_cli, InstallError::PackageMissing { name } if name == "demo"),
        "{no_cli:?}"
    );
    assert_eq!(no_cli.to_string(), "the package has no demo");
}

#[test]
fn state_and_id_refusals_are_typed_and_read_as_before() {
    let home = tempfile::tempdir().unwrap();
    let lock_path = layout::lock_file(home.path());
    std::fs::write(&lock_path, "{\n  \"version\": 1,\n  oops\n}\n").unwrap();
    let error = LockFile::load(&lock_path).unwrap_err();
    assert!(
        matches!(&error, InstallError::LockUnparsable { path, line: 3 } if *path == lock_path),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        format!(
            "{} cannot be parsed (line 3); fix or remove it, it is never overwritten",
            lock_path.display()
        )
    );
    let error = remove(home.path(), "Not An Id").unwrap_err();
    assert!(
        matches!(&error, InstallError::NotAPackId { id } if id == "Not An Id"),
        "{error:?}"
    );
    assert_eq!(error.to_string(), "\"Not An Id\" is not a pack id");
    let error = validate(&[(MANIFEST_FILE.to_owned(), vec![0xff, 0xfe])].into()).unwrap_err();
    assert!(matches!(error, InstallError::ManifestNotUtf8), "{error:?}");
    assert_eq!(error.to_string(), "hcp.json is not UTF-8 text");
}

/// The check `pack check` and install share, on one folder changed step by step:
/// a CLI file that is not executable passes with a note (install copies it
/// executable); a link, a hard link or a missing file is the problem install would
/// refuse, named by the file, every problem listed; and install's own reading gives
/// the same verdict each time.
#[cfg(unix)]
#[test]
fn check_folder_judges_as_install_does() {
    use std::os::unix::fs::PermissionsExt as _;
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("pack");
    std::fs::create_dir(&dir).unwrap();
    for (name, bytes) in files("1.0.0") {
        std::fs::write(dir.join(name), bytes).unwrap();
    }
    let mode =
        |mode| std::fs::set_permissions(dir.join("demo"), std::fs::Permissions::from_mode(mode)).unwrap();
    let verdicts = || {
        let checked = check_folder(&dir);
        let installs = read_folder(&dir).and_then(|files| validate(&files));
        assert_eq!(
            checked.is_ok(),
            installs.is_ok(),
            "{checked:?} against {installs:?}"
        );
        checked.map(|checked| checked.notes)
    };
    mode(0o755);
    assert_eq!(verdicts(), Ok(Vec::new()));
    mode(0o644);
    assert_eq!(
        verdicts(),
        Ok(vec![
            "./demo is not executable in this folder; install copies it executable (chmod +x demo to run it \
             from here)"
                .to_owned()
        ])
    );
    let problem = |path: &str, message: &str| Problem {
        path: path.to_owned(),
        message: message.to_owned(),
    };
    std::fs::hard_link(dir.join("demo"), root.path().join("elsewhere")).unwrap();
    assert_eq!(
        verdicts(),
        Err(vec![problem(
            "bin[0]",
            "./demo has other hard links; packs carry files of their own"
        )])
    );
    std::fs::remove_file(root.path().join("elsewhere")).unwrap();
    std::fs::remove_file(dir.join("demo")).unwrap();
    std::fs::rename(dir.join(SKILL_FILE), root.path().join("skill")).unwrap();
    std::os::unix::fs::symlink(root.path().join("skill"), dir.join(SKILL_FILE)).unwrap();
    assert_eq!(
        verdicts(),
        Err(vec![
            problem("SKILL.md", "is a link; packs carry regular files only"),
            problem("bin[0]", "./demo is not in the pack"),
        ])
    );
    std::fs::remove_file(dir.join(SKILL_FILE)).unwrap();
    assert_eq!(
        verdicts(),
        Err(vec![
            problem("SKILL.md", "is missing; every pack has a SKILL.md for agents"),
            problem("bin[0]", "./demo is not in the pack"),
        ])
    );
    std::fs::remove_file(dir.join(MANIFEST_FILE)).unwrap();
    assert_eq!(verdicts(), Err(vec![problem("hcp.json", "is missing")]));
}
