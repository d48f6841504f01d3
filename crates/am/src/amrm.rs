//! `AmRmClient`: an ApplicationMaster's side of the scheduler protocol
//! (ApplicationMasterProtocol on `yarn.resourcemanager.scheduler.address`),
//! as Hadoop's `AMRMClientImpl` speaks it.
//!
//! - The connection authenticates with the attempt's AMRMToken (SASL
//!   DIGEST-MD5): the ResourceManager learns the attempt from the token, as
//!   no request names it. Inside an AM container, [`AmRmClient::from_env`]
//!   finds the token in `HADOOP_TOKEN_FILE_LOCATION` and the attempt in
//!   `CONTAINER_ID`.
//! - [`AmRmClient::register`] starts the heartbeat sequence at response id 0.
//! - [`AmRmClient::allocate`] is the heartbeat. It sends the request-table
//!   rows whose absolute counts changed since the last call (see
//!   [`crate::requests`]), the containers to release and blacklist changes,
//!   and returns what the scheduler granted and what completed. NMTokens that
//!   come with grants go into the shared [`NmTokenCache`].
//! - Calls go through the client proxy ([`spindle_ipc::RpcProxy`]): retried
//!   while the ResourceManager is unreachable, standby or the answer is lost,
//!   with growing pauses up to `yarn.resourcemanager.connect.retry-interval.ms`
//!   for `yarn.resourcemanager.connect.max-wait.ms`; with RM HA, failed over
//!   across the ResourceManagers as Hadoop's `RMProxy` does.
//! - Each request carries the response id of the last answer. If an answer
//!   is lost (timeout, broken connection), the same request is sent again
//!   unchanged: a ResourceManager that had processed it recognises the id
//!   and repeats its answer instead of applying the request twice
//!   (`allocate` is `@AtMostOnce`). Changes made meanwhile go in the next call.
//! - When the ResourceManager sends a new AMRMToken (its master key rolled),
//!   the next connection presents it.
//! - If the ResourceManager answers `ApplicationMasterNotRegisteredException`
//!   (it restarted or lost the attempt's registration), the client registers
//!   again, restarts at response id 0 and resends the whole table, every
//!   release not yet confirmed and the whole blacklist.
//! - [`AmRmClient::finish`] unregisters, repeating every 100 ms until the
//!   ResourceManager confirms.
//!
//! Granted containers must be matched to the requests they satisfy: see
//! [`AmRmClient::container_granted`] and the contract in [`crate::requests`].

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hadoop_protos::yarn as pb;
use spindle_common::conf::{keys, Configuration};
use spindle_common::security::{kind, AmRmTokenIdentifier, Credentials, Token};
use spindle_common::{ApplicationAttemptId, ContainerId, Resource};
use spindle_ipc::methods::application_master::{
    ALLOCATE, FINISH_APPLICATION_MASTER as FINISH, REGISTER_APPLICATION_MASTER as REGISTER,
};
use spindle_ipc::retry::RM_PROXY_RETRIED;
use spindle_ipc::yarn_conf::{self, Failover, RmRetry};
use spindle_ipc::{
    class, protocols, ConnectRetry, Limit, Method, ProxyConfig, RetryPolicy, RpcProxy, Sleep,
};
use tracing::{debug, info, warn};

use crate::convert::{container_id_to_pb, node_id_from_pb, resource_from_pb};
use crate::error::AmError;
use crate::nm_tokens::NmTokenCache;
use crate::records::{Container, ContainerStatus, FinalStatus, NodeUpdate};
use crate::requests::{ContainerRequest, DefaultRackResolver, RackResolver, RequestTable, ANY};

/// The environment variable naming the container's credentials file.
pub const TOKEN_FILE_ENV: &str = "HADOOP_TOKEN_FILE_LOCATION";
/// The environment variable holding the container's id.
pub const CONTAINER_ID_ENV: &str = "CONTAINER_ID";

/// How often `finish` repeats the unregister call until it is confirmed.
pub const FINISH_POLL_INTERVAL: Duration = Duration::from_millis(100);

/// The first pause before retrying a scheduler call; later pauses double up
/// to the retry interval, so that an AM's heartbeat recovers quickly from a
/// short hiccup.
const FIRST_RETRY_PAUSE: Duration = Duration::from_millis(100);

/// How an [`AmRmClient`] reaches the scheduler.
#[derive(Clone)]
pub struct AmRmConfig {
    /// `host:port` of the scheduler (`yarn.resourcemanager.scheduler.address`).
    pub scheduler_address: String,
    /// The attempt this AM is; must be the one the token names.
    pub attempt: ApplicationAttemptId,
    /// The AMRMToken.
    pub token: Token,
    pub connect_timeout: Duration,
    /// How long one call may take before it counts as lost.
    pub call_timeout: Duration,
    /// How long to keep retrying a call whose answer was lost or whose
    /// connection failed (`yarn.resourcemanager.connect.max-wait.ms`;
    /// [`Duration::MAX`] for its -1, forever).
    pub max_wait: Duration,
    /// The longest pause between such retries; the first retries come
    /// sooner (`yarn.resourcemanager.connect.retry-interval.ms`).
    pub retry_interval: Duration,
    /// Connection-level retries (`ipc.client.connect.*`, or the failover
    /// retries with RM HA).
    pub connect_retry: ConnectRetry,
    /// With RM HA, the scheduler addresses of the other ResourceManagers,
    /// tried in order after `scheduler_address`; empty without HA.
    pub failover_addresses: Vec<String>,
    /// With RM HA, the `yarn.client.failover-*` settings.
    pub failover: Failover,
    /// Maps request hosts to racks.
    pub rack_resolver: Arc<dyn RackResolver>,
}

impl std::fmt::Debug for AmRmConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AmRmConfig")
            .field("scheduler_address", &self.scheduler_address)
            .field("attempt", &self.attempt)
            .field("token", &self.token)
            .field("connect_timeout", &self.connect_timeout)
            .field("call_timeout", &self.call_timeout)
            .field("max_wait", &self.max_wait)
            .field("retry_interval", &self.retry_interval)
            .field("connect_retry", &self.connect_retry)
            .field("failover_addresses", &self.failover_addresses)
            .field("failover", &self.failover)
            .finish()
    }
}

impl AmRmConfig {
    /// A configuration with Hadoop's default timings and racks.
    pub fn new(
        scheduler_address: impl Into<String>,
        attempt: ApplicationAttemptId,
        token: Token,
    ) -> Self {
        AmRmConfig {
            scheduler_address: scheduler_address.into(),
            attempt,
            token,
            connect_timeout: Duration::from_secs(20),
            call_timeout: Duration::from_secs(60),
            max_wait: Duration::from_secs(900),
            retry_interval: Duration::from_secs(30),
            connect_retry: ConnectRetry::default(),
            failover_addresses: Vec::new(),
            failover: Failover::default(),
            rack_resolver: Arc::new(DefaultRackResolver),
        }
    }

    /// The client proxy's retry policy: without HA, the failures RMProxy
    /// retries, for `max_wait`, with pauses growing from 100 ms to
    /// `retry_interval`; with HA, RMProxy's failover policy.
    pub fn retry_policy(&self) -> RetryPolicy {
        if self.failover_addresses.is_empty() {
            return RetryPolicy::OnNetworkFailures {
                on: RM_PROXY_RETRIED,
                limit: Limit::Time(self.max_wait),
                sleep: Sleep::Doubling {
                    first: FIRST_RETRY_PAUSE.min(self.retry_interval),
                    max: self.retry_interval,
                },
            };
        }
        RmRetry {
            max_wait: (self.max_wait != Duration::MAX).then_some(self.max_wait),
            retry_interval: self.retry_interval,
            failover: Some(self.failover),
        }
        .policy()
    }

    fn proxy_config(&self) -> ProxyConfig {
        let mut c = ProxyConfig::new(
            self.scheduler_address.clone(),
            self.attempt.to_string(),
            protocols::APPLICATION_MASTER,
        )
        .with_token(self.token.clone())
        .with_policy(self.retry_policy());
        c.servers.extend(self.failover_addresses.iter().cloned());
        c.connect_timeout = self.connect_timeout;
        c.call_timeout = self.call_timeout;
        c.connect_retry = self.connect_retry;
        c
    }

    /// The configuration of an AM running in a container: the attempt from
    /// `CONTAINER_ID`, the AMRMToken from the credentials file named by
    /// `HADOOP_TOKEN_FILE_LOCATION`, the scheduler address and timings from
    /// `conf`.
    pub fn from_env(conf: &Configuration) -> Result<AmRmConfig, AmError> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        AmRmConfig::from_values(conf, var(CONTAINER_ID_ENV), var(TOKEN_FILE_ENV))
    }

    /// [`AmRmConfig::from_env`] with the two environment values given.
    pub fn from_values(
        conf: &Configuration,
        container_id: Option<String>,
        token_file: Option<String>,
    ) -> Result<AmRmConfig, AmError> {
        let container_id = container_id.ok_or_else(|| {
            AmError::Environment(format!(
                "{CONTAINER_ID_ENV} is not set: an ApplicationMaster must run in a container started by a NodeManager"
            ))
        })?;
        let container: ContainerId = container_id.parse().map_err(|e| {
            AmError::Environment(format!(
                "{CONTAINER_ID_ENV}='{container_id}' is not a container id: {e}"
            ))
        })?;
        let attempt = container.attempt;
        let token_file = token_file.ok_or_else(|| {
            AmError::Environment(format!(
                "{TOKEN_FILE_ENV} is not set: the ApplicationMaster has no AMRMToken"
            ))
        })?;
        let bytes = std::fs::read(&token_file).map_err(|source| AmError::File {
            path: token_file.clone(),
            source,
        })?;
        let creds = Credentials::from_bytes(&bytes)
            .map_err(|e| AmError::Environment(format!("{TOKEN_FILE_ENV}={token_file}: {e}")))?;
        let token = select_amrm_token(&creds, attempt)
            .map_err(|m| AmError::Environment(format!("{TOKEN_FILE_ENV}={token_file}: {m}")))?;

        let mut addresses = yarn_conf::rm_addresses(conf, keys::RM_SCHEDULER_ADDRESS)?;
        let scheduler_address = addresses.remove(0);
        let mut config = AmRmConfig::new(scheduler_address, attempt, token);
        let retry = RmRetry::client(conf)?;
        config.max_wait = retry.max_wait.unwrap_or(Duration::MAX);
        config.retry_interval = retry.retry_interval.max(Duration::from_millis(1));
        config.connect_retry = retry.connect_retry(yarn_conf::connect_retry(conf)?);
        config.failover = retry.failover.unwrap_or_default();
        config.failover_addresses = addresses;
        config.connect_timeout = yarn_conf::connect_timeout(conf)?;
        config.call_timeout = yarn_conf::call_timeout(conf)?;
        // Like ClientRMProxy: the token is for the scheduler address(es) this AM uses.
        config.token.service = std::iter::once(&config.scheduler_address)
            .chain(&config.failover_addresses)
            .cloned()
            .collect::<Vec<_>>()
            .join(",");
        Ok(config)
    }
}

/// The AMRMToken of `attempt` among `creds`.
fn select_amrm_token(creds: &Credentials, attempt: ApplicationAttemptId) -> Result<Token, String> {
    let mut others = Vec::new();
    for token in creds.tokens_of_kind(kind::AM_RM) {
        match AmRmTokenIdentifier::decode(&token.identifier) {
            Ok(id) if id.attempt == attempt => return Ok(token.clone()),
            Ok(id) => others.push(id.attempt.to_string()),
            Err(e) => others.push(format!("<undecodable: {e}>")),
        }
    }
    if others.is_empty() {
        Err(format!("the credentials hold no {} token", kind::AM_RM))
    } else {
        Err(format!(
            "no {} token for {attempt}; the tokens are for {}",
            kind::AM_RM,
            others.join(", ")
        ))
    }
}

/// What the ResourceManager said when the AM registered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registration {
    /// The largest container the scheduler grants.
    pub max_capability: Resource,
    pub queue: String,
    /// Containers still running from earlier attempts (work-preserving AM restart).
    pub containers_from_previous_attempts: Vec<Container>,
}

/// One heartbeat's news.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Allocation {
    /// Containers granted since the last heartbeat. Match each to a request
    /// ([`AmRmClient::container_granted`]) or release it.
    pub allocated: Vec<Container>,
    /// Containers of this attempt that completed since the last heartbeat.
    pub completed: Vec<ContainerStatus>,
    /// Nodes whose state changed (decommissioning, lost, ...).
    pub updated_nodes: Vec<NodeUpdate>,
    pub num_cluster_nodes: i32,
    /// What the attempt may still get (the scheduler's headroom).
    pub headroom: Resource,
    /// The response id of this answer.
    pub response_id: i32,
}

/// The request of a heartbeat whose answer has not arrived yet.
#[derive(Debug, Clone)]
struct InFlight {
    request: pb::AllocateRequestProto,
    rows: Vec<crate::requests::ResourceRow>,
    releases: Vec<ContainerId>,
    blacklist_add: Vec<String>,
    blacklist_remove: Vec<String>,
}

/// How the AM registered, for registering again.
#[derive(Debug, Clone)]
struct RegisterArgs {
    host: String,
    rpc_port: i32,
    tracking_url: String,
}

/// The scheduler client of one ApplicationMaster attempt (see the module
/// documentation). Methods take `&mut self`: one task drives the heartbeat.
pub struct AmRmClient {
    config: AmRmConfig,
    proxy: RpcProxy,
    table: RequestTable,
    registered_with: Option<RegisterArgs>,
    registration: Option<Registration>,
    response_id: i32,
    in_flight: Option<InFlight>,
    /// Releases not sent yet.
    to_release: BTreeSet<ContainerId>,
    /// Releases sent but not yet reported complete (sent again after a
    /// re-registration).
    released: BTreeSet<ContainerId>,
    blacklist: BTreeSet<String>,
    blacklist_add: BTreeSet<String>,
    blacklist_remove: BTreeSet<String>,
    nm_tokens: NmTokenCache,
}

impl std::fmt::Debug for AmRmClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AmRmClient")
            .field("config", &self.config)
            .field("registered", &self.registered_with.is_some())
            .field("response_id", &self.response_id)
            .field("table", &self.table)
            .finish()
    }
}

impl AmRmClient {
    /// A client for `config`; it connects on the first call.
    pub fn new(config: AmRmConfig) -> AmRmClient {
        let table = RequestTable::new(config.rack_resolver.clone());
        AmRmClient {
            proxy: RpcProxy::new(config.proxy_config()),
            config,
            table,
            registered_with: None,
            registration: None,
            response_id: 0,
            in_flight: None,
            to_release: BTreeSet::new(),
            released: BTreeSet::new(),
            blacklist: BTreeSet::new(),
            blacklist_add: BTreeSet::new(),
            blacklist_remove: BTreeSet::new(),
            nm_tokens: NmTokenCache::new(),
        }
    }

    /// A client for the AM running in this container (see
    /// [`AmRmConfig::from_env`]).
    pub fn from_env(conf: &Configuration) -> Result<AmRmClient, AmError> {
        Ok(AmRmClient::new(AmRmConfig::from_env(conf)?))
    }

    pub fn attempt(&self) -> ApplicationAttemptId {
        self.config.attempt
    }

    pub fn config(&self) -> &AmRmConfig {
        &self.config
    }

    /// The NMTokens received so far; share it with an [`crate::NmClient`].
    pub fn nm_token_cache(&self) -> NmTokenCache {
        self.nm_tokens.clone()
    }

    /// The response id the next heartbeat carries.
    pub fn response_id(&self) -> i32 {
        self.response_id
    }

    pub fn is_registered(&self) -> bool {
        self.registered_with.is_some()
    }

    /// What the last registration returned.
    pub fn registration(&self) -> Option<&Registration> {
        self.registration.as_ref()
    }

    pub fn request_table(&self) -> &RequestTable {
        &self.table
    }

    /// The current blacklist.
    pub fn blacklist(&self) -> &BTreeSet<String> {
        &self.blacklist
    }

    // ---- requests --------------------------------------------------------------

    /// Asks for one more container (see [`crate::requests`]). After
    /// registration a capability beyond the cluster's maximum is refused.
    pub fn add_request(&mut self, request: &ContainerRequest) -> Result<(), AmError> {
        if let Some(reg) = &self.registration {
            if !request.capability.fits_in(&reg.max_capability) {
                return Err(AmError::InvalidRequest(format!(
                    "capability {} exceeds the cluster's maximum allocation {}",
                    request.capability, reg.max_capability
                )));
            }
        }
        self.table.add(request)
    }

    /// Withdraws one request, or records that a granted container satisfied it.
    pub fn remove_request(&mut self, request: &ContainerRequest) -> Result<(), AmError> {
        self.table.remove(request)
    }

    /// Outstanding requests a container at `priority` with `capability` on
    /// `location` (host, rack or `*`) could satisfy, best first.
    pub fn matching_requests(
        &self,
        priority: i32,
        location: &str,
        capability: Resource,
    ) -> Vec<ContainerRequest> {
        self.table.matching(priority, location, capability)
    }

    /// Matches a granted container to the outstanding request it best
    /// satisfies — one naming its host, else its rack, else one that accepts
    /// any node — and removes that request. Returns the request, or `None`
    /// when the container satisfies none (release it).
    pub fn container_granted(&mut self, container: &Container) -> Option<ContainerRequest> {
        let host = container.node.host.clone();
        let rack = self.table.rack_of(&host);
        for location in [host.as_str(), rack.as_str(), ANY] {
            let found = self
                .table
                .matching(container.priority, location, container.resource)
                .into_iter()
                .next();
            if let Some(req) = found {
                if self.table.remove(&req).is_ok() {
                    return Some(req);
                }
            }
        }
        None
    }

    /// Gives a container back; it is sent with the next heartbeat.
    pub fn release(&mut self, container: ContainerId) {
        self.to_release.insert(container);
    }

    /// Adds and removes nodes (host names) from the blacklist: the scheduler
    /// places none of this attempt's containers on a blacklisted node.
    pub fn update_blacklist(&mut self, additions: &[String], removals: &[String]) {
        for host in additions {
            self.blacklist.insert(host.clone());
            self.blacklist_remove.remove(host);
            self.blacklist_add.insert(host.clone());
        }
        for host in removals {
            self.blacklist.remove(host);
            self.blacklist_add.remove(host);
            self.blacklist_remove.insert(host.clone());
        }
    }

    // ---- calls -----------------------------------------------------------------

    async fn call<Req, Resp>(&self, method: &Method<Req, Resp>, req: &Req) -> Result<Resp, AmError>
    where
        Req: prost::Message,
        Resp: prost::Message + Default,
    {
        Ok(self.proxy.call(method, req).await?)
    }

    /// `registerApplicationMaster`: host and RPC port the AM serves on (−1
    /// for none) and its tracking URL. Heartbeats start at response id 0.
    pub async fn register(
        &mut self,
        host: &str,
        rpc_port: i32,
        tracking_url: &str,
    ) -> Result<Registration, AmError> {
        let args = RegisterArgs {
            host: host.to_string(),
            rpc_port,
            tracking_url: tracking_url.to_string(),
        };
        let reg = self.register_with(&args).await?;
        info!(attempt = %self.config.attempt, max = %reg.max_capability, queue = %reg.queue, "registered with the ResourceManager");
        self.registered_with = Some(args);
        Ok(reg)
    }

    async fn register_with(&mut self, args: &RegisterArgs) -> Result<Registration, AmError> {
        let req = pb::RegisterApplicationMasterRequestProto {
            host: Some(args.host.clone()),
            rpc_port: Some(args.rpc_port),
            tracking_url: Some(args.tracking_url.clone()),
            placement_constraints: Vec::new(),
        };
        let resp = self.call(&REGISTER, &req).await?;
        self.response_id = 0;
        self.in_flight = None;
        self.store_nm_tokens(&resp.nm_tokens_from_previous_attempts);
        let previous = resp
            .containers_from_previous_attempts
            .iter()
            .filter_map(|c| match Container::from_pb(c) {
                Ok(c) => Some(c),
                Err(e) => {
                    warn!(error = %e, "ignoring an unreadable container from a previous attempt");
                    None
                }
            })
            .collect();
        let max_capability = resp
            .maximum_capability
            .as_ref()
            .map(|r| resource_from_pb(Some(r)))
            .ok_or_else(|| {
                AmError::Protocol(
                    "the registration answer carries no maximum capability".to_string(),
                )
            })?;
        let reg = Registration {
            max_capability,
            queue: resp.queue.unwrap_or_default(),
            containers_from_previous_attempts: previous,
        };
        self.registration = Some(reg.clone());
        Ok(reg)
    }

    /// Registers again after the ResourceManager forgot the attempt, and
    /// arranges for everything to be sent again.
    async fn reregister(&mut self) -> Result<(), AmError> {
        let args = self.registered_with.clone().ok_or_else(|| {
            AmError::InvalidRequest("the ApplicationMaster never registered".to_string())
        })?;
        warn!(attempt = %self.config.attempt, "the ResourceManager does not know this attempt as registered; registering again");
        self.register_with(&args).await?;
        self.table.resend_all();
        let released = std::mem::take(&mut self.released);
        self.to_release.extend(released);
        self.blacklist_add = self.blacklist.clone();
        self.blacklist_remove.clear();
        Ok(())
    }

    fn store_nm_tokens(&mut self, tokens: &[pb::NmTokenProto]) {
        for t in tokens {
            let (Ok(node), Some(token)) = (
                node_id_from_pb(t.node_id.as_ref(), "NMTokenProto"),
                t.token.as_ref(),
            ) else {
                warn!("ignoring an NMToken without a node or token");
                continue;
            };
            let mut token = Token::from(token);
            token.service = node.to_string();
            if self.nm_tokens.set(node.to_string(), token) {
                debug!(node = %node, "NMToken replaced");
            }
        }
    }

    fn build_request(&mut self, progress: f32) -> InFlight {
        let rows = self.table.take_changes();
        let releases: Vec<ContainerId> = std::mem::take(&mut self.to_release).into_iter().collect();
        self.released.extend(releases.iter().copied());
        let blacklist_add: Vec<String> = std::mem::take(&mut self.blacklist_add)
            .into_iter()
            .collect();
        let blacklist_remove: Vec<String> = std::mem::take(&mut self.blacklist_remove)
            .into_iter()
            .collect();
        let blacklist_request =
            (!blacklist_add.is_empty() || !blacklist_remove.is_empty()).then(|| {
                pb::ResourceBlacklistRequestProto {
                    blacklist_additions: blacklist_add.clone(),
                    blacklist_removals: blacklist_remove.clone(),
                }
            });
        let request = pb::AllocateRequestProto {
            ask: rows.iter().map(|r| r.to_pb()).collect(),
            release: releases.iter().map(container_id_to_pb).collect(),
            blacklist_request,
            response_id: Some(self.response_id),
            progress: Some(if progress.is_finite() {
                progress.clamp(0.0, 1.0)
            } else {
                0.0
            }),
            ..Default::default()
        };
        InFlight {
            request,
            rows,
            releases,
            blacklist_add,
            blacklist_remove,
        }
    }

    /// The ResourceManager refused a heartbeat without applying it: its
    /// contents go back to what is still to be sent.
    fn restore(&mut self, f: InFlight) {
        self.table.unsent(&f.rows);
        for c in f.releases {
            self.released.remove(&c);
            self.to_release.insert(c);
        }
        for host in f.blacklist_add {
            if self.blacklist.contains(&host) && !self.blacklist_remove.contains(&host) {
                self.blacklist_add.insert(host);
            }
        }
        for host in f.blacklist_remove {
            if !self.blacklist.contains(&host) && !self.blacklist_add.contains(&host) {
                self.blacklist_remove.insert(host);
            }
        }
    }

    /// The heartbeat (see the module documentation). `progress` is 0.0 ..= 1.0.
    pub async fn allocate(&mut self, progress: f32) -> Result<Allocation, AmError> {
        if self.registered_with.is_none() {
            return Err(AmError::InvalidRequest(
                "allocate called before register".to_string(),
            ));
        }
        let mut reregistered = false;
        loop {
            let in_flight = match self.in_flight.clone() {
                Some(f) => {
                    debug!(
                        response_id = self.response_id,
                        "sending the unanswered heartbeat again"
                    );
                    f
                }
                None => {
                    let f = self.build_request(progress);
                    self.in_flight = Some(f.clone());
                    f
                }
            };
            match self.call(&ALLOCATE, &in_flight.request).await {
                Ok(resp) => {
                    self.in_flight = None;
                    return self.absorb(resp).await;
                }
                Err(e)
                    if e.remote_class() == Some(class::APPLICATION_MASTER_NOT_REGISTERED)
                        && !reregistered =>
                {
                    self.in_flight = None;
                    // Its contents are covered by the full resend.
                    self.reregister().await?;
                    reregistered = true;
                }
                Err(e) if e.is_transport() => return Err(e),
                Err(e) => {
                    if let Some(f) = self.in_flight.take() {
                        self.restore(f);
                    }
                    return Err(e);
                }
            }
        }
    }

    async fn absorb(&mut self, resp: pb::AllocateResponseProto) -> Result<Allocation, AmError> {
        let response_id = resp.response_id.ok_or_else(|| {
            AmError::Protocol("the allocate answer carries no response id".to_string())
        })?;
        self.response_id = response_id;
        match resp
            .a_m_command
            .and_then(|c| pb::AmCommandProto::try_from(c).ok())
        {
            Some(pb::AmCommandProto::AmShutdown) => {
                return Err(AmError::Shutdown {
                    attempt: self.config.attempt.to_string(),
                });
            }
            Some(pb::AmCommandProto::AmResync) => {
                self.reregister().await?;
            }
            None => {}
        }
        self.store_nm_tokens(&resp.nm_tokens);
        if let Some(t) = &resp.am_rm_token {
            let mut token = Token::from(t);
            token.kind = kind::AM_RM.to_string();
            token.service = self.config.scheduler_address.clone();
            if token != self.config.token {
                info!(attempt = %self.config.attempt, "the AMRMToken was rolled over; new connections present the new one");
                self.proxy.set_token(token.clone());
                self.config.token = token;
            }
        }
        let mut allocated = Vec::with_capacity(resp.allocated_containers.len());
        for c in &resp.allocated_containers {
            match Container::from_pb(c) {
                Ok(c) => allocated.push(c),
                Err(e) => warn!(error = %e, "ignoring an unreadable allocated container"),
            }
        }
        let mut completed = Vec::with_capacity(resp.completed_container_statuses.len());
        for s in &resp.completed_container_statuses {
            match ContainerStatus::from_pb(s) {
                Ok(s) => {
                    self.released.remove(&s.id);
                    completed.push(s);
                }
                Err(e) => warn!(error = %e, "ignoring an unreadable container status"),
            }
        }
        let updated_nodes = resp
            .updated_nodes
            .iter()
            .filter_map(|n| NodeUpdate::from_pb(n).ok())
            .collect();
        Ok(Allocation {
            allocated,
            completed,
            updated_nodes,
            num_cluster_nodes: resp.num_cluster_nodes.unwrap_or(0),
            headroom: resource_from_pb(resp.limit.as_ref()),
            response_id,
        })
    }

    /// `finishApplicationMaster`, repeated every 100 ms until the
    /// ResourceManager confirms the unregistration (within `max_wait`).
    pub async fn finish(
        &mut self,
        status: FinalStatus,
        diagnostics: &str,
        tracking_url: &str,
    ) -> Result<(), AmError> {
        if self.registered_with.is_none() {
            return Err(AmError::InvalidRequest(
                "finish called before register".to_string(),
            ));
        }
        let req = pb::FinishApplicationMasterRequestProto {
            diagnostics: Some(diagnostics.to_string()),
            tracking_url: Some(tracking_url.to_string()),
            final_application_status: Some(spindle_common::proto::final_status_to_pb(status) as i32),
        };
        let started = Instant::now();
        let mut reregistered = false;
        loop {
            match self.call(&FINISH, &req).await {
                Ok(resp) if resp.is_unregistered.unwrap_or(false) => {
                    info!(attempt = %self.config.attempt, %status, "unregistered from the ResourceManager");
                    self.registered_with = None;
                    self.proxy.disconnect();
                    return Ok(());
                }
                Ok(_) => {}
                Err(e)
                    if e.remote_class() == Some(class::APPLICATION_MASTER_NOT_REGISTERED)
                        && !reregistered =>
                {
                    self.reregister().await?;
                    reregistered = true;
                    continue;
                }
                Err(e) => return Err(e),
            }
            if started.elapsed() >= self.config.max_wait {
                return Err(AmError::Timeout(format!(
                    "the ResourceManager did not confirm the unregistration of {} within {} ms",
                    self.config.attempt,
                    self.config.max_wait.as_millis()
                )));
            }
            tokio::time::sleep(FINISH_POLL_INTERVAL).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use spindle_common::ApplicationId;

    fn attempt(n: i32) -> ApplicationAttemptId {
        ApplicationAttemptId::new(ApplicationId::new(1_700_000_000_000, 4), n)
    }

    fn amrm(a: ApplicationAttemptId) -> Token {
        Token::new(
            AmRmTokenIdentifier::new(a, 7).encode(),
            b"secret".to_vec(),
            kind::AM_RM,
            "",
        )
    }

    #[test]
    fn the_token_of_the_containers_attempt_is_chosen() {
        let mut creds = Credentials::new();
        creds.add_token("old", amrm(attempt(1)));
        creds.add_token("", amrm(attempt(2)));
        assert_eq!(select_amrm_token(&creds, attempt(2)), Ok(amrm(attempt(2))));
        let err = select_amrm_token(&creds, attempt(3))
            .err()
            .unwrap_or_default();
        assert!(
            err.contains("appattempt_1700000000000_0004_000001"),
            "{err}"
        );
        let err = select_amrm_token(&Credentials::new(), attempt(1))
            .err()
            .unwrap_or_default();
        assert_eq!(err, "the credentials hold no YARN_AM_RM_TOKEN token");
    }

    #[test]
    fn configuration_comes_from_the_container_environment() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("container_tokens");
        let mut creds = Credentials::new();
        creds.add_token("", amrm(attempt(1)));
        std::fs::write(&file, creds.to_bytes()).expect("write");
        let mut conf = Configuration::with_defaults();
        conf.set(keys::RM_SCHEDULER_ADDRESS, "127.0.0.1:8030");
        conf.set(keys::RM_CONNECT_MAX_WAIT_MS, "5000");
        let cid = ContainerId::new(attempt(1), 1).to_string();
        let path = file.to_string_lossy().into_owned();

        let config = AmRmConfig::from_values(&conf, Some(cid.clone()), Some(path.clone()))
            .expect("valid environment");
        assert_eq!(config.attempt, attempt(1));
        assert_eq!(config.scheduler_address, "127.0.0.1:8030");
        assert_eq!(config.token.service, "127.0.0.1:8030");
        assert_eq!(config.token.identifier, amrm(attempt(1)).identifier);
        assert_eq!(config.max_wait, Duration::from_millis(5000));

        let missing = AmRmConfig::from_values(&conf, None, Some(path.clone()));
        assert!(
            matches!(missing, Err(AmError::Environment(m)) if m.contains("CONTAINER_ID is not set"))
        );
        let bad = AmRmConfig::from_values(&conf, Some("container_x".into()), Some(path.clone()));
        assert!(matches!(bad, Err(AmError::Environment(m)) if m.contains("is not a container id")));
        let no_file = AmRmConfig::from_values(&conf, Some(cid.clone()), None);
        assert!(
            matches!(no_file, Err(AmError::Environment(m)) if m.contains("HADOOP_TOKEN_FILE_LOCATION"))
        );
        let other_attempt = ContainerId::new(attempt(2), 1).to_string();
        let wrong = AmRmConfig::from_values(&conf, Some(other_attempt), Some(path));
        assert!(
            matches!(wrong, Err(AmError::Environment(m)) if m.contains("no YARN_AM_RM_TOKEN token for appattempt_1700000000000_0004_000002"))
        );
    }
}
