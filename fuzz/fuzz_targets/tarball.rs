//! The npm tarball reader, `install::read_tarball`, on arbitrary bytes. Input
//! that does not start like gzip is taken as a plain tar and compressed here
//! first, so the fuzzer works on the tar structure rather than on deflate. The
//! reader may refuse, but never panic; what it returns is only the pack's own
//! files (hcp.json, SKILL.md and the `./FILE` that `bin` names), none too large.

#![no_main]

use std::io::Write as _;

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
    let Ok(files) = read_tarball(bytes) else {
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
