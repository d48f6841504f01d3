//! `spindle check-config [--conf DIR]`: what an operator's existing Hadoop
//! configuration asks of Spindle, key by key.
//!
//! Reads the configuration directory's `core-site.xml`, `yarn-site.xml`,
//! `capacity-scheduler.xml`, `mapred-site.xml`, `hdfs-site.xml` and the fair
//! scheduler's allocation file when present, and prints one line per key
//! set in them: its file and line, its value, and its class (see
//! [`spindle_common::conf::catalog::Class`]). The scheduler's queue file is
//! also read as the ResourceManager would read it, and its verdict printed.
//! The exit status is 1 when a daemon would refuse to start (a refused
//! value, or a queue file the RM cannot load), else 0.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use spindle_common::conf::catalog::{self, Class};
use spindle_common::conf::{Configuration, CORE_SITE, YARN_SITE};
use spindle_rm::queue_files::{self, capacity, capacity_keys, fair};
use spindle_scheduler::SchedulerKind;

use crate::ConfArgs;

/// The files read besides the queue files, in Hadoop's order.
const MAPRED_SITE: &str = "mapred-site.xml";
const HDFS_SITE: &str = "hdfs-site.xml";

#[derive(clap::Args)]
pub(crate) struct CheckConfigArgs {
    #[command(flatten)]
    conf: ConfArgs,
}

pub(crate) fn run(args: CheckConfigArgs) -> Result<u8, String> {
    let (conf, dir) = args.conf.load()?;
    let Some(dir) = dir else {
        println!(
            "No configuration directory (--conf DIR, YARN_CONF_DIR or HADOOP_CONF_DIR): Spindle \
             runs with Hadoop's defaults, which it serves. Give the directory of your Hadoop \
             configuration to check it."
        );
        return Ok(0);
    };
    let report = Report::of(&dir, &conf)?;
    print!("{}", report.text);
    Ok(u8::from(report.refused))
}

/// The printed report, and whether a daemon would refuse to start.
pub(crate) struct Report {
    pub text: String,
    pub refused: bool,
}

/// One key set in a file.
struct Line {
    line: u32,
    key: String,
    value: String,
    class: Class,
}

impl Report {
    /// Checks the files of `dir`; `conf` is the daemons' view (core-site and
    /// yarn-site over the defaults).
    pub(crate) fn of(dir: &Path, conf: &Configuration) -> Result<Report, String> {
        let mut text = String::new();
        let mut counts: BTreeMap<&'static str, usize> = BTreeMap::new();
        let mut attention = 0usize;
        let mut refused = false;
        let _ = writeln!(
            text,
            "spindle check-config: {} (against Hadoop {}'s keys)",
            dir.display(),
            catalog::HADOOP_VERSION
        );
        let scheduler_class = conf
            .get_trimmed("yarn.resourcemanager.scheduler.class")
            .unwrap_or_default();
        let scheduler = SchedulerKind::from_class_name(&scheduler_class);

        let mut files: Vec<(String, PathBuf, bool)> = [
            CORE_SITE,
            YARN_SITE,
            capacity::FILE_NAME,
            MAPRED_SITE,
            HDFS_SITE,
        ]
        .iter()
        .map(|name| (name.to_string(), dir.join(name), false))
        .collect();
        if scheduler == Some(SchedulerKind::Fair) {
            if let Ok(Some(path)) = fair::allocation_file(conf, Some(dir)) {
                let name = path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                files.push((name, path, true));
            }
        }

        for (name, path, is_allocation_file) in &files {
            if !path.is_file() {
                let _ = writeln!(text, "\n{name}: absent");
                continue;
            }
            if *is_allocation_file {
                let xml = std::fs::read_to_string(path)
                    .map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
                let unused = fair::not_built_elements(&xml);
                let _ = writeln!(
                    text,
                    "\n{name} (the fair scheduler's allocation file, {} element(s) not acted on)",
                    unused.len()
                );
                for (line, element) in unused {
                    let _ = writeln!(
                        text,
                        "  {name}:{line}: <{element}>: not built: preemption and reservations \
                         are not built yet (S17)"
                    );
                    *counts.entry("not built").or_default() += 1;
                    attention += 1;
                }
                continue;
            }
            let lines = Self::classify_file(name, path, conf)?;
            let _ = writeln!(
                text,
                "\n{name} ({} key{})",
                lines.len(),
                if lines.len() == 1 { "" } else { "s" }
            );
            for l in &lines {
                let _ = writeln!(
                    text,
                    "  {name}:{}: {} = {:?}: {}",
                    l.line, l.key, l.value, l.class
                );
                *counts.entry(l.class.label()).or_default() += 1;
                attention += usize::from(l.class.needs_attention());
                refused |= matches!(l.class, Class::Refused { .. });
            }
        }

        // The queue file, read as the RM reads it.
        let _ = writeln!(text);
        match scheduler {
            None => {
                refused = true;
                let _ = writeln!(
                    text,
                    "scheduler: yarn.resourcemanager.scheduler.class = {scheduler_class:?} is not a \
                     scheduler Spindle provides: the ResourceManager will not start"
                );
            }
            Some(kind) => match queue_files::load(kind, conf, Some(dir)) {
                Ok(file) => {
                    let queues: Vec<String> =
                        file.tree.root.walk().into_iter().map(|(p, _)| p).collect();
                    let _ = writeln!(
                        text,
                        "scheduler: {} scheduler, its queues load: {}",
                        kind_name(kind),
                        queues.join(", ")
                    );
                }
                Err(e) => {
                    refused = true;
                    let _ = writeln!(
                        text,
                        "scheduler: {} scheduler: the ResourceManager will not start: {e}",
                        kind_name(kind)
                    );
                }
            },
        }

        let summary: Vec<String> = counts.iter().map(|(k, n)| format!("{n} {k}")).collect();
        let _ = writeln!(text, "summary: {}", summary.join(", "));
        let _ = writeln!(
            text,
            "{attention} to look at (refused values, unknown keys, keys not built set away from \
             Hadoop's default){}",
            if refused {
                "; a daemon would refuse to start: exit status 1"
            } else {
                ""
            }
        );
        Ok(Report { text, refused })
    }

    /// The keys of one file, in file order, classified against `conf` with
    /// the file's own values (a file the daemons do not read is layered on
    /// top, so its `${…}` references expand).
    fn classify_file(name: &str, path: &Path, conf: &Configuration) -> Result<Vec<Line>, String> {
        let mut own = Configuration::empty();
        own.add_resource(path).map_err(|e| e.to_string())?;
        let mut view = conf.clone();
        if name != CORE_SITE && name != YARN_SITE {
            view.add_resource(path).map_err(|e| e.to_string())?;
        }
        let mut lines: Vec<Line> = own
            .keys()
            .map(|key| {
                let raw = own.get_raw(key).unwrap_or_default().to_string();
                let value = view.get(key).unwrap_or_else(|| raw.clone());
                let class = capacity_keys::classify(key, &value)
                    .unwrap_or_else(|| catalog::classify(key, &value, &view));
                Line {
                    line: own.origin_of(key).and_then(|o| o.line()).unwrap_or(0),
                    key: key.to_string(),
                    value: raw,
                    class,
                }
            })
            .collect();
        lines.sort_by(|a, b| (a.line, &a.key).cmp(&(b.line, &b.key)));
        Ok(lines)
    }
}

fn kind_name(kind: SchedulerKind) -> &'static str {
    match kind {
        SchedulerKind::Capacity => "capacity",
        SchedulerKind::Fair => "fair",
        SchedulerKind::Fifo => "FIFO",
    }
}
