//! The `perf_counters` tool: every performance-counter event of the TPU and GPU planes of
//! the selected hosts, one row each, as XProf's `ConvertXSpaceToPerfCounters`
//! (`xprof/convert/xplane_to_perf_counters.cc`) lists them: host, chip, the line (kernel
//! and sample id), the counter's lower-cased name, its value (shown in hex), description
//! and counter sets. Hosts are appended in the order given; planes and lines in file order.

use oxprof_model::XSpace;
use oxprof_model::schema::{GPU_PLANE_PREFIX, StatType, TPU_PLANE_PREFIX};
use oxprof_report::{Report, Table, XprofBody, json_of};
use oxprof_wire::datatable::{Cell, ColumnType, DataTable};
use oxprof_wire::nlohmann;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The `perf_counters` report: one row per counter event.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct PerfCounters {
    /// Rows, host by host, plane by plane, line by line, in file order.
    pub rows: Vec<PerfCounterRow>,
    /// Device planes left out because they carry neither `global_chip_id` nor `device_id`
    /// (XProf skips them silently), as `host: plane`.
    pub planes_without_chip_id: Vec<String>,
}

/// One counter reading.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct PerfCounterRow {
    /// The host (file) it was read from.
    pub host: String,
    /// The plane's `global_chip_id`, else its `device_id`.
    pub chip: i64,
    /// The line's name (the program or kernel the sample belongs to).
    pub kernel: String,
    /// The line's id (the sample).
    pub sample: i64,
    /// The event's name, lower-cased (ASCII).
    pub counter: String,
    /// `counter_value` as XProf's `IntOrUintValue` reads it (0 for a non-integer value).
    pub value: u64,
    /// `performance_counter_description`, or empty.
    pub description: String,
    /// `performance_counter_sets`, or empty.
    pub set: String,
}

impl PerfCounters {
    /// Appends the counter events of one host's XSpace.
    pub fn add_host(&mut self, space: &XSpace, hostname: &str) {
        for plane in &space.planes {
            if !plane.name.starts_with(TPU_PLANE_PREFIX) && !plane.name.starts_with(GPU_PLANE_PREFIX) {
                continue;
            }
            // XProf takes the last plane stat of each type (ForEachStat overwrites).
            let last_int = |ty: StatType| {
                plane.stats().filter(|s| s.stat_type() == Some(ty)).last().map(|s| s.as_i64().unwrap_or(0))
            };
            let Some(chip) = last_int(StatType::GlobalChipId).or_else(|| last_int(StatType::DeviceId)) else {
                self.planes_without_chip_id.push(format!("{hostname}: {}", plane.name));
                continue;
            };
            for line in &plane.lines {
                for event in line.events(plane) {
                    let Some(value) = event.stat(StatType::CounterValue) else { continue };
                    let text = |ty: StatType| event.stat(ty).and_then(|s| s.as_str()).unwrap_or("").to_string();
                    self.rows.push(PerfCounterRow {
                        host: hostname.to_string(),
                        chip,
                        kernel: line.name.clone(),
                        sample: line.id,
                        counter: event.name().to_ascii_lowercase(),
                        value: value.as_u64().unwrap_or(0),
                        description: text(StatType::PerformanceCounterDescription),
                        set: text(StatType::PerformanceCounterSets),
                    });
                }
            }
        }
    }

    /// XProf's DataTable.
    pub fn data_table(&self) -> DataTable {
        let mut table = DataTable::new();
        table
            .column("Host", ColumnType::String, "Host")
            .column("Chip", ColumnType::Number, "Chip")
            .column("Kernel", ColumnType::String, "Kernel")
            .column("Sample", ColumnType::Number, "Sample")
            .column("Counter", ColumnType::String, "Counter")
            .column("Value", ColumnType::Number, "Value (Hex)")
            .column("Description", ColumnType::String, "Description")
            .column("Set", ColumnType::String, "Set");
        for r in &self.rows {
            table.row(vec![
                r.host.as_str().into(),
                (r.chip as f64).into(),
                r.kernel.as_str().into(),
                (r.sample as f64).into(),
                r.counter.as_str().into(),
                // AddHexCell: the value as a double, formatted `0x` + lower-case hex.
                Cell::formatted(r.value as f64, format!("0x{:x}", r.value)),
                r.description.as_str().into(),
                r.set.as_str().into(),
            ]);
        }
        table
    }
}

impl Report for PerfCounters {
    fn xprof_body(&self) -> XprofBody {
        XprofBody::json(nlohmann::dump(&self.data_table().to_json()))
    }

    fn to_json(&self) -> Value {
        json_of(self)
    }

    fn tables(&self) -> Vec<Table> {
        vec![Table::from_data_table("counters", &self.data_table())]
    }

    fn notes(&self) -> Vec<String> {
        self.planes_without_chip_id
            .iter()
            .map(|p| {
                format!("{p}: no global_chip_id or device_id plane stat, so its counters are not listed (as in XProf)")
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxprof_model::ModelBuilder;

    #[test]
    fn lists_counter_events_of_device_planes_with_a_chip_id() {
        // /device:TPU:0 (global_chip_id 5)   line 7 "prog": CYCLES=255, other (no counter)
        // /device:TPU:1 (no chip id)         line 1: X=1   -> skipped, noted
        // /host:CPU                          line 1: Y=2   -> not a device plane
        let space = ModelBuilder::new()
            .plane("/device:TPU:0", |p| {
                p.stat("device_id", 0i64).stat("global_chip_id", 5i64);
                p.line(7, "prog", 0, |l| {
                    l.event("CYCLES", 0, 10)
                        .stat("counter_value", 255u64)
                        .stat("performance_counter_description", "cycles")
                        .stat("performance_counter_sets", "basic");
                    l.event("other", 10, 10);
                });
            })
            .plane("/device:TPU:1", |p| {
                p.line(1, "prog", 0, |l| {
                    l.event("X", 0, 10).stat("counter_value", 1u64);
                });
            })
            .plane("/host:CPU", |p| {
                p.line(1, "t", 0, |l| {
                    l.event("Y", 0, 10).stat("counter_value", 2u64);
                });
            })
            .build()
            .unwrap();
        let mut report = PerfCounters::default();
        report.add_host(&space, "h");
        assert_eq!(
            report.rows,
            vec![PerfCounterRow {
                host: "h".into(),
                chip: 5,
                kernel: "prog".into(),
                sample: 7,
                counter: "cycles".into(),
                value: 255,
                description: "cycles".into(),
                set: "basic".into(),
            }]
        );
        assert_eq!(report.planes_without_chip_id, vec!["h: /device:TPU:1"]);
        let body = report.xprof_body().text;
        assert!(body.contains(r#"{"f":"0xff","v":255.0}"#), "{body}");
    }
}
