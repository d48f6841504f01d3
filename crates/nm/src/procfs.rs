//! Process trees from `/proc`: what a container's processes use, and the
//! diagnostics a memory-limit kill carries.
//!
//! Like Hadoop's `ProcfsBasedProcessTree`, a container's tree is its root
//! process plus every descendant by parent pid; memory is the sum of the
//! resident set sizes (pages × page size) and of the virtual sizes.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;
use std::path::Path;

/// One process as read from `/proc/<pid>/stat` and `cmdline`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcInfo {
    pub pid: i32,
    pub ppid: i32,
    pub pgrp: i32,
    pub session: i32,
    pub name: String,
    /// User and system time in clock ticks.
    pub utime_ticks: u64,
    pub stime_ticks: u64,
    pub vsize_bytes: u64,
    pub rss_pages: u64,
    pub cmdline: String,
}

/// Parses the text of `/proc/<pid>/stat`.
pub fn parse_stat(text: &str) -> Option<ProcInfo> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let pid = text[..open].trim().parse().ok()?;
    let name = text.get(open + 1..close)?.to_string();
    let rest: Vec<&str> = text.get(close + 1..)?.split_whitespace().collect();
    // rest[0] is the state; the numbers follow in proc(5) order.
    let num = |i: usize| rest.get(i).and_then(|s| s.parse::<i64>().ok());
    Some(ProcInfo {
        pid,
        ppid: i32::try_from(num(1)?).ok()?,
        pgrp: i32::try_from(num(2)?).ok()?,
        session: i32::try_from(num(3)?).ok()?,
        name,
        utime_ticks: u64::try_from(num(11)?).ok()?,
        stime_ticks: u64::try_from(num(12)?).ok()?,
        vsize_bytes: u64::try_from(num(20)?).ok()?,
        rss_pages: u64::try_from(num(21)?).ok()?,
        cmdline: String::new(),
    })
}

/// All processes of the machine, by pid.
#[derive(Debug, Clone, Default)]
pub struct ProcessTable {
    pub procs: HashMap<i32, ProcInfo>,
    children: HashMap<i32, Vec<i32>>,
}

impl ProcessTable {
    /// Reads every numeric entry of `proc_root` (normally `/proc`).
    /// Processes that vanish while being read are skipped.
    pub fn read(proc_root: &Path) -> std::io::Result<ProcessTable> {
        let mut procs = HashMap::new();
        for entry in std::fs::read_dir(proc_root)? {
            let Ok(entry) = entry else { continue };
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|s| s.parse::<i32>().ok())
            else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
                continue;
            };
            let Some(mut info) = parse_stat(&stat) else {
                continue;
            };
            if info.pid != pid {
                continue;
            }
            if let Ok(raw) = std::fs::read(entry.path().join("cmdline")) {
                info.cmdline = raw
                    .split(|b| *b == 0)
                    .filter(|a| !a.is_empty())
                    .map(|a| String::from_utf8_lossy(a).into_owned())
                    .collect::<Vec<_>>()
                    .join(" ");
            }
            procs.insert(pid, info);
        }
        Ok(ProcessTable::from_procs(procs))
    }

    pub fn from_procs(procs: HashMap<i32, ProcInfo>) -> ProcessTable {
        let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
        for p in procs.values() {
            if p.ppid != p.pid {
                children.entry(p.ppid).or_default().push(p.pid);
            }
        }
        for c in children.values_mut() {
            c.sort_unstable();
        }
        ProcessTable { procs, children }
    }

    /// `root` and all its descendants that are alive, root first.
    pub fn tree(&self, root: i32) -> Vec<&ProcInfo> {
        let mut out = Vec::new();
        let mut seen = HashSet::new();
        let mut stack = vec![root];
        while let Some(pid) = stack.pop() {
            if !seen.insert(pid) {
                continue;
            }
            if let Some(p) = self.procs.get(&pid) {
                out.push(p);
            }
            if let Some(kids) = self.children.get(&pid) {
                stack.extend(kids.iter().rev());
            }
        }
        out
    }
}

/// Memory of a container's process tree.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TreeUsage {
    pub pids: Vec<i32>,
    pub rss_bytes: u64,
    pub vmem_bytes: u64,
    /// The same sums over processes already seen in the previous check.
    pub aged_rss_bytes: u64,
    pub aged_vmem_bytes: u64,
    /// Hadoop-style dump of the tree, for diagnostics.
    pub dump: String,
}

/// Measures the tree of `root`. `previous` holds the pids seen in the last
/// check; processes in it count as aged.
pub fn measure(
    table: &ProcessTable,
    root: i32,
    previous: &HashSet<i32>,
    page_size: u64,
    tick_ms: f64,
) -> TreeUsage {
    let mut u = TreeUsage::default();
    let _ = writeln!(
        u.dump,
        "\t|- PID PPID PGRPID SESSID CMD_NAME USER_MODE_TIME(MILLIS) SYSTEM_TIME(MILLIS) \
         VMEM_USAGE(BYTES) RSSMEM_USAGE(PAGES) FULL_CMD_LINE"
    );
    let mut rows: BTreeMap<i32, String> = BTreeMap::new();
    for p in table.tree(root) {
        let rss = p.rss_pages.saturating_mul(page_size);
        u.pids.push(p.pid);
        u.rss_bytes += rss;
        u.vmem_bytes += p.vsize_bytes;
        if previous.contains(&p.pid) {
            u.aged_rss_bytes += rss;
            u.aged_vmem_bytes += p.vsize_bytes;
        }
        rows.insert(
            p.pid,
            format!(
                "\t|- {} {} {} {} ({}) {} {} {} {} {}",
                p.pid,
                p.ppid,
                p.pgrp,
                p.session,
                p.name,
                (p.utime_ticks as f64 * tick_ms) as u64,
                (p.stime_ticks as f64 * tick_ms) as u64,
                p.vsize_bytes,
                p.rss_pages,
                p.cmdline
            ),
        );
    }
    for row in rows.values() {
        let _ = writeln!(u.dump, "{row}");
    }
    u
}

/// Hadoop's over-limit rule: a tree is over its limit when all of it uses
/// more than twice the limit, or its processes older than one check use
/// more than the limit (a process just forked gets one check of grace).
pub fn over_limit(current: u64, aged: u64, limit: u64) -> bool {
    current > limit.saturating_mul(2) || aged > limit
}

/// A byte count the way Hadoop's `TraditionalBinaryPrefix.long2String(n, "",
/// 1)` prints it, followed by `B`: `512B`, `128 MB`, `300.5 MB`, `2.1 GB`.
pub fn format_bytes(n: u64) -> String {
    const UNITS: [(char, u32); 6] = [
        ('K', 10),
        ('M', 20),
        ('G', 30),
        ('T', 40),
        ('P', 50),
        ('E', 60),
    ];
    if n < 1024 {
        return format!("{n}B");
    }
    let mut idx = 0;
    while idx + 1 < UNITS.len() && n >= 1u64 << UNITS[idx + 1].1 {
        idx += 1;
    }
    let (mut symbol, mut shift) = UNITS[idx];
    if n & ((1u64 << shift) - 1) == 0 {
        return format!("{} {symbol}B", n >> shift);
    }
    let mut text = format!("{:.1}", n as f64 / (1u64 << shift) as f64);
    if text.starts_with("1024") && idx + 1 < UNITS.len() {
        (symbol, shift) = UNITS[idx + 1];
        text = format!("{:.1}", n as f64 / (1u64 << shift) as f64);
    }
    format!("{text} {symbol}B")
}

/// Which limit a container broke.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemoryKind {
    Physical,
    Virtual,
}

/// The diagnostics of a memory-limit kill, shaped like Hadoop's so that
/// Spark's `"<n> [KMG]B of <n> [KMG]B physical memory used"` matching works.
/// A virtual-memory kill also names the keys that allow more (Hadoop's
/// message does not), after the process tree.
pub fn memory_kill_diagnostics(
    kind: MemoryKind,
    root_pid: i32,
    container: &str,
    usage: &TreeUsage,
    pmem_limit: u64,
    vmem_limit: u64,
) -> String {
    let (name, used, limit) = match kind {
        MemoryKind::Physical => ("PHYSICAL", usage.rss_bytes, pmem_limit),
        MemoryKind::Virtual => ("VIRTUAL", usage.vmem_bytes, vmem_limit),
    };
    let mut text = format!(
        "Container [pid={root_pid},containerID={container}] is running {}B beyond the '{name}' \
         memory limit. Current usage: {} of {} physical memory used; {} of {} virtual memory \
         used. Killing container.\nDump of the process-tree for {container} :\n{}",
        used.saturating_sub(limit),
        format_bytes(usage.rss_bytes),
        format_bytes(pmem_limit),
        format_bytes(usage.vmem_bytes),
        format_bytes(vmem_limit),
        usage.dump
    );
    if kind == MemoryKind::Virtual {
        text.push_str(
            "The NodeManager's virtual-memory check killed this container: set \
             yarn.nodemanager.vmem-check-enabled to false, or raise \
             yarn.nodemanager.vmem-pmem-ratio, in the NodeManagers' yarn-site.xml to allow it \
             (JVMs reserve far more address space than they use).\n",
        );
    }
    text
}

/// The page size and the length of a clock tick in ms.
pub fn system_units() -> (u64, f64) {
    use nix::unistd::{sysconf, SysconfVar};
    let page = sysconf(SysconfVar::PAGE_SIZE)
        .ok()
        .flatten()
        .and_then(|v| u64::try_from(v).ok())
        .filter(|v| *v > 0)
        .unwrap_or(4096);
    let ticks = sysconf(SysconfVar::CLK_TCK)
        .ok()
        .flatten()
        .filter(|v| *v > 0)
        .unwrap_or(100);
    (page, 1000.0 / ticks as f64)
}

/// The pids of `proc_root` (normally `/proc`) now.
pub fn pids(proc_root: &Path) -> Vec<i32> {
    std::fs::read_dir(proc_root)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse().ok()))
                .collect()
        })
        .unwrap_or_default()
}

/// The environment a process was started with (`/proc/<pid>/environ`), as
/// NUL-separated `NAME=value` entries. `None` when it cannot be read (gone,
/// a zombie's is empty, another user's without privileges).
pub fn environ(proc_root: &Path, pid: i32) -> Option<Vec<u8>> {
    std::fs::read(proc_root.join(pid.to_string()).join("environ"))
        .ok()
        .filter(|e| !e.is_empty())
}

/// The value of `name` in an environment block read by [`environ`].
pub fn env_value<'a>(environ: &'a [u8], name: &str) -> Option<&'a [u8]> {
    environ.split(|b| *b == 0).find_map(|entry| {
        entry
            .strip_prefix(name.as_bytes())
            .and_then(|rest| rest.strip_prefix(b"="))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proc(pid: i32, ppid: i32, rss_pages: u64, vsize: u64) -> ProcInfo {
        ProcInfo {
            pid,
            ppid,
            pgrp: 10,
            session: 10,
            name: format!("p{pid}"),
            utime_ticks: 5,
            stime_ticks: 1,
            vsize_bytes: vsize,
            rss_pages,
            cmdline: format!("cmd {pid}"),
        }
    }

    #[test]
    fn stat_lines_parse_even_with_odd_names() {
        let line = "4242 (we(ird) name) S 1 4242 4242 0 -1 4194560 100 0 0 0 7 3 0 0 20 0 1 0 \
                    12345 10485760 256 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0";
        let p = parse_stat(line).expect("parses");
        assert_eq!(p.pid, 4242);
        assert_eq!(p.name, "we(ird) name");
        assert_eq!((p.ppid, p.pgrp, p.session), (1, 4242, 4242));
        assert_eq!((p.utime_ticks, p.stime_ticks), (7, 3));
        assert_eq!(p.vsize_bytes, 10_485_760);
        assert_eq!(p.rss_pages, 256);
        assert!(parse_stat("garbage").is_none());
    }

    #[test]
    fn own_process_is_readable() {
        let table = ProcessTable::read(Path::new("/proc")).expect("read /proc");
        let me = i32::try_from(std::process::id()).expect("pid fits");
        let tree = table.tree(me);
        assert_eq!(tree.first().map(|p| p.pid), Some(me));
        assert!(tree[0].rss_pages > 0);
    }

    #[test]
    fn trees_sum_descendants_and_age() {
        let procs: HashMap<i32, ProcInfo> = [
            proc(10, 1, 100, 1000),
            proc(11, 10, 50, 500),
            proc(12, 11, 25, 250),
            proc(20, 1, 999, 9999),
        ]
        .into_iter()
        .map(|p| (p.pid, p))
        .collect();
        let table = ProcessTable::from_procs(procs);
        let previous: HashSet<i32> = [10, 11].into_iter().collect();
        let u = measure(&table, 10, &previous, 4096, 10.0);
        assert_eq!(u.pids, vec![10, 11, 12]);
        assert_eq!(u.rss_bytes, 175 * 4096);
        assert_eq!(u.vmem_bytes, 1750);
        assert_eq!(u.aged_rss_bytes, 150 * 4096);
        assert!(
            u.dump
                .contains("\t|- 12 11 10 10 (p12) 50 10 250 25 cmd 12\n"),
            "{}",
            u.dump
        );
        assert!(!u.dump.contains("p20"));
    }

    #[test]
    fn limit_rule() {
        assert!(
            !over_limit(150, 0, 100),
            "young processes get one check of grace"
        );
        assert!(over_limit(201, 0, 100));
        assert!(over_limit(150, 101, 100));
        assert!(!over_limit(100, 100, 100));
    }

    #[test]
    fn bytes_print_like_hadoop() {
        assert_eq!(format_bytes(512), "512B");
        assert_eq!(format_bytes(128 << 20), "128 MB");
        assert_eq!(format_bytes((300 << 20) + (512 << 10)), "300.5 MB");
        assert_eq!(format_bytes(2_254_857_830), "2.1 GB");
        assert_eq!(format_bytes(1024), "1 KB");
        assert_eq!(format_bytes((1 << 30) - 1), "1.0 GB");
    }

    #[test]
    fn kill_diagnostics_match_sparks_pattern() {
        let usage = TreeUsage {
            pids: vec![7],
            rss_bytes: 314_572_800,
            vmem_bytes: 400 << 20,
            dump: "\t|- header\n".into(),
            ..TreeUsage::default()
        };
        let d = memory_kill_diagnostics(
            MemoryKind::Physical,
            7,
            "container_1_0001_01_000002",
            &usage,
            128 << 20,
            (128u64 << 20) * 21 / 10,
        );
        assert!(
            d.starts_with(
                "Container [pid=7,containerID=container_1_0001_01_000002] is running 180355072B \
                 beyond the 'PHYSICAL' memory limit. Current usage: 300 MB of 128 MB physical \
                 memory used; 400 MB of 268.8 MB virtual memory used. Killing container.\n"
            ),
            "{d}"
        );
        // Spark's MEM_REGEX: "[0-9.]+ [KMG]B of [0-9.]+ [KMG]B physical memory used".
        let phrase = d
            .split("Current usage: ")
            .nth(1)
            .and_then(|s| s.split(';').next())
            .expect("phrase");
        let words: Vec<&str> = phrase.split(' ').collect();
        assert_eq!(words.len(), 8, "{phrase}");
        let number = |w: &str| !w.is_empty() && w.chars().all(|c| c.is_ascii_digit() || c == '.');
        assert!(number(words[0]) && number(words[3]), "{phrase}");
        assert!(["KB", "MB", "GB"].contains(&words[1]), "{phrase}");
        assert!(["KB", "MB", "GB"].contains(&words[4]), "{phrase}");
        assert_eq!(words[2], "of");
        assert_eq!(&words[5..], ["physical", "memory", "used"]);
        assert!(!d.contains("vmem-check-enabled"), "{d}");
        // A virtual-memory kill names the keys to change.
        let v = memory_kill_diagnostics(
            MemoryKind::Virtual,
            7,
            "container_1_0001_01_000002",
            &usage,
            512 << 20,
            (128u64 << 20) * 21 / 10,
        );
        assert!(v.contains("beyond the 'VIRTUAL' memory limit"), "{v}");
        assert!(
            v.contains("yarn.nodemanager.vmem-check-enabled")
                && v.contains("yarn.nodemanager.vmem-pmem-ratio"),
            "{v}"
        );
    }
}
