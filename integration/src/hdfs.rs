//! A real HDFS for the tests: Hadoop 3.3.4's MiniDFSCluster (a NameNode and DataNodes in one
//! JVM, from the jars `integration/setup-maven.sh hdfs` copies), started through
//! `integration/bin/hdfs` (the script people use) on a free loopback port with a directory
//! of its own; killed with SIGKILL, stopped, and restarted on the same port and directory
//! with its files.
//!
//! [`HdfsJars::for_tests`] is the skip policy of [`MavenJars::for_tests`].

use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{bail, Context as _};

use crate::clients::integration_dir;
use crate::cluster::{free_port, wait_for};
use crate::maven::MavenJars;
use crate::process::{DaemonProcess, ServerProcess};

/// How long a started cluster may take to serve (a cold JVM, formatting, the DataNode
/// registering, the NameNode leaving safe mode).
const STARTUP_TIMEOUT: Duration = Duration::from_secs(120);

/// The line `MiniHdfs` prints once it serves.
const READY_LINE: &str = "MiniHdfs serving";

/// The file name prefix of the minicluster's jar.
const MINICLUSTER_JAR: &str = "hadoop-client-minicluster-";

/// The HDFS jars (`integration/setup-maven.sh hdfs`; `$SPINDLE_HDFS_JARS` overrides the
/// folder).
#[derive(Debug, Clone)]
pub struct HdfsJars(MavenJars);

impl HdfsJars {
    /// Finds the jars; fails with the command to run when they are missing.
    pub fn locate() -> anyhow::Result<Self> {
        MavenJars::locate("hdfs", MINICLUSTER_JAR).map(Self)
    }

    /// The skip policy of [`MavenJars::for_tests`].
    #[track_caller]
    pub fn for_tests() -> Option<Self> {
        MavenJars::for_tests("hdfs", MINICLUSTER_JAR).map(Self)
    }

    /// The folder holding the jars.
    pub fn dir(&self) -> &Path {
        self.0.dir()
    }
}

/// A running MiniDFSCluster. Dropping it kills the process and removes its directory.
#[derive(Debug)]
pub struct HdfsServer {
    jars: HdfsJars,
    port: u16,
    datanodes: usize,
    dir: tempfile::TempDir,
    process: ServerProcess,
    starts: u32,
}

impl HdfsServer {
    /// Starts a NameNode on a free loopback port with one DataNode and waits until it
    /// serves.
    pub fn start(jars: &HdfsJars) -> anyhow::Result<Self> {
        Self::with_datanodes(jars, 1)
    }

    /// As [`HdfsServer::start`], with `datanodes` DataNodes.
    pub fn with_datanodes(jars: &HdfsJars, datanodes: usize) -> anyhow::Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix("spindle-hdfs-")
            .tempdir()
            .context("creating the HDFS directory")?;
        let port = free_port(IpAddr::V4(Ipv4Addr::LOCALHOST))?;
        let mut server = Self {
            jars: jars.clone(),
            port,
            datanodes: datanodes.max(1),
            dir,
            process: ServerProcess::default(),
            starts: 0,
        };
        server.launch()?;
        Ok(server)
    }

    /// `hdfs://127.0.0.1:<port>`, the value of `fs.defaultFS`.
    pub fn uri(&self) -> String {
        format!("hdfs://127.0.0.1:{}", self.port)
    }

    /// The NameNode's RPC port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The cluster's directory (the NameNode's and DataNodes' storage, the logs).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// True while the process runs.
    pub fn is_running(&mut self) -> bool {
        self.process.is_running()
    }

    /// Kills the cluster with SIGKILL (as a crash); its directory stays.
    pub fn kill(&mut self) -> anyhow::Result<()> {
        self.process.kill()
    }

    /// Stops the cluster with SIGTERM (SIGKILL after a grace period).
    pub fn stop(&mut self) -> anyhow::Result<()> {
        self.process.stop(Duration::from_secs(20))
    }

    /// Starts the cluster again on the same port and directory (stopping it first if it
    /// runs) and waits until it serves; the files written before are there.
    pub fn restart(&mut self) -> anyhow::Result<()> {
        self.stop()?;
        self.launch()
    }

    /// The last lines of the cluster's output, for failure reports.
    pub fn log_tail(&self, max_lines: usize) -> String {
        self.process.log_tail(max_lines)
    }

    fn launch(&mut self) -> anyhow::Result<()> {
        self.starts += 1;
        let mut command = Command::new("bash");
        command
            .arg(launcher())
            .arg(self.port.to_string())
            .arg(self.dir.path().join("cluster"))
            .arg(self.datanodes.to_string())
            .env("SPINDLE_HDFS_JARS", self.jars.dir());
        let name = format!("hdfs-{}", self.starts);
        let mut process = DaemonProcess::spawn(&name, command, self.dir.path())?;
        let stdout = process.stdout_path().to_path_buf();
        let ready = wait_for(STARTUP_TIMEOUT, Duration::from_millis(200), || {
            let text = std::fs::read_to_string(&stdout).unwrap_or_default();
            if text.contains(READY_LINE) {
                return Some(Ok(()));
            }
            match process.try_exit_status() {
                Ok(Some(status)) => Some(Err(format!("the HDFS cluster exited ({status})"))),
                Err(e) => Some(Err(format!("{e:#}"))),
                Ok(None) => None,
            }
        });
        match ready {
            Some(Ok(())) => {
                self.process.set(process);
                Ok(())
            }
            Some(Err(why)) => bail!("{why} during startup:\n{}", process.log_tail(60)),
            None => bail!(
                "the HDFS cluster did not serve within {STARTUP_TIMEOUT:?}:\n{}",
                process.log_tail(60)
            ),
        }
    }
}

/// The `integration/bin/hdfs` script.
pub fn launcher() -> PathBuf {
    integration_dir().join("bin").join("hdfs")
}
