//! `inspect`: a structural summary of one XSpace — planes, lines, event and metadata
//! counts, time spans, stat names in use — for checking what a profile holds.

use oxprof_model::{XPlane, XSpace};
use serde::Serialize;
use std::collections::BTreeSet;

/// Summary of one XSpace.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SpaceSummary {
    /// Planes in file order.
    pub planes: Vec<PlaneSummary>,
    /// `XSpace.errors`.
    pub errors: Vec<String>,
    /// `XSpace.warnings`.
    pub warnings: Vec<String>,
    /// `XSpace.hostnames`.
    pub hostnames: Vec<String>,
    /// Events over all planes.
    pub events: usize,
    /// What the decoder skipped or repaired.
    pub diagnostics: Vec<DiagnosticSummary>,
}

/// One decoder diagnostic.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct DiagnosticSummary {
    /// Stable code, e.g. `unknown_field`.
    pub code: &'static str,
    /// `info` or `data_loss`.
    pub severity: &'static str,
    /// How many times it happened.
    pub count: u64,
    /// What it means.
    pub message: &'static str,
}

/// Summary of one plane.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct PlaneSummary {
    /// Plane name.
    pub name: String,
    /// Plane id.
    pub id: i64,
    /// Events over its lines.
    pub events: usize,
    /// Entries of its `event_metadata` map.
    pub event_metadata: usize,
    /// Entries of its `stat_metadata` map.
    pub stat_metadata: usize,
    /// Earliest event start, ns since the Unix epoch (None without events).
    pub begin_ns: Option<i64>,
    /// Time from the earliest event start to the latest event end, in ps.
    pub span_ps: Option<i64>,
    /// Names of the stats its events, metadata and the plane itself carry, sorted.
    pub stats_in_use: Vec<String>,
    /// Lines in file order.
    pub lines: Vec<LineSummary>,
}

/// Summary of one line.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct LineSummary {
    /// Line name.
    pub name: String,
    /// Line id.
    pub id: i64,
    /// Number of events.
    pub events: usize,
    /// Time from its earliest event start to its latest event end, in ps.
    pub span_ps: Option<i64>,
}

/// Summarises an XSpace.
pub fn summarize_space(space: &XSpace) -> SpaceSummary {
    SpaceSummary {
        planes: space.planes.iter().map(summarize_plane).collect(),
        errors: space.errors.clone(),
        warnings: space.warnings.clone(),
        hostnames: space.hostnames.clone(),
        events: space.event_count(),
        diagnostics: space
            .diagnostics
            .iter()
            .map(|(kind, count)| DiagnosticSummary {
                code: kind.code(),
                severity: kind.severity().as_str(),
                count,
                message: kind.message(),
            })
            .collect(),
    }
}

fn summarize_plane(plane: &XPlane) -> PlaneSummary {
    let mut used = vec![false; plane.stat_metadata().len()];
    for id in plane.metadata_and_plane_stat_ids() {
        used[id.index()] = true;
    }
    let mut begin_end: Option<(i128, i128)> = None;
    let lines = plane
        .lines
        .iter()
        .map(|line| {
            for id in line.event_stat_metadata_ids() {
                used[id.index()] = true;
            }
            let span = line.offset_span_ps();
            if let Some((b, e)) = span {
                let base = i128::from(line.timestamp_ns) * 1000;
                let (b, e) = (base + i128::from(b), base + i128::from(e));
                begin_end = Some(begin_end.map_or((b, e), |(pb, pe)| (pb.min(b), pe.max(e))));
            }
            LineSummary {
                name: line.name.clone(),
                id: line.id,
                events: line.event_count(),
                span_ps: span.map(|(b, e)| e.saturating_sub(b)),
            }
        })
        .collect();
    let stats_in_use: BTreeSet<String> = plane
        .stat_metadata()
        .iter()
        .zip(&used)
        .filter(|&(_, &u)| u)
        .map(|(m, _)| plane.str(m.name).to_string())
        .collect();
    PlaneSummary {
        name: plane.name.clone(),
        id: plane.id,
        events: plane.event_count(),
        event_metadata: plane.event_metadata_count(),
        stat_metadata: plane.stat_metadata_count(),
        begin_ns: begin_end.map(|(b, _)| (b.div_euclid(1000)).clamp(i64::MIN.into(), i64::MAX.into()) as i64),
        span_ps: begin_end.map(|(b, e)| (e - b).clamp(i64::MIN.into(), i64::MAX.into()) as i64),
        stats_in_use: stats_in_use.into_iter().collect(),
        lines,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxprof_testkit::XSpaceBuilder;

    #[test]
    fn counts_planes_lines_events_and_stats_in_use() {
        // python   |---- train (step_num=0) ----|       line 1, ts 1 µs
        //               |- matmul -|
        // worker        |--- op ---|                     line 2, ts 1 µs
        let bytes = XSpaceBuilder::new()
            .plane("/host:CPU", |p| {
                p.line(1, "python", 1_000, |l| {
                    l.event("train", 0, 100).stat("step_num", 0i64);
                    l.event("matmul", 10, 50);
                });
                p.line(2, "worker", 1_000, |l| {
                    l.event("op", 20, 30);
                });
                p.stat_metadata("unused");
            })
            .hostname("vm")
            .to_bytes();
        let space = oxprof_xspace::decode_xspace(&bytes).unwrap();
        let s = summarize_space(&space);
        assert_eq!(s.events, 3);
        let p = &s.planes[0];
        assert_eq!((p.events, p.event_metadata, p.stat_metadata), (3, 3, 2));
        assert_eq!(p.stats_in_use, ["step_num"]);
        assert_eq!(p.span_ps, Some(100));
        assert_eq!(p.begin_ns, Some(1_000));
        assert_eq!(p.lines[1].events, 1);
        assert_eq!(p.lines[1].span_ps, Some(30));
        assert_eq!(s.hostnames, ["vm"]);
    }
}
