//! Memory monitoring: every `container-monitor.interval-ms` each running
//! container's process tree is measured from `/proc`, and a container over
//! its physical or virtual memory limit is killed. And the resource cache
//! cleanup, on its own interval.

use std::collections::HashSet;
use std::path::Path;

use spindle_common::ContainerId;
use tokio::sync::watch;
use tracing::{debug, warn};

use super::manager::ContainerManager;
use super::records::{exit_status, ContainerPhase, KillReason};
use crate::procfs::{self, MemoryKind, ProcessTable};

impl ContainerManager {
    /// Checks memory every `container-monitor.interval-ms` until `stop`.
    pub async fn run_monitor(self, mut stop: watch::Receiver<bool>) {
        let s = &self.inner.cfg.containers;
        if !s.pmem_check_enabled && !s.vmem_check_enabled {
            debug!("container memory checks are off");
        }
        let mut tick = tokio::time::interval(s.monitor_interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                _ = stop.wait_for(|s| *s) => return,
            }
            self.check_memory().await;
        }
    }

    /// Cleans the PUBLIC and PRIVATE resource caches down to
    /// `localizer.cache.target-size-mb` every
    /// `localizer.cache.cleanup.interval-ms` until `stop` (Hadoop's
    /// `ResourceLocalizationService` cache cleanup).
    pub async fn run_cache_cleanup(self, mut stop: watch::Receiver<bool>) {
        let s = &self.inner.cfg.containers;
        let (target, every) = (s.cache_target_bytes, s.cache_cleanup_interval);
        let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                _ = stop.wait_for(|s| *s) => return,
            }
            let localizer = self.inner.localizer.clone();
            let _ = tokio::task::spawn_blocking(move || localizer.clean_up(target)).await;
        }
    }

    /// One monitor pass.
    pub async fn check_memory(&self) {
        let running: Vec<(ContainerId, i32, u64, HashSet<i32>)> = {
            let st = self.lock();
            st.containers
                .values()
                .filter(|c| c.phase == ContainerPhase::Running && c.kill.is_none())
                .filter_map(|c| {
                    // A container without memory in its token has no limit.
                    let mb = u64::try_from(c.grant.resource.memory_mb)
                        .ok()
                        .filter(|m| *m > 0)?;
                    Some((c.grant.container, c.pid?, mb << 20, c.seen_pids.clone()))
                })
                .collect()
        };
        if running.is_empty() {
            return;
        }
        let table =
            match tokio::task::spawn_blocking(|| ProcessTable::read(Path::new("/proc"))).await {
                Ok(Ok(t)) => t,
                Ok(Err(e)) => {
                    warn!(error = %e, "cannot read /proc; container memory is not checked");
                    return;
                }
                Err(_) => return,
            };
        let s = &self.inner.cfg.containers;
        for (id, pid, pmem_limit, previous) in running {
            let usage = procfs::measure(
                &table,
                pid,
                &previous,
                self.inner.page_size,
                self.inner.tick_ms,
            );
            let vmem_limit = (pmem_limit as f64 * s.vmem_pmem_ratio) as u64;
            {
                let mut st = self.lock();
                if let Some(c) = st.containers.get_mut(&id) {
                    c.memory = Some((usage.rss_bytes, usage.vmem_bytes));
                    c.seen_pids = usage.pids.iter().copied().collect();
                }
            }
            let over = if s.vmem_check_enabled
                && procfs::over_limit(usage.vmem_bytes, usage.aged_vmem_bytes, vmem_limit)
            {
                Some((MemoryKind::Virtual, exit_status::KILLED_EXCEEDED_VMEM))
            } else if s.pmem_check_enabled
                && procfs::over_limit(usage.rss_bytes, usage.aged_rss_bytes, pmem_limit)
            {
                Some((MemoryKind::Physical, exit_status::KILLED_EXCEEDED_PMEM))
            } else {
                None
            };
            if let Some((kind, status)) = over {
                let diagnostics = procfs::memory_kill_diagnostics(
                    kind,
                    pid,
                    &id.to_string(),
                    &usage,
                    pmem_limit,
                    vmem_limit,
                );
                warn!(
                    container = %id,
                    "{}",
                    spindle_common::text::escaped(diagnostics.lines().next().unwrap_or(""))
                );
                self.kill(
                    id,
                    KillReason {
                        exit_status: status,
                        diagnostics,
                    },
                );
            }
        }
        self.changed();
    }
}
