//! The real Hadoop client installed by `integration/setup-clients.sh`: where its jars are,
//! how to run the `yarn` CLIs and the small Java programs in `integration/java/`.

use std::collections::hash_map::DefaultHasher;
use std::ffi::OsString;
use std::hash::{Hash as _, Hasher as _};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{bail, Context as _};

use crate::process::{run_with_input, run_with_timeout, CliOutput};

/// The pyspark release whose `pyspark/jars/` folder provides the Hadoop client.
pub const PYSPARK_VERSION: &str = "3.5.3";
/// The Hadoop version of the client jars pyspark ships.
pub const HADOOP_VERSION: &str = "3.3.4";
/// How long one CLI invocation may run before it is killed.
pub const DEFAULT_CLI_TIMEOUT: Duration = Duration::from_secs(120);

/// The `integration/` directory of this checkout.
pub fn integration_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The `yarn` launcher script, `integration/bin/yarn`.
pub fn yarn_launcher() -> PathBuf {
    integration_dir().join("bin").join("yarn")
}

/// True when the environment says this is a CI run (`CI` set to anything but
/// empty, `0` or `false`), where missing clients are an error rather than a skip.
pub fn running_in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| {
        let v = v.trim();
        !v.is_empty() && v != "0" && !v.eq_ignore_ascii_case("false")
    })
}

/// The cache directory `setup-clients.sh` installs into:
/// `$SPINDLE_CLIENT_CACHE`, else `$HOME/.cache/spindle-clients`.
pub fn cache_dir() -> anyhow::Result<PathBuf> {
    if let Some(dir) = non_empty_env("SPINDLE_CLIENT_CACHE") {
        return Ok(PathBuf::from(dir));
    }
    let home = non_empty_env("HOME")
        .context("neither SPINDLE_CLIENT_CACHE nor HOME is set: cannot find the client cache")?;
    Ok(PathBuf::from(home).join(".cache").join("spindle-clients"))
}

fn non_empty_env(key: &str) -> Option<OsString> {
    std::env::var_os(key).filter(|v| !v.is_empty())
}

/// An installed Hadoop client: the folder of jars the launcher puts on the classpath.
#[derive(Debug, Clone)]
pub struct HadoopClients {
    jar_dir: PathBuf,
    cache_dir: PathBuf,
}

impl HadoopClients {
    /// Finds the installed jars (`$SPINDLE_CLIENT_JARS`, else the pyspark install in the
    /// cache directory). Fails with the command to run when they are missing.
    pub fn locate() -> anyhow::Result<Self> {
        let cache_dir = cache_dir()?;
        let jar_dir = match non_empty_env("SPINDLE_CLIENT_JARS") {
            Some(dir) => PathBuf::from(dir),
            None => cache_dir
                .join(format!("pyspark-{PYSPARK_VERSION}"))
                .join("pyspark")
                .join("jars"),
        };
        let clients = Self { jar_dir, cache_dir };
        for jar in clients.hadoop_jars() {
            if !jar.is_file() {
                bail!(
                    "Hadoop client jar {} is missing: run integration/setup-clients.sh",
                    jar.display()
                );
            }
        }
        Ok(clients)
    }

    /// The skip policy of the integration tests. Returns the clients when installed.
    /// When they are not: under CI this panics (a CI run must exercise the real
    /// clients); elsewhere it prints a `SKIP:` line and returns `None`, and the test
    /// returns early.
    #[track_caller]
    pub fn for_tests() -> Option<Self> {
        match Self::locate() {
            Ok(clients) => Some(clients),
            Err(e) if running_in_ci() => {
                panic!("the Hadoop clients are required under CI: {e:#}")
            }
            Err(e) => {
                eprintln!("SKIP: run integration/setup-clients.sh ({e:#})");
                None
            }
        }
    }

    /// The folder holding every client jar.
    pub fn jar_dir(&self) -> &Path {
        &self.jar_dir
    }

    /// `hadoop-client-api` and `hadoop-client-runtime`: all a Java program using the YARN
    /// client API needs to compile.
    pub fn hadoop_jars(&self) -> [PathBuf; 2] {
        [
            self.jar_dir
                .join(format!("hadoop-client-api-{HADOOP_VERSION}.jar")),
            self.jar_dir
                .join(format!("hadoop-client-runtime-{HADOOP_VERSION}.jar")),
        ]
    }

    /// A `yarn` invocation with no configuration directory and the default timeout.
    pub fn yarn(&self) -> YarnCommand {
        YarnCommand {
            jar_dir: self.jar_dir.clone(),
            conf_dir: None,
            extra_classpath: Vec::new(),
            timeout: DEFAULT_CLI_TIMEOUT,
            env: Vec::new(),
            stdin: None,
        }
    }

    /// Compiles `integration/java/<program>.java` against the Hadoop client jars and
    /// returns the folder holding its classes. The result is cached in the client cache
    /// directory under a hash of the source, so it is compiled once per change.
    pub fn compile_java(&self, program: &str) -> anyhow::Result<PathBuf> {
        if program.is_empty()
            || !program
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            bail!("{program:?} is not a Java class name");
        }
        let source = integration_dir()
            .join("java")
            .join(format!("{program}.java"));
        let text = std::fs::read(&source)
            .with_context(|| format!("reading Java source {}", source.display()))?;
        let mut hasher = DefaultHasher::new();
        text.hash(&mut hasher);
        HADOOP_VERSION.hash(&mut hasher);
        let classes_root = self.cache_dir.join("classes");
        let out = classes_root.join(format!("{program}-{:016x}", hasher.finish()));
        if out.join(format!("{program}.class")).is_file() {
            return Ok(out);
        }
        std::fs::create_dir_all(&classes_root)
            .with_context(|| format!("creating {}", classes_root.display()))?;
        // Compile into a private folder, then move it into place: tests running in
        // parallel may compile the same program at the same time.
        let scratch = tempfile::Builder::new()
            .prefix(&format!(".{program}-"))
            .tempdir_in(&classes_root)
            .with_context(|| format!("creating a scratch folder in {}", classes_root.display()))?;
        let classpath = std::env::join_paths(self.hadoop_jars())
            .context("joining the client jars into a classpath")?;
        let mut javac = Command::new(java_tool("javac"));
        javac
            .arg("-encoding")
            .arg("UTF-8")
            .arg("-nowarn")
            .arg("-d")
            .arg(scratch.path())
            .arg("-cp")
            .arg(classpath)
            .arg(&source);
        let result = run_with_timeout(javac, DEFAULT_CLI_TIMEOUT).with_context(|| {
            "running javac (is a JDK installed? integration/setup-clients.sh installs one)"
        })?;
        if !result.success() {
            bail!("compiling {} failed:\n{result}", source.display());
        }
        match std::fs::rename(scratch.path(), &out) {
            Ok(()) => {}
            // Someone else finished first; their classes are the same.
            Err(_) if out.join(format!("{program}.class")).is_file() => {}
            Err(e) => {
                return Err(e)
                    .with_context(|| format!("moving compiled classes into {}", out.display()))
            }
        }
        Ok(out)
    }
}

/// `$JAVA_HOME/bin/<tool>` when JAVA_HOME is set, else `<tool>` from PATH.
fn java_tool(tool: &str) -> PathBuf {
    match non_empty_env("JAVA_HOME") {
        Some(home) => PathBuf::from(home).join("bin").join(tool),
        None => PathBuf::from(tool),
    }
}

/// One run of `integration/bin/yarn`, built up before [`YarnCommand::run`].
#[derive(Debug, Clone)]
pub struct YarnCommand {
    jar_dir: PathBuf,
    conf_dir: Option<PathBuf>,
    extra_classpath: Vec<PathBuf>,
    timeout: Duration,
    env: Vec<(String, String)>,
    stdin: Option<Vec<u8>>,
}

impl YarnCommand {
    /// Reads `yarn-site.xml`/`core-site.xml` from `dir` (`yarn --config DIR`).
    pub fn conf_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.conf_dir = Some(dir.into());
        self
    }

    /// Appends `entry` to the classpath (through `HADOOP_CLASSPATH`), e.g. the classes
    /// of a program built by [`HadoopClients::compile_java`].
    pub fn classpath(mut self, entry: impl Into<PathBuf>) -> Self {
        self.extra_classpath.push(entry.into());
        self
    }

    /// Kills the JVM if it runs longer than `timeout`.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Sets an environment variable for the JVM (e.g. `HADOOP_USER_NAME`).
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }

    /// Feeds `input` to the CLI's standard input (e.g. `Y\n` for a confirmation
    /// prompt); without it the CLI reads end-of-file.
    pub fn stdin(mut self, input: impl Into<Vec<u8>>) -> Self {
        self.stdin = Some(input.into());
        self
    }

    /// Runs `yarn <args...>` and returns what it printed. An error means the launcher
    /// could not be started at all; a failing CLI is reported in the [`CliOutput`].
    pub fn run<I, S>(&self, args: I) -> anyhow::Result<CliOutput>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        let cmd = self.command(args)?;
        run_with_input(cmd, self.timeout, self.stdin.as_deref())
            .with_context(|| format!("running {}", yarn_launcher().display()))
    }

    /// The `yarn <args...>` command [`run`](Self::run) runs, for a caller that
    /// talks to the JVM while it runs (the timeout and stdin set here do not apply).
    pub fn command<I, S>(&self, args: I) -> anyhow::Result<Command>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        let launcher = yarn_launcher();
        let mut cmd = Command::new("bash");
        cmd.arg(&launcher);
        if let Some(dir) = &self.conf_dir {
            cmd.arg("--config").arg(dir);
        }
        cmd.args(args);
        // Hermetic: nothing from the caller's Hadoop environment leaks in.
        for key in [
            "HADOOP_CONF_DIR",
            "YARN_CONF_DIR",
            "HADOOP_CLASSPATH",
            "YARN_OPTS",
            "YARN_LOGLEVEL",
        ] {
            cmd.env_remove(key);
        }
        // A test that sets up something for every Java client it starts
        // (a Kerberos realm: the JVM reads its own krb5.conf) says so here.
        if let Some(opts) = std::env::var_os(TEST_YARN_OPTS) {
            cmd.env("YARN_OPTS", opts);
        }
        cmd.env("SPINDLE_CLIENT_JARS", &self.jar_dir);
        if !self.extra_classpath.is_empty() {
            let cp = std::env::join_paths(&self.extra_classpath)
                .context("joining extra classpath entries")?;
            cmd.env("HADOOP_CLASSPATH", cp);
        }
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        Ok(cmd)
    }
}

/// The environment variable whose value becomes `YARN_OPTS` of every `yarn`
/// command the harness starts (unless the command sets its own).
pub const TEST_YARN_OPTS: &str = "SPINDLE_TEST_YARN_OPTS";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launcher_exists_and_is_executable() {
        use std::os::unix::fs::PermissionsExt as _;
        let launcher = yarn_launcher();
        let mode = std::fs::metadata(&launcher)
            .map(|m| m.permissions().mode())
            .unwrap_or(0);
        assert!(
            mode & 0o111 != 0,
            "{} must exist and be executable",
            launcher.display()
        );
    }

    #[test]
    fn rejects_non_class_names() {
        let clients = HadoopClients {
            jar_dir: PathBuf::from("/nonexistent"),
            cache_dir: PathBuf::from("/nonexistent"),
        };
        assert!(clients.compile_java("../etc/passwd").is_err());
        assert!(clients.compile_java("").is_err());
    }
}
