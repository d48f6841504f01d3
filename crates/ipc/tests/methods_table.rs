//! The table of methods (`spindle_ipc::methods`) stays true to the `.proto`
//! services and stays the one place a method name is written:
//!
//! - each protocol module lists every `rpc` of its `.proto` service, in
//!   order, with the same request and response messages, and nothing else;
//! - the workspace's production code names no method by a string literal: it
//!   uses the table's constants.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use prost::Message;
use prost_types::{FileDescriptorSet, ServiceDescriptorProto};
use spindle_ipc::methods::{self, Signature};
use spindle_ipc::protocols;

/// Each protocol module with its `.proto` file and service.
fn table() -> Vec<(&'static str, &'static str, &'static [Signature])> {
    vec![
        (
            "applicationclient_protocol.proto",
            "ApplicationClientProtocolService",
            methods::application_client::ALL,
        ),
        (
            "applicationmaster_protocol.proto",
            "ApplicationMasterProtocolService",
            methods::application_master::ALL,
        ),
        (
            "containermanagement_protocol.proto",
            "ContainerManagementProtocolService",
            methods::container_management::ALL,
        ),
        (
            "ResourceTracker.proto",
            "ResourceTrackerService",
            methods::resource_tracker::ALL,
        ),
        (
            "server/resourcemanager_administration_protocol.proto",
            "ResourceManagerAdministrationProtocolService",
            methods::resource_manager_administration::ALL,
        ),
        (
            "HAServiceProtocol.proto",
            "HAServiceProtocolService",
            methods::ha_service::ALL,
        ),
    ]
}

fn service(set: &FileDescriptorSet, file: &str, name: &str) -> ServiceDescriptorProto {
    let f = set
        .file
        .iter()
        .find(|f| f.name.as_deref() == Some(file))
        .unwrap_or_else(|| panic!("{file} is not compiled"));
    f.service
        .iter()
        .find(|s| s.name.as_deref() == Some(name))
        .unwrap_or_else(|| panic!("{file} has no service {name}"))
        .clone()
}

/// The Rust path prost gives the message a descriptor names
/// (`.hadoop.yarn.AllocateRequestProto` → `hadoop_protos::yarn::AllocateRequestProto`).
fn rust_path(proto_type: &str) -> String {
    let name = proto_type.trim_start_matches('.');
    for (package, module) in [
        ("hadoop.yarn.", "hadoop_protos::yarn::"),
        ("hadoop.common.", "hadoop_protos::common::"),
    ] {
        if let Some(short) = name.strip_prefix(package) {
            return format!("{module}{short}");
        }
    }
    panic!("{proto_type} is in no package prost compiles")
}

#[test]
fn each_protocol_lists_its_proto_service_with_the_same_messages() {
    let set = FileDescriptorSet::decode(hadoop_protos::FILE_DESCRIPTOR_SET).expect("descriptors");
    for (file, name, all) in table() {
        let rpcs = service(&set, file, name).method;
        let ours: Vec<String> = all.iter().map(|s| format!("{s:?}")).collect();
        let theirs: Vec<String> = rpcs
            .iter()
            .map(|m| {
                format!(
                    "{}({}) -> {}",
                    m.name(),
                    rust_path(m.input_type()),
                    rust_path(m.output_type())
                )
            })
            .collect();
        assert_eq!(ours, theirs, "{name} in {file}");
    }
}

#[test]
fn the_table_names_each_protocol_as_its_callers_do() {
    use methods::{application_master as am, container_management as cm, ha_service as ha};
    use methods::{resource_manager_administration as admin, resource_tracker as rt};
    // One method of each module: a module names its protocol in one line.
    for (protocol, expected) in [
        (
            methods::application_client::GET_APPLICATIONS.protocol,
            protocols::APPLICATION_CLIENT,
        ),
        (am::ALLOCATE.protocol, protocols::APPLICATION_MASTER),
        (
            cm::START_CONTAINERS.protocol,
            protocols::CONTAINER_MANAGEMENT,
        ),
        (rt::NODE_HEARTBEAT.protocol, protocols::RESOURCE_TRACKER),
        (
            admin::REFRESH_QUEUES.protocol,
            protocols::RESOURCE_MANAGER_ADMINISTRATION,
        ),
        (ha::GET_SERVICE_STATUS.protocol, protocols::HA_SERVICE),
    ] {
        assert_eq!(protocol, expected);
    }
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs")
            && !p.to_string_lossy().ends_with("tests.rs")
        {
            out.push(p);
        }
    }
}

/// Production code of every crate and of the integration harness: each file
/// up to its `#[cfg(test)]` module, but the table itself.
fn production_sources() -> Vec<(PathBuf, String)> {
    let root = workspace();
    let mut files = Vec::new();
    for krate in std::fs::read_dir(root.join("crates"))
        .expect("crates/")
        .flatten()
    {
        rust_files(&krate.path().join("src"), &mut files);
    }
    rust_files(&root.join("integration/src"), &mut files);
    let table = root.join("crates/ipc/src/methods");
    files.retain(|p| !p.starts_with(&table));
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).expect("read");
            let code = match text.find("#[cfg(test)]") {
                Some(i) => text[..i].to_string(),
                None => text,
            };
            (p, code)
        })
        .collect()
}

#[test]
fn production_code_names_methods_only_through_the_table() {
    // A name two protocols share (`signalToContainer`) is looked for once.
    let names: BTreeSet<&str> = table()
        .into_iter()
        .flat_map(|(_, _, all)| all.iter().map(|s| s.name))
        .collect();
    let sources = production_sources();
    assert!(
        sources
            .iter()
            .any(|(p, _)| p.ends_with("rm/src/rpc/ams_service.rs")),
        "the scan found the RM's services"
    );
    let mut found = Vec::new();
    for (path, code) in &sources {
        for (n, line) in code.lines().enumerate() {
            for name in &names {
                if line.contains(&format!("\"{name}\"")) {
                    let shown = path.strip_prefix(workspace()).unwrap_or(path);
                    found.push(format!("{}:{}: \"{name}\"", shown.display(), n + 1));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "method names written outside spindle_ipc::methods (use its constants):\n{}",
        found.join("\n")
    );
}
