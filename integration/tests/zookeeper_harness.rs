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
