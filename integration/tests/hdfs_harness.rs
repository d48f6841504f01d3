//! The HDFS harness itself, with the real Hadoop 3.3.4 client: a started MiniDFSCluster
//! stores and serves a file written through `FsShell`; a killed one refuses; a restarted
//! one serves the same file on the same port.

use spindle_integration::{HadoopClients, HadoopConf, HdfsJars, HdfsServer};

/// `FsShell` (`hadoop fs`) of the 3.3.4 client, with `fs.defaultFS` at `server`.
fn fs_shell(
    clients: &HadoopClients,
    conf_dir: &std::path::Path,
    args: &[&str],
) -> spindle_integration::CliOutput {
    clients
        .yarn()
        .conf_dir(conf_dir)
        .run(std::iter::once("org.apache.hadoop.fs.FsShell").chain(args.iter().copied()))
        .expect("FsShell runs")
}

#[test]
fn a_file_written_survives_a_kill_and_a_restart() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let Some(jars) = HdfsJars::for_tests() else {
        return;
    };
    let mut hdfs = HdfsServer::start(&jars).expect("HDFS starts");
    let conf_dir = tempfile::tempdir().expect("tempdir");
    let mut core = HadoopConf::new();
    core.set("fs.defaultFS", hdfs.uri());
    core.write(&conf_dir.path().join("core-site.xml"))
        .expect("core-site.xml");
    let local = conf_dir.path().join("hello.txt");
    std::fs::write(&local, "hello from the 3.3.4 client\n").expect("write");

    let local_arg = local.to_string_lossy().to_string();
    let put = fs_shell(
        &clients,
        conf_dir.path(),
        &["-put", &local_arg, "/tmp/hello.txt"],
    );
    assert!(put.success(), "put: {put}\n{}", hdfs.log_tail(30));
    let ls = fs_shell(&clients, conf_dir.path(), &["-ls", "/"]);
    assert!(ls.success(), "ls: {ls}");
    assert!(
        ls.stdout.contains("drwxrwxrwt") && ls.stdout.contains("/tmp"),
        "/tmp is world-writable and sticky: {ls}"
    );

    hdfs.kill().expect("kill -9");
    assert!(!hdfs.is_running());
    hdfs.restart().expect("HDFS restarts");
    let cat = fs_shell(&clients, conf_dir.path(), &["-cat", "/tmp/hello.txt"]);
    assert!(
        cat.success(),
        "cat after restart: {cat}\n{}",
        hdfs.log_tail(30)
    );
    assert_eq!(cat.stdout, "hello from the 3.3.4 client\n");
}

/// README's `integration/bin/hdfs [PORT [DATA_DIR]]` serves on the port it is given.
#[test]
fn the_script_for_people_serves_on_the_given_port() {
    let Some(jars) = HdfsJars::for_tests() else {
        return;
    };
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let data = tempfile::tempdir().expect("tempdir");
    let out = data.path().join("out");
    let mut child = std::process::Command::new("bash")
        .arg(spindle_integration::hdfs::launcher())
        .arg(port.to_string())
        .arg(data.path().join("cluster"))
        .env("SPINDLE_HDFS_JARS", jars.dir())
        .stdout(std::fs::File::create(&out).expect("out"))
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("integration/bin/hdfs starts");
    let up = spindle_integration::wait_until(
        std::time::Duration::from_secs(120),
        std::time::Duration::from_millis(200),
        || std::fs::read_to_string(&out).is_ok_and(|t| t.contains("MiniHdfs serving")),
    );
    let _ = child.kill();
    let _ = child.wait();
    let printed = std::fs::read_to_string(&out).unwrap_or_default();
    assert!(
        up,
        "integration/bin/hdfs did not serve on port {port}: {printed}"
    );
    assert!(
        printed.contains(&format!("hdfs://127.0.0.1:{port}/")),
        "{printed}"
    );
}
