//! Rebuild when a built-in pack or host file changes: `include_dir!` embeds them but
//! cannot tell cargo to watch them on stable Rust.
fn main() {
    println!("cargo:rerun-if-changed=packs");
    println!("cargo:rerun-if-changed=adopt");
}
