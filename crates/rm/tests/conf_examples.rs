//! The example configuration shipped in `conf/` loads with Spindle's own loaders.

use std::path::Path;

use spindle_common::conf::Configuration;
use spindle_rm::queues::Queues;

#[test]
fn shipped_examples_load() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../conf");
    let conf = Configuration::load(Some(&dir)).expect("conf/*.xml load");
    assert_eq!(
        conf.get("yarn.resourcemanager.hostname").as_deref(),
        Some("127.0.0.1")
    );
    let queues = Queues::load(Some(&dir)).expect("conf/capacity-scheduler.xml loads");
    assert!(queues.get("default").is_some());
}
