//! Starting an AM container, in domain terms: the launch context a client
//! submits, and the effect the state leaves for the launcher.

use std::collections::BTreeMap;

use spindle_common::ids::{ApplicationAttemptId, NodeId};
use spindle_common::security::Token;

use crate::acl::Acl;

/// Who an application ACL entry is for (`ApplicationAccessType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum AppAccess {
    View,
    Modify,
}

impl AppAccess {
    /// Hadoop's name for it (`ApplicationAccessType.name()`).
    pub fn name(self) -> &'static str {
        match self {
            AppAccess::View => "VIEW_APP",
            AppAccess::Modify => "MODIFY_APP",
        }
    }
}

/// An application's own ACLs, by access type, as its launch context gave them.
pub type AppAcls = BTreeMap<AppAccess, Acl>;

/// The ACLs of a launch context (`ApplicationACLsManager.addApplication`).
pub fn app_acls(acls: &[(AppAccess, String)]) -> AppAcls {
    acls.iter()
        .map(|(access, spec)| (*access, Acl::parse(spec)))
        .collect()
}

/// How large the parts of a launch context the RM keeps encoded are,
/// measured where it is decoded (see `convert::launch_context_from_pb`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LaunchSizes {
    /// Every argument of the command together.
    pub command_bytes: usize,
    pub local_resources: usize,
    /// `tokens_conf`, when given.
    pub tokens_conf_bytes: usize,
    /// The whole launch context as the client encoded it.
    pub encoded_bytes: usize,
}

/// The AM container's launch context, as the client submitted it.
///
/// The RM reads or changes three parts of it: the environment (it adds the
/// variables Hadoop's AMs expect), the credentials (it adds the attempt's
/// AMRMToken to the client's tokens) and the application ACLs. Everything
/// else (command, local resources, service data, retry context, tokens
/// configuration) the RM only forwards to the NodeManager; that part stays
/// as the client encoded it, in `forwarded`, opaque here (the protocol
/// handlers split and join the message).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AmLaunchContext {
    /// Variables in the order the client gave them.
    pub environment: Vec<(String, String)>,
    /// The client's credentials in Hadoop's token-storage format (HDTS);
    /// `None` when it sent none.
    pub tokens: Option<Vec<u8>>,
    pub acls: Vec<(AppAccess, String)>,
    /// The rest of the launch context, encoded (`ContainerLaunchContextProto`
    /// without environment, tokens and ACLs).
    pub forwarded: Vec<u8>,
    /// How large its parts were as submitted, for the RM's limits.
    pub sizes: LaunchSizes,
}

impl AmLaunchContext {
    /// Sets `name` to `value`, replacing any value the client gave.
    pub fn set_env(&mut self, name: &str, value: String) {
        self.environment.retain(|(n, _)| n != name);
        self.environment.push((name.to_string(), value));
    }
}

/// Network work the owner task hands to the effect executor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Start the AM container on its NodeManager (the RM acting as a client with an
    /// NMToken, as Hadoop's AMLauncher does). The outcome comes back as an
    /// `AmLaunched` or `AmLaunchFailed` command.
    LaunchAm {
        attempt: ApplicationAttemptId,
        node: NodeId,
        /// The RM's credential at the NodeManager.
        nm_token: Token,
        container_token: Token,
        /// The client's context with the AMRMToken and AM environment added.
        launch: AmLaunchContext,
    },
}
