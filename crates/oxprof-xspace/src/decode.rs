//! The XSpace decoder: protobuf bytes straight into the compact model through its public
//! builder ([`oxprof_model::PlaneBuilder`]), without building intermediate message objects.
//!
//! Plan of a decode:
//!
//! ```text
//!  XSpace bytes ──scan──> plane ranges, errors/warnings/hostnames
//!  each plane   ──scan──> line ranges; metadata maps and plane stats decoded first
//!                         (the file stores lines before metadata, but lines need it)
//!  all lines of all planes ──rayon, largest first──> line drafts (LineBuilder)
//!  PlaneBuilder::add_lines, file order: line-local strings and placeholder metadata
//!                         become plane-wide, so ids do not depend on thread count
//! ```
//!
//! Every decoded range can be handed back to the OS as soon as it is consumed
//! ([`ReleasePages`]), so decoding a memory-mapped file does not keep the whole file
//! resident next to the model.

use crate::error::{DecodeError, WireError};
use crate::wire::{Reader, WireType};
use oxprof_model::limits::{Limit, LimitExceeded, LoadLimits};
use oxprof_model::{
    BuildError, DiagnosticKind, Diagnostics, KeepPages, LineBuilder, LineDraft, MetadataIds, NewEventMetadata,
    PlaneBuilder, ReleasePages, SharedBudget, StatInput, StrId, XSpace,
};
use rayon::prelude::*;
use std::io::Read;

/// How often (in bytes) a long line hands consumed input back.
const RELEASE_EVERY: usize = 4 << 20;
/// Largest gunzipped `compressed_str_value` kept (larger ones are counted as bad and read
/// as ""); all of them together are bounded by [`LoadLimits::compressed_str_bytes`].
const MAX_DECOMPRESSED_STR: u64 = 256 << 20;

/// Decodes an XSpace from memory.
pub fn decode_xspace(buf: &[u8]) -> Result<XSpace, DecodeError> {
    decode_xspace_with(buf, &KeepPages)
}

/// Decodes an XSpace, reporting consumed ranges to `release`.
pub fn decode_xspace_with(buf: &[u8], release: &dyn ReleasePages) -> Result<XSpace, DecodeError> {
    decode_xspace_lines_of(buf, release, &|_| true)
}

/// Decodes an XSpace, with the lines (the events) of only the planes whose name passes
/// `lines_of`: the other planes keep their metadata and stats, no lines, and count the
/// lines left out in [`XPlane::lines_not_decoded`]. For questions about a profile that the
/// metadata answers (its HLO modules, which tools apply), at a fraction of a full decode.
/// Within the default [`LoadLimits`].
pub fn decode_xspace_lines_of(
    buf: &[u8],
    release: &dyn ReleasePages,
    lines_of: &dyn Fn(&str) -> bool,
) -> Result<XSpace, DecodeError> {
    decode_xspace_within(buf, release, lines_of, &LoadLimits::default())
}

/// [`decode_xspace_lines_of`] within explicit budgets: a buffer larger than
/// `limits.max_profile_bytes`, with more planes, lines or metadata entries than its size
/// allows, or whose compressed string stats inflate past their budget is refused with
/// [`DecodeError::LimitExceeded`], before the memory it would take is allocated.
pub fn decode_xspace_within(
    buf: &[u8],
    release: &dyn ReleasePages,
    lines_of: &dyn Fn(&str) -> bool,
    limits: &LoadLimits,
) -> Result<XSpace, DecodeError> {
    if buf.is_empty() {
        return Err(DecodeError::Empty);
    }
    let size = buf.len() as u64;
    if size > limits.max_profile_bytes {
        let exceeded = LimitExceeded { limit: Limit::ProfileBytes, allowed: limits.max_profile_bytes, at_least: size };
        return Err(DecodeError::LimitExceeded(exceeded));
    }
    let mut counts = ScanCounts {
        planes: Count::new(Limit::Planes, limits.planes.for_size(size)),
        lines: Count::new(Limit::Lines, limits.lines.for_size(size)),
        metadata: Count::new(Limit::MetadataEntries, limits.metadata_entries.for_size(size)),
    };
    let mut space = XSpace::default();
    let mut diag = Diagnostics::default();
    let mut plane_ranges = Vec::new();
    let mut known_fields = 0usize;
    let mut r = Reader::new(buf, 0);
    let ctx = |e: WireError| DecodeError::Wire { cause: e, context: "XSpace".into() };
    while !r.is_empty() {
        let (field, wt) = r.tag().map_err(ctx)?;
        match (field, wt) {
            (1, WireType::Len) => {
                counts.planes.add_one().map_err(DecodeError::LimitExceeded)?;
                plane_ranges.push(r.len_delimited().map_err(ctx)?);
                known_fields += 1;
            }
            (2..=4, WireType::Len) => {
                let (bytes, _) = r.len_delimited().map_err(ctx)?;
                let s = owned_utf8(bytes.to_vec(), &mut diag);
                match field {
                    2 => space.errors.push(s),
                    3 => space.warnings.push(s),
                    _ => space.hostnames.push(s),
                }
                known_fields += 1;
            }
            _ => {
                r.skip(field, wt).map_err(ctx)?;
                diag.add(DiagnosticKind::UnknownField, 1);
            }
        }
    }
    if known_fields == 0 {
        return Err(DecodeError::NotAnXSpace(buf.len()));
    }

    // Placeholders for metadata ids the file lacks count as metadata entries too.
    let budgets = Budgets {
        strings: SharedBudget::new(Limit::CompressedStrBytes, limits.compressed_str_bytes.for_size(size), 0),
        placeholders: SharedBudget::new(Limit::MetadataEntries, counts.metadata.allowed, counts.metadata.seen),
    };
    // Planes: scan and decode metadata (sequential; metadata is small).
    let mut scans = Vec::with_capacity(plane_ranges.len());
    for (i, &(bytes, base)) in plane_ranges.iter().enumerate() {
        let scan = scan_plane(bytes, base, &mut counts, &mut diag)
            .map_err(|e| e.into_decode_error(|| format!("XSpace.planes[{i}]")))?;
        scans.push(scan);
    }
    let mut builders = Vec::with_capacity(scans.len());
    let mut wanted = Vec::with_capacity(scans.len());
    for (i, scan) in scans.iter_mut().enumerate() {
        wanted.push(lines_of(&scan.name));
        let mut plane = decode_plane_metadata(scan, &budgets, &mut diag)
            .map_err(|e| e.into_decode_error(|| format!("XSpace.planes[{i}] metadata")))?;
        if !wanted[i] {
            plane.set_lines_not_decoded(scan.lines.len());
        }
        builders.push(plane);
    }

    // Lines of all planes (that are asked for), in parallel, largest first for balance.
    // Each line is decoded straight into its slot, which the plane then settles in place
    // (a table of decoded lines beside the planes' own doubled the memory of files made
    // of many small lines).
    let ids: Vec<MetadataIds> = builders.iter().map(PlaneBuilder::metadata_ids).collect();
    let mut drafts: Vec<Vec<LineDraft>> = Vec::with_capacity(scans.len());
    for (scan, &wanted) in scans.iter().zip(&wanted) {
        let slots = if wanted { scan.lines.len() } else { 0 };
        drafts.push(std::iter::repeat_with(LineDraft::default).take(slots).collect());
    }
    let mut jobs: Vec<(usize, usize, &[u8], usize, &mut LineDraft)> = Vec::new();
    for (p, (slots, scan)) in drafts.iter_mut().zip(&scans).enumerate() {
        let slots = slots.iter_mut().zip(&scan.lines).enumerate();
        jobs.extend(slots.map(|(l, (slot, &(bytes, base)))| (p, l, bytes, base, slot)));
    }
    jobs.sort_by_key(|&(p, l, bytes, _, _)| (std::cmp::Reverse(bytes.len()), p, l));
    let (ids_ref, budgets) = (&ids, &budgets);
    let mut first_failure = jobs
        .into_par_iter()
        .filter_map(|(p, l, bytes, base, slot)| match decode_line(bytes, base, &ids_ref[p], budgets, release) {
            Ok(draft) => {
                *slot = draft;
                None
            }
            Err(failure) => Some(((p, l), failure)),
        })
        .min_by_key(|&(position, _)| position);

    // Settle in file order; the first failure in file order wins, as in a sequential decode.
    let mut planes = Vec::with_capacity(builders.len());
    for (p, (mut plane, mut lines)) in builders.into_iter().zip(drafts).enumerate() {
        let failed_here = first_failure.as_ref().and_then(|&((fp, fl), _)| (fp == p).then_some(fl));
        if let Some(l) = failed_here {
            lines.truncate(l);
        }
        plane.add_lines(lines).map_err(|e| match e {
            BuildError::LimitExceeded(exceeded) => DecodeError::LimitExceeded(exceeded),
            BuildError::TooLarge(what) => DecodeError::TooLarge(what),
        })?;
        if let (Some(l), Some((_, failure))) = (failed_here, first_failure.take()) {
            return Err(failure.into_decode_error(|| format!("XSpace.planes[{p}].lines[{l}]")));
        }
        planes.push(plane.finish(&mut diag));
    }
    space.planes = planes;
    space.diagnostics = diag;
    Ok(space)
}

/// Why decoding stopped, before the context of the failing message is known.
enum Failure {
    Wire(WireError),
    Limit(LimitExceeded),
}

impl From<WireError> for Failure {
    fn from(e: WireError) -> Self {
        Failure::Wire(e)
    }
}

impl From<LimitExceeded> for Failure {
    fn from(e: LimitExceeded) -> Self {
        Failure::Limit(e)
    }
}

impl Failure {
    /// A builder's refusal of the item that starts at byte `offset`.
    fn of_build(e: BuildError, offset: usize) -> Failure {
        match e {
            BuildError::LimitExceeded(exceeded) => Failure::Limit(exceeded),
            BuildError::TooLarge(what) => Failure::Wire(WireError { offset: offset as u64, what }),
        }
    }

    fn into_decode_error(self, context: impl FnOnce() -> String) -> DecodeError {
        match self {
            Failure::Wire(cause) => DecodeError::Wire { cause, context: context() },
            Failure::Limit(exceeded) => DecodeError::LimitExceeded(exceeded),
        }
    }
}

/// Items of one kind met while scanning, against what the file's size allows.
struct Count {
    limit: Limit,
    allowed: u64,
    seen: u64,
}

impl Count {
    fn new(limit: Limit, allowed: u64) -> Self {
        Count { limit, allowed, seen: 0 }
    }

    /// Counts one more item; refuses it before the caller allocates anything for it.
    #[inline]
    fn add_one(&mut self) -> Result<(), LimitExceeded> {
        self.seen += 1;
        if self.seen > self.allowed {
            return Err(LimitExceeded { limit: self.limit, allowed: self.allowed, at_least: self.seen });
        }
        Ok(())
    }
}

/// The counted items of a file's scan.
struct ScanCounts {
    planes: Count,
    lines: Count,
    metadata: Count,
}

/// What the threads decoding lines may still spend, shared between them.
struct Budgets {
    /// Bytes of gunzipped string stats.
    strings: SharedBudget,
    /// Placeholder metadata entries (for ids events and stats use but the file lacks).
    placeholders: SharedBudget,
}

/// Bytes that should be UTF-8, as an owned string (invalid sequences replaced, counted).
/// Callers copy the bytes first and validate the copy: bytes of a mapped file can change
/// under us (another process writing it), so bytes validated in place could be invalid by
/// the time they were copied.
fn owned_utf8(bytes: Vec<u8>, diag: &mut Diagnostics) -> String {
    String::from_utf8(bytes).unwrap_or_else(|e| {
        diag.add(DiagnosticKind::InvalidUtf8, 1);
        String::from_utf8_lossy(e.as_bytes()).into_owned()
    })
}

/// Where a plane's parts are, before decoding them.
struct PlaneScan<'a> {
    id: i64,
    name: String,
    lines: Vec<(&'a [u8], usize)>,
    event_metadata: Vec<(&'a [u8], usize)>,
    stat_metadata: Vec<(&'a [u8], usize)>,
    stats: Vec<(&'a [u8], usize)>,
}

fn scan_plane<'a>(
    bytes: &'a [u8],
    base: usize,
    counts: &mut ScanCounts,
    diag: &mut Diagnostics,
) -> Result<PlaneScan<'a>, Failure> {
    let mut scan = PlaneScan {
        id: 0,
        name: String::new(),
        lines: Vec::new(),
        event_metadata: Vec::new(),
        stat_metadata: Vec::new(),
        stats: Vec::new(),
    };
    let mut r = Reader::new(bytes, base);
    while !r.is_empty() {
        match r.tag()? {
            (1, WireType::Varint) => scan.id = r.varint()? as i64,
            (2, WireType::Len) => scan.name = owned_utf8(r.len_delimited()?.0.to_vec(), diag),
            (3, WireType::Len) => {
                counts.lines.add_one()?;
                scan.lines.push(r.len_delimited()?);
            }
            (4, WireType::Len) => {
                counts.metadata.add_one()?;
                scan.event_metadata.push(r.len_delimited()?);
            }
            (5, WireType::Len) => {
                counts.metadata.add_one()?;
                scan.stat_metadata.push(r.len_delimited()?);
            }
            (6, WireType::Len) => scan.stats.push(r.len_delimited()?),
            (field, wt) => {
                r.skip(field, wt)?;
                diag.add(DiagnosticKind::UnknownField, 1);
            }
        }
    }
    Ok(scan)
}

/// Reads a map entry `{key = 1 (int64), value = 2 (message)}`: the key (last one wins)
/// and every occurrence of the value. Protobuf merges repeated occurrences of a singular
/// message field, so the caller decodes the returned segments in order into one value.
fn map_entry<'a>(bytes: &'a [u8], base: usize, diag: &mut Diagnostics) -> Result<(i64, MapValues<'a>), WireError> {
    let mut key = 0i64;
    let mut values = MapValues { first: (&[], base), rest: None };
    let mut r = Reader::new(bytes, base);
    while !r.is_empty() {
        match r.tag()? {
            (1, WireType::Varint) => key = r.varint()? as i64,
            (2, WireType::Len) => {
                let value = r.len_delimited()?;
                if values.first.0.is_empty() && values.rest.is_none() {
                    values.first = value;
                } else {
                    values.rest.get_or_insert_with(Vec::new).push(value);
                }
            }
            (field, wt) => {
                r.skip(field, wt)?;
                diag.add(DiagnosticKind::UnknownField, 1);
            }
        }
    }
    Ok((key, values))
}

/// The value segments of one map entry (almost always exactly one: no allocation then).
struct MapValues<'a> {
    first: (&'a [u8], usize),
    rest: Option<Vec<(&'a [u8], usize)>>,
}

impl<'a> MapValues<'a> {
    /// One reader per segment, in file order.
    fn readers(&self) -> impl Iterator<Item = Reader<'a>> + '_ {
        std::iter::once(self.first).chain(self.rest.iter().flatten().copied()).map(|(b, base)| Reader::new(b, base))
    }
}

fn decode_plane_metadata(
    scan: &mut PlaneScan<'_>,
    budgets: &Budgets,
    diag: &mut Diagnostics,
) -> Result<PlaneBuilder, Failure> {
    let mut plane = PlaneBuilder::new(scan.id, std::mem::take(&mut scan.name));
    plane.reserve(scan.event_metadata.len(), scan.stat_metadata.len(), 0);

    // Stat metadata first: every stat refers to it.
    for &(bytes, base) in &scan.stat_metadata {
        let (key, values) = map_entry(bytes, base, diag)?;
        let mut id = 0i64;
        let mut name = StrId::EMPTY;
        let mut description = StrId::EMPTY;
        for mut r in values.readers() {
            while !r.is_empty() {
                match r.tag()? {
                    (1, WireType::Varint) => id = r.varint()? as i64,
                    (2, WireType::Len) => name = plane.intern_utf8(r.len_delimited()?.0),
                    (3, WireType::Len) => description = plane.intern_utf8(r.len_delimited()?.0),
                    (field, wt) => {
                        r.skip(field, wt)?;
                        diag.add(DiagnosticKind::UnknownField, 1);
                    }
                }
            }
        }
        plane.add_stat_metadata(key, id, name, description).map_err(|e| Failure::of_build(e, base))?;
    }

    // Event metadata, with their stats.
    for &(bytes, base) in &scan.event_metadata {
        let (key, values) = map_entry(bytes, base, diag)?;
        let mut entry = NewEventMetadata::default();
        let mut child_ids = Vec::new();
        for mut r in values.readers() {
            while !r.is_empty() {
                match r.tag()? {
                    (1, WireType::Varint) => entry.id = r.varint()? as i64,
                    (2, WireType::Len) => entry.name = plane.intern_utf8(r.len_delimited()?.0),
                    (4, WireType::Len) => entry.display_name = plane.intern_utf8(r.len_delimited()?.0),
                    (3, WireType::Len) => entry.metadata = r.len_delimited()?.0.into(),
                    (5, WireType::Len) => {
                        let (b, off) = r.len_delimited()?;
                        decode_owned_stat(b, off, &mut plane, StatTarget::Metadata, budgets, diag)?;
                    }
                    (6, WireType::Varint) => child_ids.push(r.varint()? as i64),
                    (6, WireType::Len) => {
                        let (b, off) = r.len_delimited()?;
                        let mut packed = Reader::new(b, off);
                        while !packed.is_empty() {
                            child_ids.push(packed.varint()? as i64);
                        }
                    }
                    (field, wt) => {
                        r.skip(field, wt)?;
                        diag.add(DiagnosticKind::UnknownField, 1);
                    }
                }
            }
        }
        entry.child_ids = child_ids.into();
        plane.add_event_metadata(key, entry).map_err(|e| Failure::of_build(e, base))?;
    }

    for &(bytes, base) in &scan.stats {
        decode_owned_stat(bytes, base, &mut plane, StatTarget::Plane, budgets, diag)?;
    }
    Ok(plane)
}

#[derive(Clone, Copy)]
enum StatTarget {
    Metadata,
    Plane,
}

/// Decodes one stat of a metadata entry or of the plane (strings go to the plane table).
fn decode_owned_stat(
    bytes: &[u8],
    base: usize,
    plane: &mut PlaneBuilder,
    target: StatTarget,
    budgets: &Budgets,
    diag: &mut Diagnostics,
) -> Result<(), Failure> {
    let raw = read_stat(Reader::new(bytes, base), diag)?;
    let gunzipped;
    let value = match raw.value {
        StatPayload::Value(v) => v,
        StatPayload::Str(s) => StatInput::Utf8(s),
        StatPayload::Compressed(c) => {
            gunzipped = gunzip_str(c, &budgets.strings, diag)?;
            StatInput::Str(&gunzipped)
        }
        StatPayload::Bytes(b) => StatInput::Bytes(b),
    };
    let added = match target {
        StatTarget::Metadata => plane.add_metadata_stat(raw.metadata_id, value, &budgets.placeholders),
        StatTarget::Plane => plane.add_plane_stat(raw.metadata_id, value, &budgets.placeholders),
    };
    added.map_err(|e| Failure::of_build(e, base))
}

/// Gunzips a `compressed_str_value`, chunk by chunk against the file's budget (so a
/// dozen strings that each inflate to hundreds of megabytes stop at the budget). One that
/// is not gzip or inflates past [`MAX_DECOMPRESSED_STR`] reads as "" and is counted.
fn gunzip_str(bytes: &[u8], budget: &SharedBudget, diag: &mut Diagnostics) -> Result<String, LimitExceeded> {
    let mut gz = flate2::read::GzDecoder::new(bytes).take(MAX_DECOMPRESSED_STR + 1);
    let mut out = Vec::new();
    let mut chunk = [0u8; 16 << 10];
    loop {
        match gz.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => {
                budget.spend(n)?;
                out.extend_from_slice(&chunk[..n]);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => {
                diag.add(DiagnosticKind::BadCompressedString, 1);
                return Ok(String::new());
            }
        }
    }
    if out.len() as u64 > MAX_DECOMPRESSED_STR {
        diag.add(DiagnosticKind::BadCompressedString, 1);
        return Ok(String::new());
    }
    Ok(owned_utf8(out, diag))
}

enum StatPayload<'a> {
    Value(StatInput<'a>),
    Str(&'a [u8]),
    Bytes(&'a [u8]),
    Compressed(&'a [u8]),
}

struct RawStat<'a> {
    metadata_id: i64,
    value: StatPayload<'a>,
}

/// Reads one `XStat` message. The value oneof keeps the last value field, as protobuf does.
#[inline(always)]
fn read_stat<'a>(mut r: Reader<'a>, diag: &mut Diagnostics) -> Result<RawStat<'a>, WireError> {
    let mut stat = RawStat { metadata_id: 0, value: StatPayload::Value(StatInput::Unset) };
    while !r.is_empty() {
        // Keys: field << 3 | wire type (0 varint, 1 fixed64, 2 length-delimited).
        match r.key()? {
            0x08 => stat.metadata_id = r.varint()? as i64,
            0x11 => stat.value = StatPayload::Value(StatInput::Double(f64::from_bits(r.fixed64()?))),
            0x18 => stat.value = StatPayload::Value(StatInput::Uint64(r.varint()?)),
            0x20 => stat.value = StatPayload::Value(StatInput::Int64(r.varint()? as i64)),
            0x2a => stat.value = StatPayload::Str(r.len_delimited()?.0),
            0x32 => stat.value = StatPayload::Bytes(r.len_delimited()?.0),
            0x38 => stat.value = StatPayload::Value(StatInput::Ref(r.varint()?)),
            0x42 => stat.value = StatPayload::Compressed(r.len_delimited()?.0),
            key => {
                let (field, wt) = r.split_key(key)?;
                r.skip(field, wt)?;
                diag.add(DiagnosticKind::UnknownField, 1);
            }
        }
    }
    Ok(stat)
}

/// Decodes one line into a draft for its plane to settle.
fn decode_line(
    bytes: &[u8],
    base: usize,
    ids: &MetadataIds,
    budgets: &Budgets,
    release: &dyn ReleasePages,
) -> Result<LineDraft, Failure> {
    let mut line = LineBuilder::new(ids, &budgets.placeholders, bytes.len() / 32);
    let mut released_to = base;
    let mut r = Reader::new(bytes, base);
    while !r.is_empty() {
        match r.tag()? {
            (1, WireType::Varint) => line.set_id(r.varint()? as i64),
            (10, WireType::Varint) => line.set_display_id(r.varint()? as i64),
            (2, WireType::Len) => {
                let name = owned_utf8(r.len_delimited()?.0.to_vec(), line.diagnostics_mut());
                line.set_name(name);
            }
            (11, WireType::Len) => {
                let name = owned_utf8(r.len_delimited()?.0.to_vec(), line.diagnostics_mut());
                line.set_display_name(name);
            }
            (3, WireType::Varint) => line.set_timestamp_ns(r.varint()? as i64),
            (9, WireType::Varint) => line.set_duration_ps(r.varint()? as i64),
            (4, WireType::Len) => {
                let event = r.nested()?;
                decode_event(event, ids, budgets, &mut line)?;
                if r.offset() - released_to >= RELEASE_EVERY {
                    release.release(released_to..r.offset());
                    released_to = r.offset();
                }
            }
            (field, wt) => {
                r.skip(field, wt)?;
                line.diagnostics_mut().add(DiagnosticKind::UnknownField, 1);
            }
        }
    }
    release.release(released_to..base + bytes.len());
    Ok(line.finish())
}

/// Adds a `compressed_str_value` stat (rare: kept out of the hot loop).
#[cold]
fn push_compressed(
    line: &mut LineBuilder<'_>,
    ids: &MetadataIds,
    metadata_id: i64,
    compressed: &[u8],
    budgets: &Budgets,
    offset: usize,
) -> Result<(), Failure> {
    let text = gunzip_str(compressed, &budgets.strings, line.diagnostics_mut())?;
    line.push_stat(ids, metadata_id, StatInput::Str(&text)).map_err(|e| Failure::of_build(e, offset))
}

#[inline]
fn decode_event(
    mut r: Reader<'_>,
    ids: &MetadataIds,
    budgets: &Budgets,
    line: &mut LineBuilder<'_>,
) -> Result<(), Failure> {
    let mut metadata_id = 0i64;
    let mut offset_ps = 0i64;
    let mut occurrences: Option<i64> = None;
    let mut duration_ps = 0i64;
    let base = r.offset();
    while !r.is_empty() {
        // Keys: field << 3 | wire type (0 varint, 2 length-delimited).
        match r.key()? {
            0x08 => metadata_id = r.varint()? as i64,
            0x10 => {
                offset_ps = r.varint()? as i64;
                occurrences = None;
            }
            0x28 => {
                occurrences = Some(r.varint()? as i64);
                offset_ps = 0;
            }
            0x18 => duration_ps = r.varint()? as i64,
            0x22 => {
                let stat_reader = r.nested()?;
                let sbase = stat_reader.offset();
                let stat = read_stat(stat_reader, line.diagnostics_mut())?;
                let value = match stat.value {
                    StatPayload::Value(v) => v,
                    StatPayload::Str(s) => StatInput::Utf8(s),
                    StatPayload::Bytes(b) => StatInput::Bytes(b),
                    StatPayload::Compressed(c) => {
                        push_compressed(line, ids, stat.metadata_id, c, budgets, sbase)?;
                        continue;
                    }
                };
                line.push_stat(ids, stat.metadata_id, value).map_err(|e| Failure::of_build(e, sbase))?;
            }
            key => {
                let (field, wt) = r.split_key(key)?;
                r.skip(field, wt)?;
                line.diagnostics_mut().add(DiagnosticKind::UnknownField, 1);
            }
        }
    }
    let pushed = match occurrences {
        Some(n) => line.push_aggregated_event(ids, metadata_id, n, duration_ps),
        None => line.push_event(ids, metadata_id, offset_ps, duration_ps),
    };
    pushed.map_err(|e| Failure::of_build(e, base))
}

#[cfg(test)]
mod tests {
    /// Protobuf wire helpers for hand-written inputs the builders cannot produce.
    fn varint(mut v: u64, out: &mut Vec<u8>) {
        while v >= 0x80 {
            out.push(v as u8 | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }
    fn field_varint(field: u64, v: u64) -> Vec<u8> {
        let mut out = Vec::new();
        varint(field << 3, &mut out);
        varint(v, &mut out);
        out
    }
    fn field_bytes(field: u64, bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        varint(field << 3 | 2, &mut out);
        varint(bytes.len() as u64, &mut out);
        out.extend_from_slice(bytes);
        out
    }

    /// A map entry whose value field occurs twice is one value merged from both, as
    /// protobuf reads it: later scalars win, repeated fields (stats, child ids) append.
    #[test]
    fn a_map_value_given_twice_is_merged_as_protobuf_merges_it() {
        let stat_value_a =
            [field_varint(1, 5), field_bytes(2, b"kernel_details"), field_bytes(3, b"launch details")].concat();
        let stat_value_b = [field_varint(1, 6), field_bytes(2, b"renamed")].concat();
        let stat_entry =
            [field_varint(1, 5), field_bytes(2, &stat_value_a), field_varint(1, 6), field_bytes(2, &stat_value_b)]
                .concat();
        let event_value_a = [
            field_varint(1, 1),
            field_bytes(2, b"first"),
            field_bytes(4, b"shown"),
            field_varint(6, 7),
            field_bytes(5, &[field_varint(1, 6), field_varint(4, 3)].concat()),
        ]
        .concat();
        let event_value_b = [field_bytes(2, b"second"), field_varint(6, 8)].concat();
        let event_entry = [field_varint(1, 1), field_bytes(2, &event_value_a), field_bytes(2, &event_value_b)].concat();
        let plane = [field_bytes(2, b"/host:CPU"), field_bytes(5, &stat_entry), field_bytes(4, &event_entry)].concat();
        let bytes = field_bytes(1, &plane);

        assert_eq!(oxprof_testkit::crosscheck(&bytes), Ok(true));
        let space = super::decode_xspace(&bytes).unwrap();
        let plane = &space.planes[0];
        let stat = &plane.stat_metadata()[0];
        assert_eq!((stat.id, plane.str(stat.name), plane.str(stat.description)), (6, "renamed", "launch details"));
        let id = plane.event_metadata_ids().next().unwrap();
        let event = plane.event_metadata_at(id);
        assert_eq!((event.id, plane.str(event.name), plane.str(event.display_name)), (1, "second", "shown"));
        assert_eq!(&*event.child_ids, &[7, 8]);
        assert_eq!(plane.metadata_stats(id).len(), 1);
    }
}
