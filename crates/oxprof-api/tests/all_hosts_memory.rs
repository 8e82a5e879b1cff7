//! What an ALL_HOSTS answer holds while it combines a many-host run (#42): each host's
//! analysis is folded into the combine as it comes and dropped (the session's cache keeps
//! none with `--no-cache`'s one-shot bound), so however many hosts the run has, only the
//! hosts analysed side by side are alive at once, never one analysis per host; and the
//! combine fed one host at a time answers what combining every host at once answers.
//!
//! One test in its own binary: it counts every host analysis alive in the process.

use oxprof_api::data::{compute, local_session};
use oxprof_api::request::DataRequest;
use oxprof_api::session::SessionOptions;
use oxprof_testkit::pod::{PodSpec, write_pod};
use oxprof_xprof::op_stats::combine::combine_hosts_op_stats;
use oxprof_xprof::op_stats::convert::{StepSelection, analyses_alive};

const HOSTS: usize = 24;

#[test]
fn all_hosts_holds_a_batch_of_host_analyses_not_one_per_host() {
    let dir = tempfile::tempdir().unwrap();
    let spec = PodSpec { steps: 6, ops_per_step: 128, ..PodSpec::new(HOSTS) };
    assert_eq!(write_pod(&spec, dir.path()).unwrap().files.len(), HOSTS);
    let options = SessionOptions { confine_to_root: false, ..SessionOptions::one_shot() };
    let session = local_session(dir.path(), options).unwrap();
    let run = session.run(None).unwrap();

    let (before, _) = analyses_alive();
    assert_eq!(before, 0);
    for tool in ["overview_page", "input_pipeline_analyzer", "framework_op_stats", "pod_viewer"] {
        let request = DataRequest { host: Some("ALL_HOSTS".into()), ..oxprof_api::registry::request(tool).unwrap() };
        let report = compute(&session, &run, &request, false).unwrap_or_else(|e| panic!("{tool}: {e}"));
        assert!(report.xprof_body_json().is_some(), "{tool}: no body");
        let (now, peak) = analyses_alive();
        assert_eq!(now, 0, "{tool}: no analysis outlives the answer without a cache");
        // The pod's hosts are about the same size, so they are analysed one or two at a
        // time (side by side only while together no larger than the largest file); one
        // more may be alive while it is folded.
        assert!(peak <= 3, "{tool}: {peak} of {HOSTS} host analyses alive at once");
        assert!(peak >= 1, "{tool}: the hosts were analysed");
    }

    // Fed one host at a time, the combine answers what XProf's all-at-once combine does.
    let files = oxprof_api::request::select_hosts(&run, Some("ALL_HOSTS")).unwrap();
    let analyses = oxprof_api::op_stats::host_analyses(&session, &files, false).unwrap();
    assert_eq!(analyses.len(), HOSTS);
    for steps in [StepSelection::All, StepSelection::DropIncomplete] {
        let at_once: Vec<_> = analyses.iter().map(|a| a.op_stats_for(steps)).collect();
        let at_once = combine_hosts_op_stats(&at_once);
        let folded = oxprof_api::op_stats::combined_op_stats(&session, &run, Some("ALL_HOSTS"), steps).unwrap();
        assert_eq!(folded, at_once, "{steps:?}");
        assert_eq!(folded.run_environment.host_count, HOSTS as i32);
    }
}
