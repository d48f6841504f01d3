//! Spindle's `.proto` files (hadoop-protos) against the descriptors compiled into the
//! Hadoop 3.3.4 client jars: every message, field (number, label, type, declared
//! default), enum value and rpc that Hadoop declares must be declared the same way by
//! us. Extra elements of ours (Hadoop 3.4 additions) are fine.
//!
//! The Java half is integration/java/DumpDescriptors.java. The server-side files
//! (ResourceTracker, the server-common messages, the RM admin protocol) are not in the
//! client jars: the second test compares them with the descriptors in Hadoop's own
//! ResourceManager and NodeManager jars (`integration/setup-maven.sh yarn-server`).

use prost::Message as _;
use prost_types::FileDescriptorSet;
use spindle_integration::descriptors::{missing_or_different, parse_dump, schema_lines};
use spindle_integration::process::run_with_timeout;
use spindle_integration::{HadoopClients, YarnServerJars};

/// Files the dump must contain, or the comparison proves nothing.
const EXPECTED_HADOOP_FILES: [&str; 12] = [
    "yarn_protos.proto",
    "yarn_service_protos.proto",
    "applicationclient_protocol.proto",
    "applicationmaster_protocol.proto",
    "containermanagement_protocol.proto",
    "server/resourcemanager_administration_protocol.proto",
    "server/yarn_server_resourcemanager_service_protos.proto",
    "yarn_security_token.proto",
    "RpcHeader.proto",
    "IpcConnectionContext.proto",
    "ProtobufRpcEngine2.proto",
    "Security.proto",
];

/// The server-side files the dump of the server jars must contain.
const EXPECTED_SERVER_FILES: [&str; 6] = [
    "yarn_server_common_protos.proto",
    "yarn_server_common_service_protos.proto",
    "ResourceTracker.proto",
    "server/resourcemanager_administration_protocol.proto",
    "server/yarn_server_resourcemanager_service_protos.proto",
    "yarn_protos.proto",
];

/// Compares `hadoop` (a parsed dump) with hadoop-protos; panics listing every element
/// missing from or different in ours.
fn assert_declared(hadoop: &[spindle_integration::descriptors::SchemaLine], what: &str) {
    let set = match FileDescriptorSet::decode(hadoop_protos::FILE_DESCRIPTOR_SET) {
        Ok(set) => set,
        Err(e) => panic!("hadoop_protos::FILE_DESCRIPTOR_SET does not decode: {e}"),
    };
    let ours = schema_lines(&set);
    let problems = match missing_or_different(hadoop, &ours) {
        Ok(p) => p,
        Err(e) => panic!("cannot compare the schemas: {e:#}"),
    };
    eprintln!(
        "compared {} Hadoop 3.3.4 {what} schema elements with {} elements from {} files of hadoop-protos",
        hadoop.len(),
        ours.len(),
        set.file.len()
    );
    assert!(
        problems.is_empty(),
        "{} of {} Hadoop 3.3.4 {what} schema elements are missing from or differ in hadoop-protos \
         ({} files, {} elements of ours):\n{}",
        problems.len(),
        hadoop.len(),
        set.file.len(),
        ours.len(),
        problems.join("\n")
    );
}

#[test]
fn hadoop_protos_declare_every_element_of_the_hadoop_server_descriptors() {
    let Some(jars) = YarnServerJars::for_tests() else {
        return;
    };
    let source = spindle_integration::clients::integration_dir()
        .join("java")
        .join("DumpDescriptors.java");
    let classes = tempfile::tempdir().expect("a temp dir");
    let jar_glob = jars.dir().join("*");
    let mut javac = std::process::Command::new("javac");
    javac
        .args(["-nowarn", "-encoding", "UTF-8", "-d"])
        .arg(classes.path())
        .arg("-cp")
        .arg(&jar_glob)
        .arg(&source);
    let out = run_with_timeout(javac, std::time::Duration::from_secs(180)).expect("javac runs");
    out.assert_success();
    let classpath =
        std::env::join_paths([classes.path(), jar_glob.as_path()]).expect("a class path");
    let mut java = std::process::Command::new("java");
    java.arg("-cp").arg(classpath).arg("DumpDescriptors");
    let out = run_with_timeout(java, std::time::Duration::from_secs(180)).expect("java runs");
    out.assert_success();
    let hadoop = match parse_dump(&out.stdout) {
        Ok(lines) => lines,
        Err(e) => panic!("cannot parse the descriptor dump: {e:#}"),
    };
    for file in EXPECTED_SERVER_FILES {
        assert!(
            hadoop.iter().any(|l| l.file == file),
            "the Hadoop server dump lacks {file}; stderr:\n{}",
            out.stderr
        );
    }
    assert_declared(&hadoop, "server");
}

#[test]
fn hadoop_protos_declare_every_element_of_the_hadoop_client_descriptors() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let classes = match clients.compile_java("DumpDescriptors") {
        Ok(dir) => dir,
        Err(e) => panic!("cannot compile DumpDescriptors: {e:#}"),
    };
    let out = match clients.yarn().classpath(classes).run(["DumpDescriptors"]) {
        Ok(out) => out,
        Err(e) => panic!("cannot run DumpDescriptors: {e:#}"),
    };
    out.assert_success();
    let hadoop = match parse_dump(&out.stdout) {
        Ok(lines) => lines,
        Err(e) => panic!("cannot parse the descriptor dump: {e:#}"),
    };
    for file in EXPECTED_HADOOP_FILES {
        assert!(
            hadoop.iter().any(|l| l.file == file),
            "the Hadoop dump lacks {file}; stderr:\n{}",
            out.stderr
        );
    }

    let set = match FileDescriptorSet::decode(hadoop_protos::FILE_DESCRIPTOR_SET) {
        Ok(set) => set,
        Err(e) => panic!("hadoop_protos::FILE_DESCRIPTOR_SET does not decode: {e}"),
    };
    let ours = schema_lines(&set);
    let problems = match missing_or_different(&hadoop, &ours) {
        Ok(p) => p,
        Err(e) => panic!("cannot compare the schemas: {e:#}"),
    };
    eprintln!(
        "compared {} Hadoop 3.3.4 schema elements with {} elements from {} files of hadoop-protos",
        hadoop.len(),
        ours.len(),
        set.file.len()
    );
    assert!(
        problems.is_empty(),
        "{} of {} Hadoop 3.3.4 schema elements are missing from or differ in hadoop-protos \
         ({} files, {} elements of ours):\n{}",
        problems.len(),
        hadoop.len(),
        set.file.len(),
        ours.len(),
        problems.join("\n")
    );
}
