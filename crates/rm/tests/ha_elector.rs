//! Leader election against a real ZooKeeper 3.8 server (started by the integration
//! harness; the tests skip without its jars, except under CI where they fail).

use std::time::Duration;

use spindle_common::conf::Configuration;
use spindle_integration::{ZooKeeperJars, ZooKeeperServer};
use spindle_rm::ha::{Election, Elector, ElectorConf};
use tokio::sync::watch;

/// A generous bound on any one wait: the tests wait on events, this only stops a hang.
const DEADLINE: Duration = Duration::from_secs(60);

fn elector_conf(server: &ZooKeeperServer, cluster: &str, rm_id: &str) -> ElectorConf {
    let mut conf = Configuration::with_defaults();
    conf.set("hadoop.zk.address", server.connect_string());
    conf.set("hadoop.zk.timeout-ms", "2000");
    conf.set("hadoop.zk.retry-interval-ms", "200");
    conf.set("yarn.resourcemanager.cluster-id", cluster);
    ElectorConf::from_conf(&conf, rm_id).expect("elector conf")
}

/// Waits until `rx` says `want`; false if it did not within [`DEADLINE`].
async fn becomes(rx: &mut watch::Receiver<Election>, want: Election) -> bool {
    tokio::time::timeout(DEADLINE, rx.wait_for(|e| *e == want))
        .await
        .is_ok_and(|r| r.is_ok())
}

fn start_server() -> Option<ZooKeeperServer> {
    let jars = ZooKeeperJars::for_tests()?;
    Some(ZooKeeperServer::start(&jars).expect("ZooKeeper starts"))
}

/// Starts two electors and returns them with the index of the one that won.
async fn two_electors(
    server: &ZooKeeperServer,
    cluster: &str,
) -> (Vec<(Elector, watch::Receiver<Election>)>, usize) {
    let mut rms = Vec::new();
    for id in ["rm1", "rm2"] {
        rms.push(
            Elector::start(elector_conf(server, cluster, id))
                .await
                .expect("elector starts"),
        );
    }
    let winner = tokio::time::timeout(DEADLINE, async {
        loop {
            for (i, (_, rx)) in rms.iter().enumerate() {
                if *rx.borrow() == Election::Active {
                    return i;
                }
            }
            let (a, b) = rms.split_at_mut(1);
            tokio::select! {
                _ = a[0].1.changed() => {}
                _ = b[0].1.changed() => {}
            }
        }
    })
    .await
    .expect("one elector becomes active");
    // Exactly one: the other stands by while the lock is held.
    assert_eq!(*rms[1 - winner].1.borrow(), Election::Standby);
    (rms, winner)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_active_and_the_other_takes_over_when_its_session_closes() {
    let Some(server) = start_server() else { return };
    let (mut rms, winner) = two_electors(&server, "closing").await;
    let (loser_elector, mut loser_rx) = rms.remove(1 - winner);
    // The active leaves (its session is closed): the lock goes at once.
    drop(rms);
    assert!(
        becomes(&mut loser_rx, Election::Active).await,
        "the standby takes over\n{}",
        server.log_tail(30)
    );
    drop(loser_elector);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_standby_takes_over_when_the_active_dies_without_closing_its_session() {
    let Some(server) = start_server() else { return };
    // The first RM runs on a runtime of its own, which is then shut down without a word
    // to ZooKeeper (as a kill -9): its session lives on until the server expires it.
    let crashing = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let conf1 = elector_conf(&server, "crash", "rm1");
    let (elector1, mut rx1) = crashing
        .spawn(async move { Elector::start(conf1).await.expect("elector starts") })
        .await
        .expect("joined");
    assert!(
        becomes(&mut rx1, Election::Active).await,
        "the only RM becomes active"
    );
    let (_elector2, mut rx2) = Elector::start(elector_conf(&server, "crash", "rm2"))
        .await
        .expect("elector starts");
    assert_eq!(*rx2.borrow(), Election::Standby);
    std::mem::forget(elector1);
    crashing.shutdown_background();
    assert!(
        becomes(&mut rx2, Election::Active).await,
        "the standby takes over once the dead RM's session expires\n{}",
        server.log_tail(30)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_active_that_loses_zookeeper_steps_down_and_someone_leads_when_it_is_back() {
    let Some(mut server) = start_server() else {
        return;
    };
    let (mut rms, winner) = two_electors(&server, "lost").await;
    let (_standby, standby_rx) = rms.remove(1 - winner);
    let (_active, mut active_rx) = rms.remove(0);
    server.kill().expect("kill -9 ZooKeeper");
    // No split brain: the active stands down, the standby never leads meanwhile.
    assert!(
        becomes(&mut active_rx, Election::Standby).await,
        "the active steps down without ZooKeeper"
    );
    assert_eq!(*standby_rx.borrow(), Election::Standby);
    server.restart().expect("ZooKeeper restarts");
    let mut rxs = [active_rx, standby_rx];
    let leader = tokio::time::timeout(DEADLINE, async {
        loop {
            if let Some(i) = rxs.iter().position(|rx| *rx.borrow() == Election::Active) {
                return i;
            }
            let (a, b) = rxs.split_at_mut(1);
            tokio::select! {
                _ = a[0].changed() => {}
                _ = b[0].changed() => {}
            }
        }
    })
    .await
    .unwrap_or_else(|_| {
        panic!(
            "an RM leads once ZooKeeper is back\n{}",
            server.log_tail(40)
        )
    });
    assert_eq!(
        *rxs[1 - leader].borrow(),
        Election::Standby,
        "only one leads"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quit_hands_over_and_rejoin_competes_again() {
    let Some(server) = start_server() else { return };
    let (mut rms, winner) = two_electors(&server, "manual").await;
    let (other, mut other_rx) = rms.remove(1 - winner);
    let (first, mut first_rx) = rms.remove(0);
    first.quit().await;
    assert_eq!(
        *first_rx.borrow(),
        Election::Standby,
        "quit reports Standby"
    );
    assert!(
        becomes(&mut other_rx, Election::Active).await,
        "the other RM takes over"
    );
    first.rejoin().await;
    // The first competes again but the lock is held: it stays standby until the other
    // leaves.
    assert_eq!(*first_rx.borrow(), Election::Standby);
    other.quit().await;
    assert!(
        becomes(&mut first_rx, Election::Active).await,
        "the rejoined RM leads"
    );
    assert_eq!(*other_rx.borrow(), Election::Standby);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_zookeeper_session_is_a_clear_error() {
    let Some(mut server) = start_server() else {
        return;
    };
    let mut conf = elector_conf(&server, "absent", "rm1");
    conf.session_timeout = Duration::from_secs(1);
    server.kill().expect("kill ZooKeeper");
    let err = Elector::start(conf)
        .await
        .expect_err("no session, no election");
    let msg = err.to_string();
    assert!(
        msg.contains(&server.connect_string()) && msg.contains("no session"),
        "{msg}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lock_holds_hadoops_active_rm_info() {
    let Some(server) = start_server() else { return };
    let (_elector, mut rx) = Elector::start(elector_conf(&server, "info", "rm7"))
        .await
        .expect("elector starts");
    assert!(becomes(&mut rx, Election::Active).await);
    let client = zookeeper_client::Client::connector()
        .with_session_timeout(Duration::from_secs(4))
        .connect(&server.connect_string())
        .await
        .expect("connect");
    let (data, stat) = client
        .get_data("/yarn-leader-election/info/ActiveStandbyElectorLock")
        .await
        .expect("the lock exists");
    assert_ne!(stat.ephemeral_owner, 0, "the lock is ephemeral");
    use prost::Message as _;
    let info = hadoop_protos::yarn::ActiveRmInfoProto::decode(data.as_slice()).expect("proto");
    assert_eq!(info.cluster_id.as_deref(), Some("info"));
    assert_eq!(info.rm_id.as_deref(), Some("rm7"));
    let (crumb, _) = client
        .get_data("/yarn-leader-election/info/ActiveBreadCrumb")
        .await
        .expect("the breadcrumb exists");
    assert_eq!(crumb, data);
}
