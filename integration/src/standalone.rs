//! `spindle standalone` as a user starts it: one process, an RM and an NM, with the
//! addresses it prints. Only the ports are moved (to ones the kernel picks), so that
//! tests can run beside other clusters; everything else is the command's own defaults
//! unless a test configures it.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::time::Duration;

use anyhow::{bail, Context as _};

use crate::clients::{HadoopClients, YarnCommand};
use crate::cluster::{spindle_binary, wait_for, DISK_UTILIZATION_KEY};
use crate::conf::{fast_failing_client_settings, HadoopConf};
use crate::process::{run_with_timeout, CliOutput, DaemonProcess};

/// How long [`Standalone::start`] waits for the "is up" line.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(60);
/// The line standalone prints once both daemons run.
const UP_LINE: &str = "Spindle standalone is up";

/// The five addresses standalone prints, by their configuration keys.
const ADDRESS_KEYS: [&str; 5] = [
    "yarn.resourcemanager.address",
    "yarn.resourcemanager.scheduler.address",
    "yarn.resourcemanager.resource-tracker.address",
    "yarn.resourcemanager.admin.address",
    "yarn.resourcemanager.webapp.address",
];

/// The NM's web address, printed by standalone too.
const NM_WEBAPP_KEY: &str = "yarn.nodemanager.webapp.address";

/// A running `spindle standalone`. Dropping it kills it.
#[derive(Debug)]
pub struct Standalone {
    process: DaemonProcess,
    root: PathBuf,
    client_conf_dir: PathBuf,
    addresses: Vec<(String, SocketAddr)>,
    nm_web: SocketAddr,
    _dir: tempfile::TempDir,
}

impl Standalone {
    /// Starts `spindle standalone --conf DIR`, DIR holding a `yarn-site.xml` with
    /// `site` on top of port-0 RM addresses that keep standalone's own host
    /// (`${yarn.resourcemanager.hostname}:0`), local and log dirs in a temp dir and
    /// a 300 ms heartbeat. Waits for the addresses and the "is up" line, then writes
    /// a client configuration directory naming the printed addresses.
    pub fn start(site: &HadoopConf) -> anyhow::Result<Standalone> {
        let dir = tempfile::Builder::new()
            .prefix("spindle-standalone-")
            .tempdir()
            .context("creating the standalone temp dir")?;
        let root = dir.path().to_path_buf();
        let conf_dir = root.join("conf");
        let client_conf_dir = root.join("client-conf");
        let logs = root.join("logs");
        for d in [&conf_dir, &client_conf_dir, &logs] {
            std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
        }
        let mut yarn = HadoopConf::new();
        for key in ADDRESS_KEYS {
            yarn.set(key, "${yarn.resourcemanager.hostname}:0");
        }
        // The NM's web server too (Hadoop's default is port 8042).
        yarn.set(NM_WEBAPP_KEY, "${yarn.nodemanager.hostname}:0");
        yarn.set(
            "yarn.nodemanager.local-dirs",
            root.join("nm-local").display(),
        )
        .set("yarn.nodemanager.log-dirs", root.join("nm-logs").display())
        .set(
            "yarn.resourcemanager.nodemanagers.heartbeat-interval-ms",
            300,
        )
        // Each standalone its own aggregated logs (aggregation is on by default).
        .set(
            "yarn.nodemanager.remote-app-log-dir",
            format!("file://{}", root.join("app-logs").display()),
        )
        // Each standalone its own state store (recovery is on by default).
        .set(
            "spindle.resourcemanager.state-store.path",
            root.join("rmstore/spindle.redb").display(),
        )
        // MapReduce's shuffle (on by default) on a free port of its own.
        .set("mapreduce.shuffle.port", 0)
        .set("yarn.nodemanager.resource.memory-mb", 4096)
        .set("yarn.nodemanager.resource.cpu-vcores", 4)
        .set(DISK_UTILIZATION_KEY, 100);
        yarn.extend_from(site);
        yarn.write(&conf_dir.join("yarn-site.xml"))?;

        let mut cmd = Command::new(spindle_binary()?);
        cmd.arg("standalone").arg("--conf").arg(&conf_dir);
        let mut process = DaemonProcess::spawn("standalone", cmd, &logs)?;
        let stdout_path = process.stdout_path().to_path_buf();
        let up = wait_for(STARTUP_TIMEOUT, Duration::from_millis(50), || {
            let text = std::fs::read_to_string(&stdout_path).unwrap_or_default();
            if text.contains(UP_LINE) {
                return Some(Ok(text));
            }
            match process.try_exit_status() {
                Ok(Some(status)) => Some(Err(format!("standalone exited ({status})"))),
                Err(e) => Some(Err(format!("{e:#}"))),
                Ok(None) => None,
            }
        });
        let printed = match up {
            Some(Ok(text)) => text,
            Some(Err(why)) => bail!("{why}\n{}", process.log_tail(100)),
            None => bail!(
                "standalone did not print '{UP_LINE}' within {STARTUP_TIMEOUT:?}\n{}",
                process.log_tail(100)
            ),
        };
        let addresses = parse_addresses(&printed)?;
        let nm_web = parse_address(&printed, NM_WEBAPP_KEY)?;
        let mut client = fast_failing_client_settings();
        for (key, addr) in &addresses {
            client.set(key.as_str(), addr);
        }
        // `yarn logs` reads where the node aggregates to.
        client.set(
            "yarn.nodemanager.remote-app-log-dir",
            format!("file://{}", root.join("app-logs").display()),
        );
        client.write(&client_conf_dir.join("yarn-site.xml"))?;
        let mut core = HadoopConf::new();
        core.set("fs.defaultFS", "file:///");
        core.write(&client_conf_dir.join("core-site.xml"))?;
        Ok(Standalone {
            process,
            root,
            client_conf_dir,
            addresses,
            nm_web,
            _dir: dir,
        })
    }

    /// Everything standalone printed on stdout so far.
    pub fn stdout(&self) -> String {
        std::fs::read_to_string(self.process.stdout_path()).unwrap_or_default()
    }

    /// Everything standalone wrote to stderr (its log) so far.
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(self.process.stderr_path()).unwrap_or_default()
    }

    /// The addresses standalone printed, by configuration key.
    pub fn addresses(&self) -> &[(String, SocketAddr)] {
        &self.addresses
    }

    /// The NodeManager's web address, as printed.
    pub fn nm_web_address(&self) -> SocketAddr {
        self.nm_web
    }

    /// A configuration directory for clients: the printed addresses, clients that
    /// fail fast, `fs.defaultFS=file:///`.
    pub fn client_conf_dir(&self) -> &Path {
        &self.client_conf_dir
    }

    /// The temp dir holding the configuration, the NM's dirs and the logs.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// A `yarn` invocation against this standalone.
    pub fn yarn(&self, clients: &HadoopClients) -> YarnCommand {
        clients.yarn().conf_dir(&self.client_conf_dir)
    }

    /// Runs `spindle distributed-shell --conf <client conf> <args>`.
    pub fn distributed_shell(&self, args: &[&str], timeout: Duration) -> anyhow::Result<CliOutput> {
        let mut cmd = Command::new(spindle_binary()?);
        cmd.arg("distributed-shell")
            .arg("--conf")
            .arg(&self.client_conf_dir)
            .args(args);
        run_with_timeout(cmd, timeout)
    }

    /// Sends SIGINT (Ctrl-C) to the process and waits up to `grace` for it to exit.
    /// Returns its exit status, or `None` if it was still running (then it is killed).
    pub fn interrupt(&mut self, grace: Duration) -> anyhow::Result<Option<ExitStatus>> {
        self.process.signal("INT")?;
        let exited = wait_for(grace, Duration::from_millis(20), || {
            self.process.try_exit_status().ok().flatten()
        });
        if exited.is_none() {
            self.process.kill()?;
        }
        Ok(exited)
    }

    /// The last lines of standalone's stdout and stderr, for failure messages.
    pub fn log_tail(&self) -> String {
        self.process.log_tail(200)
    }
}

/// The `(key): host:port` lines standalone prints, for the four RM addresses.
fn parse_addresses(printed: &str) -> anyhow::Result<Vec<(String, SocketAddr)>> {
    ADDRESS_KEYS
        .iter()
        .map(|key| Ok(((*key).to_string(), parse_address(printed, key)?)))
        .collect()
}

/// The address printed on the `(key): host:port` line.
fn parse_address(printed: &str, key: &str) -> anyhow::Result<SocketAddr> {
    let marker = format!("({key}): ");
    let line = printed
        .lines()
        .find(|l| l.contains(&marker))
        .with_context(|| format!("standalone printed no address for {key}:\n{printed}"))?;
    line.split(&marker)
        .nth(1)
        .unwrap_or_default()
        .trim()
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .parse::<SocketAddr>()
        .with_context(|| format!("not an address: {line}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printed_addresses_are_read_by_key() -> anyhow::Result<()> {
        let printed = "standalone defaults: x=y\n\
            ResourceManager client address (yarn.resourcemanager.address): 127.0.0.1:4001\n\
            ResourceManager scheduler address (yarn.resourcemanager.scheduler.address): 127.0.0.1:4002\n\
            ResourceManager resource-tracker address (yarn.resourcemanager.resource-tracker.address): 127.0.0.1:4003\n\
            ResourceManager admin address (yarn.resourcemanager.admin.address): 127.0.0.1:4004\n\
            ResourceManager web address (yarn.resourcemanager.webapp.address): http://127.0.0.1:4005/\n\
            NodeManager web address (yarn.nodemanager.webapp.address): http://127.0.0.1:4006/\n";
        let addresses = parse_addresses(printed)?;
        assert_eq!(addresses.len(), 5);
        assert_eq!(addresses[4].1.port(), 4005);
        assert_eq!(addresses[0].0, "yarn.resourcemanager.address");
        assert_eq!(addresses[0].1.port(), 4001);
        assert_eq!(addresses[3].1.port(), 4004);
        assert_eq!(parse_address(printed, NM_WEBAPP_KEY)?.port(), 4006);
        assert!(parse_addresses("nothing").is_err());
        Ok(())
    }
}
