//! Hadoop's TFile (`org.apache.hadoop.io.file.tfile`) and YARN's
//! aggregated log format (`AggregatedLogFormat`) written on it: the files a
//! NodeManager leaves in the remote application log directory and that
//! `yarn logs` reads.
//!
//! - [`tfile`]: the TFile container (BCFile blocks, indexes, trailer), writer and reader,
//!   compression "none".
//! - [`aggregated`]: YARN's records on it: [`aggregated::LogWriter`] (what a NodeManager
//!   uploads) and [`aggregated::LogReader`].
//!
//! Blocking `std::io` only; callers in async code run it on a blocking thread.

pub mod aggregated;
mod encoding;
pub mod tfile;
