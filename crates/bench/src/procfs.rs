//! Process accounting from `/proc`: CPU time and resident memory of a process,
//! and the open-files limit the simulated connections need.

use std::time::Duration;

/// User plus system CPU time a process has used so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuTimes {
    pub user: Duration,
    pub system: Duration,
}

impl CpuTimes {
    pub fn total(&self) -> Duration {
        self.user + self.system
    }
}

/// Clock ticks per second for `/proc/<pid>/stat` times (`getconf CLK_TCK`).
pub fn clock_ticks_per_sec() -> u64 {
    match nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK) {
        Ok(Some(t)) if t > 0 => t as u64,
        // Linux has reported 100 on every architecture for decades.
        _ => 100,
    }
}

/// Parses `utime` and `stime` (fields 14 and 15) out of a `/proc/<pid>/stat`
/// line. The command name (field 2) may hold spaces and parentheses, so
/// fields are counted from the last `)`.
pub fn parse_stat(line: &str, ticks_per_sec: u64) -> Result<CpuTimes, String> {
    let rest = line
        .rfind(')')
        .map(|i| &line[i + 1..])
        .ok_or_else(|| format!("no command name in stat line '{line}'"))?;
    // After the name: field 3 (state) is the first.
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field = |n: usize| -> Result<u64, String> {
        let text = fields
            .get(n - 3)
            .ok_or_else(|| format!("stat line has no field {n}: '{line}'"))?;
        text.parse::<u64>()
            .map_err(|e| format!("stat field {n} '{text}' is not a number: {e}"))
    };
    let ticks = ticks_per_sec.max(1);
    let to_duration = |t: u64| Duration::from_nanos(t.saturating_mul(1_000_000_000) / ticks);
    Ok(CpuTimes {
        user: to_duration(field(14)?),
        system: to_duration(field(15)?),
    })
}

/// CPU times of process `pid` (`None`: this process).
pub fn cpu_times(pid: Option<u32>) -> Result<CpuTimes, String> {
    let path = match pid {
        Some(p) => format!("/proc/{p}/stat"),
        None => "/proc/self/stat".to_string(),
    };
    let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read {path}: {e}"))?;
    parse_stat(&text, clock_ticks_per_sec())
}

/// Resident memory of `pid` in MiB (`VmRSS` of `/proc/<pid>/status`).
pub fn rss_mb(pid: Option<u32>) -> Result<f64, String> {
    let path = match pid {
        Some(p) => format!("/proc/{p}/status"),
        None => "/proc/self/status".to_string(),
    };
    let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read {path}: {e}"))?;
    parse_rss_kb(&text)
        .map(|kb| kb as f64 / 1024.0)
        .ok_or_else(|| format!("{path} has no VmRSS line"))
}

fn parse_rss_kb(status: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|n| n.parse().ok())
}

/// Raises the soft open-files limit to the hard limit (children inherit it)
/// and returns the soft limit now in force.
pub fn raise_nofile_limit() -> Result<u64, String> {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let (soft, hard) =
        getrlimit(Resource::RLIMIT_NOFILE).map_err(|e| format!("getrlimit(NOFILE): {e}"))?;
    if soft >= hard {
        return Ok(soft);
    }
    setrlimit(Resource::RLIMIT_NOFILE, hard, hard)
        .map_err(|e| format!("setrlimit(NOFILE, {hard}): {e}"))?;
    Ok(hard)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_counted_after_the_command_name() {
        let line = "4242 (spindle (rm) x) S 1 4242 4242 0 -1 4194560 1520 0 0 0 250 75 0 0 20 0 9 0 1234 0 0";
        let t = parse_stat(line, 100).expect("parses");
        assert_eq!(t.user, Duration::from_millis(2500));
        assert_eq!(t.system, Duration::from_millis(750));
        assert_eq!(t.total(), Duration::from_millis(3250));
        assert!(parse_stat("1 (x) S 1", 100).is_err());
        assert!(parse_stat("no name", 100).is_err());
    }

    #[test]
    fn this_process_can_be_measured() {
        let before = cpu_times(None).expect("own stat");
        let mut x = 0u64;
        let start = std::time::Instant::now();
        while start.elapsed() < Duration::from_millis(60) {
            x = x.wrapping_mul(31).wrapping_add(7);
        }
        std::hint::black_box(x);
        let after = cpu_times(None).expect("own stat");
        assert!(after.total() > before.total(), "{before:?} -> {after:?}");
        assert!(rss_mb(None).expect("own status") > 0.0);
        assert_eq!(parse_rss_kb("Name: x\nVmRSS:\t  2048 kB\n"), Some(2048));
        assert!(clock_ticks_per_sec() > 0);
    }

    #[test]
    fn the_open_files_limit_is_at_least_kept() {
        use nix::sys::resource::{getrlimit, Resource};
        let (before, _) = getrlimit(Resource::RLIMIT_NOFILE).expect("getrlimit");
        let now = raise_nofile_limit().expect("raise");
        assert!(now >= before);
    }
}
