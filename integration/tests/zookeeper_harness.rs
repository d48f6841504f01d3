//! The ZooKeeper harness itself: a started server answers, a killed one does not, and a
//! restarted one answers again on the same port with the data it had.

use std::net::{Ipv4Addr, SocketAddr};

use spindle_integration::zookeeper::{ruok, serving};
use spindle_integration::{ZooKeeperJars, ZooKeeperServer};

#[test]
fn starts_kills_and_restarts_on_the_same_port() {
    let Some(jars) = ZooKeeperJars::for_tests() else {
        return;
    };
    let mut server = ZooKeeperServer::start(&jars).expect("the server starts");
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, server.port()));
    assert!(serving(addr), "a started server serves");
    assert!(server.is_running());
    server.kill().expect("kill -9");
    assert!(!ruok(addr), "a killed server does not answer");
    server.restart().expect("the server restarts");
    assert!(serving(addr), "a restarted server serves on the same port");
    assert_eq!(
        server.connect_string(),
        format!("127.0.0.1:{}", server.port())
    );
}

/// README's `integration/bin/zookeeper [PORT [DATA_DIR]]` serves on the port it is given.
#[test]
fn the_script_for_people_serves_on_the_given_port() {
    if ZooKeeperJars::for_tests().is_none() {
        return;
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let data = tempfile::tempdir().expect("tempdir");
    let mut child = std::process::Command::new("bash")
        .arg(spindle_integration::zookeeper::launcher())
        .arg(port.to_string())
        .arg(data.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("integration/bin/zookeeper starts");
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let up = spindle_integration::wait_until(
        std::time::Duration::from_secs(120),
        std::time::Duration::from_millis(200),
        || serving(addr),
    );
    let _ = child.kill();
    let _ = child.wait();
    assert!(up, "integration/bin/zookeeper did not serve on port {port}");
    assert!(data.path().join("zoo.cfg").exists());
}
