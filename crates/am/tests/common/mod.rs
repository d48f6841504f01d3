//! Helpers shared by the AM crate's test binaries.

use std::time::{Duration, Instant};

use spindle_ipc::RpcServer;

/// Waits until `server` holds no open connection (it closes idle ones after
/// its idle timeout), failing the test after `within`.
pub async fn wait_connections_closed(server: &RpcServer, within: Duration) {
    let deadline = Instant::now() + within;
    loop {
        let open = server.stats().connections;
        if open == 0 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the server still holds {open} connection(s) after {within:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
