//! Inference (serving) runs, as XProf 2.24.2 analyses them: requests and batches of each
//! host (`detect`), combined over hosts and regrouped by model with throughputs, averages
//! and per-batch-size aggregates (`InferenceStats`, XProf's `inference_stats_combiner.cc`
//! and `inference_stats_grouping.cc`), the percentile samples the `inference_profile`
//! tool shows (`inference_stats_sampler.cc`, tables in `profile`), and the overview page's
//! inference latency table (`compute_inference_latency.cc`).
//!
//! Not ported: tensor patterns (`Linearize`/`Delinearize` events with tensor shapes, TPU
//! serving only; XProf's tables show `hasTensorPattern: false` whatever they find).

mod detect;
pub mod profile;

pub use detect::{host_inference_stats, parse_model_name};

use crate::tools::overview_page::{OverviewInferenceLatency, OverviewLatencyBreakdown};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One request (`RequestDetail`); times in picoseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestDetail {
    /// The request's group id (-1 for averages).
    pub request_id: i64,
    /// Index of its model in the [`ModelIdDatabase`] (-1: none).
    pub model_id_index: i32,
    /// Begin.
    pub start_time_ps: u64,
    /// End.
    pub end_time_ps: u64,
    /// Device compute.
    pub device_time_ps: u64,
    /// Host to device transfers.
    pub write_to_device_time_ps: u64,
    /// Device to host transfers.
    pub read_from_device_time_ps: u64,
    /// From the request's begin to its first batch's begin.
    pub batching_request_delay_ps: u64,
    /// The batches that served it (sorted).
    pub related_batch_ids: Vec<i64>,
    /// Rows in the request (`batching_input_task_size`).
    pub batching_request_size: i32,
    /// Host preprocessing.
    pub host_preprocessing_ps: u64,
    /// Host batch formation.
    pub host_batch_formation_ps: u64,
    /// Host runtime.
    pub host_runtime_ps: u64,
    /// Host postprocessing.
    pub host_postprocessing_ps: u64,
    /// The host (index of its XSpace in the run).
    pub host_id: i32,
    /// Percentile when sampled.
    pub percentile: f64,
    /// Time no event covers.
    pub idle_time_ps: f64,
}

impl Default for RequestDetail {
    fn default() -> Self {
        RequestDetail {
            request_id: -1,
            model_id_index: -1,
            start_time_ps: 0,
            end_time_ps: 0,
            device_time_ps: 0,
            write_to_device_time_ps: 0,
            read_from_device_time_ps: 0,
            batching_request_delay_ps: 0,
            related_batch_ids: Vec::new(),
            batching_request_size: 0,
            host_preprocessing_ps: 0,
            host_batch_formation_ps: 0,
            host_runtime_ps: 0,
            host_postprocessing_ps: 0,
            host_id: 0,
            percentile: 0.0,
            idle_time_ps: 0.0,
        }
    }
}

impl RequestDetail {
    /// End minus begin (ps), wrapping like XProf's unsigned arithmetic.
    pub fn latency_ps(&self) -> u64 {
        self.end_time_ps.wrapping_sub(self.start_time_ps)
    }
}

/// One batch (`BatchDetail`); times in picoseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BatchDetail {
    /// The batch's group id (-1 for averages).
    pub batch_id: i64,
    /// Begin.
    pub start_time_ps: u64,
    /// End.
    pub end_time_ps: u64,
    /// From its first request's begin to its own begin.
    pub batch_delay_ps: u64,
    /// The requests it serves (sorted).
    pub related_request_ids: Vec<i64>,
    /// Padding rows.
    pub padding_amount: i32,
    /// Rows after padding.
    pub batch_size_after_padding: i32,
    /// Index of its model.
    pub model_id_index: i32,
    /// The host.
    pub host_id: i32,
    /// Percentile when sampled.
    pub percentile: f64,
    /// Device compute.
    pub device_time_ps: u64,
}

impl Default for BatchDetail {
    fn default() -> Self {
        BatchDetail {
            batch_id: -1,
            start_time_ps: 0,
            end_time_ps: 0,
            batch_delay_ps: 0,
            related_request_ids: Vec::new(),
            padding_amount: 0,
            batch_size_after_padding: 0,
            model_id_index: 0,
            host_id: 0,
            percentile: 0.0,
            device_time_ps: 0,
        }
    }
}

impl BatchDetail {
    /// End minus begin (ps).
    pub fn latency_ps(&self) -> u64 {
        self.end_time_ps.wrapping_sub(self.start_time_ps)
    }

    /// `CalculateBatchingEfficiency`: the share of rows that are not padding.
    pub fn batching_efficiency(&self) -> f64 {
        safe_divide(
            f64::from(self.batch_size_after_padding) - f64::from(self.padding_amount),
            f64::from(self.batch_size_after_padding),
        )
    }
}

/// `tsl::profiler::SafeDivide`.
fn safe_divide(a: f64, b: f64) -> f64 {
    if b.abs() < 1e-20 { 0.0 } else { a / b }
}

/// A model's batching parameters, from the TFStreamz snapshot.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BatchingParameters {
    /// `num_batch_threads`.
    pub num_batch_threads: i64,
    /// `batch_timeout_micros`.
    pub batch_timeout_micros: i64,
    /// `max_batch_size`.
    pub max_batch_size: i64,
    /// `max_enqueued_batches`.
    pub max_enqueued_batches: i64,
    /// `allowed_batch_sizes`.
    pub allowed_batch_sizes: String,
}

/// Model ids in the order first seen (`ModelIdDatabase`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelIdDatabase {
    /// Ids by index.
    pub ids: Vec<String>,
    /// Index of each id.
    pub id_to_index: BTreeMap<String, i32>,
    /// Batching parameters of the models TFStreamz describes.
    pub id_to_batching_params: BTreeMap<String, BatchingParameters>,
}

/// One host's requests and batches, each sorted by latency (`PerHostInferenceStats` and
/// the host's model ids).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HostInferenceStats {
    /// The host's index in the run.
    pub host_id: i32,
    /// Requests.
    pub request_details: Vec<RequestDetail>,
    /// Batches.
    pub batch_details: Vec<BatchDetail>,
    /// Models.
    pub model_id_db: ModelIdDatabase,
}

/// Averages of the requests and batches of one batch size.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PerBatchSizeResult {
    /// Rows after padding.
    pub batch_size: i32,
    /// The average request served by batches of this size.
    pub aggregated_request: RequestDetail,
    /// The average batch of this size.
    pub aggregated_batch: BatchDetail,
    /// Batching efficiency of all these batches' rows together.
    pub batching_efficiency: f64,
    /// Requests per second.
    pub request_throughput: f64,
    /// Batches per second.
    pub batch_throughput: f64,
}

/// One model's requests and batches (`PerModelInferenceStats`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PerModelInferenceStats {
    /// Requests of every host, by latency.
    pub request_details: Vec<RequestDetail>,
    /// Batches of every host, by latency.
    pub batch_details: Vec<BatchDetail>,
    /// Requests per second over the requests' whole span.
    pub request_throughput: f64,
    /// Mean request latency (µs).
    pub request_average_latency_us: f64,
    /// Batches per second.
    pub batch_throughput: f64,
    /// Mean batch latency (µs).
    pub batch_average_latency_us: f64,
    /// The average request.
    pub aggregated_request: RequestDetail,
    /// The average batch.
    pub aggregated_batch: BatchDetail,
    /// Batching efficiency of all the batches' rows together.
    pub batching_efficiency: f64,
    /// Averages per batch size, by size.
    pub per_batch_size: Vec<PerBatchSizeResult>,
}

/// The run's inference statistics by model (`InferenceStats` after
/// `RegroupInferenceStatsByModel`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct InferenceStats {
    /// Models (`ALL` when no request names one).
    pub model_id_db: ModelIdDatabase,
    /// Statistics by model index.
    pub per_model: BTreeMap<i32, PerModelInferenceStats>,
}

/// `CombineModelIdDatabases`: whether requests of `src` need their model index remapped.
fn combine_model_dbs(src: &ModelIdDatabase, dst: &mut ModelIdDatabase) -> bool {
    if dst.ids.is_empty() {
        *dst = src.clone();
        return false;
    }
    for (id, params) in &src.id_to_batching_params {
        dst.id_to_batching_params.entry(id.clone()).or_insert_with(|| params.clone());
    }
    let mut need_update = false;
    for (id, &index) in &src.id_to_index {
        match dst.id_to_index.get(id) {
            Some(&existing) => need_update |= existing != index,
            None => {
                dst.id_to_index.insert(id.clone(), dst.ids.len() as i32);
                dst.ids.push(id.clone());
                need_update = true;
            }
        }
    }
    need_update
}

/// Combines the hosts (in run order) and regroups by model (`CombineInferenceStatsResult`
/// then `RegroupInferenceStatsByModel`).
pub fn combine(hosts: &[HostInferenceStats]) -> InferenceStats {
    let mut db = ModelIdDatabase::default();
    let mut requests_by_host: Vec<Vec<RequestDetail>> = Vec::new();
    let mut batches_by_host: Vec<Vec<BatchDetail>> = Vec::new();
    for host in hosts {
        let update = combine_model_dbs(&host.model_id_db, &mut db);
        let mut requests = host.request_details.clone();
        if update {
            // XProf remaps the requests' model indexes only (not the batches').
            for r in requests.iter_mut().filter(|r| r.model_id_index != -1) {
                let id = usize::try_from(r.model_id_index).ok().and_then(|i| host.model_id_db.ids.get(i));
                if let Some(&index) = id.and_then(|id| db.id_to_index.get(id)) {
                    r.model_id_index = index;
                }
            }
        }
        requests_by_host.push(requests);
        batches_by_host.push(host.batch_details.clone());
    }
    let mut stats = InferenceStats::default();
    if hosts.is_empty() {
        stats.model_id_db = db;
        return stats;
    }
    let no_model = db.ids.is_empty();
    let models = if no_model { 1 } else { db.ids.len() };
    let by_model_requests = regroup(
        &requests_by_host,
        models,
        no_model,
        |r| r.model_id_index,
        RequestDetail::latency_ps,
        |r| r.start_time_ps,
    );
    let by_model_batches =
        regroup(&batches_by_host, models, no_model, |b| b.model_id_index, BatchDetail::latency_ps, |b| b.start_time_ps);
    for (index, (requests, batches)) in by_model_requests.into_iter().zip(by_model_batches).enumerate() {
        let (request_throughput, request_average_latency_us) =
            throughput_and_latency(requests.iter().map(|r| (r.start_time_ps, r.end_time_ps)));
        let (batch_throughput, batch_average_latency_us) =
            throughput_and_latency(batches.iter().map(|b| (b.start_time_ps, b.end_time_ps)));
        let mut model = PerModelInferenceStats {
            request_details: requests,
            batch_details: batches,
            request_throughput,
            request_average_latency_us,
            batch_throughput,
            batch_average_latency_us,
            ..Default::default()
        };
        aggregate(&mut model);
        stats.per_model.insert(index as i32, model);
    }
    if no_model {
        db.ids.push("ALL".into());
        db.id_to_index.insert("ALL".into(), 0);
    }
    stats.model_id_db = db;
    stats
}

/// `RegroupDataByModelId`: each model's data of every host, merged by latency.
fn regroup<T: Clone>(
    by_host: &[Vec<T>],
    models: usize,
    no_model: bool,
    model_of: impl Fn(&T) -> i32,
    latency: impl Fn(&T) -> u64,
    begin: impl Fn(&T) -> u64,
) -> Vec<Vec<T>> {
    let mut out: Vec<Vec<T>> = vec![Vec::new(); models];
    for host in by_host {
        for item in host {
            let index = if no_model { 0 } else { model_of(item) };
            // XProf leaves out data without a model when some data has one.
            if let Some(list) = usize::try_from(index).ok().and_then(|i| out.get_mut(i)) {
                list.push(item.clone());
            }
        }
    }
    for list in &mut out {
        list.sort_by_key(|item| (latency(item), begin(item)));
    }
    out
}

/// `ComputeThroughputAndAverageLatencyUs`: count per second over the whole span, and the
/// mean latency (µs).
fn throughput_and_latency(spans: impl Iterator<Item = (u64, u64)>) -> (f64, f64) {
    let (mut min_start, mut max_end, mut total, mut n) = (u64::MAX, 0u64, 0u64, 0usize);
    for (start, end) in spans {
        min_start = min_start.min(start);
        max_end = max_end.max(end);
        total = total.wrapping_add(end.wrapping_sub(start));
        n += 1;
    }
    if n == 0 {
        return (0.0, 0.0);
    }
    let seconds = max_end.wrapping_sub(min_start) as f64 / 1e12;
    (n as f64 / seconds, total as f64 / 1e6 / n as f64)
}

fn add_request(sum: &mut RequestDetail, r: &RequestDetail) {
    sum.end_time_ps = r.latency_ps().wrapping_add(sum.end_time_ps);
    sum.device_time_ps = sum.device_time_ps.wrapping_add(r.device_time_ps);
    sum.read_from_device_time_ps = sum.read_from_device_time_ps.wrapping_add(r.read_from_device_time_ps);
    sum.write_to_device_time_ps = sum.write_to_device_time_ps.wrapping_add(r.write_to_device_time_ps);
    sum.batching_request_delay_ps = sum.batching_request_delay_ps.wrapping_add(r.batching_request_delay_ps);
    sum.batching_request_size = sum.batching_request_size.wrapping_add(r.batching_request_size);
    sum.host_preprocessing_ps = sum.host_preprocessing_ps.wrapping_add(r.host_preprocessing_ps);
    sum.host_batch_formation_ps = sum.host_batch_formation_ps.wrapping_add(r.host_batch_formation_ps);
    sum.host_runtime_ps = sum.host_runtime_ps.wrapping_add(r.host_runtime_ps);
    sum.host_postprocessing_ps = sum.host_postprocessing_ps.wrapping_add(r.host_postprocessing_ps);
    sum.idle_time_ps += r.idle_time_ps;
}

/// `GetAverageRequestDetails`: integer division of the sums, as XProf's uint64 fields.
fn average_request(sum: &RequestDetail, n: usize) -> RequestDetail {
    if n == 0 {
        return RequestDetail::default();
    }
    let d = n as u64;
    RequestDetail {
        request_id: -1,
        start_time_ps: 0,
        end_time_ps: sum.end_time_ps / d,
        device_time_ps: sum.device_time_ps / d,
        write_to_device_time_ps: sum.write_to_device_time_ps / d,
        read_from_device_time_ps: sum.read_from_device_time_ps / d,
        batching_request_delay_ps: sum.batching_request_delay_ps / d,
        batching_request_size: (i64::from(sum.batching_request_size) / n as i64) as i32,
        host_preprocessing_ps: sum.host_preprocessing_ps / d,
        host_batch_formation_ps: sum.host_batch_formation_ps / d,
        host_runtime_ps: sum.host_runtime_ps / d,
        host_postprocessing_ps: sum.host_postprocessing_ps / d,
        idle_time_ps: sum.idle_time_ps / n as f64,
        ..Default::default()
    }
}

fn add_batch(sum: &mut BatchDetail, b: &BatchDetail) {
    sum.end_time_ps = b.latency_ps().wrapping_add(sum.end_time_ps);
    sum.batch_delay_ps = sum.batch_delay_ps.wrapping_add(b.batch_delay_ps);
    sum.padding_amount = sum.padding_amount.wrapping_add(b.padding_amount);
    sum.batch_size_after_padding = sum.batch_size_after_padding.wrapping_add(b.batch_size_after_padding);
    sum.device_time_ps = sum.device_time_ps.wrapping_add(b.device_time_ps);
}

/// `GetAverageBatchDetails`.
fn average_batch(sum: &BatchDetail, n: usize) -> BatchDetail {
    if n == 0 {
        return BatchDetail::default();
    }
    let d = n as u64;
    BatchDetail {
        batch_id: -1,
        start_time_ps: 0,
        end_time_ps: sum.end_time_ps / d,
        batch_delay_ps: sum.batch_delay_ps / d,
        padding_amount: (i64::from(sum.padding_amount) / n as i64) as i32,
        batch_size_after_padding: (i64::from(sum.batch_size_after_padding) / n as i64) as i32,
        device_time_ps: sum.device_time_ps / d,
        ..Default::default()
    }
}

/// `AggregatePerModelInferenceStats` for one model.
fn aggregate(model: &mut PerModelInferenceStats) {
    let by_id: BTreeMap<i64, &BatchDetail> = model.batch_details.iter().map(|b| (b.batch_id, b)).collect();
    let mut request_sum = RequestDetail { request_id: 0, model_id_index: 0, ..Default::default() };
    let mut batch_sum = BatchDetail { batch_id: 0, ..Default::default() };
    #[derive(Default)]
    struct Bucket {
        requests: RequestDetail,
        request_count: usize,
        batches: BatchDetail,
        batch_count: usize,
    }
    let mut buckets: BTreeMap<i32, Bucket> = BTreeMap::new();
    for r in &model.request_details {
        add_request(&mut request_sum, r);
        for id in &r.related_batch_ids {
            if let Some(b) = by_id.get(id) {
                let bucket = buckets.entry(b.batch_size_after_padding).or_default();
                add_request(&mut bucket.requests, r);
                bucket.request_count += 1;
            }
        }
    }
    for b in &model.batch_details {
        add_batch(&mut batch_sum, b);
        let bucket = buckets.entry(b.batch_size_after_padding).or_default();
        add_batch(&mut bucket.batches, b);
        bucket.batch_count += 1;
    }
    model.aggregated_request = average_request(&request_sum, model.request_details.len());
    model.aggregated_batch = average_batch(&batch_sum, model.batch_details.len());
    // XProf 2.24.2's aggregated rows: the efficiency of the summed rows (not of the
    // integer averages it shows next to it).
    model.batching_efficiency = batch_sum.batching_efficiency();
    let (requests, batches) = (model.request_details.len() as f64, model.batch_details.len() as f64);
    model.per_batch_size = buckets
        .into_iter()
        .map(|(size, b)| PerBatchSizeResult {
            batch_size: size,
            aggregated_request: average_request(&b.requests, b.request_count),
            aggregated_batch: average_batch(&b.batches, b.batch_count),
            batching_efficiency: b.batches.batching_efficiency(),
            request_throughput: b.request_count as f64 * model.request_throughput / requests,
            batch_throughput: b.batch_count as f64 * model.batch_throughput / batches,
        })
        .collect();
}

/// `ComputeInferenceLatencyResult`: the latency breakdown of every request of every model
/// at the 50/75/90/99/99.9th percentiles, then their mean.
pub fn inference_latency(stats: &InferenceStats) -> OverviewInferenceLatency {
    let mut result = OverviewInferenceLatency::default();
    let mut sessions: Vec<OverviewLatencyBreakdown> = Vec::new();
    let mut avg = OverviewLatencyBreakdown::default();
    let (mut max_latency, mut min_latency, mut per_second) = (0.0f64, f64::MAX, 0.0);
    for model in stats.per_model.values() {
        per_second += model.request_throughput;
        for r in &model.request_details {
            let total = r.latency_ps() as f64 / 1e6;
            let device = r.device_time_ps as f64 / 1e6;
            let communication = r.read_from_device_time_ps.wrapping_add(r.write_to_device_time_ps) as f64 / 1e6;
            let host = total - device - communication;
            sessions.push(OverviewLatencyBreakdown {
                total_latency_us: total,
                host_latency_us: host,
                device_latency_us: device,
                communication_latency_us: communication,
            });
            avg.total_latency_us += total;
            avg.device_latency_us += device;
            avg.communication_latency_us += communication;
            avg.host_latency_us += total - device - communication;
            max_latency = max_latency.max(total);
            min_latency = min_latency.min(total);
        }
    }
    if sessions.is_empty() {
        return result;
    }
    result.sessions_per_second = per_second;
    result.max_latency_us = max_latency;
    result.min_latency_us = min_latency;
    let n = sessions.len();
    let mean = |x: f64| if x.abs() < 1e-20 { 0.0 } else { x / n as f64 };
    avg = OverviewLatencyBreakdown {
        total_latency_us: mean(avg.total_latency_us),
        host_latency_us: mean(avg.host_latency_us),
        device_latency_us: mean(avg.device_latency_us),
        communication_latency_us: mean(avg.communication_latency_us),
    };
    sessions.sort_by(|a, b| a.total_latency_us.total_cmp(&b.total_latency_us));
    for percent in [50.0, 75.0, 90.0, 99.0, 99.9] {
        result.percentile_numbers.push(percent);
        let index = ((percent / 100.0 * n as f64) as usize).min(n - 1);
        result.latency_breakdowns.push(sessions[index]);
    }
    result.latency_breakdowns.push(avg);
    result
}

#[cfg(test)]
mod tests;
