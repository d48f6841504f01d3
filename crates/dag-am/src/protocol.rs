//! The session protocol: newline-delimited JSON over one TCP port of the AM.
//!
//! A connection starts with a [`Hello`] line carrying the session secret.
//! A client then sends [`ClientRequest`] lines and gets one
//! [`ClientResponse`] line for each; a worker registers with its hello and
//! then receives [`AmToWorker`] lines and sends [`WorkerToAm`] lines for as
//! long as it runs. Every line is one JSON value, at most
//! [`MAX_LINE_BYTES`] long.

use serde::{Deserialize, Serialize};
use spindle_dag::{AttemptId, DagId, TaskId};
use subtle::ConstantTimeEq;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt};

use crate::dagfile::DagFile;

/// Longest line either side accepts (a DAG file travels in one line).
pub const MAX_LINE_BYTES: usize = 8 * 1024 * 1024;

/// The environment variable holding the session secret (AM, workers, and
/// optionally clients).
pub const SECRET_ENV: &str = "SPINDLE_DAG_SECRET";

/// The header workers send the secret in when they fetch each other's
/// outputs.
pub const SECRET_HEADER: &str = "x-spindle-dag-secret";

/// A fresh random session secret (256 bits, hex).
pub fn new_secret() -> String {
    let bytes: [u8; 32] = rand::random();
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Compares a presented secret with the session's in constant time.
pub fn secret_matches(expected: &str, presented: &str) -> bool {
    !expected.is_empty() && bool::from(expected.as_bytes().ct_eq(presented.as_bytes()))
}

/// The first line of every connection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Hello {
    Client {
        secret: String,
        /// Who is asking (`user@host:pid`), for logs and DAG ownership.
        client: String,
    },
    Worker {
        secret: String,
        /// The worker's container id.
        worker: String,
        /// `host:port` of the worker's output server.
        http_addr: String,
    },
}

/// A client's request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum ClientRequest {
    Submit {
        dag: DagFile,
        /// Overrides the DAG file's queue.
        #[serde(default)]
        queue: Option<String>,
    },
    Status {
        #[serde(default)]
        dag: Option<u64>,
    },
    Kill {
        dag: u64,
    },
    Stop,
}

/// The AM's answer to one request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum ClientResponse {
    Submitted { dag: u64 },
    Status(Box<StatusReport>),
    Killed { dag: u64 },
    Stopping,
    Error { message: String },
}

/// What `spindle dag status` shows.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StatusReport {
    pub application: String,
    pub groups: Vec<GroupStatus>,
    pub workers: Vec<WorkerStatus>,
    pub dags: Vec<DagStatusReport>,
    pub counters: Counters,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupStatus {
    pub name: String,
    pub worker_memory_mb: u64,
    pub worker_vcores: u32,
    /// The TaskScheduler's status line (`queue = pending/usage%`).
    pub status_line: String,
    pub workers: u32,
    pub requested_workers: u32,
    /// `STABLE`, `SCALE_OUT` or `SCALE_IN` when autoscaling is on.
    #[serde(default)]
    pub autoscale_state: Option<String>,
    /// The last measured memory usage, in basis points.
    #[serde(default)]
    pub usage_bp: Option<u64>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkerStatus {
    pub worker: String,
    pub host: String,
    pub group: Option<String>,
    pub capacity_mb: u64,
    pub used_mb: u64,
    pub running_attempts: u64,
    pub draining: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DagStatusReport {
    pub id: u64,
    pub name: String,
    pub client: String,
    pub group: String,
    pub queue: String,
    /// `RUNNING`, `SUCCEEDED`, `FAILED` or `KILLED`.
    pub state: String,
    #[serde(default)]
    pub reason: Option<String>,
    pub total_tasks: u64,
    pub succeeded_tasks: u64,
    pub running_attempts: u64,
    pub pending_tasks: u64,
    pub elapsed_ms: u64,
}

impl DagStatusReport {
    pub fn is_final(&self) -> bool {
        self.state != "RUNNING"
    }
}

/// Running totals of the session.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counters {
    /// Containers asked of the ResourceManager for workers.
    pub containers_requested: u64,
    /// Of those, asked by autoscaling scale-outs (usage at or over
    /// ScaleOutThreshold).
    pub scale_out_requested: u64,
    /// Of those, asked by autoscaling for a group with no worker
    /// (`mr3.auto.scale.out.num.initial.containers`): not scale-outs.
    #[serde(default)]
    pub initial_requested: u64,
    /// Worker requests withdrawn.
    pub requests_cancelled: u64,
    pub workers_started: u64,
    /// Workers stopped because scale-in emptied their node.
    pub scale_in_released: u64,
    /// Workers stopped for any reason.
    pub workers_stopped: u64,
    pub workers_lost: u64,
    pub workers_recycled: u64,
    /// Scale-outs triggered by usage (initial requests not included).
    pub scale_outs: u64,
    pub scale_ins: u64,
    pub attempts_started: u64,
    pub attempts_failed: u64,
    /// Attempts that could not fetch an upstream output (retried, not
    /// counted as failures).
    pub inputs_lost: u64,
}

/// An attempt on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct AttemptRef {
    pub dag: u64,
    pub vertex: u32,
    pub task: u32,
    pub attempt: u32,
}

impl AttemptRef {
    pub fn to_id(self) -> AttemptId {
        AttemptId {
            task: TaskId {
                dag: DagId(self.dag),
                vertex: self.vertex,
                task: self.task,
            },
            attempt: self.attempt,
        }
    }

    pub fn from_id(id: AttemptId) -> AttemptRef {
        AttemptRef {
            dag: id.task.dag.0,
            vertex: id.task.vertex,
            task: id.task.task,
            attempt: id.attempt,
        }
    }
}

impl std::fmt::Display for AttemptRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.to_id().fmt(f)
    }
}

/// One upstream output a task reads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskInput {
    /// The producer vertex's name (the directory under the input dir).
    pub vertex: String,
    /// The producer task's index.
    pub task: u32,
    /// Where the producer's worker serves the output.
    pub url: String,
}

/// A task attempt for a worker to run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskAssignment {
    pub attempt: AttemptRef,
    pub dag_name: String,
    pub vertex: String,
    pub vertex_tasks: u32,
    /// Tasks of the first all-to-all consumer (0 for none): how many
    /// partitions a shuffle writer should produce.
    pub partitions: u32,
    pub command: String,
    pub inputs: Vec<TaskInput>,
    pub memory_mb: u64,
    pub vcores: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AmToWorker {
    Assign(Box<TaskAssignment>),
    /// Stop the attempt (its DAG is over); report it as killed.
    Kill {
        attempt: AttemptRef,
    },
    /// The DAG is over: its outputs may be deleted.
    DagDone {
        dag: u64,
    },
    /// The worker now serves another ContainerGroup: drop every output.
    Reinit {
        group: String,
    },
    /// Exit.
    Stop {
        reason: String,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum WireOutcome {
    Succeeded,
    Failed {
        reason: String,
    },
    Killed {
        reason: String,
    },
    /// An upstream output could not be fetched: not the task's fault; the
    /// AM learns separately whether the worker holding it is gone.
    InputLost {
        reason: String,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum WorkerToAm {
    Finished {
        attempt: AttemptRef,
        #[serde(flatten)]
        outcome: WireOutcome,
    },
}

/// Reads one line (without its `\n`); `Ok(None)` at a clean end of stream.
/// A line over `max` bytes or not UTF-8 is an error.
pub async fn read_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    max: usize,
) -> std::io::Result<Option<String>> {
    let mut buf: Vec<u8> = Vec::new();
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            if buf.is_empty() {
                return Ok(None);
            }
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the connection closed in the middle of a line",
            ));
        }
        let (take, done) = match available.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (available.len(), false),
        };
        if buf.len() + take > max + 1 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("a line is longer than {max} bytes"),
            ));
        }
        buf.extend_from_slice(&available[..take]);
        reader.consume(take);
        if done {
            buf.pop();
            if buf.last() == Some(&b'\r') {
                buf.pop();
            }
            return String::from_utf8(buf).map(Some).map_err(|_| {
                std::io::Error::new(std::io::ErrorKind::InvalidData, "a line is not UTF-8")
            });
        }
    }
}

/// Reads one JSON line; `Ok(None)` at a clean end of stream.
pub async fn read_json<R, T>(reader: &mut R) -> std::io::Result<Option<T>>
where
    R: AsyncBufRead + Unpin,
    T: for<'de> Deserialize<'de>,
{
    match read_line(reader, MAX_LINE_BYTES).await? {
        None => Ok(None),
        Some(line) => serde_json::from_str(&line).map(Some).map_err(|e| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("not a valid message: {e}"),
            )
        }),
    }
}

/// Writes one value as a JSON line and flushes.
pub async fn write_json<W, T>(writer: &mut W, value: &T) -> std::io::Result<()>
where
    W: AsyncWrite + Unpin,
    T: Serialize,
{
    let mut line = serde_json::to_vec(value)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e.to_string()))?;
    line.push(b'\n');
    writer.write_all(&line).await?;
    writer.flush().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn lines_are_bounded_and_split() {
        let data: &[u8] = b"{\"a\":1}\r\nsecond\npartial";
        let mut r = tokio::io::BufReader::with_capacity(3, data);
        assert_eq!(
            read_line(&mut r, 100).await.expect("line").as_deref(),
            Some("{\"a\":1}")
        );
        assert_eq!(
            read_line(&mut r, 100).await.expect("line").as_deref(),
            Some("second")
        );
        assert!(read_line(&mut r, 100).await.is_err(), "no newline at end");
        let mut long = tokio::io::BufReader::new(&b"0123456789\n"[..]);
        assert!(read_line(&mut long, 5).await.is_err());
        let mut empty = tokio::io::BufReader::new(&b""[..]);
        assert_eq!(read_line(&mut empty, 5).await.expect("eof"), None);
    }

    #[test]
    fn messages_have_a_stable_shape() {
        let m = WorkerToAm::Finished {
            attempt: AttemptRef {
                dag: 1,
                vertex: 0,
                task: 2,
                attempt: 1,
            },
            outcome: WireOutcome::Failed {
                reason: "exit 3".into(),
            },
        };
        let text = serde_json::to_string(&m).expect("json");
        assert_eq!(
            text,
            r#"{"type":"finished","attempt":{"dag":1,"vertex":0,"task":2,"attempt":1},"outcome":"failed","reason":"exit 3"}"#
        );
        let back: WorkerToAm = serde_json::from_str(&text).expect("parses");
        assert_eq!(back, m);
        let hello: Hello =
            serde_json::from_str(r#"{"role":"client","secret":"s","client":"me"}"#).expect("hello");
        assert!(matches!(hello, Hello::Client { .. }));
        assert_eq!(
            AttemptRef::from_id(m_attempt()).to_string(),
            "attempt_1_00_000002_1"
        );
    }

    fn m_attempt() -> AttemptId {
        AttemptRef {
            dag: 1,
            vertex: 0,
            task: 2,
            attempt: 1,
        }
        .to_id()
    }

    #[test]
    fn secrets_compare_exactly() {
        let s = new_secret();
        assert_eq!(s.len(), 64);
        assert!(secret_matches(&s, &s));
        assert!(!secret_matches(&s, &s[..63]));
        assert!(!secret_matches("", ""), "an empty secret never matches");
        assert_ne!(new_secret(), s);
    }
}
