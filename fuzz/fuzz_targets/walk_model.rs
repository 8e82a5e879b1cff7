//! A walk over a whole model that every fuzz target runs on what it produced: every lazy
//! accessor (string resolution, stat columns, placeholders, occurrences) runs, and a few
//! model invariants are checked.

use oxprof_model::{Stat, StatValue, Stats, XPlane, XSpace};
use std::hint::black_box;

pub fn walk_space(space: &XSpace) {
    for s in space.errors.iter().chain(&space.warnings).chain(&space.hostnames) {
        black_box(s.len());
    }
    for (kind, n) in space.diagnostics.iter() {
        black_box((kind.code(), kind.severity().as_str(), kind.message(), n));
    }
    let mut events = 0usize;
    for plane in &space.planes {
        walk_plane(plane);
        events += plane.event_count();
    }
    assert_eq!(events, space.event_count());
    black_box(space.heap_bytes());
    if let Some(first) = space.planes.first() {
        assert!(space.plane(&first.name).is_some());
        black_box(space.planes_with_prefix(&first.name).count());
    }
}

fn walk_plane(plane: &XPlane) {
    black_box((plane.id, plane.name.len()));
    for (id, s) in plane.strings().iter() {
        assert_eq!(plane.str(id), s);
    }
    for m in plane.stat_metadata() {
        black_box((m.id, plane.str(m.name), plane.str(m.description), m.stat_type));
    }
    for id in plane.event_metadata_ids() {
        let m = plane.event_metadata_at(id);
        black_box((m.id, plane.str(m.name), plane.str(m.display_name), &m.metadata, &m.child_ids));
        black_box(m.host_event_type);
        walk_stats(plane.metadata_stats(id));
    }
    assert!(plane.event_metadata_count() <= plane.event_metadata().len());
    assert!(plane.stat_metadata_count() <= plane.stat_metadata().len());
    walk_stats(plane.stats());
    for id in plane.metadata_and_plane_stat_ids() {
        black_box(plane.stat_metadata_at(id));
    }

    for line in &plane.lines {
        black_box((line.id, line.display_id, &line.name, &line.display_name, line.display_name_or_name()));
        black_box((line.timestamp_ns, line.duration_ps, line.offset_span_ps()));
        for id in line.event_stat_metadata_ids() {
            black_box(plane.stat_metadata_at(id));
        }
        let mut stats_seen = 0usize;
        let events = line.events(plane);
        assert_eq!(events.len(), line.event_count());
        for event in events {
            black_box((event.index(), event.name(), event.display_name(), event.metadata_id()));
            black_box((event.offset_ps(), event.duration_ps(), event.timestamp_ps(), event.end_timestamp_ps()));
            black_box(event.num_occurrences());
            black_box(event.metadata());
            let own = event.stats();
            stats_seen += own.len();
            walk_stats(own);
            walk_stats(event.metadata_stats());
            black_box(event.stat(oxprof_model::schema::StatType::StepNum));
            black_box(format!("{event:?}"));
        }
        assert_eq!(stats_seen, line.stat_count(), "event stat ranges must cover the line's stats");
        if line.event_count() > 0 {
            black_box(line.event(plane, line.event_count() - 1));
        }
    }
    assert_eq!(plane.events().count(), plane.event_count());
}

fn walk_stats(stats: Stats<'_>) {
    let n = stats.len();
    assert_eq!(stats.is_empty(), n == 0);
    let mut seen = 0usize;
    for stat in stats {
        walk_stat(&stat);
        seen += 1;
    }
    assert_eq!(seen, n);
}

fn walk_stat(stat: &Stat<'_>) {
    black_box((stat.metadata_id(), stat.metadata(), stat.name(), stat.stat_type()));
    black_box((stat.as_i64(), stat.as_u64(), stat.as_f64(), stat.as_str(), stat.as_bytes()));
    let bits: u64 = match stat.value {
        StatValue::Unset => 0,
        StatValue::Double(d) => black_box(d).to_bits(),
        StatValue::Uint64(x) => black_box(x),
        StatValue::Int64(x) => black_box(x) as u64,
        StatValue::Str(s) | StatValue::Ref(s) => black_box(s.len()) as u64,
        StatValue::Bytes(b) => black_box(b.len()) as u64,
    };
    black_box(bits);
    black_box(stat.value.to_string());
    black_box(format!("{stat:?}"));
}
