//! `spindle proxyserver`: Hadoop's `yarn proxyserver` (`WebAppProxyServer`),
//! the web proxy as a daemon of its own. When `yarn.web-proxy.address`
//! names another address than the RM's web app, the RM's reports point
//! browsers there and the RM does not serve `/proxy/` itself.
//!
//! It serves `/proxy/<appId>/...` with the RM's own proxy code
//! (`spindle_rm::web::proxy::WebProxy`), learning each application's
//! owner, state and original tracking URL from the RM over the client
//! protocol (`getApplicationReport`, failing over between HA RMs, as
//! Hadoop's `AppReportFetcher`). A lookup the RM does not answer within
//! the proxy's timeout (`yarn.resourcemanager.proxy.connection.timeout`,
//! 60 s when that is off) is a 503 page naming the RM, not a hang.

use std::sync::Arc;
use std::time::Duration;

use spindle_am::{AmError, YarnClient};
use spindle_common::conf::refuse::{self, Daemon};
use spindle_common::ids::ApplicationId;
use spindle_common::states::AppState;
use spindle_common::Configuration;
use spindle_rm::model::tracking::{host_of, PROXY_ADDRESS_KEY};
use spindle_rm::web::proxy::{self, AppSource, Lookup, ProxyApp, WebProxy};
use spindle_rm::web_host::resolved_host_port;
use tokio::sync::Mutex;
use tracing::{info, warn};

use crate::{ConfArgs, Shutdown};

const RM_WEBAPP_KEY: &str = "yarn.resourcemanager.webapp.address";
const DEFAULT_LOOKUP_BOUND: Duration = Duration::from_secs(60);

/// Application reports from the RM's client port.
struct ReportSource {
    conf: Configuration,
    client: Mutex<Option<YarnClient>>,
    bound: Duration,
}

impl ReportSource {
    async fn client(&self) -> Result<YarnClient, AmError> {
        let mut slot = self.client.lock().await;
        if let Some(c) = slot.as_ref() {
            return Ok(c.clone());
        }
        let c = YarnClient::connect(&self.conf).await?;
        *slot = Some(c.clone());
        Ok(c)
    }

    async fn report(&self, id: ApplicationId) -> Result<Option<ProxyApp>, String> {
        let found = async {
            let client = self.client().await?;
            client.report(id).await
        };
        match tokio::time::timeout(self.bound, found).await {
            Ok(Ok(r)) => Ok(Some(ProxyApp {
                user: r.user,
                original_tracking_url: r.original_tracking_url,
                ended: matches!(
                    r.state,
                    AppState::Finished | AppState::Failed | AppState::Killed
                ),
            })),
            Ok(Err(AmError::Rpc(e)))
                if e.remote_class()
                    .is_some_and(|c| c.ends_with("ApplicationNotFoundException")) =>
            {
                Ok(None)
            }
            Ok(Err(e)) => {
                warn!(app = %id, error = %e, "web proxy: no report from the ResourceManager");
                Err(format!("The ResourceManager cannot report on {id}: {e}"))
            }
            Err(_) => {
                warn!(app = %id, "web proxy: the ResourceManager did not answer in time");
                Err(format!(
                    "The ResourceManager ({}) did not report on {id} within {} ms",
                    self.conf
                        .get_trimmed("yarn.resourcemanager.address")
                        .unwrap_or_default(),
                    self.bound.as_millis()
                ))
            }
        }
    }
}

impl AppSource for ReportSource {
    fn app(&self, id: ApplicationId) -> Lookup<'_> {
        Box::pin(self.report(id))
    }
}

/// `http://host:port` of the RM's web app, as Hadoop's
/// `WebAppUtils.getResolvedRMWebAppURLWithScheme`.
fn rm_web(conf: &Configuration) -> String {
    let address = conf.get_trimmed(RM_WEBAPP_KEY).unwrap_or_default();
    let address = address
        .strip_prefix("http://")
        .unwrap_or(&address)
        .to_string();
    match address.rsplit_once(':') {
        Some((host, port)) => match port.parse::<u16>() {
            Ok(port) => format!("http://{}", resolved_host_port(host, port)),
            Err(_) => format!("http://{address}"),
        },
        None => format!("http://{address}"),
    }
}

pub(crate) async fn run(args: ConfArgs) -> Result<(), String> {
    let mut shutdown = Shutdown::catch();
    let (conf, _dir) = args.load()?;
    refuse::check(&conf, &[Daemon::WebProxy], "web proxy").map_err(|e| e.to_string())?;
    let Some(address) = conf
        .get_trimmed(PROXY_ADDRESS_KEY)
        .filter(|a| !a.is_empty())
    else {
        return Err(format!(
            "{PROXY_ADDRESS_KEY} is not set so the proxy will not run."
        ));
    };
    let address = address
        .strip_prefix("http://")
        .unwrap_or(&address)
        .to_string();
    let bind = tokio::net::lookup_host(address.as_str())
        .await
        .map_err(|e| format!("{PROXY_ADDRESS_KEY} {address} does not resolve: {e}"))?
        .next()
        .ok_or_else(|| format!("{PROXY_ADDRESS_KEY} {address} names no address"))?;
    let bound = proxy::timeout(&conf).unwrap_or(DEFAULT_LOOKUP_BOUND);
    let rm_web = rm_web(&conf);
    let source = Arc::new(ReportSource {
        conf: conf.clone(),
        client: Mutex::new(None),
        bound,
    });
    let web = WebProxy::new(
        source,
        Arc::new(conf.clone()),
        rm_web.clone(),
        host_of(&address),
    );
    let server = spindle_web::WebServer::bind(bind, web.router(), "web proxy")
        .await
        .map_err(|e| format!("cannot bind the web proxy to {bind} ({PROXY_ADDRESS_KEY}): {e}"))?;
    println!(
        "Web proxy ({PROXY_ADDRESS_KEY}): http://{}/proxy/ for the ResourceManager at {} (web app {rm_web})",
        server.local_addr(),
        conf.get_trimmed("yarn.resourcemanager.address")
            .unwrap_or_default()
    );
    shutdown.wait().await;
    info!("web proxy stopping");
    drop(server);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rm_web_app_url() {
        let mut conf = Configuration::empty();
        conf.set(RM_WEBAPP_KEY, "rm.example:8088");
        assert_eq!(rm_web(&conf), "http://rm.example:8088");
        conf.set(RM_WEBAPP_KEY, "http://rm.example:9");
        assert_eq!(rm_web(&conf), "http://rm.example:9");
    }
}
