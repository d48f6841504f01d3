//! Peer-supplied text in the server's log lines: a user name, a protocol or a method name
//! with a line break must not start a line of its own (a forged log entry). The server's
//! tracing output is captured (every level) while a raw peer sends such names.

mod common;

use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use common::*;
use hadoop_protos::yarn::GetApplicationsRequestProto;
use spindle_ipc::protocols;

/// Everything the tracing subscriber of this test binary wrote.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap_or_else(|p| p.into_inner())).into_owned()
    }
}

/// The process-wide subscriber (server tasks may run on any thread), installed once.
fn captured() -> Captured {
    static CAPTURED: OnceLock<Captured> = OnceLock::new();
    CAPTURED
        .get_or_init(|| {
            let out = Captured::default();
            let writer = out.clone();
            tracing_subscriber::fmt()
                .with_max_level(tracing::Level::DEBUG)
                .with_ansi(false)
                .with_writer(move || writer.clone())
                .init();
            out
        })
        .clone()
}

const FORGED: &str = "INFO spindle_rm: forged entry";

/// Waits (bounded) until the captured log contains `needle`.
async fn log_shows(log: &Captured, needle: &str) -> String {
    let deadline = Instant::now() + STEP;
    loop {
        let text = log.text();
        if text.contains(needle) {
            return text;
        }
        assert!(
            Instant::now() < deadline,
            "the log never showed {needle:?}; it has:\n{text}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn assert_no_forged_line(text: &str) {
    for line in text.lines() {
        assert!(
            !line.starts_with(FORGED) && !line.starts_with("\u{1b}"),
            "a peer-supplied string started a log line of its own: {line:?}\nwhole log:\n{text}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn peer_supplied_names_cannot_forge_log_lines() {
    let log = captured();
    bounded(async {
        let ts = start(config(), Duration::ZERO).await;

        // A user name with a line break (and an escape sequence) in the context.
        let user = format!("mallory\n{FORGED}\u{1b}[2J");
        let mut peer = RawPeer::hello(&ts.addr, &user).await;
        assert_call_works_as(&mut peer, &user).await;
        let text = log_shows(&log, "mallory\\nINFO spindle_rm: forged entry\\u{1b}[2J").await;
        assert_no_forged_line(&text);

        // A method and a protocol name with line breaks in a call: no handler.
        let method = format!("getApplications\n{FORGED}");
        let protocol = format!("{}\n{FORGED}", protocols::APPLICATION_CLIENT);
        peer.send(&call_frame_raw(
            1,
            &RAW_CLIENT_ID,
            &protocol,
            &method,
            &prost::Message::encode_to_vec(&GetApplicationsRequestProto::default()),
        ))
        .await;
        let reply = peer.reply().await;
        assert_eq!(reply.header.call_id, 1);
        let text = log_shows(&log, "getApplications\\nINFO spindle_rm: forged entry").await;
        assert_no_forged_line(&text);

        // A connection context claiming a second user on the same connection is FATAL;
        // the reason, logged when the connection is dropped, carries no raw line break.
        peer.send(&context_frame(
            &RAW_CLIENT_ID,
            &user,
            protocols::APPLICATION_CLIENT,
        ))
        .await;
        let _fatal = peer.reply().await;
        let text = log_shows(&log, "connection context sent twice").await;
        assert_no_forged_line(&text);
    })
    .await;
}

/// A tagged call answered for `user` on this connection.
async fn assert_call_works_as(peer: &mut RawPeer, user: &str) {
    peer.call(0, "getApplications", &tagged_apps_request("as"))
        .await;
    let reply = peer.reply().await;
    reply.assert_success(0, &RAW_CLIENT_ID);
    let resp: hadoop_protos::yarn::GetApplicationsResponseProto = reply.body();
    assert_eq!(resp.applications[0].user.as_deref(), Some(user));
}
