//! A native `mapreduce_shuffle`: Hadoop 3.3.4's `org.apache.hadoop.mapred.ShuffleHandler`
//! (the NodeManager auxiliary service that serves map outputs to reducers), in Rust.
//!
//! The protocol is Hadoop's, byte for byte where a Java peer can see it:
//! - `GET /mapOutput?job=<jobId>&reduce=<n>&map=<attempt>,<attempt>…[&keepAlive=true]` with
//!   headers `UrlHash` (base64 HmacSHA1 of `port + path + "?" + query`, keyed by the job
//!   token's password), `name: mapreduce`, `version: 1.0.0` ([`hash`], [`request`]);
//! - the reply carries `ReplyHash` (the HMAC of the `UrlHash` string), `name`, `version`, and
//!   `Connection: close` or, with keep-alive, `Content-Length`, `Connection: Keep-Alive`,
//!   `Keep-Alive: timeout=N`; its body is, per map, a `ShuffleHeader` ([`wire`]) and the
//!   partition's bytes of `file.out`, located through `file.out.index` ([`index`]) under
//!   `<local-dir>/usercache/<user>/appcache/<appId>/output/<attempt>/` ([`outputs`]);
//! - refusals use Hadoop's statuses and bodies: 405 for a method other than GET, 400 for a
//!   bad version header or parameters, 401 for an unknown job or a bad hash, 500 for outputs
//!   that cannot be found or read, 429 with `Retry-After` beyond
//!   `mapreduce.shuffle.max.connections`.
//!
//! Where Spindle differs (each a case where Hadoop's reply is malformed or unbounded): a
//! failure to locate an output is a plain 500 (Hadoop first writes a 200 head, then the 500
//! reply into the body); a map id that is not an attempt of the authenticated job is refused
//! before any file is looked up; files must lie inside the application's output directory
//! and belong to the owner of their attempt directory; `mapreduce.shuffle.ssl.enabled` is
//! refused at start (no encrypted shuffle); a connection must send its first request
//! within `spindle.shuffle.request.timeout.ms` and a reducer that stops reading for
//! `spindle.shuffle.write.timeout.ms` is dropped; `mapreduce.shuffle.max.connections` counts
//! client connections only (Hadoop counts its listening channel too); after a refusal for
//! the version header nothing more is written (Hadoop goes on to answer the request too).
//!
//! As Hadoop's: whole index files are cached, each checked once, within
//! `mapreduce.tasktracker.indexcache.mb` ([`outputs::IndexCache`]); with a recovery dir
//! (the NodeManager's, when `yarn.nodemanager.recovery.enabled`) job tokens survive a
//! restart ([`recovery`]).
//!
//! Memory is bounded: per connection a request head of at most 12 KiB and, while sending,
//! one transfer buffer (`mapreduce.shuffle.transfer.buffer.size`), all buffers together
//! within `spindle.shuffle.max.buffer.bytes` (a request waits for a free one); an index file
//! larger than the index cache is read in fixed chunks for its one record.

mod config;
mod error;
pub mod hash;
pub mod index;
pub mod outputs;
pub mod recovery;
pub mod request;
mod server;
pub mod wire;

/// `ShuffleHandler.MAPREDUCE_SHUFFLE_SERVICEID`: the auxiliary service's usual name, the key
/// of the job token in a task container's service data.
pub const SERVICE_NAME: &str = "mapreduce_shuffle";
/// The class an NM configuration names (`yarn.nodemanager.aux-services.<name>.class`) for
/// this service.
pub const HADOOP_CLASS: &str = "org.apache.hadoop.mapred.ShuffleHandler";

pub use config::*;
pub use error::ShuffleError;
pub use server::{ShuffleServer, ShuffleStats};
