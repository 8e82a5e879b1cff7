//! Holistic Trace Analysis (HTA, PyPI `traceinsight` 0.6.1) on PyTorch runs imported from
//! Kineto JSON: each rank is one host (file) of the run. Pure functions of the model, with
//! HTA's definitions (event selection, µs rounding, the incomplete-step filter, kernel
//! types, interval merge: [`trace`]), one module per analysis, and two reports:
//!
//! * [`distributed::HtaDistributed`] (`hta_distributed`): per rank temporal breakdown,
//!   communication–computation overlap, communication kernels and stragglers;
//! * [`gpu_idle::HtaGpuIdle`] (`hta_gpu_idle`): idle time by cause, kernel launch
//!   statistics and queue length per stream.
//!
//! Each rank's share of both reports is [`parts::RankParts`], computed once per loaded rank
//! (the session keeps it); the reports assemble the selected ranks' parts.
//!
//! Golden-tested against HTA's own outputs (`scripts/ref/hta.sh` → `testdata/hta/`).

pub mod comm_ops;
pub mod distributed;
pub mod gpu_idle;
pub mod host_spans;
pub mod idle_time;
pub mod launch_stats;
pub mod overlap;
pub mod parts;
pub mod queue_length;
pub mod stragglers;
pub mod temporal;
#[cfg(test)]
mod test_trace;
pub mod trace;
