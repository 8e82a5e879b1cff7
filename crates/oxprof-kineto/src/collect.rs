//! The first pass: stream the trace's JSON once, front to back, into per-thread and
//! per-stream event buffers (compact rows, strings interned), releasing the input behind
//! it. Nothing here knows the model; `build` turns the buffers into planes and lines.
//!
//! Where events go:
//! * GPU activity (`kernel`, `gpu_memcpy`, `gpu_memset`, `gpu_user_annotation` and the
//!   older `Kernel`/`Memcpy`/`Memset`) → a device line keyed by (device, stream), from
//!   `args.device`/`args.stream` (else `pid`/`tid`);
//! * everything else → a host line keyed by (pid, tid).
//!
//! A large input is read in two halves side by side ([`split`]), merged into what one
//! reader would have kept.
//!
//! Phases: `X` complete; `B`/`E` paired per thread (a stack); `i`/`I`/`R` instants; `C`
//! counters (one event per series); `s`/`t`/`f` flows (bound to events in `build`); `M`
//! names and sort indexes. Anything odd is repaired and counted (see [`Diagnostics`]).

pub(crate) mod split;

use crate::KinetoError;
use crate::intern::{Interner, Sid, State};
use crate::json::{JsonError, Scanner, ValueRef};
use crate::time::{leading_digits, us_prefix_to_ps, us_text_to_ps};
use hashbrown::HashTable;
use oxprof_model::Incoming;
use oxprof_model::limits::{Limit, LimitExceeded, LoadLimits};
use oxprof_model::{DiagnosticKind, Diagnostics, ReleasePages};
use rustc_hash::{FxBuildHasher, FxHashMap};
use std::hash::BuildHasher;

/// Input consumed between two calls to [`ReleasePages::release`].
const RELEASE_EVERY: usize = 4 << 20;
/// Timestamps and durations beyond ±2^62 ps (±53 days from the first event) are refused,
/// so that every start + duration fits an `i64`.
const MAX_REL_PS: i128 = 1 << 62;

/// Arg keys (and stat names) the importer gives meaning to, interned first so their ids are
/// these constants.
pub(crate) mod keys {
    pub(crate) const CORRELATION: u32 = 1;
    pub(crate) const DEVICE: u32 = 2;
    pub(crate) const STREAM: u32 = 3;
    pub(crate) const CONTEXT: u32 = 4;
    pub(crate) const REGISTERS: u32 = 5;
    pub(crate) const SHARED_MEMORY: u32 = 6;
    pub(crate) const GRID: u32 = 7;
    pub(crate) const BLOCK: u32 = 8;
    pub(crate) const OCCUPANCY: u32 = 9;
    pub(crate) const BYTES: u32 = 10;
    pub(crate) const NAME: u32 = 11;
    pub(crate) const LABELS: u32 = 12;
    pub(crate) const SORT_INDEX: u32 = 13;
    // XProf stat names the importer adds.
    pub(crate) const CORRELATION_ID: u32 = 14;
    pub(crate) const CONTEXT_ID: u32 = 15;
    pub(crate) const GROUP_ID: u32 = 16;
    pub(crate) const STEP_NUM: u32 = 17;
    pub(crate) const FLOW: u32 = 18;
    pub(crate) const KERNEL_DETAILS: u32 = 19;
    pub(crate) const MEMCPY_DETAILS: u32 = 20;
    pub(crate) const COUNTER_VALUE: u32 = 21;
    pub(crate) const SCOPE: u32 = 22;
    pub(crate) const CATEGORY: u32 = 23;
    pub(crate) const PHASE: u32 = 24;
    pub(crate) const PID: u32 = 25;
    pub(crate) const PROCESS_NAME: u32 = 26;
    pub(crate) const DEVICE_VENDOR: u32 = 27;
    pub(crate) const CORE_COUNT: u32 = 28;
    pub(crate) const MEMORY_SIZE: u32 = 29;
    pub(crate) const COMPUTE_CAP_MAJOR: u32 = 30;
    pub(crate) const COMPUTE_CAP_MINOR: u32 = 31;
    pub(crate) const IS_ROOT: u32 = 32;
    pub(crate) const TIME_SHIFT_NS: u32 = 33;
    /// In this order from id 1 (0 is "").
    pub(crate) const NAMES: [&str; 33] = [
        "correlation",
        "device",
        "stream",
        "context",
        "registers per thread",
        "shared memory",
        "grid",
        "block",
        "est. achieved occupancy %",
        "bytes",
        "name",
        "labels",
        "sort_index",
        "correlation_id",
        "context_id",
        "group_id",
        "step_num",
        "flow",
        "kernel_details",
        "memcpy_details",
        "counter_value",
        "scope",
        "category",
        "ph",
        "pid",
        "process_name",
        "device_vendor",
        "core_count",
        "memory_size",
        "compute_cap_major",
        "compute_cap_minor",
        "_r",
        crate::TIME_SHIFT_STAT,
    ];
}

/// The keys of an event the importer reads, packed as [`Scanner::key_word`] answers them.
mod event_keys {
    const fn word(key: &[u8]) -> u64 {
        match crate::json::key_word(key) {
            Some(word) => word,
            None => panic!("event keys are at most seven bytes"),
        }
    }
    pub(super) const PH: u64 = word(b"ph");
    pub(super) const CAT: u64 = word(b"cat");
    pub(super) const NAME: u64 = word(b"name");
    pub(super) const PID: u64 = word(b"pid");
    pub(super) const TID: u64 = word(b"tid");
    pub(super) const TS: u64 = word(b"ts");
    pub(super) const DUR: u64 = word(b"dur");
    pub(super) const ID: u64 = word(b"id");
    pub(super) const BP: u64 = word(b"bp");
    pub(super) const SCOPE: u64 = word(b"s");
    pub(super) const ARGS: u64 = word(b"args");
}

/// What kind of row an event is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub(crate) enum Kind {
    /// `X`, or a `B`/`E` pair.
    Complete = 0,
    /// `i`/`I`/`R` (and unknown phases).
    Instant = 1,
    /// One series of a `C` event.
    Counter = 2,
}

/// The category classes the importer maps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Class {
    Kernel,
    Memcpy,
    Memset,
    GpuAnnotation,
    /// Other activity on a GPU stream (`cuda_sync`, `cuda_profiler_range`, …).
    DeviceOther,
    /// Every host category (cpu_op, user_annotation, python_function, cuda_runtime, …).
    Host,
}

impl Class {
    pub(crate) fn is_device(self) -> bool {
        !matches!(self, Class::Host)
    }
}

/// Classifies a category (`None`: unknown, kept as a host event).
fn classify(cat: &[u8]) -> Option<Class> {
    Some(match cat {
        b"kernel" | b"Kernel" => Class::Kernel,
        b"gpu_memcpy" | b"Memcpy" => Class::Memcpy,
        b"gpu_memset" | b"Memset" => Class::Memset,
        b"gpu_user_annotation" => Class::GpuAnnotation,
        b"cuda_sync" | b"cuda_profiler_range" | b"gpu_instant_event" => Class::DeviceOther,
        b"cpu_op"
        | b"Operator"
        | b"user_annotation"
        | b"python_function"
        | b"cuda_runtime"
        | b"cuda_driver"
        | b"Runtime"
        | b"Driver"
        | b"hip_runtime"
        | b"hip_driver"
        | b"privateuse1_runtime"
        | b"privateuse1_driver"
        | b"xpu_runtime"
        | b"xpu_driver"
        | b"mtia_runtime"
        | b"cpu_instant_event"
        | b"Trace"
        | b"overhead"
        | b"python"
        | b"mtia_ccp_events"
        | b"collective_comm"
        | b"" => Class::Host,
        _ => return None,
    })
}

/// A pid or tid: a number, or a string that is not one (`"Spans"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Ident {
    Num(i64),
    Str(Sid),
}

/// An `args` value as kept.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum ArgVal {
    Null,
    Bool(bool),
    I64(i64),
    U64(u64),
    F64(f64),
    Str(Sid),
    /// An array or object, as its JSON text.
    Json(Sid),
}

/// An `args` entry, packed into 16 bytes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Arg {
    pub(crate) key: u32,
    tag: u8,
    bits: u64,
}

impl Arg {
    pub(crate) fn new(key: u32, v: ArgVal) -> Arg {
        let (tag, bits) = match v {
            ArgVal::Null => (0, 0),
            ArgVal::Bool(b) => (1, u64::from(b)),
            ArgVal::I64(x) => (2, x as u64),
            ArgVal::U64(x) => (3, x),
            ArgVal::F64(x) => (4, x.to_bits()),
            ArgVal::Str(s) => (5, u64::from(s)),
            ArgVal::Json(s) => (6, u64::from(s)),
        };
        Arg { key, tag, bits }
    }

    #[inline]
    pub(crate) fn value(&self) -> ArgVal {
        match self.tag {
            1 => ArgVal::Bool(self.bits != 0),
            2 => ArgVal::I64(self.bits as i64),
            3 => ArgVal::U64(self.bits),
            4 => ArgVal::F64(f64::from_bits(self.bits)),
            5 => ArgVal::Str(self.bits as u32),
            6 => ArgVal::Json(self.bits as u32),
            _ => ArgVal::Null,
        }
    }

    /// The value as an integer, if it is one (or a float with an integral value).
    pub(crate) fn as_i64(&self) -> Option<i64> {
        match self.value() {
            ArgVal::I64(x) => Some(x),
            ArgVal::U64(x) => i64::try_from(x).ok(),
            ArgVal::F64(x) if x.fract() == 0.0 && x.abs() < 9.0e18 => Some(x as i64),
            _ => None,
        }
    }
}

/// One event row of a line.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RawEvent {
    /// Start, ps from the trace origin.
    pub(crate) start: i64,
    /// Duration in ps (`OPEN` while a `B` waits for its `E`).
    pub(crate) dur: i64,
    /// Index into [`Collected::kinds`].
    pub(crate) kind: u32,
    /// First arg in the line's `args`.
    pub(crate) args: u32,
    pub(crate) nargs: u32,
}

/// Duration of a begin event not yet ended.
pub(crate) const OPEN: i64 = -1;

/// A flow endpoint (`s`, `t` or `f`) on a line.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RawFlow {
    pub(crate) ts: i64,
    /// The flow id, category and direction as XProf encodes them in a `flow` stat.
    pub(crate) encoded: u64,
}

/// Where a line lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum LineKey {
    Host { pid: Ident, tid: Ident },
    Device { device: i64, stream: i64 },
}

/// One thread's or stream's events, in file order.
#[derive(Debug)]
pub(crate) struct RawLine {
    pub(crate) key: LineKey,
    pub(crate) events: Vec<RawEvent>,
    /// The events' args in file order: `args`, then `args_tail` (a split read's second
    /// half, moved in whole by the merge instead of copied); each event's args lie in one of
    /// them ([`RawLine::args_of`]).
    pub(crate) args: Vec<Arg>,
    pub(crate) args_tail: Vec<Arg>,
    pub(crate) flows: Vec<RawFlow>,
    /// Open `B` events (indexes into `events`).
    pub(crate) open: Vec<u32>,
    /// Which kinds of GPU activity the stream ran (for XProf's `Stream #N(Compute)` names).
    pub(crate) kernels: bool,
    pub(crate) copies: Vec<Sid>,
    pub(crate) memsets: bool,
}

impl RawLine {
    /// A line with nothing on it yet.
    fn empty(key: LineKey) -> RawLine {
        RawLine {
            key,
            events: Vec::new(),
            args: Vec::new(),
            args_tail: Vec::new(),
            flows: Vec::new(),
            open: Vec::new(),
            kernels: false,
            copies: Vec::new(),
            memsets: false,
        }
    }

    /// An event's args.
    #[inline]
    pub(crate) fn args_of(&self, e: &RawEvent) -> &[Arg] {
        let (start, n) = (e.args as usize, e.nargs as usize);
        match start.checked_sub(self.args.len()) {
            None => &self.args[start..start + n],
            Some(tail) => &self.args_tail[tail..tail + n],
        }
    }

    /// This line's rows, leaving an empty line with the same key behind.
    pub(crate) fn take(&mut self) -> RawLine {
        std::mem::replace(self, RawLine::empty(self.key))
    }
}

/// What events of one kind share: name, category, row kind (their event metadata).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct EventKind {
    pub(crate) name: Sid,
    pub(crate) cat: Sid,
    pub(crate) row: Kind,
    pub(crate) class: Class,
}

impl std::hash::Hash for Class {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        (*self as u8).hash(state);
    }
}

/// A top-level key's value (trace metadata).
#[derive(Debug, Clone)]
pub(crate) enum TopValue {
    Scalar(ArgVal),
    /// An array or object: its JSON text, and for an array of objects (e.g.
    /// `deviceProperties`) each object's members (one level; deeper values as JSON text).
    Compound {
        text: Sid,
        objects: Option<Vec<Vec<(u32, ArgVal)>>>,
    },
}

/// Everything the first pass keeps.
pub(crate) struct Collected {
    /// Every string, with arg keys and stat names numbered apart (dense key ids, see
    /// [`keys`]).
    pub(crate) strings: Interner,
    pub(crate) kinds: Vec<EventKind>,
    pub(crate) lines: Vec<RawLine>,
    pub(crate) thread_names: FxHashMap<(Ident, Ident), Sid>,
    pub(crate) thread_sort: FxHashMap<(Ident, Ident), i64>,
    pub(crate) process_names: FxHashMap<Ident, Sid>,
    pub(crate) process_labels: FxHashMap<Ident, Sid>,
    /// Top-level members other than `traceEvents`, in file order.
    pub(crate) top: Vec<(u32, TopValue)>,
    /// The first event's timestamp, floored to a microsecond (ps, relative to
    /// `baseTimeNanoseconds` when the trace has one).
    pub(crate) origin_ps: i128,
    /// Latest end seen (ps from the origin), for closing unmatched `B` events.
    pub(crate) max_end: i64,
    pub(crate) diag: Diagnostics,
    /// Events whose `E` never came are closed at `max_end` in `build`.
    pub(crate) devices: Vec<i64>,
}

/// A trace's bytes: all of them, or arriving while they are read.
#[derive(Clone, Copy)]
pub(crate) enum Input<'a> {
    Whole(&'a [u8]),
    Incoming(&'a dyn Incoming),
}

/// Reads a whole trace; answers it with the input's length.
pub(crate) fn collect(
    input: Input<'_>,
    release: &dyn ReleasePages,
    limits: &LoadLimits,
    split: split::Split,
) -> Result<(Collected, u64), KinetoError> {
    let (mut sc, expected_len) = match input {
        Input::Whole(bytes) => (Scanner::new(bytes), bytes.len()),
        Input::Incoming(source) => (Scanner::incoming(source), source.expected_len()),
    };
    if expected_len as u64 > limits.max_profile_bytes {
        let exceeded = LimitExceeded {
            limit: Limit::ProfileBytes,
            allowed: limits.max_profile_bytes,
            at_least: expected_len as u64,
        };
        return Err(KinetoError::LimitExceeded(exceeded));
    }
    let mut r = Reader::new(expected_len as u64, limits);
    r.split = split;
    let result = r.document(&mut sc, release);
    match result {
        Ok(()) => {}
        Err(JsonError::Eof) if r.seen_events => {
            r.out.diag.add(DiagnosticKind::TruncatedInput, 1);
        }
        Err(JsonError::Eof) => {
            return Err(KinetoError::NotATrace { reason: "the file ends before any trace event".into() });
        }
        Err(JsonError::Unexpected { at, expected }) if r.seen_events => {
            let _ = (at, expected);
            r.out.diag.add(DiagnosticKind::CorruptTail, 1);
        }
        Err(JsonError::Unexpected { at, expected }) => {
            return Err(KinetoError::NotATrace { reason: format!("expected {expected} at byte {at}") });
        }
    }
    if let Some(e) = r.limit_error {
        return Err(KinetoError::LimitExceeded(e));
    }
    match r.out.strings.state() {
        State::Within => {}
        // (A table that gave up as a second half is never the reader's: see `split`.)
        State::OverBudget | State::HalvesOverBudget => {
            return Err(KinetoError::LimitExceeded(r.out.strings.exceeded()));
        }
        State::Full => r.too_large = r.too_large.or(Some("more than 4 GiB of distinct strings")),
    }
    if let Some(what) = r.too_large {
        return Err(KinetoError::Build(oxprof_model::BuildError::TooLarge(what)));
    }
    if !r.seen_trace_events {
        return Err(KinetoError::NotATrace { reason: "no \"traceEvents\" array".into() });
    }
    r.out.diag.add(DiagnosticKind::TrailingComma, r.trailing);
    // Growth left up to half of each buffer unused; the model is built next, beside them.
    for line in &mut r.out.lines {
        line.events.shrink_to_fit();
        line.args.shrink_to_fit();
        line.args_tail.shrink_to_fit();
        line.flows.shrink_to_fit();
    }
    r.out.diag.add(DiagnosticKind::InvalidUtf8, r.out.strings.invalid_utf8);
    // What follows the document (whitespace, or what a corrupt tail hid) still counts
    // towards the input's size.
    while sc.more() {}
    let len = sc.bytes_so_far();
    release.release(0..len);
    Ok((r.out, len as u64))
}

/// The fields of one trace event the importer reads (args go to `Reader::args`).
#[derive(Default)]
struct Fields {
    ph: u8,
    /// `None` without a `cat`; `Some(None)` for a category the importer does not know.
    cat: Option<Option<Class>>,
    cat_sid: Sid,
    name: Sid,
    pid: Option<Ident>,
    tid: Option<Ident>,
    ts: Option<Result<i128, ()>>,
    dur: Option<Result<i128, ()>>,
    id: Option<u64>,
    bp_enclosing: bool,
    scope: Option<Sid>,
}

/// What an `M` event says.
#[derive(Debug, Clone, Copy)]
enum Meta {
    ThreadName(Ident, Ident, Sid),
    ProcessName(Ident, Sid),
    ProcessLabels(Ident, Sid),
    ThreadSort(Ident, Ident, i64),
}

struct Reader {
    out: Collected,
    /// Args of the event being read.
    args: Vec<Arg>,
    kscratch: Vec<u8>,
    vscratch: Vec<u8>,
    /// See [`key_id`] (0: empty slot; id 0 is the empty key, never cached).
    key_cache: [u32; 256],
    /// Kind ids by kind (hashed from `out.kinds`: 4 bytes a kind, not a second copy).
    kind_index: HashTable<u32>,
    /// Per name id: the kind last used with it.
    kind_by_name: Vec<u32>,
    line_index: FxHashMap<LineKey, u32>,
    /// The line of the previous event, with its pid and tid.
    last_line: Option<(LineKey, Ident, Ident, u32)>,
    /// Host (pid, tid) pairs that were used for device events: flows there go to the
    /// device line.
    device_alias: FxHashMap<(Ident, Ident), u32>,
    /// Flows whose (pid, tid) had no line yet.
    pending_flows: Vec<(Ident, Ident, RawFlow)>,
    origin_set: bool,
    trailing: u64,
    seen_events: bool,
    seen_trace_events: bool,
    lines_allowed: u64,
    planes_allowed: u64,
    limit_error: Option<LimitExceeded>,
    /// A size the importer's rows cannot index (only with limits off).
    too_large: Option<&'static str>,
    /// Set for the reader of a second half read on a guess (see [`split`]): what depends on
    /// the first half is recorded here instead of applied.
    deferred: Option<Box<split::Deferred>>,
    /// Whether the events array may still be read in two halves (asked once, when the
    /// first timestamp is known).
    split: split::Split,
}

impl Reader {
    fn new(file_bytes: u64, limits: &LoadLimits) -> Self {
        Reader {
            out: Collected {
                strings: interner(Interner::allowance(limits, file_bytes)),
                kinds: Vec::new(),
                lines: Vec::new(),
                thread_names: FxHashMap::default(),
                thread_sort: FxHashMap::default(),
                process_names: FxHashMap::default(),
                process_labels: FxHashMap::default(),
                top: Vec::new(),
                origin_ps: 0,
                max_end: 0,
                diag: Diagnostics::default(),
                devices: Vec::new(),
            },
            args: Vec::new(),
            kscratch: Vec::new(),
            vscratch: Vec::new(),
            key_cache: [0; 256],
            kind_index: HashTable::new(),
            kind_by_name: Vec::new(),
            line_index: FxHashMap::default(),
            last_line: None,
            device_alias: FxHashMap::default(),
            pending_flows: Vec::new(),
            origin_set: false,
            trailing: 0,
            seen_events: false,
            seen_trace_events: false,
            lines_allowed: limits.lines.for_size(file_bytes),
            planes_allowed: limits.planes.for_size(file_bytes),
            limit_error: None,
            too_large: None,
            deferred: None,
            split: split::Split::Auto,
        }
    }

    /// The whole document: `{ …, "traceEvents": [ … ], … }` or a bare `[ … ]`.
    fn document(&mut self, sc: &mut Scanner<'_>, release: &dyn ReleasePages) -> Result<(), JsonError> {
        match sc.peek() {
            Some(b'[') => {
                self.seen_trace_events = true;
                self.events(sc, release)?;
            }
            Some(b'{') => {
                sc.bump();
                if sc.first_member(b'}')? {
                    loop {
                        let key = sc.key(&mut self.kscratch)?;
                        if key.bytes() == b"traceEvents" && sc.peek() == Some(b'[') {
                            self.seen_trace_events = true;
                            self.events(sc, release)?;
                        } else {
                            let k = self.out.strings.key(key.bytes());
                            let v = self.top_value(sc)?;
                            self.out.top.push((k, v));
                        }
                        if !sc.next_member(b'}', &mut self.trailing)? {
                            break;
                        }
                    }
                }
            }
            Some(_) => return Err(JsonError::Unexpected { at: sc.pos(), expected: "'{' or '['" }),
            None => return Err(JsonError::Eof),
        }
        self.finish_flows();
        Ok(())
    }

    /// The `traceEvents` array (next byte `[`).
    fn events(&mut self, sc: &mut Scanner<'_>, release: &dyn ReleasePages) -> Result<(), JsonError> {
        sc.bump();
        if !sc.first_member(b']')? {
            return Ok(());
        }
        let mut released = 0;
        loop {
            // Once the first timestamp is known, a large input is read in two halves side
            // by side (`split`).
            if self.origin_set && self.split != split::Split::Never {
                let split = std::mem::replace(&mut self.split, split::Split::Never);
                if let Some(plan) = split::plan(sc, release, split) {
                    return self.events_split(sc, release, released, plan);
                }
            }
            if !self.element(sc, release, &mut released)? {
                return Ok(());
            }
        }
    }

    /// Reads one element of `traceEvents` and what follows it; `Ok(false)` at the end of
    /// the array (or when a budget ran out). Releases consumed input every few MiB.
    #[inline]
    fn element(
        &mut self,
        sc: &mut Scanner<'_>,
        release: &dyn ReleasePages,
        released: &mut usize,
    ) -> Result<bool, JsonError> {
        let at = sc.pos();
        if at - *released >= RELEASE_EVERY {
            release.release(*released..at);
            *released = at;
        }
        self.event(sc)?;
        if self.limit_error.is_some() || self.too_large.is_some() || self.out.strings.state() != State::Within {
            // A budget is exhausted: stop reading (the error is reported by `collect`).
            return Ok(false);
        }
        sc.next_member(b']', &mut self.trailing)
    }

    /// One element of `traceEvents`.
    fn event(&mut self, sc: &mut Scanner<'_>) -> Result<(), JsonError> {
        if sc.peek() != Some(b'{') {
            sc.skip_value()?;
            self.out.diag.add(DiagnosticKind::MalformedEvent, 1);
            return Ok(());
        }
        sc.bump();
        self.args.clear();
        let mut f = Fields::default();
        let mut string_times = 0;
        if sc.first_member(b'}')? {
            loop {
                match sc.key_word(&mut self.kscratch)? {
                    Some(event_keys::PH) => {
                        f.ph = match sc.one_byte_string() {
                            Some(c) => c,
                            None => match sc.value(&mut self.vscratch)? {
                                ValueRef::Str(s) => match s.bytes() {
                                    [c] => *c,
                                    _ => b'?',
                                },
                                _ => b'?',
                            },
                        };
                    }
                    Some(event_keys::CAT) => {
                        if let ValueRef::Str(s) = sc.value(&mut self.vscratch)? {
                            f.cat = Some(classify(s.bytes()));
                            f.cat_sid = self.out.strings.intern(s.bytes());
                        }
                    }
                    Some(event_keys::NAME) => {
                        f.name = match sc.value(&mut self.vscratch)? {
                            ValueRef::Str(s) => self.out.strings.intern(s.bytes()),
                            ValueRef::Num(n) => self.out.strings.intern(n),
                            _ => 0,
                        };
                    }
                    Some(event_keys::PID) => f.pid = self.ident(sc)?,
                    Some(event_keys::TID) => f.tid = self.ident(sc)?,
                    Some(event_keys::TS) => f.ts = self.time(sc, &mut string_times)?,
                    Some(event_keys::DUR) => f.dur = self.time(sc, &mut string_times)?,
                    Some(event_keys::ID) => {
                        f.id = match sc.value(&mut self.vscratch)? {
                            ValueRef::Num(n) => parse_u64(n),
                            ValueRef::Str(s) => Some(string_id(s.bytes())),
                            _ => None,
                        }
                    }
                    Some(event_keys::BP) => {
                        if let ValueRef::Str(s) = sc.value(&mut self.vscratch)? {
                            f.bp_enclosing = s.bytes() == b"e";
                        }
                    }
                    Some(event_keys::SCOPE) => {
                        if let ValueRef::Str(s) = sc.value(&mut self.vscratch)? {
                            f.scope = Some(self.out.strings.intern(s.bytes()));
                        }
                    }
                    Some(event_keys::ARGS) => {
                        if sc.peek() == Some(b'{') {
                            let mut args = std::mem::take(&mut self.args);
                            let r = self.object_into(sc, &mut args);
                            self.args = args;
                            r?;
                        } else {
                            sc.skip_value()?;
                        }
                    }
                    _ => sc.skip_value()?,
                }
                if !sc.next_member(b'}', &mut self.trailing)? {
                    break;
                }
            }
        }
        self.seen_events = true;
        self.out.diag.add(DiagnosticKind::StringTimestamp, string_times);
        self.dispatch(f);
        Ok(())
    }

    /// A `pid` or `tid` value ([`ident`]); plain integers read straight from the bytes.
    #[inline]
    fn ident(&mut self, sc: &mut Scanner<'_>) -> Result<Option<Ident>, JsonError> {
        Ok(match sc.number_with(int_prefix) {
            Some(x) => Some(Ident::Num(x)),
            None => ident(sc.value(&mut self.vscratch)?, &mut self.out.strings),
        })
    }

    /// A `ts` or `dur` value ([`time`]); plain decimals read straight from the bytes.
    #[inline]
    fn time(&mut self, sc: &mut Scanner<'_>, string_times: &mut u64) -> Result<Option<Result<i128, ()>>, JsonError> {
        Ok(match sc.number_with(us_prefix_to_ps) {
            Some(ps) => Some(Ok(ps)),
            None => time(sc.value(&mut self.vscratch)?, string_times),
        })
    }

    /// Reads an object's members (next byte `{`) as args: one level, deeper values as
    /// their JSON text.
    fn object_into(&mut self, sc: &mut Scanner<'_>, out: &mut Vec<Arg>) -> Result<(), JsonError> {
        sc.bump();
        if !sc.first_member(b'}')? {
            return Ok(());
        }
        loop {
            let key = sc.key(&mut self.kscratch)?;
            let k = key_id(&mut self.key_cache, &mut self.out.strings, key.bytes());
            let v = match sc.number_with(int_prefix) {
                Some(x) => ArgVal::I64(x),
                None => arg_value(sc.value(&mut self.vscratch)?, &mut self.out.strings),
            };
            out.push(Arg::new(k, v));
            if !sc.next_member(b'}', &mut self.trailing)? {
                return Ok(());
            }
        }
    }

    /// A top-level member's value.
    fn top_value(&mut self, sc: &mut Scanner<'_>) -> Result<TopValue, JsonError> {
        let start = sc.pos();
        let objects = match sc.peek() {
            Some(b'[') => {
                let mut attempt = sc.clone();
                match self.objects(&mut attempt) {
                    Ok(objects) => {
                        *sc = attempt;
                        Some(objects)
                    }
                    Err(_) => None,
                }
            }
            _ => None,
        };
        if objects.is_none()
            && let v @ (ValueRef::Str(_) | ValueRef::Num(_) | ValueRef::Bool(_) | ValueRef::Null) =
                sc.value(&mut self.vscratch)?
        {
            return Ok(TopValue::Scalar(arg_value(v, &mut self.out.strings)));
        }
        let text = self.out.strings.intern(sc.since(start).trim_ascii());
        Ok(TopValue::Compound { text, objects })
    }

    /// An array whose elements are all objects.
    fn objects(&mut self, sc: &mut Scanner<'_>) -> Result<Vec<Vec<(u32, ArgVal)>>, JsonError> {
        sc.expect(b'[', "[")?;
        let mut out = Vec::new();
        if !sc.first_member(b']')? {
            return Ok(out);
        }
        loop {
            if sc.peek() != Some(b'{') {
                return Err(JsonError::Unexpected { at: sc.pos(), expected: "an object" });
            }
            let mut members = Vec::new();
            self.object_into(sc, &mut members)?;
            out.push(members.iter().map(|a| (a.key, a.value())).collect());
            if !sc.next_member(b']', &mut self.trailing)? {
                return Ok(out);
            }
        }
    }

    /// Files one parsed event.
    fn dispatch(&mut self, f: Fields) {
        match f.ph {
            b'M' => return self.metadata(f),
            b'X' | b'B' | b'E' | b'i' | b'I' | b'R' | b'C' | b's' | b't' | b'f' => {}
            0 => {
                self.out.diag.add(DiagnosticKind::MalformedEvent, 1);
                return;
            }
            _ => self.out.diag.add(DiagnosticKind::UnknownPhase, 1),
        }
        let ts = match f.ts {
            Some(Ok(ts)) => ts,
            _ => {
                self.out.diag.add(DiagnosticKind::BadTimestamp, 1);
                return;
            }
        };
        if !self.origin_set {
            self.origin_set = true;
            // Whole microseconds keep the origin exact in nanoseconds.
            self.out.origin_ps = ts.div_euclid(1_000_000) * 1_000_000;
        }
        let rel = ts - self.out.origin_ps;
        if rel.abs() > MAX_REL_PS {
            self.out.diag.add(DiagnosticKind::BadTimestamp, 1);
            return;
        }
        let start = rel as i64;
        let pid = f.pid.unwrap_or(Ident::Num(0));
        let tid = f.tid.unwrap_or(Ident::Num(0));
        if matches!(f.ph, b's' | b't' | b'f') {
            return self.flow(&f, pid, tid, start);
        }
        let class = match f.cat {
            Some(Some(c)) => c,
            None => Class::Host,
            Some(None) => {
                self.out.diag.add(DiagnosticKind::UnknownCategory, 1);
                Class::Host
            }
        };
        let line = if f.ph == b'C' {
            0
        } else {
            match self.line_for(class, pid, tid) {
                Some(line) => line,
                None => return,
            }
        };
        match f.ph {
            b'X' => {
                let dur = self.duration(f.dur);
                self.push(line, &f, class, Kind::Complete, start, dur);
            }
            b'B' => {
                let l = &mut self.out.lines[line as usize];
                l.open.push(l.events.len() as u32);
                self.push(line, &f, class, Kind::Complete, start, OPEN);
            }
            b'E' => {
                let l = &mut self.out.lines[line as usize];
                match l.open.pop() {
                    Some(i) => {
                        let e = &mut l.events[i as usize];
                        e.dur = (start - e.start).max(0);
                        self.out.max_end = self.out.max_end.max(start);
                    }
                    // Its `B` may be in the first half.
                    None if let Some(d) = &mut self.deferred => d.early_ends.push((line, start)),
                    None => self.out.diag.add(DiagnosticKind::UnmatchedEnd, 1),
                }
            }
            b'C' => {
                // Counters of a process share one `_counters_` line, as in XProf.
                let tid = Ident::Str(self.out.strings.intern(b"_counters_"));
                if let Some(line) = self.line_for(Class::Host, pid, tid) {
                    self.counters(line, &f, Class::Host, start);
                }
            }
            _ => self.push(line, &f, class, Kind::Instant, start, 0),
        }
    }

    /// A duration in ps (bad ones are 0, counted).
    fn duration(&mut self, dur: Option<Result<i128, ()>>) -> i64 {
        match dur {
            Some(Ok(d)) if (0..=MAX_REL_PS).contains(&d) => d as i64,
            _ => {
                self.out.diag.add(DiagnosticKind::BadDuration, 1);
                0
            }
        }
    }

    /// Appends an event row with the args just read.
    fn push(&mut self, line: u32, f: &Fields, class: Class, row: Kind, start: i64, dur: i64) {
        let kind = self.kind(f.name, f.cat_sid, row, class);
        let l = &mut self.out.lines[line as usize];
        if !l.args_tail.is_empty() {
            // Events after a merged split read (a second `traceEvents`): one list again.
            let tail = std::mem::take(&mut l.args_tail);
            l.args.extend_from_slice(&tail);
        }
        // Rows index their thread's args and events with 32 bits.
        if l.args.len() + self.args.len() + 1 >= u32::MAX as usize || l.events.len() >= u32::MAX as usize {
            self.too_large = Some("more than 2^32 events or args on one thread");
            return;
        }
        let args = l.args.len() as u32;
        l.args.extend_from_slice(&self.args);
        if let Some(scope) = f.scope.filter(|_| row == Kind::Instant) {
            l.args.push(Arg::new(keys::SCOPE, ArgVal::Str(scope)));
        }
        let nargs = l.args.len() as u32 - args;
        l.events.push(RawEvent { start, dur, kind, args, nargs });
        match class {
            Class::Kernel => l.kernels = true,
            Class::Memset => l.memsets = true,
            Class::Memcpy if !l.copies.contains(&f.name) => l.copies.push(f.name),
            _ => {}
        }
        if dur >= 0 {
            self.out.max_end = self.out.max_end.max(start.saturating_add(dur));
        }
    }

    /// `C` events: one counter row per numeric series.
    fn counters(&mut self, line: u32, f: &Fields, class: Class, start: i64) {
        let series = std::mem::take(&mut self.args);
        let single = series.len() == 1;
        for a in &series {
            let value = match a.value() {
                v @ (ArgVal::I64(_) | ArgVal::U64(_) | ArgVal::F64(_)) => v,
                _ => continue,
            };
            let name = if single {
                f.name
            } else {
                let text = format!("{}.{}", self.out.strings.get(f.name), self.out.strings.key_str(a.key));
                self.out.strings.intern(text.as_bytes())
            };
            self.args.clear();
            self.args.push(Arg::new(keys::COUNTER_VALUE, value));
            let g = Fields { name, ..*f };
            self.push(line, &g, class, Kind::Counter, start, 0);
        }
        self.args = series;
    }

    /// `s`/`t`/`f`: a flow endpoint on its thread or stream.
    fn flow(&mut self, f: &Fields, pid: Ident, tid: Ident, ts: i64) {
        let Some(id) = f.id else {
            self.out.diag.add(DiagnosticKind::UnboundFlow, 1);
            return;
        };
        if self.deferred.is_some() {
            // The encoding depends on the category's string id, known after the merge.
            return self.defer_flow(pid, tid, f.ph, f.cat_sid, id, ts);
        }
        let _ = f.bp_enclosing;
        let flow = RawFlow { ts, encoded: self.flow_encoding(f.ph, f.cat_sid, id) };
        match self.flow_line(pid, tid) {
            Some(line) => self.out.lines[line as usize].flows.push(flow),
            None => self.pending_flows.push((pid, tid, flow)),
        }
    }

    /// XProf's flow stat: direction in bits 0-1, id in 2-57, category in 58-63.
    fn flow_encoding(&self, ph: u8, cat: Sid, id: u64) -> u64 {
        let (direction, category) = match ph {
            b's' => (2u64, 0u64),
            b't' => (3, 0),
            _ => (1, 0),
        };
        let is_launch = matches!(self.out.strings.get(cat), "ac2g" | "async");
        let (id, category) = if is_launch {
            (id, category | 9) // XProf's `ContextType::kGpuLaunch`
        } else {
            // Other categories (fwdbwd, …) get ids of their own.
            let mixed = fx(&[u64::from(cat), id]) | (1 << 55);
            (mixed, category)
        };
        (category << 58) | ((id & ((1 << 56) - 1)) << 2) | direction
    }

    fn flow_line(&self, pid: Ident, tid: Ident) -> Option<u32> {
        self.device_alias.get(&(pid, tid)).or_else(|| self.line_index.get(&LineKey::Host { pid, tid })).copied()
    }

    /// Flows read before their thread's first event.
    fn finish_flows(&mut self) {
        for (pid, tid, flow) in std::mem::take(&mut self.pending_flows) {
            match self.flow_line(pid, tid) {
                Some(line) => self.out.lines[line as usize].flows.push(flow),
                None => self.out.diag.add(DiagnosticKind::UnboundFlow, 1),
            }
        }
    }

    /// `M` events: process and thread names and sort indexes.
    fn metadata(&mut self, f: Fields) {
        let pid = f.pid.unwrap_or(Ident::Num(0));
        let tid = f.tid.unwrap_or(Ident::Num(0));
        let arg = |key: u32| self.args.iter().find(|a| a.key == key).map(Arg::value);
        let string = |v: Option<ArgVal>| match v {
            Some(ArgVal::Str(s)) => Some(s),
            _ => None,
        };
        let meta = match self.out.strings.get(f.name) {
            "thread_name" => string(arg(keys::NAME)).map(|name| Meta::ThreadName(pid, tid, name)),
            "process_name" => string(arg(keys::NAME)).map(|name| Meta::ProcessName(pid, name)),
            "process_labels" => string(arg(keys::LABELS)).map(|labels| Meta::ProcessLabels(pid, labels)),
            "thread_sort_index" => self
                .args
                .iter()
                .find(|a| a.key == keys::SORT_INDEX)
                .and_then(Arg::as_i64)
                .map(|i| Meta::ThreadSort(pid, tid, i)),
            // process_sort_index and others: nothing in the model holds them.
            _ => None,
        };
        match (meta, &mut self.deferred) {
            // Whether a name renames one the first half gave is known after the merge.
            (Some(meta), Some(d)) => d.metadata.push(meta),
            (Some(meta), None) => self.apply(meta),
            (None, _) => {}
        }
    }

    fn apply(&mut self, meta: Meta) {
        match meta {
            Meta::ThreadName(pid, tid, name) => {
                if let Some(old) = self.out.thread_names.insert((pid, tid), name)
                    && old != name
                {
                    self.out.diag.add(DiagnosticKind::DuplicateThreadName, 1);
                }
            }
            Meta::ProcessName(pid, name) => {
                self.out.process_names.insert(pid, name);
            }
            Meta::ProcessLabels(pid, labels) => {
                self.out.process_labels.insert(pid, labels);
            }
            Meta::ThreadSort(pid, tid, i) => {
                self.out.thread_sort.insert((pid, tid), i);
            }
        }
    }

    /// The event kind id of (name, category, row kind).
    fn kind(&mut self, name: Sid, cat: Sid, row: Kind, class: Class) -> u32 {
        let k = EventKind { name, cat, row, class };
        // The last kind of each name (a name almost always has one category).
        let cached = self.kind_by_name.get(name as usize).copied().unwrap_or(u32::MAX);
        if self.out.kinds.get(cached as usize) == Some(&k) {
            return cached;
        }
        let id = self.kind_id(k);
        if self.kind_by_name.len() <= name as usize {
            self.kind_by_name.resize(name as usize + 1, u32::MAX);
        }
        self.kind_by_name[name as usize] = id;
        id
    }

    /// The id of a kind (new ones numbered in order of first use).
    fn kind_id(&mut self, k: EventKind) -> u32 {
        let hash = FxBuildHasher.hash_one(k);
        let kinds = &self.out.kinds;
        if let Some(&id) = self.kind_index.find(hash, |&id| kinds[id as usize] == k) {
            return id;
        }
        let id = kinds.len() as u32;
        self.out.kinds.push(k);
        let kinds = &self.out.kinds;
        self.kind_index.insert_unique(hash, id, |&other| FxBuildHasher.hash_one(kinds[other as usize]));
        id
    }

    /// The line an event goes to (created on first use, within the lines and planes
    /// budgets; `None` once a budget is exhausted).
    fn line_for(&mut self, class: Class, pid: Ident, tid: Ident) -> Option<u32> {
        let key = if class.is_device() {
            let device = self.arg_i64(keys::DEVICE).or(num(pid)).unwrap_or(0);
            let stream = self.arg_i64(keys::STREAM).or(num(tid)).unwrap_or(0);
            LineKey::Device { device, stream }
        } else {
            LineKey::Host { pid, tid }
        };
        // Consecutive events are mostly on one thread: skip the hash lookups then.
        if let Some((k, p, t, l)) = self.last_line
            && k == key
            && p == pid
            && t == tid
        {
            return Some(l);
        }
        let line = match self.line_index.get(&key) {
            Some(&l) => l,
            None => self.new_line(key)?,
        };
        if class.is_device() && !self.device_alias.contains_key(&(pid, tid)) {
            self.device_alias.insert((pid, tid), line);
        }
        self.last_line = Some((key, pid, tid, line));
        Some(line)
    }

    #[cold]
    fn new_line(&mut self, key: LineKey) -> Option<u32> {
        if self.out.lines.len() as u64 >= self.lines_allowed {
            let at_least = self.out.lines.len() as u64 + 1;
            self.limit_error = Some(LimitExceeded { limit: Limit::Lines, allowed: self.lines_allowed, at_least });
            return None;
        }
        if let LineKey::Device { device, .. } = key
            && !self.out.devices.contains(&device)
        {
            // The host plane counts as one.
            if self.out.devices.len() as u64 + 1 >= self.planes_allowed {
                let at_least = self.out.devices.len() as u64 + 2;
                self.limit_error = Some(LimitExceeded { limit: Limit::Planes, allowed: self.planes_allowed, at_least });
                return None;
            }
            self.out.devices.push(device);
        }
        let id = self.out.lines.len() as u32;
        self.out.lines.push(RawLine::empty(key));
        self.line_index.insert(key, id);
        Some(id)
    }

    fn arg_i64(&self, key: u32) -> Option<i64> {
        self.args.iter().find(|a| a.key == key).and_then(Arg::as_i64)
    }
}

/// The id of an arg key. A trace uses a few dozen keys millions of times: a small
/// direct-mapped cache (by length and end bytes) answers most without hashing.
#[inline]
fn key_id(cache: &mut [u32; 256], strings: &mut Interner, key: &[u8]) -> u32 {
    let (first, last) = (key.first().copied().unwrap_or(0), key.last().copied().unwrap_or(0));
    let slot = (key.len().wrapping_mul(31) ^ usize::from(first).wrapping_mul(7) ^ usize::from(last)) & 255;
    let cached = cache[slot];
    if cached != 0 && strings.key_str(cached).as_bytes() == key {
        return cached;
    }
    let id = strings.key(key);
    cache[slot] = id;
    id
}

/// An empty table with the keys the importer gives meaning to numbered first ([`keys`]).
pub(super) fn interner(allowed: u64) -> Interner {
    let mut strings = Interner::new(allowed);
    for name in keys::NAMES {
        strings.key(name.as_bytes());
    }
    // The phases the model build gives instants and counters: the host plane reads this
    // table, so that every string it names is already there.
    strings.intern(b"i");
    strings.intern(b"C");
    debug_assert_eq!(strings.key_str(keys::TIME_SHIFT_NS), crate::TIME_SHIFT_STAT);
    strings
}

fn num(id: Ident) -> Option<i64> {
    match id {
        Ident::Num(n) => Some(n),
        Ident::Str(_) => None,
    }
}

/// A pid or tid value: numbers (and strings of digits, as older traces write tids) are
/// numbers; `"stream 7"` is stream 7; other strings stay strings.
fn ident(v: ValueRef<'_, '_>, strings: &mut Interner) -> Option<Ident> {
    match v {
        ValueRef::Num(n) => Some(match parse_i64(n) {
            Some(x) => Ident::Num(x),
            None => Ident::Str(strings.intern(n)),
        }),
        ValueRef::Str(s) => {
            let b = s.bytes();
            let digits = b.strip_prefix(b"stream ").unwrap_or(b);
            Some(match parse_i64(digits) {
                Some(x) if !digits.is_empty() => Ident::Num(x),
                _ => Ident::Str(strings.intern(b)),
            })
        }
        ValueRef::Null => None,
        ValueRef::Bool(b) => Some(Ident::Num(i64::from(b))),
        ValueRef::Compound(c) => Some(Ident::Str(strings.intern(c))),
    }
}

/// A `ts`/`dur` value in ps; strings are parsed too (and counted).
fn time(v: ValueRef<'_, '_>, string_times: &mut u64) -> Option<Result<i128, ()>> {
    match v {
        ValueRef::Num(n) => Some(us_text_to_ps(n).ok_or(())),
        ValueRef::Str(s) => {
            *string_times += 1;
            Some(us_text_to_ps(s.bytes().trim_ascii()).ok_or(()))
        }
        ValueRef::Null => None,
        _ => Some(Err(())),
    }
}

/// An args value, typed: integers as `I64` (or `U64` past `i64::MAX`), other numbers as
/// `F64` (NaN and infinities included), strings interned, arrays and objects as their text.
fn arg_value(v: ValueRef<'_, '_>, strings: &mut Interner) -> ArgVal {
    match v {
        ValueRef::Str(s) => ArgVal::Str(strings.intern(s.bytes())),
        ValueRef::Num(n) => number(n),
        ValueRef::Bool(b) => ArgVal::Bool(b),
        ValueRef::Null => ArgVal::Null,
        ValueRef::Compound(c) => ArgVal::Json(strings.intern(c)),
    }
}

/// A JSON number's text as the narrowest exact type.
pub(crate) fn number(n: &[u8]) -> ArgVal {
    if let Some(x) = parse_i64(n) {
        return ArgVal::I64(x);
    }
    if let Some(x) = parse_u64(n) {
        return ArgVal::U64(x);
    }
    let f = match n {
        b"NaN" => f64::NAN,
        b"Infinity" => f64::INFINITY,
        b"-Infinity" => f64::NEG_INFINITY,
        _ => std::str::from_utf8(n).ok().and_then(|s| s.parse().ok()).unwrap_or(f64::NAN),
    };
    ArgVal::F64(f)
}

/// [`parse_i64`] of the integer at the start of `bytes` (1 to 18 digits, optionally
/// negative), with its length; for [`Scanner::number_with`].
#[inline]
fn int_prefix(bytes: &[u8]) -> Option<(i64, usize)> {
    let negative = bytes.first() == Some(&b'-');
    let start = usize::from(negative);
    let (v, n) = leading_digits(&bytes[start..]);
    if n == 0 || n > 18 {
        return None;
    }
    // 18 digits fit an i64.
    let v = v as i64;
    Some((if negative { -v } else { v }, start + n))
}

/// Decimal digits (optionally negative) that fit an `i64`.
#[inline]
fn parse_i64(n: &[u8]) -> Option<i64> {
    let (neg, digits) = match n.first() {
        Some(b'-') => (true, &n[1..]),
        _ => (false, n),
    };
    if digits.is_empty() || digits.len() > 19 {
        return None;
    }
    let mut v: i64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(i64::from(d - b'0'))?;
    }
    Some(if neg { -v } else { v })
}

fn parse_u64(n: &[u8]) -> Option<u64> {
    if n.is_empty() || n.len() > 20 || !n.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut v: u64 = 0;
    for &d in n {
        v = v.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
    }
    Some(v)
}

/// A string flow id: hexadecimal (`"0x1f"`) or hashed.
fn string_id(s: &[u8]) -> u64 {
    if let Some(hex) = s.strip_prefix(b"0x")
        && let Some(v) = std::str::from_utf8(hex).ok().and_then(|h| u64::from_str_radix(h, 16).ok())
    {
        return v;
    }
    if let Some(v) = parse_u64(s) {
        return v;
    }
    let mut h = 0u64;
    for chunk in s.chunks(8) {
        let mut w = [0u8; 8];
        w[..chunk.len()].copy_from_slice(chunk);
        h = fx(&[h, u64::from_le_bytes(w)]);
    }
    h
}

/// A small deterministic mix of integers (flow ids of their own per category).
fn fx(parts: &[u64]) -> u64 {
    let mut h: u64 = 0x9e37_79b9_7f4a_7c15;
    for &p in parts {
        h = (h.rotate_left(5) ^ p).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
    h ^ (h >> 29)
}
