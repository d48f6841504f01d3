//! What a scheduler configuration file gives the RM ([`QueueFile`]) and
//! what is wrong with one ([`QueueFileError`]).

use std::fmt;
use std::path::PathBuf;

use spindle_common::conf::ConfError;
use spindle_scheduler::{HeartbeatAssignment, LocalityDelay, QueueTreeConfig};

use super::placement::Placement;

/// Everything the RM needs from the scheduler's configuration files.
#[derive(Debug, Clone, PartialEq)]
pub struct QueueFile {
    pub tree: QueueTreeConfig,
    pub placement: Placement,
    pub locality: LocalityDelay,
    pub heartbeat: HeartbeatAssignment,
    /// The file that was read, if any (for messages).
    pub source: Option<PathBuf>,
}

impl QueueFile {
    /// Hadoop's FIFO scheduler: `root.default` only, every application
    /// placed there, no delay scheduling, no per-heartbeat caps.
    pub fn fifo() -> QueueFile {
        QueueFile {
            tree: QueueTreeConfig::fifo(),
            placement: Placement::fifo(),
            locality: LocalityDelay::Off,
            heartbeat: HeartbeatAssignment::default(),
            source: None,
        }
    }
}

/// A problem in a scheduler configuration file.
///
/// Displays as `<file>: queue <queue>: <key>: <reason>`, leaving out the
/// parts that are not known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueFileError {
    /// The file, with `:line` when the offending value's line is known
    /// (`/etc/hadoop/capacity-scheduler.xml:42`).
    pub file: String,
    /// Full path of the queue concerned (`root.eng.etl`).
    pub queue: Option<String>,
    /// The configuration key (capacity scheduler) or XML element (fair
    /// scheduler) at fault.
    pub key: Option<String>,
    pub reason: String,
}

impl QueueFileError {
    pub(crate) fn new(file: impl Into<String>, reason: impl Into<String>) -> QueueFileError {
        QueueFileError {
            file: file.into(),
            queue: None,
            key: None,
            reason: reason.into(),
        }
    }

    pub(crate) fn in_queue(mut self, queue: impl Into<String>) -> QueueFileError {
        self.queue = Some(queue.into());
        self
    }

    pub(crate) fn at_key(mut self, key: impl Into<String>) -> QueueFileError {
        self.key = Some(key.into());
        self
    }

    /// Converts an error of the configuration layer, keeping the file and
    /// line it names.
    pub(crate) fn from_conf(fallback_file: &str, err: ConfError) -> QueueFileError {
        match err {
            ConfError::InvalidValue {
                origin,
                key,
                value,
                problem,
            } => QueueFileError::new(origin.to_string(), format!("value '{value}' {problem}"))
                .at_key(key),
            ConfError::Xml {
                resource,
                line,
                column,
                message,
            } => QueueFileError::new(
                format!("{resource}:{line}:{column}"),
                format!("malformed XML: {message}"),
            ),
            ConfError::Io { path, source } => QueueFileError::new(
                path.display().to_string(),
                format!("cannot read the file: {source}"),
            ),
            other => QueueFileError::new(fallback_file, other.to_string()),
        }
    }
}

impl fmt::Display for QueueFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.file)?;
        if let Some(queue) = &self.queue {
            write!(f, ": queue {queue}")?;
        }
        if let Some(key) = &self.key {
            write!(f, ": {key}")?;
        }
        write!(f, ": {}", self.reason)
    }
}

impl std::error::Error for QueueFileError {}

/// Parses a float the way Java's `Float.parseFloat` reads configuration
/// values: decimal text with an optional `f`/`d` suffix, surrounding
/// whitespace ignored. Parsed directly as `f32` so that arithmetic done
/// in Hadoop's single precision gives Hadoop's results.
pub(crate) fn java_float(text: &str) -> Option<f32> {
    let text = text.trim();
    text.parse::<f32>().ok().or_else(|| {
        text.strip_suffix(['f', 'F', 'd', 'D'])
            .filter(|rest| rest.ends_with(|c: char| c.is_ascii_digit() || c == '.'))
            .and_then(|rest| rest.parse::<f32>().ok())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_display_leaves_out_unknown_parts() {
        let full = QueueFileError::new("/etc/hadoop/capacity-scheduler.xml:12", "must be 0..100")
            .in_queue("root.a")
            .at_key("yarn.scheduler.capacity.root.a.capacity");
        assert_eq!(
            full.to_string(),
            "/etc/hadoop/capacity-scheduler.xml:12: queue root.a: \
             yarn.scheduler.capacity.root.a.capacity: must be 0..100"
        );
        let bare = QueueFileError::new(
            "fair-scheduler.xml",
            "top-level element is not <allocations>",
        );
        assert_eq!(
            bare.to_string(),
            "fair-scheduler.xml: top-level element is not <allocations>"
        );
        let key_only = QueueFileError::new("f", "r").at_key("k");
        assert_eq!(key_only.to_string(), "f: k: r");
    }

    #[test]
    fn java_floats() {
        assert_eq!(java_float(" 40 "), Some(40.0));
        assert_eq!(java_float("12.5f"), Some(12.5));
        assert_eq!(java_float("-1"), Some(-1.0));
        assert_eq!(java_float("lots"), None);
        assert_eq!(java_float("f"), None);
    }
}
