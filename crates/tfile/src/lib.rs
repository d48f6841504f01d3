//! Hadoop's TFile (`org.apache.hadoop.io.file.tfile`) and YARN's
//! aggregated log format (`AggregatedLogFormat`) written on it: the files a
//! NodeManager leaves in the remote application log directory and that
//! `yarn logs` reads.
