//! `tf_data_bottleneck_analysis` on the refkit profiles: the deliberately input-bound
//! custom loop names its slow map (fused by tf.data into `MapAndBatch`) as the bottleneck,
//! Keras `fit` has a fast pipeline, and a JAX profile says it has no tf.data events.

use oxprof_api::data::{DataRequest, DataResponse, data};
use oxprof_api::registry::ToolId;
use serde_json::Value;
use std::path::PathBuf;

fn profile(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/profiles").join(name)
}

fn analyze(name: &str) -> DataResponse {
    let request = DataRequest::new(ToolId::TF_DATA_BOTTLENECK_ANALYSIS);
    data(&profile(name), &request).unwrap()
}

/// The three tables: graph, summary, bottleneck analysis.
fn tables(response: &DataResponse) -> (Value, Value, Value) {
    let json = response.json.clone().unwrap();
    let tables = json.as_array().unwrap();
    assert_eq!(tables.len(), 3);
    (tables[0].clone(), tables[1].clone(), tables[2].clone())
}

fn rows(table: &Value) -> Vec<Vec<Value>> {
    table["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["c"].as_array().unwrap().iter().map(|c| c["v"].clone()).collect())
        .collect()
}

#[test]
fn input_bound_custom_loop_names_the_slow_map() {
    let response = analyze("tf_custom_loop");
    eprintln!("{}", response.body);
    let (graph, summary, bottleneck) = tables(&response);
    assert_eq!(bottleneck["p"]["is_input_bound"], "true");
    let bottlenecks = rows(&bottleneck);
    assert_eq!(bottlenecks.len(), 1, "one host input pipeline");
    let row = &bottlenecks[0];
    assert_eq!(row[0], "vm");
    assert_eq!(row[1], "Host:0");
    let text = row[3].as_str().unwrap();
    // `ds.map(slow_map).batch(32)` runs as tf.data's fused MapAndBatch iterator.
    assert!(text.contains("<b>MapAndBatch</b>"), "{text}");
    assert!(text.contains("Iterator::Root::Prefetch::ForeverRepeat[0]::Prefetch::MapAndBatch<br/>"), "{text}");
    assert!(row[2].as_i64().unwrap() > 50, "max latency over 50 us: {:?}", row[2]);
    // Summary: one host pipeline with 30 calls (one per training step).
    let summary_rows = rows(&summary);
    assert_eq!(summary_rows.len(), 1);
    assert_eq!(summary_rows[0][5], 30);
    assert!(summary_rows[0][6].as_i64().unwrap() >= 1);
    // The graph marks exactly one bottleneck (type 2) per call rank.
    let graph_rows = rows(&graph);
    let bottleneck_marks = graph_rows.iter().filter(|r| r[5] == 2).count();
    assert_eq!(bottleneck_marks, 30);
    assert!(response.notes.is_empty(), "{:?}", response.notes);
}

#[test]
fn keras_fit_pipeline_is_summarized() {
    let response = analyze("tf_keras_fit");
    eprintln!("{}", response.body);
    let (_, summary, bottleneck) = tables(&response);
    let summary_rows = rows(&summary);
    assert_eq!(summary_rows.len(), 1);
    assert_eq!(summary_rows[0][1], "Host:0");
    assert_eq!(summary_rows[0][5], 6);
    assert_eq!(rows(&bottleneck).len(), 1);
    assert!(response.notes.is_empty(), "{:?}", response.notes);
}

#[test]
fn jax_profile_has_no_tf_data_events() {
    let response = analyze("jax_train");
    let (graph, summary, bottleneck) = tables(&response);
    assert!(rows(&graph).is_empty() && rows(&summary).is_empty() && rows(&bottleneck).is_empty());
    assert_eq!(bottleneck["p"]["is_input_bound"], "false");
    assert!(bottleneck["p"]["summary_message"].as_str().unwrap().starts_with("No tf.data activity captured"));
    assert!(response.notes.iter().any(|n| n.contains("no tf.data events")), "{:?}", response.notes);
}

/// The third-party two-host TF 2020 profile (skipped when absent): both XSpaces carry the
/// hostname `34.83.195.179:6003`, so, as in XProf, their pipelines merge under that name
/// (each device pipeline then has one call per file). It has device pipelines only
/// (`Iterator::Prefetch` feeding `Iterator::Prefetch::Generator`), so no host pipeline is
/// analyzed and XProf's summary says no tf.data activity.
#[test]
fn two_host_profile_covers_both_hosts() {
    let dir = std::env::var_os("OXPROF_EXTERNAL_TESTDATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/testdata/external"));
    let input = dir.join("openxla-xprof/demo/plugins/profile/GPU-multi-worker");
    if !input.is_dir() {
        eprintln!("SKIP: {} absent", input.display());
        return;
    }
    let request = DataRequest::new(ToolId::TF_DATA_BOTTLENECK_ANALYSIS);
    let response = data(&input, &request).unwrap();
    eprintln!("{}\n{:?}", response.body, response.notes);
    let (graph, summary, bottleneck) = tables(&response);
    let summary_rows = rows(&summary);
    assert!(summary_rows.iter().all(|r| r[0] == "34.83.195.179:6003"));
    assert!(summary_rows.iter().all(|r| r[1].as_str().unwrap().starts_with("Device:") && r[5] == 2));
    assert!(rows(&graph).iter().any(|r| r[5] == 2), "a bottleneck per call");
    assert!(rows(&bottleneck).is_empty());
    assert_eq!(bottleneck["p"]["is_input_bound"], "false");
    assert!(response.notes.iter().any(|n| n.contains("merged")), "{:?}", response.notes);
}
