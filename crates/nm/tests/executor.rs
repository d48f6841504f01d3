//! The container executor on a real NodeManager: containers run as their
//! mapped users (LinuxContainerExecutor, as root) or as the NodeManager's
//! user (default), refused users, processes that leave their process group
//! (`setsid`) killed on container stop, on NodeManager stop and, after the
//! NodeManager was killed with SIGKILL, with it (its containers) and by the
//! next one started on the same local dirs (what escaped them); signals a NodeManager was started with ignored still reach
//! its containers.
//!
//! The last three start real `spindle nodemanager` processes (the binary
//! next to this test's profile dir, or `$SPINDLE_BIN`) registered with an
//! in-process fake ResourceManager, and drive them over IPC with minted
//! NMTokens. Tests that need root say so and pass when not root, except
//! under CI (which runs as root), where they fail.

mod common;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::time::{Duration, Instant};

use common::process::{binary_or_skip, nm_client, start_over_ipc, work_dir, write_conf, NmProcess};
use common::{app, clc, container, file_resource, process_alive, wait_file, FakeRm, Node, Setup};
use hadoop_protos::yarn::{
    LocalResourceTypeProto, LocalResourceVisibilityProto, SignalContainerCommandProto,
    SignalContainerRequestProto, SignalContainerResponseProto,
};
use spindle_common::conf::keys;
use spindle_common::{Configuration, ContainerId};
use spindle_ipc::methods::container_management::SIGNAL_TO_CONTAINER;
use spindle_nm::executor::{keys as ekeys, CgroupRoot, CgroupSettings};
use spindle_nm::{exit_status, ContainerPhase};

/// These tests wait 30 s, as they always have, where the other NodeManager
/// tests wait `common::WAIT` (they start `spindle nodemanager` processes and
/// containers as other users).
const WAIT: Duration = Duration::from_secs(30);
const LCE: &str = "org.apache.hadoop.yarn.server.nodemanager.LinuxContainerExecutor";

/// The fake RM of these tests asks for a heartbeat every 100 ms (the other
/// tests' every 50 ms) and waits as long as the tests do.
fn setup() -> Setup {
    Setup {
        heartbeat_interval_ms: 100,
        wait: WAIT,
        ..Setup::default()
    }
}

// ------------------------------------------------------------ helpers

fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// Whether a test that needs root can run; CI runs as root, so there a
/// missing root is a failure, not a skip.
fn root_or_skip(test: &str) -> bool {
    if is_root() {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "{test} needs root, and CI runs as root"
    );
    eprintln!("SKIP: {test}: running containers as other users needs root");
    false
}

/// A test whose cgroup half cannot run here: the machines CI runs on have a writable
/// cgroup v2 hierarchy, so there it is a failure; elsewhere the half is skipped, said so.
fn cgroups_missing(why: &str) {
    assert!(
        std::env::var_os("CI").is_none(),
        "cgroup v2 is not available here ({why}), and CI's machines have it"
    );
    eprintln!(
        "SKIP: cgroup v2 is not available here ({why}): only the tracking without cgroups is tested"
    );
}

/// Process group and session of a live process.
fn pgrp_and_session(pid: i32) -> (i32, i32) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
    let rest: Vec<&str> = stat
        .rsplit_once(')')
        .expect("stat")
        .1
        .split_whitespace()
        .collect();
    (
        rest[2].parse().expect("pgrp"),
        rest[3].parse().expect("session"),
    )
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

/// A temporary dir container users can traverse (as a node's local dirs'
/// parents must be).
fn node_dir() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().expect("tempdir");
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    tmp
}

/// The cgroup v2 hierarchy the NodeManager would use with the default
/// settings, or why there is none.
fn cgroups_here() -> Result<CgroupRoot, String> {
    let conf = Configuration::with_defaults();
    let cfg = spindle_nm::executor::ExecutorConfig::from_conf(&conf).expect("defaults");
    CgroupRoot::detect(&CgroupSettings {
        memory: false,
        cpu: false,
        ..cfg.cgroups
    })
    .map(|(root, _)| root)
}

// ------------------------------------------------------------ in-process nodes

async fn start_node(tune: &[(&str, &str)]) -> (Node, tempfile::TempDir) {
    common::start_node_in(
        node_dir(),
        |conf| {
            for (k, v) in tune {
                conf.set(k, *v);
            }
        },
        setup(),
    )
    .await
}

fn owner_and_mode(path: &Path) -> (u32, u32) {
    let m = std::fs::symlink_metadata(path).expect("stat");
    (m.uid(), m.mode() & 0o7777)
}

// ------------------------------------------------------------ users

#[tokio::test]
async fn the_linux_container_executor_runs_containers_as_the_mapped_user() {
    if !root_or_skip("the_linux_container_executor_runs_containers_as_the_mapped_user") {
        return;
    }
    let nobody = nix::unistd::User::from_name("nobody")
        .expect("lookup")
        .expect("the nobody user exists");
    let nobody_uid = nobody.uid.as_raw();
    let (node, _tmp) = start_node(&[(keys::NM_CONTAINER_EXECUTOR_CLASS, LCE)]).await;

    // limit-users (the default): alice's container runs as nobody, in dirs
    // nobody owns, and can write where a container writes.
    let id = container(101, 2);
    node.start_command(
        id,
        "alice",
        "id -u > {{PWD}}/uid && id -g > {{PWD}}/gid && touch {{PWD}}/tmp/t && \
         mkdir {{LOCAL_DIRS}}/scratch-{{CONTAINER_ID}} && echo out > <LOG_DIR>/stdout",
    );
    let done = node.wait_done(&id).await;
    assert_eq!(done.exit_status, 0, "{}", done.diagnostics);
    let paths = done.paths.expect("paths");
    let read = |name: &str| {
        std::fs::read_to_string(paths.work_dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
    };
    assert_eq!(read("uid").trim(), nobody_uid.to_string());
    assert_eq!(read("gid").trim(), nobody.gid.as_raw().to_string());
    assert!(paths
        .work_dir
        .starts_with(node.dir.join("local/usercache/alice")));
    assert_eq!(owner_and_mode(&paths.work_dir), (nobody_uid, 0o710));
    assert_eq!(
        owner_and_mode(&paths.work_dir.join("tmp")),
        (nobody_uid, 0o710)
    );
    assert_eq!(owner_and_mode(&paths.script()), (nobody_uid, 0o700));
    assert_eq!(owner_and_mode(&paths.tokens_file()), (nobody_uid, 0o600));
    assert_eq!(owner_and_mode(&paths.log_dir), (nobody_uid, 0o2750));
    assert_eq!(owner_and_mode(&paths.log_dir.join("stdout")).0, nobody_uid);
    // The dirs above are root's: a container cannot replace what the
    // NodeManager (root) writes into later.
    assert_eq!(owner_and_mode(&paths.app_dirs[0]), (0, 0o1770));
    assert_eq!(
        owner_and_mode(&paths.app_dirs[0].join("filecache")),
        (0, 0o755)
    );
    assert_eq!(owner_and_mode(&paths.user_dirs[0]), (0, 0o750));
    assert_eq!(
        std::fs::metadata(&paths.user_dirs[0]).expect("stat").gid(),
        nobody.gid.as_raw()
    );
    node.nm.stop().await;
}

/// A container run as its mapped user reads its PRIVATE and APPLICATION
/// resources (their copies are root's with the user's group; they used to
/// be root's 0500, which the user could not read), and a PRIVATE resource
/// the user may not read where it is is refused, not fetched by root for it.
#[tokio::test]
async fn the_mapped_user_reads_its_private_resources_and_only_those_it_may_read() {
    if !root_or_skip("the_mapped_user_reads_its_private_resources_and_only_those_it_may_read") {
        return;
    }
    let (node, tmp) = start_node(&[(keys::NM_CONTAINER_EXECUTOR_CLASS, LCE)]).await;
    let data = tmp.path().join("data");
    std::fs::create_dir(&data).expect("mkdir");
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let conf = data.join("job.conf");
    std::fs::write(&conf, "private settings\n").expect("write");
    std::fs::set_permissions(&conf, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let jar = data.join("app.jar");
    std::fs::write(&jar, "application code\n").expect("write");
    std::fs::set_permissions(&jar, std::fs::Permissions::from_mode(0o644)).expect("chmod");

    let id = container(111, 2);
    let mut c = clc(&["cat job.conf app.jar > {{PWD}}/seen && ! touch job.conf 2>/dev/null"]);
    c.local_resources.push(file_resource(
        "job.conf",
        &conf,
        LocalResourceTypeProto::File,
        LocalResourceVisibilityProto::Private,
    ));
    c.local_resources.push(file_resource(
        "app.jar",
        &jar,
        LocalResourceTypeProto::File,
        LocalResourceVisibilityProto::Application,
    ));
    node.start_as(id, c, "alice").expect("started");
    let done = node.wait_done(&id).await;
    assert_eq!(done.exit_status, 0, "{}", done.diagnostics);
    let paths = done.paths.expect("paths");
    let seen = std::fs::read_to_string(paths.work_dir.join("seen")).expect("seen");
    assert_eq!(seen, "private settings\napplication code\n");

    // Root's secret as a PRIVATE resource: the mapped user may not read it.
    let secret = data.join("secret");
    std::fs::write(&secret, "root only\n").expect("write");
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let id = container(111, 3);
    let mut c = clc(&["cat secret"]);
    c.local_resources.push(file_resource(
        "secret",
        &secret,
        LocalResourceTypeProto::File,
        LocalResourceVisibilityProto::Private,
    ));
    node.start_as(id, c, "alice").expect("the call is accepted");
    let done = node.wait_done(&id).await;
    assert_ne!(done.exit_status, 0);
    assert!(
        done.diagnostics
            .contains("Permission denied for user nobody"),
        "{}",
        done.diagnostics
    );
    node.nm.stop().await;
}

#[tokio::test]
async fn refused_users_get_hadoops_messages_and_no_process() {
    if !root_or_skip("refused_users_get_hadoops_messages_and_no_process") {
        return;
    }
    // Banned: the local user itself.
    let (node, _tmp) = start_node(&[
        (keys::NM_CONTAINER_EXECUTOR_CLASS, LCE),
        (ekeys::BANNED_USERS, "yarn,nobody"),
    ])
    .await;
    let id = container(102, 2);
    node.start_command(id, "alice", "touch {{PWD}}/ran");
    let done = node.wait_done(&id).await;
    assert_eq!(done.exit_status, exit_status::INVALID);
    assert!(
        done.diagnostics.starts_with(&format!(
            "Application {} initialization failed (exitCode=255) with output: main : command \
             provided 0\nmain : run as user is nobody\nmain : requested yarn user is alice\n",
            app(102)
        )),
        "{}",
        done.diagnostics
    );
    assert!(
        done.diagnostics.contains("Requested user nobody is banned"),
        "{}",
        done.diagnostics
    );
    assert!(done.pid.is_none(), "a refused container started a process");
    node.nm.stop().await;

    // Without limit-users: root, a system user and an unknown user.
    let (node, _tmp) = start_node(&[
        (keys::NM_CONTAINER_EXECUTOR_CLASS, LCE),
        (ekeys::LIMIT_USERS, "false"),
    ])
    .await;
    for (n, user, expected) in [
        (103, "root", "Running as root is not allowed".to_string()),
        (
            104,
            "daemon",
            "Requested user daemon is not whitelisted and has id 1,which is below the minimum \
             allowed 1000"
                .to_string(),
        ),
        (
            105,
            "no-such-user",
            "User no-such-user not found".to_string(),
        ),
    ] {
        let id = container(n, 2);
        node.start_command(id, user, "touch {{PWD}}/ran");
        let done = node.wait_done(&id).await;
        assert_eq!(done.exit_status, exit_status::INVALID, "{user}");
        assert!(
            done.diagnostics.contains(&expected),
            "{user}: {}",
            done.diagnostics
        );
        assert!(done.pid.is_none());
    }
    // A user that passes runs as itself.
    let id = container(106, 2);
    node.start_command(id, "nobody", "id -un > {{PWD}}/who");
    let done = node.wait_done(&id).await;
    assert_eq!(done.exit_status, 0, "{}", done.diagnostics);
    let who =
        std::fs::read_to_string(done.paths.expect("paths").work_dir.join("who")).expect("who");
    assert_eq!(who.trim(), "nobody");
    node.nm.stop().await;
}

#[tokio::test]
async fn the_default_executor_runs_containers_as_the_node_managers_user() {
    let (node, _tmp) = start_node(&[]).await;
    let id = container(107, 2);
    node.start_command(id, "alice", "id -u > {{PWD}}/uid");
    let done = node.wait_done(&id).await;
    assert_eq!(done.exit_status, 0, "{}", done.diagnostics);
    let uid =
        std::fs::read_to_string(done.paths.expect("paths").work_dir.join("uid")).expect("uid");
    assert_eq!(uid.trim(), nix::unistd::geteuid().to_string());
    node.nm.stop().await;
}

// ------------------------------------------------------------ escaped processes

/// A container whose command starts a process in a session of its own
/// (which leaves the container's process group) and then waits.
/// (The command runs inside double quotes, as Hadoop's launch script has
/// it: `\$` keeps a `$` for the inner shell.)
const ESCAPING: &str = "setsid sh -c 'echo \\$\\$ > {{PWD}}/escaped.pid; exec sleep 1000' & \
                        echo $$ > {{PWD}}/main.pid; wait";

/// Starts an escaping container and returns the escaped process's pid,
/// checked to have left the container's process group.
async fn start_escaping(node: &Node, id: ContainerId) -> i32 {
    node.start_command(id, "alice", ESCAPING);
    let running = node.wait_phase(&id, ContainerPhase::Running).await;
    let work = running.paths.expect("paths").work_dir;
    let escaped: i32 = wait_file(&work.join("escaped.pid"), WAIT)
        .await
        .trim()
        .parse()
        .expect("pid");
    let group = running.pid.expect("pid");
    let (pgrp, session) = pgrp_and_session(escaped);
    assert_ne!(
        pgrp, group,
        "the process did not leave the container's group"
    );
    assert_eq!(session, escaped, "setsid made a session");
    escaped
}

/// Runs `check` with cgroups as this machine has them, then without.
async fn with_and_without_cgroups(
    check: impl Fn(
        Vec<(&'static str, &'static str)>,
        i32,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()>>>,
) {
    match cgroups_here() {
        Ok(root) => {
            eprintln!("cgroup v2 at {}: testing with it", root.dir.display());
            check(vec![], 0).await;
        }
        Err(why) => cgroups_missing(&why),
    }
    check(vec![(ekeys::CGROUPS_ENABLED, "false")], 50).await;
}

#[tokio::test]
async fn a_process_that_calls_setsid_dies_with_its_container() {
    with_and_without_cgroups(|tune, offset| {
        Box::pin(async move {
            let (node, _tmp) = start_node(&tune).await;
            let id = container(110 + offset, 2);
            let escaped = start_escaping(&node, id).await;
            if tune.is_empty() {
                let cgroup =
                    std::fs::read_to_string(format!("/proc/{escaped}/cgroup")).expect("cgroup");
                assert!(
                    cgroup.contains(&format!("/hadoop-yarn/{id}")),
                    "not in the container's cgroup: {cgroup}"
                );
            }
            node.nm
                .containers()
                .kill(id, spindle_nm::KillReason::by_app_master());
            let done = node.wait_done(&id).await;
            assert_eq!(done.exit_status, exit_status::KILLED_BY_APPMASTER);
            assert!(
                !process_alive(escaped),
                "the setsid process outlived its container"
            );
            node.nm.stop().await;
        })
    })
    .await;
}

#[tokio::test]
async fn a_process_that_calls_setsid_dies_with_the_node_manager() {
    with_and_without_cgroups(|tune, offset| {
        Box::pin(async move {
            let (node, _tmp) = start_node(&tune).await;
            let id = container(120 + offset, 2);
            let escaped = start_escaping(&node, id).await;
            let exit = node.nm.stop().await;
            assert!(exit.is_clean(), "{exit}");
            assert!(
                !process_alive(escaped),
                "the setsid process outlived the NodeManager"
            );
        })
    })
    .await;
}

// ------------------------------------------------------------ real NodeManager processes

/// Without recovery, a SIGKILLed NodeManager's containers die with it
/// (their lifeline watchdog: the process group, and the cgroup where there
/// is one); what escaped both (a `setsid` process without cgroups) is
/// killed by the next NodeManager on the same local dirs before it serves.
#[tokio::test]
async fn a_sigkilled_node_managers_containers_die_with_it_and_the_next_one_kills_what_escaped() {
    let Some(bin) = binary_or_skip(
        "a_sigkilled_node_managers_containers_die_with_it_and_the_next_one_kills_what_escaped",
    ) else {
        return;
    };
    let cgroups = cgroups_here();
    if let Err(why) = &cgroups {
        cgroups_missing(why);
    }
    let modes: Vec<(i32, Vec<(&str, &str)>)> = match cgroups {
        Ok(_) => vec![
            (130, vec![]),
            (131, vec![(ekeys::CGROUPS_ENABLED, "false")]),
        ],
        Err(_) => vec![(131, vec![(ekeys::CGROUPS_ENABLED, "false")])],
    };
    for (app_n, extra) in modes {
        let with_cgroup = extra.is_empty();
        let tmp = node_dir();
        let (rm, _server) = FakeRm::start(setup()).await;
        let conf = write_conf(tmp.path(), _server.local_addr(), &extra);
        let mut first = NmProcess::start(&bin, &conf, tmp.path().join("nm1.log"), None);
        let node = rm.registered_node(0).await;
        let client = nm_client(&node, app_n, "alice").await;
        let id = container(app_n, 2);
        // It takes a thread dump (SIGQUIT to its group) in its stride: so
        // must its lifeline's watchdog.
        let script = "trap 'echo dump >> {{PWD}}/quit' QUIT; \
                      setsid sh -c 'echo \\$\\$ > {{PWD}}/escaped.pid; exec sleep 1000' & \
                      echo $$ > {{PWD}}/main.pid; while :; do sleep 0.05; done";
        start_over_ipc(&client, &node, id, script).await;
        let work = work_dir(tmp.path(), &id);
        let escaped: i32 = wait_file(&work.join("escaped.pid"), WAIT)
            .await
            .trim()
            .parse()
            .expect("pid");
        let main: i32 = wait_file(&work.join("main.pid"), WAIT)
            .await
            .trim()
            .parse()
            .expect("pid");
        let _: SignalContainerResponseProto = client
            .call_method(
                &SIGNAL_TO_CONTAINER,
                &SignalContainerRequestProto {
                    container_id: spindle_nm::wire::container_id_proto(&id),
                    command: SignalContainerCommandProto::OutputThreadDump as i32,
                },
            )
            .await
            .expect("signalToContainer");
        assert_eq!(wait_file(&work.join("quit"), WAIT).await, "dump\n");
        assert!(process_alive(main));
        let pid_file = tmp
            .path()
            .join("local/nmPrivate")
            .join(id.app().to_string())
            .join(id.to_string())
            .join(format!("{id}.pid"));

        // SIGKILL: nothing of the NodeManager runs its cleanup, yet its
        // container dies with it.
        first.kill9();
        wait_dead(main, "the container of the SIGKILLed NodeManager").await;
        if with_cgroup {
            wait_dead(escaped, "the setsid process, in the container's cgroup").await;
        }

        // The next NodeManager on the same local dirs kills what is left
        // (the setsid process without a cgroup) before it serves anything.
        let mut second = NmProcess::start(&bin, &conf, tmp.path().join("nm2.log"), None);
        rm.registered_node(1).await;
        wait_dead(escaped, "the setsid process of the previous run").await;
        assert!(!pid_file.exists(), "the pid file was left");
        let log = second.log();
        if !with_cgroup {
            assert!(
                log.contains("killed what was left of a container of a previous run"),
                "{log}"
            );
        }
        assert!(second.stop().success(), "{}", second.log());
    }
}

#[tokio::test]
async fn a_node_manager_started_with_sigquit_ignored_still_signals_its_containers() {
    let Some(bin) =
        binary_or_skip("a_node_manager_started_with_sigquit_ignored_still_signals_its_containers")
    else {
        return;
    };
    let tmp = node_dir();
    let (rm, server) = FakeRm::start(setup()).await;
    let conf = write_conf(tmp.path(), server.local_addr(), &[]);
    // As a non-interactive shell starts a background job.
    let mut nm = NmProcess::start(
        &bin,
        &conf,
        tmp.path().join("nm.log"),
        Some("trap '' QUIT INT;"),
    );
    let node = rm.registered_node(0).await;
    let ignored = std::fs::read_to_string(format!("/proc/{}/status", nm.child.id()))
        .expect("status")
        .lines()
        .find_map(|l| l.strip_prefix("SigIgn:").map(|v| v.trim().to_string()))
        .expect("SigIgn");
    let mask = u64::from_str_radix(&ignored, 16).expect("hex");
    assert!(
        mask & (1 << (libc::SIGQUIT - 1)) != 0,
        "the NodeManager does not ignore SIGQUIT"
    );

    let client = nm_client(&node, 140, "alice").await;
    let id = container(140, 2);
    start_over_ipc(
        &client,
        &node,
        id,
        "trap 'echo dump >> {{PWD}}/quit' QUIT; echo ready > {{PWD}}/ready; \
         while true; do sleep 0.05; done",
    )
    .await;
    let work = work_dir(tmp.path(), &id);
    wait_file(&work.join("ready"), WAIT).await;
    let _: SignalContainerResponseProto = client
        .call_method(
            &SIGNAL_TO_CONTAINER,
            &SignalContainerRequestProto {
                container_id: spindle_nm::wire::container_id_proto(&id),
                command: SignalContainerCommandProto::OutputThreadDump as i32,
            },
        )
        .await
        .expect("signalToContainer");
    assert_eq!(
        wait_file(&work.join("quit"), WAIT).await,
        "dump\n",
        "{}",
        nm.log()
    );
    assert!(nm.stop().success(), "{}", nm.log());
}

#[test]
fn the_linux_container_executor_needs_root() {
    let Some(bin) = binary_or_skip("the_linux_container_executor_needs_root") else {
        return;
    };
    if !root_or_skip("the_linux_container_executor_needs_root") {
        return;
    }
    let tmp = node_dir();
    let conf = write_conf(
        tmp.path(),
        "127.0.0.1:9".parse().expect("addr"),
        &[(keys::NM_CONTAINER_EXECUTOR_CLASS, LCE)],
    );
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o777)).expect("chmod");
    let out = std::process::Command::new("setpriv")
        .args(["--reuid=nobody", "--regid=nogroup", "--clear-groups"])
        .arg(&bin)
        .arg("nodemanager")
        .arg("--conf")
        .arg(&conf)
        .output()
        .expect("run setpriv");
    let text =
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{text}");
    assert!(
        text.contains(keys::NM_CONTAINER_EXECUTOR_CLASS)
            && text.contains("needs the NodeManager to run as root"),
        "{text}"
    );
}
