//! The server: connections, Hadoop's request handling order, replies, streaming.

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::os::unix::fs::FileExt;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use spindle_common::text::escaped;
use spindle_common::ApplicationId;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::{JoinHandle, JoinSet};

use crate::hash;
use crate::outputs::{self, IndexCache, JobOutputs, MapOutput};
use crate::recovery;
use crate::request::{self, HeadParse, Refusal, RequestHead, MAX_BODY};
use crate::wire::{job_id_of_app, JobToken};
use crate::{ShuffleConfig, ShuffleError};

/// `ShuffleHandler.FETCH_RETRY_DELAY`, sent as `Retry-After` with 429.
const FETCH_RETRY_DELAY_MS: u64 = 1000;
/// How long a refused connection's unread request is drained before closing, so the
/// client reads the refusal rather than a reset.
const DRAIN_TIME: Duration = Duration::from_secs(1);

/// A snapshot of the server's counters (Hadoop's `ShuffleMetrics` and more).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ShuffleStats {
    /// Map outputs sent whole (`shuffleOutputsOK`).
    pub outputs_ok: u64,
    /// Map outputs whose sending failed (`shuffleOutputsFailed`).
    pub outputs_failed: u64,
    /// Map output bytes sent (`shuffleOutputBytes`), headers excluded.
    pub output_bytes: u64,
    /// Connections open now.
    pub connections: u64,
    /// Requests refused with an error status (400, 401, 405, 429, 500).
    pub refused: u64,
}

#[derive(Default)]
struct Counters {
    outputs_ok: AtomicU64,
    outputs_failed: AtomicU64,
    output_bytes: AtomicU64,
    connections: AtomicU64,
    refused: AtomicU64,
}

struct Job {
    outputs: JobOutputs,
    /// The job token's password: the HmacSHA1 key.
    secret: Vec<u8>,
}

struct Shared {
    config: ShuffleConfig,
    /// One permit per transfer buffer that may exist at once.
    buffers: Arc<Semaphore>,
    index_cache: Arc<IndexCache>,
    /// The bound port: part of the message the request hash covers.
    port: u16,
    jobs: RwLock<HashMap<String, Arc<Job>>>,
    counters: Counters,
}

impl Shared {
    fn job(&self, job_id: &str) -> Option<Arc<Job>> {
        let jobs = self.jobs.read().unwrap_or_else(|p| p.into_inner());
        jobs.get(job_id).cloned()
    }
}

/// The native `mapreduce_shuffle`. It runs on the caller's tokio runtime; dropping it closes
/// the listener and every connection.
pub struct ShuffleServer {
    shared: Arc<Shared>,
    accept: JoinHandle<()>,
}

impl Drop for ShuffleServer {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

impl std::fmt::Debug for ShuffleServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShuffleServer")
            .field("port", &self.shared.port)
            .finish_non_exhaustive()
    }
}

impl ShuffleServer {
    /// Binds `config.bind_host:config.port` and starts serving.
    pub async fn start(config: ShuffleConfig) -> Result<ShuffleServer, ShuffleError> {
        let listener = bind(&config).await?;
        let port = listener
            .local_addr()
            .map_err(|source| ShuffleError::Bind {
                addr: format!("{}:{}", config.bind_host, config.port),
                source,
            })?
            .port();
        tracing::info!(
            "mapreduce_shuffle listening on {}:{port} ({} local dirs)",
            config.bind_host,
            config.local_dirs.len()
        );
        let limit =
            (config.max_connections > 0).then(|| Arc::new(Semaphore::new(config.max_connections)));
        let buffers = (config.max_buffer_bytes / config.transfer_buffer_size.max(1)).max(1);
        let shared = Arc::new(Shared {
            buffers: Arc::new(Semaphore::new(buffers)),
            index_cache: Arc::new(IndexCache::new(config.index_cache_bytes)),
            config,
            port,
            jobs: RwLock::new(HashMap::new()),
            counters: Counters::default(),
        });
        let accept = tokio::spawn(accept_loop(listener, shared.clone(), limit));
        let server = ShuffleServer { shared, accept };
        server.recover()?;
        Ok(server)
    }

    /// Hadoop's `recoverState`: the tokens of the applications a previous run was serving.
    fn recover(&self) -> Result<(), ShuffleError> {
        let Some(dir) = &self.shared.config.recovery_dir else {
            return Ok(());
        };
        let (records, bad) = recovery::load(dir).map_err(|e| {
            ShuffleError::Config(format!(
                "cannot read the shuffle's recovery dir {}: {e}",
                dir.display()
            ))
        })?;
        for name in bad {
            tracing::warn!(
                "mapreduce_shuffle: skipping unreadable recovery record {} in {}",
                escaped(&name),
                dir.display()
            );
        }
        for r in records {
            match self.register(&r.app_id, &r.user, &r.service_data) {
                Ok(job_id) => tracing::info!("mapreduce_shuffle: recovered the token of {job_id}"),
                Err(e) => tracing::warn!("mapreduce_shuffle: not recovered: {e}"),
            }
        }
        Ok(())
    }

    /// The port the server listens on.
    pub fn port(&self) -> u16 {
        self.shared.port
    }

    /// `ShuffleHandler.serializeMetaData(port)`: the port as a 4-byte big-endian int.
    pub fn meta_data(&self) -> Vec<u8> {
        i32::from(self.shared.port).to_be_bytes().to_vec()
    }

    /// `ShuffleHandler.initializeApplication`: remembers the job token of the application's
    /// job (`job_<clusterTimestamp>_<id>`) and its user, whose local dirs hold the outputs.
    /// With a recovery dir the token is also stored there (a failure to store it is logged;
    /// the application is served regardless).
    pub fn add_application(
        &self,
        app_id: &str,
        user: &str,
        service_data: &[u8],
    ) -> Result<(), ShuffleError> {
        let job_id = self.register(app_id, user, service_data)?;
        tracing::info!("mapreduce_shuffle: added token for {job_id}");
        if let Some(dir) = &self.shared.config.recovery_dir {
            // The id as Hadoop prints it: only letters, digits and '_' reach the file name.
            let app_id = ApplicationId::from_str(app_id)
                .map(|a| a.to_string())
                .unwrap_or_else(|_| app_id.to_string());
            let record = recovery::Record {
                app_id,
                user: user.to_string(),
                service_data: service_data.to_vec(),
            };
            if let Err(e) = recovery::store(dir, &record) {
                tracing::warn!(
                    "mapreduce_shuffle: cannot store the token of {job_id} in {}: {e}; it will not survive a restart",
                    dir.display()
                );
            }
        }
        Ok(())
    }

    /// Checks and remembers one application's token; returns its job id.
    fn register(
        &self,
        app_id: &str,
        user: &str,
        service_data: &[u8],
    ) -> Result<String, ShuffleError> {
        let app = ApplicationId::from_str(app_id)
            .map_err(|_| ShuffleError::BadApplication(app_id.to_string()))?;
        if user.is_empty() || user == "." || user == ".." || user.contains(['/', '\0']) {
            return Err(ShuffleError::BadUser(user.to_string()));
        }
        let token = JobToken::decode(service_data).map_err(|e| ShuffleError::BadServiceData {
            app: app_id.to_string(),
            problem: e.to_string(),
        })?;
        let job_id = job_id_of_app(&app);
        let job = Job {
            outputs: JobOutputs {
                job_id: job_id.clone(),
                app_id: app.to_string(),
                user: user.to_string(),
            },
            secret: token.token.password,
        };
        let mut jobs = self.shared.jobs.write().unwrap_or_else(|p| p.into_inner());
        jobs.insert(job_id.clone(), Arc::new(job));
        Ok(job_id)
    }

    /// `ShuffleHandler.stopApplication`: forgets the application's job token.
    pub fn remove_application(&self, app_id: &str) {
        let Ok(app) = ApplicationId::from_str(app_id) else {
            tracing::warn!(
                "mapreduce_shuffle: cannot stop '{}': not an application id",
                escaped(app_id)
            );
            return;
        };
        let job_id = job_id_of_app(&app);
        let mut jobs = self.shared.jobs.write().unwrap_or_else(|p| p.into_inner());
        if jobs.remove(&job_id).is_some() {
            tracing::info!("mapreduce_shuffle: removed token for {job_id}");
        }
        drop(jobs);
        if let Some(dir) = &self.shared.config.recovery_dir {
            if let Err(e) = recovery::remove(dir, &app.to_string()) {
                tracing::warn!(
                    "mapreduce_shuffle: cannot remove the stored token of {job_id} from {}: {e}",
                    dir.display()
                );
            }
        }
    }

    /// The server's counters.
    pub fn stats(&self) -> ShuffleStats {
        let c = &self.shared.counters;
        ShuffleStats {
            outputs_ok: c.outputs_ok.load(Ordering::Relaxed),
            outputs_failed: c.outputs_failed.load(Ordering::Relaxed),
            output_bytes: c.output_bytes.load(Ordering::Relaxed),
            connections: c.connections.load(Ordering::Relaxed),
            refused: c.refused.load(Ordering::Relaxed),
        }
    }
}

async fn bind(config: &ShuffleConfig) -> Result<TcpListener, ShuffleError> {
    let label = format!("{}:{}", config.bind_host, config.port);
    let fail = |source: io::Error| ShuffleError::Bind {
        addr: label.clone(),
        source,
    };
    let addr: SocketAddr = match config.bind_host.parse::<IpAddr>() {
        Ok(ip) => SocketAddr::new(ip, config.port),
        Err(_) => tokio::net::lookup_host((config.bind_host.as_str(), config.port))
            .await
            .map_err(fail)?
            .next()
            .ok_or_else(|| fail(io::Error::new(io::ErrorKind::NotFound, "no address")))?,
    };
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()
    } else {
        TcpSocket::new_v6()
    }
    .map_err(fail)?;
    socket.set_reuseaddr(true).map_err(fail)?;
    socket.bind(addr).map_err(fail)?;
    socket.listen(config.listen_queue_size).map_err(fail)
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>, limit: Option<Arc<Semaphore>>) {
    // Dropping the set (when the server is dropped and this task aborted) aborts every
    // connection task.
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _peer)) => {
                    let permit = match &limit {
                        None => None,
                        Some(sem) => match sem.clone().try_acquire_owned() {
                            Ok(p) => Some(p),
                            Err(_) => {
                                shared.counters.refused.fetch_add(1, Ordering::Relaxed);
                                tracing::info!(
                                    "mapreduce_shuffle: {} connections open, the maximum; refusing one",
                                    shared.config.max_connections
                                );
                                conns.spawn(refuse_busy(stream));
                                continue;
                            }
                        },
                    };
                    conns.spawn(serve(stream, shared.clone(), permit));
                }
                Err(e) => {
                    // Out of file descriptors and the like: pause instead of spinning.
                    tracing::warn!("mapreduce_shuffle: accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
}

/// `channelOpen` beyond `mapreduce.shuffle.max.connections`: 429 with `Retry-After`.
async fn refuse_busy(mut stream: TcpStream) {
    let refusal = Refusal::new(429, "");
    let _ = write_error(&mut stream, &refusal, true).await;
    drain_and_close(&mut stream).await;
}

struct Connection {
    stream: TcpStream,
    /// Bytes read but not yet used (a pipelined next request).
    input: Vec<u8>,
    shared: Arc<Shared>,
}

enum Next {
    KeepOpen,
    Close,
}

enum HeadRead {
    Head(RequestHead),
    Bad(String),
    Closed,
}

async fn serve(stream: TcpStream, shared: Arc<Shared>, _permit: Option<OwnedSemaphorePermit>) {
    let _ = stream.set_nodelay(true);
    shared.counters.connections.fetch_add(1, Ordering::Relaxed);
    let mut conn = Connection {
        stream,
        input: Vec::new(),
        shared: shared.clone(),
    };
    let mut deadline = shared.config.request_timeout;
    loop {
        let head = match tokio::time::timeout(deadline, conn.read_head()).await {
            Err(_) | Ok(HeadRead::Closed) => break,
            Ok(HeadRead::Bad(problem)) => {
                tracing::debug!("mapreduce_shuffle: bad request: {problem}");
                conn.refuse(Refusal::new(400, "")).await;
                break;
            }
            Ok(HeadRead::Head(head)) => head,
        };
        match conn.handle(head).await {
            Next::KeepOpen => deadline = shared.config.keep_alive_timeout,
            Next::Close => break,
        }
    }
    shared.counters.connections.fetch_sub(1, Ordering::Relaxed);
}

impl Connection {
    async fn read_head(&mut self) -> HeadRead {
        loop {
            match request::parse_head(&self.input) {
                HeadParse::Complete(head, used) => {
                    self.input.drain(..used);
                    return HeadRead::Head(head);
                }
                HeadParse::Bad(problem) => return HeadRead::Bad(problem),
                HeadParse::Partial => {}
            }
            self.input.reserve(4096);
            match self.stream.read_buf(&mut self.input).await {
                Ok(0) | Err(_) => return HeadRead::Closed,
                Ok(_) => {}
            }
        }
    }

    /// Reads and drops a request body of `len` bytes.
    async fn skip_body(&mut self, len: u64) -> io::Result<()> {
        let from_buffer = usize::try_from(len)
            .unwrap_or(usize::MAX)
            .min(self.input.len());
        self.input.drain(..from_buffer);
        let mut left = len - from_buffer as u64;
        let mut scratch = [0u8; 4096];
        while left > 0 {
            let want = usize::try_from(left)
                .unwrap_or(scratch.len())
                .min(scratch.len());
            let n = self.stream.read(&mut scratch[..want]).await?;
            if n == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            left -= n as u64;
        }
        Ok(())
    }

    async fn refuse(&mut self, refusal: Refusal) {
        self.shared.counters.refused.fetch_add(1, Ordering::Relaxed);
        let _ = write_error(&mut self.stream, &refusal, false).await;
        drain_and_close(&mut self.stream).await;
    }

    /// One request, checked in `messageReceived`'s order, then answered.
    async fn handle(&mut self, head: RequestHead) -> Next {
        let query = match request::check_request(&head) {
            Ok(q) => q,
            Err(refusal) => {
                self.refuse(refusal).await;
                return Next::Close;
            }
        };
        match head.body_length() {
            Ok(0) => {}
            Ok(len) if len <= MAX_BODY => {
                if self.skip_body(len).await.is_err() {
                    return Next::Close;
                }
            }
            Ok(_) => {
                self.refuse(Refusal::new(400, "")).await;
                return Next::Close;
            }
            Err(refusal) => {
                self.refuse(refusal).await;
                return Next::Close;
            }
        }
        let job = match self.verify(&head, &query.job) {
            Ok(job) => job,
            Err(refusal) => {
                tracing::info!(
                    "mapreduce_shuffle: refused a fetch for {}: {}",
                    escaped(&query.job),
                    refusal.message
                );
                self.refuse(refusal).await;
                return Next::Close;
            }
        };
        let reply_hash = job.reply_hash.clone();
        let local_dirs = self.shared.config.local_dirs.clone();
        let maps = query.maps.clone();
        let reduce = query.reduce;
        let job_outputs = job.job.outputs.clone();
        let cache = self.shared.index_cache.clone();
        let located = tokio::task::spawn_blocking(move || {
            outputs::locate_all(&local_dirs, &cache, &job_outputs, &maps, reduce)
        })
        .await
        .unwrap_or_else(|e| Err(Refusal::new(500, format!("lookup failed: {e}"))));
        let outputs = match located {
            Ok(o) => o,
            Err(refusal) => {
                tracing::warn!(
                    "mapreduce_shuffle: {} reduce {reduce}: {}",
                    job.job.outputs.job_id,
                    escaped(&refusal.message)
                );
                self.refuse(refusal).await;
                return Next::Close;
            }
        };
        let keep_alive = query.keep_alive || self.shared.config.keep_alive_enabled;
        let content_length: u64 = outputs
            .iter()
            .map(|o| o.header.len() as u64 + o.record.part_length.unsigned_abs())
            .sum();
        let mut head_bytes = format!(
            "HTTP/1.1 200 OK\r\n{}: {reply_hash}\r\n{}: {}\r\n{}: {}\r\n",
            hash::REPLY_HASH_HEADER,
            request::NAME_HEADER,
            request::NAME_VALUE,
            request::VERSION_HEADER,
            request::VERSION_VALUE
        );
        if keep_alive {
            head_bytes.push_str(&format!(
                "Content-Length: {content_length}\r\nConnection: Keep-Alive\r\nKeep-Alive: timeout={}\r\n\r\n",
                self.shared.config.keep_alive_timeout.as_secs()
            ));
        } else {
            head_bytes.push_str("Connection: close\r\n\r\n");
        }
        match self.send(head_bytes.into_bytes(), &outputs).await {
            Ok(()) if keep_alive => Next::KeepOpen,
            Ok(()) => {
                let _ = self.stream.shutdown().await;
                Next::Close
            }
            Err(e) => {
                tracing::debug!(
                    "mapreduce_shuffle: sending to a reducer of {} stopped: {e}",
                    job.job.outputs.job_id
                );
                Next::Close
            }
        }
    }

    /// `verifyRequest`: 401 with Hadoop's messages unless the `UrlHash` is the job token's
    /// HMAC of the request's port, path and query; on success the `ReplyHash` to send.
    fn verify(&self, head: &RequestHead, job_id: &str) -> Result<Verified, Refusal> {
        // JobTokenSecretManager.retrieveTokenSecret's InvalidToken.
        let job = self.shared.job(job_id).ok_or_else(|| {
            Refusal::new(401, format!("Can't find job token for job {job_id} !!"))
        })?;
        let url_hash = head
            .header(hash::URL_HASH_HEADER)
            .ok_or_else(|| Refusal::new(401, "fetcher cannot be authenticated"))?;
        let (path, query) = head.path_and_query();
        let msg = hash::build_msg(self.shared.port, path, query);
        if !hash::verify(&job.secret, url_hash, msg.as_bytes()) {
            return Err(Refusal::new(401, "Verification of the hashReply failed"));
        }
        let reply_hash = hash::generate_hash(&job.secret, url_hash.as_bytes());
        Ok(Verified { job, reply_hash })
    }

    /// Streams the reply: the head, then per map output its `ShuffleHeader` and its range of
    /// `file.out`, through one buffer of `mapreduce.shuffle.transfer.buffer.size`.
    async fn send(&mut self, head: Vec<u8>, outputs: &[MapOutput]) -> io::Result<()> {
        // Wait for one of the buffers the server may hold at once.
        let _buffer = self
            .shared
            .buffers
            .clone()
            .acquire_owned()
            .await
            .map_err(io::Error::other)?;
        let cap = self.shared.config.transfer_buffer_size;
        let write_timeout = self.shared.config.write_timeout;
        let counters = &self.shared.counters;
        let mut buf = Vec::with_capacity(cap + head.len());
        buf.extend_from_slice(&head);
        for output in outputs {
            buf.extend_from_slice(&output.header);
            let opened = {
                let o = output.clone();
                tokio::task::spawn_blocking(move || outputs::open_data(&o))
                    .await
                    .map_err(io::Error::other)
                    .and_then(|r| r)
            };
            let file = match opened {
                Ok(f) => Arc::new(f),
                Err(e) => {
                    counters.outputs_failed.fetch_add(1, Ordering::Relaxed);
                    return Err(e);
                }
            };
            let result = if self.shared.config.transfer_to {
                send_range(
                    &mut self.stream,
                    &mut buf,
                    &file,
                    output,
                    write_timeout,
                    counters,
                )
                .await
            } else {
                stream_range(
                    &mut self.stream,
                    &mut buf,
                    file,
                    output,
                    cap,
                    write_timeout,
                    counters,
                )
                .await
            };
            match result {
                Ok(()) => counters.outputs_ok.fetch_add(1, Ordering::Relaxed),
                Err(e) => {
                    counters.outputs_failed.fetch_add(1, Ordering::Relaxed);
                    return Err(e);
                }
            };
        }
        if !buf.is_empty() {
            write_all(&mut self.stream, &buf, write_timeout).await?;
        }
        Ok(())
    }
}

/// Sends one output's range of `file.out` after what `buf` already holds, filling `buf` up to
/// `cap` before each write; leaves in `buf` what is not yet written.
async fn stream_range(
    stream: &mut TcpStream,
    buf: &mut Vec<u8>,
    mut file: Arc<File>,
    output: &MapOutput,
    cap: usize,
    write_timeout: Duration,
    counters: &Counters,
) -> io::Result<()> {
    let mut offset = output.record.start_offset.unsigned_abs();
    let mut left = output.record.part_length.unsigned_abs();
    loop {
        if left > 0 && buf.len() < cap {
            let want = usize::try_from(left).unwrap_or(cap).min(cap - buf.len());
            let (b, f, n) = read_range(std::mem::take(buf), file, offset, want).await?;
            *buf = b;
            file = f;
            if n == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!("{} ended early", output.data_path.display()),
                ));
            }
            offset += n as u64;
            left -= n as u64;
            counters.output_bytes.fetch_add(n as u64, Ordering::Relaxed);
            if left > 0 && buf.len() < cap {
                continue;
            }
        }
        if left == 0 {
            // The rest goes out with the next output's header, or at the end.
            return Ok(());
        }
        write_all(stream, buf, write_timeout).await?;
        buf.clear();
    }
}

/// Sends one output's range of `file.out` after what `buf` already holds (written first)
/// with the kernel's zero-copy `sendfile`, as Hadoop's handler does with `transferTo`: no
/// copy through user space, no buffer held. The socket is non-blocking: each call sends
/// what the socket takes and the task waits for it to drain; a call reads at most
/// [`SENDFILE_CHUNK`] from the file, so a page-cache miss holds the runtime's thread
/// briefly (as Netty's I/O thread in Hadoop's).
async fn send_range(
    stream: &mut TcpStream,
    buf: &mut Vec<u8>,
    file: &File,
    output: &MapOutput,
    write_timeout: Duration,
    counters: &Counters,
) -> io::Result<()> {
    if !buf.is_empty() {
        write_all(stream, buf, write_timeout).await?;
        buf.clear();
    }
    let mut offset = output.record.start_offset;
    if offset < 0 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "a negative offset in the index",
        ));
    }
    let mut left = output.record.part_length.unsigned_abs();
    while left > 0 {
        let chunk = usize::try_from(left.min(SENDFILE_CHUNK)).unwrap_or(usize::MAX);
        match tokio::time::timeout(write_timeout, stream.writable()).await {
            Err(_) => {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "the reducer stopped reading",
                ))
            }
            Ok(r) => r?,
        }
        let sent = stream.try_io(tokio::io::Interest::WRITABLE, || {
            nix::sys::sendfile::sendfile64(&*stream, file, Some(&mut offset), chunk)
                .map_err(io::Error::from)
        });
        match sent {
            Ok(0) => {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!("{} ended early", output.data_path.display()),
                ))
            }
            Ok(n) => {
                left = left.saturating_sub(n as u64);
                counters.output_bytes.fetch_add(n as u64, Ordering::Relaxed);
            }
            Err(e)
                if e.kind() == io::ErrorKind::WouldBlock
                    || e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// The most one `sendfile` call moves.
const SENDFILE_CHUNK: u64 = 1 << 20;

struct Verified {
    job: Arc<Job>,
    reply_hash: String,
}

/// Appends up to `want` bytes of `file` at `offset` to `buf`, on the blocking pool.
async fn read_range(
    mut buf: Vec<u8>,
    file: Arc<File>,
    offset: u64,
    want: usize,
) -> io::Result<(Vec<u8>, Arc<File>, usize)> {
    tokio::task::spawn_blocking(move || {
        let old = buf.len();
        buf.resize(old + want, 0);
        let n = loop {
            match file.read_at(&mut buf[old..], offset) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                other => break other,
            }
        };
        let n = match n {
            Ok(n) => n,
            Err(e) => {
                buf.truncate(old);
                return Err(e);
            }
        };
        buf.truncate(old + n);
        Ok((buf, file, n))
    })
    .await
    .map_err(io::Error::other)?
}

async fn write_all(stream: &mut TcpStream, bytes: &[u8], limit: Duration) -> io::Result<()> {
    // The deadline is per write call: a reducer reading slowly but steadily is fine.
    let mut sent = 0;
    while sent < bytes.len() {
        match tokio::time::timeout(limit, stream.write(&bytes[sent..])).await {
            Err(_) => {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "the reducer stopped reading",
                ))
            }
            Ok(Ok(0)) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(Ok(n)) => sent += n,
            Ok(Err(e)) => return Err(e),
        }
    }
    Ok(())
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        // Hadoop's own TOO_MANY_REQ_STATUS.
        429 => "TOO MANY REQUESTS",
        _ => "Internal Server Error",
    }
}

/// `Shuffle.sendError`: a plain-text body, the shuffle's name and version headers, then the
/// connection is closed.
async fn write_error(
    stream: &mut TcpStream,
    refusal: &Refusal,
    retry_after: bool,
) -> io::Result<()> {
    let mut text = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: text/plain; charset=UTF-8\r\n{}: {}\r\n{}: {}\r\n",
        refusal.status,
        reason(refusal.status),
        request::NAME_HEADER,
        request::NAME_VALUE,
        request::VERSION_HEADER,
        request::VERSION_VALUE
    );
    if retry_after {
        text.push_str(&format!("Retry-After: {FETCH_RETRY_DELAY_MS}\r\n"));
    }
    text.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n{}",
        refusal.message.len(),
        refusal.message
    ));
    tokio::time::timeout(DRAIN_TIME * 5, stream.write_all(text.as_bytes()))
        .await
        .map_err(|_| io::Error::from(io::ErrorKind::TimedOut))?
}

/// Ends our side, then reads (and drops) what the client still sends for a moment, so that
/// it reads our reply instead of a reset.
async fn drain_and_close(stream: &mut TcpStream) {
    let _ = stream.shutdown().await;
    let _ = tokio::time::timeout(DRAIN_TIME, async {
        let mut scratch = [0u8; 4096];
        let mut total = 0usize;
        while total < MAX_BODY as usize {
            match stream.read(&mut scratch).await {
                Ok(0) | Err(_) => break,
                Ok(n) => total += n,
            }
        }
    })
    .await;
}
