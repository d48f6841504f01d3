//! A real, standalone Apache ZooKeeper server (3.8, from the jars that
//! `integration/setup-maven.sh zookeeper` copies) for the HA tests: started on a free
//! loopback port with a data directory of its own, stopped, killed with SIGKILL and
//! restarted on the same port and data directory.
//!
//! [`ZooKeeperJars::for_tests`] is the skip policy of [`MavenJars::for_tests`].

use std::ffi::OsString;
use std::io::{Read as _, Write as _};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{bail, Context as _};

use crate::clients::integration_dir;
use crate::cluster::{free_port, wait_until};
use crate::maven::MavenJars;
use crate::process::{DaemonProcess, ServerProcess};

/// How long a started server may take to serve.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(60);

/// The ZooKeeper jars (`integration/setup-maven.sh zookeeper`; `$SPINDLE_ZOOKEEPER_JARS`
/// overrides the folder).
#[derive(Debug, Clone)]
pub struct ZooKeeperJars(MavenJars);

/// The file name prefix of the server's jar.
const SERVER_JAR: &str = "zookeeper-3.";

impl ZooKeeperJars {
    /// Finds the jars; fails with the command to run when they are missing.
    pub fn locate() -> anyhow::Result<Self> {
        MavenJars::locate("zookeeper", SERVER_JAR).map(Self)
    }

    /// The skip policy of [`MavenJars::for_tests`].
    #[track_caller]
    pub fn for_tests() -> Option<Self> {
        MavenJars::for_tests("zookeeper", SERVER_JAR).map(Self)
    }

    /// The folder holding the jars.
    pub fn dir(&self) -> &Path {
        self.0.dir()
    }

    /// The classpath that runs the server.
    pub fn classpath(&self) -> anyhow::Result<OsString> {
        self.0.classpath()
    }
}

/// A standalone ZooKeeper server process. Dropping it kills the server and removes its
/// data directory.
#[derive(Debug)]
pub struct ZooKeeperServer {
    jars: ZooKeeperJars,
    port: u16,
    dir: tempfile::TempDir,
    process: ServerProcess,
    starts: u32,
}

impl ZooKeeperServer {
    /// Starts a server on a free loopback port and waits until it answers.
    pub fn start(jars: &ZooKeeperJars) -> anyhow::Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix("spindle-zookeeper-")
            .tempdir()
            .context("creating the ZooKeeper directory")?;
        let port = free_port(IpAddr::V4(Ipv4Addr::LOCALHOST))?;
        let data = dir.path().join("data");
        std::fs::create_dir_all(&data).with_context(|| format!("creating {}", data.display()))?;
        write_config(dir.path(), &data, port)?;
        let mut server = Self {
            jars: jars.clone(),
            port,
            dir,
            process: ServerProcess::default(),
            starts: 0,
        };
        server.launch()?;
        Ok(server)
    }

    /// `127.0.0.1:<port>`, the value of `hadoop.zk.address`.
    pub fn connect_string(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// The client port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// True while the server process runs.
    pub fn is_running(&mut self) -> bool {
        self.process.is_running()
    }

    /// Kills the server with SIGKILL (as a crash); its data directory stays.
    pub fn kill(&mut self) -> anyhow::Result<()> {
        self.process.kill()
    }

    /// Stops the server with SIGTERM (SIGKILL after a grace period).
    pub fn stop(&mut self) -> anyhow::Result<()> {
        self.process.stop(Duration::from_secs(10))
    }

    /// Starts the server again on the same port and data directory (stopping it first if
    /// it runs) and waits until it answers. Sessions whose timeout has not passed survive.
    pub fn restart(&mut self) -> anyhow::Result<()> {
        self.stop()?;
        self.launch()
    }

    /// The last lines of the server's output, for failure reports.
    pub fn log_tail(&self, max_lines: usize) -> String {
        self.process.log_tail(max_lines)
    }

    fn launch(&mut self) -> anyhow::Result<()> {
        self.starts += 1;
        let mut command = Command::new("java");
        command
            .arg("-Xmx256m")
            .arg("-XX:+UseSerialGC")
            .arg("-XX:TieredStopAtLevel=1")
            .arg(format!(
                "-Dlogback.configurationFile={}",
                self.dir.path().join("logback.xml").display()
            ))
            // The admin HTTP server (Jetty) is not on the classpath and not wanted.
            .arg("-Dzookeeper.admin.enableServer=false")
            .arg("-cp")
            .arg(self.jars.classpath()?)
            .arg("org.apache.zookeeper.server.ZooKeeperServerMain")
            .arg(self.dir.path().join("zoo.cfg"));
        let name = format!("zookeeper-{}", self.starts);
        let mut process = DaemonProcess::spawn(&name, command, self.dir.path())?;
        let addr = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), self.port);
        let mut exited = false;
        let ready = wait_until(STARTUP_TIMEOUT, Duration::from_millis(100), || {
            if !process.is_running().unwrap_or(false) {
                exited = true;
                return true;
            }
            serving(addr)
        });
        if exited || !ready {
            let tail = process.log_tail(40);
            drop(process);
            if exited {
                bail!("the ZooKeeper server exited during startup:\n{tail}");
            }
            bail!("the ZooKeeper server did not answer within {STARTUP_TIMEOUT:?}:\n{tail}");
        }
        self.process.set(process);
        Ok(())
    }
}

/// What the server at `addr` answers to a four-letter word (empty when it does not).
pub fn four_letter_word(addr: SocketAddr, word: &str) -> String {
    let Ok(mut stream) = TcpStream::connect_timeout(&addr, Duration::from_secs(1)) else {
        return String::new();
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    if stream.write_all(word.as_bytes()).is_err() {
        return String::new();
    }
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer
}

/// True when the server at `addr` answers the `ruok` four-letter word with `imok` (its
/// port is open; it may not serve sessions yet).
pub fn ruok(addr: SocketAddr) -> bool {
    four_letter_word(addr, "ruok") == "imok"
}

/// True when the server at `addr` serves sessions: `srvr` reports its mode (before the
/// server runs it answers that it is not serving requests).
pub fn serving(addr: SocketAddr) -> bool {
    four_letter_word(addr, "srvr").contains("Mode: ")
}

/// `zoo.cfg` and `logback.xml` for a standalone server. A short tick lets tests ask for
/// session timeouts of a second or two (the server allows 2 to 20 ticks unless told
/// otherwise; the maximum is raised so Hadoop's default 10 s is granted as asked).
fn write_config(dir: &Path, data: &Path, port: u16) -> anyhow::Result<()> {
    let zoo_cfg = format!(
        "tickTime=500\n\
         minSessionTimeout=1000\n\
         maxSessionTimeout=60000\n\
         dataDir={}\n\
         clientPort={port}\n\
         clientPortAddress=127.0.0.1\n\
         maxClientCnxns=0\n\
         4lw.commands.whitelist=ruok,srvr,stat,mntr\n\
         admin.enableServer=false\n",
        data.display()
    );
    std::fs::write(dir.join("zoo.cfg"), zoo_cfg).context("writing zoo.cfg")?;
    let logback = "<configuration>\n\
         \x20 <appender name=\"OUT\" class=\"ch.qos.logback.core.ConsoleAppender\">\n\
         \x20   <encoder><pattern>%d{HH:mm:ss.SSS} %-5level %logger{20} - %msg%n</pattern></encoder>\n\
         \x20 </appender>\n\
         \x20 <root level=\"INFO\"><appender-ref ref=\"OUT\"/></root>\n\
         </configuration>\n";
    std::fs::write(dir.join("logback.xml"), logback).context("writing logback.xml")?;
    Ok(())
}

/// The `integration/bin/zookeeper` script, for people.
pub fn launcher() -> PathBuf {
    integration_dir().join("bin").join("zookeeper")
}
