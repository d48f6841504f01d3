//! Real `spindle nodemanager` processes: the binary, a configuration dir,
//! a process killed with SIGKILL when dropped, and an NMToken login to it.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use hadoop_protos::yarn::{
    ContainerLaunchContextProto, StartContainerRequestProto, StartContainersRequestProto,
    StartContainersResponseProto,
};
use spindle_common::{ContainerId, NodeId};
use spindle_ipc::methods::container_management::START_CONTAINERS;
use spindle_ipc::IpcClient;

use super::{
    attempt, clc, container_token, nm_master_key, nm_token_identifier, node_settings, sign,
    token_client, FIRST_RM_IDENTIFIER,
};

/// The `spindle` binary: `$SPINDLE_BIN`, else next to this test's profile
/// dir (`target/debug/deps/x` → `target/debug/spindle`).
pub fn spindle_binary() -> Option<PathBuf> {
    if let Some(bin) = std::env::var_os("SPINDLE_BIN").filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(bin));
    }
    let exe = std::env::current_exe().ok()?;
    let mut dir = exe.parent()?;
    if dir.file_name().is_some_and(|n| n == "deps") {
        dir = dir.parent()?;
    }
    Some(dir.join("spindle")).filter(|b| b.is_file())
}

pub fn binary_or_skip(test: &str) -> Option<PathBuf> {
    let bin = spindle_binary();
    if bin.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "{test}: the spindle binary is missing (cargo build -p spindle)"
        );
        eprintln!("SKIP: {test}: the spindle binary is missing; run `cargo build -p spindle`");
    }
    bin
}

/// A configuration dir for a `spindle nodemanager` on `dir`.
pub fn write_conf(dir: &Path, rm: SocketAddr, extra: &[(&str, &str)]) -> PathBuf {
    let conf = dir.join("conf");
    std::fs::create_dir_all(&conf).expect("conf dir");
    let mut props: Vec<(String, String)> = node_settings(dir, rm)
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    // An extra setting replaces the node's own.
    props.retain(|(k, _)| !extra.iter().any(|(e, _)| e == k));
    props.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let mut xml = String::from("<?xml version=\"1.0\"?>\n<configuration>\n");
    for (k, v) in props {
        xml.push_str(&format!(
            "  <property><name>{k}</name><value>{v}</value></property>\n"
        ));
    }
    xml.push_str("</configuration>\n");
    std::fs::write(conf.join("yarn-site.xml"), xml).expect("yarn-site.xml");
    conf
}

/// A `spindle nodemanager` process, killed (SIGKILL) when dropped.
pub struct NmProcess {
    pub child: std::process::Child,
    log: PathBuf,
}

impl NmProcess {
    /// Starts `spindle nodemanager --conf conf`, through `sh` with
    /// `ignore` (e.g. `trap '' QUIT INT`) run first when given.
    pub fn start(bin: &Path, conf: &Path, log: PathBuf, ignore: Option<&str>) -> NmProcess {
        let out = std::fs::File::create(&log).expect("log");
        let mut cmd = std::process::Command::new("/bin/sh");
        cmd.arg("-c")
            .arg(format!(
                "{} exec \"$0\" nodemanager --conf \"$1\"",
                ignore.unwrap_or("")
            ))
            .arg(bin)
            .arg(conf)
            .env("SPINDLE_LOG", "info")
            .stdin(Stdio::null())
            .stdout(out.try_clone().expect("log"))
            .stderr(out);
        NmProcess {
            child: cmd.spawn().expect("spawn spindle nodemanager"),
            log,
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGTERM, then the exit status.
    pub fn stop(&mut self) -> std::process::ExitStatus {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.child.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
        self.child.wait().expect("wait")
    }
}

impl Drop for NmProcess {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// An IPC connection to a node's container manager with an NMToken for
/// application `app_n`.
pub async fn nm_client(node: &NodeId, app_n: i32, user: &str) -> IpcClient {
    let addr = format!("127.0.0.1:{}", node.port);
    let identity = nm_token_identifier(attempt(app_n), node, user);
    let token = sign(identity.encode(), &nm_master_key(), "NMToken", &addr);
    IpcClient::connect(&addr, token_client(&attempt(app_n).to_string(), &token))
        .await
        .expect("NMToken login")
}

pub async fn start_over_ipc(client: &IpcClient, node: &NodeId, id: ContainerId, command: &str) {
    start_clc_over_ipc(client, node, id, clc(&[command])).await
}

/// Starts the launch context `launch` as container `id` of alice over IPC.
pub async fn start_clc_over_ipc(
    client: &IpcClient,
    node: &NodeId,
    id: ContainerId,
    launch: ContainerLaunchContextProto,
) {
    let resp: StartContainersResponseProto = client
        .call_method(
            &START_CONTAINERS,
            &StartContainersRequestProto {
                start_container_request: vec![StartContainerRequestProto {
                    container_launch_context: Some(launch),
                    container_token: Some(container_token(
                        node,
                        id,
                        "alice",
                        256,
                        FIRST_RM_IDENTIFIER,
                    )),
                }],
            },
        )
        .await
        .expect("startContainers");
    assert!(resp.failed_requests.is_empty(), "{resp:?}");
}

pub fn work_dir(dir: &Path, id: &ContainerId) -> PathBuf {
    dir.join("local/usercache/alice/appcache")
        .join(id.app().to_string())
        .join(id.to_string())
}
