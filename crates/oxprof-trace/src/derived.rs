//! XProf's derived timelines of GPU planes (`DeriveEventsFromAnnotations` in
//! `xprof/utils/derived_timeline.cc`): per stream line, the "Framework Name Scope",
//! "Framework Ops", "XLA Modules", "XLA Ops" and "Source code" lines built from the
//! kernels' `hlo_module` / `hlo_op` / `program_id` stats and the HLO modules' metadata,
//! and the display ids XProf gives the stream lines and their derived lines.
//!
//! Not ported (yet) for GPU planes: the "Steps" line and `group_id`s of derived events
//! (they need the step grouping, which the trace index is built without), "Launch Stats",
//! and the scope-range-id tree plane.
//!
//! The line builder (`DerivedXLineBuilder`) is shared with the TPU derived lines
//! (`tpu_derived.rs`), which do carry group ids.

use oxprof_grouping::tf_op::{TfOpCategory, parse_tf_name_scopes, parse_tf_op_fullname, tf_op_event_name};
use oxprof_hlo::HloModuleMap;
use oxprof_model::XPlane;
use oxprof_model::schema::{StatType, THREAD_ID_DERIVED_MAX, THREAD_ID_DERIVED_MIN};
use rustc_hash::FxHashMap;
use std::fmt::Write as _;

/// Display-id slots per stream in XProf 2.24.2's trace: the stream, then its derived
/// lines (seen in its outputs: streams at tids 1, 8, 15, 22, …).
const SLOTS_PER_STREAM: u32 = 7;

/// The derived lines of one stream, in display order, with their line name prefixes.
const LINE_NAMES: [&str; 5] = ["Framework Name Scope", "Framework Ops", "XLA Modules", "XLA Ops", "Source code"];
pub(crate) const NAME_SCOPE: usize = 0;
pub(crate) const TF_OP: usize = 1;
const HLO_MODULE: usize = 2;
const HLO_OP: usize = 3;
pub(crate) const SOURCE: usize = 4;

/// One derived event: absolute start and duration (ps), its name id and its `group_id`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DerivedEvent {
    pub(crate) ts: i64,
    pub(crate) dur: i64,
    pub(crate) name: u32,
    pub(crate) group: Option<i64>,
}

/// The arguments XProf gives a "Host Offload Ops" event: `raw_bytes_accessed` of its done
/// op's metadata and `shape_with_layout` of its start op's metadata.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub(crate) struct OffloadArgs {
    pub(crate) raw_bytes_accessed: Option<i64>,
    pub(crate) shape_with_layout: Option<String>,
}

/// A derived line of a plane.
#[derive(Debug, Clone, Default)]
pub(crate) struct DerivedLine {
    /// Display id (the trace `tid`).
    pub(crate) display_id: u32,
    /// Line name, e.g. `XLA Ops - from #16`.
    pub(crate) name: String,
    /// Index of the stream line it derives from.
    pub(crate) source_line: u32,
    /// Events in creation order.
    pub(crate) events: Vec<DerivedEvent>,
}

/// The event names of a plane's derived events: per id the shown name and, when XProf
/// sets a display name, the metadata name (its `long_name`).
#[derive(Debug, Clone, Default)]
pub(crate) struct DerivedNames {
    ids: FxHashMap<String, u32>,
    /// Ids of nameless host-offload events by display name and arguments
    /// (`CreateEventMetadata` + `set_display_name`).
    offload_ids: FxHashMap<(String, OffloadArgs), u32>,
    /// The arguments of those events, by ascending id.
    offload_args: Vec<(u32, OffloadArgs)>,
    /// Display names of the plane's own event metadata by name, which
    /// `GetOrCreateEventMetadata` finds before creating new metadata (only while deriving).
    existing: FxHashMap<String, String>,
    shown: Vec<String>,
    long: Vec<Option<String>>,
}

impl DerivedNames {
    /// Approximate heap bytes held (strings and table slots).
    pub(crate) fn heap_bytes(&self) -> usize {
        let strings = |it: &mut dyn Iterator<Item = usize>| it.map(|len| len + 24).sum::<usize>();
        strings(&mut self.ids.keys().map(|k| k.len() + 8))
            + strings(&mut self.offload_ids.keys().map(|(k, _)| k.len() + 64))
            + self.offload_args.len() * 64
            + strings(&mut self.existing.iter().map(|(k, v)| k.len() + v.len()))
            + strings(&mut self.shown.iter().map(String::len))
            + strings(&mut self.long.iter().map(|s| s.as_ref().map_or(0, String::len)))
    }

    /// Names that also see the plane's own metadata with display names (XProf's
    /// `XPlaneBuilder` looks names up in the plane's metadata first).
    pub(crate) fn seeded_from(plane: &XPlane) -> Self {
        let mut existing = FxHashMap::default();
        for m in plane.event_metadata() {
            let display = plane.str(m.display_name);
            if !display.is_empty() {
                existing.entry(plane.str(m.name).to_string()).or_insert_with(|| display.to_string());
            }
        }
        DerivedNames { existing, ..DerivedNames::default() }
    }

    /// Drops the lookup table of [`Self::seeded_from`] once the lines are derived.
    pub(crate) fn finish(&mut self) {
        self.existing = FxHashMap::default();
    }

    /// `GetOrCreateEventMetadata(name)`; the display name is set on creation only.
    pub(crate) fn intern(&mut self, name: &str, display: Option<&str>) -> u32 {
        if let Some(&id) = self.ids.get(name) {
            return id;
        }
        let id = self.shown.len() as u32;
        self.ids.insert(name.to_string(), id);
        let display = self.existing.get(name).map(String::as_str).or(display);
        match display.filter(|d| !d.is_empty()) {
            Some(d) => {
                self.shown.push(d.to_string());
                self.long.push(Some(name.to_string()));
            }
            None => {
                self.shown.push(name.to_string());
                self.long.push(None);
            }
        }
        id
    }

    /// A nameless host-offload event shown as `display` (its `long_name` is empty) with
    /// its arguments.
    pub(crate) fn intern_offload(&mut self, display: &str, args: OffloadArgs) -> u32 {
        let key = (display.to_string(), args);
        if let Some(&id) = self.offload_ids.get(&key) {
            return id;
        }
        let id = self.shown.len() as u32;
        self.shown.push(key.0.clone());
        self.long.push(Some(String::new()));
        self.offload_args.push((id, key.1.clone()));
        self.offload_ids.insert(key, id);
        id
    }

    /// The arguments of a host-offload event.
    pub(crate) fn offload_args(&self, id: u32) -> Option<&OffloadArgs> {
        let i = self.offload_args.binary_search_by_key(&id, |e| e.0).ok()?;
        self.offload_args.get(i).map(|e| &e.1)
    }

    /// Every host-offload event's arguments by id (for the index cache).
    pub(crate) fn offload_entries(&self) -> &[(u32, OffloadArgs)] {
        &self.offload_args
    }

    /// Host-offload arguments read back from the index cache (ids ascending).
    pub(crate) fn set_offload_entries(&mut self, entries: Vec<(u32, OffloadArgs)>) {
        self.offload_args = entries;
    }

    /// Every (shown name, long name), by id (for the index cache).
    pub(crate) fn entries(&self) -> impl Iterator<Item = (&str, Option<&str>)> {
        self.shown.iter().zip(&self.long).map(|(s, l)| (s.as_str(), l.as_deref()))
    }

    /// Number of names.
    pub(crate) fn len(&self) -> usize {
        self.shown.len()
    }

    /// Names read back from the index cache.
    pub(crate) fn from_entries(entries: Vec<(String, Option<String>)>) -> Self {
        let (shown, long) = entries.into_iter().unzip();
        DerivedNames { shown, long, ..DerivedNames::default() }
    }

    /// The metadata name of an event with a display name (XProf's `long_name`).
    pub(crate) fn long_name(&self, id: u32) -> Option<&str> {
        self.long.get(id as usize).and_then(|l| l.as_deref())
    }

    /// The name XProf shows for a derived event.
    pub(crate) fn shown(&self, id: u32) -> &str {
        self.shown.get(id as usize).map_or("", String::as_str)
    }
}

/// The derived timelines of one GPU plane.
#[derive(Debug, Clone, Default)]
pub(crate) struct DerivedPlane {
    /// Display ids XProf gives the stream lines: (line index, display id).
    pub(crate) stream_display_ids: Vec<(u32, u32)>,
    /// Non-empty derived lines.
    pub(crate) lines: Vec<DerivedLine>,
    /// Names of the derived events.
    pub(crate) names: DerivedNames,
}

impl DerivedPlane {
    /// The display id of stream line `line`, if XProf assigns one.
    pub(crate) fn stream_display_id(&self, line: u32) -> Option<u32> {
        self.stream_display_ids.iter().find(|(l, _)| *l == line).map(|&(_, d)| d)
    }
}

/// The last event of one nesting level of a derived line (`DerivedXEventBuilder`).
#[derive(Debug, Clone, Copy)]
struct LastEvent {
    /// Index in the line's events.
    event: usize,
    name: u32,
    group: Option<i64>,
    scope_range_id: Option<i64>,
}

/// `DerivedXLineBuilder`: merges consecutive events with the same name per level.
#[derive(Debug, Default)]
pub(crate) struct LineBuilder {
    pub(crate) events: Vec<DerivedEvent>,
    last_by_level: Vec<Option<LastEvent>>,
    /// Not a GPU plane: an event without group id only grows over small gaps.
    gap_limited: bool,
}

impl LineBuilder {
    /// `ExpandOrAddLevelEvent`: the last event of the level grows to cover the new span
    /// when it has the same name and group id (and a compatible scope range id) — on
    /// other than GPU planes, without a group id, only when the gap to the new span is at
    /// most twice the last event's duration; otherwise the levels from here down are
    /// closed and a new event starts.
    ///
    /// ```text
    /// non-GPU, no group:  |a|  |a|        |a|      -->  |a======|        |a|
    ///                     0 1  2 3  ...   9 10          (gap 1 <= 2*1)   (gap 6 > 2*3)
    /// ```
    fn expand_or_add(
        &mut self,
        name: u32,
        span: (i64, i64),
        group: Option<i64>,
        scope_range_id: Option<i64>,
        level: usize,
    ) -> bool {
        if self.last_by_level.len() <= level {
            self.last_by_level.resize(level + 1, None);
        }
        if let Some(Some(last)) = self.last_by_level.get(level).copied()
            && last.name == name
            && last.group == group
            && (scope_range_id.is_none() || last.scope_range_id.is_none() || last.scope_range_id == scope_range_id)
            && let Some(e) = self.events.get_mut(last.event)
            && (!self.gap_limited
                || group.is_some()
                || (e.ts as u64).wrapping_add(e.dur as u64).wrapping_add(2u64.wrapping_mul(e.dur as u64))
                    >= span.0 as u64)
        {
            let end = e.ts.wrapping_add(e.dur).max(span.0.wrapping_add(span.1));
            e.ts = e.ts.min(span.0);
            e.dur = end.wrapping_sub(e.ts);
            return false;
        }
        self.reset_from(level);
        self.events.push(DerivedEvent { ts: span.0, dur: span.1, name, group });
        if let Some(slot) = self.last_by_level.get_mut(level) {
            *slot = Some(LastEvent { event: self.events.len() - 1, name, group, scope_range_id });
        }
        true
    }

    /// `ResetLastEvents(level)` without the dependent lines (see [`Builders::reset`]).
    fn reset_from(&mut self, level: usize) {
        self.adjust_durations(level);
        for slot in self.last_by_level.iter_mut().skip(level) {
            *slot = None;
        }
    }

    /// `AdjustDurationForTraceViewer`: in a stack of open events from `level` down, each
    /// event with the same span as the one above it ends 1 ns earlier than that one (at
    /// most the top event's duration in ns minus 1), so the viewer stacks them stably.
    ///
    /// ```text
    /// level 0  |==== a ====|          |==== a ====|
    /// level 1  |==== b ====|   -->    |=== b ===|
    /// level 2  |==== c ====|          |== c ==|
    /// ```
    fn adjust_durations(&mut self, level: usize) {
        if !matches!(self.last_by_level.get(level), Some(Some(_))) {
            return;
        }
        let mut max_level = level;
        while matches!(self.last_by_level.get(max_level), Some(Some(_))) {
            max_level += 1;
        }
        max_level -= 1;
        if max_level <= level {
            return;
        }
        let span_of = |b: &LineBuilder, l: usize| {
            b.last_by_level.get(l).copied().flatten().and_then(|le| b.events.get(le.event)).map(|e| (e.ts, e.dur))
        };
        let Some(top) = span_of(self, max_level) else { return };
        let max_shrink_ns = top.1 / 1000 - 1;
        let mut shrink_ns: i64 = 0;
        let mut previous: Option<(i64, i64)> = None;
        for l in level..=max_level {
            let Some(current) = span_of(self, l) else { continue };
            if shrink_ns < max_shrink_ns && previous == Some(current) {
                shrink_ns += 1;
            }
            previous = Some(current);
            if shrink_ns != 0
                && let Some(le) = self.last_by_level.get(l).copied().flatten()
                && let Some(e) = self.events.get_mut(le.event)
            {
                e.dur = current.1 - 1000 * shrink_ns;
            }
        }
    }
}

/// The five derived lines of one stream, with XProf's dependencies: closing the module
/// level closes the name scopes and XLA ops; closing the name scopes closes the TF ops.
#[derive(Default)]
pub(crate) struct Builders {
    pub(crate) lines: [LineBuilder; 5],
}

impl Builders {
    /// Builders for a plane other than a GPU plane (see [`LineBuilder::expand_or_add`]).
    pub(crate) fn gap_limited() -> Self {
        let mut b = Builders::default();
        for line in &mut b.lines {
            line.gap_limited = true;
        }
        b
    }

    /// `ResetLastEvents(level)` of one line (and, at level 0, its dependent lines).
    pub(crate) fn reset(&mut self, line: usize, level: usize) {
        if let Some(b) = self.lines.get_mut(line) {
            b.reset_from(level);
        }
        if level == 0 {
            let dependents: &[usize] = match line {
                HLO_MODULE => &[NAME_SCOPE, HLO_OP],
                NAME_SCOPE => &[TF_OP],
                _ => &[],
            };
            for &d in dependents {
                self.reset(d, 0);
            }
        }
    }

    /// `ExpandOrAddEvent` / `ExpandOrAddLevelEvent` on one line.
    pub(crate) fn add(
        &mut self,
        line: usize,
        name: u32,
        span: (i64, i64),
        group: Option<i64>,
        scope_range_id: Option<i64>,
        level: usize,
    ) {
        let Some(b) = self.lines.get_mut(line) else { return };
        if b.expand_or_add(name, span, group, scope_range_id, level) && level == 0 {
            // A new level-0 event resets the dependent lines too (`ResetLastEvents(0)`).
            let dependents: &[usize] = match line {
                HLO_MODULE => &[NAME_SCOPE, HLO_OP],
                NAME_SCOPE => &[TF_OP],
                _ => &[],
            };
            for &d in dependents {
                self.reset(d, 0);
            }
        }
    }

    /// `ExpandOrAddEvents`: one event per level, then the deeper levels are closed.
    fn add_levels(
        &mut self,
        line: usize,
        names: &[u32],
        span: (i64, i64),
        group: Option<i64>,
        scope_range_ids: &[Option<i64>],
    ) {
        if names.is_empty() {
            return;
        }
        for (level, &name) in names.iter().enumerate() {
            self.add(line, name, span, group, scope_range_ids.get(level).copied().flatten(), level);
        }
        self.reset(line, names.len());
    }

    /// `ProcessTfOpEvent`, with the op's names interned ([`TfOpCache`]).
    pub(crate) fn add_tf_op(&mut self, ids: &TfOpIds, span: (i64, i64), group: Option<i64>) {
        if let Some(scopes) = &ids.scopes {
            self.add_levels(NAME_SCOPE, scopes, span, group, &[]);
        }
        self.add(TF_OP, ids.op, span, group, None, 0);
    }
}

/// The derived-event names of one framework op: its name scopes (only for TensorFlow and
/// JAX ops) and the op itself.
#[derive(Debug, Clone)]
pub(crate) struct TfOpIds {
    scopes: Option<Vec<u32>>,
    op: u32,
}

impl TfOpIds {
    /// Interns the names `ProcessTfOpEvent` creates for `full_name`.
    fn resolve(names: &mut DerivedNames, full_name: &str) -> TfOpIds {
        let op = parse_tf_op_fullname(full_name);
        let scopes = matches!(op.category, TfOpCategory::TensorFlow | TfOpCategory::Jax)
            .then(|| parse_tf_name_scopes(op.name).into_iter().map(|s| names.intern(s, None)).collect());
        let id = match names.ids.get(full_name) {
            Some(&id) => id,
            None => names.intern(full_name, Some(&tf_op_event_name(&op))),
        };
        TfOpIds { scopes, op: id }
    }
}

/// [`TfOpIds`] by framework op name, so each name is parsed and interned once.
#[derive(Debug, Default)]
pub(crate) struct TfOpCache(FxHashMap<String, TfOpIds>);

impl TfOpCache {
    /// The names of `full_name`, interned on first use.
    pub(crate) fn get(&mut self, names: &mut DerivedNames, full_name: &str) -> Option<&TfOpIds> {
        if !self.0.contains_key(full_name) {
            let ids = TfOpIds::resolve(names, full_name);
            self.0.insert(full_name.to_string(), ids);
        }
        self.0.get(full_name)
    }
}

/// The stats of a kernel XProf's `GpuEventStats` reads for the derived lines.
struct KernelStats<'a> {
    hlo_module: &'a str,
    program_id: Option<u64>,
    hlo_ops: &'a str,
    tf_op: &'a str,
    scope_range_id: Option<i64>,
}

/// `GpuEventStats` of a kernel (one pass over its metadata's stats, then its own, the
/// event's winning), or None when the event is not a kernel (no `kernel_details`, no
/// `cuda_graph_exec_id`).
fn kernel_stats<'a>(e: &oxprof_model::Event<'a>) -> Option<KernelStats<'a>> {
    let mut stats = KernelStats { hlo_module: "", program_id: None, hlo_ops: "", tf_op: "", scope_range_id: None };
    let mut is_kernel = false;
    for s in e.metadata_stats().chain(e.stats()) {
        match s.stat_type() {
            Some(StatType::KernelDetails) => is_kernel = s.as_str().is_some_and(|v| !v.is_empty()),
            Some(StatType::CudaGraphExecId) => is_kernel = true,
            Some(StatType::HloModule) => stats.hlo_module = s.as_str().unwrap_or(""),
            Some(StatType::ProgramId) => stats.program_id = s.as_u64().or_else(|| s.as_i64().map(|v| v as u64)),
            Some(StatType::HloOp) => stats.hlo_ops = s.as_str().unwrap_or(""),
            Some(StatType::TfOp) => stats.tf_op = s.as_str().unwrap_or(""),
            Some(StatType::ScopeRangeId) => stats.scope_range_id = s.as_i64(),
            _ => {}
        }
    }
    is_kernel.then_some(stats)
}

/// Derives the lines of a GPU plane (`DeriveEventsFromAnnotations`).
///
/// Streams (lines whose id is not a derived id) are ordered compute streams first
/// (name contains `Compute`), then by event count descending; stream `k` gets display id
/// `1 + 7k`, its derived lines the next five. Each stream's kernels (events with
/// `kernel_details` or `cuda_graph_exec_id`), in time order, extend or start events:
///
/// ```text
/// stream       |k1 dot.1|  |k2 dot.1|   |k3 add.2|
/// XLA Modules  |=========== jit_f(5) ============|
/// XLA Ops      |====== dot.1 =======|   |add.2   |
/// ```
pub(crate) fn derive_gpu_plane(plane: &XPlane, hlo: &HloModuleMap) -> DerivedPlane {
    let mut out = DerivedPlane::default();
    let mut streams: Vec<usize> = (0..plane.lines.len())
        .filter(|&i| {
            plane.lines.get(i).is_some_and(|l| !(THREAD_ID_DERIVED_MIN..=THREAD_ID_DERIVED_MAX).contains(&l.id))
        })
        .collect();
    let is_compute = |i: usize| plane.lines.get(i).is_some_and(|l| l.name.contains("Compute"));
    let count = |i: usize| plane.lines.get(i).map_or(0, |l| l.event_count());
    streams.sort_by(|&a, &b| is_compute(b).cmp(&is_compute(a)).then(count(b).cmp(&count(a))));
    let max_streams = ((THREAD_ID_DERIVED_MAX - THREAD_ID_DERIVED_MIN) / 6) as usize;
    for (k, &li) in streams.iter().take(max_streams).enumerate() {
        let Some(line) = plane.lines.get(li) else { continue };
        let base = 1 + SLOTS_PER_STREAM * k as u32;
        out.stream_display_ids.push((li as u32, base));
        let builders = derive_stream(plane, li, hlo, &mut out.names);
        for (j, b) in builders.lines.into_iter().enumerate() {
            if b.events.is_empty() {
                continue;
            }
            out.lines.push(DerivedLine {
                display_id: base + 1 + j as u32,
                name: format!("{} - from #{}", LINE_NAMES.get(j).unwrap_or(&""), line.id),
                source_line: li as u32,
                events: b.events,
            });
        }
    }
    out
}

/// `DeriveEventsFromAnnotationsForLines` for one stream line.
fn derive_stream(plane: &XPlane, li: usize, hlo: &HloModuleMap, names: &mut DerivedNames) -> Builders {
    let mut builders = Builders::default();
    let Some(line) = plane.lines.get(li) else { return builders };
    let mut order: Vec<(i64, i64, usize)> =
        line.events(plane).map(|e| (e.timestamp_ps(), e.duration_ps(), e.index())).collect();
    // XLA's `GetSortedEvents`: start, then shorter first, in libstdc++'s unstable order.
    oxprof_grouping::cxx_sort::introsort(&mut order, |a, b| (a.0 as u64, a.1 as u64) < (b.0 as u64, b.1 as u64));
    // Buffers reused across kernels: no allocation per kernel once names are interned.
    let mut hlo_op_ids: Vec<u32> = Vec::new();
    let mut range_ids: Vec<Option<i64>> = Vec::new();
    let mut key = String::new();
    // Source line name id per HLO instruction (by address in the module map).
    let mut source_ids: FxHashMap<usize, Option<u32>> = FxHashMap::default();
    let mut tf_ops = TfOpCache::default();
    for &(ts, dur, index) in &order {
        if index >= line.event_count() {
            continue;
        }
        let e = line.event(plane, index);
        let Some(stats) = kernel_stats(&e) else { continue };
        let span = (ts, dur);
        if !stats.hlo_module.is_empty() {
            key.clear();
            key.push_str(stats.hlo_module);
            if let Some(p) = stats.program_id {
                let _ = write!(key, "({p})");
            }
            let id = names.intern(&key, None);
            builders.add(HLO_MODULE, id, span, None, stats.scope_range_id, 0);
        }
        if !stats.hlo_ops.is_empty() {
            hlo_op_ids.clear();
            let mut last_op = "";
            for op in stats.hlo_ops.split("::") {
                key.clear();
                match stats.program_id {
                    Some(p) => {
                        let _ = write!(key, "{p}/");
                    }
                    None => {
                        key.push_str(stats.hlo_module);
                        key.push('/');
                    }
                }
                key.push_str(op);
                hlo_op_ids.push(names.intern(&key, Some(op)));
                last_op = op;
            }
            // Scope range ids apply per level only when there is one per level (without
            // the scope-range-id tree: a single op).
            range_ids.clear();
            if hlo_op_ids.len() == 1 && stats.scope_range_id.is_some() {
                range_ids.push(stats.scope_range_id);
            }
            builders.add_levels(HLO_OP, &hlo_op_ids, span, None, &range_ids);
            let symbol = stats.program_id.and_then(|p| hlo.view(p, last_op));
            if let Some(instr) = symbol {
                let tf_op_name = instr.op_full_name();
                if !tf_op_name.is_empty()
                    && let Some(ids) = tf_ops.get(names, tf_op_name)
                {
                    builders.add_tf_op(ids, span, None);
                }
                let source = *source_ids.entry(std::ptr::from_ref(instr) as usize).or_insert_with(|| {
                    let text = instr.source_info_text();
                    (!text.is_empty()).then(|| names.intern(&text, None))
                });
                if let Some(id) = source {
                    builders.add(SOURCE, id, span, None, None, 0);
                }
            }
        } else if !stats.tf_op.is_empty()
            && let Some(ids) = tf_ops.get(names, stats.tf_op)
        {
            builders.add_tf_op(ids, span, None);
        }
    }
    builders
}

#[cfg(test)]
mod tests {
    use crate::TraceIndex;
    use crate::index::view_in;
    use crate::xprof::{HostTrace, TraceViewRequest, trace_viewer_json};
    use oxprof_grouping::group_events;
    use oxprof_testkit::XSpaceBuilder;
    use oxprof_xspace::decode_xspace;

    /// (tid, name, ts ns after 1 µs, dur ns) of the GPU plane's complete events.
    fn gpu_events(bytes: Vec<u8>) -> Vec<(u64, String, f64, f64)> {
        let space = decode_xspace(&bytes).unwrap();
        let groups = group_events(&space);
        let index = TraceIndex::build(&space, "h");
        let req = TraceViewRequest { resolution: 8000.0, ..TraceViewRequest::default() };
        let body = trace_viewer_json(&[HostTrace { space: &space, groups: &groups, index: &index }], &req).unwrap();
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        let mut out: Vec<(u64, String, f64, f64)> = v["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "X" && e["pid"].as_u64().is_some_and(|p| p < 1701))
            .map(|e| {
                let ns = |k: &str| (e[k].as_f64().unwrap() * 1000.0).round();
                (e["tid"].as_u64().unwrap(), e["name"].as_str().unwrap().to_string(), ns("ts") - 1000.0, ns("dur"))
            })
            .collect();
        out.sort_by(|a, b| a.partial_cmp(b).unwrap());
        out
    }

    // GPU plane, stream #16 (kernels) and #17 (a copy without kernel details), ns:
    //
    //   #16  |k1 fusion.1|  |k2 fusion.1|  |k3 add.2|  |k4 a/b/MatMul|  |k5 c/Relu|
    //        0          10  20         30  40      50  60            70  80       90
    //   XLA Modules  |============ jit_f(5) 0..50 ============|
    //   XLA Ops      |====== fusion.1 0..30 =====|  |add.2|
    //   Name Scope                                             |a 60..70|  |c 80..90|
    //                                                          |b 60..69|  (b: same span as a, 1 ns shorter)
    //   Framework Ops                                          |MatMul  |  |Relu    |
    //   #17   |copy 5..8|
    //
    // Stream #16 has more events, so it comes first: tid 1, derived lines 2..6
    // (Name Scope, Framework Ops, XLA Modules, XLA Ops, Source code); #17 gets tid 8.
    #[test]
    fn gpu_plane_gets_xprof_derived_lines() {
        let bytes = XSpaceBuilder::new()
            .plane("/device:GPU:0", |p| {
                p.line(16, "Stream #16(Kernel)", 1000, |l| {
                    for (name, at, op) in [("k1", 0, "fusion.1"), ("k2", 20, "fusion.1"), ("k3", 40, "add.2")] {
                        l.event(name, at * 1000, 10_000)
                            .stat("kernel_details", "regs:32")
                            .stat("hlo_module", "jit_f")
                            .stat("program_id", 5i64)
                            .stat("hlo_op", op);
                    }
                    l.event("k4", 60_000, 10_000).stat("kernel_details", "regs:32").stat("tf_op", "a/b/MatMul:MatMul");
                    l.event("k5", 80_000, 10_000).stat("kernel_details", "regs:32").stat("tf_op", "c/Relu:Relu");
                });
                p.line(17, "Stream #17(MemcpyOther)", 1000, |l| {
                    l.event("copy", 5_000, 3_000).stat("memcpy_details", "size:8");
                });
            })
            .to_bytes();
        let s = |x: &str| x.to_string();
        assert_eq!(
            gpu_events(bytes),
            vec![
                (1, s("k1"), 0.0, 10.0),
                (1, s("k2"), 20.0, 10.0),
                (1, s("k3"), 40.0, 10.0),
                (1, s("k4"), 60.0, 10.0),
                (1, s("k5"), 80.0, 10.0),
                (2, s("a"), 60.0, 10.0),
                (2, s("b"), 60.0, 9.0),
                (2, s("c"), 80.0, 10.0),
                (3, s("MatMul"), 60.0, 10.0),
                (3, s("Relu"), 80.0, 10.0),
                (4, s("jit_f(5)"), 0.0, 50.0),
                (5, s("add.2"), 40.0, 10.0),
                (5, s("fusion.1"), 0.0, 30.0),
                (8, s("copy"), 5.0, 3.0),
            ]
        );
    }

    // The derived tracks survive the index cache: same events, names and long names.
    #[test]
    fn derived_tracks_round_trip_through_the_cache() {
        let bytes = XSpaceBuilder::new()
            .plane("/device:GPU:0", |p| {
                p.line(16, "Stream #16", 1000, |l| {
                    l.event("k1", 0, 10_000)
                        .stat("kernel_details", "regs:32")
                        .stat("hlo_module", "jit_f")
                        .stat("program_id", 5i64)
                        .stat("hlo_op", "a_rather_long_fusion_name.1");
                });
            })
            .to_bytes();
        let space = decode_xspace(&bytes).unwrap();
        let index = TraceIndex::build(&space, "h");
        let derived: Vec<_> = index.tracks.iter().filter(|t| t.derived_names.is_some()).collect();
        assert_eq!(derived.len(), 2);
        assert_eq!(derived[1].derived_long_name(0), Some("5/a_rather_long_fusion_name.1"));
        assert!(index.stack_frames.iter().any(|(_, s)| s == "@@5/a_rather_long_fusion_name.1"));
        let cached = crate::read_index(&crate::write_index(&index, (1, 2)), (1, 2)).unwrap();
        for (a, b) in index.tracks.iter().zip(&cached.tracks) {
            assert_eq!(a.derived_name_ids, b.derived_name_ids);
            assert_eq!(a.regions, b.regions);
            for pos in 0..a.len() as u32 {
                assert_eq!(a.derived_long_name(pos), b.derived_long_name(pos));
                let (va, vb) = (view_in(&space, a, pos).unwrap(), view_in(&space, b, pos).unwrap());
                assert_eq!(va.derived_name, vb.derived_name);
            }
        }
    }

    /// Cost of the derived lines on a GPU plane of 1 M kernels (run with `--release
    /// --ignored`): index build time with and without them.
    #[test]
    #[ignore]
    fn derived_lines_cost_on_a_million_kernels() {
        let bytes = XSpaceBuilder::new()
            .plane("/device:GPU:0", |p| {
                p.line(16, "Stream #16", 1000, |l| {
                    for i in 0..1_000_000i64 {
                        let op = ["fusion.1", "fusion.1", "add.2", "dot.3"][(i % 4) as usize];
                        l.event("k", i * 20_000, 10_000)
                            .stat("kernel_details", "regs:32")
                            .stat("hlo_module", "jit_f")
                            .stat("program_id", 5i64)
                            .stat("hlo_op", op);
                    }
                });
            })
            .to_bytes();
        let space = decode_xspace(&bytes).unwrap();
        let start = std::time::Instant::now();
        let derived = super::derive_gpu_plane(&space.planes[0], &oxprof_hlo::HloModuleMap::default());
        let n: usize = derived.lines.iter().map(|l| l.events.len()).sum();
        eprintln!("derive_gpu_plane: {n} derived events in {:?}", start.elapsed());
        for preprocess in [false, true] {
            let start = std::time::Instant::now();
            let index = TraceIndex::build_with(&space, "h", crate::BuildOptions { preprocess });
            eprintln!("preprocess={preprocess}: {} events in {:?}", index.num_events, start.elapsed());
        }
    }

    // An already grouped XSpace (XProf skips its preprocessing) gets no derived lines and
    // keeps its line ids as tids.
    #[test]
    fn grouped_space_gets_no_derived_lines() {
        let bytes = XSpaceBuilder::new()
            .plane("/device:GPU:0", |p| {
                p.line(16, "Stream #16", 1000, |l| {
                    l.event("k1", 0, 10_000)
                        .stat("kernel_details", "regs:32")
                        .stat("hlo_module", "jit_f")
                        .stat("hlo_op", "fusion.1")
                        .stat("group_id", 1i64);
                });
            })
            .to_bytes();
        let events = gpu_events(bytes);
        assert_eq!(events, vec![(16, "k1".to_string(), 0.0, 10.0)]);
    }
}
