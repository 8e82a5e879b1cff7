//! Decodes bytes with both oxprof's decoder and prost (the reference protobuf
//! implementation, through types generated from the vendored `xplane.proto`) and checks
//! that they agree on every field. Used by tests over real profiles and random mutations,
//! and by the fuzz target (prost is needed nowhere else: `oxprof-xspace` reads and writes
//! the format by hand).

use crate::pb;
use prost::Message;

/// Decodes `bytes` with both oxprof's decoder and prost (the reference protobuf
/// implementation) and checks that they agree on every field. Returns `Ok(false)` when
/// prost rejects the input (nothing to compare), `Err` with the first difference found.
///
/// Also checks that encoding the decoded model and decoding it again gives an equal model.
///
/// Used by tests over real profiles and random mutations, and by the fuzz target.
pub fn crosscheck(bytes: &[u8]) -> Result<bool, String> {
    let Ok(reference) = pb::XSpace::decode(bytes) else {
        return Ok(false);
    };
    if has_mistyped_map_field(bytes) {
        // prost reads map entries without checking their wire type, where protobuf (and
        // oxprof) skip such a field as unknown: no common ground to compare on.
        return Ok(false);
    }
    let ours = match oxprof_xspace::decode_xspace(bytes) {
        Ok(space) => space,
        // Our decoder calls an empty buffer or one with no XSpace field an error, where
        // protobuf sees an empty message.
        Err(oxprof_xspace::DecodeError::Empty | oxprof_xspace::DecodeError::NotAnXSpace(_))
            if reference.planes.is_empty()
                && reference.errors.is_empty()
                && reference.warnings.is_empty()
                && reference.hostnames.is_empty() =>
        {
            return Ok(true);
        }
        // A budget against hostile input is not a disagreement about the format.
        Err(oxprof_xspace::DecodeError::LimitExceeded(_)) => return Ok(false),
        Err(e) => return Err(format!("prost decodes it but oxprof fails: {e}")),
    };
    crosscheck_space(&reference, &ours)?;
    // The encoder writes back what the decoder read (without budgets: written back, the
    // same content can take fewer bytes than the budgets of the original's size allow).
    let again = oxprof_xspace::encode_xspace(&ours);
    let limits = oxprof_model::LoadLimits::none();
    let again = oxprof_xspace::decode_xspace_within(&again, &oxprof_model::KeepPages, &|_| true, &limits)
        .map_err(|e| format!("the encoded model does not decode: {e}"))?;
    if let Some(diff) = oxprof_model::compare::first_difference(&ours, &again) {
        return Err(format!("decode -> encode -> decode differs: {diff}"));
    }
    Ok(true)
}

/// Whether a plane carries an `event_metadata`/`stat_metadata` field (4/5) with a wire
/// type other than length-delimited.
fn has_mistyped_map_field(bytes: &[u8]) -> bool {
    let mut top = Fields(bytes);
    while let Some((field, wire_type, value)) = top.next_field() {
        if field == 1 && wire_type == LEN {
            let mut plane = Fields(value);
            while let Some((f, w, _)) = plane.next_field() {
                if (f == 4 || f == 5) && w != LEN {
                    return true;
                }
            }
        }
    }
    false
}

/// The length-delimited wire type.
const LEN: u8 = 2;

/// The fields of one protobuf message, as (number, wire type, payload of a
/// length-delimited field; empty for others). A group is skipped to its end tag, as prost
/// skips it. A field whose payload is malformed or cut short is returned with an empty
/// payload and ends the walk (its key is what matters here: prost reads a map field's
/// entry whatever its wire type).
struct Fields<'a>(&'a [u8]);

impl<'a> Fields<'a> {
    fn varint(&mut self) -> Option<u64> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let (&byte, rest) = self.0.split_first()?;
            self.0 = rest;
            value |= u64::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                return Some(value);
            }
        }
        None
    }

    /// Skips one field's payload of `wire_type` (a group up to its end tag); `None` when
    /// it is malformed or cut short.
    fn skip(&mut self, field: u64, wire_type: u8) -> Option<&'a [u8]> {
        let size = match wire_type {
            0 => self.varint().map(|_| 0)?,
            1 => 8,
            LEN => usize::try_from(self.varint()?).ok()?,
            5 => 4,
            3 => loop {
                let key = self.varint()?;
                let (inner, inner_type) = (key >> 3, (key & 7) as u8);
                if inner_type == 4 {
                    return (inner == field).then_some(&[]);
                }
                self.skip(inner, inner_type)?;
            },
            _ => return None,
        };
        if size > self.0.len() {
            return None;
        }
        let (value, rest) = self.0.split_at(size);
        self.0 = rest;
        Some(value)
    }

    fn next_field(&mut self) -> Option<(u64, u8, &'a [u8])> {
        let key = self.varint()?;
        let (field, wire_type) = (key >> 3, (key & 7) as u8);
        match self.skip(field, wire_type) {
            Some(value) => Some((field, wire_type, value)),
            None => {
                self.0 = &[];
                Some((field, wire_type, &[]))
            }
        }
    }
}

fn check<T: PartialEq + std::fmt::Debug>(what: &dyn Fn() -> String, expected: T, actual: T) -> Result<(), String> {
    if expected == actual { Ok(()) } else { Err(format!("{}: expected {expected:?}, got {actual:?}", what())) }
}

fn crosscheck_space(reference: &pb::XSpace, ours: &oxprof_model::XSpace) -> Result<(), String> {
    check(&|| "errors".into(), &reference.errors, &ours.errors)?;
    check(&|| "warnings".into(), &reference.warnings, &ours.warnings)?;
    check(&|| "hostnames".into(), &reference.hostnames, &ours.hostnames)?;
    check(&|| "plane count".into(), reference.planes.len(), ours.planes.len())?;
    for (pi, (rp, op)) in reference.planes.iter().zip(&ours.planes).enumerate() {
        let at = |what: &str| format!("planes[{pi}].{what}");
        check(&|| at("id"), rp.id, op.id)?;
        check(&|| at("name"), &rp.name, &op.name)?;
        check(&|| at("event_metadata count"), rp.event_metadata.len(), op.event_metadata_count())?;
        check(&|| at("stat_metadata count"), rp.stat_metadata.len(), op.stat_metadata_count())?;
        for (key, rm) in &rp.stat_metadata {
            let id = op.stat_metadata_by_file_id(*key).ok_or_else(|| at(&format!("stat_metadata[{key}] missing")))?;
            let om = op.stat_metadata_at(id);
            check(&|| at(&format!("stat_metadata[{key}].id")), rm.id, om.id)?;
            check(&|| at(&format!("stat_metadata[{key}].name")), rm.name.as_str(), op.str(om.name))?;
            check(
                &|| at(&format!("stat_metadata[{key}].description")),
                rm.description.as_str(),
                op.str(om.description),
            )?;
        }
        for (key, rm) in &rp.event_metadata {
            let id = op.event_metadata_by_file_id(*key).ok_or_else(|| at(&format!("event_metadata[{key}] missing")))?;
            let om = op.event_metadata_at(id);
            let at_m = |w: &str| at(&format!("event_metadata[{key}].{w}"));
            check(&|| at_m("id"), rm.id, om.id)?;
            check(&|| at_m("name"), rm.name.as_str(), op.str(om.name))?;
            check(&|| at_m("display_name"), rm.display_name.as_str(), op.str(om.display_name))?;
            check(&|| at_m("metadata"), &rm.metadata[..], &om.metadata[..])?;
            check(&|| at_m("child_id"), &rm.child_id[..], &om.child_ids[..])?;
            crosscheck_stats(rp, op, &rm.stats, op.metadata_stats(id), &at_m("stats"))?;
        }
        crosscheck_stats(rp, op, &rp.stats, op.stats(), &at("stats"))?;
        check(&|| at("line count"), rp.lines.len(), op.lines.len())?;
        for (li, (rl, ol)) in rp.lines.iter().zip(&op.lines).enumerate() {
            let at_l = |w: &str| at(&format!("lines[{li}].{w}"));
            check(&|| at_l("id"), rl.id, ol.id)?;
            check(&|| at_l("display_id"), rl.display_id, ol.display_id)?;
            check(&|| at_l("name"), &rl.name, &ol.name)?;
            check(&|| at_l("display_name"), &rl.display_name, &ol.display_name)?;
            check(&|| at_l("timestamp_ns"), rl.timestamp_ns, ol.timestamp_ns)?;
            check(&|| at_l("duration_ps"), rl.duration_ps, ol.duration_ps)?;
            check(&|| at_l("event count"), rl.events.len(), ol.event_count())?;
            for (ei, (re, oe)) in rl.events.iter().zip(ol.events(op)).enumerate() {
                let at_e = |w: &str| at_l(&format!("events[{ei}].{w}"));
                match op.event_metadata_by_file_id(re.metadata_id) {
                    Some(id) => check(&|| at_e("metadata"), id, oe.metadata_id())?,
                    None => return Err(at_e("metadata placeholder missing")),
                }
                let (offset, occurrences) = match re.data {
                    Some(pb::x_event::Data::OffsetPs(o)) => (o, None),
                    Some(pb::x_event::Data::NumOccurrences(n)) => (0, Some(n)),
                    None => (0, None),
                };
                check(&|| at_e("offset_ps"), offset, oe.offset_ps())?;
                check(&|| at_e("num_occurrences"), occurrences, oe.num_occurrences())?;
                check(&|| at_e("duration_ps"), re.duration_ps, oe.duration_ps())?;
                crosscheck_stats(rp, op, &re.stats, oe.stats(), &at_e("stats"))?;
            }
        }
    }
    Ok(())
}

fn crosscheck_stats(
    rp: &pb::XPlane,
    op: &oxprof_model::XPlane,
    reference: &[pb::XStat],
    ours: oxprof_model::Stats<'_>,
    at: &str,
) -> Result<(), String> {
    use oxprof_model::StatValue;
    use pb::x_stat::Value as V;
    check(&|| format!("{at} count"), reference.len(), ours.len())?;
    for (si, (rs, os)) in reference.iter().zip(ours).enumerate() {
        let at_s = || format!("{at}[{si}]");
        check(&|| format!("{}.metadata", at_s()), op.stat_metadata_by_file_id(rs.metadata_id), Some(os.metadata_id()))?;
        let gunzipped;
        let expected = match &rs.value {
            None => StatValue::Unset,
            Some(V::DoubleValue(d)) => StatValue::Double(*d),
            Some(V::Uint64Value(x)) => StatValue::Uint64(*x),
            Some(V::Int64Value(x)) => StatValue::Int64(*x),
            Some(V::StrValue(s)) => StatValue::Str(s),
            Some(V::BytesValue(b)) => StatValue::Bytes(b),
            Some(V::RefValue(r)) => StatValue::Ref(
                i64::try_from(*r).ok().and_then(|r| rp.stat_metadata.get(&r)).map_or("", |m| m.name.as_str()),
            ),
            Some(V::CompressedStrValue(c)) => {
                use std::io::Read;
                let mut out = Vec::new();
                gunzipped = match flate2::read::GzDecoder::new(&c[..]).read_to_end(&mut out) {
                    Ok(_) => String::from_utf8_lossy(&out).into_owned(),
                    Err(_) => String::new(),
                };
                StatValue::Str(&gunzipped)
            }
        };
        let same = match (expected, os.value) {
            (StatValue::Double(a), StatValue::Double(b)) => a.to_bits() == b.to_bits(),
            (a, b) => a == b,
        };
        if !same {
            return Err(format!("{}: expected {expected:?}, got {:?}", at_s(), os.value));
        }
    }
    Ok(())
}
