//! What a query moved over the network, read from the metrics the distributed engine collects
//! at its network boundaries once the query has run.
//!
//! A distributed plan is cut into stages at network boundaries (shuffles, coalesces,
//! broadcasts). The stage the coordinator runs (the head) reads its inputs from the workers;
//! every other boundary is read by a worker from other workers. [`Traffic::of`] sums, per
//! kind, the bytes the reading side received (the encoded Flight messages, as the engine's
//! `bytes_transferred` counts them) and the rows it received. A worker reads the output of a
//! task of its own in-process: its rows count, its bytes (none crossed a network) do not. A
//! broadcast's rows and bytes count at every reader.
//!
//! The shard scans count what they read over the network too: a scan that runs where its
//! shard is not — in the coordinator, when the planner leaves a scan's stage there (a cluster
//! of one worker, say), or on another worker — reads the shard through the worker that has it.

use std::sync::Arc;

use datafusion::error::Result as DfResult;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::metrics::MetricValue;
use datafusion_distributed::{DistributedMetricsFormat, rewrite_distributed_plan_with_metrics};

use crate::scan::{REMOTE_BYTES, REMOTE_ROWS};

/// Rows and bytes through one kind of boundary.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Flow {
    /// Rows the reading side received through these boundaries, including those a worker read
    /// in-process from a task of its own, which crossed no network.
    pub rows: u64,
    /// Bytes that crossed the network: the encoded Flight messages received from other
    /// processes.
    pub bytes: u64,
}

/// What one executed query moved over the network.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Traffic {
    /// Between workers: the boundaries inside stages that workers run.
    pub between_workers: Flow,
    /// From the workers to the coordinator: the boundaries the head stage reads.
    pub to_coordinator: Flow,
}

impl Traffic {
    /// The traffic of `plan`, a physical plan of [`crate::Coordinator`]'s that has been
    /// executed to its end. Waits for every task's metrics to arrive from the workers. A plan
    /// that did not run distributed moved nothing.
    pub async fn of(plan: Arc<dyn ExecutionPlan>) -> DfResult<Traffic> {
        let plan =
            rewrite_distributed_plan_with_metrics(plan, DistributedMetricsFormat::Aggregated)
                .await?;
        let mut traffic = Traffic::default();
        walk(plan.as_ref(), true, &mut traffic);
        Ok(traffic)
    }
}

/// The names the distributed engine gives its network boundaries.
const BOUNDARIES: [&str; 3] = ["NetworkShuffleExec", "NetworkCoalesceExec", "NetworkBroadcastExec"];

fn walk(plan: &dyn ExecutionPlan, in_head: bool, traffic: &mut Traffic) {
    let boundary = BOUNDARIES.contains(&plan.name());
    let shard_scan = plan.name() == "ShardScanExec";
    if (boundary || shard_scan)
        && let Some(metrics) = plan.metrics()
    {
        // A boundary has one set per connection to a feeding task, each counting what arrived
        // through it; a shard scan counts what it read from shards of other processes.
        let mut flow = Flow::default();
        for m in metrics.iter() {
            let v = m.value();
            match v {
                MetricValue::OutputRows(_) if boundary => flow.rows += v.as_usize() as u64,
                _ if boundary && v.name() == "bytes_transferred" => {
                    flow.bytes += v.as_usize() as u64
                }
                _ if shard_scan && v.name() == REMOTE_ROWS => flow.rows += v.as_usize() as u64,
                _ if shard_scan && v.name() == REMOTE_BYTES => flow.bytes += v.as_usize() as u64,
                _ => {}
            }
        }
        let into = if in_head { &mut traffic.to_coordinator } else { &mut traffic.between_workers };
        into.rows += flow.rows;
        into.bytes += flow.bytes;
    }
    for child in plan.children() {
        walk(child.as_ref(), in_head && !boundary, traffic);
    }
}
