//! Who may act for whom on the RM's client and admin ports: Hadoop's proxy
//! users (`hadoop.proxyuser.<user>.users`, `.groups`, `.hosts`), read at start
//! and again by `yarn rmadmin -refreshSuperUserGroupsConfiguration`, with the
//! impersonated user's groups from the RM's group cache.

use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;

use spindle_common::security::proxy_users::ProxyUsers;
use spindle_ipc::server::Impersonation;

use crate::runtime::context::RmContext;

/// The RM's proxy-user rules, as the IPC servers ask them.
pub struct Impersonator(pub Arc<RmContext>);

impl std::fmt::Debug for Impersonator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Impersonator")
    }
}

impl Impersonation for Impersonator {
    fn authorize<'a>(
        &'a self,
        real_principal: &'a str,
        real_short: &'a str,
        user: &'a str,
        from: IpAddr,
    ) -> Pin<Box<dyn Future<Output = Result<(), String>> + Send + 'a>> {
        Box::pin(async move {
            let rules: Arc<ProxyUsers> = self.0.proxy_users();
            let groups = self.0.groups.groups(user).await;
            rules.authorize(real_short, real_principal, user, &groups, from)
        })
    }
}
