//! NodeManager recovery (`yarn.nodemanager.recovery.enabled`) with real
//! `spindle nodemanager` processes killed with SIGKILL: the next one on the
//! same dirs reports the running containers at registration, keeps them
//! running and reports their completion with their exit codes; a container
//! that ended while no NodeManager ran is reported with its exit code; a
//! reacquired container can be stopped; a damaged record loses its
//! container (killed, named in a warning) and nothing else. (With recovery
//! off, `executor.rs` shows that nothing of a killed NodeManager's
//! containers survives the next start.)

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::process::{
    binary_or_skip, nm_client, start_clc_over_ipc, start_over_ipc, work_dir, write_conf, NmProcess,
};
use common::{container, process_alive, wait_file, FakeRm, Setup};
use hadoop_protos::yarn::{
    ContainerStateProto, RegisterNodeManagerRequestProto, SignalContainerCommandProto,
    SignalContainerRequestProto, SignalContainerResponseProto, StopContainersRequestProto,
    StopContainersResponseProto,
};
use spindle_common::conf::keys;
use spindle_common::ContainerId;
use spindle_ipc::methods::container_management::{SIGNAL_TO_CONTAINER, STOP_CONTAINERS};
use spindle_nm::executor::{keys as ekeys, CgroupRoot, CgroupSettings};
use spindle_nm::exit_status;

const WAIT: Duration = Duration::from_secs(30);

fn setup() -> Setup {
    Setup {
        heartbeat_interval_ms: 100,
        wait: WAIT,
        ..Setup::default()
    }
}

/// A port free now, for a NodeManager that must keep its NodeId across
/// restarts (recovery refuses an ephemeral port, as Hadoop's does).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

fn recovery_conf(dir: &Path, rm: std::net::SocketAddr, extra: &[(&str, &str)]) -> PathBuf {
    let recovery = dir.join("recovery").display().to_string();
    let address = format!("127.0.0.1:{}", free_port());
    let mut settings = vec![
        (keys::NM_RECOVERY_ENABLED, "true"),
        (keys::NM_RECOVERY_DIR, recovery.as_str()),
        (keys::NM_ADDRESS, address.as_str()),
    ];
    settings.extend_from_slice(extra);
    write_conf(dir, rm, &settings)
}

/// Runs until `{{PWD}}/go` exists, then exits with `code`; a SIGQUIT
/// (a thread dump) appends to `{{PWD}}/quit`.
fn waits_for_go(code: i32) -> String {
    format!(
        "trap 'echo dump >> {{{{PWD}}}}/quit' QUIT; echo $$ > {{{{PWD}}}}/main.pid; while [ ! -e {{{{PWD}}}}/go ]; do sleep 0.05; done; exit {code}"
    )
}

fn pid_file(dir: &Path, id: &ContainerId) -> PathBuf {
    spindle_nm::executor::pid_file(&dir.join("local"), id)
}

fn exit_code_file(dir: &Path, id: &ContainerId) -> PathBuf {
    spindle_nm::executor::exit_code_file(&pid_file(dir, id))
}

async fn main_pid(dir: &Path, id: &ContainerId) -> i32 {
    wait_file(&work_dir(dir, id).join("main.pid"), WAIT)
        .await
        .trim()
        .parse()
        .expect("pid")
}

fn go(dir: &Path, id: &ContainerId) {
    std::fs::write(work_dir(dir, id).join("go"), "").expect("go");
}

async fn wait_dead(pid: i32, what: &str) {
    let deadline = Instant::now() + WAIT;
    while process_alive(pid) {
        assert!(
            Instant::now() < deadline,
            "{what} (pid {pid}) is still alive"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// (state, exit status) of `id` in a registration.
fn registered(r: &RegisterNodeManagerRequestProto, id: &ContainerId) -> Option<(i32, i32)> {
    r.container_statuses
        .iter()
        .find(|s| {
            s.container_id
                .as_ref()
                .and_then(spindle_nm::wire::container_id_from_proto)
                == Some(*id)
        })
        .map(|s| {
            (
                s.container_state.unwrap_or(0),
                s.container_exit_status.unwrap_or(0),
            )
        })
}

const RUNNING: i32 = ContainerStateProto::CRunning as i32;
const COMPLETE: i32 = ContainerStateProto::CComplete as i32;

#[tokio::test]
async fn a_restarted_node_manager_reacquires_its_running_containers() {
    let Some(bin) = binary_or_skip("a_restarted_node_manager_reacquires_its_running_containers")
    else {
        return;
    };
    // With a cgroup per container where there is one, and without.
    match cgroups_available() {
        Ok(()) => reacquires(&bin, 150, &[]).await,
        Err(why) => {
            assert!(
                std::env::var_os("CI").is_none(),
                "cgroup v2 is not available here ({why}), and CI's machines have it"
            );
            eprintln!("SKIP: cgroup v2 is not available here ({why}): only the reacquisition without cgroups is tested");
        }
    }
    reacquires(&bin, 152, &[(ekeys::CGROUPS_ENABLED, "false")]).await;
}

fn cgroups_available() -> Result<(), String> {
    let conf = spindle_common::Configuration::with_defaults();
    let cfg = spindle_nm::executor::ExecutorConfig::from_conf(&conf).expect("defaults");
    CgroupRoot::detect(&CgroupSettings {
        memory: false,
        cpu: false,
        ..cfg.cgroups
    })
    .map(|_| ())
}

async fn reacquires(bin: &Path, app_n: i32, extra: &[(&str, &str)]) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    let (rm, server) = FakeRm::start(setup()).await;
    let conf = recovery_conf(dir, server.local_addr(), extra);
    let mut first = NmProcess::start(bin, &conf, dir.join("nm1.log"), None);
    let node = rm.registered_node(0).await;
    let client = nm_client(&node, app_n, "alice").await;
    // Runs on; ends while no NodeManager runs; stopped after the restart.
    // Killed with its wrapper while no NodeManager runs: lost.
    let lost = container(app_n, 5);
    let (runs_on, ends_meanwhile, stopped) = (
        container(app_n, 2),
        container(app_n, 3),
        container(app_n, 4),
    );
    start_over_ipc(&client, &node, runs_on, &waits_for_go(7)).await;
    start_over_ipc(&client, &node, ends_meanwhile, &waits_for_go(5)).await;
    start_over_ipc(&client, &node, stopped, &waits_for_go(0)).await;
    start_over_ipc(&client, &node, lost, &waits_for_go(0)).await;
    let runs_on_pid = main_pid(dir, &runs_on).await;
    let ends_meanwhile_pid = main_pid(dir, &ends_meanwhile).await;
    let stopped_pid = main_pid(dir, &stopped).await;
    let lost_pid = main_pid(dir, &lost).await;
    for id in [runs_on, ends_meanwhile, stopped, lost] {
        rm.wait_until("the containers running", |rm| {
            rm.last_reported(&id).map(|s| s.0) == Some(RUNNING)
        })
        .await;
    }

    first.kill9();
    drop(client);
    assert!(process_alive(runs_on_pid) && process_alive(ends_meanwhile_pid));
    go(dir, &ends_meanwhile);
    wait_dead(ends_meanwhile_pid, "the container told to exit").await;
    // Its wrapper wrote the exit code next to the pid file, as Hadoop's
    // launch wrapper does.
    assert_eq!(
        wait_file(&exit_code_file(dir, &ends_meanwhile), WAIT).await,
        "5\n"
    );
    let lost_group: i32 = std::fs::read_to_string(pid_file(dir, &lost))
        .expect("pid file")
        .trim()
        .parse()
        .expect("pid");
    nix::sys::signal::killpg(
        nix::unistd::Pid::from_raw(lost_group),
        nix::sys::signal::Signal::SIGKILL,
    )
    .expect("killpg");
    wait_dead(lost_pid, "the container killed with its wrapper").await;

    let mut second = NmProcess::start(bin, &conf, dir.join("nm2.log"), None);
    let again = rm.registered_node(1).await;
    assert_eq!(again, node, "the NodeId is kept");
    let reg = rm.registrations().pop().expect("registration");
    assert_eq!(
        registered(&reg, &runs_on),
        Some((RUNNING, exit_status::INVALID)),
        "{reg:?}\n{}",
        second.log()
    );
    assert_eq!(
        registered(&reg, &ends_meanwhile),
        Some((COMPLETE, 5)),
        "{reg:?}\n{}",
        second.log()
    );
    assert_eq!(
        registered(&reg, &lost),
        Some((COMPLETE, 154)),
        "Hadoop's ExitCode.LOST\n{reg:?}"
    );
    assert!(
        process_alive(runs_on_pid),
        "the reacquired container was killed:\n{}",
        second.log()
    );

    // Stopped by its application master through the new NodeManager.
    let client = nm_client(&node, app_n, "alice").await;
    let resp: StopContainersResponseProto = client
        .call_method(
            &STOP_CONTAINERS,
            &StopContainersRequestProto {
                container_id: vec![spindle_nm::wire::container_id_proto(&stopped)],
            },
        )
        .await
        .expect("stopContainers");
    assert_eq!(resp.succeeded_requests.len(), 1, "{resp:?}");
    wait_dead(stopped_pid, "the stopped reacquired container").await;
    rm.wait_until("the stopped container's completion", |rm| {
        rm.last_reported(&stopped) == Some((COMPLETE, exit_status::KILLED_BY_APPMASTER))
    })
    .await;

    // Signalled through the new NodeManager (a thread dump), and still
    // watched: its own exit reaches the RM with its code.
    let _: SignalContainerResponseProto = client
        .call_method(
            &SIGNAL_TO_CONTAINER,
            &SignalContainerRequestProto {
                container_id: spindle_nm::wire::container_id_proto(&runs_on),
                command: SignalContainerCommandProto::OutputThreadDump as i32,
            },
        )
        .await
        .expect("signalToContainer");
    assert_eq!(
        wait_file(&work_dir(dir, &runs_on).join("quit"), WAIT).await,
        "dump\n"
    );
    assert!(process_alive(runs_on_pid));
    go(dir, &runs_on);
    rm.wait_until(
        "the reacquired container's completion with its exit code",
        |rm| rm.last_reported(&runs_on) == Some((COMPLETE, 7)),
    )
    .await;
    let log = second.log();
    assert!(log.contains("reacquired a running container"), "{log}");
    assert!(second.stop().success(), "{}", second.log());
}

#[tokio::test]
async fn a_damaged_record_loses_its_container_and_nothing_else() {
    let Some(bin) = binary_or_skip("a_damaged_record_loses_its_container_and_nothing_else") else {
        return;
    };
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    let (rm, server) = FakeRm::start(setup()).await;
    let conf = recovery_conf(dir, server.local_addr(), &[]);
    let mut first = NmProcess::start(&bin, &conf, dir.join("nm1.log"), None);
    let node = rm.registered_node(0).await;
    let client = nm_client(&node, 151, "alice").await;
    let (kept, damaged) = (container(151, 2), container(151, 3));
    start_over_ipc(&client, &node, kept, &waits_for_go(0)).await;
    start_over_ipc(&client, &node, damaged, &waits_for_go(0)).await;
    let kept_pid = main_pid(dir, &kept).await;
    let damaged_pid = main_pid(dir, &damaged).await;
    for id in [kept, damaged] {
        rm.wait_until("the containers running", |rm| {
            rm.last_reported(&id).map(|s| s.0) == Some(RUNNING)
        })
        .await;
    }
    first.kill9();

    let record = dir.join("recovery/containers").join(damaged.to_string());
    let text = std::fs::read_to_string(&record).expect("the record");
    std::fs::write(&record, &text[..text.len() / 2]).expect("truncate");

    let mut second = NmProcess::start(&bin, &conf, dir.join("nm2.log"), None);
    rm.registered_node(1).await;
    let reg = rm.registrations().pop().expect("registration");
    assert_eq!(
        registered(&reg, &kept).map(|s| s.0),
        Some(RUNNING),
        "{reg:?}"
    );
    assert_eq!(registered(&reg, &damaged), None, "{reg:?}");
    wait_dead(damaged_pid, "the container of the damaged record").await;
    let log = second.log();
    assert!(
        log.contains(&record.display().to_string()) && log.contains("the container is lost"),
        "{log}"
    );
    assert!(process_alive(kept_pid), "{log}");
    go(dir, &kept);
    rm.wait_until("the kept container's completion", |rm| {
        rm.last_reported(&kept) == Some((COMPLETE, 0))
    })
    .await;
    assert!(second.stop().success(), "{}", second.log());
}

/// Records a previous run left, read by an in-process NodeManager: a
/// container recorded before it was launched is lost (it is not started
/// again), one recorded complete is reported with its exit status until the
/// ResourceManager acknowledges it (then its record goes), and their
/// application is reported running.
#[tokio::test]
async fn recorded_containers_that_never_ran_or_had_ended_are_reported() {
    use spindle_nm::recovery::{ContainerRecord, StateStore};
    use spindle_nm::{ContainerPhase, ContainerTokenIdentifier};

    let tmp = tempfile::tempdir().expect("tempdir");
    let recovery = tmp.path().join("recovery");
    let store = StateStore::open(&recovery).expect("store");
    let record = |seq: i64, phase: ContainerPhase, exit_status: i32| ContainerRecord {
        grant: ContainerTokenIdentifier::new(
            container(153, seq),
            "127.0.0.1:1",
            "alice",
            spindle_common::Resource::new(256, 1),
            common::now_ms() + 600_000,
            1,
            common::FIRST_RM_IDENTIFIER,
            0,
            common::now_ms(),
            hadoop_protos::yarn::ContainerTypeProto::Task,
        ),
        phase,
        exit_status,
        diagnostics: String::new(),
        paths: None,
        service_data: Vec::new(),
    };
    let (never_ran, ended) = (container(153, 2), container(153, 3));
    store.store_container(&record(2, ContainerPhase::Localizing, exit_status::INVALID));
    store.store_container(&record(3, ContainerPhase::Done, 3));
    store.flush_blocking();
    let address = format!("127.0.0.1:{}", free_port());
    let (node, _tmp) = common::start_node_in(
        tmp,
        |conf| {
            conf.set(keys::NM_RECOVERY_ENABLED, "true");
            conf.set(keys::NM_RECOVERY_DIR, recovery.display().to_string());
            conf.set(keys::NM_ADDRESS, address);
        },
        setup(),
    )
    .await;
    let reg = node.rm.registrations().pop().expect("registration");
    assert_eq!(
        registered(&reg, &never_ran),
        Some((COMPLETE, 154)),
        "{reg:?}"
    );
    assert_eq!(registered(&reg, &ended), Some((COMPLETE, 3)), "{reg:?}");
    assert_eq!(reg.running_applications.len(), 1, "{reg:?}");

    let ended_record = recovery.join("containers").join(ended.to_string());
    assert!(ended_record.exists());
    node.rm
        .lock()
        .to_remove
        .push(spindle_nm::wire::container_id_proto(&ended));
    let deadline = Instant::now() + WAIT;
    while ended_record.exists() {
        assert!(
            Instant::now() < deadline,
            "the acknowledged container's record is still there"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(node.nm.containers().report(&ended).is_none());
    node.nm.stop().await;
}

/// `yarn.nodemanager.recovery.supervised`: a NodeManager stopped cleanly
/// (SIGTERM) leaves its containers running for the next start, which takes
/// them back; without it, a clean stop kills them.
#[tokio::test]
async fn a_supervised_node_manager_leaves_its_containers_to_the_next_start() {
    let Some(bin) =
        binary_or_skip("a_supervised_node_manager_leaves_its_containers_to_the_next_start")
    else {
        return;
    };
    for (app_n, supervised) in [(154, "true"), (155, "false")] {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path();
        let (rm, server) = FakeRm::start(setup()).await;
        let conf = recovery_conf(
            dir,
            server.local_addr(),
            &[("yarn.nodemanager.recovery.supervised", supervised)],
        );
        let mut first = NmProcess::start(&bin, &conf, dir.join("nm1.log"), None);
        let node = rm.registered_node(0).await;
        let client = nm_client(&node, app_n, "alice").await;
        let id = container(app_n, 2);
        start_over_ipc(&client, &node, id, &waits_for_go(4)).await;
        let pid = main_pid(dir, &id).await;
        rm.wait_until("the container running", |rm| {
            rm.last_reported(&id).map(|s| s.0) == Some(RUNNING)
        })
        .await;
        assert!(first.stop().success(), "{}", first.log());
        if supervised == "false" {
            wait_dead(pid, "the container of a cleanly stopped NodeManager").await;
            continue;
        }
        assert!(
            process_alive(pid),
            "the supervised NodeManager killed its container:\n{}",
            first.log()
        );
        let mut second = NmProcess::start(&bin, &conf, dir.join("nm2.log"), None);
        rm.registered_node(1).await;
        let reg = rm.registrations().pop().expect("registration");
        assert_eq!(registered(&reg, &id).map(|s| s.0), Some(RUNNING), "{reg:?}");
        go(dir, &id);
        rm.wait_until("the container's completion", |rm| {
            rm.last_reported(&id) == Some((COMPLETE, 4))
        })
        .await;
        assert!(second.stop().success(), "{}", second.log());
    }
}

/// With the LinuxContainerExecutor (as root) the wrapper runs as the
/// container's user, who cannot create files in root's `nmPrivate`: it
/// writes the exit code into the file the node made for it, so a container
/// that ended while no NodeManager ran is still reported with its code.
#[tokio::test]
async fn with_the_linux_container_executor_an_exit_code_is_recorded_too() {
    if !nix::unistd::geteuid().is_root() {
        assert!(
            std::env::var_os("CI").is_none(),
            "running containers as other users needs root, and CI runs as root"
        );
        eprintln!("SKIP: the LinuxContainerExecutor needs root");
        return;
    }
    let Some(bin) =
        binary_or_skip("with_the_linux_container_executor_an_exit_code_is_recorded_too")
    else {
        return;
    };
    let tmp = tempfile::tempdir().expect("tempdir");
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755))
            .expect("chmod");
    }
    let dir = tmp.path();
    let (rm, server) = FakeRm::start(setup()).await;
    let conf = recovery_conf(
        dir,
        server.local_addr(),
        &[(
            keys::NM_CONTAINER_EXECUTOR_CLASS,
            "org.apache.hadoop.yarn.server.nodemanager.LinuxContainerExecutor",
        )],
    );
    let mut first = NmProcess::start(&bin, &conf, dir.join("nm1.log"), None);
    let node = rm.registered_node(0).await;
    let client = nm_client(&node, 156, "alice").await;
    let (runs_on, ends_meanwhile) = (container(156, 2), container(156, 3));
    start_over_ipc(&client, &node, runs_on, &waits_for_go(9)).await;
    start_over_ipc(&client, &node, ends_meanwhile, &waits_for_go(6)).await;
    let ends_meanwhile_pid = main_pid(dir, &ends_meanwhile).await;
    main_pid(dir, &runs_on).await;
    for id in [runs_on, ends_meanwhile] {
        rm.wait_until("the containers running", |rm| {
            rm.last_reported(&id).map(|s| s.0) == Some(RUNNING)
        })
        .await;
    }
    first.kill9();
    go(dir, &ends_meanwhile);
    wait_dead(ends_meanwhile_pid, "the container told to exit").await;
    assert_eq!(
        wait_file(&exit_code_file(dir, &ends_meanwhile), WAIT).await,
        "6\n"
    );

    let mut second = NmProcess::start(&bin, &conf, dir.join("nm2.log"), None);
    rm.registered_node(1).await;
    let reg = rm.registrations().pop().expect("registration");
    assert_eq!(
        registered(&reg, &ends_meanwhile),
        Some((COMPLETE, 6)),
        "{reg:?}"
    );
    assert_eq!(
        registered(&reg, &runs_on).map(|s| s.0),
        Some(RUNNING),
        "{reg:?}"
    );
    go(dir, &runs_on);
    rm.wait_until("the reacquired container's completion", |rm| {
        rm.last_reported(&runs_on) == Some((COMPLETE, 9))
    })
    .await;
    assert!(second.stop().success(), "{}", second.log());
}

/// A reacquired container holds the cached copies it uses, as one started
/// by the running node does: the cache cleanup of the restarted node
/// (target 0, every 100 ms) evicts an unused copy but not the one under the
/// running container, which still reads it; once the container ends, its
/// copy is evicted too.
#[tokio::test]
async fn a_reacquired_container_keeps_its_cached_resources_from_the_cleanup() {
    use hadoop_protos::yarn::{LocalResourceTypeProto, LocalResourceVisibilityProto};
    use std::os::unix::fs::PermissionsExt;
    let Some(bin) =
        binary_or_skip("a_reacquired_container_keeps_its_cached_resources_from_the_cleanup")
    else {
        return;
    };
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    // PUBLIC resources must be readable by everyone where they are.
    let staging = dir.join("staging");
    std::fs::create_dir_all(&staging).expect("mkdir");
    for d in [dir, staging.as_path()] {
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let (used, unused) = (staging.join("used.txt"), staging.join("unused.txt"));
    std::fs::write(&used, "used-line\n").expect("write");
    std::fs::write(&unused, "unused-line\n").expect("write");
    let (rm, server) = FakeRm::start(setup()).await;
    let recovery = dir.join("recovery").display().to_string();
    let address = format!("127.0.0.1:{}", free_port());
    let conf = |interval_ms: &str| {
        write_conf(
            dir,
            server.local_addr(),
            &[
                (keys::NM_RECOVERY_ENABLED, "true"),
                (keys::NM_RECOVERY_DIR, recovery.as_str()),
                (keys::NM_ADDRESS, address.as_str()),
                (keys::NM_LOCALIZER_CACHE_TARGET_SIZE_MB, "0"),
                (keys::NM_LOCALIZER_CACHE_CLEANUP_INTERVAL_MS, interval_ms),
            ],
        )
    };
    // The first run does not clean its cache within the test.
    let mut first = NmProcess::start(&bin, &conf("3600000"), dir.join("nm1.log"), None);
    let node = rm.registered_node(0).await;
    let client = nm_client(&node, 160, "alice").await;
    let public = |link: &str, path: &Path| {
        common::file_resource(
            link,
            path,
            LocalResourceTypeProto::File,
            LocalResourceVisibilityProto::Public,
        )
    };
    // One container reads its resource until told to stop; one used the
    // other resource and ended.
    let (runs, ended) = (container(160, 2), container(160, 3));
    let mut launch = common::clc(&["echo $$ > {{PWD}}/main.pid; \
         while [ ! -e {{PWD}}/go ]; do cat data.txt > /dev/null || exit 3; sleep 0.05; done; \
         cat data.txt > {{PWD}}/seen"]);
    launch.local_resources = vec![public("data.txt", &used)];
    start_clc_over_ipc(&client, &node, runs, launch).await;
    let mut launch = common::clc(&["cat other.txt > {{PWD}}/seen"]);
    launch.local_resources = vec![public("other.txt", &unused)];
    start_clc_over_ipc(&client, &node, ended, launch).await;
    let pid = main_pid(dir, &runs).await;
    rm.wait_until("the second container's end", |rm| {
        rm.last_reported(&ended) == Some((COMPLETE, 0))
    })
    .await;
    let copy_of = |id: &ContainerId, link: &str| {
        let link = work_dir(dir, id).join(link);
        std::fs::read_link(&link).unwrap_or_else(|e| panic!("{}: {e}", link.display()))
    };
    let (held, unheld) = (copy_of(&runs, "data.txt"), copy_of(&ended, "other.txt"));
    assert!(
        held.starts_with(dir.join("local/filecache")),
        "{}",
        held.display()
    );
    assert!(unheld.exists());

    first.kill9();
    drop(client);
    let mut second = NmProcess::start(&bin, &conf("100"), dir.join("nm2.log"), None);
    rm.registered_node(1).await;
    let deadline = Instant::now() + WAIT;
    while unheld.exists() {
        assert!(
            Instant::now() < deadline,
            "the unused copy was not evicted:\n{}",
            second.log()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Time is the subject here: the wait lets about five more cleanups (one
    // every 100 ms) run, and none may evict the copy under the running
    // container, which still reads it. The eviction of the unused copy above
    // showed that cleanups run; later ones cannot be counted (a cleanup logs
    // only what it removes).
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        held.exists(),
        "evicted under a running container:\n{}",
        second.log()
    );
    assert!(process_alive(pid), "{}", second.log());
    go(dir, &runs);
    rm.wait_until("the reacquired container's end", |rm| {
        rm.last_reported(&runs) == Some((COMPLETE, 0))
    })
    .await;
    assert_eq!(
        std::fs::read_to_string(work_dir(dir, &runs).join("seen")).expect("seen"),
        "used-line\n"
    );
    // It ended: nothing holds its copy any more.
    let deadline = Instant::now() + WAIT;
    while held.exists() {
        assert!(
            Instant::now() < deadline,
            "the copy was not evicted after its container ended:\n{}",
            second.log()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(second.stop().success(), "{}", second.log());
}
