//! Several hosts of a run as one trace (the LOD API's `hosts=a,b`), merged as XProf's
//! `trace_viewer@` merges them: each host's processes keep their events on the host's own
//! clock as recorded (XProf shifts no host: the timestamps of an XSpace are absolute, so
//! hosts of one run line up as their clocks agree) and the trace starts at the earliest
//! host's first event; process ids are offset by [`MAX_DEVICES_PER_HOST`] × (host index + 1)
//! when there are several hosts.
//!
//! Ids stay plain numbers: the track ids of host `i` follow those of hosts `0..i` (host 0's
//! tracks keep their single-host ids), and an event id is still `track << 32 | position`
//! with the merged track id. With one host every answer equals the single-host one.
//!
//! ```text
//! host a   tracks 0..na      pids 1000 + device id   (one host: device id)
//! host b   tracks na..na+nb  pids 2000 + device id
//! time     ──────┬──────────────────────────────────▶  (ps, each host's own clock)
//!                └ start = min over hosts
//! ```

use super::MAX_DEVICES_PER_HOST;
use super::aggregate::{self, Aggregate, NameAggregate};
use super::index::{EventRef, TrackKind, view_in};
use super::lod::{
    self, EventDetails, FlowResponse, HostSummary, LodHost, LodRequest, LodResponse, SearchMatch, SearchQuery,
    SearchResponse, TrackList,
};
use serde::Serialize;
use std::collections::HashMap;

/// The hosts of one view, in order.
pub struct Hosts<'a> {
    hosts: Vec<LodHost<'a>>,
    /// Merged id of each host's first track.
    first_track: Vec<u32>,
}

impl<'a> Hosts<'a> {
    /// The hosts in display order (their track ids follow one another).
    pub fn new(hosts: Vec<LodHost<'a>>) -> Self {
        let mut first_track = Vec::with_capacity(hosts.len());
        let mut next = 0u32;
        for h in &hosts {
            first_track.push(next);
            next = next.saturating_add(h.index.tracks.len() as u32);
        }
        Hosts { hosts, first_track }
    }

    /// Earliest event start over the hosts (ps).
    pub fn min_ps(&self) -> u64 {
        self.hosts.iter().map(|h| h.index.min_ps).min().unwrap_or(0)
    }

    /// Latest event end over the hosts (ps).
    pub fn max_ps(&self) -> u64 {
        self.hosts.iter().map(|h| h.index.max_ps).max().unwrap_or(0)
    }

    /// XProf's merged pid of a device of host `hi`.
    fn pid(&self, hi: usize, device_id: u32) -> u32 {
        if self.hosts.len() == 1 { device_id } else { device_id + MAX_DEVICES_PER_HOST * (hi as u32 + 1) }
    }

    /// The host and local track of a merged track id.
    fn locate(&self, track: u32) -> Option<(usize, u32)> {
        let hi = self.first_track.partition_point(|&first| first <= track).checked_sub(1)?;
        let local = track - self.first_track[hi];
        ((local as usize) < self.hosts[hi].index.tracks.len()).then_some((hi, local))
    }

    /// The merged id of a host's event id.
    fn event_id(&self, hi: usize, local: u64) -> u64 {
        local + (u64::from(self.first_track[hi]) << 32)
    }

    /// Merged track ids by host: `None` (all tracks) or each host's local ids.
    fn split_tracks(&self, tracks: Option<&[u32]>) -> Vec<Option<Vec<u32>>> {
        match tracks {
            None => vec![None; self.hosts.len()],
            Some(ids) => {
                let mut per: Vec<Vec<u32>> = vec![Vec::new(); self.hosts.len()];
                for &id in ids {
                    if let Some((hi, local)) = self.locate(id) {
                        per[hi].push(local);
                    }
                }
                per.into_iter().map(Some).collect()
            }
        }
    }
}

/// The track list of the hosts: sections of host 0, then host 1, …
pub fn track_list(h: &Hosts<'_>) -> TrackList {
    let mut sections = Vec::new();
    let mut hosts = Vec::new();
    for (hi, host) in h.hosts.iter().enumerate() {
        let one = lod::track_list(host);
        for mut s in one.sections {
            s.pid = h.pid(hi, s.pid);
            for t in &mut s.tracks {
                t.id += h.first_track[hi];
            }
            sections.push(s);
        }
        hosts.extend(one.hosts);
    }
    let names: Vec<&str> = hosts.iter().map(|x: &HostSummary| x.name.as_str()).collect();
    TrackList {
        host: names.join(","),
        start_ps: h.min_ps(),
        end_ps: h.max_ps(),
        num_events: hosts.iter().map(|x| x.num_events).sum(),
        hosts,
        sections,
    }
}

/// A window over the hosts: the same time range and resolution for every host.
pub fn window(h: &Hosts<'_>, req: &LodRequest) -> LodResponse {
    let (min, max) = (h.min_ps(), h.max_ps());
    let begin = req.start_ps.unwrap_or(min).max(min);
    let end = req.end_ps.unwrap_or(max).min(max).max(begin);
    let resolution_ps = lod::resolution_of(begin, end, req.width);
    let mut names: Vec<String> = Vec::new();
    let mut name_ids: HashMap<String, u32> = HashMap::new();
    let mut tracks = Vec::new();
    let (mut total_in, mut total_ret) = (0, 0);
    for (hi, (host, wanted)) in h.hosts.iter().zip(h.split_tracks(req.tracks.as_deref())).enumerate() {
        let count = host.index.tracks.len();
        let selected: Vec<usize> = match wanted {
            Some(ids) => ids.into_iter().map(|i| i as usize).filter(|&i| i < count).collect(),
            None => (0..count).collect(),
        };
        if selected.is_empty() {
            continue;
        }
        let part = lod::window_part(host, begin, end, resolution_ps, &selected, req.exact_limit);
        let map: Vec<u32> = part
            .names
            .into_iter()
            .map(|name| {
                let next = names.len() as u32;
                *name_ids.entry(name).or_insert_with_key(|name| {
                    names.push(name.clone());
                    next
                })
            })
            .collect();
        for mut t in part.tracks {
            t.id += h.first_track[hi];
            for e in &mut t.events {
                e.id = h.event_id(hi, e.id);
                e.name = map[e.name as usize];
            }
            tracks.push(t);
        }
        total_in += part.total_in_window;
        total_ret += part.total_returned;
    }
    LodResponse {
        start_ps: begin,
        end_ps: end,
        resolution_ps,
        names,
        tracks,
        total_in_window: total_in,
        total_returned: total_ret,
        total_hidden: total_in.saturating_sub(total_ret),
    }
}

/// One event's details (merged ids and pid) and its self time.
pub fn event_details(h: &Hosts<'_>, id: u64) -> Option<(EventDetails, Option<u64>)> {
    let r = EventRef::from_id(id);
    let (hi, local) = h.locate(r.track)?;
    let host = &h.hosts[hi];
    let mut d = lod::event_details(host, EventRef { track: local, pos: r.pos }.to_id())?;
    let self_ps = aggregate::self_time(host, local, r.pos);
    d.id = id;
    d.track = r.track;
    d.pid = h.pid(hi, d.pid);
    Some((d, self_ps))
}

fn merged_match(h: &Hosts<'_>, hi: usize, mut m: SearchMatch) -> SearchMatch {
    m.id = h.event_id(hi, m.id);
    m.track += h.first_track[hi];
    m
}

/// Search over every host: the first `limit` matches by time, all of them counted.
pub fn search(h: &Hosts<'_>, query: &SearchQuery, limit: usize) -> SearchResponse {
    let mut hits: Vec<(u64, usize, SearchMatch)> = Vec::new();
    let mut total = 0;
    for (hi, host) in h.hosts.iter().enumerate() {
        let r = lod::search_query(host, query, limit);
        total += r.total;
        hits.extend(r.matches.into_iter().map(|m| (m.ts_ps, hi, merged_match(h, hi, m))));
    }
    hits.sort_by_key(|a| (a.0, a.1, a.2.track, a.2.id));
    hits.truncate(limit);
    let matches: Vec<SearchMatch> = hits.into_iter().map(|(_, _, m)| m).collect();
    let (prefix, q, args) = match query {
        SearchQuery::Prefix(p) => (Some(p.clone()), None, false),
        SearchQuery::Text { text, args } => (None, Some(text.clone()), *args),
    };
    SearchResponse { prefix, q, args, total, truncated: matches.len() < total, matches }
}

/// The events of a flow on every host, by time.
pub fn flow_events(h: &Hosts<'_>, flow_id: u64) -> FlowResponse {
    let mut events: Vec<(u64, usize, SearchMatch)> = Vec::new();
    for (hi, host) in h.hosts.iter().enumerate() {
        let r = lod::flow_events(host, flow_id);
        events.extend(r.events.into_iter().map(|m| (m.ts_ps, hi, merged_match(h, hi, m))));
    }
    events.sort_by_key(|a| (a.0, a.1, a.2.id));
    FlowResponse { flow: flow_id, events: events.into_iter().map(|(_, _, m)| m).collect() }
}

/// Per-name statistics over the tracks of every host (see [`aggregate::aggregate`]).
pub fn aggregate(h: &Hosts<'_>, tracks: Option<&[u32]>, begin: u64, end: u64) -> Aggregate {
    let mut rows: Vec<NameAggregate> = Vec::new();
    let mut by_name: HashMap<String, usize> = HashMap::new();
    let mut chosen = Vec::new();
    let mut num_events = 0;
    for (hi, (host, wanted)) in h.hosts.iter().zip(h.split_tracks(tracks)).enumerate() {
        if wanted.as_ref().is_some_and(Vec::is_empty) {
            continue;
        }
        let a = aggregate::aggregate(host, wanted.as_deref(), begin, end);
        num_events += a.num_events;
        chosen.extend(a.tracks.iter().map(|t| t + h.first_track[hi]));
        for r in a.rows {
            match by_name.get(&r.name) {
                Some(&i) => {
                    let row = &mut rows[i];
                    row.count += r.count;
                    row.total_ps = row.total_ps.saturating_add(r.total_ps);
                    row.self_ps = row.self_ps.saturating_add(r.self_ps);
                    row.min_ps = row.min_ps.min(r.min_ps);
                    row.max_ps = row.max_ps.max(r.max_ps);
                }
                None => {
                    by_name.insert(r.name.clone(), rows.len());
                    rows.push(r);
                }
            }
        }
    }
    for row in &mut rows {
        row.avg_ps = if row.count == 0 { 0.0 } else { row.total_ps as f64 / row.count as f64 };
    }
    rows.sort_by(|a, b| b.total_ps.cmp(&a.total_ps).then_with(|| a.name.cmp(&b.name)));
    Aggregate { start_ps: begin.min(end), end_ps: end.max(begin), tracks: chosen, num_events, rows }
}

/// Where a step is in the trace.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct StepSpan {
    /// The step (group id, as the step-time graphs number steps).
    pub step: i64,
    /// Earliest start of its events (ps).
    pub start_ps: u64,
    /// Latest end of its events (ps).
    pub end_ps: u64,
    /// Number of events of the step.
    pub num_events: usize,
}

/// The time span of step `step`: every event whose group id is `step` (step markers, ops
/// and kernels the grouping connects to it), on every host; `None` when no event has it.
///
/// ```text
/// host   [==== train 5 ====]
/// device     [op][op]   [kernel]
/// span   |<-------------------->|
/// ```
pub fn step_span(h: &Hosts<'_>, step: i64) -> Option<StepSpan> {
    use rayon::prelude::*;
    let per_track: Vec<(u64, u64, usize)> = h
        .hosts
        .iter()
        .flat_map(|host| host.index.tracks.iter().map(move |t| (host, t)))
        .collect::<Vec<_>>()
        .par_iter()
        .filter(|(_, t)| !matches!(t.kind, Some(TrackKind::Counter { .. })))
        .map(|(host, t)| {
            let (mut lo, mut hi, mut n) = (u64::MAX, 0u64, 0usize);
            for pos in 0..t.len() as u32 {
                if let Some(v) = view_in(host.space, t, pos)
                    && v.group_id(host.groups) == Some(step)
                {
                    lo = lo.min(v.ts);
                    hi = hi.max(v.ts.saturating_add(v.dur));
                    n += 1;
                }
            }
            (lo, hi, n)
        })
        .collect();
    let n: usize = per_track.iter().map(|p| p.2).sum();
    (n > 0).then(|| StepSpan {
        step,
        start_ps: per_track.iter().filter(|p| p.2 > 0).map(|p| p.0).min().unwrap_or(0),
        end_ps: per_track.iter().filter(|p| p.2 > 0).map(|p| p.1).max().unwrap_or(0),
        num_events: n,
    })
}

/// The step (group id) named `name` (`train 5`: the names of the step-time graphs' rows)
/// on the first host that has it.
pub fn step_named(h: &Hosts<'_>, name: &str) -> Option<i64> {
    h.hosts.iter().find_map(|host| host.groups.groups().iter().find(|(_, g)| g.name == name).map(|(&id, _)| id))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TraceIndex;
    use oxprof_grouping::group_events;
    use oxprof_model::XSpace;
    use oxprof_testkit::XSpaceBuilder;
    use oxprof_xspace::decode_xspace;

    // Two hosts, one thread each; host b starts 1 µs later on the shared clock.
    //
    //   a  t1  |-- work 0..10 ns --|   |- Tail 20..30 -|
    //   b  t1            |-- work 1000..1010 ns --|
    fn space(start_ns: i64, tail: bool) -> XSpace {
        decode_xspace(
            &XSpaceBuilder::new()
                .plane("/host:CPU", |p| {
                    p.line(1, "main", start_ns, |l| {
                        l.event("work", 0, 10_000).stat("hlo_op", "fusion.3");
                        if tail {
                            l.event("Tail", 20_000, 10_000);
                        }
                    });
                })
                .to_bytes(),
        )
        .unwrap()
    }

    #[test]
    fn hosts_merge_on_their_clocks_with_offset_pids_and_track_ids() {
        let (sa, sb) = (space(0, true), space(1000, false));
        let (ga, gb) = (group_events(&sa), group_events(&sb));
        let (ia, ib) = (TraceIndex::build(&sa, "a"), TraceIndex::build(&sb, "b"));
        let a = LodHost { space: &sa, groups: &ga, index: &ia };
        let b = LodHost { space: &sb, groups: &gb, index: &ib };
        // One host: the single-host answers.
        let one = Hosts::new(vec![a]);
        assert_eq!(track_list(&one), lod::track_list(&a));
        assert_eq!(window(&one, &LodRequest::default()), lod::window(&a, &LodRequest::default()));

        let both = Hosts::new(vec![a, b]);
        let list = track_list(&both);
        assert_eq!(list.hosts.iter().map(|x| x.name.as_str()).collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(list.start_ps, ia.min_ps);
        assert_eq!(list.end_ps, ib.max_ps);
        assert_eq!(list.num_events, ia.num_events + ib.num_events);
        let pids: Vec<u32> = list.sections.iter().map(|s| s.pid).collect();
        let single = lod::track_list(&a).sections[0].pid;
        assert_eq!(pids, [single + 1000, single + 2000]);
        assert_eq!(list.sections[1].host, "b");
        let ids: Vec<u32> = list.sections.iter().flat_map(|s| s.tracks.iter().map(|t| t.id)).collect();
        let b_track = list.sections[1].tracks[0].id;
        assert_eq!(b_track as usize, ia.tracks.len());
        assert!(ids.windows(2).all(|w| w[0] < w[1]));

        // The whole window: both hosts' events at their own times.
        let w = window(&both, &LodRequest::default());
        assert_eq!(w.start_ps, ia.min_ps);
        assert_eq!(w.total_in_window, 3);
        let b_events = &w.tracks.iter().find(|t| t.id == b_track).unwrap().events;
        assert_eq!(b_events[0].ts_ps, ib.min_ps);
        assert_eq!(w.names[b_events[0].name as usize], "work");
        // Only host b's track.
        let w = window(&both, &LodRequest { tracks: Some(vec![b_track]), ..Default::default() });
        assert_eq!(w.tracks.len(), 1);
        assert_eq!(w.total_in_window, 1);

        // Details by merged id.
        let (d, self_ps) = event_details(&both, b_events[0].id).unwrap();
        assert_eq!((d.track, d.pid, d.ts_ps, d.name.as_str()), (b_track, single + 2000, ib.min_ps, "work"));
        assert_eq!(self_ps, Some(10_000));

        // Search: both hosts, by time, merged ids; argument values with `args`.
        let q = |text: &str, args| SearchQuery::Text { text: text.into(), args };
        let r = search(&both, &q("WORK", false), 10);
        assert_eq!(r.total, 2);
        assert_eq!(r.matches[1].id, b_events[0].id);
        let r = search(&both, &q("FUSION", true), 10);
        assert_eq!((r.total, r.matches[0].arg.as_deref()), (2, Some("hlo_op")));
        assert_eq!(search(&both, &q("FUSION", false), 10).total, 0);
        let r = search(&both, &q("ail", false), 10);
        assert_eq!((r.total, r.matches[0].name.as_str()), (1, "Tail"));
        // Prefix searches stay case-sensitive.
        assert_eq!(search(&both, &SearchQuery::Prefix("wo".into()), 10).total, 2);
        assert_eq!(search(&both, &SearchQuery::Prefix("WO".into()), 10).total, 0);
        // Truncated: the earliest first, all counted.
        let r = search(&both, &q("o", false), 1);
        assert_eq!((r.total, r.truncated, r.matches.len(), r.matches[0].ts_ps), (2, true, 1, ia.min_ps));

        // Aggregate over both hosts' tracks.
        let g = aggregate(&both, None, 0, u64::MAX);
        assert_eq!(g.num_events, 3);
        let work = g.rows.iter().find(|r| r.name == "work").unwrap();
        assert_eq!((work.count, work.total_ps, work.self_ps), (2, 20_000, 20_000));
        assert_eq!(g.tracks, [0, b_track]);
        let g = aggregate(&both, Some(&[b_track]), 0, u64::MAX);
        assert_eq!((g.num_events, g.tracks.as_slice()), (1, [b_track].as_slice()));
    }
}
