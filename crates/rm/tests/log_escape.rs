//! Peer-supplied text in the RM's log lines: a user name with a line break,
//! submitted over the client protocol, cannot forge a log line (the RM's log
//! output, captured here, shows it escaped on one line).

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use spindle_common::conf::Configuration;
use spindle_ipc::{protocols, ClientOptions, IpcClient};
use spindle_rm::ResourceManager;

mod common;
use common::submit;

/// What the RM logged, in memory.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if let Ok(mut out) = self.0.lock() {
            out.extend_from_slice(buf);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn text(&self) -> String {
        self.0
            .lock()
            .map(|out| String::from_utf8_lossy(&out).into_owned())
            .unwrap_or_default()
    }
}

#[tokio::test]
async fn a_user_name_with_a_line_break_cannot_forge_a_log_line() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_ansi(false)
        .with_max_level(tracing::Level::INFO)
        .with_writer(move || writer.clone())
        .finish();
    tracing::subscriber::set_global_default(subscriber).expect("the only subscriber");

    tokio::time::timeout(Duration::from_secs(60), async {
        let mut conf = Configuration::with_defaults();
        for key in common::RM_ADDRESS_KEYS {
            conf.set(key, "127.0.0.1:0");
        }
        let rm = ResourceManager::start(&conf, None)
            .await
            .expect("RM starts");
        let forged = "mallory\nERROR spindle_rm: forged line";
        let client = IpcClient::connect(
            &rm.addresses().client.to_string(),
            ClientOptions::new(forged, protocols::APPLICATION_CLIENT),
        )
        .await
        .expect("client connection");
        let id = submit(&client, true).await;

        let log = captured.text();
        let accepted: Vec<&str> = log
            .lines()
            .filter(|l| l.contains("application accepted") && l.contains(&id.to_string()))
            .collect();
        assert_eq!(accepted.len(), 1, "{log}");
        assert!(
            accepted[0].contains(r"user=mallory\nERROR spindle_rm: forged line"),
            "the user name should be escaped on the line: {}",
            accepted[0]
        );
        assert!(
            !log.lines()
                .any(|l| l.starts_with("ERROR spindle_rm: forged line")),
            "a forged line reached the log:\n{log}"
        );
    })
    .await
    .expect("test timed out");
}
