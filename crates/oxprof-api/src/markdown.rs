//! Markdown for people (`oxprof data TOOL --format md`): DataTable tools through
//! [`crate::table::all_to_markdown`], and readable summaries of the tools whose output is
//! a protobuf JSON message: `op_profile` (the most expensive ops), `memory_profile` (each
//! allocator's peak and what was live at it) and `pod_viewer` (each step on each core).

use crate::table::{all_to_markdown, markdown_table as table};
use serde_json::Value;

/// Rows shown in the op and allocation tables (the JSON output has all of them).
const TOP_ROWS: usize = 50;
/// Rows shown in the pod viewer's step × core table.
const POD_ROWS: usize = 200;

/// A tool's JSON output as Markdown (its registry row's renderer); empty when there is
/// nothing to show as a table.
pub fn tool_markdown(tool: &str, json: &Value) -> String {
    match crate::registry::find(tool) {
        Some(tool) => (tool.markdown)(json),
        None => all_to_markdown(json),
    }
}

fn number(value: &Value) -> f64 {
    // Protobuf JSON writes 64-bit integers as strings.
    value.as_f64().or_else(|| value.as_str().and_then(|s| s.parse().ok())).unwrap_or(0.0)
}

/// The op profile's tree (by program or by category), its groups and its most expensive
/// ops by time, with the FLOP rate and HBM bandwidth utilization XProf shows.
pub(crate) fn op_profile_markdown(json: &Value) -> String {
    let Some((grouping, root)) = ["byProgram", "byCategory"].iter().find_map(|k| json.get(*k).map(|root| (*k, root)))
    else {
        return String::new();
    };
    let total = number(&root["metrics"]["rawTime"]);
    if total <= 0.0 {
        return String::new();
    }
    let percent = |node: &Value| format!("{:.2}%", 100.0 * number(&node["metrics"]["rawTime"]) / total);
    let utilization = |node: &Value, key: &str| match &node["metrics"][key] {
        Value::Array(items) => format!("{:.1}%", 100.0 * items.first().map(number).unwrap_or(0.0)),
        value => format!("{:.1}%", 100.0 * number(value)),
    };
    let mut out = format!(
        "- **device_type**: {}\n- **total_time_ms**: {:.3}\n- **grouped_by**: {}\n\n",
        json["deviceType"].as_str().unwrap_or(""),
        total / 1e9,
        if grouping == "byProgram" { "program" } else { "category" }
    );
    let groups: Vec<Vec<String>> = root["children"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|g| vec![g["name"].as_str().unwrap_or("").to_string(), percent(g)])
        .collect();
    out.push_str(&table(&["Group", "Time"], &groups));
    // Leaves (XLA ops) under each group, with the group's name.
    let mut leaves: Vec<(&Value, &str)> = Vec::new();
    for group in root["children"].as_array().into_iter().flatten() {
        let name = group["name"].as_str().unwrap_or("");
        let mut stack = vec![group];
        while let Some(node) = stack.pop() {
            let children = node["children"].as_array().map(Vec::as_slice).unwrap_or_default();
            if node.get("xla").is_some() && children.is_empty() {
                leaves.push((node, name));
            }
            stack.extend(children);
        }
    }
    leaves.sort_by(|a, b| number(&b.0["metrics"]["rawTime"]).total_cmp(&number(&a.0["metrics"]["rawTime"])));
    let shown = leaves.len().min(TOP_ROWS);
    let rows: Vec<Vec<String>> = leaves[..shown]
        .iter()
        .map(|(op, group)| {
            vec![
                op["name"].as_str().unwrap_or("").to_string(),
                op["xla"]["category"].as_str().unwrap_or("").to_string(),
                group.to_string(),
                percent(op),
                format!("{}", number(&op["metrics"]["occurrences"])),
                format!("{:.3}", number(&op["metrics"]["avgTimePs"]) / 1e6),
                utilization(op, "flops"),
                utilization(op, "bandwidthUtils"),
            ]
        })
        .collect();
    out.push_str(&format!("\n{} of {} ops, most time first:\n\n", shown, leaves.len()));
    out.push_str(&table(
        &[
            "Op",
            "Category",
            "Group",
            "Time",
            "Occurrences",
            "Avg time (µs)",
            "FLOP rate utilization",
            "HBM bandwidth utilization",
        ],
        &rows,
    ));
    out
}

/// Per allocator: its peak (when, how much, fragmentation) and the allocations live at
/// the peak, largest first.
pub(crate) fn memory_profile_markdown(json: &Value) -> String {
    let Some(allocators) = json["memoryProfilePerAllocator"].as_object() else {
        return String::new();
    };
    let mib = |v: &Value| format!("{:.2}", number(v) / (1024.0 * 1024.0));
    let mut parts = Vec::new();
    for (id, allocator) in allocators {
        let summary = &allocator["profileSummary"];
        let peak = &summary["peakStats"];
        let mut part = format!(
            "## {id}\n\n- **peak_heap_usage_mib**: {}\n- **peak_time_ms**: {:.3}\n- **peak_bytes_in_use_mib**: {}\n\
             - **stack_reserved_mib**: {}\n- **heap_allocated_mib**: {}\n- **free_memory_mib**: {}\n\
             - **fragmentation**: {:.1}%\n- **capacity_mib**: {}\n\n",
            mib(&summary["peakBytesUsageLifetime"]),
            number(&summary["peakStatsTimePs"]) / 1e9,
            mib(&peak["peakBytesInUse"]),
            mib(&peak["stackReservedBytes"]),
            mib(&peak["heapAllocatedBytes"]),
            mib(&peak["freeMemoryBytes"]),
            100.0 * number(&peak["fragmentation"]),
            mib(&summary["memoryCapacity"]),
        );
        let snapshots = allocator["memoryProfileSnapshots"].as_array().map(Vec::as_slice).unwrap_or_default();
        let special = allocator["specialAllocations"].as_array().map(Vec::as_slice).unwrap_or_default();
        let mut live: Vec<(&Value, f64)> = allocator["activeAllocations"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|a| {
                let index = |key: &str| usize::try_from(number(&a[key]) as i64).ok();
                let activity = match (index("snapshotIndex"), index("specialIndex")) {
                    (Some(i), _) => &snapshots.get(i)?["activityMetadata"],
                    (None, Some(i)) => special.get(i)?,
                    _ => return None,
                };
                Some((activity, number(&a["numOccurrences"])))
            })
            .collect();
        live.sort_by(|a, b| {
            (number(&b.0["allocationBytes"]) * b.1).total_cmp(&(number(&a.0["allocationBytes"]) * a.1))
        });
        let shown = live.len().min(TOP_ROWS);
        let rows: Vec<Vec<String>> = live[..shown]
            .iter()
            .map(|(m, occurrences)| {
                let text = |k: &str| m[k].as_str().unwrap_or("").to_string();
                vec![
                    text("tfOpName"),
                    mib(&m["allocationBytes"]),
                    mib(&m["requestedBytes"]),
                    format!("{occurrences}"),
                    text("regionType"),
                    text("dataType"),
                    text("tensorShape"),
                ]
            })
            .collect();
        part.push_str(&format!("{shown} of {} allocations live at the peak, largest first:\n\n", live.len()));
        part.push_str(&table(
            &["Op", "Allocation (MiB)", "Requested (MiB)", "Occurrences", "Region", "Data type", "Shape"],
            &rows,
        ));
        parts.push(part);
    }
    parts.join("\n")
}

/// The pod viewer's steps, one row per (step, core): duration, bottleneck and the step
/// breakdown in XProf's categories.
pub(crate) fn pod_viewer_markdown(json: &Value) -> String {
    let Some(steps) = json["podStatsSequence"]["podStatsMap"].as_array() else {
        return String::new();
    };
    let categories: Vec<(String, String)> = json["stepBreakdownEvents"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| (number(&e["id"]).to_string(), e["name"].as_str().unwrap_or("").to_string()))
        .collect();
    let mut rows = Vec::new();
    for step in steps {
        let Some(cores) = step["podStatsPerCore"].as_object() else { continue };
        for (core, stats) in cores {
            let mut row = vec![
                number(&stats["stepNum"]).to_string(),
                core.clone(),
                stats["hostName"].as_str().unwrap_or("").to_string(),
                format!("{:.3}", number(&stats["totalDurationUs"])),
                stats["bottleneck"].as_str().unwrap_or("").to_string(),
            ];
            row.extend(categories.iter().map(|(id, _)| format!("{:.3}", number(&stats["stepBreakdownUs"][id]))));
            rows.push(row);
        }
    }
    if rows.is_empty() {
        return String::new();
    }
    let mut header = vec!["Step", "Core", "Host", "Step time (µs)", "Bottleneck"];
    header.extend(categories.iter().map(|(_, name)| name.as_str()));
    let shown = rows.len().min(POD_ROWS);
    let mut out = format!("- **device_type**: {}\n\n", json["deviceType"].as_str().unwrap_or(""));
    if shown < rows.len() {
        out.push_str(&format!("{shown} of {} step × core rows (--format json has all):\n\n", rows.len()));
    }
    out.push_str(&table(&header, &rows[..shown]));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn op_profile_lists_groups_and_the_costliest_ops() {
        let op = |name: &str, time: u64| {
            json!({"name": name, "xla": {"category": "fusion"}, "children": [],
                   "metrics": {"rawTime": time, "occurrences": 2, "avgTimePs": time as f64 / 2.0,
                               "flops": 0.5, "bandwidthUtils": [0.25, 0, 0]}})
        };
        let json = json!({"deviceType": "TPU", "byProgram": {"name": "by_program", "metrics": {"rawTime": 4_000_000},
            "children": [{"name": "jit_f(1)", "metrics": {"rawTime": 4_000_000},
                "children": [{"name": "fusion", "metrics": {"rawTime": 4_000_000},
                    "children": [op("fusion.1", 1_000_000), op("fusion.2", 3_000_000)]}]}]}});
        let md = tool_markdown("op_profile", &json);
        assert!(md.contains("| jit_f(1) | 100.00% |"), "{md}");
        let big = md.find("| fusion.2 | fusion | jit_f(1) | 75.00% | 2 | 1.500 | 50.0% | 25.0% |").expect(&md);
        assert!(big < md.find("| fusion.1 |").expect(&md), "{md}");
        assert!(md.contains("2 of 2 ops"), "{md}");
    }

    #[test]
    fn memory_profile_shows_the_peak_and_what_was_live() {
        let activity = |op: &str, bytes: u64| {
            json!({"tfOpName": op, "allocationBytes": bytes.to_string(),
            "requestedBytes": bytes.to_string(), "regionType": "output", "dataType": "float", "tensorShape": "[4]"})
        };
        let json = json!({"memoryProfilePerAllocator": {"GPU_0_bfc": {
            "profileSummary": {"peakBytesUsageLifetime": "3145728", "peakStatsTimePs": "2000000000",
                "memoryCapacity": "1073741824",
                "peakStats": {"peakBytesInUse": "3145728", "heapAllocatedBytes": "3145728", "fragmentation": 0.25}},
            "memoryProfileSnapshots": [{"activityMetadata": activity("small", 1048576)}],
            "specialAllocations": [activity("preallocated", 2097152)],
            "activeAllocations": [{"snapshotIndex": "0", "specialIndex": "-1", "numOccurrences": "1"},
                                  {"snapshotIndex": "-1", "specialIndex": "0", "numOccurrences": "1"}]}}});
        let md = tool_markdown("memory_profile", &json);
        assert!(md.starts_with("## GPU_0_bfc\n\n- **peak_heap_usage_mib**: 3.00\n- **peak_time_ms**: 2.000\n"), "{md}");
        assert!(md.contains("- **fragmentation**: 25.0%"), "{md}");
        let first = md.find("| preallocated | 2.00 | 2.00 | 1 | output | float | [4] |").expect(&md);
        assert!(first < md.find("| small | 1.00 |").expect(&md), "{md}");
    }

    #[test]
    fn other_tools_and_odd_input_fall_back_or_give_nothing() {
        assert_eq!(tool_markdown("op_profile", &json!({})), "");
        assert_eq!(tool_markdown("memory_profile", &json!({"memoryProfilePerAllocator": []})), "");
        assert_eq!(tool_markdown("pod_viewer", &json!({"podStatsSequence": {}})), "");
        assert_eq!(tool_markdown("kernel_stats", &json!({"no": "table"})), "");
    }

    #[test]
    fn pod_viewer_has_a_row_per_step_and_core() {
        let json = json!({"deviceType": "TPU",
            "stepBreakdownEvents": [{"id": 1, "name": "Device compute"}, {"id": 6, "name": "Input"}],
            "podStatsSequence": {"podStatsMap": [{"stepNum": 3, "podStatsPerCore": {"0": {"hostName": "h",
                "stepNum": 3, "totalDurationUs": 12.5, "bottleneck": "Input",
                "stepBreakdownUs": {"1": 2.5, "6": 10}}}}]}});
        assert_eq!(
            tool_markdown("pod_viewer", &json),
            "- **device_type**: TPU\n\n| Step | Core | Host | Step time (µs) | Bottleneck | Device compute | Input |\n\
             |---|---|---|---|---|---|---|\n| 3 | 0 | h | 12.500 | Input | 2.500 | 10.000 |\n"
        );
    }
}
