//! The shuffle's settings, from Hadoop's keys.

use std::path::PathBuf;
use std::time::Duration;

use spindle_common::Configuration;

use crate::ShuffleError;

/// `ShuffleHandler.SHUFFLE_PORT_CONFIG_KEY` and its default.
pub const PORT_KEY: &str = "mapreduce.shuffle.port";
pub const DEFAULT_PORT: u16 = 13562;
/// 0 = no limit, as in Hadoop.
pub const MAX_CONNECTIONS_KEY: &str = "mapreduce.shuffle.max.connections";
pub const KEEP_ALIVE_ENABLED_KEY: &str = "mapreduce.shuffle.connection-keep-alive.enable";
pub const KEEP_ALIVE_TIMEOUT_KEY: &str = "mapreduce.shuffle.connection-keep-alive.timeout";
pub const TRANSFER_BUFFER_SIZE_KEY: &str = "mapreduce.shuffle.transfer.buffer.size";
/// Hadoop's: send map outputs with the kernel's zero-copy `sendfile` (`transferTo`, true
/// by default on Linux), else through the transfer buffer.
pub const TRANSFER_TO_ALLOWED_KEY: &str = "mapreduce.shuffle.transferTo.allowed";
pub const LISTEN_QUEUE_SIZE_KEY: &str = "mapreduce.shuffle.listen.queue.size";
/// Read and checked for Hadoop's sake; the server runs on the NodeManager's own runtime.
pub const MAX_THREADS_KEY: &str = "mapreduce.shuffle.max.threads";
/// `TTConfig.TT_INDEX_CACHE`: megabytes of index files kept in memory (10).
pub const INDEX_CACHE_MB_KEY: &str = "mapreduce.tasktracker.indexcache.mb";
/// Spindle's: the address the shuffle binds (Hadoop binds the wildcard address).
pub const BIND_HOST_KEY: &str = "spindle.shuffle.bind-host";
/// Spindle's: how long a connection may take to send its first request head.
pub const REQUEST_TIMEOUT_KEY: &str = "spindle.shuffle.request.timeout.ms";
/// Spindle's: how long one write to a reducer may make no progress before the connection is
/// dropped. The default is the reducer's own read timeout
/// (`mapreduce.reduce.shuffle.read.timeout`, 180000 ms).
pub const WRITE_TIMEOUT_KEY: &str = "spindle.shuffle.write.timeout.ms";

/// Spindle's: the bytes of transfer buffers all connections may hold together (64 MiB);
/// a request waits for a buffer when they are all in use.
pub const MAX_BUFFER_BYTES_KEY: &str = "spindle.shuffle.max.buffer.bytes";
/// Hadoop's encrypted shuffle (`MRConfig.SHUFFLE_SSL_ENABLED_KEY`), which Spindle does not
/// serve: configured, the shuffle refuses to start rather than answer in plain text.
pub const SSL_ENABLED_KEY: &str = "mapreduce.shuffle.ssl.enabled";

/// Bounds of the transfer buffer (one per connection that is sending).
const MIN_BUFFER: usize = 4 * 1024;
const MAX_BUFFER: usize = 16 * 1024 * 1024;

/// How the shuffle server runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShuffleConfig {
    /// The address to bind (`0.0.0.0` by default, as Hadoop's `new InetSocketAddress(port)`).
    pub bind_host: String,
    /// `mapreduce.shuffle.port` (13562); 0 picks a free port.
    pub port: u16,
    /// The NodeManager's local dirs (`yarn.nodemanager.local-dirs`), searched in order.
    pub local_dirs: Vec<PathBuf>,
    /// `mapreduce.shuffle.max.connections`: open connections at most; 0 = no limit.
    pub max_connections: usize,
    /// `mapreduce.shuffle.connection-keep-alive.enable` (false).
    pub keep_alive_enabled: bool,
    /// `mapreduce.shuffle.connection-keep-alive.timeout` (5 s, at least 1 s).
    pub keep_alive_timeout: Duration,
    /// `mapreduce.shuffle.transfer.buffer.size` (128 KiB), clamped to 4 KiB..=16 MiB.
    pub transfer_buffer_size: usize,
    /// `mapreduce.shuffle.transferTo.allowed` (true): file ranges go out with `sendfile`.
    pub transfer_to: bool,
    /// `mapreduce.shuffle.listen.queue.size` (128).
    pub listen_queue_size: u32,
    /// `mapreduce.tasktracker.indexcache.mb` (10) in bytes.
    pub index_cache_bytes: usize,
    /// Spindle's bound on all transfer buffers together (64 MiB).
    pub max_buffer_bytes: usize,
    /// Where job tokens are kept across NodeManager restarts (Hadoop's recovery path,
    /// `<yarn.nodemanager.recovery.dir>/<service name>`, set by the NodeManager when
    /// `yarn.nodemanager.recovery.enabled`); `None` keeps them in memory only.
    pub recovery_dir: Option<PathBuf>,
    /// Spindle's first-request deadline (60 s).
    pub request_timeout: Duration,
    /// Spindle's write stall deadline (180 s).
    pub write_timeout: Duration,
}

impl ShuffleConfig {
    /// Defaults as Hadoop's, for the given local dirs.
    pub fn new(local_dirs: Vec<PathBuf>) -> ShuffleConfig {
        ShuffleConfig {
            bind_host: "0.0.0.0".to_string(),
            port: DEFAULT_PORT,
            local_dirs,
            max_connections: 0,
            keep_alive_enabled: false,
            keep_alive_timeout: Duration::from_secs(5),
            transfer_buffer_size: 128 * 1024,
            transfer_to: true,
            listen_queue_size: 128,
            max_buffer_bytes: 64 * 1024 * 1024,
            index_cache_bytes: 10 * 1024 * 1024,
            recovery_dir: None,
            request_timeout: Duration::from_secs(60),
            write_timeout: Duration::from_secs(180),
        }
    }

    /// Reads Hadoop's `mapreduce.shuffle.*` keys (and Spindle's `spindle.shuffle.*`).
    pub fn from_conf(
        conf: &Configuration,
        local_dirs: Vec<PathBuf>,
    ) -> Result<ShuffleConfig, ShuffleError> {
        let mut c = ShuffleConfig::new(local_dirs);
        let int = |key: &str, default: i64| -> Result<i64, ShuffleError> {
            match conf.get_trimmed(key) {
                None => Ok(default),
                Some(v) if v.is_empty() => Ok(default),
                Some(_) => conf
                    .get_i32(key)
                    .map(i64::from)
                    .map_err(|e| ShuffleError::Config(e.to_string())),
            }
        };
        let long = |key: &str, default: i64| -> Result<i64, ShuffleError> {
            match conf.get_trimmed(key) {
                None => Ok(default),
                Some(v) if v.is_empty() => Ok(default),
                Some(_) => conf
                    .get_i64(key)
                    .map_err(|e| ShuffleError::Config(e.to_string())),
            }
        };
        let bad = |key: &str, problem: &str| {
            ShuffleError::Config(conf.invalid_value(key, problem).to_string())
        };
        let flag = |key: &str| -> Result<bool, ShuffleError> {
            match conf.get_trimmed(key) {
                None => Ok(false),
                Some(v) if v.is_empty() => Ok(false),
                Some(_) => conf
                    .get_bool(key)
                    .map_err(|e| ShuffleError::Config(e.to_string())),
            }
        };
        if flag(SSL_ENABLED_KEY)? {
            return Err(bad(
                SSL_ENABLED_KEY,
                "asks for the encrypted shuffle, which Spindle's mapreduce_shuffle does not serve",
            ));
        }
        let port = int(PORT_KEY, i64::from(DEFAULT_PORT))?;
        c.port = u16::try_from(port).map_err(|_| bad(PORT_KEY, "is not a port (0..=65535)"))?;
        // Hadoop treats any value <= 0 as no limit.
        c.max_connections = usize::try_from(int(MAX_CONNECTIONS_KEY, 0)?.max(0)).unwrap_or(0);
        c.keep_alive_enabled = flag(KEEP_ALIVE_ENABLED_KEY)?;
        let secs = int(KEEP_ALIVE_TIMEOUT_KEY, 5)?.max(1);
        c.keep_alive_timeout = Duration::from_secs(secs.unsigned_abs());
        let buffer = int(TRANSFER_BUFFER_SIZE_KEY, 128 * 1024)?;
        c.transfer_buffer_size = usize::try_from(buffer)
            .unwrap_or(MIN_BUFFER)
            .clamp(MIN_BUFFER, MAX_BUFFER);
        if conf
            .get_trimmed(TRANSFER_TO_ALLOWED_KEY)
            .is_some_and(|v| !v.is_empty())
        {
            c.transfer_to = flag(TRANSFER_TO_ALLOWED_KEY)?;
        }
        let backlog = int(LISTEN_QUEUE_SIZE_KEY, 128)?;
        c.listen_queue_size = u32::try_from(backlog.max(1)).unwrap_or(128);
        // Checked only: an int, as Hadoop's conf.getInt.
        int(MAX_THREADS_KEY, 0)?;
        if let Some(host) = conf.get_trimmed(BIND_HOST_KEY).filter(|h| !h.is_empty()) {
            c.bind_host = host;
        }
        let mb = int(INDEX_CACHE_MB_KEY, 10)?;
        if mb < 0 {
            return Err(bad(INDEX_CACHE_MB_KEY, "must not be negative"));
        }
        c.index_cache_bytes = usize::try_from(mb).unwrap_or(0).saturating_mul(1024 * 1024);
        let budget = long(MAX_BUFFER_BYTES_KEY, 64 * 1024 * 1024)?;
        if budget <= 0 {
            return Err(bad(MAX_BUFFER_BYTES_KEY, "must be positive"));
        }
        c.max_buffer_bytes = usize::try_from(budget).unwrap_or(usize::MAX);
        let ms = long(REQUEST_TIMEOUT_KEY, 60_000)?;
        if ms <= 0 {
            return Err(bad(REQUEST_TIMEOUT_KEY, "must be positive"));
        }
        c.request_timeout = Duration::from_millis(ms.unsigned_abs());
        let ms = long(WRITE_TIMEOUT_KEY, 180_000)?;
        if ms <= 0 {
            return Err(bad(WRITE_TIMEOUT_KEY, "must be positive"));
        }
        c.write_timeout = Duration::from_millis(ms.unsigned_abs());
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_hadoops() {
        let c = ShuffleConfig::from_conf(&Configuration::empty(), vec![PathBuf::from("/l")])
            .expect("defaults");
        assert_eq!(c, ShuffleConfig::new(vec![PathBuf::from("/l")]));
        assert_eq!(c.port, 13562);
        assert_eq!(c.max_connections, 0);
        assert!(!c.keep_alive_enabled);
        assert_eq!(c.keep_alive_timeout, Duration::from_secs(5));
        assert!(c.transfer_to);
        assert_eq!(c.transfer_buffer_size, 131072);
    }

    #[test]
    fn reads_the_keys() {
        let mut conf = Configuration::empty();
        conf.set(PORT_KEY, "0");
        conf.set(MAX_CONNECTIONS_KEY, "7");
        conf.set(KEEP_ALIVE_ENABLED_KEY, "true");
        conf.set(KEEP_ALIVE_TIMEOUT_KEY, "0");
        conf.set(TRANSFER_BUFFER_SIZE_KEY, "1");
        conf.set(BIND_HOST_KEY, "127.0.0.1");
        conf.set(TRANSFER_TO_ALLOWED_KEY, "false");
        let c = ShuffleConfig::from_conf(&conf, Vec::new()).expect("conf");
        assert!(!c.transfer_to);
        assert_eq!(c.port, 0);
        assert_eq!(c.max_connections, 7);
        assert!(c.keep_alive_enabled);
        assert_eq!(c.keep_alive_timeout, Duration::from_secs(1));
        assert_eq!(c.transfer_buffer_size, 4096);
        assert_eq!(c.bind_host, "127.0.0.1");
        conf.set(MAX_CONNECTIONS_KEY, "-3");
        let c = ShuffleConfig::from_conf(&conf, Vec::new()).expect("conf");
        assert_eq!(c.max_connections, 0);
    }

    #[test]
    fn refuses_bad_values_naming_the_key() {
        for (key, value) in [
            (PORT_KEY, "70000"),
            (PORT_KEY, "x"),
            (KEEP_ALIVE_ENABLED_KEY, "maybe"),
            (REQUEST_TIMEOUT_KEY, "0"),
            (MAX_BUFFER_BYTES_KEY, "-1"),
            (SSL_ENABLED_KEY, "true"),
        ] {
            let mut conf = Configuration::empty();
            conf.set(key, value);
            let e = ShuffleConfig::from_conf(&conf, Vec::new()).expect_err(key);
            assert!(e.to_string().contains(key), "{e}");
        }
    }
}
