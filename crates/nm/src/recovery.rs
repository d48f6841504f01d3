//! NodeManager recovery: the records a restarted NodeManager needs to take
//! its containers back (Hadoop's `yarn.nodemanager.recovery.enabled`,
//! default false, and `yarn.nodemanager.recovery.dir`, default
//! `${hadoop.tmp.dir}/yarn-nm-recovery`).
//!
//! Hadoop keeps them in a LevelDB (`NMLeveldbStateStoreService`); here each
//! record is one small file, replaced atomically (written to `<name>.tmp`,
//! fsynced, renamed over the old one, the directory fsynced):
//!
//! - `containers/<container id>`: the container token identifier (id,
//!   user, resource, priority, creation time: everything a registration
//!   reports), the phase, the exit status and diagnostics once done, and
//!   the container's dirs once known. Written when the container is
//!   accepted (before `startContainers` answers), when its process starts,
//!   when it completes; removed when the ResourceManager has acknowledged
//!   the completion.
//! - `apps/<application id>`: the application's user and whether the
//!   ResourceManager said it finished. Written when its first container is
//!   accepted and when it finishes; removed once cleaned up.
//! - `resources/<digest of the cache key>`: one localized resource (its
//!   cache scope, source, size, timestamp and type, the local copy and the
//!   copy's inode, size, times and mode right after it was made). Written
//!   when the copy is made, before any container gets it; removed when the
//!   cache forgets it (application finished, copy changed or gone). A
//!   restarted node takes back the copies still exactly as recorded
//!   ([`crate::localizer::Localizer::restore`]), so its containers are not
//!   localized again.
//!
//! Records are written by one writer thread, in the order they were asked
//! for (callers ask under the container state lock, so the order is the
//! order of the changes): no fsync runs on the runtime's workers or under
//! that lock. A caller that must not answer before its record is durable
//! (`startContainers`) awaits [`StateStore::flushed`].
//!
//! A record ends with a checksum of what precedes it; one that does not
//! parse or check is named in a warning and skipped: that container is
//! lost (its processes are killed at start-up, as without recovery), the
//! others are recovered.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::fs;
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};

use hadoop_protos::yarn::ContainerTokenIdentifierProto;
use prost::Message;
use spindle_common::conf::keys::{NM_RECOVERY_DIR, NM_RECOVERY_ENABLED};
use spindle_common::security::ContainerTokenIdentifier;
use spindle_common::{ApplicationId, Configuration, ContainerId};
use tracing::{info, warn};

use crate::cache_entry::{CachedResource, Fingerprint, ResourceType, Scope};
use crate::containers::ContainerPhase;
use crate::error::NmError;
use crate::launch::ContainerPaths;

/// Hadoop's `yarn.nodemanager.recovery.supervised` (default false): with
/// recovery on, the node runs under a supervisor that starts it again, so
/// a clean stop neither kills the containers nor unregisters the node.
pub const NM_RECOVERY_SUPERVISED: &str = "yarn.nodemanager.recovery.supervised";

const MAGIC: &str = "spindle-nm-recovery 1";
const CONTAINERS: &str = "containers";
const APPS: &str = "apps";
const RESOURCES: &str = "resources";

/// Whether and where the node records its containers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecoveryConfig {
    pub enabled: bool,
    pub dir: PathBuf,
    /// `yarn.nodemanager.recovery.supervised`.
    pub supervised: bool,
}

impl RecoveryConfig {
    /// Whether a clean stop leaves the containers running (recovery on and
    /// supervised), for the next start to take back.
    pub fn keeps_containers_on_stop(&self) -> bool {
        self.enabled && self.supervised
    }
}

impl RecoveryConfig {
    pub fn from_conf(conf: &Configuration) -> Result<RecoveryConfig, NmError> {
        let enabled = conf.get_bool(NM_RECOVERY_ENABLED)?;
        let dir = PathBuf::from(conf.get_trimmed(NM_RECOVERY_DIR).unwrap_or_default());
        if enabled && !dir.is_absolute() {
            return Err(conf
                .invalid_value(NM_RECOVERY_DIR, "must be an absolute path")
                .into());
        }
        let supervised = match conf.get_trimmed(NM_RECOVERY_SUPERVISED).as_deref() {
            None | Some("") => false,
            Some(v) if v.eq_ignore_ascii_case("true") => true,
            Some(v) if v.eq_ignore_ascii_case("false") => false,
            Some(_) => {
                return Err(conf
                    .invalid_value(NM_RECOVERY_SUPERVISED, "must be true or false")
                    .into())
            }
        };
        Ok(RecoveryConfig {
            enabled,
            dir,
            supervised,
        })
    }
}

/// What is recorded of one container.
#[derive(Debug, Clone, PartialEq)]
pub struct ContainerRecord {
    pub grant: ContainerTokenIdentifier,
    pub phase: ContainerPhase,
    pub exit_status: i32,
    pub diagnostics: String,
    pub paths: Option<ContainerPaths>,
    /// The launch context's `service_data` (auxiliary service, data): a
    /// recovered live container initializes its application's services
    /// again, as Hadoop's ContainerImpl does from its stored launch context.
    /// Records written before it was kept have none.
    pub service_data: Vec<(String, Vec<u8>)>,
}

/// What is recorded of one application.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppRecord {
    pub user: String,
    pub finishing: bool,
    /// The application's ACLs, (access type, ACL) pairs (`VIEW_APP`,
    /// `MODIFY_APP`). Records written before they were kept have none.
    pub acls: Vec<(String, String)>,
}

/// What a start-up found in the recovery dir.
#[derive(Debug, Default)]
pub struct Recovered {
    pub containers: Vec<ContainerRecord>,
    pub apps: Vec<(ApplicationId, AppRecord)>,
    pub resources: Vec<CachedResource>,
}

impl Recovered {
    /// The recorded containers that had not completed, by id: the node
    /// takes them back, so the executor's start-up reaper leaves them.
    pub fn live_container_ids(&self) -> HashSet<String> {
        self.containers
            .iter()
            .filter(|c| c.phase != ContainerPhase::Done)
            .map(|c| c.grant.container.to_string())
            .collect()
    }
}

/// The start's step that reads what a previous run recorded, with recovery
/// on (its containers are taken back, not killed): the store this run
/// records in, and the records. With recovery off, neither.
pub async fn read_previous_run(
    cfg: &RecoveryConfig,
) -> Result<(Option<StateStore>, Recovered), NmError> {
    if !cfg.enabled {
        return Ok((None, Recovered::default()));
    }
    let dir = cfg.dir.clone();
    let (store, recovered) = tokio::task::spawn_blocking(move || {
        StateStore::open(&dir).map(|s| {
            let r = s.load();
            (s, r)
        })
    })
    .await
    .map_err(|e| NmError::Internal(format!("reading the recovery records failed: {e}")))??;
    info!(
        dir = %store.dir().display(),
        containers = recovered.containers.len(),
        applications = recovered.apps.len(),
        localized_resources = recovered.resources.len(),
        "NodeManager recovery is on: recovering the containers a previous run recorded"
    );
    Ok((Some(store), recovered))
}

/// The records under the recovery dir.
#[derive(Debug)]
pub struct StateStore {
    dir: PathBuf,
    writer: Writer,
}

/// One job of the writer thread.
enum Job {
    Write {
        file: PathBuf,
        text: String,
        what: &'static str,
    },
    Remove {
        file: PathBuf,
        what: &'static str,
    },
    /// Called once every earlier job is done.
    Notify(Box<dyn FnOnce() + Send>),
}

/// The handle of the thread that writes the records, in order.
struct Writer {
    jobs: std::sync::mpsc::Sender<Job>,
}

impl std::fmt::Debug for Writer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Writer")
    }
}

impl Writer {
    fn start() -> io::Result<Writer> {
        let (jobs, rx) = std::sync::mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("nm-recovery-writer".into())
            .spawn(move || {
                // Ends when the store is dropped, after the jobs already sent.
                for job in rx {
                    match job {
                        Job::Write { file, text, what } => {
                            if let Err(e) = write_atomically(&file, &text) {
                                warn!(file = %file.display(), error = %e, "cannot record {what} for recovery");
                            }
                        }
                        Job::Remove { file, what } => {
                            if let Err(e) = remove_durably(&file) {
                                warn!(file = %file.display(), error = %e, "cannot remove the recovery record of {what}");
                            }
                        }
                        Job::Notify(done) => done(),
                    }
                }
            })?;
        Ok(Writer { jobs })
    }

    fn send(&self, job: Job) {
        // The thread only ends when this sender is dropped.
        let _ = self.jobs.send(job);
    }
}

fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

fn hex_path(p: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    hex(p.as_os_str().as_bytes())
}

fn unhex_path(s: &str) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStringExt;
    unhex(s).map(|b| PathBuf::from(std::ffi::OsString::from_vec(b)))
}

fn hex_paths(ps: &[PathBuf]) -> String {
    ps.iter().map(|p| hex_path(p)).collect::<Vec<_>>().join(",")
}

fn unhex_paths(s: &str) -> Option<Vec<PathBuf>> {
    if s.is_empty() {
        return Some(Vec::new());
    }
    s.split(',').map(unhex_path).collect()
}

/// FNV-1a, 64 bits: enough to tell a damaged record from a good one.
fn checksum(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

fn phase_name(p: ContainerPhase) -> &'static str {
    match p {
        ContainerPhase::Localizing => "localizing",
        ContainerPhase::Launching => "launching",
        ContainerPhase::Running => "running",
        ContainerPhase::Done => "done",
    }
}

fn phase_from(s: &str) -> Option<ContainerPhase> {
    Some(match s {
        "localizing" => ContainerPhase::Localizing,
        "launching" => ContainerPhase::Launching,
        "running" => ContainerPhase::Running,
        "done" => ContainerPhase::Done,
        _ => return None,
    })
}

/// A record's text: the fields, then `checksum <hex>`.
fn seal(fields: &[(&str, String)]) -> String {
    let mut s = format!("{MAGIC}\n");
    for (k, v) in fields {
        let _ = writeln!(s, "{k} {v}");
    }
    let sum = checksum(s.as_bytes());
    let _ = writeln!(s, "checksum {sum:016x}");
    s
}

/// The fields of a sealed record, or what is wrong with it.
fn unseal(text: &str) -> Result<Vec<(&str, &str)>, String> {
    let body_end = text
        .rfind("checksum ")
        .ok_or("no checksum line (the file is truncated)")?;
    let (body, tail) = text.split_at(body_end);
    let want = tail
        .trim_end()
        .strip_prefix("checksum ")
        .and_then(|h| u64::from_str_radix(h, 16).ok())
        .ok_or("the checksum line is damaged")?;
    if checksum(body.as_bytes()) != want {
        return Err("the checksum does not match (the file is damaged)".into());
    }
    let mut lines = body.lines();
    if lines.next() != Some(MAGIC) {
        return Err(format!("not a record of this format (expected '{MAGIC}')"));
    }
    Ok(lines.filter_map(|l| l.split_once(' ')).collect())
}

fn field<'a>(fields: &[(&str, &'a str)], name: &str) -> Result<&'a str, String> {
    fields
        .iter()
        .find(|(k, _)| *k == name)
        .map(|(_, v)| *v)
        .ok_or_else(|| format!("the field '{name}' is missing"))
}

impl ContainerRecord {
    fn encode(&self) -> String {
        let mut fields = vec![
            ("token", hex(&self.grant.to_proto().encode_to_vec())),
            ("phase", phase_name(self.phase).to_string()),
            ("exit-status", self.exit_status.to_string()),
            ("diagnostics", hex(self.diagnostics.as_bytes())),
        ];
        if let Some(p) = &self.paths {
            fields.push(("work-dir", hex_path(&p.work_dir)));
            fields.push(("log-dir", hex_path(&p.log_dir)));
            fields.push(("log-dirs", hex_paths(&p.log_dirs)));
            fields.push(("app-dirs", hex_paths(&p.app_dirs)));
            fields.push(("user-dirs", hex_paths(&p.user_dirs)));
        }
        // One optional line per entry: `service-data <hex name>:<hex data>`.
        for (name, data) in &self.service_data {
            fields.push((
                "service-data",
                format!("{}:{}", hex(name.as_bytes()), hex(data)),
            ));
        }
        seal(&fields)
    }

    fn decode(text: &str) -> Result<ContainerRecord, String> {
        let f = unseal(text)?;
        let token = unhex(field(&f, "token")?).ok_or("the token is not hex")?;
        let proto = ContainerTokenIdentifierProto::decode(token.as_slice())
            .map_err(|e| format!("the token does not decode: {e}"))?;
        let grant = ContainerTokenIdentifier::from_proto(&proto)
            .map_err(|e| format!("the token is not a container token identifier: {e}"))?;
        let phase = phase_from(field(&f, "phase")?).ok_or("unknown phase")?;
        let exit_status = field(&f, "exit-status")?
            .parse()
            .map_err(|_| "the exit status is not a number")?;
        let diagnostics = String::from_utf8_lossy(
            &unhex(field(&f, "diagnostics")?).ok_or("the diagnostics are not hex")?,
        )
        .into_owned();
        let paths = match field(&f, "work-dir") {
            Err(_) => None,
            Ok(w) => {
                let bad = || "a dir is not hex".to_string();
                Some(ContainerPaths {
                    work_dir: unhex_path(w).ok_or_else(bad)?,
                    log_dir: unhex_path(field(&f, "log-dir")?).ok_or_else(bad)?,
                    log_dirs: unhex_paths(field(&f, "log-dirs")?).ok_or_else(bad)?,
                    app_dirs: unhex_paths(field(&f, "app-dirs")?).ok_or_else(bad)?,
                    user_dirs: unhex_paths(field(&f, "user-dirs")?).ok_or_else(bad)?,
                })
            }
        };
        let mut service_data = Vec::new();
        for (_, value) in f.iter().filter(|(k, _)| *k == "service-data") {
            let (name, data) = value
                .split_once(':')
                .ok_or("a service-data line has no ':'")?;
            let name = String::from_utf8(unhex(name).ok_or("a service name is not hex")?)
                .map_err(|_| "a service name is not UTF-8")?;
            service_data.push((name, unhex(data).ok_or("service data is not hex")?));
        }
        Ok(ContainerRecord {
            grant,
            phase,
            exit_status,
            diagnostics,
            paths,
            service_data,
        })
    }
}

impl AppRecord {
    fn encode(&self) -> String {
        let mut fields = vec![
            ("user", hex(self.user.as_bytes())),
            ("finishing", u8::from(self.finishing).to_string()),
        ];
        // One optional field per ACL: `acl <hex access type>:<hex ACL>`.
        // Every such line is read back; a record without one has no ACLs.
        for (access, acl) in &self.acls {
            fields.push((
                "acl",
                format!("{}:{}", hex(access.as_bytes()), hex(acl.as_bytes())),
            ));
        }
        seal(&fields)
    }

    fn decode(text: &str) -> Result<AppRecord, String> {
        let f = unseal(text)?;
        let user = String::from_utf8(unhex(field(&f, "user")?).ok_or("the user is not hex")?)
            .map_err(|_| "the user is not UTF-8")?;
        let finishing = match field(&f, "finishing")? {
            "0" => false,
            "1" => true,
            _ => return Err("'finishing' is neither 0 nor 1".into()),
        };
        let mut acls = Vec::new();
        for (_, value) in f.iter().filter(|(k, _)| *k == "acl") {
            let text = |h: &str| unhex(h).and_then(|b| String::from_utf8(b).ok());
            let (access, acl) = value
                .split_once(':')
                .and_then(|(a, l)| Some((text(a)?, text(l)?)))
                .ok_or("an ACL is not two hex UTF-8 texts")?;
            acls.push((access, acl));
        }
        Ok(AppRecord {
            user,
            finishing,
            acls,
        })
    }
}

fn kind_name(k: ResourceType) -> &'static str {
    match k {
        ResourceType::File => "file",
        ResourceType::Archive => "archive",
        ResourceType::Pattern => "pattern",
    }
}

fn kind_from(s: &str) -> Option<ResourceType> {
    Some(match s {
        "file" => ResourceType::File,
        "archive" => ResourceType::Archive,
        "pattern" => ResourceType::Pattern,
        _ => return None,
    })
}

/// The record's scope field: `public`, `user <hex user>`, `app <hex user> <app>`.
fn scope_text(s: &Scope) -> String {
    match s {
        Scope::Public => "public".into(),
        Scope::User(u) => format!("user:{}", hex(u.as_bytes())),
        Scope::App(u, a) => format!("app:{}:{a}", hex(u.as_bytes())),
    }
}

fn scope_from(s: &str) -> Option<Scope> {
    let user = |h: &str| String::from_utf8(unhex(h)?).ok();
    let mut parts = s.split(':');
    let scope = match (parts.next()?, parts.next(), parts.next()) {
        ("public", None, None) => Scope::Public,
        ("user", Some(u), None) => Scope::User(user(u)?),
        ("app", Some(u), Some(a)) => Scope::App(user(u)?, a.parse().ok()?),
        _ => return None,
    };
    parts.next().is_none().then_some(scope)
}

/// What names a resource's record: a digest of its cache key.
fn resource_name(r: &CachedResource) -> String {
    // A remote source's file system is part of its name (a local source's
    // names stay what they were before remote sources existed).
    let source = match &r.filesystem {
        Some(fs) => format!("{}@{}", hex_path(&r.source), hex_path(Path::new(fs))),
        None => hex_path(&r.source),
    };
    let key = format!(
        "{}|{:?}|{}|{}|{}|{}",
        scope_text(&r.scope),
        r.group,
        source,
        r.size,
        r.timestamp,
        kind_name(r.kind)
    );
    format!("{:016x}", checksum(key.as_bytes()))
}

fn encode_resource(r: &CachedResource) -> String {
    let f = &r.fingerprint;
    seal(&[
        ("scope", scope_text(&r.scope)),
        ("group", r.group.map_or("-".into(), |g| g.to_string())),
        ("source", hex_path(&r.source)),
        (
            "filesystem",
            r.filesystem
                .as_deref()
                .map_or("-".into(), |fs| hex_path(Path::new(fs))),
        ),
        ("size", r.size.to_string()),
        ("timestamp", r.timestamp.to_string()),
        ("kind", kind_name(r.kind).into()),
        ("path", hex_path(&r.path)),
        ("bytes", r.bytes.to_string()),
        (
            "copy",
            format!(
                "{} {} {} {} {} {} {} {}",
                f.dev, f.ino, f.len, f.mtime.0, f.mtime.1, f.ctime.0, f.ctime.1, f.mode
            ),
        ),
    ])
}

fn decode_resource(text: &str) -> Result<CachedResource, String> {
    let f = unseal(text)?;
    fn num<T: std::str::FromStr>(f: &[(&str, &str)], name: &str) -> Result<T, String> {
        field(f, name)?
            .parse()
            .map_err(|_| format!("the field '{name}' is not a number"))
    }
    let group = match field(&f, "group")? {
        "-" => None,
        _ => Some(num(&f, "group")?),
    };
    let copy: Vec<i64> = field(&f, "copy")?
        .split(' ')
        .map(|v| {
            v.parse::<i64>()
                .map_err(|_| "the copy's fingerprint is damaged")
        })
        .collect::<Result<_, _>>()?;
    let [dev, ino, len, ms, mns, cs, cns, mode] = copy[..] else {
        return Err("the copy's fingerprint is damaged".into());
    };
    let unsigned = |v: i64| u64::try_from(v).map_err(|_| "the copy's fingerprint is damaged");
    Ok(CachedResource {
        scope: scope_from(field(&f, "scope")?).ok_or("the scope is damaged")?,
        group,
        filesystem: match field(&f, "filesystem") {
            // Records written before remote sources had no such field.
            Err(_) | Ok("-") => None,
            Ok(fs) => Some(
                unhex_path(fs)
                    .and_then(|p| p.to_str().map(str::to_string))
                    .ok_or("the file system is damaged")?,
            ),
        },
        source: unhex_path(field(&f, "source")?).ok_or("the source is not hex")?,
        size: num(&f, "size")?,
        timestamp: num(&f, "timestamp")?,
        kind: kind_from(field(&f, "kind")?).ok_or("unknown resource type")?,
        path: unhex_path(field(&f, "path")?).ok_or("the path is not hex")?,
        bytes: num(&f, "bytes")?,
        fingerprint: Fingerprint {
            dev: unsigned(dev)?,
            ino: unsigned(ino)?,
            len: unsigned(len)?,
            mtime: (ms, mns),
            ctime: (cs, cns),
            mode: u32::try_from(mode).map_err(|_| "the copy's fingerprint is damaged")?,
        },
    })
}

/// Writes `text` to `path` atomically and durably.
fn write_atomically(path: &Path, text: &str) -> io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = path.parent().unwrap_or(Path::new("."));
    let tmp = path.with_extension("tmp");
    {
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
    }
    fs::rename(&tmp, path)?;
    fs::File::open(dir)?.sync_all()
}

fn remove_durably(path: &Path) -> io::Result<()> {
    match fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    }
    fs::File::open(path.parent().unwrap_or(Path::new(".")))?.sync_all()
}

impl StateStore {
    /// Opens (creating) the recovery dir, owner-only.
    pub fn open(dir: &Path) -> Result<StateStore, NmError> {
        use std::os::unix::fs::DirBuilderExt;
        for sub in [CONTAINERS, APPS, RESOURCES] {
            fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir.join(sub))
                .map_err(|e| NmError::Config {
                    key: NM_RECOVERY_DIR.to_string(),
                    message: format!("cannot create {}: {e}", dir.join(sub).display()),
                })?;
        }
        let writer = Writer::start().map_err(|e| {
            NmError::Internal(format!("cannot start the recovery record writer: {e}"))
        })?;
        Ok(StateStore {
            dir: dir.to_path_buf(),
            writer,
        })
    }

    /// Resolves once every record asked for before the call is written.
    pub async fn flushed(&self) {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.writer.send(Job::Notify(Box::new(move || {
            let _ = tx.send(());
        })));
        let _ = rx.await;
    }

    /// Blocks until every record asked for before the call is written.
    pub fn flush_blocking(&self) {
        let (tx, rx) = std::sync::mpsc::channel();
        self.writer.send(Job::Notify(Box::new(move || {
            let _ = tx.send(());
        })));
        let _ = rx.recv();
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn container_file(&self, id: &ContainerId) -> PathBuf {
        self.dir.join(CONTAINERS).join(id.to_string())
    }

    fn app_file(&self, app: &ApplicationId) -> PathBuf {
        self.dir.join(APPS).join(app.to_string())
    }

    /// Records a container (replacing its earlier record). A failure is
    /// logged: the container runs on, and is lost if the node restarts.
    pub fn store_container(&self, r: &ContainerRecord) {
        self.writer.send(Job::Write {
            file: self.container_file(&r.grant.container),
            text: r.encode(),
            what: "a container",
        });
    }

    pub fn remove_container(&self, id: &ContainerId) {
        self.writer.send(Job::Remove {
            file: self.container_file(id),
            what: "a container",
        });
    }

    pub fn store_app(&self, app: &ApplicationId, r: &AppRecord) {
        self.writer.send(Job::Write {
            file: self.app_file(app),
            text: r.encode(),
            what: "an application",
        });
    }

    pub fn remove_app(&self, app: &ApplicationId) {
        self.writer.send(Job::Remove {
            file: self.app_file(app),
            what: "an application",
        });
    }

    /// Records a localized resource. A failure is logged: the copy serves
    /// on, and is localized again if the node restarts.
    pub fn store_resource(&self, r: &CachedResource) {
        self.writer.send(Job::Write {
            file: self.dir.join(RESOURCES).join(resource_name(r)),
            text: encode_resource(r),
            what: "a localized resource",
        });
    }

    pub fn remove_resource(&self, r: &CachedResource) {
        self.writer.send(Job::Remove {
            file: self.dir.join(RESOURCES).join(resource_name(r)),
            what: "a localized resource",
        });
    }

    /// Reads every record. A damaged one is named in a warning and removed
    /// (its container is lost); leftover `.tmp` files of interrupted
    /// writes are removed.
    pub fn load(&self) -> Recovered {
        self.flush_blocking();
        let mut out = Recovered::default();
        for (name, text) in self.files(CONTAINERS) {
            let file = self.dir.join(CONTAINERS).join(&name);
            let parsed = ContainerRecord::decode(&text).and_then(|r| {
                if r.grant.container.to_string() == name {
                    Ok(r)
                } else {
                    Err(format!("it is the record of {}", r.grant.container))
                }
            });
            match parsed {
                Ok(r) => out.containers.push(r),
                Err(why) => {
                    warn!(
                        file = %file.display(),
                        "the recovery record of container {name} cannot be used ({why}); the \
                         container is lost: what is left of it is killed"
                    );
                    let _ = remove_durably(&file);
                }
            }
        }
        for (name, text) in self.files(APPS) {
            let file = self.dir.join(APPS).join(&name);
            let parsed = name
                .parse::<ApplicationId>()
                .map_err(|_| "the file name is not an application id".to_string())
                .and_then(|id| AppRecord::decode(&text).map(|r| (id, r)));
            match parsed {
                Ok(a) => out.apps.push(a),
                Err(why) => {
                    warn!(
                        file = %file.display(),
                        "the recovery record of application {name} cannot be used ({why}); it is \
                         rebuilt from its containers' records"
                    );
                    let _ = remove_durably(&file);
                }
            }
        }
        for (name, text) in self.files(RESOURCES) {
            let file = self.dir.join(RESOURCES).join(&name);
            let parsed = decode_resource(&text).and_then(|r| {
                if resource_name(&r) == name {
                    Ok(r)
                } else {
                    Err("its name is not the digest of its key".into())
                }
            });
            match parsed {
                Ok(r) => out.resources.push(r),
                Err(why) => {
                    warn!(
                        file = %file.display(),
                        "the recovery record of a localized resource cannot be used ({why}); \
                         the resource is localized again when a container needs it"
                    );
                    let _ = remove_durably(&file);
                }
            }
        }
        out
    }

    /// (name, text) of the files of `sub`; removes `.tmp` leftovers.
    fn files(&self, sub: &str) -> Vec<(String, String)> {
        let Ok(entries) = fs::read_dir(self.dir.join(sub)) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for e in entries.filter_map(|e| e.ok()) {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.ends_with(".tmp") {
                let _ = fs::remove_file(e.path());
                continue;
            }
            match fs::read(e.path()) {
                Ok(bytes) => out.push((name, String::from_utf8_lossy(&bytes).into_owned())),
                Err(err) => {
                    warn!(file = %e.path().display(), error = %err, "cannot read a recovery record")
                }
            }
        }
        out.sort();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hadoop_protos::yarn::ContainerTypeProto;
    use spindle_common::Resource;

    fn record(seq: i64) -> ContainerRecord {
        let id: ContainerId = format!("container_1795326004599_0007_01_{seq:06}")
            .parse()
            .expect("id");
        ContainerRecord {
            grant: ContainerTokenIdentifier::new(
                id,
                "host:1234",
                "alice",
                Resource::new(512, 1),
                1,
                2,
                3,
                4,
                5,
                ContainerTypeProto::Task,
            ),
            phase: ContainerPhase::Running,
            exit_status: -1000,
            diagnostics: "line 1\nline 2".into(),
            paths: Some(ContainerPaths {
                work_dir: "/l/usercache/alice/appcache/a/c".into(),
                log_dir: "/g/a/c".into(),
                log_dirs: vec!["/g/a/c".into(), "/h/a/c".into()],
                app_dirs: vec!["/l/a".into()],
                user_dirs: vec![],
            }),
            service_data: if seq % 2 == 0 {
                vec![
                    ("mapreduce_shuffle".into(), vec![0, 1, 0xff]),
                    ("spark_shuffle".into(), vec![]),
                ]
            } else {
                Vec::new()
            },
        }
    }

    #[test]
    fn records_round_trip_and_damage_is_named() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let store = StateStore::open(tmp.path()).expect("open");
        let (a, b, c) = (record(2), record(3), record(4));
        store.store_container(&a);
        store.store_container(&b);
        store.store_container(&ContainerRecord {
            paths: None,
            ..c.clone()
        });
        let app = a.grant.container.app();
        store.store_app(
            &app,
            &AppRecord {
                user: "alice".into(),
                finishing: true,
                acls: vec![
                    ("VIEW_APP".into(), "bob,carol ops".into()),
                    ("MODIFY_APP".into(), " ".into()),
                ],
            },
        );
        store.flush_blocking();
        // A truncated record, a flipped byte, an interrupted write.
        let bf = tmp
            .path()
            .join("containers")
            .join(b.grant.container.to_string());
        let text = fs::read_to_string(&bf).expect("read");
        fs::write(&bf, &text[..text.len() / 2]).expect("truncate");
        let cf = tmp
            .path()
            .join("containers")
            .join(c.grant.container.to_string());
        let mut bytes = fs::read(&cf).expect("read");
        bytes[30] ^= 1;
        fs::write(&cf, bytes).expect("damage");
        fs::write(tmp.path().join("containers/x.tmp"), "half").expect("tmp");

        let r = store.load();
        assert_eq!(r.containers, vec![a.clone()]);
        assert_eq!(
            r.apps,
            vec![(
                app,
                AppRecord {
                    user: "alice".into(),
                    finishing: true,
                    acls: vec![
                        ("VIEW_APP".into(), "bob,carol ops".into()),
                        ("MODIFY_APP".into(), " ".into()),
                    ],
                }
            )]
        );
        assert!(!bf.exists() && !cf.exists());
        assert!(!tmp.path().join("containers/x.tmp").exists());

        store.remove_container(&a.grant.container);
        store.remove_app(&app);
        let r = store.load();
        assert!(r.containers.is_empty() && r.apps.is_empty());
        assert_eq!(
            unseal("spindle-nm-recovery 1\nphase x\n").err().as_deref(),
            Some("no checksum line (the file is truncated)")
        );
    }

    #[test]
    fn app_records_written_before_acls_were_kept_still_read() {
        let old = seal(&[("user", hex(b"alice")), ("finishing", "0".to_string())]);
        let r = AppRecord::decode(&old).expect("an old record reads");
        assert_eq!(
            r,
            AppRecord {
                user: "alice".into(),
                finishing: false,
                acls: Vec::new(),
            }
        );
        let bad = seal(&[
            ("user", hex(b"alice")),
            ("finishing", "0".to_string()),
            ("acl", "zz".to_string()),
        ]);
        assert!(AppRecord::decode(&bad).is_err());
    }

    #[test]
    fn resource_records_round_trip_and_damage_is_named() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let store = StateStore::open(tmp.path()).expect("open");
        let app: ApplicationId = "application_1795326004599_0007".parse().expect("app");
        let entry = |scope: Scope, source: &str| CachedResource {
            scope,
            group: Some(1001),
            filesystem: None,
            source: source.into(),
            size: 12,
            timestamp: 1_700_000_000_123,
            kind: ResourceType::Archive,
            path: "/l/filecache/10/x.zip".into(),
            bytes: 12,
            fingerprint: Fingerprint {
                dev: 1,
                ino: 2,
                len: 3,
                mtime: (4, 5),
                ctime: (6, 7),
                mode: 0o40555,
            },
        };
        let a = entry(Scope::Public, "/s/a.zip");
        let b = entry(Scope::User("al ice".into()), "/s/b.zip");
        let c = entry(Scope::App("bob".into(), app), "/s/c.zip");
        // The same path on HDFS is another resource, with a record of its own.
        let d = CachedResource {
            filesystem: Some("hdfs://nn:8020".into()),
            ..entry(Scope::App("bob".into(), app), "/s/c.zip")
        };
        assert_ne!(resource_name(&c), resource_name(&d));
        for r in [&a, &b, &c, &d] {
            store.store_resource(r);
        }
        let mut got = store.load().resources;
        got.sort_by(|x, y| (&x.source, &x.filesystem).cmp(&(&y.source, &y.filesystem)));
        assert_eq!(got, vec![a.clone(), b.clone(), c.clone(), d.clone()]);
        store.remove_resource(&d);

        // A damaged record is dropped (and named), the others stay.
        store.flush_blocking();
        let name = resource_name(&b);
        let file = tmp.path().join("resources").join(&name);
        let mut bytes = fs::read(&file).expect("read");
        bytes[40] ^= 1;
        fs::write(&file, bytes).expect("damage");
        assert_eq!(store.load().resources.len(), 2);
        assert!(!file.exists());
        store.remove_resource(&a);
        assert_eq!(store.load().resources, vec![c]);
    }
}
