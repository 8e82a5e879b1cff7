//! The `megascale_stats` tool's table: XProf's DCN collective slack summary, one row per
//! rendezvous, rendered as `GetMegaScaleDataTable` (`xprof/convert/process_megascale_dcn.cc`)
//! does, wrapped in a JSON array. Whether a host has DCN collectives at all is XProf's
//! `HasDcnCollectiveStatsInXSpace`: a `MegaScale:` event on `/host:CPU`. The rows come from
//! the slack analysis over TPU send/recv ops and their HLO (`dcn_slack.rs`).

use crate::tools::dcn_slack::{DcnSlackCombiner, DcnSlackCounts, host_dcn_slack};
use oxprof_model::XSpace;
use oxprof_model::schema::{HOST_THREADS_PLANE_NAME, TPU_PLANE_PREFIX};
use oxprof_report::{Report, Table, XprofBody, json_of};
use oxprof_wire::datatable::{Cell, ColumnType, DataTable};
use oxprof_wire::nlohmann;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// XProf's test for DCN collective stats in a host's XSpace: an event metadata of
/// `/host:CPU` named `MegaScale:…` (metadata alone suffices; lines need not be decoded).
pub fn has_megascale_events(space: &XSpace) -> bool {
    space
        .plane(HOST_THREADS_PLANE_NAME)
        .is_some_and(|p| p.event_metadata().iter().any(|m| p.str(m.name).starts_with("MegaScale:")))
}

/// What one host contributes to `megascale_stats`: whether it has DCN collectives, and if
/// so its slack summaries (a pod's per-host partial carries it; [`megascale_stats_of`]
/// combines any number of them).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct HostMegascale {
    /// XProf's `HasDcnCollectiveStatsInXSpace`: a `MegaScale:` event on `/host:CPU`.
    pub has_megascale_events: bool,
    /// The host's summaries, one per rendezvous, in the order they first completed (empty
    /// without DCN collectives: XProf does not analyse such a host).
    pub summaries: Vec<DcnSlackSummary>,
    /// What the analysis read and skipped, for notes.
    pub counts: DcnSlackCounts,
}

/// The plane whose lines [`HostMegascale::of`] reads (besides every plane's metadata).
pub fn megascale_plane() -> String {
    format!("{TPU_PLANE_PREFIX}0")
}

impl HostMegascale {
    /// One host's facts, from its XSpace decoded with the lines of [`megascale_plane`]
    /// (every plane's metadata is always decoded).
    pub fn of(space: &XSpace) -> HostMegascale {
        if !has_megascale_events(space) {
            return HostMegascale::default();
        }
        let analysis = host_dcn_slack(space);
        HostMegascale { has_megascale_events: true, summaries: analysis.summaries, counts: analysis.counts }
    }
}

/// `megascale_stats` of hosts' facts, in host order, with oxprof's notes: one host's table
/// as it is, or (`all_hosts`) every host's combined as XProf's combiner weighs them
/// (occurrence-weighted, whole µs). As in XProf, the first host without DCN collectives
/// makes the answer the empty table; hosts after it need not be given.
pub fn megascale_stats_of<'a>(
    hosts: impl IntoIterator<Item = (&'a str, &'a HostMegascale)>,
    all_hosts: bool,
) -> (MegascaleStats, Vec<String>) {
    let tensor_core_0 = megascale_plane();
    let mut combiner = DcnSlackCombiner::default();
    let mut rows = Vec::new();
    let mut notes = Vec::new();
    for (host, facts) in hosts {
        if !facts.has_megascale_events {
            let note = format!("{host}: no MegaScale: events on {HOST_THREADS_PLANE_NAME}, so no DCN collectives");
            return (MegascaleStats::default(), vec![note]);
        }
        let counts = &facts.counts;
        if counts.transfer_ops == 0 {
            notes.push(format!("{host}: no host send/recv ops on {tensor_core_0}'s XLA Ops line"));
        }
        if counts.ops_outside_modules > 0 || counts.ops_without_hlo > 0 {
            notes.push(format!(
                "{host}: {} host send/recv ops outside any XLA module and {} without an HLO instruction were skipped, as XProf does",
                counts.ops_outside_modules, counts.ops_without_hlo
            ));
        }
        if all_hosts {
            combiner.combine(&facts.summaries);
        } else {
            rows.clone_from(&facts.summaries);
        }
    }
    if all_hosts {
        rows = combiner.finish();
    }
    (MegascaleStats { rows }, notes)
}

/// The `megascale_stats` report: DCN slack per rendezvous.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct MegascaleStats {
    /// One summary per rendezvous.
    pub rows: Vec<DcnSlackSummary>,
}

/// XProf's `DcnSlackSummary` (times in µs, averaged over occurrences).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct DcnSlackSummary {
    /// Rendezvous name.
    pub rendezvous: String,
    /// Recv-done op name.
    pub recv_op_name: String,
    /// Send op name.
    pub send_op_name: String,
    /// `_xla_megascale_transfer_type`.
    pub transfer_type: String,
    /// Average slack.
    pub slack_us: f64,
    /// Average host stall (meaningful when `host_events_count` > 0).
    pub host_stall_us: f64,
    /// Host graph executions matched.
    pub host_events_count: u64,
    /// Average send start to recv-done end.
    pub observed_duration_us: f64,
    /// Average send duration.
    pub send_duration_us: f64,
    /// Average send-done duration.
    pub send_done_duration_us: f64,
    /// Average recv duration.
    pub recv_duration_us: f64,
    /// Average recv-done duration.
    pub recv_done_duration_us: f64,
    /// Average stall.
    pub stall_duration_us: f64,
    /// Occurrences.
    pub occurrences: u64,
    /// Bytes sent over the network per occurrence.
    pub bytes_transmitted_over_network: u64,
}

/// `convertBytesToHumanReadableFormat` of XProf's `AddBytesCell` (the count as `int64`):
/// whole bytes below 1 KiB, else K with one decimal, M/G/T/P/E with two.
fn human_bytes(bytes: u64) -> String {
    let signed = bytes as i64;
    if signed == i64::MIN {
        return "-8E".to_string();
    }
    let (neg, mut n) = if signed < 0 { ("-", -signed) } else { ("", signed) };
    if n < 1024 {
        return format!("{neg}{n}B");
    }
    let units = ['K', 'M', 'G', 'T', 'P', 'E'];
    let mut unit = 0;
    while n >= 1024 * 1024 && unit + 1 < units.len() {
        n /= 1024;
        unit += 1;
    }
    let decimals = if unit == 0 { 1 } else { 2 };
    format!("{neg}{:.*}{}", decimals, n as f64 / 1024.0, units[unit])
}

impl MegascaleStats {
    /// XProf's DataTable (`GetMegaScaleDataTable`).
    pub fn data_table(&self) -> DataTable {
        let mut table = DataTable::new();
        for (id, ty, label) in [
            ("rendezvous_name", ColumnType::String, "Rendezvous Name"),
            ("recv_op_name", ColumnType::String, "Recv Op Name"),
            ("send_op_name", ColumnType::String, "Send Op Name"),
            ("transfer_type", ColumnType::String, "Transfer Type"),
            ("slack_time", ColumnType::Number, "Slack Time (ms)"),
            ("host_stall", ColumnType::String, "Host Stall (ms)"),
            ("observed_duration", ColumnType::Number, "Observed Duration (ms)"),
            ("send_stall", ColumnType::Number, "Send Stall (ms)"),
            ("send_done_stall", ColumnType::Number, "SendDone Stall (ms)"),
            ("recv_stall", ColumnType::Number, "Recv Stall (ms)"),
            ("recv_done_stall", ColumnType::Number, "RecvDone Stall (ms)"),
            ("stall_duration", ColumnType::Number, "Stall Duration (ms)"),
            ("total_stall", ColumnType::Number, "Aggregated Total Stall (ms)"),
            ("occurrences", ColumnType::Number, "Occurrences"),
            ("net_tx_bytes", ColumnType::Number, "Data Transmitted Size"),
            ("required_bandwidth", ColumnType::Number, "Required Bandwidth (Gbps)"),
        ] {
            table.column(id, ty, label);
        }
        let ms = |us: f64| us / 1e3;
        for s in &self.rows {
            let host_stall = if s.host_events_count > 0 { ms(s.host_stall_us).to_string() } else { "-".to_string() };
            let bandwidth = if s.slack_us == 0.0 {
                f64::from(i32::MAX)
            } else {
                // bytes / µs * 8e-3 = Gbit/s (kbandwidthConversionFactor).
                s.bytes_transmitted_over_network as f64 / s.slack_us * 8e-3
            };
            table.row(vec![
                s.rendezvous.as_str().into(),
                s.recv_op_name.as_str().into(),
                s.send_op_name.as_str().into(),
                s.transfer_type.as_str().into(),
                ms(s.slack_us).into(),
                host_stall.into(),
                ms(s.observed_duration_us).into(),
                ms(s.send_duration_us).into(),
                ms(s.send_done_duration_us).into(),
                ms(s.recv_duration_us).into(),
                ms(s.recv_done_duration_us).into(),
                ms(s.stall_duration_us).into(),
                ms(s.stall_duration_us * s.occurrences as f64).into(),
                (s.occurrences as f64).into(),
                Cell::formatted(s.bytes_transmitted_over_network as f64, human_bytes(s.bytes_transmitted_over_network)),
                bandwidth.into(),
            ]);
        }
        table
    }
}

impl Report for MegascaleStats {
    fn xprof_body(&self) -> XprofBody {
        XprofBody::json(nlohmann::dump(&Value::Array(vec![self.data_table().to_json()])))
    }

    fn to_json(&self) -> Value {
        json_of(self)
    }

    fn tables(&self) -> Vec<Table> {
        vec![Table::from_data_table("dcn_collectives", &self.data_table())]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_read_as_xprof_writes_them() {
        assert_eq!(human_bytes(1000), "1000B");
        assert_eq!(human_bytes(1536), "1.5K");
        assert_eq!(human_bytes(3 << 20), "3.00M");
    }

    #[test]
    fn one_rendezvous_row() {
        let stats = MegascaleStats {
            rows: vec![DcnSlackSummary {
                rendezvous: "r".into(),
                slack_us: 2000.0,
                stall_duration_us: 10.0,
                occurrences: 3,
                bytes_transmitted_over_network: 4000,
                ..DcnSlackSummary::default()
            }],
        };
        let body: Value = serde_json::from_str(&stats.xprof_body().text).unwrap();
        let cells = &body[0]["rows"][0]["c"];
        assert_eq!(cells[4]["v"], 2.0);
        assert_eq!(cells[5]["v"], "-");
        assert_eq!(cells[12]["v"], 0.03);
        assert_eq!(cells[14]["f"], "3.9K");
        assert_eq!(cells[15]["v"], 0.016);
    }
}
