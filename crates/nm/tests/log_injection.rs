//! Peer-supplied text in the NodeManager's log lines is escaped: a user
//! name, a resource path and the ResourceManager's diagnostics that carry a
//! line break cannot start a forged log line.

mod common;

use std::io::Write;
use std::sync::{Arc, Mutex};

use common::{clc, container, file_resource, start_node, WAIT};
use hadoop_protos::yarn::{LocalResourceTypeProto, LocalResourceVisibilityProto};
use spindle_nm::NmExit;

/// The forged line each injection tries to start.
const FORGED: &str = "FORGED-LINE";

#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<u8>>>);

impl Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("capture").extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Capture {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().expect("capture")).into_owned()
    }
}

// The default (current-thread) runtime keeps every task of the node on the
// thread whose log subscriber captures the output.
#[tokio::test]
async fn peer_text_cannot_forge_log_lines() {
    let capture = Capture::default();
    let writer = capture.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_ansi(false)
        .with_max_level(tracing::Level::DEBUG)
        .with_writer(move || writer.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let (node, _tmp) = start_node(|_| {}, None).await;
    let injected = |what: &str| format!("{what}\n{FORGED} injected through the {what}");

    // A resource path, in a container that runs.
    let staging = node.dir.join("staging");
    std::fs::create_dir(&staging).expect("mkdir");
    let data = staging.join(injected("resource path"));
    std::fs::write(&data, "x\n").expect("write");
    let mut c = clc(&["true"]);
    c.local_resources.push(file_resource(
        "data.txt",
        &data,
        LocalResourceTypeProto::File,
        LocalResourceVisibilityProto::Private,
    ));
    let id = container(1, 2);
    node.start(id, c).expect("started");
    let done = node
        .nm
        .containers()
        .wait_done(&id, WAIT)
        .await
        .expect("done");
    assert_eq!(done.exit_status, 0, "{done:?}");

    // A submitter's name. (The container fails in localization, before the
    // lines of its launch, which are not checked here.)
    let pipe = staging.join("pipe");
    nix::unistd::mkfifo(&pipe, nix::sys::stat::Mode::from_bits_truncate(0o644)).expect("mkfifo");
    let mut c = clc(&["true"]);
    c.local_resources.push(file_resource(
        "pipe",
        &pipe,
        LocalResourceTypeProto::File,
        LocalResourceVisibilityProto::Private,
    ));
    let id = container(2, 2);
    node.start_as(id, c, &injected("user name"))
        .expect("started");
    node.nm
        .containers()
        .wait_done(&id, WAIT)
        .await
        .expect("done");

    // A refused start whose reason quotes the request.
    let mut bad = clc(&["true"]);
    bad.environment
        .push(hadoop_protos::yarn::StringStringMapProto {
            key: Some(injected("environment name")),
            value: Some("v".into()),
        });
    node.start(container(1, 3), bad).expect_err("refused");

    // The ResourceManager's diagnostics.
    node.rm.lock().resync_diagnostics = Some(injected("diagnostics"));
    node.rm.resync_next();
    node.rm
        .wait_until("a second registration", |rm| rm.registrations().len() >= 2)
        .await;
    assert_eq!(node.nm.stop().await, NmExit::Stopped);

    let text = capture.text();
    for what in [
        "user name",
        "resource path",
        "environment name",
        "diagnostics",
    ] {
        assert!(
            text.contains(&format!("{what}\\n{FORGED} injected through the {what}")),
            "the {what} was not logged escaped:\n{text}"
        );
    }
    let forged: Vec<&str> = text.lines().filter(|l| l.starts_with(FORGED)).collect();
    assert!(forged.is_empty(), "forged log lines: {forged:#?}");
}
