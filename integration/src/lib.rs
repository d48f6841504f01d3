//! Test harness that drives real `spindle` processes with the real Hadoop 3.3.4 client.
//!
//! * [`HadoopClients`] finds the client jars that `integration/setup-clients.sh`
//!   installs, runs `integration/bin/yarn` ([`YarnCommand`]) and compiles the helper
//!   programs in `integration/java/`. [`HadoopClients::for_tests`] is the skip policy:
//!   without the jars a test prints `SKIP:` and returns, except under CI where it fails.
//! * [`Cluster`] starts `spindle resourcemanager` and N × `spindle nodemanager` on
//!   loopback with their own configuration directories, kills them on drop, and prints
//!   their logs when a test panics.
//! * [`Standalone`] starts `spindle standalone` with only its ports moved and reads the
//!   addresses it prints.
//! * [`ZooKeeperServer`] runs a real standalone ZooKeeper 3.8 server (jars from
//!   `integration/setup-maven.sh zookeeper`; [`ZooKeeperJars::for_tests`] skips likewise)
//!   that a test can stop, kill and restart on the same port and data directory.
//! * [`HadoopRm`] and [`ExtraNodeManager`] run Hadoop 3.3.4's own ResourceManager and
//!   NodeManagers (jars from `integration/setup-maven.sh yarn-server`; [`YarnServerJars::for_tests`]
//!   skips likewise) and Spindle NodeManagers outside a [`Cluster`], for mixed clusters.
//! * [`sls_side`] runs SLS inputs on `spindle sim` and on Hadoop's RM (our SLS-style
//!   driver, `integration/bin/sls-driver`) and compares what they report.
//! * [`cli`] parses what the CLIs print; [`descriptors`] renders protobuf schemas in a
//!   form that can be compared with Hadoop's own descriptors.
//!
//! A typical test:
//!
//! ```no_run
//! use spindle_integration::{cli::NodeList, Cluster, HadoopClients};
//!
//! let Some(clients) = HadoopClients::for_tests() else { return };
//! let cluster = Cluster::builder().nodemanagers(2).start(&clients).expect("cluster starts");
//! let out = cluster.yarn(["node", "-list", "-all"]);
//! out.assert_success();
//! let nodes = NodeList::parse(&out.stdout).expect("node list");
//! assert_eq!(nodes.total, 2);
//! ```

pub mod cli;
pub mod clients;
pub mod cluster;
pub mod conf;
pub mod descriptors;
pub mod differential;
pub mod hadoop_yarn;
pub mod hdfs;
pub mod kdc;
pub mod logs;
pub mod mapreduce;
pub mod maven;
pub mod process;
pub mod sls_side;
pub mod spark;
pub mod standalone;
pub mod zookeeper;

pub use clients::{HadoopClients, YarnCommand};
pub use cluster::{
    spindle_binary, submit_app_with, wait_for, wait_until, AppSubmission, Cluster, ClusterBuilder,
    NodeManager, NodeManagerSpec, RmAddresses,
};
pub use conf::HadoopConf;
pub use hadoop_yarn::{ExtraNodeManager, HadoopRm, NmKind, YarnServerJars};
pub use hdfs::{HdfsJars, HdfsServer};
pub use mapreduce::{MapReduce, MapReduceJars};
pub use maven::MavenJars;
pub use process::CliOutput;
pub use standalone::Standalone;
pub use zookeeper::{ZooKeeperJars, ZooKeeperServer};
