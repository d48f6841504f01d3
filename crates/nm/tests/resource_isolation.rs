//! A container that writes to its localized FILE resource changes neither
//! the source file nor what other applications' containers are given.
//!
//! The resource is localized as a read-only copy (never a hard link to the
//! source); a container that can still write to it (it runs as the node's
//! user, or as root, as here when the tests run as root) changes only that
//! copy, and the node does not hand a changed copy to the next container.

mod common;

use std::os::unix::fs::{MetadataExt, PermissionsExt};

use common::{clc, container, file_resource, start_node, WAIT};
use hadoop_protos::yarn::{LocalResourceTypeProto, LocalResourceVisibilityProto};
use spindle_nm::NmExit;

const ORIGINAL: &str = "original line\n";

#[tokio::test]
async fn writes_through_a_localized_file_reach_neither_the_source_nor_other_apps() {
    let (node, _tmp) = start_node(|_| {}, None).await;
    // Public: readable by everyone, every directory above searchable.
    std::fs::set_permissions(&node.dir, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let staging = node.dir.join("staging");
    std::fs::create_dir(&staging).expect("mkdir");
    let src = staging.join("data.txt");
    std::fs::write(&src, ORIGINAL).expect("write");
    std::fs::set_permissions(&src, std::fs::Permissions::from_mode(0o644)).expect("chmod");

    let mut app = 0;
    for visibility in [
        LocalResourceVisibilityProto::Public,
        LocalResourceVisibilityProto::Private,
    ] {
        // The first application's container writes to its resource.
        app += 1;
        let writer = container(app, 2);
        let mut c = clc(&[
            "echo tampered >> data.txt 2>/dev/null;",
            "cat data.txt > {{PWD}}/seen",
        ]);
        c.local_resources.push(file_resource(
            "data.txt",
            &src,
            LocalResourceTypeProto::File,
            visibility,
        ));
        node.start(writer, c).expect("started");
        let done = node
            .nm
            .containers()
            .wait_done(&writer, WAIT)
            .await
            .expect("done");
        assert_eq!(done.exit_status, 0, "{visibility:?}: {done:?}");

        assert_eq!(
            std::fs::read_to_string(&src).expect("source"),
            ORIGINAL,
            "{visibility:?}: the write reached the source"
        );
        assert_eq!(
            std::fs::metadata(&src).expect("source").nlink(),
            1,
            "{visibility:?}: the source is linked into the cache"
        );

        // The next application's container gets the resource as it was.
        app += 1;
        let reader = container(app, 2);
        let mut c = clc(&["cat data.txt > {{PWD}}/seen"]);
        c.local_resources.push(file_resource(
            "data.txt",
            &src,
            LocalResourceTypeProto::File,
            visibility,
        ));
        node.start(reader, c).expect("started");
        let done = node
            .nm
            .containers()
            .wait_done(&reader, WAIT)
            .await
            .expect("done");
        assert_eq!(done.exit_status, 0, "{visibility:?}: {done:?}");
        let seen = std::fs::read_to_string(done.paths.expect("paths").work_dir.join("seen"))
            .expect("seen");
        assert_eq!(
            seen, ORIGINAL,
            "{visibility:?}: another application saw the first one's write"
        );
    }
    assert_eq!(node.nm.stop().await, NmExit::Stopped);
}
