//! Measuring a run: resource-time integrals as the clock advances, the
//! container peak, periodic samples (with the queue share error under
//! contention), and the summary and time series of the final report.

use std::collections::{BTreeMap, BTreeSet};

use spindle_scheduler::SchedulerKind;

use super::{AppState, Engine, NodeLife, RawSample, PEAK_SNAPSHOT_MAX_NODES};
use crate::model::AppKind;
use crate::report::{percentile, queue_columns, SamplePoint, SimReport, Summary};

impl Engine<'_> {
    pub(super) fn record_peak(&mut self) {
        let m = &mut self.metrics;
        m.peak_containers = self.containers.len();
        m.peak_time_ms = self.now;
        m.empty_at_peak = self.empty_nodes;
        if self.nodes.len() <= PEAK_SNAPSHOT_MAX_NODES {
            let mut counts: Vec<usize> = self
                .nodes
                .iter()
                .filter(|n| n.life == NodeLife::Live && !n.containers.is_empty())
                .map(|n| n.containers.len())
                .collect();
            counts.sort_unstable_by(|a, b| b.cmp(a));
            m.peak_nodes = counts;
        }
    }

    pub(super) fn advance(&mut self, t: u64) {
        let m = &mut self.metrics;
        if t > m.last_ms {
            let dt = (t - m.last_ms) as f64;
            m.used_mb_ms += self.used.memory_mb as f64 * dt;
            m.cap_mb_ms += self.capacity.memory_mb as f64 * dt;
            m.used_vc_ms += f64::from(self.used.vcores) * dt;
            m.cap_vc_ms += f64::from(self.capacity.vcores) * dt;
            m.paid_mb_ms +=
                (self.capacity.memory_mb + self.provisioning_capacity.memory_mb) as f64 * dt;
            m.node_ms += (self.live_nodes + self.provisioning_nodes) as f64 * dt;
            m.last_ms = t;
        }
        self.now = t;
    }

    pub(super) fn sample(&mut self) {
        let mut queues = BTreeMap::new();
        let mut guaranteed = BTreeMap::new();
        for q in self.sched.queues() {
            if q.leaf {
                queues.insert(q.path.clone(), q.used.memory_mb);
                guaranteed.insert(q.path, q.guaranteed.memory_mb);
            }
        }
        // Queue share error, when the cluster is contended.
        if self.capacity.memory_mb > 0
            && self.used.memory_mb * 10 >= self.capacity.memory_mb * 9
            && self.sched.queue_config().kind != SchedulerKind::Fifo
        {
            let mut wanting: BTreeSet<&str> = BTreeSet::new();
            for &a in &self.active {
                let app = &self.apps[a];
                if app.book.waiting() > 0 || app.state == AppState::WaitingAm {
                    wanting.insert(app.queue_path.as_str());
                }
            }
            if wanting.len() >= 2 {
                let members: Vec<&String> = queues
                    .iter()
                    .filter(|(p, used)| **used > 0 || wanting.contains(p.as_str()))
                    .map(|(p, _)| p)
                    .collect();
                let g_total: i64 = members
                    .iter()
                    .map(|p| guaranteed.get(*p).copied().unwrap_or(0))
                    .sum();
                let u_total: i64 = members
                    .iter()
                    .map(|p| queues.get(*p).copied().unwrap_or(0))
                    .sum();
                if g_total > 0 && u_total > 0 {
                    let mut worst = 0.0f64;
                    for p in &members {
                        if !wanting.contains(p.as_str()) {
                            continue;
                        }
                        let target =
                            guaranteed.get(*p).copied().unwrap_or(0) as f64 / g_total as f64;
                        let actual = queues.get(*p).copied().unwrap_or(0) as f64 / u_total as f64;
                        worst = worst.max(target - actual);
                    }
                    let m = &mut self.metrics;
                    m.share_err_max = m.share_err_max.max(worst);
                    m.share_err_sum += worst;
                    m.share_samples += 1;
                }
            }
        }
        self.samples.push(RawSample {
            point: SamplePoint {
                time_ms: self.now,
                live_nodes: self.live_nodes,
                provisioning_nodes: self.provisioning_nodes,
                empty_nodes: self.empty_nodes,
                capacity_mb: self.capacity.memory_mb,
                used_mb: self.used.memory_mb,
                capacity_vcores: i64::from(self.capacity.vcores),
                used_vcores: i64::from(self.used.vcores),
                running_containers: self.containers.len(),
                waiting_requests: self.waiting.len(),
                running_apps: self.active.len(),
                queue_used_mb: Vec::new(),
            },
            queues,
        });
    }

    pub(super) fn report(mut self, wall: std::time::Duration) -> SimReport {
        let columns = queue_columns(
            self.samples
                .iter()
                .flat_map(|s| s.queues.keys().cloned())
                .collect::<Vec<_>>(),
        );
        let series: Vec<SamplePoint> = std::mem::take(&mut self.samples)
            .into_iter()
            .map(|mut s| {
                s.point.queue_used_mb = columns
                    .iter()
                    .map(|q| s.queues.get(q).copied().unwrap_or(0))
                    .collect();
                s.point
            })
            .collect();
        let mut turnarounds: Vec<f64> = Vec::new();
        let (mut completed, mut failed, mut batch_completed) = (0usize, 0usize, 0usize);
        let mut first_arrival = u64::MAX;
        let mut last_finish = 0u64;
        for (a, app) in self.apps.iter().enumerate() {
            if let AppState::Done { failed: f } = app.state {
                let arrival = self.w.jobs[a].arrival_ms;
                let finish = app.finish_ms.unwrap_or(self.now);
                if f {
                    failed += 1;
                } else {
                    completed += 1;
                }
                // Services run for as long as they are told to: their
                // "turnaround" says nothing about the scheduler.
                if matches!(self.w.jobs[a].kind, AppKind::Batch) {
                    if !f {
                        batch_completed += 1;
                        turnarounds.push((finish - arrival) as f64 / 1000.0);
                    }
                    first_arrival = first_arrival.min(arrival);
                    last_finish = last_finish.max(finish);
                }
            }
        }
        turnarounds.sort_by(f64::total_cmp);
        let mean = if turnarounds.is_empty() {
            0.0
        } else {
            turnarounds.iter().sum::<f64>() / turnarounds.len() as f64
        };
        let makespan_s = if last_finish > first_arrival && first_arrival != u64::MAX {
            (last_finish - first_arrival) as f64 / 1000.0
        } else {
            0.0
        };
        let m = &self.metrics;
        let ratio = |a: f64, b: f64| if b > 0.0 { a / b } else { 0.0 };
        let cfg = self.sched.config();
        let summary = Summary {
            workload: self.w.name.clone(),
            seed: self.s.seed,
            scheduler: self.sched.queue_config().kind.name().to_string(),
            placement: cfg.node_selection.name().to_string(),
            heartbeat_mode: self.w.cluster.heartbeat_mode.name().to_string(),
            chaos: self.s.chaos.is_some(),
            sim_time_s: self.now as f64 / 1000.0,
            events: self.events,
            scheduler_steps: self.steps,
            allocations: m.allocations,
            apps_submitted: self
                .apps
                .iter()
                .filter(|a| a.state != AppState::NotArrived)
                .count(),
            apps_completed: completed,
            apps_failed: failed,
            apps_unfinished: self.apps.len() - completed - failed,
            am_attempts_failed: m.am_attempts_failed,
            tasks_completed: m.tasks_completed,
            tasks_lost: m.tasks_lost,
            node_hours: m.node_ms / 3_600_000.0,
            nodes_min: m.nodes_min,
            nodes_max: m.nodes_max,
            nodes_added: m.nodes_added,
            nodes_removed: m.nodes_removed,
            utilization_mean: ratio(m.used_mb_ms, m.cap_mb_ms),
            utilization_vcores_mean: ratio(m.used_vc_ms, m.cap_vc_ms),
            utilization_paid_mean: ratio(m.used_mb_ms, m.paid_mb_ms),
            turnaround_s_mean: mean,
            turnaround_s_p50: percentile(&turnarounds, 50.0),
            turnaround_s_p95: percentile(&turnarounds, 95.0),
            turnaround_s_max: turnarounds.last().copied().unwrap_or(0.0),
            makespan_s,
            throughput_apps_per_hour: if makespan_s > 0.0 {
                batch_completed as f64 / (makespan_s / 3600.0)
            } else {
                0.0
            },
            queue_share_error_max: m.share_err_max,
            queue_share_error_mean: ratio(m.share_err_sum, m.share_samples as f64),
            queue_share_samples: m.share_samples,
            locality: m.locality.clone(),
            peak_containers: m.peak_containers,
            empty_nodes_at_peak: m.empty_at_peak,
            peak_time_s: m.peak_time_ms as f64 / 1000.0,
            peak_node_containers: m.peak_nodes.clone(),
        }
        .rounded();
        SimReport {
            summary,
            queues: columns,
            series,
            wall_time: wall,
        }
    }
}
