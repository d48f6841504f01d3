//! Real Hadoop MapReduce 3.3.4 on a Spindle [`Cluster`]: the unshaded Hadoop jars that
//! `integration/setup-maven.sh mapreduce` copies ([`MapReduceJars`]), a client
//! configuration built from the example `conf/mapred-site.xml` ([`MapReduce::start`]),
//! Hadoop's JobHistoryServer (`mapred historyserver`, [`HistoryServer`]), and runs of the
//! stock clients through the scripts people use: `integration/bin/yarn jar
//! hadoop-mapreduce-examples-3.3.4.jar ...` ([`MapReduce::examples`]),
//! `integration/bin/mapred job ...` ([`MapReduce::mapred`]) and `hadoop fs`
//! ([`MapReduce::put`], [`MapReduce::cat`]).
//!
//! Two facts of Hadoop's that the harness lives with: a client waiting for its job asks the
//! JobHistoryServer for the final status once the AM is gone (without one it retries the
//! default address for ever), and Hadoop 3.3's AM needs `--add-opens
//! java.base/java.lang` on JDK 17.
//!
//! The NodeManagers run the `mapreduce_shuffle` auxiliary service (Hadoop's class name,
//! which selects Spindle's native shuffle), each on a port of its own
//! ([`shuffle_nodemanager`]).
//!
//! [`MapReduceJars::for_tests`] is the skip policy of [`MavenJars::for_tests`].

use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{bail, Context as _};

use crate::clients::integration_dir;
use crate::cluster::{free_port, wait_for, Cluster, NodeManagerSpec};
use crate::conf::HadoopConf;
use crate::maven::MavenJars;
use crate::process::{run_with_timeout, CliOutput, DaemonProcess};

/// The examples jar (pi, wordcount, teragen, terasort, teravalidate ...).
pub const EXAMPLES_JAR: &str = "hadoop-mapreduce-examples-3.3.4.jar";
/// The auxiliary service name every MapReduce task container asks for.
pub const SHUFFLE_SERVICE: &str = "mapreduce_shuffle";
/// Hadoop's ShuffleHandler class name: selects Spindle's native shuffle.
pub const SHUFFLE_CLASS: &str = "org.apache.hadoop.mapred.ShuffleHandler";
/// The path standing for the MapReduce jar folder in `conf/mapred-site.xml`.
pub const EXAMPLE_MAPRED_HOME: &str = "/opt/hadoop-mapreduce";
/// How long one job (a cold AM JVM, task JVMs, the shuffle) may take on a busy machine.
pub const DEFAULT_JOB_TIMEOUT: Duration = Duration::from_secs(300);

/// The MapReduce jars (`integration/setup-maven.sh mapreduce`; `$SPINDLE_MAPREDUCE_JARS`
/// overrides the folder).
#[derive(Debug, Clone)]
pub struct MapReduceJars(MavenJars);

impl MapReduceJars {
    /// Finds the jars; fails with the command to run when they are missing.
    pub fn locate() -> anyhow::Result<Self> {
        MavenJars::locate("mapreduce", EXAMPLES_JAR).map(Self)
    }

    /// The skip policy of [`MavenJars::for_tests`].
    #[track_caller]
    pub fn for_tests() -> Option<Self> {
        MavenJars::for_tests("mapreduce", EXAMPLES_JAR).map(Self)
    }

    /// The folder holding the jars (the `HADOOP_MAPRED_HOME` of the AM and the tasks).
    pub fn dir(&self) -> &Path {
        self.0.dir()
    }

    /// `hadoop-mapreduce-examples-3.3.4.jar`.
    pub fn examples_jar(&self) -> PathBuf {
        self.dir().join(EXAMPLES_JAR)
    }
}

/// `integration/bin/mapred`.
pub fn mapred_launcher() -> PathBuf {
    integration_dir().join("bin").join("mapred")
}

/// `conf/mapred-site.xml` of this checkout, the example users copy.
pub fn example_mapred_site() -> PathBuf {
    integration_dir()
        .parent()
        .map(|root| root.join("conf").join("mapred-site.xml"))
        .unwrap_or_else(|| PathBuf::from("conf/mapred-site.xml"))
}

/// The `yarn-site.xml` properties of a NodeManager running `mapreduce_shuffle` on
/// `port` (Hadoop's keys: `yarn.nodemanager.aux-services`,
/// `yarn.nodemanager.aux-services.mapreduce_shuffle.class`, `mapreduce.shuffle.port`).
pub fn shuffle_properties(port: u16) -> HadoopConf {
    let mut conf = HadoopConf::new();
    conf.set("yarn.nodemanager.aux-services", SHUFFLE_SERVICE)
        .set(
            format!("yarn.nodemanager.aux-services.{SHUFFLE_SERVICE}.class"),
            SHUFFLE_CLASS,
        )
        .set("mapreduce.shuffle.port", port);
    conf
}

/// A NodeManager with `memory_mb` and `vcores` that runs `mapreduce_shuffle` on a free
/// port of its own (several NodeManagers share this machine).
pub fn shuffle_nodemanager(memory_mb: u64, vcores: u32) -> anyhow::Result<NodeManagerSpec> {
    Ok(shuffle_nodemanager_on(
        memory_mb,
        vcores,
        free_shuffle_port()?,
    ))
}

/// The NodeManager's Java aux-service host as `java/aux-host/build.sh` builds it
/// (`$SPINDLE_AUX_HOST_DIR`, else `~/.cache/spindle-aux-host`); `None` with a SKIP line
/// when it is not built, a panic under CI.
pub fn aux_host_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("SPINDLE_AUX_HOST_DIR")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/spindle-aux-host"))
        })?;
    if dir.join("aux-host.jar").is_file() {
        return Some(dir);
    }
    if crate::clients::running_in_ci() {
        panic!("the Java aux-service host is required under CI: run java/aux-host/build.sh");
    }
    eprintln!(
        "SKIP: run java/aux-host/build.sh (no aux-host.jar in {})",
        dir.display()
    );
    None
}

/// [`shuffle_properties`] with Hadoop's own Java `ShuffleHandler` run in the NodeManager's
/// Java host (`host`) instead of the native shuffle
/// (`spindle.nodemanager.aux-services.mapreduce_shuffle.java-hosted`).
pub fn java_shuffle_properties(port: u16, host: &Path) -> HadoopConf {
    let mut conf = shuffle_properties(port);
    conf.set(
        format!("spindle.nodemanager.aux-services.{SHUFFLE_SERVICE}.java-hosted"),
        true,
    )
    .set(
        "spindle.nodemanager.aux-services.java-host.dir",
        host.display(),
    );
    conf
}

/// A free port for a NodeManager's `mapreduce.shuffle.port`.
pub fn free_shuffle_port() -> anyhow::Result<u16> {
    free_port(IpAddr::V4(Ipv4Addr::UNSPECIFIED))
}

/// [`shuffle_nodemanager`] with the shuffle on `port`.
pub fn shuffle_nodemanager_on(memory_mb: u64, vcores: u32, port: u16) -> NodeManagerSpec {
    let mut spec = NodeManagerSpec::new(memory_mb, vcores);
    spec.properties = shuffle_properties(port);
    spec
}

/// Settings that fit MapReduce jobs on a test machine, on top of the example: small
/// containers and heaps, quick-starting JVMs, a staging folder of the cluster's own.
pub fn test_settings(staging_dir: &str) -> HadoopConf {
    // Hadoop 3.3's AM web app (Guice 4 with cglib) needs java.lang opened on JDK 17.
    let jvm = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Djava.net.preferIPv4Stack=true \
               --add-opens=java.base/java.lang=ALL-UNNAMED";
    let mut conf = HadoopConf::new();
    conf.set("yarn.app.mapreduce.am.resource.mb", 512)
        .set(
            "yarn.app.mapreduce.am.command-opts",
            format!("-Xmx384m {jvm}"),
        )
        .set("mapreduce.map.memory.mb", 512)
        .set("mapreduce.reduce.memory.mb", 512)
        .set("mapreduce.map.java.opts", format!("-Xmx320m {jvm}"))
        .set("mapreduce.reduce.java.opts", format!("-Xmx320m {jvm}"))
        .set("mapreduce.task.io.sort.mb", 32)
        .set("yarn.app.mapreduce.am.staging-dir", staging_dir)
        // The client polls the AM every second by default (progress lines).
        .set("mapreduce.client.progressmonitor.pollinterval", 500);
    conf
}

/// The text of `conf/mapred-site.xml` with its stand-in folder replaced by `jars`, and
/// `overrides` added at its end (a later property wins within one file).
pub fn mapred_site(jars: &MapReduceJars, overrides: &HadoopConf) -> anyhow::Result<String> {
    let path = example_mapred_site();
    let example =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let home = jars.dir().to_string_lossy();
    let text = example.replace(EXAMPLE_MAPRED_HOME, &home);
    let Some(end) = text.rfind("</configuration>") else {
        bail!("{} has no </configuration>", path.display());
    };
    let extra = overrides.to_xml();
    // Only the <property> elements of the generated document.
    let properties = match (extra.find("<property>"), extra.rfind("</property>")) {
        (Some(start), Some(stop)) => &extra[start..stop + "</property>".len()],
        _ => "",
    };
    Ok(format!("{}  {properties}\n{}", &text[..end], &text[end..]))
}

/// One run of a MapReduce client: what it printed and the ids it named.
#[derive(Debug, Clone)]
pub struct JobRun {
    /// The client's output.
    pub output: CliOutput,
    /// `job_<clusterTimestamp>_<n>` from "Running job: ...", if the client got that far.
    pub job_id: Option<String>,
    /// `application_<clusterTimestamp>_<n>` from "Submitted application ...".
    pub app_id: Option<String>,
    /// How long the client ran.
    pub wall: Duration,
}

impl JobRun {
    /// True when the client exited 0 and said the job completed successfully.
    pub fn succeeded(&self) -> bool {
        self.output.success()
            && self.job_id.as_ref().is_some_and(|id| {
                self.output
                    .stderr
                    .contains(&format!("Job {id} completed successfully"))
            })
    }
}

/// The first word starting with `prefix` after `marker` in `text`.
fn id_after(text: &str, marker: &str, prefix: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let (_, rest) = line.split_once(marker)?;
        let word = rest.split_whitespace().next()?;
        word.starts_with(prefix).then(|| word.to_string())
    })
}

/// The job id a client logged ("Running job: job_...").
pub fn job_id_in(text: &str) -> Option<String> {
    id_after(text, "Running job: ", "job_")
}

/// The application id a client logged ("Submitted application application_...").
pub fn app_id_in(text: &str) -> Option<String> {
    id_after(text, "Submitted application ", "application_")
}

/// How long a JobHistoryServer may take to open its ports.
const HISTORY_STARTUP_TIMEOUT: Duration = Duration::from_secs(120);

/// A running JobHistoryServer (`mapred historyserver`). Dropping it kills it.
#[derive(Debug)]
pub struct HistoryServer {
    process: DaemonProcess,
    rpc: SocketAddr,
    web: SocketAddr,
}

impl HistoryServer {
    /// `mapreduce.jobhistory.address`.
    pub fn rpc_address(&self) -> SocketAddr {
        self.rpc
    }

    /// `mapreduce.jobhistory.webapp.address`.
    pub fn web_address(&self) -> SocketAddr {
        self.web
    }

    /// The end of its log, for failure messages.
    pub fn log_tail(&self, lines: usize) -> String {
        self.process.log_tail(lines)
    }
}

/// The MapReduce job id of the job an application runs: `job_` and the application id's
/// cluster timestamp and number, as the MapReduce client derives it.
pub fn job_id_of(app_id: &str) -> Option<String> {
    app_id
        .strip_prefix("application_")
        .map(|rest| format!("job_{rest}"))
}

/// MapReduce clients against one [`Cluster`]: its client configuration directory with a
/// `mapred-site.xml` added.
#[derive(Debug, Clone)]
pub struct MapReduce {
    jars: MapReduceJars,
    conf_dir: PathBuf,
    log_dir: PathBuf,
    /// The clients' working directory: relative paths on `file://` (pi's
    /// `QuasiMonteCarlo_*` folder) land there.
    work_dir: PathBuf,
    /// What `mapred-site.xml` adds to the example.
    settings: HadoopConf,
    /// The JobHistoryServer, shared by the clones.
    history: Option<std::sync::Arc<HistoryServer>>,
    timeout: Duration,
}

impl MapReduce {
    /// Writes `mapred-site.xml` ([`mapred_site`] with [`test_settings`], the staging
    /// folder `staging_dir`, e.g. a `file://` folder in the cluster's root or a path on
    /// HDFS, and `overrides` last) into the cluster's client configuration directory,
    /// and starts a JobHistoryServer ([`MapReduce::start_history_server`]): without one
    /// the stock client, asking for a job's final status once its AM is gone, retries
    /// the history server's default address for ever.
    pub fn start(
        cluster: &Cluster,
        jars: &MapReduceJars,
        staging_dir: &str,
        overrides: &HadoopConf,
    ) -> anyhow::Result<Self> {
        let mut mr = Self::new(cluster, jars, staging_dir, overrides)?;
        let history = mr.start_history_server()?;
        mr.history = Some(std::sync::Arc::new(history));
        Ok(mr)
    }

    /// The JobHistoryServer [`start`](Self::start) started.
    pub fn history_server(&self) -> Option<&HistoryServer> {
        self.history.as_deref()
    }

    /// [`start`](Self::start) without a JobHistoryServer (start one with
    /// [`start_history_server`](Self::start_history_server)).
    pub fn new(
        cluster: &Cluster,
        jars: &MapReduceJars,
        staging_dir: &str,
        overrides: &HadoopConf,
    ) -> anyhow::Result<Self> {
        let mut settings = test_settings(staging_dir);
        settings.extend_from(overrides);
        let work_dir = cluster.root().join("mapreduce-client");
        std::fs::create_dir_all(&work_dir)
            .with_context(|| format!("creating {}", work_dir.display()))?;
        let mr = Self {
            work_dir,
            jars: jars.clone(),
            conf_dir: cluster.conf_dir().to_path_buf(),
            log_dir: cluster.log_dir().to_path_buf(),
            settings,
            history: None,
            timeout: DEFAULT_JOB_TIMEOUT,
        };
        mr.write_site()?;
        Ok(mr)
    }

    fn write_site(&self) -> anyhow::Result<()> {
        let site = mapred_site(&self.jars, &self.settings)?;
        let path = self.conf_dir.join("mapred-site.xml");
        std::fs::write(&path, site).with_context(|| format!("writing {}", path.display()))
    }

    /// Starts Hadoop's JobHistoryServer (`mapred historyserver`) on free loopback ports
    /// and names it in `mapred-site.xml`, so that AMs started from now on link their
    /// finished jobs to it and `mapred job -status` of a finished job is answered by it.
    pub fn start_history_server(&mut self) -> anyhow::Result<HistoryServer> {
        let ip = IpAddr::V4(Ipv4Addr::LOCALHOST);
        let rpc = SocketAddr::new(ip, free_port(ip)?);
        let web = SocketAddr::new(ip, free_port(ip)?);
        let admin = SocketAddr::new(ip, free_port(ip)?);
        self.settings
            .set("mapreduce.jobhistory.address", rpc)
            .set("mapreduce.jobhistory.webapp.address", web)
            .set("mapreduce.jobhistory.admin.address", admin);
        self.write_site()?;
        let mut cmd = self.script(mapred_launcher(), &["historyserver"]);
        // Its web app (Guice 4 with cglib) needs java.lang opened on JDK 17.
        cmd.env(
            "MAPRED_OPTS",
            "-Xmx256m --add-opens=java.base/java.lang=ALL-UNNAMED",
        );
        let mut process = DaemonProcess::spawn("historyserver", cmd, &self.log_dir)?;
        let up = wait_for(HISTORY_STARTUP_TIMEOUT, Duration::from_millis(100), || {
            if TcpStream::connect_timeout(&rpc, Duration::from_millis(200)).is_ok()
                && TcpStream::connect_timeout(&web, Duration::from_millis(200)).is_ok()
            {
                return Some(Ok(()));
            }
            match process.try_exit_status() {
                Ok(Some(status)) => Some(Err(format!("the JobHistoryServer exited ({status})"))),
                Err(e) => Some(Err(format!("{e:#}"))),
                Ok(None) => None,
            }
        });
        match up {
            Some(Ok(())) => Ok(HistoryServer { process, rpc, web }),
            Some(Err(why)) => bail!("{why}\n{}", process.log_tail(100)),
            None => bail!(
                "the JobHistoryServer did not open {rpc} and {web} within {HISTORY_STARTUP_TIMEOUT:?}\n{}",
                process.log_tail(100)
            ),
        }
    }

    /// The jars.
    pub fn jars(&self) -> &MapReduceJars {
        &self.jars
    }

    /// The client configuration directory (yarn-site, core-site, mapred-site).
    pub fn conf_dir(&self) -> &Path {
        &self.conf_dir
    }

    /// How long one client run may take before it is killed.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    fn script(&self, script: PathBuf, args: &[&str]) -> Command {
        let mut cmd = Command::new("bash");
        cmd.arg(script)
            .arg("--config")
            .arg(&self.conf_dir)
            .args(args)
            .current_dir(&self.work_dir);
        // Hermetic: nothing from the caller's Hadoop environment leaks in.
        for key in [
            "HADOOP_CONF_DIR",
            "YARN_CONF_DIR",
            "HADOOP_CLASSPATH",
            "HADOOP_OPTS",
            "MAPRED_OPTS",
            "YARN_OPTS",
            "YARN_LOGLEVEL",
            "MAPRED_LOGLEVEL",
        ] {
            cmd.env_remove(key);
        }
        cmd.env("SPINDLE_MAPREDUCE_JARS", self.jars.dir());
        cmd
    }

    /// `integration/bin/yarn jar <jar> <args...>` at the INFO level (the job's progress).
    pub fn yarn_jar(&self, jar: &Path, args: &[&str]) -> anyhow::Result<JobRun> {
        let jar = jar.to_string_lossy();
        let mut all = vec!["--loglevel", "INFO", "jar", &jar];
        all.extend_from_slice(args);
        let cmd = self.script(crate::clients::yarn_launcher(), &all);
        let started = std::time::Instant::now();
        let output = run_with_timeout(cmd, self.timeout)?;
        let wall = started.elapsed();
        Ok(JobRun {
            job_id: job_id_in(&output.stderr),
            app_id: app_id_in(&output.stderr),
            output,
            wall,
        })
    }

    /// `yarn jar hadoop-mapreduce-examples-3.3.4.jar <program> <args...>`.
    pub fn examples(&self, program: &str, args: &[&str]) -> anyhow::Result<JobRun> {
        let mut all = vec![program];
        all.extend_from_slice(args);
        self.yarn_jar(&self.jars.examples_jar(), &all)
    }

    /// [`examples`](Self::examples) on a thread of its own, for a test that looks at the
    /// job while it runs.
    pub fn examples_in_background(
        &self,
        program: &str,
        args: &[&str],
    ) -> std::thread::JoinHandle<anyhow::Result<JobRun>> {
        let this = self.clone();
        let program = program.to_string();
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        std::thread::spawn(move || {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            this.examples(&program, &args)
        })
    }

    /// The `mapred <args...>` command (e.g. `job -status <id>`), for a caller that runs
    /// it in the background.
    pub fn mapred_command(&self, args: &[&str]) -> Command {
        self.script(mapred_launcher(), args)
    }

    /// Runs `mapred <args...>` (`--loglevel WARN`: only the result on stdout).
    pub fn mapred(&self, args: &[&str]) -> anyhow::Result<CliOutput> {
        let mut all = vec!["--loglevel", "WARN"];
        all.extend_from_slice(args);
        run_with_timeout(self.script(mapred_launcher(), &all), self.timeout)
    }

    /// Copies the local file or folder `local` to `uri` (`hadoop fs -put`), creating the
    /// parent folder first.
    pub fn put(&self, local: &Path, uri: &str) -> anyhow::Result<()> {
        if let Some((parent, _)) = uri.trim_end_matches('/').rsplit_once('/') {
            if !parent.ends_with('/') && !parent.ends_with(':') {
                let out = self.fs(&["-mkdir", "-p", parent])?;
                if !out.success() {
                    bail!("creating {parent}:\n{out}");
                }
            }
        }
        let local = local.to_string_lossy();
        let out = self.fs(&["-put", &local, uri])?;
        if !out.success() {
            bail!("copying {local} to {uri}:\n{out}");
        }
        Ok(())
    }

    /// The concatenated contents of the files `pattern` matches (`hadoop fs -cat`, glob
    /// patterns allowed).
    pub fn cat(&self, pattern: &str) -> anyhow::Result<String> {
        let out = self.fs(&["-cat", pattern])?;
        if !out.success() {
            bail!("reading {pattern}:\n{out}");
        }
        Ok(out.stdout)
    }

    /// Hadoop's `FsShell` on the job's file system (`hadoop fs <args...>`), e.g.
    /// `-cat /out/part-r-00000` on HDFS.
    pub fn fs(&self, args: &[&str]) -> anyhow::Result<CliOutput> {
        let mut all = vec!["--loglevel", "WARN", "org.apache.hadoop.fs.FsShell"];
        all.extend_from_slice(args);
        run_with_timeout(self.script(mapred_launcher(), &all), self.timeout)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_read_from_the_client_log() {
        let log = "26/11/26 13:00:00 INFO impl.YarnClientImpl: Submitted application application_1764162000000_0001\n\
                   26/11/26 13:00:00 INFO mapreduce.Job: Running job: job_1764162000000_0001\n";
        assert_eq!(
            app_id_in(log).as_deref(),
            Some("application_1764162000000_0001")
        );
        assert_eq!(job_id_in(log).as_deref(), Some("job_1764162000000_0001"));
        assert_eq!(job_id_in("Running job: nothing"), None);
        assert_eq!(
            job_id_of("application_17_0003").as_deref(),
            Some("job_17_0003")
        );
    }

    #[test]
    fn the_example_site_takes_the_jar_folder_and_overrides() {
        let jars = MapReduceJars(MavenJars::for_dir("mapreduce", "/jars/mr"));
        let mut extra = HadoopConf::new();
        extra.set("mapreduce.map.memory.mb", 256);
        let site = mapred_site(&jars, &extra).expect("the example is readable");
        assert!(!site.contains(EXAMPLE_MAPRED_HOME), "{site}");
        assert!(site.contains("HADOOP_MAPRED_HOME=/jars/mr"), "{site}");
        let last = site.rfind("<name>mapreduce.map.memory.mb</name>");
        let first = site.find("<name>mapreduce.map.memory.mb</name>");
        assert!(last > first, "the override comes after the example's value");
        assert!(site.trim_end().ends_with("</configuration>"));
    }
}
