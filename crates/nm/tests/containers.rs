//! Containers on a real NodeManager: started with minted tokens, run as
//! real processes, reported in heartbeats to an in-process fake
//! ResourceManager.
//!
//! The container methods require an NMToken-authenticated caller. One test
//! logs in over IPC with DIGEST-MD5 (the project's IPC client with an
//! NMToken, as the AM launcher and Java's NMClient connect) and calls
//! startContainers / getContainerStatuses / stopContainers on the wire; the
//! others drive `NodeManagerHandle::containers()` with the
//! `NmTokenCaller` the IPC layer derives from such a login, and check the
//! unauthenticated refusal over a plain IPC connection.

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{
    app, attempt, clc, container, file_resource, nm_master_key, process_alive, sign, token_client,
    user, Node, WAIT,
};
use hadoop_protos::yarn::{
    ContainerStateProto, GetContainerStatusesRequestProto, GetContainerStatusesResponseProto,
    LocalResourceProto, LocalResourceTypeProto, LocalResourceVisibilityProto,
    SignalContainerCommandProto, SignalContainerRequestProto, StartContainerRequestProto,
    StartContainersRequestProto, StopContainersRequestProto, StringLocalResourceMapProto,
    StringStringMapProto, UrlProto,
};
use spindle_common::conf::keys;
use spindle_common::{Configuration, ContainerId};
use spindle_ipc::methods::container_management::{
    GET_CONTAINER_STATUSES, START_CONTAINERS, STOP_CONTAINERS,
};
use spindle_ipc::{class, protocols, ClientOptions, IpcClient, IpcError};
use spindle_nm::security::INVALID_TOKEN_CLASS;
use spindle_nm::{exit_status, ContainerPhase, MasterKey};

/// `common::start_node` with the container monitor looking every 200 ms,
/// as the nodes of these tests run.
async fn start_node(tune: impl FnOnce(&mut Configuration)) -> (Node, tempfile::TempDir) {
    common::start_node(
        |conf| {
            conf.set(keys::NM_CONTAINER_MONITOR_INTERVAL_MS, "200");
            tune(conf);
        },
        None,
    )
    .await
}

fn write_zip(path: &Path, entries: &[(&str, &str)]) {
    use std::io::Write;
    let mut w = zip::ZipWriter::new(std::fs::File::create(path).expect("create"));
    for (name, data) in entries {
        w.start_file(*name, zip::write::SimpleFileOptions::default())
            .expect("zip entry");
        w.write_all(data.as_bytes()).expect("zip data");
    }
    w.finish().expect("zip");
}

#[tokio::test]
async fn a_container_runs_with_the_launch_contract_and_reports_its_exit() {
    let (node, _tmp) = start_node(|_| {}).await;
    let id = container(1, 2);

    // Resources: a file, a zip archive, and a file under a nested link name.
    let staging = node.dir.join("staging");
    std::fs::create_dir_all(&staging).expect("staging");
    std::fs::write(staging.join("data.txt"), "data-line\n").expect("write");
    write_zip(
        &staging.join("__spark_conf__.zip"),
        &[("__spark_conf__.properties", "spark.app.name=pi\n")],
    );
    std::fs::write(staging.join("x.txt"), "nested-line\n").expect("write");

    let mut c = clc(&[
        "(",
        "echo hello > {{PWD}}/out;",
        "cat data.txt __spark_conf__/__spark_conf__.properties lib/nested/x.txt > {{PWD}}/seen;",
        "env > {{PWD}}/env.txt;",
        "echo to-stdout; echo to-stderr 1>&2; exit 3",
        ")",
        "1><LOG_DIR>/stdout",
        "2><LOG_DIR>/stderr",
    ]);
    c.local_resources = vec![
        file_resource(
            "data.txt",
            &staging.join("data.txt"),
            LocalResourceTypeProto::File,
            LocalResourceVisibilityProto::Private,
        ),
        file_resource(
            "__spark_conf__",
            &staging.join("__spark_conf__.zip"),
            LocalResourceTypeProto::Archive,
            LocalResourceVisibilityProto::Private,
        ),
        file_resource(
            "lib/nested/x.txt",
            &staging.join("x.txt"),
            LocalResourceTypeProto::File,
            LocalResourceVisibilityProto::Private,
        ),
    ];
    c.environment = vec![
        StringStringMapProto {
            key: Some("CLASSPATH".into()),
            value: Some("{{PWD}}<CPS>{{PWD}}/__spark_conf__".into()),
        },
        StringStringMapProto {
            key: Some("SPARK_USER".into()),
            value: Some(user()),
        },
    ];
    c.tokens = Some(b"HDTS\x00\x00\x00".to_vec());
    node.start_sized(id, 512, c).expect("started");

    let done = node
        .nm
        .containers()
        .wait_done(&id, WAIT)
        .await
        .expect("completes");
    assert_eq!(done.exit_status, 3, "{done:?}");
    assert!(
        done.diagnostics.contains("Exit code: 3"),
        "{}",
        done.diagnostics
    );
    assert!(
        done.diagnostics.contains("to-stderr"),
        "{}",
        done.diagnostics
    );

    let paths = done.paths.clone().expect("paths");
    let app_id = app(1).to_string();
    assert_eq!(
        paths.work_dir,
        node.dir
            .join("local/usercache")
            .join(user())
            .join("appcache")
            .join(&app_id)
            .join(id.to_string())
    );
    assert_eq!(
        paths.log_dir,
        node.dir.join("logs").join(&app_id).join(id.to_string())
    );
    let read =
        |p: PathBuf| std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    assert_eq!(read(paths.work_dir.join("out")), "hello\n");
    assert_eq!(
        read(paths.work_dir.join("seen")),
        "data-line\nspark.app.name=pi\nnested-line\n"
    );
    assert_eq!(read(paths.log_dir.join("stdout")), "to-stdout\n");
    assert_eq!(read(paths.log_dir.join("stderr")), "to-stderr\n");
    assert!(paths.log_dir.join("prelaunch.out").is_file());
    assert!(paths.work_dir.join("tmp").is_dir());
    assert_eq!(
        std::fs::read(paths.work_dir.join("container_tokens")).expect("tokens"),
        b"HDTS\x00\x00\x00"
    );
    let script = read(paths.work_dir.join("launch_container.sh"));
    assert!(
        script.contains("exec /bin/bash -c \"( echo hello > $PWD/out;"),
        "{script}"
    );
    assert!(script.contains("mkdir -p 'lib/nested'"), "{script}");

    let env = read(paths.work_dir.join("env.txt"));
    let var = |k: &str| {
        env.lines()
            .find_map(|l| l.strip_prefix(&format!("{k}=")))
            .map(str::to_string)
            .unwrap_or_else(|| panic!("{k} missing from {env}"))
    };
    assert_eq!(var("CONTAINER_ID"), id.to_string());
    assert_eq!(var("NM_HOST"), "127.0.0.1");
    assert_eq!(var("NM_PORT"), node.node_id().port.to_string());
    assert_eq!(var("USER"), user());
    assert_eq!(var("PWD"), paths.work_dir.display().to_string());
    assert_eq!(
        var("HADOOP_TOKEN_FILE_LOCATION"),
        paths
            .work_dir
            .join("container_tokens")
            .display()
            .to_string()
    );
    assert_eq!(
        var("CLASSPATH"),
        format!("{0}:{0}/__spark_conf__", paths.work_dir.display())
    );
    assert_eq!(var("LOG_DIRS"), paths.log_dir.display().to_string());
    assert!(var("JVM_PID").parse::<u32>().is_ok());
    assert!(var("LOCAL_DIRS").ends_with(&app_id));

    // The RM hears about the completion until it acknowledges it.
    node.rm
        .wait_until("the completion in a heartbeat", |rm| {
            rm.last_reported(&id) == Some((ContainerStateProto::CComplete as i32, 3))
        })
        .await;
    node.rm
        .lock()
        .to_remove
        .push(spindle_nm::wire::container_id_proto(&id));
    let after_ack = node.rm.heartbeat_count() + 2;
    node.rm
        .wait_until("heartbeats after the ack", |rm| {
            rm.heartbeat_count() >= after_ack
        })
        .await;
    assert_eq!(node.rm.last_reported(&id), None);
    assert!(node.nm.containers().report(&id).is_none());

    // Status queries: authenticated callers of the same application only.
    let resp = node
        .nm
        .containers()
        .get_container_statuses(
            &node.caller(1),
            GetContainerStatusesRequestProto {
                container_id: vec![spindle_nm::wire::container_id_proto(&id)],
            },
        )
        .expect("call");
    let msg = resp.failed_requests[0]
        .exception
        .as_ref()
        .and_then(|e| e.message.clone())
        .unwrap_or_default();
    assert!(msg.contains("recently stopped"), "{msg}");

    // Over IPC without an NMToken: refused as a whole.
    let client = IpcClient::connect(
        &node.nm.container_manager_addr().to_string(),
        ClientOptions::new("tester", protocols::CONTAINER_MANAGEMENT),
    )
    .await
    .expect("connect");
    let err = client
        .call_method(
            &GET_CONTAINER_STATUSES,
            &GetContainerStatusesRequestProto::default(),
        )
        .await
        .expect_err("needs an NMToken");
    assert!(
        matches!(&err, IpcError::Remote { class_name, message } if class_name == class::YARN && message == "No NMToken sent"),
        "{err:?}"
    );
    node.nm.stop().await;
}

#[tokio::test]
async fn start_requests_fail_one_by_one() {
    let (node, _tmp) = start_node(|_| {}).await;
    let good = container(1, 2);
    let forged_id = container(1, 3);
    let mut forged = node.token(forged_id, 128);
    forged.password[0] ^= 1;
    let other_app = container(2, 2);
    let resp = node
        .nm
        .containers()
        .start_containers(
            &node.caller(1),
            StartContainersRequestProto {
                start_container_request: vec![
                    StartContainerRequestProto {
                        container_launch_context: Some(clc(&["true"])),
                        container_token: Some(forged),
                    },
                    StartContainerRequestProto {
                        container_launch_context: Some(clc(&["true"])),
                        container_token: Some(node.token(good, 128)),
                    },
                    StartContainerRequestProto {
                        container_launch_context: Some(clc(&["true"])),
                        container_token: Some(node.token(other_app, 128)),
                    },
                ],
            },
        )
        .expect("the call itself succeeds");
    let succeeded: Vec<_> = resp
        .succeeded_requests
        .iter()
        .filter_map(spindle_nm::wire::container_id_from_proto)
        .collect();
    assert_eq!(succeeded, vec![good]);
    assert_eq!(resp.failed_requests.len(), 2);
    let failed = |i: usize| {
        let f = &resp.failed_requests[i];
        let e = f.exception.clone().expect("exception");
        (
            f.container_id
                .as_ref()
                .and_then(spindle_nm::wire::container_id_from_proto),
            e.class_name.unwrap_or_default(),
            e.message.unwrap_or_default(),
        )
    };
    let (id0, class0, msg0) = failed(0);
    assert_eq!(id0, Some(forged_id));
    assert_eq!(class0, INVALID_TOKEN_CLASS);
    assert!(msg0.contains("password does not match"), "{msg0}");
    let (id1, class1, msg1) = failed(1);
    assert_eq!(id1, Some(other_app));
    assert_eq!(class1, class::YARN);
    assert!(
        msg1.starts_with("Unauthorized request to start container"),
        "{msg1}"
    );

    // A replay of the good start is refused.
    let again = node
        .start_sized(good, 128, clc(&["true"]))
        .expect_err("replay");
    assert!(again.1.contains("relaunch the same container"), "{again:?}");

    // A resource with a scheme Spindle cannot fetch.
    let mut s3a = clc(&["true"]);
    s3a.local_resources.push(StringLocalResourceMapProto {
        key: Some("app.jar".into()),
        value: Some(LocalResourceProto {
            resource: Some(UrlProto {
                scheme: Some("s3a".into()),
                host: Some("nn".into()),
                port: Some(8020),
                file: Some("/user/x/app.jar".into()),
                user_info: None,
            }),
            size: Some(1),
            timestamp: Some(1),
            r#type: Some(LocalResourceTypeProto::File as i32),
            visibility: Some(LocalResourceVisibilityProto::Application as i32),
            ..Default::default()
        }),
    });
    let err = node
        .start_sized(container(1, 4), 128, s3a)
        .expect_err("s3a");
    assert!(
        err.1
            .contains("scheme s3a is not supported by Spindle's NodeManager"),
        "{err:?}"
    );
    node.nm.stop().await;
}

#[tokio::test]
async fn a_changed_resource_fails_the_container() {
    let (node, _tmp) = start_node(|_| {}).await;
    let src = node.dir.join("pi.py");
    std::fs::write(&src, "print(1)\n").expect("write");
    let mut res = file_resource(
        "pi.py",
        &src,
        LocalResourceTypeProto::File,
        LocalResourceVisibilityProto::Private,
    );
    if let Some(v) = res.value.as_mut() {
        v.timestamp = Some(v.timestamp.unwrap_or(0) - 1000);
    }
    let mut c = clc(&["true"]);
    c.local_resources.push(res);
    let id = container(1, 2);
    node.start_sized(id, 128, c).expect("accepted");
    let done = node
        .nm
        .containers()
        .wait_done(&id, WAIT)
        .await
        .expect("done");
    assert_eq!(done.exit_status, exit_status::INVALID);
    assert!(
        done.diagnostics.contains("changed on src filesystem"),
        "{}",
        done.diagnostics
    );
    assert!(done.pid.is_none(), "never launched");
    node.nm.stop().await;
}

#[tokio::test]
async fn a_docker_runtime_request_fails_the_container_and_runs_nothing() {
    let (node, _tmp) = start_node(|_| {}).await;
    let marker = node.dir.join("ran-on-the-host");
    let src = node.dir.join("input.txt");
    std::fs::write(&src, "data\n").expect("write");
    let mut c = clc(&[&format!("touch {}", marker.display())]);
    c.local_resources.push(file_resource(
        "input.txt",
        &src,
        LocalResourceTypeProto::File,
        LocalResourceVisibilityProto::Private,
    ));
    for (key, value) in [
        ("YARN_CONTAINER_RUNTIME_TYPE", "docker"),
        ("YARN_CONTAINER_RUNTIME_DOCKER_IMAGE", "library/centos:7"),
    ] {
        c.environment.push(StringStringMapProto {
            key: Some(key.into()),
            value: Some(value.into()),
        });
    }
    let id = container(1, 2);
    node.start_sized(id, 128, c)
        .expect("accepted, as Hadoop accepts it");
    let done = node
        .nm
        .containers()
        .wait_done(&id, WAIT)
        .await
        .expect("done");
    assert_eq!(done.exit_status, exit_status::LAUNCH_FAILED);
    assert!(
        done.diagnostics
            .starts_with("Requested runtime not allowed.")
            && done
                .diagnostics
                .contains("YARN_CONTAINER_RUNTIME_TYPE=docker"),
        "{}",
        done.diagnostics
    );
    assert!(done.pid.is_none(), "never launched");
    assert!(!marker.exists(), "the command ran on the host");
    // Refused before localization: nothing of it was copied to the node.
    let copied = walkdir(&node.dir)
        .into_iter()
        .filter(|p| p.file_name().is_some_and(|n| n == "input.txt") && *p != src)
        .collect::<Vec<_>>();
    assert!(copied.is_empty(), "localized anyway: {copied:?}");

    // The default runtime, asked for by name, runs as before.
    let mut c = clc(&["true"]);
    c.environment.push(StringStringMapProto {
        key: Some("YARN_CONTAINER_RUNTIME_TYPE".into()),
        value: Some("default".into()),
    });
    let id = container(1, 3);
    node.start_sized(id, 128, c).expect("accepted");
    let done = node
        .nm
        .containers()
        .wait_done(&id, WAIT)
        .await
        .expect("done");
    assert_eq!(done.exit_status, 0, "{}", done.diagnostics);
    node.nm.stop().await;
}

/// Every file below `dir`.
fn walkdir(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() && !p.is_symlink() {
                todo.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}

#[tokio::test]
async fn containers_of_an_application_share_one_localized_archive() {
    let (node, _tmp) = start_node(|_| {}).await;
    let zip = node.dir.join("__spark_libs__42.zip");
    write_zip(&zip, &[("a.jar", "A"), ("b.jar", "B")]);
    let ids: Vec<ContainerId> = (2..6).map(|s| container(1, s)).collect();
    for id in &ids {
        let mut c = clc(&["ls __spark_libs__ > {{PWD}}/libs"]);
        c.local_resources.push(file_resource(
            "__spark_libs__",
            &zip,
            LocalResourceTypeProto::Archive,
            LocalResourceVisibilityProto::Private,
        ));
        node.start_sized(*id, 128, c).expect("started");
    }
    for id in &ids {
        let done = node
            .nm
            .containers()
            .wait_done(id, WAIT)
            .await
            .expect("done");
        assert_eq!(done.exit_status, 0, "{done:?}");
        let libs = std::fs::read_to_string(done.paths.expect("paths").work_dir.join("libs"))
            .expect("libs");
        assert_eq!(libs, "a.jar\nb.jar\n");
    }
    assert_eq!(node.nm.containers().localizer().fetch_count(), 1);
    node.nm.stop().await;
}

#[tokio::test]
async fn stop_containers_kills_the_process_group_within_the_delay() {
    let (node, _tmp) = start_node(|_| {}).await;
    let id = container(1, 2);
    // A background child in the same group, and a foreground sleep. The
    // command runs inside `bash -c "..."`, so `$!` is escaped for the
    // inner shell, as Spark escapes its arguments.
    node.start_sized(
        id,
        128,
        clc(&[r"sleep 100 & echo \$! > {{PWD}}/bg.pid; exec sleep 100"]),
    )
    .expect("started");
    let running = node.wait_phase(&id, ContainerPhase::Running).await;
    let work = running.paths.clone().expect("paths").work_dir;
    let bg: i32 = node
        .wait_file(&work.join("bg.pid"))
        .await
        .trim()
        .parse()
        .expect("pid");
    let pid = running.pid.expect("pid");
    assert!(process_alive(bg) && process_alive(pid));

    let resp = node
        .nm
        .containers()
        .stop_containers(
            &node.caller(1),
            StopContainersRequestProto {
                container_id: vec![spindle_nm::wire::container_id_proto(&id)],
            },
        )
        .expect("call");
    assert_eq!(resp.succeeded_requests.len(), 1);
    let done = node
        .nm
        .containers()
        .wait_done(&id, WAIT)
        .await
        .expect("done");
    // Exit code 143 below: SIGTERM ended it, without waiting for the SIGKILL delay.
    assert_eq!(done.exit_status, exit_status::KILLED_BY_APPMASTER);
    assert!(
        done.diagnostics
            .starts_with("Container killed by the ApplicationMaster."),
        "{}",
        done.diagnostics
    );
    assert!(
        done.diagnostics.contains("Exit code is 143"),
        "{}",
        done.diagnostics
    );
    // The whole group got SIGTERM with the container's main process, and
    // before the node reported the container done it sent SIGKILL to the
    // group and to every process still marked as the container's: the
    // background child is dead or being torn down by the kernel. Poll until
    // it is gone.
    let deadline = Instant::now() + Duration::from_secs(3);
    while process_alive(bg) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!process_alive(bg), "the background child survived");

    // Stopping a container of another application is refused.
    let resp = node
        .nm
        .containers()
        .stop_containers(
            &node.caller(2),
            StopContainersRequestProto {
                container_id: vec![spindle_nm::wire::container_id_proto(&id)],
            },
        )
        .expect("call");
    assert_eq!(resp.failed_requests.len(), 1);
    node.nm.stop().await;
}

#[tokio::test]
async fn a_term_ignoring_container_is_killed_after_the_delay() {
    let (node, _tmp) = start_node(|_| {}).await;
    let id = container(1, 2);
    node.start_sized(
        id,
        128,
        clc(&["trap '' TERM; echo ready > {{PWD}}/ready; sleep 100"]),
    )
    .expect("started");
    let running = node.wait_phase(&id, ContainerPhase::Running).await;
    node.wait_file(&running.paths.expect("paths").work_dir.join("ready"))
        .await;
    let started = Instant::now();
    node.nm
        .containers()
        .kill(id, spindle_nm::KillReason::by_app_master());
    let done = node
        .nm
        .containers()
        .wait_done(&id, WAIT)
        .await
        .expect("done");
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(200),
        "SIGKILL after the 250 ms delay, took {took:?}"
    );
    assert_eq!(done.exit_status, exit_status::KILLED_BY_APPMASTER);
    assert!(
        done.diagnostics.contains("Exit code is 137"),
        "{}",
        done.diagnostics
    );
    node.nm.stop().await;
}

/// Ignores SIGQUIT in this test process, as a NodeManager started from a
/// non-interactive shell with `&` has it: containers must still get it.
#[allow(unsafe_code)]
fn ignore_sigquit_in_this_process() {
    use nix::sys::signal::{signal, SigHandler, Signal};
    // SAFETY: installs no handler (SIG_IGN), which cannot race with
    // anything running in this process.
    unsafe { signal(Signal::SIGQUIT, SigHandler::SigIgn) }.expect("ignore SIGQUIT");
}

#[tokio::test]
async fn signals_reach_the_container() {
    ignore_sigquit_in_this_process();
    let (node, _tmp) = start_node(|_| {}).await;
    let id = container(1, 2);
    node.start_sized(
        id,
        128,
        clc(&["trap 'echo dump >> {{PWD}}/quit' QUIT; echo ready > {{PWD}}/ready; while true; do sleep 0.05; done"]),
    )
    .expect("started");
    let running = node.wait_phase(&id, ContainerPhase::Running).await;
    let work = running.paths.expect("paths").work_dir;
    node.wait_file(&work.join("ready")).await;
    let signal = |command: SignalContainerCommandProto| {
        node.nm.containers().signal_to_container(
            &node.caller(1),
            SignalContainerRequestProto {
                container_id: spindle_nm::wire::container_id_proto(&id),
                command: command as i32,
            },
        )
    };
    signal(SignalContainerCommandProto::OutputThreadDump).expect("thread dump");
    assert_eq!(node.wait_file(&work.join("quit")).await, "dump\n");
    signal(SignalContainerCommandProto::ForcefulShutdown).expect("kill");
    let done = node
        .nm
        .containers()
        .wait_done(&id, WAIT)
        .await
        .expect("done");
    assert_eq!(done.exit_status, exit_status::FORCE_KILLED);
    node.nm.stop().await;
}

#[tokio::test]
async fn a_container_over_its_physical_memory_is_killed() {
    let (node, _tmp) = start_node(|conf| {
        conf.set(keys::NM_VMEM_CHECK_ENABLED, "false");
    })
    .await;
    let id = container(1, 2);
    // `tail` keeps a newline-free stream in memory: 300 MB under a 128 MB limit.
    node.start_sized(
        id,
        128,
        clc(&["{ head -c 314572800 /dev/zero; sleep 60; } | tail > /dev/null"]),
    )
    .expect("started");
    let done = node
        .nm
        .containers()
        .wait_done(&id, WAIT)
        .await
        .expect("done");
    assert_eq!(
        done.exit_status,
        exit_status::KILLED_EXCEEDED_PMEM,
        "{done:?}"
    );
    let d = &done.diagnostics;
    assert!(d.contains("beyond the 'PHYSICAL' memory limit"), "{d}");
    assert!(d.contains(" of 128 MB physical memory used"), "{d}");
    // Spark: "[0-9.]+ [KMG]B of [0-9.]+ [KMG]B physical memory used".
    let used = d
        .split("Current usage: ")
        .nth(1)
        .and_then(|s| s.split(" of 128 MB").next())
        .expect("usage");
    let (n, unit) = used.split_once(' ').expect("number and unit");
    assert!(
        n.parse::<f64>().is_ok() && ["KB", "MB", "GB"].contains(&unit),
        "{used}"
    );
    assert!(d.contains("Dump of the process-tree for"), "{d}");
    node.nm.stop().await;
}

#[tokio::test]
async fn the_resource_manager_cleans_up_containers_and_applications() {
    let (node, _tmp) = start_node(|_| {}).await;
    let a = container(1, 2);
    let b = container(2, 2);
    for id in [a, b] {
        node.start_sized(id, 128, clc(&["exec sleep 100"]))
            .expect("started");
        node.wait_phase(&id, ContainerPhase::Running).await;
    }
    // Running containers are reported as C_RUNNING.
    node.rm
        .wait_until("both running in a heartbeat", |rm| {
            rm.last_reported(&a).map(|s| s.0) == Some(ContainerStateProto::CRunning as i32)
                && rm.last_reported(&b).map(|s| s.0) == Some(ContainerStateProto::CRunning as i32)
        })
        .await;
    let app_dir = node
        .dir
        .join("local/usercache")
        .join(user())
        .join("appcache")
        .join(app(2).to_string());
    assert!(app_dir.is_dir());

    node.rm
        .lock()
        .to_cleanup
        .push(spindle_nm::wire::container_id_proto(&a));
    node.rm
        .lock()
        .apps_to_cleanup
        .push(spindle_nm::wire::app_id_proto(&app(2)));
    let done_a = node
        .nm
        .containers()
        .wait_done(&a, WAIT)
        .await
        .expect("a done");
    assert_eq!(done_a.exit_status, exit_status::KILLED_BY_RESOURCEMANAGER);
    node.rm
        .wait_until("b's completion reported", |rm| {
            rm.last_reported(&b)
                == Some((
                    ContainerStateProto::CComplete as i32,
                    exit_status::KILLED_AFTER_APP_COMPLETION,
                ))
        })
        .await;
    // The finished application's directory goes (debug delay 0).
    let deadline = Instant::now() + WAIT;
    while app_dir.exists() {
        assert!(
            Instant::now() < deadline,
            "{} was not deleted",
            app_dir.display()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Its completed container is reported once, then dropped.
    node.rm
        .wait_until("b dropped from heartbeats", |rm| {
            rm.last_reported(&b).is_none()
        })
        .await;
    node.nm.stop().await;
}

#[tokio::test]
async fn no_container_survives_the_node() {
    let (node, _tmp) = start_node(|_| {}).await;
    let id = container(1, 2);
    node.start_sized(id, 128, clc(&["exec sleep 100"]))
        .expect("started");
    let pid = node
        .wait_phase(&id, ContainerPhase::Running)
        .await
        .pid
        .expect("pid");
    assert!(process_alive(pid));
    let exit = tokio::time::timeout(WAIT, node.nm.stop())
        .await
        .expect("the NodeManager stops");
    assert!(exit.is_clean(), "{exit}");
    assert!(
        !process_alive(pid),
        "the container outlived the NodeManager"
    );
}

#[tokio::test]
async fn an_nm_token_client_starts_and_stops_containers_over_ipc() {
    let (node, _tmp) = start_node(|_| {}).await;
    let addr = node.nm.container_manager_addr().to_string();
    let identity = node.nm_identity(1);
    let nm_token = sign(identity.encode(), &nm_master_key(), "NMToken", &addr);
    let attempt_user = attempt(1).to_string();

    // A token signed with another key does not get in.
    let wrong = sign(
        identity.encode(),
        &MasterKey::new(nm_master_key().key_id, b"not-the-key".to_vec()),
        "NMToken",
        &addr,
    );
    let refused = match IpcClient::connect(&addr, token_client(&attempt_user, &wrong)).await {
        Err(e) => Err(e),
        Ok(c) => {
            c.call_method(
                &GET_CONTAINER_STATUSES,
                &GetContainerStatusesRequestProto::default(),
            )
            .await
        }
    };
    assert!(refused.is_err(), "a forged NMToken authenticated");

    let conn = IpcClient::connect(&addr, token_client(&attempt_user, &nm_token))
        .await
        .expect("NMToken login");
    let id = container(1, 2);
    let resp: hadoop_protos::yarn::StartContainersResponseProto = conn
        .call_method(
            &START_CONTAINERS,
            &StartContainersRequestProto {
                start_container_request: vec![StartContainerRequestProto {
                    container_launch_context: Some(clc(&["exec sleep 100"])),
                    container_token: Some(node.token(id, 128)),
                }],
            },
        )
        .await
        .expect("startContainers");
    assert!(resp.failed_requests.is_empty(), "{resp:?}");
    assert_eq!(
        resp.succeeded_requests,
        vec![spindle_nm::wire::container_id_proto(&id)]
    );
    node.wait_phase(&id, ContainerPhase::Running).await;

    let statuses: GetContainerStatusesResponseProto = conn
        .call_method(
            &GET_CONTAINER_STATUSES,
            &GetContainerStatusesRequestProto {
                container_id: vec![spindle_nm::wire::container_id_proto(&id)],
            },
        )
        .await
        .expect("getContainerStatuses");
    let s = &statuses.status[0];
    assert_eq!(s.state, Some(ContainerStateProto::CRunning as i32));
    assert_eq!(s.capability.as_ref().and_then(|c| c.memory), Some(128));

    let stopped: hadoop_protos::yarn::StopContainersResponseProto = conn
        .call_method(
            &STOP_CONTAINERS,
            &StopContainersRequestProto {
                container_id: vec![spindle_nm::wire::container_id_proto(&id)],
            },
        )
        .await
        .expect("stopContainers");
    assert_eq!(stopped.succeeded_requests.len(), 1);
    let done = node
        .nm
        .containers()
        .wait_done(&id, WAIT)
        .await
        .expect("done");
    assert_eq!(done.exit_status, exit_status::KILLED_BY_APPMASTER);
    node.nm.stop().await;
}

#[tokio::test]
async fn a_restarted_node_with_recovery_reuses_its_localized_resources() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let recovery_dir = tmp.path().join("nm-recovery");
    // Recovery needs a fixed port (the node's id is kept across starts).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let recovery = {
        let dir = recovery_dir.display().to_string();
        move |c: &mut Configuration| {
            c.set("yarn.nodemanager.recovery.enabled", "true");
            c.set("yarn.nodemanager.recovery.dir", dir.as_str());
            c.set(keys::NM_ADDRESS, format!("127.0.0.1:{port}"));
        }
    };
    let zip = tmp.path().join("__spark_libs__7.zip");
    write_zip(&zip, &[("a.jar", "A")]);
    let run = |node: &Node, seq: i64| {
        let mut c = clc(&["ls __spark_libs__ > {{PWD}}/libs"]);
        c.local_resources.push(file_resource(
            "__spark_libs__",
            &zip,
            LocalResourceTypeProto::Archive,
            LocalResourceVisibilityProto::Private,
        ));
        node.start_sized(container(1, seq), 128, c)
            .expect("started");
    };
    let done = |node: &Node, seq: i64| {
        let containers = node.nm.containers().clone();
        async move {
            let done = containers
                .wait_done(&container(1, seq), WAIT)
                .await
                .expect("done");
            assert_eq!(done.exit_status, 0, "{done:?}");
        }
    };

    let (node, tmp) = common::start_node_in(tmp, recovery.clone(), common::Setup::default()).await;
    run(&node, 2);
    done(&node, 2).await;
    assert_eq!(node.nm.containers().localizer().fetch_count(), 1);
    node.nm.stop().await;

    // The same node again, on the same dirs: the application's next
    // container gets the copy the first run made.
    let (node, _tmp) = common::start_node_in(tmp, recovery, common::Setup::default()).await;
    run(&node, 3);
    done(&node, 3).await;
    assert_eq!(
        node.nm.containers().localizer().fetch_count(),
        0,
        "the archive was localized again"
    );
    node.nm.stop().await;
}
