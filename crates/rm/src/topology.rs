//! Rack resolution: which rack (network location) a node is in.
//!
//! Hadoop's RM asks a `DNSToSwitchMapping` for the rack of every NodeManager
//! that registers. The implementation is picked by
//! `net.topology.node.switch.mapping.impl`; Spindle supports the two that
//! clusters configure:
//!
//! * `org.apache.hadoop.net.ScriptBasedMapping` (the default): an external
//!   program named by `net.topology.script.file.name` is run with up to
//!   `net.topology.script.number.args` host names as arguments and prints one
//!   rack per name, separated by whitespace. With no script every host is in
//!   [`DEFAULT_RACK`]. `ScriptBasedMappingWithDependency` resolves racks the
//!   same way (its extra dependency script only matters to HDFS) and is
//!   accepted as a synonym.
//! * `org.apache.hadoop.net.TableMapping`: a text file named by
//!   `net.topology.table.file.name` with one `host rack` pair per line. Blank
//!   lines and lines starting with `#` are skipped; other lines without
//!   exactly two whitespace-separated columns are ignored with a warning. The
//!   file is read on the first resolution (not at start-up) and re-read after
//!   [`Topology::clear_cache`]. If it cannot be read every host is in
//!   [`DEFAULT_RACK`] (or, when re-reading, the previous table stays).
//!
//! Racks are normalized as Hadoop's `NodeBase` does, a little more leniently:
//! a missing leading `/` is added and trailing `/`s are removed. A rack that
//! is still not a path of non-empty components (`/`, `/a//b`) is replaced by
//! [`DEFAULT_RACK`] with a warning.
//!
//! Answers are cached per host for the life of the process, like Hadoop's
//! `CachedDNSToSwitchMapping`; [`Topology::clear_cache`] forgets them. A run
//! of the script that fails, exceeds [`SCRIPT_TIMEOUT`] or prints the wrong
//! number of racks puts its hosts in [`DEFAULT_RACK`] *without* caching that,
//! so the next resolution of those hosts tries again.
//!
//! Hosts are resolved by the name the NodeManager registered with. (Hadoop
//! first replaces each name by its IP address when the name resolves; scripts
//! and tables written for Hadoop that list only IP addresses need host names
//! added for Spindle.)

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use spindle_common::conf::keys::{
    NET_TOPOLOGY_NODE_SWITCH_MAPPING_IMPL, NET_TOPOLOGY_SCRIPT_FILE_NAME,
};
use spindle_common::conf::Configuration;
use spindle_common::text::escaped;
use tokio::io::{AsyncRead, AsyncReadExt};
use tracing::{debug, warn};

/// `ETXTBSY` on Linux: the executable is open for writing.
const TEXT_FILE_BUSY: i32 = 26;

/// The rack of every host nothing better is known about.
pub const DEFAULT_RACK: &str = "/default-rack";

/// How long one run of the topology script may take before it is killed and
/// its hosts are put in [`DEFAULT_RACK`].
pub const SCRIPT_TIMEOUT: Duration = Duration::from_secs(30);

/// How many host names one run of the script gets.
const SCRIPT_NUMBER_ARGS_KEY: &str = "net.topology.script.number.args";
/// Hadoop's default for [`SCRIPT_NUMBER_ARGS_KEY`].
const DEFAULT_SCRIPT_NUMBER_ARGS: usize = 100;
/// The table `TableMapping` reads.
const TABLE_FILE_NAME_KEY: &str = "net.topology.table.file.name";

const SCRIPT_MAPPING: &str = "org.apache.hadoop.net.ScriptBasedMapping";
const SCRIPT_MAPPING_WITH_DEPENDENCY: &str =
    "org.apache.hadoop.net.ScriptBasedMappingWithDependency";
const TABLE_MAPPING: &str = "org.apache.hadoop.net.TableMapping";

/// More standard output than this from one run is treated as a failure.
const MAX_SCRIPT_OUTPUT: usize = 1 << 20;
/// How much of a failing script's standard error goes into the warning.
const MAX_STDERR_SHOWN: usize = 2048;

/// Resolves host names to racks. Cheap to clone: clones share the mapping
/// and the cache.
#[derive(Clone)]
pub struct Topology {
    inner: Arc<Inner>,
}

struct Inner {
    mapping: Mapping,
    cache: Mutex<Cache>,
}

#[derive(Default)]
struct Cache {
    racks: HashMap<String, String>,
    /// Bumped by `clear_cache`, so that a resolution that started before the
    /// clear does not put its (possibly outdated) answers back.
    generation: u64,
}

enum Mapping {
    Flat,
    Script(ScriptMapping),
    Table(TableMapping),
}

struct ScriptMapping {
    program: PathBuf,
    max_args: usize,
    timeout: Duration,
}

struct TableMapping {
    path: PathBuf,
    /// The table as last read; `None` before the first resolution.
    table: tokio::sync::Mutex<Option<Arc<HashMap<String, String>>>>,
    /// Set by `clear_cache`: read the file again on the next resolution.
    reload: AtomicBool,
}

impl Topology {
    /// Reads the mapping settings from the RM configuration; errors name the key.
    pub fn from_conf(conf: &Configuration) -> Result<Topology, String> {
        let class = non_blank(conf, NET_TOPOLOGY_NODE_SWITCH_MAPPING_IMPL)
            .unwrap_or_else(|| SCRIPT_MAPPING.to_string());
        match class.as_str() {
            SCRIPT_MAPPING | SCRIPT_MAPPING_WITH_DEPENDENCY => {
                let max_args = script_number_args(conf)?;
                match non_blank(conf, NET_TOPOLOGY_SCRIPT_FILE_NAME) {
                    None => Ok(Topology::flat()),
                    Some(program) => {
                        let program = PathBuf::from(program);
                        warn_if_not_a_file(&program, NET_TOPOLOGY_SCRIPT_FILE_NAME);
                        Ok(Topology::script(program, max_args, SCRIPT_TIMEOUT))
                    }
                }
            }
            TABLE_MAPPING => match non_blank(conf, TABLE_FILE_NAME_KEY) {
                None => {
                    warn!(
                        "{NET_TOPOLOGY_NODE_SWITCH_MAPPING_IMPL} is {TABLE_MAPPING} but \
                         {TABLE_FILE_NAME_KEY} is not set; every host is in {DEFAULT_RACK}"
                    );
                    Ok(Topology::flat())
                }
                Some(path) => {
                    let path = PathBuf::from(path);
                    warn_if_not_a_file(&path, TABLE_FILE_NAME_KEY);
                    Ok(Topology::table(path))
                }
            },
            other => Err(format!(
                "{NET_TOPOLOGY_NODE_SWITCH_MAPPING_IMPL}: unsupported rack mapping '{other}'; \
                 use {SCRIPT_MAPPING} (with {NET_TOPOLOGY_SCRIPT_FILE_NAME}) or \
                 {TABLE_MAPPING} (with {TABLE_FILE_NAME_KEY})"
            )),
        }
    }

    /// Every host `/default-rack`.
    pub fn flat() -> Topology {
        Topology::with_mapping(Mapping::Flat)
    }

    /// Runs `program` with at most `max_args` (at least 1) hosts per run,
    /// killing runs that take longer than `timeout`.
    pub(crate) fn script(program: PathBuf, max_args: usize, timeout: Duration) -> Topology {
        Topology::with_mapping(Mapping::Script(ScriptMapping {
            program,
            max_args: max_args.max(1),
            timeout,
        }))
    }

    /// Looks hosts up in the table file at `path`.
    pub(crate) fn table(path: PathBuf) -> Topology {
        Topology::with_mapping(Mapping::Table(TableMapping {
            path,
            table: tokio::sync::Mutex::new(None),
            reload: AtomicBool::new(false),
        }))
    }

    fn with_mapping(mapping: Mapping) -> Topology {
        Topology {
            inner: Arc::new(Inner {
                mapping,
                cache: Mutex::new(Cache::default()),
            }),
        }
    }

    /// The rack of each host, in order (cached hosts answered without running anything).
    pub async fn resolve(&self, hosts: &[String]) -> Vec<String> {
        if matches!(self.inner.mapping, Mapping::Flat) {
            return vec![DEFAULT_RACK.to_string(); hosts.len()];
        }
        let (mut racks, generation) = {
            let cache = self.cache();
            let racks: Vec<Option<String>> = hosts
                .iter()
                .map(|h| {
                    if h.is_empty() {
                        Some(DEFAULT_RACK.to_string())
                    } else {
                        cache.racks.get(h).cloned()
                    }
                })
                .collect();
            (racks, cache.generation)
        };
        let mut seen = HashSet::new();
        let missing: Vec<&str> = hosts
            .iter()
            .zip(&racks)
            .filter(|(_, rack)| rack.is_none())
            .map(|(host, _)| host.as_str())
            .filter(|host| seen.insert(*host))
            .collect();
        if missing.is_empty() {
            return racks.into_iter().map(Option::unwrap_or_default).collect();
        }

        let answers = match &self.inner.mapping {
            Mapping::Flat => vec![Some(DEFAULT_RACK.to_string()); missing.len()],
            Mapping::Script(script) => script.resolve(&missing).await,
            Mapping::Table(table) => table.resolve(&missing).await,
        };
        let mut found: HashMap<&str, String> = HashMap::with_capacity(missing.len());
        {
            let mut cache = self.cache();
            let current = cache.generation == generation;
            for (host, answer) in missing.iter().zip(answers) {
                match answer {
                    Some(rack) => {
                        if current {
                            cache.racks.insert((*host).to_string(), rack.clone());
                        }
                        found.insert(host, rack);
                    }
                    None => {
                        found.insert(host, DEFAULT_RACK.to_string());
                    }
                }
            }
        }
        for (host, rack) in hosts.iter().zip(racks.iter_mut()) {
            if rack.is_none() {
                *rack = Some(
                    found
                        .get(host.as_str())
                        .cloned()
                        .unwrap_or_else(|| DEFAULT_RACK.to_string()),
                );
            }
        }
        racks.into_iter().map(Option::unwrap_or_default).collect()
    }

    /// Forgets every cached answer; a table mapping also re-reads its file
    /// on the next resolution (keeping the old table if that fails).
    pub fn clear_cache(&self) {
        let mut cache = self.cache();
        cache.racks.clear();
        cache.generation = cache.generation.wrapping_add(1);
        if let Mapping::Table(table) = &self.inner.mapping {
            table.reload.store(true, Ordering::SeqCst);
        }
    }

    /// Human-readable description for the start-up log, e.g. "script /etc/hadoop/topology.sh" or "table /etc/hadoop/topology.table" or "flat (/default-rack)".
    pub fn describe(&self) -> String {
        match &self.inner.mapping {
            Mapping::Flat => format!("flat ({DEFAULT_RACK})"),
            Mapping::Script(script) => format!("script {}", script.program.display()),
            Mapping::Table(table) => format!("table {}", table.path.display()),
        }
    }

    fn cache(&self) -> MutexGuard<'_, Cache> {
        // The cache holds plain data and every update leaves it consistent,
        // so a panic elsewhere while it was locked does not make it unusable.
        self.inner
            .cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl std::fmt::Debug for Topology {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Topology").field(&self.describe()).finish()
    }
}

/// The trimmed value of `key`, `None` when unset or blank.
fn non_blank(conf: &Configuration, key: &str) -> Option<String> {
    conf.get_trimmed(key).filter(|v| !v.is_empty())
}

fn script_number_args(conf: &Configuration) -> Result<usize, String> {
    if non_blank(conf, SCRIPT_NUMBER_ARGS_KEY).is_none() {
        return Ok(DEFAULT_SCRIPT_NUMBER_ARGS);
    }
    let n = conf
        .get_i32(SCRIPT_NUMBER_ARGS_KEY)
        .map_err(|e| e.to_string())?;
    usize::try_from(n).ok().filter(|n| *n >= 1).ok_or_else(|| {
        conf.invalid_value(SCRIPT_NUMBER_ARGS_KEY, "must be at least 1")
            .to_string()
    })
}

/// Start-up hint for a mistyped path; the file is only used later, so its
/// absence is not an error (Hadoop does not check either).
fn warn_if_not_a_file(path: &Path, key: &str) {
    // A bare command name is looked up in PATH when run.
    if path.components().count() <= 1 && !path.is_absolute() {
        return;
    }
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_file() => {}
        Ok(_) => warn!(
            "{key}: {} is not a regular file; hosts will be put in {DEFAULT_RACK}",
            path.display()
        ),
        Err(e) => warn!(
            "{key}: {}: {e}; hosts will be put in {DEFAULT_RACK} until it exists",
            path.display()
        ),
    }
}

/// `raw` as a rack path: a leading `/` added when missing, trailing `/`s
/// removed. `None` when that is not `/` followed by non-empty components.
fn normalize_rack(raw: &str) -> Option<String> {
    let raw = raw.trim();
    let body = raw.strip_prefix('/').unwrap_or(raw).trim_end_matches('/');
    let valid = !body.is_empty()
        && body
            .split('/')
            .all(|c| !c.is_empty() && !c.chars().any(|ch| ch.is_whitespace() || ch.is_control()));
    valid.then(|| format!("/{body}"))
}

/// [`normalize_rack`], falling back to [`DEFAULT_RACK`] with a warning.
fn rack_or_default(host: &str, raw: &str, source: &dyn std::fmt::Display) -> String {
    normalize_rack(raw).unwrap_or_else(|| {
        warn!(
            "{source} gave host {} the invalid rack '{}'; using {DEFAULT_RACK}",
            escaped(host),
            escaped(raw)
        );
        DEFAULT_RACK.to_string()
    })
}

impl ScriptMapping {
    /// One answer per host: `None` when the run covering it failed.
    async fn resolve(&self, hosts: &[&str]) -> Vec<Option<String>> {
        let mut answers = Vec::with_capacity(hosts.len());
        for batch in hosts.chunks(self.max_args) {
            match self.run(batch).await {
                Ok(racks) => {
                    let source = format!("topology script {}", self.program.display());
                    answers.extend(
                        batch
                            .iter()
                            .zip(&racks)
                            .map(|(host, raw)| Some(rack_or_default(host, raw, &source))),
                    );
                }
                Err(problem) => {
                    warn!(
                        "topology script {} failed for {}: {}; using {DEFAULT_RACK} for them",
                        self.program.display(),
                        escaped(&batch.join(" ")),
                        escaped(&problem.to_string())
                    );
                    answers.extend(batch.iter().map(|_| None));
                }
            }
        }
        answers
    }

    /// Runs the script once for `hosts`; its racks, one per host.
    async fn run(&self, hosts: &[&str]) -> Result<Vec<String>, String> {
        let mut command = tokio::process::Command::new(&self.program);
        command
            .args(hosts)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        // Its own process group, so that a run that times out can be killed
        // together with anything it started.
        #[cfg(unix)]
        command.process_group(0);
        // A script being rewritten (or, in a multi-threaded process, an
        // executable whose write handle another thread's fork still holds)
        // cannot be executed for a moment: ETXTBSY. Try again briefly.
        let mut attempts = 0;
        let mut child = loop {
            match command.spawn() {
                Ok(child) => break child,
                Err(e) if e.raw_os_error() == Some(TEXT_FILE_BUSY) && attempts < 20 => {
                    attempts += 1;
                    tokio::time::sleep(Duration::from_millis(25)).await;
                }
                Err(e) => return Err(format!("cannot start it: {e}")),
            }
        };
        let pid = child.id();
        debug!(
            "running topology script {} for {} host(s)",
            self.program.display(),
            hosts.len()
        );
        let stdout = child.stdout.take();
        let stderr = child.stderr.take();
        let finished = tokio::time::timeout(self.timeout, async {
            tokio::join!(
                read_capped(stdout, MAX_SCRIPT_OUTPUT),
                read_capped(stderr, MAX_STDERR_SHOWN),
                child.wait()
            )
        })
        .await;
        let (stdout, stderr, status) = match finished {
            Ok(done) => done,
            Err(_) => {
                if let Some(pid) = pid {
                    kill_process_group(pid).await;
                }
                // Dropping `child` kills it (kill_on_drop) and lets tokio reap it.
                return Err(format!(
                    "no answer within {} ms; killed it",
                    self.timeout.as_millis()
                ));
            }
        };
        let status = status.map_err(|e| format!("cannot wait for it: {e}"))?;
        let (stdout, stdout_overflow) =
            stdout.map_err(|e| format!("cannot read its output: {e}"))?;
        if !status.success() {
            let detail = match stderr {
                Ok((text, truncated)) => {
                    let text = String::from_utf8_lossy(&text);
                    let text = text.trim();
                    match (text.is_empty(), truncated) {
                        (true, _) => String::new(),
                        (false, false) => format!(": {text}"),
                        (false, true) => format!(": {text}..."),
                    }
                }
                Err(_) => String::new(),
            };
            return Err(format!("it exited with {status}{detail}"));
        }
        if stdout_overflow {
            return Err(format!("it printed more than {MAX_SCRIPT_OUTPUT} bytes"));
        }
        let racks: Vec<String> = String::from_utf8_lossy(&stdout)
            .split_whitespace()
            .map(str::to_string)
            .collect();
        if racks.len() != hosts.len() {
            return Err(format!(
                "it printed {} rack(s) for {} host(s)",
                racks.len(),
                hosts.len()
            ));
        }
        Ok(racks)
    }
}

/// Reads `reader` to its end, keeping the first `keep` bytes; also whether
/// there was more. Reading on after `keep` lets the writer finish normally.
async fn read_capped<R: AsyncRead + Unpin>(
    reader: Option<R>,
    keep: usize,
) -> std::io::Result<(Vec<u8>, bool)> {
    let Some(mut reader) = reader else {
        return Ok((Vec::new(), false));
    };
    let mut kept = Vec::new();
    let mut more = false;
    let mut buf = [0u8; 8192];
    loop {
        let n = reader.read(&mut buf).await?;
        if n == 0 {
            return Ok((kept, more));
        }
        let room = keep.saturating_sub(kept.len());
        kept.extend_from_slice(&buf[..n.min(room)]);
        more |= n > room;
    }
}

/// Best effort: SIGKILL the process group `pgid` (the script and whatever it
/// started). The script itself is also killed when its handle is dropped.
async fn kill_process_group(pgid: u32) {
    #[cfg(unix)]
    {
        let result = tokio::process::Command::new("kill")
            .args(["-s", "KILL", "--", &format!("-{pgid}")])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .status();
        match tokio::time::timeout(Duration::from_secs(5), result).await {
            Ok(Ok(status)) if status.success() => {}
            Ok(Ok(status)) => debug!("kill of process group {pgid} exited with {status}"),
            Ok(Err(e)) => debug!("cannot run kill for process group {pgid}: {e}"),
            Err(_) => debug!("kill of process group {pgid} did not finish"),
        }
    }
    #[cfg(not(unix))]
    let _ = pgid;
}

impl TableMapping {
    /// One answer per host: its rack in the table, else [`DEFAULT_RACK`].
    async fn resolve(&self, hosts: &[&str]) -> Vec<Option<String>> {
        let table = self.current().await;
        hosts
            .iter()
            .map(|host| {
                Some(
                    table
                        .get(*host)
                        .cloned()
                        .unwrap_or_else(|| DEFAULT_RACK.to_string()),
                )
            })
            .collect()
    }

    /// The table, read on first use and after a reload was asked for.
    async fn current(&self) -> Arc<HashMap<String, String>> {
        let mut slot = self.table.lock().await;
        let reload = self.reload.swap(false, Ordering::SeqCst);
        match (slot.as_ref(), reload) {
            (Some(table), false) => return table.clone(),
            (None, _) => {
                let table = match self.load().await {
                    Ok(table) => table,
                    Err(e) => {
                        warn!(
                            "cannot read topology table {} ({TABLE_FILE_NAME_KEY}): {e}; \
                             every host is in {DEFAULT_RACK}",
                            self.path.display()
                        );
                        HashMap::new()
                    }
                };
                *slot = Some(Arc::new(table));
            }
            (Some(_), true) => match self.load().await {
                Ok(table) => *slot = Some(Arc::new(table)),
                Err(e) => warn!(
                    "cannot re-read topology table {} ({TABLE_FILE_NAME_KEY}): {e}; \
                     keeping the table read before",
                    self.path.display()
                ),
            },
        }
        slot.clone().unwrap_or_default()
    }

    async fn load(&self) -> std::io::Result<HashMap<String, String>> {
        let bytes = tokio::fs::read(&self.path).await?;
        let text = String::from_utf8_lossy(&bytes);
        let table = parse_table(&text, &self.path);
        debug!(
            "read {} host(s) from topology table {}",
            table.len(),
            self.path.display()
        );
        Ok(table)
    }
}

/// The `host rack` pairs of a topology table; later lines win.
fn parse_table(text: &str, path: &Path) -> HashMap<String, String> {
    let mut table = HashMap::new();
    for (index, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let columns: Vec<&str> = line.split_whitespace().collect();
        let [host, rack] = columns[..] else {
            warn!(
                "{}:{}: expected 'host rack', ignoring: {line}",
                path.display(),
                index + 1
            );
            continue;
        };
        match normalize_rack(rack) {
            Some(rack) => {
                table.insert(host.to_string(), rack);
            }
            None => warn!(
                "{}:{}: invalid rack '{rack}' for {host}; it will be in {DEFAULT_RACK}",
                path.display(),
                index + 1
            ),
        }
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    fn fixture(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/topology")
            .join(name)
    }

    /// A temporary directory holding an executable copy of fixture `name`.
    fn script_copy(name: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        let path = dir.path().join(name);
        install_script(name, &path);
        (dir, path)
    }

    fn install_script(name: &str, path: &Path) {
        // Write a new file rather than overwrite in place, so that replacing
        // a script cannot hit "text file busy".
        let staged = path.with_extension("staged");
        std::fs::copy(fixture(name), &staged).unwrap_or_else(|e| panic!("copy {name}: {e}"));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&staged, std::fs::Permissions::from_mode(0o755))
                .unwrap_or_else(|e| panic!("chmod {name}: {e}"));
        }
        std::fs::rename(&staged, path).unwrap_or_else(|e| panic!("rename {name}: {e}"));
    }

    fn invocations(dir: &Path) -> Vec<String> {
        match std::fs::read_to_string(dir.join("invocations.log")) {
            Ok(text) => text.lines().map(str::to_string).collect(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => panic!("invocations.log: {e}"),
        }
    }

    fn hosts(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    fn conf(pairs: &[(&str, &str)]) -> Configuration {
        let mut conf = Configuration::empty();
        for (k, v) in pairs {
            conf.set(k, *v);
        }
        conf
    }

    #[test]
    fn normalization() {
        assert_eq!(normalize_rack("rack1").as_deref(), Some("/rack1"));
        assert_eq!(normalize_rack("/r/").as_deref(), Some("/r"));
        assert_eq!(
            normalize_rack("/dc1/rack2//").as_deref(),
            Some("/dc1/rack2")
        );
        assert_eq!(normalize_rack(" /r ").as_deref(), Some("/r"));
        assert_eq!(
            normalize_rack("/default-rack").as_deref(),
            Some(DEFAULT_RACK)
        );
        for bad in ["", "/", "//", "/a//b", "/a\u{7}b"] {
            assert_eq!(normalize_rack(bad), None, "{bad:?}");
        }
    }

    #[tokio::test]
    async fn script_maps_hosts_in_one_run_and_normalizes() {
        let (dir, script) = script_copy("by-prefix.sh");
        let topology = Topology::script(script.clone(), 100, SCRIPT_TIMEOUT);
        assert_eq!(topology.describe(), format!("script {}", script.display()));
        let racks = topology
            .resolve(&hosts(&[
                "a1", "b1", "c1", "bare", "trailing", "root", "double", "a2",
            ]))
            .await;
        assert_eq!(
            racks,
            [
                "/rack-a",
                "/rack-b",
                "/rack-other",
                "/rack1",
                "/r",
                DEFAULT_RACK,
                DEFAULT_RACK,
                "/rack-a"
            ]
        );
        assert_eq!(
            invocations(dir.path()),
            ["a1 b1 c1 bare trailing root double a2"]
        );
    }

    #[tokio::test]
    async fn script_runs_in_batches_of_number_args() {
        let (dir, script) = script_copy("by-prefix.sh");
        let topology = Topology::script(script, 2, SCRIPT_TIMEOUT);
        let racks = topology
            .resolve(&hosts(&["a1", "b1", "c1", "a2", "b2"]))
            .await;
        assert_eq!(
            racks,
            ["/rack-a", "/rack-b", "/rack-other", "/rack-a", "/rack-b"]
        );
        assert_eq!(invocations(dir.path()), ["a1 b1", "c1 a2", "b2"]);
    }

    #[tokio::test]
    async fn answers_are_cached_until_cleared() {
        let (dir, script) = script_copy("by-prefix.sh");
        let topology = Topology::script(script, 100, SCRIPT_TIMEOUT);
        let first = topology.resolve(&hosts(&["a1", "b1"])).await;
        assert_eq!(first, ["/rack-a", "/rack-b"]);
        assert_eq!(invocations(dir.path()).len(), 1);

        // All cached (also through a clone): nothing runs.
        let again = topology.clone().resolve(&hosts(&["b1", "a1", "b1"])).await;
        assert_eq!(again, ["/rack-b", "/rack-a", "/rack-b"]);
        assert_eq!(invocations(dir.path()).len(), 1);

        // Only the new host is asked about, once despite the duplicate.
        let mixed = topology.resolve(&hosts(&["a1", "c1", "c1"])).await;
        assert_eq!(mixed, ["/rack-a", "/rack-other", "/rack-other"]);
        assert_eq!(invocations(dir.path()), ["a1 b1", "c1"]);

        topology.clear_cache();
        let after_clear = topology.resolve(&hosts(&["a1"])).await;
        assert_eq!(after_clear, ["/rack-a"]);
        assert_eq!(invocations(dir.path()), ["a1 b1", "c1", "a1"]);

        assert!(topology.resolve(&[]).await.is_empty());
        assert_eq!(invocations(dir.path()).len(), 3);
    }

    #[tokio::test]
    async fn failing_script_falls_back_without_caching() {
        let (dir, script) = script_copy("fail.sh");
        let topology = Topology::script(script.clone(), 100, SCRIPT_TIMEOUT);
        let racks = topology.resolve(&hosts(&["a1", "b1"])).await;
        assert_eq!(racks, [DEFAULT_RACK, DEFAULT_RACK]);

        // The failure was not cached: once the script works, it is asked again.
        install_script("by-prefix.sh", &script);
        let racks = topology.resolve(&hosts(&["a1", "b1"])).await;
        assert_eq!(racks, ["/rack-a", "/rack-b"]);
        assert_eq!(invocations(dir.path()), ["a1 b1"]);
    }

    #[tokio::test]
    async fn only_the_failing_batch_falls_back() {
        let (dir, script) = script_copy("by-prefix.sh");
        let topology = Topology::script(script.clone(), 2, SCRIPT_TIMEOUT);
        assert_eq!(topology.resolve(&hosts(&["a1"])).await, ["/rack-a"]);
        install_script("short.sh", &script);
        // Batches: [b1 c1] gets one rack for two hosts, [a2] is fine.
        let racks = topology.resolve(&hosts(&["a1", "b1", "c1", "a2"])).await;
        assert_eq!(
            racks,
            ["/rack-a", DEFAULT_RACK, DEFAULT_RACK, "/rack-short"]
        );
        assert_eq!(invocations(dir.path()), ["a1"]);
    }

    #[tokio::test]
    async fn script_printing_too_few_racks_falls_back() {
        let (_dir, script) = script_copy("short.sh");
        let topology = Topology::script(script, 100, SCRIPT_TIMEOUT);
        let racks = topology.resolve(&hosts(&["a1", "b1", "c1"])).await;
        assert_eq!(racks, [DEFAULT_RACK, DEFAULT_RACK, DEFAULT_RACK]);
        // One host, one rack: that is a valid answer.
        assert_eq!(topology.resolve(&hosts(&["a1"])).await, ["/rack-short"]);
    }

    #[tokio::test]
    async fn missing_script_falls_back() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        let topology = Topology::script(dir.path().join("absent.sh"), 100, SCRIPT_TIMEOUT);
        let racks = topology.resolve(&hosts(&["a1"])).await;
        assert_eq!(racks, [DEFAULT_RACK]);
    }

    #[tokio::test]
    async fn hanging_script_times_out_without_blocking_the_runtime() {
        let (dir, script) = script_copy("hang.sh");
        let timeout = Duration::from_millis(1500);
        let topology = Topology::script(script, 100, timeout);
        let start = Instant::now();
        let names = hosts(&["a1", "b1"]);
        let resolution = topology.resolve(&names);
        tokio::pin!(resolution);
        // On this single-threaded runtime a timer firing first shows that the
        // script is waited for asynchronously.
        tokio::select! {
            racks = &mut resolution => panic!("a hanging script answered: {racks:?}"),
            () = tokio::time::sleep(Duration::from_millis(200)) => {}
        }
        let racks = resolution.await;
        let elapsed = start.elapsed();
        assert_eq!(racks, [DEFAULT_RACK, DEFAULT_RACK]);
        assert!(elapsed >= timeout, "{elapsed:?}");
        assert!(elapsed < timeout + Duration::from_secs(10), "{elapsed:?}");

        // The script's own child was killed with it.
        #[cfg(target_os = "linux")]
        {
            let pid = std::fs::read_to_string(dir.path().join("sleeper.pid"))
                .unwrap_or_else(|e| panic!("sleeper.pid: {e}"));
            let pid = pid.trim();
            let alive = || {
                std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .map(|stat| {
                        // The state follows the parenthesized command name.
                        let state = stat.rsplit(')').next().unwrap_or("").trim_start();
                        !state.starts_with('Z') && !state.starts_with('X')
                    })
                    .unwrap_or(false)
            };
            let deadline = Instant::now() + Duration::from_secs(5);
            while alive() && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            assert!(!alive(), "the script's child {pid} is still running");
        }
        #[cfg(not(target_os = "linux"))]
        drop(dir);
    }

    #[tokio::test]
    async fn table_lookups() {
        let topology = Topology::table(fixture("topology.table"));
        assert_eq!(
            topology.describe(),
            format!("table {}", fixture("topology.table").display())
        );
        let racks = topology
            .resolve(&hosts(&[
                "host1",
                "host2",
                "host3",
                "host4",
                "lonely-host",
                "host5",
                "host6",
                "10.0.0.7",
                "unknown",
                "#",
            ]))
            .await;
        assert_eq!(
            racks,
            [
                "/rack1",
                "/rack2",
                "/rack3",
                DEFAULT_RACK,
                DEFAULT_RACK,
                DEFAULT_RACK,
                "/rack6-later",
                "/rack7",
                DEFAULT_RACK,
                DEFAULT_RACK
            ]
        );
    }

    #[tokio::test]
    async fn missing_table_puts_everyone_in_the_default_rack() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        let path = dir.path().join("topology.table");
        let topology = Topology::table(path.clone());
        let racks = topology.resolve(&hosts(&["host1", "host2"])).await;
        assert_eq!(racks, [DEFAULT_RACK, DEFAULT_RACK]);

        // Like Hadoop, a failed first read is not retried until a reload.
        std::fs::write(&path, "host1 /r1\n").unwrap_or_else(|e| panic!("write: {e}"));
        assert_eq!(topology.resolve(&hosts(&["host2"])).await, [DEFAULT_RACK]);
        topology.clear_cache();
        assert_eq!(topology.resolve(&hosts(&["host1"])).await, ["/r1"]);
    }

    #[tokio::test]
    async fn table_is_read_lazily_and_reloaded_on_clear() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        let path = dir.path().join("topology.table");
        // Created after the mapping: the file is only read on first use.
        let topology = Topology::table(path.clone());
        std::fs::write(&path, "host1 /r1\nhost2 /r2\n").unwrap_or_else(|e| panic!("write: {e}"));
        assert_eq!(topology.resolve(&hosts(&["host1"])).await, ["/r1"]);

        std::fs::write(&path, "host1 /r1-new\nhost2 /r2-new\n")
            .unwrap_or_else(|e| panic!("write: {e}"));
        // Cached host keeps its answer; the table itself is not re-read yet.
        assert_eq!(
            topology.resolve(&hosts(&["host1", "host2"])).await,
            ["/r1", "/r2"]
        );
        topology.clear_cache();
        assert_eq!(
            topology.resolve(&hosts(&["host1", "host2"])).await,
            ["/r1-new", "/r2-new"]
        );

        // A reload that fails keeps the table read before.
        std::fs::remove_file(&path).unwrap_or_else(|e| panic!("remove: {e}"));
        topology.clear_cache();
        assert_eq!(topology.resolve(&hosts(&["host2"])).await, ["/r2-new"]);
    }

    #[tokio::test]
    async fn flat_answers_default_rack() {
        let topology = Topology::flat();
        assert_eq!(topology.describe(), "flat (/default-rack)");
        assert_eq!(
            topology.resolve(&hosts(&["a", "b"])).await,
            [DEFAULT_RACK, DEFAULT_RACK]
        );
    }

    #[tokio::test]
    async fn from_conf_choices() {
        // Built-in defaults: ScriptBasedMapping without a script.
        let topology =
            Topology::from_conf(&Configuration::with_defaults()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(topology.describe(), "flat (/default-rack)");
        let topology =
            Topology::from_conf(&Configuration::empty()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(topology.describe(), "flat (/default-rack)");
        let topology = Topology::from_conf(&conf(&[
            (NET_TOPOLOGY_NODE_SWITCH_MAPPING_IMPL, SCRIPT_MAPPING),
            (NET_TOPOLOGY_SCRIPT_FILE_NAME, "  "),
        ]))
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(topology.describe(), "flat (/default-rack)");

        let (dir, script) = script_copy("by-prefix.sh");
        let topology = Topology::from_conf(&conf(&[
            (NET_TOPOLOGY_SCRIPT_FILE_NAME, &script.display().to_string()),
            (SCRIPT_NUMBER_ARGS_KEY, "1"),
        ]))
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(topology.describe(), format!("script {}", script.display()));
        assert_eq!(
            topology.resolve(&hosts(&["a1", "b1"])).await,
            ["/rack-a", "/rack-b"]
        );
        assert_eq!(invocations(dir.path()), ["a1", "b1"]);

        let topology = Topology::from_conf(&conf(&[
            (
                NET_TOPOLOGY_NODE_SWITCH_MAPPING_IMPL,
                " org.apache.hadoop.net.TableMapping ",
            ),
            (
                TABLE_FILE_NAME_KEY,
                &fixture("topology.table").display().to_string(),
            ),
        ]))
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            topology.describe(),
            format!("table {}", fixture("topology.table").display())
        );
        assert_eq!(topology.resolve(&hosts(&["host1"])).await, ["/rack1"]);

        // TableMapping without a table: everyone in the default rack.
        let topology = Topology::from_conf(&conf(&[(
            NET_TOPOLOGY_NODE_SWITCH_MAPPING_IMPL,
            TABLE_MAPPING,
        )]))
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(topology.describe(), "flat (/default-rack)");
    }

    #[test]
    fn from_conf_errors_name_the_key() {
        for (pairs, key) in [
            (
                vec![(
                    NET_TOPOLOGY_NODE_SWITCH_MAPPING_IMPL,
                    "org.example.RackAwareThing",
                )],
                NET_TOPOLOGY_NODE_SWITCH_MAPPING_IMPL,
            ),
            (
                vec![(SCRIPT_NUMBER_ARGS_KEY, "many")],
                SCRIPT_NUMBER_ARGS_KEY,
            ),
            (vec![(SCRIPT_NUMBER_ARGS_KEY, "0")], SCRIPT_NUMBER_ARGS_KEY),
            (
                vec![
                    (NET_TOPOLOGY_SCRIPT_FILE_NAME, "/etc/hadoop/topology.sh"),
                    (SCRIPT_NUMBER_ARGS_KEY, "-5"),
                ],
                SCRIPT_NUMBER_ARGS_KEY,
            ),
        ] {
            match Topology::from_conf(&conf(&pairs)) {
                Ok(t) => panic!("{pairs:?} accepted: {}", t.describe()),
                Err(e) => assert!(e.contains(key), "{pairs:?}: {e}"),
            }
        }
        let err = Topology::from_conf(&conf(&[(
            NET_TOPOLOGY_NODE_SWITCH_MAPPING_IMPL,
            "org.example.RackAwareThing",
        )]))
        .err()
        .unwrap_or_default();
        assert!(err.contains("org.example.RackAwareThing"), "{err}");
    }
}
