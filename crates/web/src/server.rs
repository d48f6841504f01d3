//! One HTTP listener serving a router until it is dropped.

use std::io;
use std::net::SocketAddr;

use axum::Router;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tracing::{debug, warn};

/// A bound HTTP server. Dropping it stops accepting and ends the
/// connections it serves once their current request is answered.
pub struct WebServer {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
}

impl WebServer {
    /// Binds `addr` (port 0: any free port) and serves `router` on the
    /// current tokio runtime; `name` names it in log lines.
    pub async fn bind(addr: SocketAddr, router: Router, name: &str) -> io::Result<WebServer> {
        let listener = TcpListener::bind(addr).await?;
        Self::start(listener, router, name)
    }

    /// Serves `router` on a listener bound already (when the routes need
    /// to know the bound address); must be called within a tokio runtime.
    pub fn serve(
        listener: std::net::TcpListener,
        router: Router,
        name: &str,
    ) -> io::Result<WebServer> {
        listener.set_nonblocking(true)?;
        Self::start(TcpListener::from_std(listener)?, router, name)
    }

    fn start(listener: TcpListener, router: Router, name: &str) -> io::Result<WebServer> {
        let addr = listener.local_addr()?;
        let (stop, stopped) = oneshot::channel::<()>();
        let name = name.to_string();
        tokio::spawn(async move {
            // Handlers may ask for the peer's address (`ConnectInfo<SocketAddr>`).
            let service = router.into_make_service_with_connect_info::<SocketAddr>();
            let served = axum::serve(listener, service)
                .with_graceful_shutdown(async move {
                    let _ = stopped.await;
                })
                .await;
            match served {
                Ok(()) => debug!(server = %name, "web server stopped"),
                Err(e) => warn!(server = %name, error = %e, "web server failed"),
            }
        });
        Ok(WebServer {
            addr,
            stop: Some(stop),
        })
    }

    /// The address actually bound.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for WebServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}
