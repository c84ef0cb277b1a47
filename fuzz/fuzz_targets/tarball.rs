//! The npm tarball reader, `install::read_tarball`, on arbitrary bytes. Input
//! that does not start like gzip is taken as a plain tar and compressed here
//! first, so the fuzzer works on the tar structure rather than on deflate. The
//! reader may refuse, but never panic; what it returns is only the pack's own
//! files (hcp.json, SKILL.md and the `./FILE` that `bin` names), none too large.

#![no_main]

use std::io::Write as _;
use std::path::Component;

use hcpx::install::{MAX_FILE, read_tarball};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let gzipped;
    let bytes = if data.starts_with(&[0x1f, 0x8b]) {
        data
    } else {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        encoder.write_all(data).unwrap();
        gzipped = encoder.finish().unwrap();
        &gzipped
    };
    let read = read_tarball(std::io::Cursor::new(bytes));
    // One entry that escapes, is a link or a special file, or is too large
    // refuses the whole package, wherever it is.
    if dangerous(bytes) {
        assert!(read.is_err(), "took a package with a dangerous entry");
    }
    let Ok(files) = read else {
        return;
    };
    let manifest = files.get("hcp.json").expect("hcp.json is taken");
    assert!(files.contains_key("SKILL.md"));
    let value: serde_json::Value = serde_json::from_slice(manifest).unwrap_or_default();
    let bin = value["bin"][0].as_str().and_then(|bin| bin.strip_prefix("./"));
    for (name, content) in &files {
        assert!(
            name == "hcp.json" || name == "SKILL.md" || Some(name.as_str()) == bin,
            "took {name:?}"
        );
        assert!(
            !name.is_empty() && !name.contains('/') && name != "." && name != "..",
            "{name:?}"
        );
        assert!(content.len() as u64 <= MAX_FILE);
    }
    let _ = hcpx::install::validate(&files);
});

/// Whether the archive, read up to its first damage, holds an entry that must
/// refuse it.
fn dangerous(bytes: &[u8]) -> bool {
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(bytes));
    let Ok(entries) = archive.entries() else {
        return false;
    };
    for entry in entries {
        let Ok(entry) = entry else {
            return false;
        };
        let Ok(path) = entry.path() else {
            return false;
        };
        let escapes = path.components().any(|part| {
            matches!(
                part,
                Component::ParentDir | Component::RootDir | Component::Prefix(_)
            )
        });
        let kind = entry.header().entry_type();
        let skipped = kind.is_dir() || kind.is_pax_global_extensions();
        if escapes || !(kind.is_file() || skipped) || (kind.is_file() && entry.size() > MAX_FILE) {
            return true;
        }
    }
    false
}
