//! [`NodeManagerHandle`]: a started NodeManager, as its caller sees it:
//! its addresses and state, and its stop.

use std::net::SocketAddr;
use std::time::Duration;

use spindle_common::NodeId;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tracing::warn;

use crate::agent::{NmExit, NmState};
use crate::containers::ContainerManager;
use crate::disks::NodeHealth;
use crate::session::RmSession;

/// A running NodeManager. Dropping the handle asks the node to stop.
pub struct NodeManagerHandle {
    pub(crate) node_id: NodeId,
    pub(crate) containers: ContainerManager,
    pub(crate) container_manager_addr: SocketAddr,
    pub(crate) web_addr: SocketAddr,
    pub(crate) state: watch::Receiver<NmState>,
    pub(crate) session: watch::Receiver<RmSession>,
    pub(crate) health: watch::Receiver<NodeHealth>,
    pub(crate) stop: watch::Sender<bool>,
    /// The task that runs the agent and then stops the node in order.
    pub(crate) task: Option<JoinHandle<()>>,
    /// How long a stop may take before the task is abandoned.
    pub(crate) stop_timeout: Duration,
}

impl NodeManagerHandle {
    /// The NodeId: the node host and the port the container-management
    /// server is bound to.
    pub fn node_id(&self) -> &NodeId {
        &self.node_id
    }

    /// The node's containers: the same operations the container-management
    /// protocol serves, for callers already authenticated by other means,
    /// plus snapshots of container state.
    pub fn containers(&self) -> &ContainerManager {
        &self.containers
    }

    /// The address the container-management server listens on.
    pub fn container_manager_addr(&self) -> SocketAddr {
        self.container_manager_addr
    }

    /// The address the web server listens on
    /// (`yarn.nodemanager.webapp.address`; its port is the node's HTTP
    /// port).
    pub fn web_addr(&self) -> SocketAddr {
        self.web_addr
    }

    /// `host:port` of the web server as the ResourceManager reports it
    /// (the node host and the port bound).
    pub fn http_address(&self) -> String {
        format!("{}:{}", self.node_id.host, self.web_addr.port())
    }

    /// Where the node is now.
    pub fn state(&self) -> NmState {
        self.state.borrow().clone()
    }

    /// What the node currently knows from the ResourceManager.
    pub fn session(&self) -> RmSession {
        self.session.borrow().clone()
    }

    /// Follows [`session`](Self::session) as it changes (re-registration,
    /// rolled master keys).
    pub fn subscribe_session(&self) -> watch::Receiver<RmSession> {
        self.session.clone()
    }

    /// The latest disk health, as sent in the next heartbeat.
    pub fn health(&self) -> NodeHealth {
        self.health.borrow().clone()
    }

    /// Waits until the node is registered (`Ok`) or has ended (`Err` with
    /// how). Returns at once if it is registered already.
    pub async fn wait_registered(&self) -> Result<(), NmExit> {
        let mut rx = self.state.clone();
        let state = rx
            .wait_for(|s| !matches!(s, NmState::Registering))
            .await
            .map(|s| s.clone());
        match state {
            Ok(NmState::Running) => Ok(()),
            Ok(NmState::Exited(exit)) => Err(exit),
            Ok(NmState::Registering) | Err(_) => Err(agent_vanished()),
        }
    }

    /// Waits until the node ends on its own (SHUTDOWN from the RM, rejected
    /// registration) or after [`stop`](Self::stop). Cancel-safe: it can be
    /// raced against a signal and the handle stopped afterwards.
    pub async fn wait(&self) -> NmExit {
        let mut rx = self.state.clone();
        let state = rx
            .wait_for(|s| matches!(s, NmState::Exited(_)))
            .await
            .map(|s| s.clone());
        match state {
            Ok(NmState::Exited(exit)) => exit,
            _ => agent_vanished(),
        }
    }

    /// Stops the node: unregisters from the ResourceManager if registered
    /// (bounded by the unregister timeout) and closes the server. If the
    /// node had already ended, returns how.
    pub async fn stop(mut self) -> NmExit {
        let _ = self.stop.send(true);
        if let Some(mut task) = self.task.take() {
            if tokio::time::timeout(self.stop_timeout, &mut task)
                .await
                .is_err()
            {
                warn!(
                    "the NodeManager did not stop within {} ms; abandoning it",
                    self.stop_timeout.as_millis()
                );
                task.abort();
                return NmExit::Stopped;
            }
        }
        let state = self.state.borrow().clone();
        match state {
            NmState::Exited(exit) => exit,
            _ => agent_vanished(),
        }
    }
}

impl Drop for NodeManagerHandle {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
    }
}

fn agent_vanished() -> NmExit {
    NmExit::Failed {
        message: "the NodeManager agent task ended without a result".to_string(),
    }
}
