//! Auxiliary services on a real NodeManager: Hadoop 3.3.4's own
//! `org.apache.hadoop.mapred.ShuffleHandler`, hosted in the node's Java host
//! (`java/aux-host`, built by `java/aux-host/build.sh`), started before the
//! node registers, its meta data (the port it bound) returned by
//! `startContainers` and exported to containers, service data delivered to
//! its `initializeApplication`, a JVM killed and started again while the
//! node keeps starting containers, and the start-up errors: a class that
//! does not exist, no `java`.
//!
//! Without a built host the tests print `SKIP:` and pass, except under CI.

mod common;

use std::io::Write;
use std::net::TcpStream;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::{app, capture, clc, container, user, Capture, FakeRm, Node, Setup};
use hadoop_protos::yarn::StringBytesMapProto;
use spindle_common::Configuration;
use spindle_ipc::class;
use spindle_nm::aux_services::config as aux_config;
use spindle_nm::{ContainerPhase, NodeManager};

/// The built Java host, or `None` (SKIP) outside CI.
fn host_dir() -> Option<PathBuf> {
    let dir = std::env::var_os(aux_config::JAVA_HOST_DIR_ENV)
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/spindle-aux-host"))
        })?;
    if dir.join("aux-host.jar").is_file() {
        return Some(dir);
    }
    if spindle_integration::clients::running_in_ci() {
        panic!("the Java aux-service host is required under CI: run java/aux-host/build.sh");
    }
    eprintln!(
        "SKIP: run java/aux-host/build.sh (no aux-host.jar in {})",
        dir.display()
    );
    None
}

/// Hadoop's ShuffleHandler as the Java-hosted service `java_shuffle`, on any
/// free port.
fn hosted_shuffle(conf: &mut Configuration, dir: &std::path::Path) {
    conf.set(aux_config::AUX_SERVICES, "java_shuffle");
    conf.set(
        "yarn.nodemanager.aux-services.java_shuffle.class",
        aux_config::SHUFFLE_HANDLER_CLASS,
    );
    conf.set(
        "spindle.nodemanager.aux-services.java_shuffle.java-hosted",
        "true",
    );
    conf.set("mapreduce.shuffle.port", "0");
    conf.set(aux_config::JAVA_HOST_DIR, dir.display().to_string());
}

/// A `Token<JobTokenIdentifier>` as `Token.write` writes it (what the MR
/// AM puts in `serviceData["mapreduce_shuffle"]`).
fn job_token() -> Vec<u8> {
    let mut out = Vec::new();
    let mut field = |b: &[u8]| {
        out.push(u8::try_from(b.len()).expect("short"));
        out.extend_from_slice(b);
    };
    field(b"\x00\x04user\x00\x00\x0ejob_1_0001");
    field(&[7u8; 20]);
    field(b"mapreduce.job");
    field(b"");
    out
}

fn port_of(meta: &[u8]) -> u16 {
    assert_eq!(meta.len(), 4, "ShuffleHandler's meta data is a 4-byte port");
    u16::try_from(u32::from_be_bytes([meta[0], meta[1], meta[2], meta[3]])).expect("a port")
}

async fn wait_log(capture: &Capture, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !capture.text().contains(what) {
        assert!(
            Instant::now() < deadline,
            "the log never said {what:?}:\n{}",
            capture.text()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn with_service_data(
    commands: &[&str],
    name: &str,
    data: Vec<u8>,
) -> hadoop_protos::yarn::ContainerLaunchContextProto {
    let mut c = clc(commands);
    c.service_data.push(StringBytesMapProto {
        key: Some(name.into()),
        value: Some(data),
    });
    c
}

#[tokio::test]
async fn hadoops_shuffle_handler_is_hosted_and_supervised() {
    let Some(dir) = host_dir() else { return };
    let capture = capture();

    let (node, _tmp) = common::start_node(|c| hosted_shuffle(c, &dir), None).await;
    let aux = node.nm.containers().aux_services().clone();
    let first_pid = aux.java_host_pid().expect("the JVM runs");
    let meta = aux.meta_data();
    let port = port_of(meta.get("java_shuffle").expect("meta data"));
    TcpStream::connect(("127.0.0.1", port)).expect("the hosted ShuffleHandler listens");

    // The meta data comes back from startContainers; the service data
    // reaches initializeApplication; the container sees NM_AUX_SERVICE_*.
    let id = container(1, 1);
    let out = node.dir.join("aux-env");
    let resp = node
        .start_request(
            id,
            with_service_data(
                &[&format!(
                    "echo \"$NM_AUX_SERVICE_java_shuffle\" > {}",
                    out.display()
                )],
                "java_shuffle",
                job_token(),
            ),
            128,
            &user(),
            &user(),
        )
        .expect("the call is accepted");
    assert!(resp.failed_requests.is_empty(), "{resp:?}");
    let returned: Vec<_> = resp
        .services_meta_data
        .iter()
        .map(|m| {
            (
                m.key.clone().unwrap_or_default(),
                m.value.clone().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        returned,
        vec![("java_shuffle".to_string(), meta["java_shuffle"].clone())]
    );
    let job = format!("job_{}_{:04}", app(1).cluster_timestamp, app(1).id);
    wait_log(&capture, &format!("Added token for {job}")).await;
    node.wait_done(&id).await;
    {
        use base64::Engine as _;
        let env = node.wait_file(&out).await;
        assert_eq!(
            env.trim(),
            base64::engine::general_purpose::STANDARD.encode(&meta["java_shuffle"])
        );
    }

    // Unknown services are refused with Hadoop's class and message.
    let refused = node.start_sized(
        container(2, 1),
        128,
        with_service_data(&["true"], "spark_shuffle", vec![]),
    );
    assert_eq!(
        refused,
        Err((
            class::INVALID_AUX_SERVICE.to_string(),
            "The auxService:spark_shuffle does not exist".to_string()
        ))
    );

    // A JVM that dies is started again, its services with it, and the
    // applications it knew are initialized again; containers go on.
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(first_pid).expect("pid")),
        nix::sys::signal::Signal::SIGKILL,
    )
    .expect("kill the JVM");
    let deadline = Instant::now() + Duration::from_secs(90);
    let second_pid = loop {
        match aux.java_host_pid() {
            Some(p) if p != first_pid => break p,
            _ => {}
        }
        assert!(
            Instant::now() < deadline,
            "the JVM was not started again:\n{}",
            capture.text()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    wait_log(&capture, "the Java aux-service host died").await;
    let new_port = port_of(&aux.meta_data()["java_shuffle"]);
    TcpStream::connect(("127.0.0.1", new_port)).expect("the restarted ShuffleHandler listens");
    let id3 = container(3, 1);
    node.start(
        id3,
        with_service_data(&["true"], "java_shuffle", job_token()),
    )
    .expect("containers start while and after the JVM restarts");
    let job3 = format!("job_{}_{:04}", app(3).cluster_timestamp, app(3).id);
    wait_log(&capture, &format!("Added token for {job3}")).await;
    node.wait_done(&id3).await;
    assert!(
        capture
            .text()
            .matches(&format!("Added token for {job}"))
            .count()
            >= 2,
        "application 1 was not initialized again in the new JVM"
    );

    let exit = node.nm.stop().await;
    assert_eq!(exit, spindle_nm::NmExit::Stopped);
    assert!(
        !PathBuf::from(format!("/proc/{second_pid}")).exists(),
        "the JVM outlived the node"
    );
}

/// The status of a `/mapOutput` request for a map of `app`, signed with
/// the job token's password as Hadoop's Fetcher signs it.
fn fetch_status(port: u16, app: spindle_common::ApplicationId) -> u16 {
    use base64::Engine as _;
    use hmac::Mac as _;
    use std::io::Read as _;
    let job = format!("job_{}_{:04}", app.cluster_timestamp, app.id);
    let map = format!("attempt_{}_{:04}_m_000000_0", app.cluster_timestamp, app.id);
    let path = format!("/mapOutput?job={job}&reduce=0&map={map}");
    let mut mac = hmac::Hmac::<sha1::Sha1>::new_from_slice(&[7u8; 20]).expect("key");
    // SecureShuffleUtils.buildMsgFrom(url): port, path, '?', query.
    mac.update(format!("{port}{path}").as_bytes());
    let hash = base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes());
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nUrlHash: {hash}\r\nname: mapreduce\r\n\
         version: 1.0.0\r\nConnection: close\r\n\r\n"
    )
    .expect("send");
    let mut head = [0u8; 12];
    s.read_exact(&mut head).expect("a status line");
    std::str::from_utf8(&head[9..12])
        .ok()
        .and_then(|c| c.parse().ok())
        .expect("a status code")
}

#[tokio::test]
async fn mapreduce_shuffle_is_served_natively() {
    let capture = capture();
    let (node, _tmp) = common::start_node(
        |c| {
            c.set(aux_config::AUX_SERVICES, "mapreduce_shuffle");
            c.set(
                "yarn.nodemanager.aux-services.mapreduce_shuffle.class",
                aux_config::SHUFFLE_HANDLER_CLASS,
            );
            c.set("mapreduce.shuffle.port", "0");
            // No Java: the native shuffle needs none.
            c.set(aux_config::JAVA_HOST_JAVA, "/nonexistent/bin/java");
        },
        None,
    )
    .await;
    let aux = node.nm.containers().aux_services().clone();
    assert_eq!(aux.java_host_pid(), None);
    let port = port_of(&aux.meta_data()["mapreduce_shuffle"]);
    // Before any container of the application brought its job token, the
    // shuffle does not know the job: 401, as Hadoop's.
    let status = tokio::task::spawn_blocking(move || fetch_status(port, app(1)))
        .await
        .expect("fetch");
    assert_eq!(status, 401);
    let id = container(1, 1);
    let resp = node
        .start_request(
            id,
            with_service_data(&["true"], "mapreduce_shuffle", job_token()),
            128,
            &user(),
            &user(),
        )
        .expect("accepted");
    assert!(resp.failed_requests.is_empty(), "{resp:?}");
    assert_eq!(resp.services_meta_data.len(), 1);
    node.wait_done(&id).await;
    // Now the request is authenticated; the map output does not exist.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let status = tokio::task::spawn_blocking(move || fetch_status(port, app(1)))
            .await
            .expect("fetch");
        if status != 401 {
            assert_ne!(status, 200, "no map output was written");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the job token never reached the shuffle:\n{}",
            capture.text()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    node.nm.stop().await;
    assert!(
        TcpStream::connect(("127.0.0.1", port)).is_err(),
        "the shuffle still listens after the node stopped"
    );
}

async fn start_error(tune: impl FnOnce(&mut Configuration)) -> String {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (_rm, server) = FakeRm::start(Setup::default()).await;
    let cfg = common::config(tmp.path(), server.local_addr(), tune);
    match NodeManager::start_with_config(cfg).await {
        Ok(_) => panic!("the node started"),
        Err(e) => e.to_string(),
    }
}

#[tokio::test]
async fn a_class_that_does_not_exist_fails_the_start() {
    let Some(dir) = host_dir() else { return };
    let e = start_error(|c| {
        c.set(aux_config::AUX_SERVICES, "nosuch");
        c.set(
            "yarn.nodemanager.aux-services.nosuch.class",
            "org.example.NoSuchService",
        );
        c.set(aux_config::JAVA_HOST_DIR, dir.display().to_string());
    })
    .await;
    assert!(e.contains("nosuch"), "{e}");
    assert!(e.contains("org.example.NoSuchService"), "{e}");
    assert!(e.contains("ClassNotFoundException"), "{e}");

    // With a .classpath (its own class loader) too.
    let e = start_error(|c| {
        c.set(aux_config::AUX_SERVICES, "isolated");
        c.set(
            "yarn.nodemanager.aux-services.isolated.class",
            "org.example.Missing",
        );
        c.set(
            "yarn.nodemanager.aux-services.isolated.classpath",
            "/nonexistent/*",
        );
        c.set(aux_config::JAVA_HOST_DIR, dir.display().to_string());
    })
    .await;
    assert!(e.contains("org.example.Missing"), "{e}");
}

#[tokio::test]
async fn without_java_the_node_says_so_and_refuses_to_start() {
    let e = start_error(|c| {
        c.set(aux_config::AUX_SERVICES, "spark_shuffle");
        c.set(
            "yarn.nodemanager.aux-services.spark_shuffle.class",
            "org.apache.spark.network.yarn.YarnShuffleService",
        );
        c.set(aux_config::JAVA_HOST_JAVA, "/nonexistent/bin/java");
    })
    .await;
    assert!(e.contains("java was not found"), "{e}");
    assert!(e.contains("spark_shuffle"), "{e}");
}

#[tokio::test]
async fn a_node_without_services_answers_no_meta_data() {
    let (node, _tmp): (Node, _) = common::start_node(|_| {}, None).await;
    let id = container(1, 1);
    let resp = node
        .start_request(id, clc(&["true"]), 128, &user(), &user())
        .expect("accepted");
    assert!(resp.services_meta_data.is_empty());
    node.wait_phase(&id, ContainerPhase::Done).await;
}

/// The host's side of the protocol: a frame over the limit, or one it cannot
/// read, ends it with status 3; end of input ends it with 0.
#[test]
fn the_java_host_refuses_bad_frames() {
    let Some(dir) = host_dir() else { return };
    let run = |input: &[u8]| {
        let mut child = std::process::Command::new("java")
            .arg("-cp")
            .arg(format!(
                "{}:{}/lib/*",
                dir.join("aux-host.jar").display(),
                dir.display()
            ))
            .arg(spindle_nm::aux_services::java::MAIN_CLASS)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("java runs");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(input)
            .expect("write");
        let out = child.wait_with_output().expect("the host ends");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, err) = run(&[0x7f, 0xff, 0xff, 0xff]);
    assert_eq!(code, Some(3), "{err}");
    assert!(err.contains("over the limit"), "{err}");
    // An unknown request.
    let (code, err) = run(&[0, 0, 0, 1, 99]);
    assert_eq!(code, Some(3), "{err}");
    assert!(err.contains("unknown request 99"), "{err}");
    // A string longer than its frame.
    let (code, err) = run(&[0, 0, 0, 5, 3, 0, 0, 0, 9]);
    assert_eq!(code, Some(3), "{err}");
    assert!(err.contains("a bad frame"), "{err}");
    let (code, err) = run(&[]);
    assert_eq!(code, Some(0), "{err}");
}

/// A JVM that died more often than `max-restarts` allows: its services are
/// given up, said so, and the node keeps starting containers (their events
/// to the lost services fail, logged).
#[tokio::test]
async fn a_host_given_up_leaves_the_node_serving() {
    let Some(dir) = host_dir() else { return };
    let capture = capture();
    let (node, _tmp) = common::start_node(
        |c| {
            hosted_shuffle(c, &dir);
            c.set(aux_config::JAVA_HOST_MAX_RESTARTS, "0");
        },
        None,
    )
    .await;
    let aux = node.nm.containers().aux_services().clone();
    let pid = aux.java_host_pid().expect("the JVM runs");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(pid).expect("pid")),
        nix::sys::signal::Signal::SIGKILL,
    )
    .expect("kill the JVM");
    wait_log(&capture, "its services (java_shuffle) are given up").await;
    assert_eq!(aux.java_host_pid(), None);
    let id = container(5, 1);
    node.start(
        id,
        with_service_data(&["true"], "java_shuffle", job_token()),
    )
    .expect("the node still starts containers");
    assert_eq!(node.wait_done(&id).await.exit_status, 0);
    wait_log(
        &capture,
        "The auxService name is java_shuffle and it got an error at event: APPLICATION_INIT",
    )
    .await;
    node.nm.stop().await;
}
