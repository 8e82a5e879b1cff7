//! Which tools a run lists (XProf's `GetAvailableToolNames` and its frontend's order) and
//! which hosts a tool offers (`/hosts`), from the registry's columns.

use crate::catalog::ServedRun;
use crate::registry::Hosts;
use crate::request::ALL_HOSTS;
use oxprof_model::XSpace;
use oxprof_model::schema::TPU_PLANE_PREFIX;
use std::path::Path;

/// XProf's `/hosts` list for a run and tool (`hosts_from_xplane_filenames`): host names
/// sorted; with several hosts, `ALL_HOSTS` alone or added as the tool's registry row says.
pub fn hosts_for_tool(run: &ServedRun, tool: Option<&str>) -> Vec<String> {
    let mut hosts: Vec<String> = run.hosts.iter().map(|h| h.host.clone()).collect();
    hosts.sort();
    hosts.dedup();
    if hosts.len() > 1 {
        match tool.and_then(crate::registry::find).map(|t| t.hosts) {
            Some(Hosts::AllOnly) => hosts = vec![ALL_HOSTS.to_string()],
            Some(Hosts::EachAndAll) => {
                hosts.push(ALL_HOSTS.to_string());
                hosts.sort();
            }
            Some(Hosts::Each) | None => {}
        }
    }
    hosts
}

/// [`available_tools`] of a profile file, read without the events it does not look at:
/// only TPU planes' lines are decoded (for their counters), so listing the tools of a
/// large profile costs a fraction of loading it.
pub fn available_tools_of_file(path: &Path) -> Result<Vec<&'static str>, oxprof_format::LoadError> {
    let space = oxprof_format::load_xspace_lines_of(path, &|plane| plane.starts_with(TPU_PLANE_PREFIX))?;
    Ok(available_tools(&space))
}

/// The tools XProf's C++ `GetAvailableToolNames` lists for a run, computed from its first
/// host's XSpace, in that function's order (`tool_names.json` in the references): the
/// registry's rows whose [`crate::registry::Listed`] condition the planes meet.
pub fn available_tools(first_host: &XSpace) -> Vec<&'static str> {
    crate::registry::xprof_listed(&crate::registry::Features::of(first_host))
}

/// `/run_tools`' order: XProf's frontend order (the registry's `menu` column), a tool
/// dropped when the one that supersedes it is there (`trace_viewer` beside
/// `trace_viewer@`), then the rest alphabetically.
pub fn order_tools(tools: &[&str]) -> Vec<String> {
    let row = |t: &str| crate::registry::find(t);
    let superseded = |t: &str| row(t).and_then(|r| r.superseded_by).is_some_and(|by| tools.contains(&by.name()));
    let mut present: Vec<&str> = tools.iter().copied().filter(|t| !superseded(t)).collect();
    present.sort_by(|a, b| {
        let place = |t: &str| row(t).and_then(|r| r.menu).map_or((1, 0, t.to_string()), |m| (0, m, String::new()));
        place(a).cmp(&place(b))
    });
    present.dedup();
    present.into_iter().map(str::to_string).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxprof_format::HostFile;
    use std::path::PathBuf;

    fn run_with_hosts(hosts: &[&str]) -> ServedRun {
        ServedRun {
            name: "r".into(),
            dir: PathBuf::from("/r"),
            hosts: hosts
                .iter()
                .map(|h| HostFile { host: h.to_string(), path: PathBuf::from(format!("/r/{h}.xplane.pb")) })
                .collect(),
        }
    }

    #[test]
    fn hosts_follow_xprofs_all_hosts_rule() {
        let two = run_with_hosts(&["b_host", "a_host"]);
        assert_eq!(hosts_for_tool(&two, Some("overview_page")), ["ALL_HOSTS"]);
        assert_eq!(hosts_for_tool(&two, Some("pod_viewer")), ["ALL_HOSTS"]);
        assert_eq!(hosts_for_tool(&two, Some("framework_op_stats")), ["ALL_HOSTS", "a_host", "b_host"]);
        assert_eq!(hosts_for_tool(&two, Some("trace_viewer@")), ["a_host", "b_host"]);
        assert_eq!(hosts_for_tool(&two, None), ["a_host", "b_host"]);
        // Python's sorted(): code points, so digits and capitals before lowercase.
        let mixed = run_with_hosts(&["zz", "10.0.0.1_6003"]);
        assert_eq!(hosts_for_tool(&mixed, Some("kernel_stats")), ["10.0.0.1_6003", "ALL_HOSTS", "zz"]);
        let one = run_with_hosts(&["vm"]);
        assert_eq!(hosts_for_tool(&one, Some("overview_page")), ["vm"]);
    }

    #[test]
    fn tools_are_ordered_like_xprofs_frontend() {
        let ordered =
            order_tools(&["trace_viewer@", "zeta_tool", "trace_viewer", "hlo_stats", "overview_page", "alpha_tool"]);
        assert_eq!(ordered, ["overview_page", "trace_viewer@", "hlo_stats", "alpha_tool", "zeta_tool"]);
        assert_eq!(order_tools(&["trace_viewer", "kernel_stats"]), ["trace_viewer", "kernel_stats"]);
    }

    #[test]
    fn available_tools_follow_the_planes() {
        use oxprof_testkit::{Value, XSpaceBuilder};
        let decode = |b: XSpaceBuilder| oxprof_xspace::decode_xspace(&b.to_bytes()).unwrap();
        let base =
            ["trace_viewer@", "overview_page", "input_pipeline_analyzer", "framework_op_stats", "memory_profile"];
        let cpu_only = decode(XSpaceBuilder::new().plane("/host:CPU", |p| {
            p.line(1, "thread", 0, |l| {
                l.event("op", 0, 10);
            });
        }));
        let tools = available_tools(&cpu_only);
        assert_eq!(&tools[..5], base);
        assert_eq!(tools.len(), 8, "{tools:?}");
        // GPU planes → kernel_stats; HLO protos → memory_viewer, graph_viewer; MegaScale
        // events → megascale_stats; TPU counters → perf_counters, utilization_viewer.
        let everything = decode(
            XSpaceBuilder::new()
                .plane("/device:GPU:0", |_| {})
                .plane("/host:metadata", |p| {
                    p.event_metadata_stat("jit_f", "Hlo Proto", Value::Bytes(vec![]));
                })
                .plane("/host:CPU", |p| {
                    p.event_metadata("MegaScale: all-reduce");
                })
                .plane("/device:TPU:0", |p| {
                    p.line(1, "counters", 0, |l| {
                        l.event("c", 0, 1).stat("counter_value", Value::U64(3));
                    });
                }),
        );
        let tools = available_tools(&everything);
        assert_eq!(
            &tools[8..],
            ["kernel_stats", "memory_viewer", "graph_viewer", "megascale_stats", "perf_counters", "utilization_viewer"]
        );
    }
}
