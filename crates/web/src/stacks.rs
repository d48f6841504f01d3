//! `/stacks`: what Spindle can honestly give for Hadoop's `StackServlet`
//! (a text dump of every JVM thread's stack). A Rust process has no
//! runtime that can print its threads' stacks, and the work of a tokio
//! daemon is tasks, not threads: they cannot be listed from outside. What
//! is listed is every OS thread of the process, from `/proc/self/task`:
//! its id, name, scheduler state, the kernel function it waits in and its
//! CPU time. The page says so at the top.

use std::fs;

/// The page's text (`text/plain`).
pub fn render() -> String {
    let threads = threads();
    let mut out = String::from("Process Thread Dump: \n");
    out.push_str(&format!(
        "{} active threads (the operating-system threads of process {}; \
         Spindle's work runs as tokio tasks on these threads, which cannot be \
         listed, and no stack traces are available in a Rust process)\n",
        threads.len(),
        std::process::id()
    ));
    for t in &threads {
        out.push_str(&format!("Thread {} ({}):\n", t.tid, t.name));
        out.push_str(&format!("  State: {}\n", state_name(t.state)));
        if !t.wchan.is_empty() && t.wchan != "0" {
            out.push_str(&format!("  Waiting in: {}\n", t.wchan));
        }
        out.push_str(&format!(
            "  CPU time: user {} ticks, system {} ticks\n",
            t.utime, t.stime
        ));
    }
    out
}

/// One OS thread of this process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadInfo {
    pub tid: u32,
    pub name: String,
    /// The state letter of `/proc/<pid>/task/<tid>/stat`.
    pub state: char,
    pub wchan: String,
    /// Clock ticks in user and system mode.
    pub utime: u64,
    pub stime: u64,
}

/// Every thread of this process, by id; empty where `/proc` is not there.
pub fn threads() -> Vec<ThreadInfo> {
    let Ok(dir) = fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    let mut out: Vec<ThreadInfo> = dir
        .filter_map(Result::ok)
        .filter_map(|e| {
            let tid: u32 = e.file_name().to_str()?.parse().ok()?;
            let stat = fs::read_to_string(e.path().join("stat")).ok()?;
            let mut info = parse_stat(tid, &stat)?;
            info.wchan = fs::read_to_string(e.path().join("wchan"))
                .map(|w| w.trim().to_string())
                .unwrap_or_default();
            Some(info)
        })
        .collect();
    out.sort_by_key(|t| t.tid);
    out
}

/// `tid (comm) S ppid ...`: the name may hold spaces and parentheses, so
/// it ends at the last `)`.
fn parse_stat(tid: u32, stat: &str) -> Option<ThreadInfo> {
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let name = stat.get(open + 1..close)?.to_string();
    let rest: Vec<&str> = stat.get(close + 1..)?.split_whitespace().collect();
    // After the name: state (3), ..., utime (14), stime (15).
    let state = rest.first()?.chars().next()?;
    let utime = rest.get(11)?.parse().ok()?;
    let stime = rest.get(12)?.parse().ok()?;
    Some(ThreadInfo {
        tid,
        name,
        state,
        wchan: String::new(),
        utime,
        stime,
    })
}

fn state_name(state: char) -> String {
    let what = match state {
        'R' => "running",
        'S' => "sleeping",
        'D' => "disk sleep",
        'T' => "stopped",
        't' => "tracing stop",
        'Z' => "zombie",
        'X' => "dead",
        'I' => "idle",
        _ => "unknown",
    };
    format!("{state} ({what})")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_stat_line_with_an_awkward_name() {
        let line =
            "4242 (tokio (x) 1) S 1 4242 4242 0 -1 4194368 10 0 0 0 7 3 0 0 20 0 9 0 100 0 0";
        let t = parse_stat(4242, line).expect("parsed");
        assert_eq!(t.name, "tokio (x) 1");
        assert_eq!(t.state, 'S');
        assert_eq!((t.utime, t.stime), (7, 3));
        assert_eq!(parse_stat(1, "garbage"), None);
    }

    #[test]
    fn lists_this_process_threads_by_name() {
        let name = "spindle-stk-test";
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let (started_tx, started) = std::sync::mpsc::channel::<()>();
        let handle = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                let _ = started_tx.send(());
                let _ = rx.recv();
            })
            .expect("spawn");
        // The thread names itself once it runs.
        started.recv().expect("the thread started");
        let page = render();
        let _ = tx.send(());
        let _ = handle.join();
        assert!(page.starts_with("Process Thread Dump: \n"), "{page}");
        // Linux keeps 15 bytes of a thread's name.
        assert!(page.contains("(spindle-stk-te"), "{page}");
        assert!(page.contains("tokio tasks"), "{page}");
    }
}
