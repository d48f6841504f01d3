//! Service-level authorization on the RM's ports
//! (`hadoop.security.authorization=true`): each new connection's caller is
//! checked against `hadoop-policy.xml`'s ACL of its protocol
//! (`spindle_common::security::service_acl`), with its groups from the RM's
//! group cache; `yarn rmadmin -refreshServiceAcl` re-reads the file.

use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;

use spindle_common::conf::Configuration;
use spindle_common::security::service_acl::{
    resolves, with_policy_file, ServicePolicy, Subject, RM_SERVICES,
};
use spindle_ipc::server::{ConnectionCaller, ServiceAuthorization};

use crate::runtime::context::RmContext;

/// The policy of the RM's protocols: the site configuration with the conf
/// dir's `hadoop-policy.xml` (when there is one) over it.
pub fn read_policy(
    conf: &Configuration,
    conf_dir: Option<&std::path::Path>,
) -> Result<ServicePolicy, String> {
    ServicePolicy::from_conf(&with_policy_file(conf, conf_dir)?, RM_SERVICES)
}

/// The RM's check, over the policy its context holds.
pub struct ServiceAuthorizer(pub Arc<RmContext>);

impl std::fmt::Debug for ServiceAuthorizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ServiceAuthorizer")
    }
}

impl ServiceAuthorization for ServiceAuthorizer {
    fn authorize<'a>(
        &'a self,
        caller: ConnectionCaller<'a>,
        protocol: &'a str,
        from: IpAddr,
    ) -> Pin<Box<dyn Future<Output = Result<(), String>> + Send + 'a>> {
        Box::pin(async move {
            let Some(policy) = self.0.service_policy() else {
                return Ok(());
            };
            let groups = if policy.needs_groups(protocol) {
                self.0.groups.groups(caller.user).await
            } else {
                Vec::new()
            };
            let (display, principal) = caller.ugi();
            let (user, protocol) = (caller.user.to_string(), protocol.to_string());
            // A client principal with _HOST is checked by resolving the
            // host it names: a blocking lookup, off the runtime.
            tokio::task::spawn_blocking(move || {
                let who = Subject {
                    display: &display,
                    principal: principal.as_deref(),
                    short: &user,
                    groups: &groups,
                };
                policy.check(&protocol, &who, from, &resolves)
            })
            .await
            .map_err(|e| format!("service-level authorization failed: {e}"))?
        })
    }
}
