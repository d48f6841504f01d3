//! `NmClient`: starting, stopping and querying an ApplicationMaster's
//! containers on their NodeManagers (ContainerManagementProtocol), as
//! Hadoop's `NMClientImpl` does it.
//!
//! Each NodeManager is reached at its NodeId (`host:port`) with the NMToken
//! the ResourceManager sent for it (from the shared [`NmTokenCache`]),
//! proved with SASL DIGEST-MD5: the connection then belongs to the attempt
//! the token names. Each node has its client proxy ([`spindle_ipc::RpcProxy`])
//! with `NMProxy`'s rules: a node that cannot be reached is retried every
//! `yarn.client.nodemanager-connect.retry-interval-ms` for
//! `yarn.client.nodemanager-connect.max-wait-ms`; a connection the node
//! closed while idle is reopened. A start is not sent again once the node
//! may have acted on it; a stop or a status query is. The connection is
//! replaced when the node's token changes.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hadoop_protos::yarn as pb;
use spindle_common::conf::{ConfError, Configuration};
use spindle_common::security::{kind, Token};
use spindle_common::{ApplicationAttemptId, ContainerId, NodeId};
use spindle_ipc::methods::container_management::{
    GET_CONTAINER_STATUSES, START_CONTAINERS, STOP_CONTAINERS,
};
use spindle_ipc::yarn_conf::{self, defaults};
use spindle_ipc::{protocols, ConnectRetry, Method, ProxyConfig, RetryPolicy, RpcProxy};
use tracing::debug;

use crate::convert::{container_id_from_pb, container_id_to_pb};
use crate::error::AmError;
use crate::nm_tokens::NmTokenCache;
use crate::records::{Container, ContainerStatus};

/// What a NodeManager returned for a started container.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Started {
    /// Metadata of the node's auxiliary services, by service name.
    pub services_meta_data: Vec<(String, Vec<u8>)>,
}

/// The NodeManager client of one ApplicationMaster attempt. Cheap to clone;
/// clones share connections.
#[derive(Clone)]
pub struct NmClient {
    attempt: ApplicationAttemptId,
    tokens: NmTokenCache,
    /// One proxy per node, by NodeId string.
    proxies: Arc<Mutex<HashMap<String, RpcProxy>>>,
    connect_timeout: Duration,
    call_timeout: Duration,
    policy: RetryPolicy,
}

impl std::fmt::Debug for NmClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NmClient")
            .field("attempt", &self.attempt)
            .field("nodes_with_tokens", &self.tokens.len())
            .finish()
    }
}

/// The `host:port` to dial for a NodeId (IPv6 hosts in brackets).
fn dial_addr(node: &NodeId) -> String {
    if node.host.contains(':') && !node.host.starts_with('[') {
        format!("[{}]:{}", node.host, node.port)
    } else {
        node.to_string()
    }
}

impl NmClient {
    /// A client for `attempt` using the NMTokens in `tokens` (usually
    /// [`crate::AmRmClient::nm_token_cache`]).
    /// Hadoop's defaults: `NMProxy`'s 180 s wait, 10 s apart, for a node
    /// that cannot be reached.
    pub fn new(attempt: ApplicationAttemptId, tokens: NmTokenCache) -> NmClient {
        NmClient {
            attempt,
            tokens,
            proxies: Arc::new(Mutex::new(HashMap::new())),
            connect_timeout: Duration::from_secs(20),
            call_timeout: defaults::CALL_TIMEOUT,
            policy: yarn_conf::nm_policy(
                Some(defaults::NM_CONNECT_MAX_WAIT),
                defaults::NM_CONNECT_RETRY_INTERVAL,
            ),
        }
    }

    /// A client with the timeouts and retries of `conf`
    /// (`ipc.client.connect.timeout`, `ipc.client.rpc-timeout.ms`,
    /// `yarn.client.nodemanager-connect.*`).
    pub fn from_conf(
        attempt: ApplicationAttemptId,
        tokens: NmTokenCache,
        conf: &Configuration,
    ) -> Result<NmClient, ConfError> {
        let c = yarn_conf::nm_client(conf, "", "", "")?;
        Ok(NmClient {
            connect_timeout: c.connect_timeout,
            call_timeout: c.call_timeout,
            policy: c.policy,
            ..NmClient::new(attempt, tokens)
        })
    }

    /// Sets how long connecting and each call may take.
    pub fn with_timeouts(mut self, connect: Duration, call: Duration) -> NmClient {
        self.connect_timeout = connect;
        self.call_timeout = call;
        self
    }

    /// Sets what to do after a failed call (see [`spindle_ipc::yarn_conf::nm_policy`]).
    pub fn with_retry_policy(mut self, policy: RetryPolicy) -> NmClient {
        self.policy = policy;
        self
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, RpcProxy>> {
        self.proxies.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The proxy of `node`, presenting the node's current NMToken. When the
    /// token changed, the open connection (made with the old one) is closed.
    fn proxy(&self, node: &NodeId) -> Result<RpcProxy, AmError> {
        let key = node.to_string();
        let token = self
            .tokens
            .get(&key)
            .ok_or_else(|| AmError::NoNmToken { node: key.clone() })?;
        // Presented as an NMToken for this node, whatever the record said.
        let token = Token {
            kind: kind::NM.to_string(),
            service: key.clone(),
            ..token
        };
        let mut proxies = self.lock();
        if let Some(p) = proxies.get(&key) {
            if p.set_token(token) {
                debug!(node = %key, "the node's NMToken changed; reconnecting with the new one");
                p.disconnect();
            }
            return Ok(p.clone());
        }
        let mut config = ProxyConfig::new(
            dial_addr(node),
            self.attempt.to_string(),
            protocols::CONTAINER_MANAGEMENT,
        )
        .with_token(token)
        .with_policy(self.policy.clone());
        config.connect_timeout = self.connect_timeout;
        config.call_timeout = self.call_timeout;
        config.connect_retry = ConnectRetry::NONE;
        let p = RpcProxy::new(config);
        proxies.insert(key, p.clone());
        Ok(p)
    }

    async fn call<Req, Resp>(
        &self,
        node: &NodeId,
        method: &Method<Req, Resp>,
        req: &Req,
    ) -> Result<Resp, AmError>
    where
        Req: prost::Message,
        Resp: prost::Message + Default,
    {
        Ok(self.proxy(node)?.call(method, req).await?)
    }

    /// `startContainers` for one granted container with its container token.
    /// A refusal by the node (an entry of `failed_requests`) is an
    /// [`AmError::Container`] with the Java exception class and message.
    pub async fn start_container(
        &self,
        container: &Container,
        launch: impl Into<pb::ContainerLaunchContextProto>,
    ) -> Result<Started, AmError> {
        let token = container.token.as_ref().ok_or_else(|| {
            AmError::InvalidRequest(format!("container {} has no container token", container.id))
        })?;
        let req = pb::StartContainersRequestProto {
            start_container_request: vec![pb::StartContainerRequestProto {
                container_launch_context: Some(launch.into()),
                container_token: Some(token.to_proto()),
            }],
        };
        let resp = self.call(&container.node, &START_CONTAINERS, &req).await?;
        check_outcome(
            "start",
            &container.id,
            &container.node,
            &resp.succeeded_requests,
            &resp.failed_requests,
        )?;
        Ok(Started {
            services_meta_data: resp
                .services_meta_data
                .into_iter()
                .map(|m| (m.key.unwrap_or_default(), m.value.unwrap_or_default()))
                .collect(),
        })
    }

    /// `stopContainers` for one container.
    pub async fn stop_container(&self, id: ContainerId, node: &NodeId) -> Result<(), AmError> {
        let req = pb::StopContainersRequestProto {
            container_id: vec![container_id_to_pb(&id)],
        };
        let resp = self.call(node, &STOP_CONTAINERS, &req).await?;
        check_outcome(
            "stop",
            &id,
            node,
            &resp.succeeded_requests,
            &resp.failed_requests,
        )
    }

    /// `getContainerStatuses` for one container.
    pub async fn container_status(
        &self,
        id: ContainerId,
        node: &NodeId,
    ) -> Result<ContainerStatus, AmError> {
        let req = pb::GetContainerStatusesRequestProto {
            container_id: vec![container_id_to_pb(&id)],
        };
        let resp = self.call(node, &GET_CONTAINER_STATUSES, &req).await?;
        if let Some(e) = failure_of(&id, &resp.failed_requests) {
            return Err(container_error("status query", &id, node, e));
        }
        for s in &resp.status {
            let status = ContainerStatus::from_pb(s)?;
            if status.id == id {
                return Ok(status);
            }
        }
        Err(AmError::Protocol(format!(
            "{node} answered getContainerStatuses without a status for {id}"
        )))
    }

    /// Drops every connection (they are reopened on demand).
    pub fn close_all(&self) {
        self.lock().clear();
    }
}

fn failure_of<'a>(
    id: &ContainerId,
    failed: &'a [pb::ContainerExceptionMapProto],
) -> Option<&'a pb::SerializedExceptionProto> {
    failed
        .iter()
        .filter(|f| {
            container_id_from_pb(f.container_id.as_ref(), "ContainerExceptionMapProto").ok()
                == Some(*id)
        })
        .find_map(|f| f.exception.as_ref())
}

fn container_error(
    operation: &'static str,
    id: &ContainerId,
    node: &NodeId,
    e: &pb::SerializedExceptionProto,
) -> AmError {
    let mut message = e.message.clone().unwrap_or_default();
    let mut cause = e.cause.as_deref();
    while let Some(c) = cause {
        message.push_str(&format!(
            "; caused by {}: {}",
            c.class_name.as_deref().unwrap_or("?"),
            c.message.as_deref().unwrap_or("")
        ));
        cause = c.cause.as_deref();
    }
    AmError::Container {
        operation,
        container: id.to_string(),
        node: node.to_string(),
        class_name: e
            .class_name
            .clone()
            .unwrap_or_else(|| "org.apache.hadoop.yarn.exceptions.YarnException".to_string()),
        message,
    }
}

fn check_outcome(
    operation: &'static str,
    id: &ContainerId,
    node: &NodeId,
    succeeded: &[pb::ContainerIdProto],
    failed: &[pb::ContainerExceptionMapProto],
) -> Result<(), AmError> {
    if let Some(e) = failure_of(id, failed) {
        return Err(container_error(operation, id, node, e));
    }
    let ok = succeeded
        .iter()
        .any(|c| container_id_from_pb(Some(c), "ContainerIdProto").ok() == Some(*id));
    if ok {
        Ok(())
    } else {
        Err(AmError::Protocol(format!(
            "{node} answered the {operation} of {id} with neither success nor failure"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use spindle_common::ApplicationId;

    #[test]
    fn failures_keep_the_java_class_and_the_causes() {
        let attempt = ApplicationAttemptId::new(ApplicationId::new(1, 1), 1);
        let id = ContainerId::new(attempt, 2);
        let node = NodeId::new("n1", 1);
        let failed = vec![pb::ContainerExceptionMapProto {
            container_id: Some(container_id_to_pb(&id)),
            exception: Some(pb::SerializedExceptionProto {
                message: Some("bad token".into()),
                trace: None,
                class_name: Some(
                    "org.apache.hadoop.security.token.SecretManager$InvalidToken".into(),
                ),
                cause: Some(Box::new(pb::SerializedExceptionProto {
                    message: Some("expired".into()),
                    trace: None,
                    class_name: Some("java.lang.Exception".into()),
                    cause: None,
                })),
            }),
        }];
        let err = check_outcome("start", &id, &node, &[], &failed).err();
        match err {
            Some(AmError::Container {
                class_name,
                message,
                ..
            }) => {
                assert_eq!(
                    class_name,
                    "org.apache.hadoop.security.token.SecretManager$InvalidToken"
                );
                assert_eq!(message, "bad token; caused by java.lang.Exception: expired");
            }
            other => panic!("unexpected {other:?}"),
        }
        // Another container's failure is not this one's; nothing at all is a protocol error.
        let other = ContainerId::new(attempt, 3);
        assert!(matches!(
            check_outcome("start", &other, &node, &[], &failed),
            Err(AmError::Protocol(_))
        ));
        assert!(check_outcome(
            "start",
            &other,
            &node,
            &[container_id_to_pb(&other)],
            &failed
        )
        .is_ok());
    }

    #[test]
    fn ipv6_nodes_are_dialled_in_brackets() {
        assert_eq!(dial_addr(&NodeId::new("::1", 8041)), "[::1]:8041");
        assert_eq!(dial_addr(&NodeId::new("h", 8041)), "h:8041");
    }
}
