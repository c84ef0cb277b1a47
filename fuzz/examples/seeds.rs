//! Writes the tarball seeds in `seeds/tarball/`: an npm-style `.tgz` of the
//! built-in `jq` pack, and a plain tar of a tiny pack with its own CLI file (the
//! `tarball` target gzips input that is not gzip, so the fuzzer mutates the tar
//! structure itself). Run from `fuzz/`: `cargo +nightly run --example seeds`.

use std::io::Write as _;

fn tar(files: &[(&str, &[u8], u32)]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for (name, bytes, mode) in files {
        let mut header = tar::Header::new_gnu();
        header.set_size(bytes.len() as u64);
        header.set_mode(*mode);
        builder
            .append_data(&mut header, format!("package/{name}"), *bytes)
            .unwrap();
    }
    builder.into_inner().unwrap()
}

fn main() {
    let packs = std::path::Path::new("../packs/jq");
    let manifest = std::fs::read(packs.join("hcp.json")).unwrap();
    let skill = std::fs::read(packs.join("SKILL.md")).unwrap();
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    encoder
        .write_all(&tar(&[
            ("hcp.json", &manifest, 0o644),
            ("SKILL.md", &skill, 0o644),
        ]))
        .unwrap();
    std::fs::write("seeds/tarball/jq.tgz", encoder.finish().unwrap()).unwrap();

    let manifest = br#"{"hcp":1,"id":"demo","version":"1.0.0","description":"Demo.","bin":["./demo"],"commands":{"hi":{"summary":"Say hi.","effect":"read","argv":["hi"]}}}"#;
    let skill = b"---\nname: demo\ndescription: Demo.\n---\n# Demo\n";
    let mut plain = tar(&[
        ("hcp.json", manifest, 0o644),
        ("SKILL.md", skill, 0o644),
        ("demo", b"#!/bin/sh\necho hi\n", 0o755),
    ]);
    // The reader stops at the end of the data as at the two zero blocks.
    plain.truncate(plain.len() - 1024);
    std::fs::write("seeds/tarball/demo.tar", plain).unwrap();
}
