//! Spindle's `.proto` files (hadoop-protos) against the descriptors compiled into the
//! Hadoop 3.3.4 client jars: every message, field (number, label, type, declared
//! default), enum value and rpc that Hadoop declares must be declared the same way by
//! us. Extra elements of ours (Hadoop 3.4 additions) are fine.
//!
//! The Java half is integration/java/DumpDescriptors.java. The server-common files
//! (ResourceTracker and the NodeManager messages) are not in the client jars, so they
//! are not compared here.

use prost::Message as _;
use prost_types::FileDescriptorSet;
use spindle_integration::descriptors::{missing_or_different, parse_dump, schema_lines};
use spindle_integration::HadoopClients;

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
