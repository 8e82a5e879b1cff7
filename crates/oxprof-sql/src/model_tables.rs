//! The model tables of one host (`slice`, `track`, `process_track`, `thread_track`,
//! `counter`, `flow`, `args`, `devices`, `memory_events`) built straight from its decoded
//! [`XSpace`]: names are dictionary columns over each plane's own metadata names (no
//! string is copied per event), `run` and `host` one-value dictionaries.
//!
//! Only the columns a query reads are built ([`Projection`]): a `GROUP BY name` over
//! `slice` builds two of its fourteen columns, and nesting (a sort per track) or the stat
//! walks run only when their columns are asked for.
//!
//! Ids follow the model's order, so they are the same whichever table is built first and
//! on whichever machine: events numbered plane by plane, line by line, in stored order;
//! tracks numbered plane (process track) then its lines (thread tracks).

use crate::schema::{ColumnType, TableDef};
use datafusion::arrow::array::{
    ArrayRef, DictionaryArray, Float64Builder, Int32Array, Int64Array, Int64Builder, RecordBatch, StringArray,
    StringBuilder, StringDictionaryBuilder,
};
use datafusion::arrow::datatypes::{DataType, Field, Int32Type, Schema, SchemaRef};
use datafusion::arrow::error::ArrowError;
use oxprof_model::schema::{CUSTOM_PLANE_PREFIX, GPU_PLANE_PREFIX, HOST_THREADS_PLANE_NAME, TPU_PLANE_PREFIX};
use oxprof_model::{StatValue, XPlane, XSpace};
use std::collections::HashMap;
use std::sync::Arc;

/// Which run and host a table's rows belong to.
#[derive(Debug, Clone, Copy)]
pub struct HostKey<'a> {
    /// The run's name.
    pub run: &'a str,
    /// The host's name.
    pub host: &'a str,
}

/// The Arrow schema of a table the schema module declares with fixed columns.
pub fn arrow_schema(def: &TableDef) -> SchemaRef {
    let fields: Vec<Field> = def
        .columns
        .iter()
        .map(|c| {
            let ty = match c.ty {
                ColumnType::Int => DataType::Int64,
                ColumnType::SmallInt => DataType::Int32,
                ColumnType::Real => DataType::Float64,
                ColumnType::Text => DataType::Utf8,
                ColumnType::Label => label_type(),
            };
            Field::new(c.name, ty, c.nullable)
        })
        .collect();
    Arc::new(Schema::new(fields))
}

/// Strings whose values repeat: Int32 keys into a per-batch dictionary.
pub fn label_type() -> DataType {
    DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8))
}

/// A column of `len` rows all equal to `value`, as a one-value dictionary.
pub fn constant_label(value: &str, len: usize) -> ArrayRef {
    let keys = Int32Array::from(vec![0; len]);
    let values = Arc::new(StringArray::from(vec![value]));
    Arc::new(DictionaryArray::<Int32Type>::new(keys, values))
}

/// Which columns of a table to build, in the order the batches carry them, and how many
/// rows are enough (a pushed-down `LIMIT` without filters).
#[derive(Debug, Clone)]
pub struct Projection {
    def: &'static TableDef,
    /// Indices into `def.columns`, in output order.
    indices: Vec<usize>,
    schema: SchemaRef,
    /// Rows after which building may stop (at a batch boundary).
    pub limit: Option<usize>,
}

impl Projection {
    /// Every column, every row.
    #[cfg(test)]
    pub fn all(def: &'static TableDef) -> Projection {
        Projection::new(def, None, None)
    }

    /// The columns `indices` (into `def.columns`; `None`: all), at least `limit` rows.
    pub fn new(def: &'static TableDef, indices: Option<&[usize]>, limit: Option<usize>) -> Projection {
        let full = arrow_schema(def);
        let indices: Vec<usize> = match indices {
            Some(i) => i.iter().copied().filter(|&i| i < def.columns.len()).collect(),
            None => (0..def.columns.len()).collect(),
        };
        let schema = Arc::new(Schema::new(indices.iter().map(|&i| full.field(i).clone()).collect::<Vec<_>>()));
        Projection { def, indices, schema, limit }
    }

    /// The table's name.
    pub fn table(&self) -> &'static str {
        self.def.name
    }

    /// The schema of the batches it builds.
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// The column indices it builds, in output order.
    pub fn indices(&self) -> &[usize] {
        &self.indices
    }

    /// Whether the column `name` is built.
    pub fn wants(&self, name: &str) -> bool {
        self.indices.iter().any(|&i| self.def.columns[i].name == name)
    }

    /// Whether enough rows are built.
    fn enough(&self, rows: usize) -> bool {
        self.limit.is_some_and(|l| rows >= l)
    }
}

/// Builds `p`'s table's batches for one host; `None` for a table not built from the model.
#[cfg(test)]
pub fn build(p: &Projection, space: &XSpace, key: HostKey<'_>) -> Option<Result<Vec<RecordBatch>, ArrowError>> {
    let mut batches = Vec::new();
    let done = build_each(p, space, key, &mut |b| {
        batches.push(b);
        true
    })?;
    Some(done.map(|()| batches))
}

/// As [`build`], handing each batch to `emit` as soon as it is built (bounded batches for
/// `slice` and `args`, so a reader that aggregates never holds the whole table);
/// stops early when `emit` returns false (the reader is gone).
pub fn build_each(
    p: &Projection,
    space: &XSpace,
    key: HostKey<'_>,
    emit: &mut dyn FnMut(RecordBatch) -> bool,
) -> Option<Result<(), ArrowError>> {
    let whole = match p.def.name {
        "slice" => return Some(slice(space, key, p, emit)),
        "args" => return Some(args(space, key, p, emit)),
        "track" => tracks(space, key, p, TrackTable::All),
        "process_track" => tracks(space, key, p, TrackTable::Process),
        "thread_track" => tracks(space, key, p, TrackTable::Thread),
        "devices" => tracks(space, key, p, TrackTable::Devices),
        "counter" => counter(space, key, p),
        "flow" => flow(space, key, p),
        "memory_events" => memory_events(space, key, p),
        _ => return None,
    };
    Some(whole.map(|batches| {
        for b in batches {
            if !emit(b) {
                break;
            }
        }
    }))
}

/// Picks the projected columns out of `columns` (every column before `run` and `host`, in
/// the schema's order; `None` for one not built), adds `run` and `host` when asked for,
/// and makes the batch.
fn finish(
    p: &Projection,
    mut columns: Vec<Option<ArrayRef>>,
    rows: usize,
    key: HostKey<'_>,
) -> Result<RecordBatch, ArrowError> {
    columns.push(p.wants("run").then(|| constant_label(key.run, rows)));
    columns.push(p.wants("host").then(|| constant_label(key.host, rows)));
    let picked =
        p.indices
            .iter()
            .map(|&i| {
                columns.get(i).cloned().flatten().ok_or_else(|| {
                    ArrowError::InvalidArgumentError(format!("column {} of {} not built", i, p.def.name))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
    let options = datafusion::arrow::array::RecordBatchOptions::new().with_row_count(Some(rows));
    RecordBatch::try_new_with_options(p.schema.clone(), picked, &options)
}

/// Every column built (for the small tables, built whole and projected after).
fn all(columns: Vec<ArrayRef>) -> Vec<Option<ArrayRef>> {
    columns.into_iter().map(Some).collect()
}

/// Per plane, the dense ids of the stat metadata named `names` (in that order of preference).
fn stat_ids(plane: &XPlane, names: &[&str]) -> Vec<Option<usize>> {
    names.iter().map(|n| plane.stat_metadata_named(n).map(|id| id.index())).collect()
}

/// Rows of a `slice` batch: batches are handed over at this size (whole tracks per batch
/// when depth or parent is asked for, since nesting needs a track's events together, then
/// sliced to this size).
const SLICE_BATCH_ROWS: usize = 64 * 1024;

/// The columns of `slice` being filled for one batch (only the wanted ones grow).
#[derive(Default)]
struct SliceColumns {
    id: Vec<i64>,
    ts: Vec<i64>,
    dur: Vec<i64>,
    ts_ps: Vec<i64>,
    dur_ps: Vec<i64>,
    track: Vec<i64>,
    name_keys: Vec<i32>,
    category: StringDictionaryBuilder<Int32Type>,
    depth: Vec<i32>,
    parent: Vec<Option<i64>>,
    arg_set: Int64Builder,
    group: Int64Builder,
    rows: usize,
}

impl SliceColumns {
    /// The batch of what was filled (the wanted columns of `p`), leaving it empty.
    fn take(&mut self, p: &Projection, names: &Arc<StringArray>, key: HostKey<'_>) -> Result<RecordBatch, ArrowError> {
        let mut c = std::mem::take(self);
        let want = |name: &str| p.wants(name);
        let ints = |name: &str, v: Vec<i64>| want(name).then(|| Arc::new(Int64Array::from(v)) as ArrayRef);
        let name = if want("name") {
            Some(Arc::new(DictionaryArray::<Int32Type>::try_new(Int32Array::from(c.name_keys), names.clone())?)
                as ArrayRef)
        } else {
            None
        };
        let columns: Vec<Option<ArrayRef>> = vec![
            ints("id", c.id),
            ints("ts", c.ts),
            ints("dur", c.dur),
            ints("ts_ps", c.ts_ps),
            ints("dur_ps", c.dur_ps),
            ints("track_id", c.track),
            name,
            want("category").then(|| Arc::new(c.category.finish()) as ArrayRef),
            want("depth").then(|| Arc::new(Int32Array::from(c.depth)) as ArrayRef),
            want("parent_id").then(|| Arc::new(Int64Array::from(c.parent)) as ArrayRef),
            want("arg_set_id").then(|| Arc::new(c.arg_set.finish()) as ArrayRef),
            want("group_id").then(|| Arc::new(c.group.finish()) as ArrayRef),
        ];
        finish(p, columns, c.rows, key)
    }
}

/// `slice`: batches of at most [`SLICE_BATCH_ROWS`] rows, built with only `p`'s columns
/// (with depth or parent, built a whole track at a time and sliced).
fn slice(
    space: &XSpace,
    key: HostKey<'_>,
    p: &Projection,
    emit: &mut dyn FnMut(RecordBatch) -> bool,
) -> Result<(), ArrowError> {
    let [w_id, w_ts, w_dur, w_ts_ps, w_dur_ps, w_track, w_name, w_category, w_depth, w_parent, w_arg_set, w_group] = [
        "id",
        "ts",
        "dur",
        "ts_ps",
        "dur_ps",
        "track_id",
        "name",
        "category",
        "depth",
        "parent_id",
        "arg_set_id",
        "group_id",
    ]
    .map(|c| p.wants(c));
    let w_nest = w_depth || w_parent;
    let mut next_id: i64 = 0;
    let mut next_track: i64 = 0;
    let mut built_rows = 0usize;
    let mut c = SliceColumns::default();
    // One track's spans, for nesting.
    let (mut line_ts, mut line_dur) = (Vec::new(), Vec::new());
    'planes: for plane in &space.planes {
        next_track += 1; // the plane's process track
        if plane.event_count() == 0 {
            next_track += plane.lines.len() as i64;
            continue;
        }
        let names: Arc<StringArray> = Arc::new(if w_name {
            plane.event_metadata().iter().map(|m| Some(plane.str(m.name))).collect()
        } else {
            StringArray::from(Vec::<&str>::new())
        });
        let category_ids = if w_category { stat_ids(plane, &["hlo_category", "category"]) } else { Vec::new() };
        let group_stat = plane.stat_metadata_named("group_id").filter(|_| w_group).map(|id| id.index());
        let last_line = plane.lines.len().saturating_sub(1);
        for (line_index, line) in plane.lines.iter().enumerate() {
            let track_id = next_track;
            next_track += 1;
            let (first_row, first_id) = (c.rows, next_id);
            line_ts.clear();
            line_dur.clear();
            for e in line.events(plane) {
                let start = e.timestamp_ps();
                let d = e.duration_ps();
                if w_id {
                    c.id.push(next_id);
                }
                if w_ts {
                    c.ts.push(start.div_euclid(1000));
                }
                if w_dur {
                    c.dur.push(d.div_euclid(1000));
                }
                if w_ts_ps {
                    c.ts_ps.push(start);
                }
                if w_dur_ps {
                    c.dur_ps.push(d);
                }
                if w_track {
                    c.track.push(track_id);
                }
                if w_name {
                    c.name_keys.push(e.metadata_id().index() as i32);
                }
                if w_nest {
                    line_ts.push(start);
                    line_dur.push(d);
                }
                if w_arg_set {
                    c.arg_set.append_option((!e.stats().is_empty()).then_some(next_id));
                }
                if w_group {
                    let g = group_stat
                        .and_then(|gid| e.stats().find(|s| s.metadata_id().index() == gid))
                        .and_then(|s| s.as_i64());
                    c.group.append_option(g);
                }
                if w_category {
                    let mut cat = None;
                    if category_ids.iter().any(Option::is_some) {
                        cat = e
                            .metadata_stats()
                            .chain(e.stats())
                            .find(|s| category_ids.contains(&Some(s.metadata_id().index())))
                            .and_then(|s| s.as_str());
                    }
                    c.category.append_option(cat);
                }
                next_id += 1;
                c.rows += 1;
                if !w_nest && c.rows >= SLICE_BATCH_ROWS {
                    // Without nesting a track needs no rows together: batches stay small
                    // however long the track.
                    built_rows += c.rows;
                    if !emit(c.take(p, &names, key)?) || p.enough(built_rows) {
                        break 'planes;
                    }
                }
            }
            if w_nest {
                c.depth.resize(c.rows, 0);
                c.parent.resize(c.rows, None);
                nest(&line_ts, &line_dur, first_id, &mut c.depth[first_row..], &mut c.parent[first_row..]);
            }
            // A batch per plane at least (the name dictionary is the plane's), handed over in
            // slices of at most SLICE_BATCH_ROWS rows: a track of millions of events would
            // otherwise reach the plan as one batch, and operators that copy a batch's rows
            // (a GROUP BY's row format) would hold all of them at once.
            if c.rows > 0 && (c.rows >= SLICE_BATCH_ROWS || line_index == last_line) {
                built_rows += c.rows;
                let batch = c.take(p, &names, key)?;
                let mut offset = 0;
                while offset < batch.num_rows() {
                    let len = SLICE_BATCH_ROWS.min(batch.num_rows() - offset);
                    if !emit(batch.slice(offset, len)) {
                        break 'planes;
                    }
                    offset += len;
                }
                if p.enough(built_rows) {
                    // Ids and tracks after this point are not needed: nothing more is built.
                    break 'planes;
                }
            }
        }
    }
    Ok(())
}

/// Depth and parent of each event of one track: the innermost earlier-starting event
/// whose span holds it.
///
/// ```text
/// A [----------------]        depth 0
/// B   [------]   C [---]      depth 1, parent A
/// D    [--]                   depth 2, parent B
/// ```
/// Events of a track have consecutive ids from `first_id`.
fn nest(ts: &[i64], dur: &[i64], first_id: i64, depth: &mut [i32], parent: &mut [Option<i64>]) {
    let mut order: Vec<usize> = (0..ts.len()).collect();
    // Outer events first when two start together.
    order.sort_by_key(|&i| (ts[i], std::cmp::Reverse(dur[i]), i));
    let mut open: Vec<(i64, usize)> = Vec::new(); // (end, index)
    for i in order {
        let end = ts[i].saturating_add(dur[i].max(0));
        while let Some(&(top_end, _)) = open.last() {
            // Ended before it starts, or ends before it does (overlap, not nesting).
            if top_end <= ts[i] || top_end < end {
                open.pop();
            } else {
                break;
            }
        }
        depth[i] = open.len() as i32;
        parent[i] = open.last().map(|&(_, p)| first_id + p as i64);
        open.push((end, i));
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TrackTable {
    All,
    Process,
    Thread,
    Devices,
}

fn device_kind(plane: &str) -> Option<&'static str> {
    if plane.starts_with(GPU_PLANE_PREFIX) {
        Some("gpu")
    } else if plane.starts_with(TPU_PLANE_PREFIX) {
        Some("tpu")
    } else if plane.starts_with(CUSTOM_PLANE_PREFIX) {
        Some("custom")
    } else {
        None
    }
}

/// `track`, `process_track`, `thread_track` and `devices`: one batch.
fn tracks(space: &XSpace, key: HostKey<'_>, p: &Projection, which: TrackTable) -> Result<Vec<RecordBatch>, ArrowError> {
    let mut ids = Int64Builder::new();
    let mut names = StringBuilder::new();
    let mut kinds = StringBuilder::new();
    let mut parents = Int64Builder::new();
    let mut file_ids = Int64Builder::new();
    let mut display_ids = Int64Builder::new();
    let mut line_counts = Int64Builder::new();
    let mut event_counts = Int64Builder::new();
    let mut next: i64 = 0;
    let mut rows = 0usize;
    for plane in &space.planes {
        let plane_track = next;
        next += 1;
        let wanted = match which {
            TrackTable::All | TrackTable::Process => true,
            TrackTable::Devices => device_kind(&plane.name).is_some(),
            TrackTable::Thread => false,
        };
        if wanted {
            rows += 1;
            match which {
                TrackTable::All => {
                    ids.append_value(plane_track);
                    names.append_value(&plane.name);
                    kinds.append_value("process");
                    parents.append_null();
                }
                TrackTable::Process => {
                    ids.append_value(plane_track);
                    names.append_value(&plane.name);
                    file_ids.append_value(plane.id);
                    line_counts.append_value(plane.lines.len() as i64);
                    event_counts.append_value(plane.event_count() as i64);
                }
                TrackTable::Devices => {
                    file_ids.append_value(plane.id);
                    names.append_value(&plane.name);
                    kinds.append_value(device_kind(&plane.name).unwrap_or("custom"));
                    ids.append_value(plane_track);
                    event_counts.append_value(plane.event_count() as i64);
                }
                TrackTable::Thread => {}
            }
        }
        for line in &plane.lines {
            let line_track = next;
            next += 1;
            match which {
                TrackTable::All => {
                    ids.append_value(line_track);
                    names.append_value(line.display_name_or_name());
                    kinds.append_value("thread");
                    parents.append_value(plane_track);
                }
                TrackTable::Thread => {
                    ids.append_value(line_track);
                    names.append_value(line.display_name_or_name());
                    parents.append_value(plane_track);
                    file_ids.append_value(line.id);
                    display_ids.append_value(line.display_id);
                    event_counts.append_value(line.event_count() as i64);
                }
                TrackTable::Process | TrackTable::Devices => continue,
            }
            rows += 1;
        }
    }
    let columns: Vec<ArrayRef> = match which {
        TrackTable::All => {
            vec![Arc::new(ids.finish()), Arc::new(names.finish()), Arc::new(kinds.finish()), Arc::new(parents.finish())]
        }
        TrackTable::Process => vec![
            Arc::new(ids.finish()),
            Arc::new(names.finish()),
            Arc::new(file_ids.finish()),
            Arc::new(line_counts.finish()),
            Arc::new(event_counts.finish()),
        ],
        TrackTable::Thread => vec![
            Arc::new(ids.finish()),
            Arc::new(names.finish()),
            Arc::new(parents.finish()),
            Arc::new(file_ids.finish()),
            Arc::new(display_ids.finish()),
            Arc::new(event_counts.finish()),
        ],
        TrackTable::Devices => vec![
            Arc::new(file_ids.finish()),
            Arc::new(names.finish()),
            Arc::new(kinds.finish()),
            Arc::new(ids.finish()),
            Arc::new(event_counts.finish()),
        ],
    };
    Ok(vec![finish(p, all(columns), rows, key)?])
}

/// Walks every event with its slice id and track id.
fn for_each_event<'a>(
    space: &'a XSpace,
    mut visit: impl FnMut(&'a XPlane, &'a oxprof_model::XLine, oxprof_model::Event<'a>, i64, i64),
) {
    let mut next_id: i64 = 0;
    let mut next_track: i64 = 0;
    for plane in &space.planes {
        next_track += 1;
        for line in &plane.lines {
            let track = next_track;
            next_track += 1;
            for e in line.events(plane) {
                visit(plane, line, e, next_id, track);
                next_id += 1;
            }
        }
    }
}

/// XProf's counter lines.
const COUNTER_LINE_NAME: &str = "_counters_";

/// `counter`: the samples of `_counters_` lines.
fn counter(space: &XSpace, key: HostKey<'_>, p: &Projection) -> Result<Vec<RecordBatch>, ArrowError> {
    let (mut id, mut ts, mut ts_ps, mut track) =
        (Int64Builder::new(), Int64Builder::new(), Int64Builder::new(), Int64Builder::new());
    let mut names = StringDictionaryBuilder::<Int32Type>::new();
    let mut values = Float64Builder::new();
    let mut rows = 0;
    for_each_event(space, |_, line, e, slice_id, track_id| {
        if line.name != COUNTER_LINE_NAME {
            return;
        }
        id.append_value(slice_id);
        ts.append_value(e.timestamp_ps().div_euclid(1000));
        ts_ps.append_value(e.timestamp_ps());
        track.append_value(track_id);
        names.append_value(e.name());
        values.append_option(e.stats().find_map(|s| s.as_f64()));
        rows += 1;
    });
    let columns: Vec<ArrayRef> = vec![
        Arc::new(id.finish()),
        Arc::new(ts.finish()),
        Arc::new(ts_ps.finish()),
        Arc::new(track.finish()),
        Arc::new(names.finish()),
        Arc::new(values.finish()),
    ];
    Ok(vec![finish(p, all(columns), rows, key)?])
}

/// `flow`: `flow` stats chained in time order per flow id (start → … → end), and
/// host events → device events sharing a `correlation_id`.
fn flow(space: &XSpace, key: HostKey<'_>, p: &Projection) -> Result<Vec<RecordBatch>, ArrowError> {
    // flow id → (ts, slice id) of its events.
    let mut flows: HashMap<u64, Vec<(i64, i64)>> = HashMap::new();
    // correlation id → (host events, device events).
    let mut correlated: HashMap<u64, (Vec<i64>, Vec<i64>)> = HashMap::new();
    let mut plane_ids: Option<(*const XPlane, Option<usize>, Option<usize>)> = None;
    for_each_event(space, |plane, _, e, slice_id, _| {
        let cached = plane_ids.filter(|(p, _, _)| std::ptr::eq(*p, plane));
        let (_, flow_stat, corr_stat) = cached.unwrap_or_else(|| {
            let ids = (
                plane as *const XPlane,
                plane.stat_metadata_named("flow").map(|i| i.index()),
                plane.stat_metadata_named("correlation_id").map(|i| i.index()),
            );
            plane_ids = Some(ids);
            ids
        });
        if flow_stat.is_none() && corr_stat.is_none() {
            return;
        }
        for s in e.stats() {
            let m = Some(s.metadata_id().index());
            if m == flow_stat {
                if let Some(v) = s.as_u64().filter(|v| v & 3 != 0) {
                    flows.entry((v >> 2) & ((1 << 56) - 1)).or_default().push((e.timestamp_ps(), slice_id));
                }
            } else if m == corr_stat
                && let Some(c) = s.as_u64()
            {
                let entry = correlated.entry(c).or_default();
                if plane.name.starts_with(HOST_THREADS_PLANE_NAME) {
                    entry.0.push(slice_id);
                } else if device_kind(&plane.name).is_some() {
                    entry.1.push(slice_id);
                }
            }
        }
    });
    let (mut out, mut inn, mut fid) = (Int64Builder::new(), Int64Builder::new(), Int64Builder::new());
    let mut kinds = StringBuilder::new();
    let mut rows = 0;
    let mut flow_ids: Vec<u64> = flows.keys().copied().collect();
    flow_ids.sort_unstable();
    for f in flow_ids {
        let Some(events) = flows.get_mut(&f) else { continue };
        events.sort_unstable();
        for pair in events.windows(2) {
            out.append_value(pair[0].1);
            inn.append_value(pair[1].1);
            fid.append_value(f as i64);
            kinds.append_value("flow");
            rows += 1;
        }
    }
    let mut corr_ids: Vec<u64> = correlated.keys().copied().collect();
    corr_ids.sort_unstable();
    for c in corr_ids {
        let Some((hosts, devices)) = correlated.get(&c) else { continue };
        for &h in hosts {
            for &d in devices {
                out.append_value(h);
                inn.append_value(d);
                fid.append_value(c as i64);
                kinds.append_value("correlation");
                rows += 1;
            }
        }
    }
    let columns: Vec<ArrayRef> =
        vec![Arc::new(out.finish()), Arc::new(inn.finish()), Arc::new(fid.finish()), Arc::new(kinds.finish())];
    Ok(vec![finish(p, all(columns), rows, key)?])
}

/// The columns of `args` being filled for one batch (only the wanted ones grow).
#[derive(Default)]
struct ArgColumns {
    set: Int64Builder,
    keys: Vec<i32>,
    types: StringBuilder,
    ints: Int64Builder,
    reals: Float64Builder,
    strings: StringBuilder,
    rows: usize,
}

impl ArgColumns {
    /// The batch of what was filled (the wanted columns of `p`), leaving it empty.
    fn take(&mut self, p: &Projection, names: &Arc<StringArray>, key: HostKey<'_>) -> Result<RecordBatch, ArrowError> {
        let mut c = std::mem::take(self);
        let key_column = if p.wants("key") {
            Some(Arc::new(DictionaryArray::<Int32Type>::try_new(Int32Array::from(c.keys), names.clone())?) as ArrayRef)
        } else {
            None
        };
        let columns: Vec<Option<ArrayRef>> = vec![
            p.wants("arg_set_id").then(|| Arc::new(c.set.finish()) as ArrayRef),
            key_column,
            p.wants("value_type").then(|| Arc::new(c.types.finish()) as ArrayRef),
            p.wants("int_value").then(|| Arc::new(c.ints.finish()) as ArrayRef),
            p.wants("real_value").then(|| Arc::new(c.reals.finish()) as ArrayRef),
            p.wants("string_value").then(|| Arc::new(c.strings.finish()) as ArrayRef),
        ];
        finish(p, columns, c.rows, key)
    }
}

/// `args`: every own stat of every event, in batches of at least [`SLICE_BATCH_ROWS`] rows
/// (an event's stats together, a plane's last batch shorter), with only `p`'s columns.
fn args(
    space: &XSpace,
    key: HostKey<'_>,
    p: &Projection,
    emit: &mut dyn FnMut(RecordBatch) -> bool,
) -> Result<(), ArrowError> {
    let [w_set, w_key, w_type, w_int, w_real, w_string] =
        ["arg_set_id", "key", "value_type", "int_value", "real_value", "string_value"].map(|c| p.wants(c));
    let w_value = w_type || w_int || w_real || w_string;
    let mut next_id: i64 = 0;
    let mut built_rows = 0usize;
    let mut c = ArgColumns::default();
    for plane in &space.planes {
        let names: Arc<StringArray> = Arc::new(if w_key {
            plane.stat_metadata().iter().map(|m| Some(plane.str(m.name))).collect()
        } else {
            StringArray::from(Vec::<&str>::new())
        });
        for line in &plane.lines {
            for e in line.events(plane) {
                for s in e.stats() {
                    c.rows += 1;
                    if w_set {
                        c.set.append_value(next_id);
                    }
                    if w_key {
                        c.keys.push(s.metadata_id().index() as i32);
                    }
                    if !w_value {
                        continue;
                    }
                    let (ty, int, real, text) = match s.value {
                        StatValue::Int64(x) => ("int", Some(x), None, None),
                        StatValue::Uint64(x) => ("uint", Some(x as i64), None, None),
                        StatValue::Double(x) => ("real", None, Some(x), None),
                        StatValue::Str(x) => ("string", None, None, Some(x)),
                        StatValue::Ref(x) => ("ref", None, None, Some(x)),
                        StatValue::Bytes(_) => ("bytes", None, None, None),
                        StatValue::Unset => ("unset", None, None, None),
                    };
                    if w_type {
                        c.types.append_value(ty);
                    }
                    if w_int {
                        c.ints.append_option(int);
                    }
                    if w_real {
                        c.reals.append_option(real);
                    }
                    if w_string {
                        c.strings.append_option(text);
                    }
                }
                next_id += 1;
                if c.rows >= SLICE_BATCH_ROWS {
                    built_rows += c.rows;
                    if !emit(c.take(p, &names, key)?) || p.enough(built_rows) {
                        return Ok(());
                    }
                }
            }
        }
        // The key dictionary is the plane's: a plane's rest is its own batch.
        if c.rows > 0 {
            built_rows += c.rows;
            if !emit(c.take(p, &names, key)?) || p.enough(built_rows) {
                return Ok(());
            }
        }
    }
    Ok(())
}

/// `memory_events`: `memory_profile`'s snapshots of every allocator.
fn memory_events(space: &XSpace, key: HostKey<'_>, p: &Projection) -> Result<Vec<RecordBatch>, ArrowError> {
    use oxprof_xprof::tools::memory_profile::{MemoryActivity, memory_profile};
    let Some(profile) = memory_profile(space) else { return Ok(Vec::new()) };
    let mut allocator = StringBuilder::new();
    let mut text =
        [StringBuilder::new(), StringBuilder::new(), StringBuilder::new(), StringBuilder::new(), StringBuilder::new()];
    let mut ints: [Int64Builder; 8] = Default::default();
    let mut rows = 0;
    for (name, per) in &profile.allocators {
        for s in &per.snapshots {
            let m = &s.metadata;
            allocator.append_value(name);
            text[0].append_value(match m.activity {
                MemoryActivity::Allocation => "allocation",
                MemoryActivity::Deallocation => "deallocation",
            });
            text[1].append_value(profile.str(m.tf_op_name));
            text[2].append_value(profile.str(m.region_type));
            text[3].append_value(profile.str(m.data_type));
            text[4].append_value(profile.str(m.tensor_shape));
            for (b, v) in ints.iter_mut().zip([
                s.time_offset_ps,
                m.requested_bytes,
                m.allocation_bytes,
                m.address as i64,
                m.step_id,
                s.stats.heap_allocated_bytes,
                s.stats.stack_reserved_bytes,
                s.stats.free_memory_bytes,
            ]) {
                b.append_value(v);
            }
            rows += 1;
        }
    }
    let [activity, op, region, data_type, shape] = text.map(|mut b| Arc::new(b.finish()) as ArrayRef);
    let [offset, requested, allocated, address, step, heap, stack, free] =
        ints.map(|mut b| Arc::new(b.finish()) as ArrayRef);
    let columns = vec![
        Arc::new(allocator.finish()) as ArrayRef,
        offset,
        activity,
        requested,
        allocated,
        address,
        step,
        op,
        region,
        data_type,
        shape,
        heap,
        stack,
        free,
    ];
    Ok(vec![finish(p, all(columns), rows, key)?])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema;
    use datafusion::arrow::array::{Array, AsArray};
    use datafusion::arrow::datatypes::Int64Type;
    use oxprof_model::ModelBuilder;

    const KEY: HostKey<'static> = HostKey { run: "r", host: "h" };

    fn table(space: &XSpace, name: &str) -> RecordBatch {
        let def = schema::table(name).unwrap();
        let batches = build(&Projection::all(def), space, KEY).unwrap().unwrap();
        datafusion::arrow::compute::concat_batches(&arrow_schema(def), &batches).unwrap()
    }

    fn ints(batch: &RecordBatch, column: &str) -> Vec<Option<i64>> {
        let c = batch.column_by_name(column).unwrap();
        let c = c.as_primitive::<Int64Type>();
        (0..c.len()).map(|i| c.is_valid(i).then(|| c.value(i))).collect()
    }

    // /host:CPU, thread 7 (timestamps in ps from 1 µs):
    //   A [0 ------------------ 100)
    //   B    [10 ---- 50)  C [60 - 90)
    //   D     [20 - 30)
    // /device:GPU:0, stream 1:
    //   K [200 - 260)   (correlation_id 5, launched by B)
    fn space() -> XSpace {
        ModelBuilder::new()
            .plane("/host:CPU", |p| {
                p.line(7, "thread 7", 1, |l| {
                    l.event("A", 0, 100);
                    l.event("B", 10, 40).stat("correlation_id", 5u64).stat("group_id", 3i64);
                    l.event("D", 20, 10);
                    l.event("C", 60, 30).stat("note", "x");
                });
            })
            .plane("/device:GPU:0", |p| {
                p.line(1, "stream 1", 1, |l| {
                    l.event("K", 200, 60).stat("correlation_id", 5u64).stat("flops", 2.5);
                });
            })
            .build()
            .unwrap()
    }

    #[test]
    fn slices_nest_by_time_on_each_track() {
        let s = table(&space(), "slice");
        assert_eq!(s.num_rows(), 5);
        assert_eq!(ints(&s, "id"), [0, 1, 2, 3, 4].map(Some));
        // A, B, D, C on the thread; K alone on the stream.
        let depth = s.column_by_name("depth").unwrap().as_primitive::<Int32Type>().values().to_vec();
        assert_eq!(depth, [0, 1, 2, 1, 0]);
        assert_eq!(ints(&s, "parent_id"), [None, Some(0), Some(1), Some(0), None]);
        assert_eq!(ints(&s, "ts_ps"), [1000, 1010, 1020, 1060, 1200].map(Some));
        assert_eq!(ints(&s, "ts"), [1, 1, 1, 1, 1].map(Some));
        assert_eq!(ints(&s, "arg_set_id"), [None, Some(1), None, Some(3), Some(4)]);
        assert_eq!(ints(&s, "group_id"), [None, Some(3), None, None, None]);
        // Track ids: plane 0 = 0, its line = 1, plane 1 = 2, its line = 3.
        assert_eq!(ints(&s, "track_id"), [1, 1, 1, 1, 3].map(Some));
    }

    // One thread with a track longer than a batch (2.5 batches of back-to-back events,
    // every tenth holding the next nine):
    //   E0 [---------)E10 [---------) …
    //      E1 E2 … E9      E11 … E19
    #[test]
    fn long_tracks_reach_the_plan_in_bounded_batches() {
        let n = SLICE_BATCH_ROWS * 5 / 2;
        let space = ModelBuilder::new()
            .plane("/host:CPU", |p| {
                p.line(1, "thread 1", 0, |l| {
                    for i in 0..n as i64 {
                        let (start, dur) = if i % 10 == 0 { (i * 10, 100) } else { (i * 10, 5) };
                        l.event(if i % 10 == 0 { "outer" } else { "inner" }, start, dur);
                    }
                });
            })
            .build()
            .unwrap();
        let def = schema::table("slice").unwrap();
        let column = |name: &str| def.columns.iter().position(|c| c.name == name).unwrap();
        // Without nesting (the GROUP BY's columns) and with it (built per track, then sliced).
        for columns in [vec![column("name"), column("dur")], vec![column("id"), column("depth"), column("parent_id")]] {
            let batches = build(&Projection::new(def, Some(&columns), None), &space, KEY).unwrap().unwrap();
            assert!(batches.iter().all(|b| b.num_rows() <= SLICE_BATCH_ROWS), "{columns:?}");
            assert_eq!(batches.iter().map(RecordBatch::num_rows).sum::<usize>(), n, "{columns:?}");
        }
        // Nesting still sees the whole track across the batch boundaries.
        let s = table(&space, "slice");
        let depth = s.column_by_name("depth").unwrap().as_primitive::<Int32Type>();
        assert!((0..n).all(|i| depth.value(i) == i32::from(i % 10 != 0)));
        let last_inner = n - 1;
        assert_eq!(ints(&s, "parent_id")[last_inner], Some((last_inner - last_inner % 10) as i64));
    }

    #[test]
    fn tracks_flows_and_args() {
        let space = space();
        let t = table(&space, "track");
        assert_eq!(ints(&t, "id"), [0, 1, 2, 3].map(Some));
        assert_eq!(ints(&t, "parent_id"), [None, Some(0), None, Some(2)]);
        let f = table(&space, "flow");
        assert_eq!((ints(&f, "slice_out"), ints(&f, "slice_in")), (vec![Some(1)], vec![Some(4)]));
        let a = table(&space, "args");
        assert_eq!(ints(&a, "arg_set_id"), [1, 1, 3, 4, 4].map(Some));
        let d = table(&space, "devices");
        assert_eq!(d.num_rows(), 1);
        assert_eq!(ints(&d, "track_id"), [Some(2)]);
    }

    /// Building a table with some of its columns gives exactly those columns of the full
    /// build, for every table, every single column, pairs out of schema order and none.
    #[test]
    fn projected_builds_equal_the_full_build() {
        let space = space();
        for def in schema::TABLES.iter().filter(|t| t.source == schema::Source::Model) {
            let full = table(&space, def.name);
            let n = def.columns.len();
            let mut subsets: Vec<Vec<usize>> = (0..n).map(|i| vec![i]).collect();
            subsets.extend((1..n).map(|i| vec![i, i - 1]));
            subsets.push(Vec::new());
            for subset in subsets {
                let p = Projection::new(def, Some(&subset), None);
                let batches = build(&p, &space, KEY).unwrap().unwrap();
                let built = datafusion::arrow::compute::concat_batches(p.schema(), &batches).unwrap();
                assert_eq!(built, full.project(&subset).unwrap(), "{} {subset:?}", def.name);
            }
        }
    }

    #[test]
    fn a_limit_stops_building_after_a_batch() {
        let def = schema::table("slice").unwrap();
        let p = Projection::new(def, Some(&[6]), Some(1));
        let batches = build(&p, &space(), KEY).unwrap().unwrap();
        // The first plane's four events, not the second plane's.
        assert_eq!(batches.iter().map(RecordBatch::num_rows).collect::<Vec<_>>(), [4]);
    }
}
