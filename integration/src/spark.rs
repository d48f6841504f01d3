//! Spark 3.5.3 from the pyspark install that also provides the Hadoop CLI: its home,
//! its examples, and `spark-submit` against a test cluster with Spark's default uploads
//! (the `__spark_libs__` archive).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{CliOutput, Cluster, HadoopClients};

/// The pyspark package directory (SPARK_HOME of a pip install).
pub fn spark_home(clients: &HadoopClients) -> PathBuf {
    clients
        .jar_dir()
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// Spark's `pi.py` example.
pub fn pi_py(clients: &HadoopClients) -> PathBuf {
    spark_home(clients).join("examples/src/main/python/pi.py")
}

/// Where Spark stages an application's uploads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Staging {
    /// A directory of the cluster's own on the local file system (the harness's
    /// `fs.defaultFS` is `file:///`). Per cluster: two clusters started in the same
    /// millisecond hand out the same application ids, and Spark's staging paths are
    /// named after them.
    ClusterDir,
    /// Spark's default: `.sparkStaging` in the user's home directory on `fs.defaultFS`.
    DefaultFs,
}

/// `spark-submit --master yarn` against `cluster` (its client configuration), with small
/// driver and executor memory and two executors, then `args`.
pub fn submit_command(
    cluster: &Cluster,
    clients: &HadoopClients,
    staging: Staging,
    args: &[&str],
) -> Command {
    let staging_dir = cluster.root().join("staging");
    let staging_dir = (staging == Staging::ClusterDir).then_some(staging_dir.as_path());
    submit_command_to(cluster.conf_dir(), staging_dir, clients, args)
}

/// [`submit_command`] against the RM that the client configuration in `conf_dir` names
/// (Spindle's or Hadoop's), staging in `staging_dir` on the local file system when given
/// (else Spark's default, on `fs.defaultFS`).
pub fn submit_command_to(
    conf_dir: &Path,
    staging_dir: Option<&Path>,
    clients: &HadoopClients,
    args: &[&str],
) -> Command {
    let home = spark_home(clients);
    let mut cmd = Command::new(home.join("bin/spark-submit"));
    cmd.env("SPARK_HOME", &home)
        .env("HADOOP_CONF_DIR", conf_dir)
        .env("YARN_CONF_DIR", conf_dir)
        .env("SPARK_LOCAL_IP", "127.0.0.1")
        .env("PYSPARK_PYTHON", "python3")
        .env_remove("PYSPARK_DRIVER_PYTHON")
        .args(["--master", "yarn"]);
    if let Some(dir) = staging_dir {
        cmd.arg("--conf")
            .arg(format!("spark.yarn.stagingDir=file://{}", dir.display()));
    }
    cmd.args([
        "--conf",
        "spark.driver.memory=512m",
        "--conf",
        "spark.executor.memory=512m",
    ])
    .args(["--conf", "spark.executor.instances=2"])
    .args(args);
    cmd
}

/// The application id `spark-submit` printed.
pub fn app_id_in(output: &CliOutput) -> Option<String> {
    let text = format!("{}\n{}", output.stdout, output.stderr);
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .find(|w| w.starts_with("application_") && w.matches('_').count() == 2)
        .map(str::to_string)
}
