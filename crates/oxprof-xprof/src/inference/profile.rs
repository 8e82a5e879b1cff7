//! The `inference_profile` tool: XProf's `InferenceStatsToDataTableJson` — a table of the
//! models, then per model a request table (percentile samples, averages per batch size,
//! the average) and, when the run batches, a batch table — with the percentile sampling
//! of `inference_stats_sampler.cc`.

use super::{BatchDetail, InferenceStats, PerModelInferenceStats, RequestDetail};
use oxprof_report::{Report, Table, XprofBody, json_of};
use oxprof_wire::cxx_printf::printf_fixed;
use oxprof_wire::datatable::{Cell, ColumnType, DataTable};
use oxprof_wire::nlohmann;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The percentile ranges sampled: `[p, p + error)`, at most 10 rows each.
const WANTED_PERCENTILES: [(f64, f64); 6] =
    [(50.0, 1.0), (75.0, 1.0), (90.0, 1.0), (99.0, 0.5), (99.9, 0.05), (99.99, 0.005)];
const MAX_PER_PERCENTILE: usize = 10;

/// `PercentileSelector::Select`: every item when there are at most 60, else up to ten in
/// each wanted percentile range; `(index, percentile)` pairs.
fn select_percentiles(n: usize) -> Vec<(usize, f64)> {
    let percentile = |k: usize| 100.0 * k as f64 / n as f64;
    if n <= WANTED_PERCENTILES.len() * MAX_PER_PERCENTILE {
        return (0..n).map(|k| (k, percentile(k))).collect();
    }
    let mut out = Vec::new();
    let mut next = 0;
    for (wanted, error) in WANTED_PERCENTILES {
        let mut selected = 0;
        for k in next..n {
            let p = percentile(k);
            if p >= wanted + error {
                next = k;
                break;
            }
            if p >= wanted && selected < MAX_PER_PERCENTILE {
                out.push((k, p));
                selected += 1;
            }
        }
    }
    out
}

/// The request comparators of XProf's sampler, by the `request_column` parameter (the
/// latency by default).
fn request_key(column: &str) -> fn(&RequestDetail) -> f64 {
    match column {
        "Request delay for batching" => |r| r.batching_request_delay_ps as f64,
        "Request size" => |r| f64::from(r.batching_request_size),
        "Host preprocess" => |r| r.host_preprocessing_ps as f64,
        "Host batch formation" => |r| r.host_batch_formation_ps as f64,
        "Host runtime" => |r| r.host_runtime_ps as f64,
        "Data transfer H2D" => |r| r.write_to_device_time_ps as f64,
        "Data transfer D2H" => |r| r.read_from_device_time_ps as f64,
        "Device compute" => |r| r.device_time_ps as f64,
        "Host postprocess" => |r| r.host_postprocessing_ps as f64,
        "Idle time" => |r| r.idle_time_ps,
        _ => |r| r.latency_ps() as f64,
    }
}

/// The batch comparators, by the `batch_column` parameter.
fn batch_key(column: &str) -> fn(&BatchDetail) -> f64 {
    match column {
        "Batching delay" => |b| b.batch_delay_ps as f64,
        "Padding amount" => |b| f64::from(b.padding_amount),
        "Batch size after padding" => |b| f64::from(b.batch_size_after_padding),
        "Batching efficiency" => BatchDetail::batching_efficiency,
        _ => |b| b.latency_ps() as f64,
    }
}

/// Samples of `items` (sorted by latency) by `key`, with their percentiles. XProf re-sorts
/// unless the column is `Latency` (a stable sort here: XProf's `std::sort` leaves ties in
/// an unspecified order).
fn sample<T: Clone>(items: &[T], key: fn(&T) -> f64, resort: bool) -> Vec<(T, f64)> {
    let mut sorted: Vec<&T> = items.iter().collect();
    if resort {
        sorted.sort_by(|a, b| key(a).total_cmp(&key(b)));
    }
    select_percentiles(sorted.len()).into_iter().map(|(k, p)| (sorted[k].clone(), p)).collect()
}

/// One model's sampled requests and batches.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelSamples {
    /// Model id.
    pub model_id: String,
    /// Sampled requests with their percentiles.
    pub requests: Vec<(RequestDetail, f64)>,
    /// Sampled batches with their percentiles.
    pub batches: Vec<(BatchDetail, f64)>,
}

/// The `inference_profile` report.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct InferenceProfile {
    /// The statistics by model.
    pub stats: InferenceStats,
    /// Whether any model has batches.
    pub has_batching: bool,
    /// Samples per model, by model id.
    pub samples: Vec<ModelSamples>,
}

impl InferenceProfile {
    /// The report of `stats`, sampled by the `request_column` and `batch_column`
    /// parameters (empty: latency).
    pub fn new(stats: InferenceStats, request_column: &str, batch_column: &str) -> InferenceProfile {
        let has_batching = stats.per_model.values().any(|m| !m.batch_details.is_empty());
        let mut ids = stats.model_id_db.ids.clone();
        ids.sort();
        let samples = ids
            .into_iter()
            .filter_map(|id| {
                let index = *stats.model_id_db.id_to_index.get(&id)?;
                let model = stats.per_model.get(&index)?;
                Some(ModelSamples {
                    requests: sample(&model.request_details, request_key(request_column), request_column != "Latency"),
                    batches: sample(&model.batch_details, batch_key(batch_column), batch_column != "Latency"),
                    model_id: id,
                })
            })
            .collect();
        InferenceProfile { stats, has_batching, samples }
    }

    /// XProf's tables: models, then per model its requests (and batches).
    pub fn data_tables(&self) -> Vec<DataTable> {
        let mut meta = DataTable::new();
        meta.prop("hasBatching", if self.has_batching { "true" } else { "false" })
            .prop("hasTensorPattern", "false")
            .column("model_name", ColumnType::String, "Model Name");
        for s in &self.samples {
            meta.row(vec![s.model_id.as_str().into()]);
        }
        let mut tables = vec![meta];
        for s in &self.samples {
            let Some(model) =
                self.stats.model_id_db.id_to_index.get(&s.model_id).and_then(|i| self.stats.per_model.get(i))
            else {
                continue;
            };
            tables.push(request_table(model, s, self.has_batching));
            if self.has_batching {
                tables.push(batch_table(model, s, self.stats.model_id_db.id_to_batching_params.get(&s.model_id)));
            }
        }
        tables
    }
}

fn ms(ps: u64) -> f64 {
    ps as f64 / 1e9
}

fn request_row(
    table: &mut DataTable,
    r: &RequestDetail,
    percentile: String,
    id: String,
    batching: bool,
    throughput: &str,
) {
    let mut cells: Vec<Cell> = vec![percentile.into(), id.into(), ms(r.latency_ps()).into()];
    if batching {
        cells.push(f64::from(r.batching_request_size).into());
        cells.push(ms(r.batching_request_delay_ps).into());
        cells.push(throughput.into());
    }
    cells.extend([
        ms(r.host_preprocessing_ps).into(),
        ms(r.host_runtime_ps).into(),
        ms(r.write_to_device_time_ps).into(),
        ms(r.read_from_device_time_ps).into(),
        ms(r.device_time_ps).into(),
        ms(r.host_postprocessing_ps).into(),
        (r.idle_time_ps / 1e9).into(),
        // XProf's open-source build links no trace viewer URL (`Linkify` returns "").
        "".into(),
    ]);
    table.row(cells);
}

/// `CreateRequestDataTable` (TPU columns always: XProf passes `is_tpu = true`).
fn request_table(model: &PerModelInferenceStats, samples: &ModelSamples, batching: bool) -> DataTable {
    let mut t = DataTable::new();
    t.prop("throughput", printf_fixed(model.request_throughput, 1))
        .prop("averageLatencyMs", printf_fixed(model.request_average_latency_us / 1e3, 3));
    t.column("percentile", ColumnType::String, "Percentile")
        .column("request_id", ColumnType::String, "Request ID")
        .column("latency_ms", ColumnType::Number, "Latency");
    if batching {
        t.column("batching_request_size", ColumnType::Number, "Request size")
            .column("host_batch_formation", ColumnType::Number, "Host batch formation")
            .column("throughput", ColumnType::String, "Throughput");
    }
    t.column("host_preprocessing", ColumnType::Number, "Host preprocess")
        .column("host_runtime", ColumnType::Number, "Host runtime")
        .column("data_transfer_h2d", ColumnType::Number, "Data transfer H2D")
        .column("data_transfer_d2h", ColumnType::Number, "Data transfer D2H")
        .column("device_compute", ColumnType::Number, "Device compute")
        .column("host_postprocess", ColumnType::Number, "Host postprocess")
        .column("idle time", ColumnType::Number, "Idle time")
        .column("trace_viewer_url", ColumnType::String, "Trace Viewer URL");
    for (r, p) in &samples.requests {
        request_row(&mut t, r, printf_fixed(*p, 3), r.request_id.to_string(), batching, "N/A");
    }
    for b in &model.per_batch_size {
        let throughput = printf_fixed(b.request_throughput, 1);
        request_row(
            &mut t,
            &b.aggregated_request,
            format!("Batch size {}", b.batch_size),
            "N/A".into(),
            batching,
            &throughput,
        );
    }
    let throughput = printf_fixed(model.request_throughput, 1);
    request_row(&mut t, &model.aggregated_request, "Average".into(), "N/A".into(), batching, &throughput);
    t
}

/// One batch row; `efficiency` is XProf 2.24.2's figure for aggregated rows (the mean of
/// the batches'), the batch's own otherwise.
#[allow(clippy::too_many_arguments)]
fn batch_row(
    table: &mut DataTable,
    b: &BatchDetail,
    percentile: String,
    id: String,
    efficiency: f64,
    throughput: &str,
    url: &str,
) {
    table.row(vec![
        percentile.into(),
        id.into(),
        ms(b.latency_ps()).into(),
        f64::from(b.padding_amount).into(),
        f64::from(b.batch_size_after_padding).into(),
        efficiency.into(),
        ms(b.batch_delay_ps).into(),
        throughput.into(),
        ms(b.device_time_ps).into(),
        // XProf 2.24.2 shows no program ids for host-only batches.
        "N/A".into(),
        url.into(),
    ]);
}

/// `CreateBatchDataTable` as XProf 2.24.2 writes it (with its `program_id` column).
fn batch_table(
    model: &PerModelInferenceStats,
    samples: &ModelSamples,
    params: Option<&super::BatchingParameters>,
) -> DataTable {
    let mut t = DataTable::new();
    for (id, ty, label) in [
        ("percentile", ColumnType::String, "Percentile"),
        ("batch_id", ColumnType::String, "Batch ID"),
        ("latency", ColumnType::Number, "Latency"),
        ("padding_amount", ColumnType::Number, "Padding amount"),
        ("batch_size_after_padding", ColumnType::Number, "Batch size after padding"),
        ("batching_efficiency", ColumnType::Number, "Batching efficiency"),
        ("batching_delay_us", ColumnType::Number, "Batching delay"),
        ("throughput", ColumnType::String, "Throughput"),
        ("device_compute", ColumnType::Number, "Device compute"),
        ("program_id", ColumnType::String, "Program ID(s)"),
        ("trace_viewer_url", ColumnType::String, "Trace Viewer URL"),
    ] {
        t.column(id, ty, label);
    }
    for (b, p) in &samples.batches {
        batch_row(&mut t, b, printf_fixed(*p, 3), b.batch_id.to_string(), b.batching_efficiency(), "N/A", "");
    }
    for s in &model.per_batch_size {
        let throughput = printf_fixed(s.batch_throughput, 1);
        let label = format!("Batch size {}", s.batch_size);
        batch_row(&mut t, &s.aggregated_batch, label, "N/A".into(), s.batching_efficiency, &throughput, "");
    }
    let throughput = printf_fixed(model.batch_throughput, 1);
    batch_row(
        &mut t,
        &model.aggregated_batch,
        "Aggregated".into(),
        "N/A".into(),
        model.batching_efficiency,
        &throughput,
        "N/A",
    );
    t.prop("throughput", printf_fixed(model.batch_throughput, 1))
        .prop("averageLatencyMs", printf_fixed(model.batch_average_latency_us / 1e3, 3));
    match params {
        Some(p) => {
            t.prop("hasBatchingParam", "true")
                .prop("batchingParamNumBatchThreads", p.num_batch_threads.to_string())
                .prop("batchingParamMaxBatchSize", p.max_batch_size.to_string())
                .prop("batchingParamBatchTimeoutMicros", p.batch_timeout_micros.to_string())
                .prop("batchingParamMaxEnqueuedBatches", p.max_enqueued_batches.to_string())
                .prop("batchingParamAllowedBatchSizes", p.allowed_batch_sizes.clone());
        }
        None => {
            t.prop("hasBatchingParam", "false");
        }
    }
    t
}

/// Names of the tables for Markdown and CSV.
fn table_names(profile: &InferenceProfile) -> Vec<String> {
    let mut names = vec!["models".to_string()];
    for s in &profile.samples {
        names.push(format!("requests {}", s.model_id));
        if profile.has_batching {
            names.push(format!("batches {}", s.model_id));
        }
    }
    names
}

impl Report for InferenceProfile {
    fn xprof_body(&self) -> XprofBody {
        XprofBody::json(nlohmann::dump_tables(&self.data_tables()))
    }

    fn to_json(&self) -> Value {
        json_of(self)
    }

    fn tables(&self) -> Vec<Table> {
        table_names(self).iter().zip(self.data_tables()).map(|(name, t)| Table::from_data_table(name, &t)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::select_percentiles;

    #[test]
    fn few_items_are_all_selected() {
        assert_eq!(select_percentiles(3), vec![(0, 0.0), (1, 100.0 / 3.0), (2, 200.0 / 3.0)]);
    }

    #[test]
    fn many_items_are_sampled_by_percentile_range() {
        // 200 items: 0.5% apart. [50, 51): 100, 101; [75, 76): 150, 151; [90, 91): 180,
        // 181; [99, 99.5): 198; [99.9, 99.95) and [99.99, …): none.
        let picked: Vec<usize> = select_percentiles(200).into_iter().map(|(k, _)| k).collect();
        assert_eq!(picked, vec![100, 101, 150, 151, 180, 181, 198]);
    }
}
