//! Leader election among the ResourceManagers of one cluster, on ZooKeeper, as Hadoop's
//! `ActiveStandbyElector` does it.
//!
//! * The lock is the ephemeral znode `<parent>/ActiveStandbyElectorLock`, `<parent>`
//!   being `yarn.resourcemanager.ha.automatic-failover.zk-base-path` (default
//!   `/yarn-leader-election`) `/` `yarn.resourcemanager.cluster-id`. Its data is an
//!   `ActiveRMInfoProto{clusterId, rmId}`, as Hadoop writes it, so the two interoperate on
//!   one ZooKeeper. The RM whose session created it is active; the others watch it and try
//!   again when it goes (its session closed or expired).
//! * The persistent `<parent>/ActiveBreadCrumb` names the last active. A new active that
//!   finds another RM's name there logs it: the deposed RM is fenced by the state store
//!   (its writes fail once the new active has opened the store, see `store::zk_store`),
//!   not by a fencing script.
//! * ZooKeeper lost: the elector goes neutral and keeps reporting Active for at most the
//!   session timeout (as Hadoop's RM elector does); if the session is not back by then it
//!   reports Standby, so an active that lost ZooKeeper steps down. The session then either
//!   comes back (the lock is still ours if nobody took it: Active again) or expires, and the
//!   elector joins again with a new session once ZooKeeper answers.
//!
//! The owner reads the outcome from a `watch` channel ([`Election`]) and acts on it.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use prost::Message as _;
use spindle_common::conf::Configuration;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;
use tracing::{info, warn};
use zookeeper_client::{Client, CreateMode, EventType, OneshotWatcher, SessionState};

use super::ZkConf;

/// The lock znode's name under the election parent (Hadoop's `LOCK_FILENAME`).
pub const LOCK_NODE: &str = "ActiveStandbyElectorLock";
/// The breadcrumb znode's name under the election parent (Hadoop's `BREADCRUMB_FILENAME`).
pub const BREADCRUMB_NODE: &str = "ActiveBreadCrumb";
/// `yarn.resourcemanager.ha.automatic-failover.zk-base-path`'s default.
pub const DEFAULT_BASE_PATH: &str = "/yarn-leader-election";

/// What the election says this RM should be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Election {
    Active,
    Standby,
}

/// The election's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ElectorConf {
    /// `hadoop.zk.address`.
    pub zk_address: String,
    /// `hadoop.zk.timeout-ms`: the ZooKeeper session timeout, also how long a disconnected
    /// active stays active.
    pub session_timeout: Duration,
    /// `hadoop.zk.retry-interval-ms`: the pause between attempts to reach ZooKeeper.
    pub retry_interval: Duration,
    /// The ZooKeeper connection settings the above come from (with the ACL).
    pub zk: ZkConf,
    /// `<zk-base-path>/<cluster-id>`.
    pub parent: String,
    /// `yarn.resourcemanager.ha.id` of this RM.
    pub rm_id: String,
    /// `yarn.resourcemanager.cluster-id`.
    pub cluster_id: String,
}

impl ElectorConf {
    /// Reads the election settings of the RM `rm_id`.
    pub fn from_conf(conf: &Configuration, rm_id: &str) -> Result<ElectorConf, String> {
        let zk = ZkConf::from_conf(conf)?;
        let cluster_id = conf
            .get_trimmed("yarn.resourcemanager.cluster-id")
            .filter(|v| !v.is_empty())
            .ok_or_else(|| {
                "yarn.resourcemanager.cluster-id is not set: the RMs of an HA cluster elect \
                 their leader under it"
                    .to_string()
            })?;
        if cluster_id.contains('/') {
            return Err(format!(
                "yarn.resourcemanager.cluster-id = {cluster_id:?}: it names a znode, so it \
                 cannot hold '/'"
            ));
        }
        let base_key = "yarn.resourcemanager.ha.automatic-failover.zk-base-path";
        let base = conf
            .get_trimmed(base_key)
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| DEFAULT_BASE_PATH.into());
        if !base.starts_with('/') {
            return Err(format!("{base_key} = {base:?}: not an absolute znode path"));
        }
        let parent = format!("{}/{cluster_id}", base.trim_end_matches('/'));
        Ok(ElectorConf {
            zk_address: zk.address.clone(),
            session_timeout: zk.session_timeout,
            retry_interval: zk.retry_interval,
            zk,
            parent,
            rm_id: rm_id.to_string(),
            cluster_id,
        })
    }

    fn lock_path(&self) -> String {
        format!("{}/{LOCK_NODE}", self.parent)
    }

    fn breadcrumb_path(&self) -> String {
        format!("{}/{BREADCRUMB_NODE}", self.parent)
    }

    /// The lock's (and the breadcrumb's) data: Hadoop's `ActiveRMInfoProto`.
    fn my_info(&self) -> Vec<u8> {
        hadoop_protos::yarn::ActiveRmInfoProto {
            cluster_id: Some(self.cluster_id.clone()),
            rm_id: Some(self.rm_id.clone()),
        }
        .encode_to_vec()
    }

    fn effective_zk(&self) -> ZkConf {
        ZkConf {
            address: self.zk_address.clone(),
            session_timeout: self.session_timeout,
            retry_interval: self.retry_interval,
            ..self.zk.clone()
        }
    }
}

/// Who the data of a lock or breadcrumb znode names (the rm id, or a description).
fn describe_info(data: &[u8]) -> String {
    match hadoop_protos::yarn::ActiveRmInfoProto::decode(data) {
        Ok(info) => info.rm_id.unwrap_or_else(|| "an RM with no id".into()),
        Err(_) => format!("{} bytes that are not an ActiveRMInfoProto", data.len()),
    }
}

/// Why the election could not start.
#[derive(Debug, thiserror::Error)]
pub enum ElectorError {
    #[error("ZooKeeper at {address}: {what}")]
    ZooKeeper { address: String, what: String },
}

enum Command {
    Quit(oneshot::Sender<()>),
    Rejoin(oneshot::Sender<()>),
}

/// A running election. Dropping it leaves the election (the session is closed, so the
/// lock goes at once if this RM held it).
#[derive(Debug)]
pub struct Elector {
    commands: mpsc::Sender<Command>,
    task: JoinHandle<()>,
}

impl Drop for Elector {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Elector {
    /// Connects to ZooKeeper, creates the election parent if needed and joins the election.
    /// Fails when ZooKeeper does not give a session (with the address and the reason); after
    /// that, ZooKeeper trouble only turns into Standby reports and retries.
    pub async fn start(
        conf: ElectorConf,
    ) -> Result<(Elector, watch::Receiver<Election>), ElectorError> {
        let zk = conf.effective_zk();
        let fail = |what: String| ElectorError::ZooKeeper {
            address: zk.address.clone(),
            what,
        };
        let client = zk
            .connect()
            .await
            .map_err(|e| fail(format!("no session: {e}")))?;
        zk.ensure_path(&client, &conf.parent).await.map_err(|e| {
            fail(format!(
                "cannot create the election znode {}: {e}",
                conf.parent
            ))
        })?;
        let (report, outcome) = watch::channel(Election::Standby);
        let (commands, inbox) = mpsc::channel(8);
        let run = Run {
            conf,
            zk,
            report,
            inbox,
            joined: true,
        };
        let task = tokio::spawn(run.main(client));
        Ok((Elector { commands, task }, outcome))
    }

    /// Leaves the election (a manual transition to standby): gives the lock up if this RM
    /// holds it and stops competing until [`rejoin`](Self::rejoin).
    pub async fn quit(&self) {
        let (ack, done) = oneshot::channel();
        if self.commands.send(Command::Quit(ack)).await.is_ok() {
            let _ = done.await;
        }
    }

    /// Joins the election again. An RM that holds the lock gives it up first and competes
    /// again after the retry interval, so another RM may take over (as Hadoop's
    /// `rejoinElection` after a failed transition to active).
    pub async fn rejoin(&self) {
        let (ack, done) = oneshot::channel();
        if self.commands.send(Command::Rejoin(ack)).await.is_ok() {
            let _ = done.await;
        }
    }
}

/// How a session ended.
enum SessionEnd {
    /// Expired, closed or unusable: start a new one.
    Lost,
    /// The owner is gone.
    Shutdown,
}

/// What happened while waiting.
enum Wake {
    Command(Option<Command>),
    State(SessionState),
    Node(EventType),
    Timer,
}

type BoxedWatch = Pin<Box<dyn Future<Output = EventType> + Send>>;

fn watch_future(watcher: OneshotWatcher) -> BoxedWatch {
    Box::pin(async move { watcher.changed().await.event_type })
}

struct Run {
    conf: ElectorConf,
    zk: ZkConf,
    report: watch::Sender<Election>,
    inbox: mpsc::Receiver<Command>,
    /// Whether this RM competes (false after `quit`).
    joined: bool,
}

impl Run {
    fn report(&self, outcome: Election) {
        let changed = self.report.send_if_modified(|current| {
            let changed = *current != outcome;
            *current = outcome;
            changed
        });
        if changed {
            info!(rm_id = %self.conf.rm_id, ?outcome, parent = %self.conf.parent, "leader election");
        }
    }

    async fn main(mut self, first: Client) {
        let mut client = Some(first);
        loop {
            let session = match client.take() {
                Some(c) => c,
                None => match self.zk.connect().await {
                    Ok(c) => c,
                    Err(e) => {
                        warn!(address = %self.zk.address, error = %e, "leader election: no ZooKeeper session; retrying");
                        self.report(Election::Standby);
                        if self.pause(self.zk.retry_interval).await {
                            return;
                        }
                        continue;
                    }
                },
            };
            if let Err(e) = self.zk.ensure_path(&session, &self.conf.parent).await {
                warn!(parent = %self.conf.parent, error = %e, "leader election: cannot create the election znode; retrying");
                self.report(Election::Standby);
                drop(session);
                if self.pause(self.zk.retry_interval).await {
                    return;
                }
                continue;
            }
            match self.session(&session).await {
                SessionEnd::Shutdown => return,
                SessionEnd::Lost => {
                    self.report(Election::Standby);
                    info!(rm_id = %self.conf.rm_id, "leader election: the ZooKeeper session ended; joining again with a new one");
                }
            }
        }
    }

    /// Sleeps `how_long` while answering commands. True when the owner is gone.
    async fn pause(&mut self, how_long: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + how_long;
        loop {
            tokio::select! {
                _ = tokio::time::sleep_until(deadline) => return false,
                command = self.inbox.recv() => match command {
                    None => return true,
                    Some(command) => self.offline_command(command),
                },
            }
        }
    }

    /// A command while there is no session: only the wish is recorded.
    fn offline_command(&mut self, command: Command) {
        match command {
            Command::Quit(ack) => {
                self.joined = false;
                let _ = ack.send(());
            }
            Command::Rejoin(ack) => {
                self.joined = true;
                let _ = ack.send(());
            }
        }
    }

    /// Waits for a command, a session state change, a node event or the timer.
    async fn wait(
        &mut self,
        states: &mut zookeeper_client::StateWatcher,
        node: Option<&mut BoxedWatch>,
        timer: Option<tokio::time::Instant>,
    ) -> Wake {
        let node_event = async {
            match node {
                Some(watch) => watch.await,
                None => std::future::pending().await,
            }
        };
        let timer_fired = async {
            match timer {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            command = self.inbox.recv() => Wake::Command(command),
            state = states.changed() => Wake::State(state),
            event = node_event => Wake::Node(event),
            _ = timer_fired => Wake::Timer,
        }
    }

    /// Waits until the session is connected again (true) or gone (false), answering
    /// commands meanwhile.
    async fn until_connected(
        &mut self,
        client: &Client,
        states: &mut zookeeper_client::StateWatcher,
    ) -> Option<bool> {
        loop {
            match client.state() {
                SessionState::SyncConnected | SessionState::ConnectedReadOnly => return Some(true),
                SessionState::Disconnected => {}
                _ => return Some(false),
            }
            match self.wait(states, None, None).await {
                Wake::Command(None) => return None,
                Wake::Command(Some(command)) => self.offline_command(command),
                _ => {}
            }
        }
    }

    /// One ZooKeeper session: compete, hold, watch, until the session is lost.
    async fn session(&mut self, client: &Client) -> SessionEnd {
        let mut states = client.state_watcher();
        let lock = self.conf.lock_path();
        let info = self.conf.my_info();
        loop {
            match self.until_connected(client, &mut states).await {
                None => return SessionEnd::Shutdown,
                Some(false) => return SessionEnd::Lost,
                Some(true) => {}
            }
            if !self.joined {
                self.report(Election::Standby);
                match self.wait(&mut states, None, None).await {
                    Wake::Command(None) => return SessionEnd::Shutdown,
                    Wake::Command(Some(command)) => self.offline_command(command),
                    _ => {}
                }
                continue;
            }
            let created = client
                .create(
                    &lock,
                    &info,
                    &CreateMode::Ephemeral.with_acls(self.zk.acls()),
                )
                .await;
            let mine = match created {
                Ok(_) => true,
                Err(zookeeper_client::Error::NodeExists) => {
                    match client.get_and_watch_data(&lock).await {
                        Ok((data, stat, watcher)) => {
                            if stat.ephemeral_owner == client.session_id().0 {
                                true
                            } else {
                                self.report(Election::Standby);
                                tracing::debug!(holder = %describe_info(&data), "leader election: standing by");
                                match self.standby(&mut states, watcher).await {
                                    Some(()) => continue,
                                    None => return SessionEnd::Shutdown,
                                }
                            }
                        }
                        Err(zookeeper_client::Error::NoNode) => continue,
                        Err(e) => {
                            warn!(error = %e, "leader election: cannot read the lock");
                            if self.pause(self.zk.retry_interval).await {
                                return SessionEnd::Shutdown;
                            }
                            continue;
                        }
                    }
                }
                Err(e) => {
                    warn!(lock = %lock, error = %e, "leader election: cannot create the lock");
                    self.report(Election::Standby);
                    if matches!(e, zookeeper_client::Error::NoNode) {
                        // The election znode was deleted behind our back: make it again.
                        let _ = self.zk.ensure_path(client, &self.conf.parent).await;
                    }
                    // Whatever it was, do not spin on it.
                    if self.pause(self.zk.retry_interval).await {
                        return SessionEnd::Shutdown;
                    }
                    continue;
                }
            };
            if mine {
                match self.active(client, &mut states).await {
                    Some(true) => continue,
                    Some(false) => return SessionEnd::Lost,
                    None => return SessionEnd::Shutdown,
                }
            }
        }
    }

    /// Standing by with a watch on the lock. Returns when the lock changed or the
    /// connection did (the caller looks again); `None` when the owner is gone.
    async fn standby(
        &mut self,
        states: &mut zookeeper_client::StateWatcher,
        watcher: OneshotWatcher,
    ) -> Option<()> {
        let mut node = watch_future(watcher);
        loop {
            match self.wait(states, Some(&mut node), None).await {
                Wake::Command(None) => return None,
                Wake::Command(Some(command)) => {
                    let quit = matches!(command, Command::Quit(_));
                    self.offline_command(command);
                    if quit {
                        return Some(());
                    }
                }
                Wake::Node(_) => return Some(()),
                Wake::State(SessionState::Disconnected) => {}
                Wake::State(_) => return Some(()),
                Wake::Timer => {}
            }
        }
    }

    /// Holding the lock. Returns `Some(true)` to compete again in this session,
    /// `Some(false)` when the session is lost, `None` when the owner is gone.
    async fn active(
        &mut self,
        client: &Client,
        states: &mut zookeeper_client::StateWatcher,
    ) -> Option<bool> {
        let lock = self.conf.lock_path();
        // Watch the lock, so a lock deleted behind our back is noticed.
        let mut node = match client.check_and_watch_stat(&lock).await {
            Ok((Some(stat), watcher)) if stat.ephemeral_owner == client.session_id().0 => {
                watch_future(watcher)
            }
            Ok(_) => return Some(true),
            Err(e) => {
                warn!(error = %e, "leader election: cannot watch the lock");
                return (!self.pause(self.zk.retry_interval).await).then_some(true);
            }
        };
        if let Err(e) = self.write_breadcrumb(client).await {
            warn!(error = %e, "leader election: cannot write the breadcrumb; giving the lock up");
            let _ = client.delete(&lock, None).await;
            return (!self.pause(self.zk.retry_interval).await).then_some(true);
        }
        self.report(Election::Active);
        let mut neutral_until: Option<tokio::time::Instant> = None;
        loop {
            match self.wait(states, Some(&mut node), neutral_until).await {
                Wake::Command(None) => return None,
                Wake::Command(Some(Command::Quit(ack))) => {
                    self.joined = false;
                    self.give_up(client).await;
                    self.report(Election::Standby);
                    let _ = ack.send(());
                    return Some(true);
                }
                Wake::Command(Some(Command::Rejoin(ack))) => {
                    self.give_up(client).await;
                    self.report(Election::Standby);
                    let _ = ack.send(());
                    if self.pause(self.zk.retry_interval).await {
                        return None;
                    }
                    return Some(true);
                }
                Wake::Node(event) => {
                    // The lock changed or went: look again.
                    info!(?event, "leader election: the lock changed under the active");
                    return Some(true);
                }
                Wake::State(SessionState::Disconnected) => {
                    warn!(
                        rm_id = %self.conf.rm_id,
                        timeout = ?self.conf.session_timeout,
                        "leader election: ZooKeeper disconnected; stepping down if it is not back within the session timeout"
                    );
                    neutral_until
                        .get_or_insert(tokio::time::Instant::now() + self.conf.session_timeout);
                }
                Wake::State(SessionState::SyncConnected | SessionState::ConnectedReadOnly) => {
                    if neutral_until.take().is_some() {
                        info!(rm_id = %self.conf.rm_id, "leader election: ZooKeeper reconnected within the session timeout");
                    }
                    // Make sure the lock is still ours (a step-down may have happened).
                    return Some(true);
                }
                Wake::State(_) => return Some(false),
                Wake::Timer => {
                    warn!(
                        rm_id = %self.conf.rm_id,
                        "leader election: ZooKeeper unreachable for the session timeout; standing down"
                    );
                    neutral_until = None;
                    self.report(Election::Standby);
                }
            }
        }
    }

    /// Records this RM as the last active, after noting who was before.
    async fn write_breadcrumb(&self, client: &Client) -> Result<(), zookeeper_client::Error> {
        let path = self.conf.breadcrumb_path();
        let info = self.conf.my_info();
        match client.get_data(&path).await {
            Ok((data, stat)) => {
                let previous = describe_info(&data);
                if previous != self.conf.rm_id {
                    info!(
                        previous = %previous,
                        "leader election: taking over from the previous active (the state store's fencing node deposes it)"
                    );
                }
                client
                    .set_data(&path, &info, Some(stat.version))
                    .await
                    .map(|_| ())
            }
            Err(zookeeper_client::Error::NoNode) => client
                .create(
                    &path,
                    &info,
                    &CreateMode::Persistent.with_acls(self.zk.acls()),
                )
                .await
                .map(|_| ()),
            Err(e) => Err(e),
        }
    }

    /// Gives the lock up on purpose (and the breadcrumb, so the next active knows the
    /// previous one left cleanly).
    async fn give_up(&self, client: &Client) {
        let lock = self.conf.lock_path();
        if let Ok((_, stat)) = client.get_data(&lock).await {
            if stat.ephemeral_owner == client.session_id().0 {
                let _ = client.delete(&lock, Some(stat.version)).await;
            }
        }
        let crumb = self.conf.breadcrumb_path();
        if let Ok((data, stat)) = client.get_data(&crumb).await {
            if describe_info(&data) == self.conf.rm_id {
                let _ = client.delete(&crumb, Some(stat.version)).await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_election_settings() {
        let mut conf = Configuration::with_defaults();
        conf.set("hadoop.zk.address", "zk:2181");
        assert!(ElectorConf::from_conf(&conf, "rm1")
            .expect_err("refused")
            .contains("yarn.resourcemanager.cluster-id"));
        conf.set("yarn.resourcemanager.cluster-id", "c1");
        let ec = ElectorConf::from_conf(&conf, "rm1").expect("conf");
        assert_eq!(ec.parent, "/yarn-leader-election/c1");
        assert_eq!(
            ec.lock_path(),
            "/yarn-leader-election/c1/ActiveStandbyElectorLock"
        );
        assert_eq!(ec.session_timeout, Duration::from_secs(10));
        assert_eq!(describe_info(&ec.my_info()), "rm1");
        conf.set(
            "yarn.resourcemanager.ha.automatic-failover.zk-base-path",
            "/x/",
        );
        assert_eq!(
            ElectorConf::from_conf(&conf, "rm2").expect("conf").parent,
            "/x/c1"
        );
    }
}
