//! Model equality by content: two spaces are equal when their planes, lines, events, stats,
//! metadata and strings are, whatever their dense ids, string ids or string table order.
//! For round-trip tests of importers and writers (decode → encode → decode).
//!
//! Metadata is compared by the input's keys (the ids events and stats refer to it by);
//! strings by text; doubles bit for bit. Diagnostics are not compared: writing a model out
//! repairs what its input had wrong. Placeholder metadata (made for keys the input lacked)
//! is compared where it is used, not as entries: a placeholder that only a replaced
//! duplicate entry used is not content.

use crate::model::{EventMetadata, StatMetadata, StatValue, Stats, XPlane, XSpace};
use std::fmt::Debug;

/// The first difference between `a` and `b`, as `path: a vs b`; `None` when they are equal.
pub fn first_difference(a: &XSpace, b: &XSpace) -> Option<String> {
    space_difference(a, b).err()
}

fn same<T: PartialEq + Debug>(at: &dyn Fn() -> String, a: T, b: T) -> Result<(), String> {
    if a == b { Ok(()) } else { Err(format!("{}: {a:?} vs {b:?}", at())) }
}

fn space_difference(a: &XSpace, b: &XSpace) -> Result<(), String> {
    same(&|| "errors".into(), &a.errors, &b.errors)?;
    same(&|| "warnings".into(), &a.warnings, &b.warnings)?;
    same(&|| "hostnames".into(), &a.hostnames, &b.hostnames)?;
    same(&|| "plane count".into(), a.planes.len(), b.planes.len())?;
    for (i, (pa, pb)) in a.planes.iter().zip(&b.planes).enumerate() {
        plane_difference(pa, pb, &format!("planes[{i}]"))?;
    }
    Ok(())
}

fn stat_metadata_view<'a>(p: &'a XPlane, m: &StatMetadata) -> (i64, i64, &'a str, &'a str) {
    (m.key(), m.id, p.str(m.name), p.str(m.description))
}

fn event_metadata_view<'a>(p: &'a XPlane, m: &'a EventMetadata) -> (i64, i64, &'a str, &'a str, &'a [u8], &'a [i64]) {
    (m.key(), m.id, p.str(m.name), p.str(m.display_name), &m.metadata, &m.child_ids)
}

fn plane_difference(a: &XPlane, b: &XPlane, at: &str) -> Result<(), String> {
    let at_ = |what: &str| format!("{at}.{what}");
    same(&|| at_("id"), a.id, b.id)?;
    same(&|| at_("name"), &a.name, &b.name)?;
    same(&|| at_("event_metadata_count"), a.event_metadata_count(), b.event_metadata_count())?;
    same(&|| at_("stat_metadata_count"), a.stat_metadata_count(), b.stat_metadata_count())?;
    same(&|| at_("lines_not_decoded"), a.lines_not_decoded(), b.lines_not_decoded())?;
    let entries = |p: &'_ XPlane| p.stat_metadata().iter().filter(|m| !m.is_placeholder()).count();
    same(&|| at_("stat_metadata entries"), entries(a), entries(b))?;
    let mut sa: Vec<_> =
        a.stat_metadata().iter().filter(|m| !m.is_placeholder()).map(|m| stat_metadata_view(a, m)).collect();
    let mut sb: Vec<_> =
        b.stat_metadata().iter().filter(|m| !m.is_placeholder()).map(|m| stat_metadata_view(b, m)).collect();
    sa.sort_by_key(|v| v.0);
    sb.sort_by_key(|v| v.0);
    same(&|| at_("stat_metadata"), sa, sb)?;
    let mut ea: Vec<_> = a.event_metadata_ids().filter(|&id| !a.event_metadata_at(id).is_placeholder()).collect();
    let mut eb: Vec<_> = b.event_metadata_ids().filter(|&id| !b.event_metadata_at(id).is_placeholder()).collect();
    same(&|| at_("event_metadata len"), ea.len(), eb.len())?;
    ea.sort_by_key(|&id| a.event_metadata_at(id).key());
    eb.sort_by_key(|&id| b.event_metadata_at(id).key());
    for (&ia, &ib) in ea.iter().zip(&eb) {
        let (ma, mb) = (a.event_metadata_at(ia), b.event_metadata_at(ib));
        let at_m = |what: &str| format!("{at}.event_metadata[key {}].{what}", ma.key());
        same(&|| at_m("fields"), event_metadata_view(a, ma), event_metadata_view(b, mb))?;
        same(&|| at_m("host_event_type"), ma.host_event_type, mb.host_event_type)?;
        stats_difference(a.metadata_stats(ia), b.metadata_stats(ib), &at_m("stats"))?;
    }
    stats_difference(a.stats(), b.stats(), &at_("stats"))?;
    same(&|| at_("line count"), a.lines.len(), b.lines.len())?;
    for (li, (la, lb)) in a.lines.iter().zip(&b.lines).enumerate() {
        let at_l = |what: &str| format!("{at}.lines[{li}].{what}");
        same(&|| at_l("id"), (la.id, la.display_id), (lb.id, lb.display_id))?;
        same(&|| at_l("names"), (&la.name, &la.display_name), (&lb.name, &lb.display_name))?;
        same(&|| at_l("timing"), (la.timestamp_ns, la.duration_ps), (lb.timestamp_ns, lb.duration_ps))?;
        same(&|| at_l("event count"), la.event_count(), lb.event_count())?;
        for (ei, (xa, xb)) in la.events(a).zip(lb.events(b)).enumerate() {
            let at_e = |what: &str| format!("{at}.lines[{li}].events[{ei}].{what}");
            let (ma, mb) = (xa.metadata(), xb.metadata());
            same(&|| at_e("metadata"), (ma.key(), ma.is_placeholder()), (mb.key(), mb.is_placeholder()))?;
            same(&|| at_e("name"), xa.name(), xb.name())?;
            same(&|| at_e("offset_ps"), xa.offset_ps(), xb.offset_ps())?;
            same(&|| at_e("duration_ps"), xa.duration_ps(), xb.duration_ps())?;
            same(&|| at_e("num_occurrences"), xa.num_occurrences(), xb.num_occurrences())?;
            stats_difference(xa.stats(), xb.stats(), &at_e("stats"))?;
        }
    }
    Ok(())
}

fn stats_difference(a: Stats<'_>, b: Stats<'_>, at: &str) -> Result<(), String> {
    same(&|| format!("{at} count"), a.len(), b.len())?;
    for (i, (sa, sb)) in a.zip(b).enumerate() {
        let at_s = || format!("{at}[{i}]");
        let (ma, mb) = (sa.metadata(), sb.metadata());
        same(&|| format!("{} metadata", at_s()), (ma.key(), ma.is_placeholder()), (mb.key(), mb.is_placeholder()))?;
        same(&|| format!("{} name", at_s()), sa.name(), sb.name())?;
        same(&|| format!("{} ref", at_s()), sa.ref_key(), sb.ref_key())?;
        let equal = match (sa.value, sb.value) {
            (StatValue::Double(x), StatValue::Double(y)) => x.to_bits() == y.to_bits(),
            (x, y) => x == y,
        };
        if !equal {
            return Err(format!("{}: {:?} vs {:?}", at_s(), sa.value, sb.value));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ModelBuilder;

    fn space(offset: i64, value: f64) -> XSpace {
        ModelBuilder::new()
            .plane("/host:CPU", |p| {
                p.line(1, "t", 0, |l| {
                    l.event("a", 0, 1);
                    l.event("b", offset, 1).stat("x", value);
                });
            })
            .build()
            .unwrap()
    }

    #[test]
    fn equal_content_is_equal_and_the_first_difference_is_named() {
        assert_eq!(first_difference(&space(5, 1.0), &space(5, 1.0)), None);
        assert_eq!(
            first_difference(&space(5, 1.0), &space(6, 1.0)).as_deref(),
            Some("planes[0].lines[0].events[1].offset_ps: 5 vs 6")
        );
        let diff = first_difference(&space(5, 0.0), &space(5, -0.0)).unwrap();
        assert!(diff.starts_with("planes[0].lines[0].events[1].stats[0]"), "{diff}");
    }
}
