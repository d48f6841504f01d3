//! The RM's web surface on `yarn.resourcemanager.webapp.address`: Hadoop's
//! REST API (`/ws/v1/cluster/...`), the web proxy (`/proxy/<appId>/`), the
//! operations endpoints (`/jmx`, `/prom`, `/conf`, `/isActive`,
//! `/logLevel`) and the UI.
//!
//! The web layer is another client of the RM state, like the RPC
//! services: it reads through the named queries of `state/queries.rs`
//! (`CoreHandle::query`) and changes the state only through commands
//! (`CoreHandle::call`), checked by the same access rules as their RPC
//! twins. It never reaches into the state.
//!
//! | file | serves |
//! |---|---|
//! | `caller.rs` | who a request comes from (`user.name`, anonymous requests) |
//! | `cluster/` | the read-only REST resources of `RMWebServices` |
//! | `writes.rs` | the REST resources that change applications, and who the caller is |
//! | `proxy.rs` | `/proxy/<appId>/...`, Hadoop's `WebAppProxyServlet` |
//! | `ops.rs` | `/jmx`, `/prom`, `/conf`, `/isActive`, `/logLevel`, and a standby RM's redirect |
//! | `ui.rs` | the HTML pages |

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use spindle_common::Configuration;

use crate::runtime::active::RmControl;
use crate::runtime::context::RmContext;

pub mod caller;
pub mod cluster;
pub mod ops;
pub mod proxy;
pub mod ui;
pub mod writes;

/// What every web handler shares.
#[derive(Clone)]
pub struct WebContext {
    /// The active/standby switch; its context holds the way to the state.
    pub control: Arc<RmControl>,
    /// The configuration the RM started with.
    pub conf: Arc<Configuration>,
    /// The address the web server bound (for the URLs it hands out).
    pub bound: SocketAddr,
    /// Lets one list of applications be built at a time: a long list is
    /// CPU work (10,000 applications are ~11 MB of JSON) that must not
    /// take every core from the RPC servers and the owner task.
    pub lists: Arc<tokio::sync::Semaphore>,
}

impl WebContext {
    /// The handlers' shared RM context (the way to the state and the ACLs).
    pub fn rm(&self) -> &Arc<RmContext> {
        self.control.context()
    }
}

/// Every route of the RM's web server.
pub fn router(web: WebContext) -> Router {
    let routes = Router::new()
        .merge(cluster::routes())
        .merge(writes::routes())
        .merge(proxy::routes())
        .merge(ops::routes())
        .merge(ui::routes())
        .with_state(web.clone());
    ops::around(routes, web)
}
