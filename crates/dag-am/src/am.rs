//! The DAG ApplicationMaster process (`spindle dag am`, started by YARN):
//! the I/O around [`Session`].
//!
//! - It registers with the ResourceManager giving the host and port of its
//!   session server, which is how clients find it (the application
//!   report's host and RPC port).
//! - The session server accepts clients and workers (see
//!   [`crate::protocol`]); every request and worker message becomes a call
//!   on the [`Session`], which answers with [`Effect`]s.
//! - It heartbeats the scheduler: container requests and releases go out,
//!   granted containers are matched to their group by request priority and
//!   started as `spindle worker` with the [`NmClient`], completed ones are
//!   reported to the session.
//! - A timer ticks the cores (status line, fair rebalancing, autoscaling).
//!
//! `spindle dag session stop` ends it: workers are stopped, containers
//! released, and the AM unregisters with SUCCEEDED.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use spindle_am::launch::LOG_DIR;
use spindle_am::{
    quote_for_launch, AmError, AmRmClient, Container, ContainerRequest, FinalStatus, LaunchContext,
    NmClient,
};
use spindle_common::conf::{keys as conf_keys, Configuration};
use spindle_common::ContainerId;
use spindle_dag::{DagId, WorkerId};
use tokio::io::BufReader;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot};
use tracing::{debug, error, info, warn};

use crate::protocol::{
    read_json, secret_matches, write_json, AmToWorker, ClientRequest, ClientResponse, Hello,
    WorkerToAm, SECRET_ENV,
};
use crate::session::{
    attempt_end, refusal, submission, Effect, Reply, Session, SessionConfig, SessionInput,
};
use crate::WORKER_SUBCOMMAND;

/// Variables of the AM's environment handed on to workers.
const PASSED_ENV: [&str; 3] = ["SPINDLE_LOG", "RUST_LOG", "RUST_BACKTRACE"];

/// Arguments of the hidden `spindle dag am`. The session client fills them in.
#[derive(Debug, Clone, clap::Args)]
pub struct AmArgs {
    /// The scheduler's address (overrides yarn.resourcemanager.scheduler.address).
    #[arg(long)]
    pub scheduler_address: Option<String>,
    /// A DAG AM setting (MR3 key names); repeatable.
    #[arg(long = "dag-conf", value_name = "KEY=VALUE")]
    pub dag_conf: Vec<String>,
    /// Time between scheduler heartbeats, in ms.
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u64).range(10..))]
    pub heartbeat_ms: u64,
    /// Time between ticks of the cores, in ms.
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u64).range(10..))]
    pub tick_ms: u64,
}

/// Parses `KEY=VALUE` settings into a map (later ones win).
pub fn parse_settings(settings: &[String]) -> Result<BTreeMap<String, String>, String> {
    let mut map = BTreeMap::new();
    for s in settings {
        let Some((k, v)) = s.split_once('=') else {
            return Err(format!("'{s}' is not KEY=VALUE"));
        };
        let k = k.trim();
        if k.is_empty() {
            return Err(format!("'{s}' has an empty key"));
        }
        map.insert(k.to_string(), v.trim().to_string());
    }
    Ok(map)
}

enum Event {
    Client {
        client: String,
        request: ClientRequest,
        reply: oneshot::Sender<ClientResponse>,
    },
    WorkerHello {
        worker: WorkerId,
        http_addr: String,
        outbox: mpsc::UnboundedSender<AmToWorker>,
        accepted: oneshot::Sender<Result<(), String>>,
    },
    WorkerMessage {
        worker: WorkerId,
        message: WorkerToAm,
    },
    WorkerClosed {
        worker: WorkerId,
        why: String,
    },
    Launched {
        container: WorkerId,
        result: Result<(), String>,
    },
}

fn own_host() -> String {
    std::env::var("NM_HOST")
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "127.0.0.1".to_string())
}

/// Runs the DAG AM in this container until the session is stopped or the
/// application killed. Returns the process exit code.
pub async fn am_main(args: &AmArgs, conf: &Configuration) -> Result<u8, String> {
    let secret = std::env::var(SECRET_ENV)
        .ok()
        .filter(|s| !s.is_empty())
        .ok_or_else(|| format!("{SECRET_ENV} is not set: the session client sets it"))?;
    let settings = parse_settings(&args.dag_conf)?;
    let config = SessionConfig::from_map(&settings)?;
    let mut conf = conf.clone();
    if let Some(addr) = &args.scheduler_address {
        conf.set(conf_keys::RM_SCHEDULER_ADDRESS, addr.clone());
    }
    let exe =
        std::env::current_exe().map_err(|e| format!("cannot find the spindle executable: {e}"))?;
    let exe = exe
        .to_str()
        .ok_or_else(|| format!("the executable path {} is not UTF-8", exe.display()))?
        .to_string();

    let mut rm = AmRmClient::from_env(&conf).map_err(|e| e.to_string())?;
    let attempt = rm.attempt();
    let application = attempt.app.to_string();
    let listener = TcpListener::bind("0.0.0.0:0")
        .await
        .map_err(|e| format!("cannot open the session port: {e}"))?;
    let port = listener
        .local_addr()
        .map_err(|e| format!("cannot read the session port: {e}"))?
        .port();
    let host = own_host();
    let registration = rm
        .register(&host, i32::from(port), "")
        .await
        .map_err(|e| e.to_string())?;
    info!(%attempt, %host, port, "DAG session registered");
    let max = registration.max_capability;
    let worker = config.worker_resource;
    if i64::try_from(worker.memory_mb).unwrap_or(i64::MAX) > max.memory_mb
        || i32::try_from(worker.vcores).unwrap_or(i32::MAX) > max.vcores
    {
        let msg = format!(
            "workers of {worker} exceed the cluster's maximum allocation {max}; lower spindle.dag.worker.memory.mb / spindle.dag.worker.vcores"
        );
        let _ = rm.finish(FinalStatus::Failed, &msg, "").await;
        return Err(msg);
    }
    let mut session = Session::new(config)?;

    let (tx, mut rx) = mpsc::unbounded_channel::<Event>();
    let secret = Arc::new(secret);
    tokio::spawn(accept_loop(listener, tx.clone(), secret.clone()));

    let nm = NmClient::new(attempt, rm.nm_token_cache());
    let am_addr = format!("{host}:{port}");
    let mut outboxes: BTreeMap<WorkerId, mpsc::UnboundedSender<AmToWorker>> = BTreeMap::new();
    let mut containers: BTreeMap<WorkerId, Container> = BTreeMap::new();
    let start = Instant::now();
    let now_ms = || u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX);
    let mut heartbeat = tokio::time::interval(Duration::from_millis(args.heartbeat_ms));
    let mut tick = tokio::time::interval(Duration::from_millis(args.tick_ms));
    heartbeat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let stop_signal = shutdown_signal();
    tokio::pin!(stop_signal);

    let mut stop_reason: Option<String> = None;
    let mut failure: Option<String> = None;
    while stop_reason.is_none() {
        tokio::select! {
            ev = rx.recv() => {
                let Some(ev) = ev else { break };
                match ev {
                    Event::Client { client, request, reply } => {
                        let response = match request {
                            ClientRequest::Submit { dag, queue } => {
                                let too_big = dag.group.as_ref().is_some_and(|g| {
                                    i64::try_from(g.worker_memory_mb).unwrap_or(i64::MAX) > max.memory_mb
                                        || i32::try_from(g.worker_vcores).unwrap_or(i32::MAX) > max.vcores
                                });
                                if too_big {
                                    ClientResponse::Error { message: format!(
                                        "the workers of ContainerGroup '{}' exceed the cluster's maximum allocation {max}",
                                        dag.group.as_ref().map(|g| g.name.as_str()).unwrap_or_default()
                                    ) }
                                } else {
                                    match session.handle(now_ms(), submission(&client, &dag, queue)) {
                                        Some(Reply::Submitted(id)) => ClientResponse::Submitted { dag: id.0 },
                                        other => ClientResponse::Error { message: refusal(other) },
                                    }
                                }
                            }
                            ClientRequest::Status { dag } => match session.status(&application, dag.map(DagId)) {
                                Ok(report) => ClientResponse::Status(Box::new(report)),
                                Err(message) => ClientResponse::Error { message },
                            },
                            ClientRequest::Kill { dag } => {
                                let kill = SessionInput::KillDag { dag: DagId(dag), client: client.clone() };
                                match session.handle(now_ms(), kill) {
                                    Some(Reply::Killed(_)) => ClientResponse::Killed { dag },
                                    other => ClientResponse::Error { message: refusal(other) },
                                }
                            }
                            ClientRequest::Stop => {
                                stop_reason = Some(format!("session stopped by {client}"));
                                ClientResponse::Stopping
                            }
                        };
                        let _ = reply.send(response);
                    }
                    Event::WorkerHello { worker, http_addr, outbox, accepted } => {
                        if outboxes.contains_key(&worker) {
                            let _ = accepted.send(Err(format!("worker {worker} is already connected")));
                        } else {
                            outboxes.insert(worker.clone(), outbox);
                            let hello = SessionInput::WorkerRegistered { worker: worker.clone(), address: http_addr };
                            let result = match session.handle(now_ms(), hello) {
                                Some(Reply::Registered) => Ok(()),
                                other => Err(refusal(other)),
                            };
                            if result.is_err() {
                                outboxes.remove(&worker);
                            }
                            let _ = accepted.send(result);
                        }
                    }
                    Event::WorkerMessage { worker, message } => match message {
                        WorkerToAm::Finished { attempt, outcome } => {
                            session.handle(now_ms(), attempt_end(&worker, attempt, outcome));
                        }
                    },
                    Event::WorkerClosed { worker, why } => {
                        if outboxes.remove(&worker).is_some() {
                            session.handle(now_ms(), SessionInput::WorkerGone { worker, why });
                        }
                    }
                    Event::Launched { container, result } => match result {
                        Ok(()) => debug!(%container, "worker container started"),
                        Err(error) => {
                            session.handle(now_ms(), SessionInput::LaunchFailed { container, error });
                        }
                    },
                }
            }
            _ = heartbeat.tick() => {
                match rm.allocate(0.0).await {
                    Ok(alloc) => {
                        for c in alloc.allocated {
                            match rm.container_granted(&c) {
                                Some(req) => {
                                    let id = WorkerId::new(c.id.to_string());
                                    let host = c.node.host.to_string();
                                    containers.insert(id.clone(), c);
                                    let granted = SessionInput::ContainerGranted { container: id, host, priority: req.priority };
                                    session.handle(now_ms(), granted);
                                }
                                None => {
                                    debug!(container = %c.id, "releasing a container nothing asked for");
                                    rm.release(c.id);
                                }
                            }
                        }
                        for status in alloc.completed {
                            let id = WorkerId::new(status.id.to_string());
                            containers.remove(&id);
                            outboxes.remove(&id);
                            let why = format!("container completed with exit status {}: {}", status.exit_status, status.diagnostics.trim());
                            session.handle(now_ms(), SessionInput::WorkerGone { worker: id, why });
                        }
                    }
                    Err(AmError::Shutdown { .. }) => {
                        warn!("the ResourceManager asked this AM to shut down");
                        return Ok(1);
                    }
                    Err(e) if e.is_transport() => warn!(error = %e, "scheduler heartbeat failed; retrying"),
                    Err(e) => {
                        failure = Some(format!("scheduler heartbeat failed: {e}"));
                        stop_reason = Some("the scheduler protocol failed".into());
                    }
                }
            }
            _ = tick.tick() => {
                session.handle(now_ms(), SessionInput::Tick);
            }
            _ = &mut stop_signal => {
                info!("signalled to stop");
                stop_reason = Some("the AM was signalled to stop".into());
            }
        }
        apply_effects(
            &mut session,
            &mut rm,
            &nm,
            &mut outboxes,
            &containers,
            &tx,
            &exe,
            &am_addr,
            &secret,
            now_ms(),
        );
    }

    let reason = stop_reason.unwrap_or_else(|| "the session server stopped".into());
    info!(%reason, "DAG session stopping");
    session.handle(
        now_ms(),
        SessionInput::Stop {
            reason: reason.clone(),
        },
    );
    apply_effects(
        &mut session,
        &mut rm,
        &nm,
        &mut outboxes,
        &containers,
        &tx,
        &exe,
        &am_addr,
        &secret,
        now_ms(),
    );
    // Send the releases, and give workers a moment to read their stop.
    if let Err(e) = rm.allocate(1.0).await {
        warn!(error = %e, "the last heartbeat failed");
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let c = session.counters();
    let diagnostics = format!(
        "{reason}; workers started {}, stopped {}, lost {}; attempts {} ({} failed)",
        c.workers_started, c.workers_stopped, c.workers_lost, c.attempts_started, c.attempts_failed
    );
    let (status, code) = match &failure {
        Some(f) => {
            error!("{f}");
            (FinalStatus::Failed, 1)
        }
        None => (FinalStatus::Succeeded, 0),
    };
    rm.finish(status, &diagnostics, "")
        .await
        .map_err(|e| e.to_string())?;
    Ok(code)
}

#[allow(clippy::too_many_arguments)]
fn apply_effects(
    session: &mut Session,
    rm: &mut AmRmClient,
    nm: &NmClient,
    outboxes: &mut BTreeMap<WorkerId, mpsc::UnboundedSender<AmToWorker>>,
    containers: &BTreeMap<WorkerId, Container>,
    tx: &mpsc::UnboundedSender<Event>,
    exe: &str,
    am_addr: &str,
    secret: &str,
    now_ms: u64,
) {
    loop {
        let effects = session.take_effects();
        if effects.is_empty() {
            return;
        }
        for effect in effects {
            match effect {
                Effect::Send { worker, message } => {
                    if let Some(outbox) = outboxes.get(&worker) {
                        if outbox.send(message).is_err() {
                            debug!(%worker, "the worker's connection is gone");
                        }
                    }
                }
                Effect::RequestContainer { priority, resource } => {
                    let req = ContainerRequest::new(priority, to_yarn(resource));
                    if let Err(e) = rm.add_request(&req) {
                        error!(error = %e, "a worker request was refused");
                    }
                }
                Effect::CancelContainerRequest { priority, resource } => {
                    let req = ContainerRequest::new(priority, to_yarn(resource));
                    if let Err(e) = rm.remove_request(&req) {
                        debug!(error = %e, "no such outstanding request to withdraw");
                    }
                }
                Effect::LaunchWorker {
                    container,
                    group,
                    resource: _,
                } => {
                    let Some(c) = containers.get(&container).cloned() else {
                        let error = "the container is unknown".to_string();
                        session.handle(now_ms, SessionInput::LaunchFailed { container, error });
                        continue;
                    };
                    let launch = worker_launch(exe, am_addr, secret);
                    let nm = nm.clone();
                    let tx = tx.clone();
                    info!(%container, node = %c.node, %group, "launching a worker");
                    tokio::spawn(async move {
                        let result = nm
                            .start_container(&c, &launch)
                            .await
                            .map(|_| ())
                            .map_err(|e| e.to_string());
                        let _ = tx.send(Event::Launched { container, result });
                    });
                }
                Effect::ReleaseContainer { container } => {
                    match container.as_str().parse::<ContainerId>() {
                        Ok(id) => rm.release(id),
                        Err(e) => error!(%container, error = %e, "not a container id"),
                    }
                }
            }
        }
    }
}

fn to_yarn(r: spindle_dag::Resource) -> spindle_common::Resource {
    spindle_common::Resource::new(
        i64::try_from(r.memory_mb).unwrap_or(i64::MAX),
        i32::try_from(r.vcores).unwrap_or(i32::MAX),
    )
}

/// What a worker container runs.
fn worker_launch(exe: &str, am_addr: &str, secret: &str) -> LaunchContext {
    let words = [
        exe.to_string(),
        WORKER_SUBCOMMAND.to_string(),
        "--am".to_string(),
        am_addr.to_string(),
        "--log-dir".to_string(),
        LOG_DIR.to_string(),
    ];
    let quoted: Vec<String> = words.iter().map(|w| quote_for_launch(w)).collect();
    LaunchContext::command(format!(
        "{} 1>{LOG_DIR}/worker.stdout 2>{LOG_DIR}/worker.stderr",
        quoted.join(" ")
    ))
    .env(SECRET_ENV, secret)
    .pass_env(&PASSED_ENV)
}

async fn accept_loop(listener: TcpListener, tx: mpsc::UnboundedSender<Event>, secret: Arc<String>) {
    loop {
        match listener.accept().await {
            Ok((stream, peer)) => {
                let tx = tx.clone();
                let secret = secret.clone();
                tokio::spawn(async move {
                    if let Err(e) = serve_connection(stream, tx, &secret).await {
                        debug!(%peer, error = %e, "session connection ended");
                    }
                });
            }
            Err(e) => {
                warn!(error = %e, "accepting a session connection failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// How long a new connection may take to say hello.
const HELLO_TIMEOUT: Duration = Duration::from_secs(30);

async fn serve_connection(
    stream: TcpStream,
    tx: mpsc::UnboundedSender<Event>,
    secret: &str,
) -> std::io::Result<()> {
    let _ = stream.set_nodelay(true);
    let (read, mut write) = stream.into_split();
    let mut reader = BufReader::new(read);
    let hello: Option<Hello> = tokio::time::timeout(HELLO_TIMEOUT, read_json(&mut reader))
        .await
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "no hello"))??;
    let Some(hello) = hello else {
        return Ok(());
    };
    let presented = match &hello {
        Hello::Client { secret, .. } | Hello::Worker { secret, .. } => secret.as_str(),
    };
    if !secret_matches(secret, presented) {
        warn!("refused a session connection with a wrong secret");
        let response = ClientResponse::Error {
            message: "wrong session secret".into(),
        };
        return write_json(&mut write, &response).await;
    }
    match hello {
        Hello::Client { client, .. } => loop {
            let request: Option<ClientRequest> = match read_json(&mut reader).await {
                Ok(r) => r,
                Err(e) => {
                    let response = ClientResponse::Error {
                        message: e.to_string(),
                    };
                    return write_json(&mut write, &response).await;
                }
            };
            let Some(request) = request else {
                return Ok(());
            };
            let (reply, answer) = oneshot::channel();
            if tx
                .send(Event::Client {
                    client: client.clone(),
                    request,
                    reply,
                })
                .is_err()
            {
                return Ok(());
            }
            let response = answer.await.unwrap_or(ClientResponse::Error {
                message: "the session is stopping".into(),
            });
            write_json(&mut write, &response).await?;
        },
        Hello::Worker {
            worker, http_addr, ..
        } => {
            let worker = WorkerId::new(worker);
            let (outbox, mut inbox) = mpsc::unbounded_channel::<AmToWorker>();
            let (accepted, verdict) = oneshot::channel();
            if tx
                .send(Event::WorkerHello {
                    worker: worker.clone(),
                    http_addr,
                    outbox,
                    accepted,
                })
                .is_err()
            {
                return Ok(());
            }
            match verdict.await {
                Ok(Ok(())) => {}
                Ok(Err(message)) => {
                    warn!(%worker, %message, "refused a worker");
                    let stop = AmToWorker::Stop { reason: message };
                    return write_json(&mut write, &stop).await;
                }
                Err(_) => return Ok(()),
            }
            let why = loop {
                tokio::select! {
                    msg = inbox.recv() => match msg {
                        Some(m) => {
                            if let Err(e) = write_json(&mut write, &m).await {
                                break format!("writing to the worker failed: {e}");
                            }
                        }
                        None => break "the session dropped the worker".to_string(),
                    },
                    line = read_json::<_, WorkerToAm>(&mut reader) => match line {
                        Ok(Some(message)) => {
                            if tx.send(Event::WorkerMessage { worker: worker.clone(), message }).is_err() {
                                break "the session is stopping".to_string();
                            }
                        }
                        Ok(None) => break "the worker closed its connection".to_string(),
                        Err(e) => break format!("reading from the worker failed: {e}"),
                    },
                }
            };
            let _ = tx.send(Event::WorkerClosed { worker, why });
            Ok(())
        }
    }
}

/// Waits for SIGTERM (YARN stopping the container) or Ctrl-C.
async fn shutdown_signal() {
    #[cfg(unix)]
    {
        if let Ok(mut term) =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}
