//! Reading a large `traceEvents` array in two halves side by side, with the model it gives
//! identical to one reader's.
//!
//! Once the first event's timestamp (the origin) is known, a second reader starts at an
//! event start guessed near the middle of what is left (`},` then `{"…`), on its own
//! thread. The first reader goes on from the front; when it reaches the guessed offset
//! exactly at an element of the array, the guess is proven right and the second reader's
//! rows are merged in (strings, keys, kinds and lines renumbered as one reader would have
//! numbered them: first use in file order). If it steps over the offset instead (the guess
//! was inside a string or a nested value), or the array ends before it, the second reader
//! is stopped and its work dropped: the first reader reads on alone.
//!
//! What a second-half event depends on from the first half is recorded and settled in the
//! merge: an `E` whose `B` is in the first half, a flow whose thread or stream first
//! appears in the first half, thread and process names (renames are counted), the lines
//! and planes budgets. Only input that reads the same when read again (a file, memory) is
//! split: a wrong guess means the first reader reads what the second already released.

use super::{Arg, ArgVal, EventKind, Ident, LineKey, Meta, RawEvent, RawFlow, Reader};
use crate::intern::{Half, Sid, State};
use crate::json::{JsonError, Scanner};
use oxprof_model::{DiagnosticKind, ReleasePages};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Least input left (bytes) worth a second reader.
const MIN_SPLIT_BYTES: usize = 32 << 20;
/// How far past the middle an event start is looked for.
const SEARCH_BYTES: usize = 1 << 20;

/// Where the second reader starts.
#[derive(Clone, Copy)]
pub(super) struct Plan<'a> {
    buf: &'a [u8],
    at: usize,
}

/// Whether the events array may be read in two halves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Split {
    /// When the input is large enough, all here, rereadable, and there are two cores.
    Auto,
    /// A second reader starts at this byte whatever the input or the machine (tests and
    /// fuzzing compare it with one reader).
    At(usize),
    /// One reader.
    Never,
}

/// Whether (and where) to read the rest of the array in two halves; `sc` is at an element.
pub(super) fn plan<'a>(sc: &Scanner<'a>, release: &dyn ReleasePages, split: Split) -> Option<Plan<'a>> {
    let buf = sc.whole()?;
    let from = sc.pos();
    match split {
        Split::Never => None,
        Split::At(at) => (at > from && at < buf.len()).then_some(Plan { buf, at }),
        Split::Auto => {
            let rest = buf.len() - from;
            if rest < MIN_SPLIT_BYTES
                || !release.rereadable()
                || std::thread::available_parallelism().map_or(1, |n| n.get()) < 2
            {
                return None;
            }
            let at = event_start_after(buf, from + rest / 2)?;
            Some(Plan { buf, at })
        }
    }
}

/// The first `{` at or after `from` (within [`SEARCH_BYTES`]) that looks like the start of
/// an array element: `}` and `,` before it, a key after it (whitespace between).
pub(crate) fn event_start_after(buf: &[u8], from: usize) -> Option<usize> {
    let end = from.saturating_add(SEARCH_BYTES).min(buf.len());
    let window = buf.get(from..end)?;
    memchr::memchr_iter(b'{', window).map(|i| from + i).find(|&at| {
        let before = buf[..at].trim_ascii_end();
        let after = buf[at + 1..].trim_ascii_start();
        before.strip_suffix(b",").is_some_and(|b| b.trim_ascii_end().ends_with(b"}")) && after.first() == Some(&b'"')
    })
}

/// What the second reader leaves to the merge.
#[derive(Default)]
pub(super) struct Deferred {
    /// `E` events that found no open `B` on their line: (line, timestamp), in file order.
    pub(super) early_ends: Vec<(u32, i64)>,
    /// Every flow endpoint, in file order, with the lines the second half alone knew for
    /// its thread then.
    pub(super) flows: Vec<DeferredFlow>,
    /// `M` events' names and sort indexes, in file order.
    pub(super) metadata: Vec<Meta>,
}

pub(super) struct DeferredFlow {
    pid: Ident,
    tid: Ident,
    ph: u8,
    /// Category (this reader's string id) and id: the flow stat is encoded in the merge.
    cat: Sid,
    id: u64,
    ts: i64,
    /// The device line (pid, tid) was an alias of, and its host line, if any yet.
    alias: Option<u32>,
    host: Option<u32>,
}

/// Sets the flag when dropped (the first reader left early: the second should stop).
struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

impl Reader {
    /// Reads the rest of the array (`sc` at an element) in two halves per `plan`.
    pub(super) fn events_split<'a>(
        &mut self,
        sc: &mut Scanner<'a>,
        release: &dyn ReleasePages,
        mut released: usize,
        plan: Plan<'a>,
    ) -> Result<(), JsonError> {
        let stop = AtomicBool::new(false);
        // The two tables together stay within the strings budget: past it, the second
        // reader gives up (both count what both halves hold) and the first reads on alone.
        let first_cost = Arc::new(AtomicU64::new(0));
        self.out.strings.set_half(Some((Half::First, first_cost.clone())));
        let mut second = self.second_reader();
        second.out.strings.set_half(Some((Half::Second, first_cost)));
        let result = std::thread::scope(|scope| {
            let worker = scope.spawn(|| second.read_second_half(plan, release, &stop));
            let _stop_on_return = StopOnDrop(&stop);
            loop {
                let at = sc.pos();
                if at == plan.at {
                    let (second, rest, result) = worker.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
                    if second.out.strings.state() != State::HalvesOverBudget {
                        self.out.strings.set_half(None);
                        self.merge(second);
                        *sc = rest;
                        return result;
                    }
                    // The second half gave up at the strings budget: read on alone.
                    drop(second);
                    self.out.strings.set_half(None);
                    while self.element(sc, release, &mut released)? {}
                    return Ok(());
                }
                if at > plan.at {
                    // The guess was not an element of the array: read on alone.
                    stop.store(true, Ordering::Relaxed);
                    drop(worker.join().unwrap_or_else(|p| std::panic::resume_unwind(p)));
                    while self.element(sc, release, &mut released)? {}
                    return Ok(());
                }
                if !self.element(sc, release, &mut released)? {
                    return Ok(());
                }
            }
        });
        self.out.strings.set_half(None);
        result
    }

    /// A reader for the second half: the same origin and budgets, nothing read yet.
    fn second_reader(&self) -> Reader {
        let mut r = Reader::new(0, &oxprof_model::LoadLimits::none());
        r.out.strings = super::interner(self.out.strings.allowed());
        r.lines_allowed = self.lines_allowed;
        r.planes_allowed = self.planes_allowed;
        r.origin_set = true;
        r.out.origin_ps = self.out.origin_ps;
        r.seen_trace_events = true;
        r.split = Split::Never;
        r.deferred = Some(Box::default());
        r
    }

    /// Reads from `plan.at` to the end of the array (or until `stop`).
    fn read_second_half<'a>(
        mut self,
        plan: Plan<'a>,
        release: &dyn ReleasePages,
        stop: &AtomicBool,
    ) -> (Reader, Scanner<'a>, Result<(), JsonError>) {
        let mut sc = Scanner::at(plan.buf, plan.at);
        let mut released = plan.at;
        let result = loop {
            if stop.load(Ordering::Relaxed) {
                break Ok(());
            }
            match self.element(&mut sc, release, &mut released) {
                Ok(true) => {}
                Ok(false) => break Ok(()),
                Err(e) => break Err(e),
            }
        };
        (self, sc, result)
    }

    /// Records a flow endpoint of the second half (settled in [`Reader::merge`]).
    pub(super) fn defer_flow(&mut self, pid: Ident, tid: Ident, ph: u8, cat: Sid, id: u64, ts: i64) {
        let alias = self.device_alias.get(&(pid, tid)).copied();
        let host = self.line_index.get(&LineKey::Host { pid, tid }).copied();
        if let Some(d) = &mut self.deferred {
            d.flows.push(DeferredFlow { pid, tid, ph, cat, id, ts, alias, host });
        }
    }

    /// Appends what the second reader read, as if this reader had read it.
    fn merge(&mut self, mut b: Reader) {
        let deferred = b.deferred.take().map(|d| *d).unwrap_or_default();
        // In the second reader's order of first sight: after the first half's, as one
        // reader would have numbered them (the budget charged for the union).
        let strings: Vec<u32> = (0..b.out.strings.len() as u32)
            .map(|id| self.out.strings.intern(b.out.strings.get(id).as_bytes()))
            .collect();
        let keys: Vec<u32> = (0..b.out.strings.key_count() as u32)
            .map(|k| self.out.strings.key_of_string(strings[b.out.strings.key_string(k) as usize]))
            .collect();
        let sid = |s: u32| strings[s as usize];
        let ident = |i: Ident| match i {
            Ident::Str(s) => Ident::Str(sid(s)),
            n => n,
        };
        let arg = |a: &Arg| {
            let value = match a.value() {
                ArgVal::Str(s) => ArgVal::Str(sid(s)),
                ArgVal::Json(s) => ArgVal::Json(sid(s)),
                v => v,
            };
            Arg::new(keys[a.key as usize], value)
        };
        let kinds: Vec<u32> =
            b.out.kinds.iter().map(|k| self.kind_id(EventKind { name: sid(k.name), cat: sid(k.cat), ..*k })).collect();

        // Lines first seen in the second half are numbered after the first half's, in the
        // order the second half saw them (budgets checked as one reader would).
        let first_half_lines = self.out.lines.len() as u32;
        let mut lines = Vec::with_capacity(b.out.lines.len());
        for line in &b.out.lines {
            let key = match line.key {
                LineKey::Host { pid, tid } => LineKey::Host { pid: ident(pid), tid: ident(tid) },
                device => device,
            };
            match self.line_index.get(&key) {
                Some(&l) => lines.push(l),
                None => match self.new_line(key) {
                    Some(l) => lines.push(l),
                    None => return,
                },
            }
        }
        let line = |l: u32| lines[l as usize];

        // `E`s whose `B` was in the first half.
        for &(l, ts) in &deferred.early_ends {
            let target = &mut self.out.lines[line(l) as usize];
            match target.open.pop() {
                Some(i) => {
                    let e = &mut target.events[i as usize];
                    e.dur = (ts - e.start).max(0);
                    self.out.max_end = self.out.max_end.max(ts);
                }
                None => self.out.diag.add(DiagnosticKind::UnmatchedEnd, 1),
            }
        }

        // Flows, against what one reader would have known when it read them.
        for f in &deferred.flows {
            let (pid, tid) = (ident(f.pid), ident(f.tid));
            let first_half_host =
                self.line_index.get(&LineKey::Host { pid, tid }).copied().filter(|&l| l < first_half_lines);
            let target = self
                .device_alias
                .get(&(pid, tid))
                .copied()
                .or(f.alias.map(line))
                .or(first_half_host)
                .or(f.host.map(line));
            let flow = RawFlow { ts: f.ts, encoded: self.flow_encoding(f.ph, sid(f.cat), f.id) };
            match target {
                Some(l) => self.out.lines[l as usize].flows.push(flow),
                None => self.pending_flows.push((pid, tid, flow)),
            }
        }
        for (&(pid, tid), &l) in &b.device_alias {
            self.device_alias.entry((ident(pid), ident(tid))).or_insert(line(l));
        }

        for (i, from) in std::mem::take(&mut b.out.lines).into_iter().enumerate() {
            let to = &mut self.out.lines[lines[i] as usize];
            if to.events.len() + from.events.len() >= u32::MAX as usize
                || to.args.len() + to.args_tail.len() + from.args.len() + 1 >= u32::MAX as usize
            {
                self.too_large = Some("more than 2^32 events or args on one thread");
                return;
            }
            let (event_base, arg_base) = (to.events.len() as u32, (to.args.len() + to.args_tail.len()) as u32);
            // Renumbered where they are and moved, not copied: no second copy of the
            // second half's args, however large.
            let mut args = from.args;
            args.iter_mut().for_each(|a| *a = arg(a));
            if to.args_tail.is_empty() {
                to.args_tail = args;
            } else {
                to.args_tail.extend_from_slice(&args);
            }
            to.events.reserve_exact(from.events.len());
            to.events.extend(from.events.iter().map(|e| RawEvent {
                kind: kinds[e.kind as usize],
                args: e.args + arg_base,
                ..*e
            }));
            drop(from.events);
            to.flows.extend_from_slice(&from.flows);
            to.open.extend(from.open.iter().map(|&i| i + event_base));
            to.kernels |= from.kernels;
            to.memsets |= from.memsets;
            for &c in &from.copies {
                let c = sid(c);
                if !to.copies.contains(&c) {
                    to.copies.push(c);
                }
            }
        }

        for meta in deferred.metadata {
            self.apply(match meta {
                Meta::ThreadName(pid, tid, name) => Meta::ThreadName(ident(pid), ident(tid), sid(name)),
                Meta::ProcessName(pid, name) => Meta::ProcessName(ident(pid), sid(name)),
                Meta::ProcessLabels(pid, labels) => Meta::ProcessLabels(ident(pid), sid(labels)),
                Meta::ThreadSort(pid, tid, i) => Meta::ThreadSort(ident(pid), ident(tid), i),
            });
        }

        self.out.diag.merge(&b.out.diag);
        self.out.strings.invalid_utf8 += b.out.strings.invalid_utf8;
        self.out.max_end = self.out.max_end.max(b.out.max_end);
        self.trailing += b.trailing;
        self.seen_events |= b.seen_events;
        if self.limit_error.is_none() {
            self.limit_error = b.limit_error;
        }
        if self.too_large.is_none() {
            self.too_large = b.too_large;
        }
    }
}
