//! Compiles every `.proto` file under `proto/` with protox (a pure-Rust protobuf
//! compiler) and generates prost code. No system `protoc` is involved.
//!
//! Each file is compiled on its own (together with what it imports) and the results
//! are merged by file name. Hadoop never compiles all of its `.proto` files into one
//! pool, and two of them declare a top-level enum value with the same name in package
//! `hadoop.yarn` (`NodeActionProto.NORMAL` in `yarn_server_common_protos.proto` and
//! `DecommissionTypeProto.NORMAL` in the RM admin messages), which a single pool would
//! reject. Per-file compilation checks exactly what Hadoop's own build checks.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use prost::Message;
use prost_types::FileDescriptorSet;

fn collect(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            collect(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "proto") {
            out.push(path);
        }
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?).join("proto");
    let mut files = Vec::new();
    collect(&root, &mut files)?;
    files.sort();
    println!("cargo:rerun-if-changed={}", root.display());
    for f in &files {
        println!("cargo:rerun-if-changed={}", f.display());
    }

    // Every compilation returns its files in dependency order, so appending the
    // not-yet-seen ones keeps the merged set topologically sorted.
    let mut merged = FileDescriptorSet::default();
    let mut seen = HashSet::new();
    for f in &files {
        let set = protox::compile([f], [&root])?;
        for file in set.file {
            if seen.insert(file.name.clone().unwrap_or_default()) {
                merged.file.push(file);
            }
        }
    }

    let out_dir = PathBuf::from(std::env::var("OUT_DIR")?);
    // Keep the descriptor set: tests compare it field by field with Hadoop's.
    std::fs::write(out_dir.join("descriptors.bin"), merged.encode_to_vec())?;
    prost_build::Config::new().compile_fds(merged)?;
    Ok(())
}
