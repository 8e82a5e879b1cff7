//! Tiny hand-built serving profiles through the whole inference analysis.

use super::profile::InferenceProfile;
use super::*;
use oxprof_grouping::group_events;
use oxprof_model::ModelBuilder;
use oxprof_model::XSpace;

/// Two requests of model `m:1` and one batch serving both, on `/host:CPU` (µs; lines start
/// at 1 µs because XProf takes a request begin of 0 for "not set yet"):
///
/// ```text
/// client 1  |ModelServerRequest_predict 1-------------------11|
///            |ScheduleWithoutSplit 2-3| (producer of the batch)
/// client 2     |ModelServerRequest_predict 3--------------13|
///               |ScheduleWithoutSplit 4-5|
/// batcher                 |ProcessBatch 6-------10|
///                          |ConcatInputTensors 6-7| (padding 2 of 8)
/// ```
fn serving_space() -> XSpace {
    const US: i64 = 1_000_000;
    ModelBuilder::new()
        .plane("/host:CPU", |p| {
            p.line(1, "client 1", 1000, |l| {
                l.event("ModelServerRequest_predict", 0, 10 * US).stat("_r", 1i64).stat("model_id", "m:1");
                l.event("ScheduleWithoutSplit", US, US)
                    .stat("batching_input_task_size", 3i64)
                    .stat("_pt", 3i64)
                    .stat("_p", 77i64);
            });
            p.line(2, "client 2", 1000, |l| {
                l.event("ModelServerRequest_predict", 2 * US, 10 * US).stat("_r", 1i64).stat("model_id", "m:1");
                l.event("ScheduleWithoutSplit", 3 * US, US)
                    .stat("batching_input_task_size", 3i64)
                    .stat("_pt", 3i64)
                    .stat("_p", 77i64);
            });
            p.line(3, "batcher", 1000, |l| {
                l.event("ProcessBatch", 5 * US, 4 * US).stat("_r", 2i64).stat("_ct", 3i64).stat("_c", 77i64);
                l.event("ConcatInputTensors", 5 * US, US)
                    .stat("padding_amount", 2i64)
                    .stat("batch_size_after_padding", 8i64);
            });
        })
        .build()
        .unwrap()
}

#[test]
fn requests_and_batches_of_a_batched_model() {
    let space = serving_space();
    let groups = group_events(&space);
    let host = host_inference_stats(&space, &groups, 0);
    assert_eq!(host.model_id_db.ids, ["m:1"]);
    assert_eq!(host.request_details.len(), 2);
    assert_eq!(host.batch_details.len(), 1);
    let batch = &host.batch_details[0];
    assert_eq!((batch.padding_amount, batch.batch_size_after_padding), (2, 8));
    assert_eq!(batch.related_request_ids.len(), 2, "{batch:?}");
    let first =
        host.request_details.iter().find(|r| r.start_time_ps == 1_000_000).unwrap_or_else(|| panic!("{host:#?}"));
    assert_eq!(first.batching_request_size, 3);
    // From the request's begin (1 µs) to the batch's (6 µs).
    assert_eq!(first.batching_request_delay_ps, 5_000_000);
    // From the first request's begin to the batch's.
    assert_eq!(batch.batch_delay_ps, 5_000_000);
    // Batch formation: from its schedule (2 µs) to the batch's concat (6 µs); nothing
    // else is known of a host-only request (no event, no idle time).
    assert_eq!(first.host_batch_formation_ps, 4_000_000);
    assert_eq!(first.idle_time_ps, 0.0);

    let stats = combine(&[host]);
    let model = &stats.per_model[&0];
    // Two requests over 12 µs; mean latency 10 µs.
    assert!((model.request_throughput - 2.0 / 12e-6).abs() < 1e-6);
    assert_eq!(model.request_average_latency_us, 10.0);
    assert_eq!(model.batching_efficiency, 0.75);
    let latency = inference_latency(&stats);
    assert_eq!(latency.latency_breakdowns.len(), 6);
    assert_eq!(latency.latency_breakdowns[5].total_latency_us, 10.0);

    let profile = InferenceProfile::new(stats, "", "");
    let tables = profile.data_tables();
    assert_eq!(tables.len(), 3, "models, requests, batches");
}

#[test]
fn a_run_without_requests_has_one_model_all() {
    let space = ModelBuilder::new()
        .plane("/host:CPU", |p| {
            p.line(1, "python", 0, |l| {
                l.event("train", 0, 10).stat("_r", 1i64);
            });
        })
        .build()
        .unwrap();
    let host = host_inference_stats(&space, &group_events(&space), 0);
    assert!(host.request_details.is_empty());
    let stats = combine(&[host]);
    assert_eq!(stats.model_id_db.ids, ["ALL"]);
    assert!(inference_latency(&stats).latency_breakdowns.is_empty());
}

#[test]
fn model_names_of_batching_parameters() {
    assert_eq!(parse_model_name("max_batch_size{model_name=m, op_name=o}"), Some("m"));
    assert_eq!(parse_model_name("max_batch_size{op_name=o}"), None);
    assert_eq!(parse_model_name("max_batch_size"), None);
}
