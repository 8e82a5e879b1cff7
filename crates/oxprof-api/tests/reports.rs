//! Every tool's typed report (`oxprof_report::Report`) on the refkit profiles:
//! its serde form reloads into the same report (XProf's body byte for byte from the
//! reloaded one), it has tables for people, and XProf's CSV comes from it byte for byte
//! wherever XProf recorded one.

use oxprof_api::data::{DataRequest, compute, one_shot_session, xprof_csv};
use oxprof_report::Report;
use oxprof_xprof::tools::{
    framework_op_stats::FrameworkOpStats, hlo_stats::HloStats, input_pipeline::InputPipelineAnalysis,
    kernel_stats::KernelStats, memory_profile::MemoryProfile, op_profile::OpProfile, overview_page::OverviewPage,
    pod_viewer::PodViewer, roofline_model::RooflineModel, tf_data::CombinedTfDataStats,
};
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::path::PathBuf;

const PROFILES: &[&str] = &["tf_keras_fit", "tf_custom_loop", "jax_train", "tf_memory", "tf_memory_nobfc"];

fn profile(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/profiles").join(name)
}

type Reload = fn(Value) -> serde_json::Result<Box<dyn Report>>;

/// Request parameters.
type Params = &'static [(&'static str, &'static str)];

fn reload<T: Report + DeserializeOwned + 'static>(json: Value) -> serde_json::Result<Box<dyn Report>> {
    Ok(Box::new(serde_json::from_value::<T>(json)?))
}

/// The tools with a typed report: name, request parameters, how to reload its JSON.
const TOOLS: &[(&str, Params, Reload)] = &[
    ("overview_page", &[], reload::<OverviewPage>),
    ("input_pipeline_analyzer", &[], reload::<InputPipelineAnalysis>),
    ("framework_op_stats", &[], reload::<FrameworkOpStats>),
    ("kernel_stats", &[], reload::<KernelStats>),
    ("pod_viewer", &[], reload::<PodViewer>),
    ("hlo_stats", &[], reload::<HloStats>),
    ("roofline_model", &[], reload::<RooflineModel>),
    ("op_profile", &[], reload::<OpProfile>),
    ("op_profile", &[("group_by", "category")], reload::<OpProfile>),
    ("memory_profile", &[], reload::<MemoryProfile>),
    ("tf_data_bottleneck_analysis", &[], reload::<CombinedTfDataStats>),
];

fn request(tool: &str, params: &[(&str, &str)]) -> DataRequest {
    let params = params.iter().map(|&(k, v)| (k.to_string(), v.to_string())).collect();
    DataRequest { params, ..oxprof_api::registry::request(tool).unwrap() }
}

#[test]
fn reports_reload_and_render_the_same_body() {
    for name in PROFILES {
        let session = one_shot_session(&profile(name)).unwrap();
        let run = session.run(None).unwrap();
        for &(tool, params, reload) in TOOLS {
            let report = compute(&session, &run, &request(tool, params), false).unwrap();
            let text = serde_json::to_string(&report.to_json()).unwrap();
            let reloaded =
                reload(serde_json::from_str(&text).unwrap()).unwrap_or_else(|e| panic!("{tool} {name}: {e}"));
            assert_eq!(reloaded.xprof_body(), report.xprof_body(), "{tool} {name}: body of the reloaded report");
            assert!(!report.tables().is_empty(), "{tool} {name}: no tables");
        }
    }
}

/// XProf's `/data_csv` of every tool it recorded one for, from the report.
#[test]
fn csv_from_reports_equals_xprof_csv() {
    let mut checked = 0;
    for name in PROFILES {
        let session = one_shot_session(&profile(name)).unwrap();
        let run = session.run(None).unwrap();
        for &(tool, params, _) in TOOLS.iter().filter(|(_, params, _)| params.is_empty()) {
            let file = profile(name).join("xprof_out").join(format!("{tool}.csv"));
            let Ok(expected) = std::fs::read_to_string(&file) else { continue };
            let report = compute(&session, &run, &request(tool, params), false).unwrap();
            assert_eq!(xprof_csv(&*report).as_deref(), Some(expected.as_str()), "{tool} {name}");
            checked += 1;
        }
    }
    assert!(checked >= 30, "only {checked} CSV files checked");
}
