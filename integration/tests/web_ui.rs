//! The ResourceManager's web UI in a real browser: a Spindle cluster (one RM, one
//! NodeManager) runs three distributed-shell applications (two finished, one of them
//! named `<script>alert(1)</script>`, and one still running), then
//! `integration/browser/ui-check.mjs` drives Debian's headless Chromium through every
//! page with playwright-core, asserting on the rendered DOM (counts, links, sorting by
//! header clicks, the filter box, the escaped name, no dialog) and taking desktop and
//! phone screenshots. The screenshots are kept under `target/test-artifacts/web_ui/`
//! (or `$SPINDLE_TEST_ARTIFACTS/web_ui/`); the test prints where.
//!
//! Needs `integration/setup-browser.sh` (Chromium, playwright-core). Without it the
//! test prints `SKIP:` and passes, except under CI, where it fails.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use spindle_integration::clients::running_in_ci;
use spindle_integration::process::run_with_timeout;
use spindle_integration::{Cluster, NodeManagerSpec};

const SCRIPT_NAME: &str = "<script>alert(1)</script>";

/// Where the browser test's pieces are, or why they are missing.
fn browser_setup() -> Result<(PathBuf, PathBuf), String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("browser");
    let chromium =
        PathBuf::from(std::env::var("SPINDLE_CHROMIUM").unwrap_or("/usr/bin/chromium".into()));
    if !chromium.exists() {
        return Err(format!("{} is missing", chromium.display()));
    }
    if !dir
        .join("node_modules/playwright-core/package.json")
        .exists()
    {
        return Err(format!(
            "playwright-core is not installed in {}",
            dir.display()
        ));
    }
    match Command::new("node").arg("--version").output() {
        Ok(out) if out.status.success() => Ok((dir, chromium)),
        _ => Err("node is not on PATH".into()),
    }
}

fn artifacts_dir() -> PathBuf {
    let root = std::env::var_os("SPINDLE_TEST_ARTIFACTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_TARGET_TMPDIR"))
                .parent()
                .unwrap_or(Path::new(env!("CARGO_TARGET_TMPDIR")))
                .join("test-artifacts")
        });
    root.join("web_ui")
}

fn json_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A plain HTTP/1.0 GET: the status code and body.
fn http_get(addr: SocketAddr, path: &str) -> std::io::Result<(u16, String)> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n")?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)?;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = text
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_owned();
    Ok((status, body))
}

/// Runs `spindle distributed-shell` to completion; its application id.
fn finished_app(cluster: &Cluster, name: &str) -> String {
    let mut cmd = Command::new(cluster.binary());
    cmd.arg("distributed-shell")
        .arg("--conf")
        .arg(cluster.conf_dir())
        .args(["--name", name, "--num-containers", "1", "--command", "true"]);
    let out = run_with_timeout(cmd, Duration::from_secs(180)).expect("distributed-shell runs");
    assert!(
        out.success()
            && out
                .stdout
                .contains("state FINISHED, final status SUCCEEDED"),
        "distributed-shell {name:?} failed:\n{out}\n{}",
        cluster.log_report()
    );
    app_id_of(&out.stdout).unwrap_or_else(|| panic!("no application id printed:\n{out}"))
}

fn app_id_of(line: &str) -> Option<String> {
    line.split_whitespace()
        .find(|w| w.starts_with("application_"))
        .map(str::to_owned)
}

/// A distributed shell whose one container sleeps; killed on drop.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn the_web_ui_renders_in_a_real_browser() {
    let (browser_dir, chromium) = match browser_setup() {
        Ok(found) => found,
        Err(e) if running_in_ci() => panic!("the browser test needs Chromium under CI: {e}"),
        Err(e) => {
            eprintln!("SKIP: run integration/setup-browser.sh ({e})");
            return;
        }
    };
    let cluster = Cluster::builder()
        .heartbeat_interval_ms(300)
        .nodemanager(NodeManagerSpec::new(4096, 4))
        .start_without_clients()
        .expect("cluster starts");
    let web = cluster.rm().webapp;

    let finished = finished_app(&cluster, "ui-finished");
    let script = finished_app(&cluster, SCRIPT_NAME);

    let mut child = Command::new(cluster.binary())
        .arg("distributed-shell")
        .arg("--conf")
        .arg(cluster.conf_dir())
        .args(["--name", "ui-running", "--num-containers", "1"])
        .args(["--command", "sleep 600", "--timeout-secs", "900"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("distributed-shell starts");
    let stdout = child.stdout.take().expect("piped stdout");
    let running_shell = Running(child);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let running = loop {
        match rx.recv_timeout(Duration::from_secs(120)) {
            Ok(line) if line.starts_with("Submitting application") => {
                break app_id_of(&line).expect("an application id");
            }
            Ok(_) => {}
            Err(e) => panic!("the running distributed shell printed no id ({e})"),
        }
    };
    // Wait until its AM and its sleeping container are both allocated.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let page = http_get(web, &format!("/cluster/app/{running}?refresh=0"));
        if let Ok((200, body)) = &page {
            if body.matches("<a class=\"logs\"").count() >= 3 {
                break;
            }
        }
        assert!(
            Instant::now() < deadline,
            "{running} never held two containers: {page:?}\n{}",
            cluster.log_report()
        );
        std::thread::sleep(Duration::from_millis(300));
    }

    let nm = cluster.nodemanager(0);
    let user = std::env::var("USER")
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| "root".into());
    let out = artifacts_dir();
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).expect("artifacts dir");
    let expectations = format!(
        "{{\"running\":{},\"runningName\":\"ui-running\",\"finished\":{},\"finishedName\":\"ui-finished\",\
         \"script\":{},\"scriptName\":{},\"user\":{},\"nodeId\":{},\"nodeHttp\":{},\
         \"memoryMb\":4096,\"vcores\":4,\"queue\":\"root.default\"}}",
        json_string(&running),
        json_string(&finished),
        json_string(&script),
        json_string(SCRIPT_NAME),
        json_string(&user),
        json_string(&nm.address()),
        json_string(&format!("{}:{}", nm.host(), nm.web_port())),
    );
    let expect_file = out.join("expectations.json");
    std::fs::write(&expect_file, &expectations).expect("write expectations");

    let mut cmd = Command::new("node");
    cmd.arg(browser_dir.join("ui-check.mjs"))
        .arg(format!("http://{web}/"))
        .arg(&out)
        .arg(&expect_file)
        .env("SPINDLE_CHROMIUM", &chromium)
        .current_dir(&browser_dir);
    let result = run_with_timeout(cmd, Duration::from_secs(300)).expect("node runs");
    drop(running_shell);
    eprintln!("{}", result.stdout);
    eprintln!("web UI screenshots: {}", out.display());
    assert!(
        result.success(),
        "the browser check failed (screenshots in {}):\n{result}\n{}",
        out.display(),
        cluster.log_report()
    );
    assert!(
        out.join("overview-desktop.png").exists() && out.join("apps-phone.png").exists(),
        "screenshots missing from {}:\n{result}",
        out.display()
    );
}
