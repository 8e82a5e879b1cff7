//! The host spans a rank's DataLoader and torch.compile facts are read from, cut out of
//! HTA's rows when the rank is loaded: the rows (millions on a multi-GB trace) are then
//! dropped with the model instead of being kept for two facts that need a handful of names.
//!
//! Kept: every name of the rank that is a DataLoader fetch ([`is_data_loader`]), a
//! torch.compile timer ([`is_compile`]) or a compiled region ([`recompile_number`]), in
//! the rank's name order; the host events (`stream` −1) of those names; and the whole span
//! of the rank's host events (a rank without steps is one window).

use super::trace::RankTrace;
use crate::parse::is_data_loader;
use serde::{Deserialize, Serialize};

/// A host event of a kept name (µs, rounded as HTA rounds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostSpan {
    /// Index into [`HostSpans::names`].
    pub name: u32,
    /// Start, µs.
    pub ts: i64,
    /// End, µs (may precede `ts` for sub-µs events, as in HTA).
    pub end: i64,
}

/// One rank's host spans of the names explain's PyTorch facts read.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostSpans {
    /// The kept names, in the rank's name order (so ordering by index orders as the rank's
    /// own indices would).
    pub names: Vec<String>,
    /// The host events of those names, in the rank's event order.
    pub spans: Vec<HostSpan>,
    /// The first start and last end of all the rank's host events (`None`: none).
    pub host_window: Option<(i64, i64)>,
}

/// A torch.compile timer: Dynamo's and Inductor's `… (dynamo_timed)` spans.
pub fn is_compile(name: &str) -> bool {
    name.ends_with(" (dynamo_timed)")
}

/// `Torch-Compiled Region: F/N` → N (N > 0 after a recompile).
pub fn recompile_number(name: &str) -> Option<u32> {
    let rest = name.strip_prefix("Torch-Compiled Region: ")?;
    rest.split_once('/')?.1.trim().parse().ok()
}

fn is_kept(name: &str) -> bool {
    is_data_loader(name) || is_compile(name) || recompile_number(name).is_some()
}

impl HostSpans {
    /// The spans of a rank's rows.
    pub fn of_rank(trace: &RankTrace) -> HostSpans {
        let mut index = vec![None; trace.names.len()];
        let mut names = Vec::new();
        for (i, name) in trace.names.iter().enumerate() {
            if is_kept(name) {
                index[i] = Some(names.len() as u32);
                names.push(name.clone());
            }
        }
        let mut spans = Vec::new();
        let mut host_window: Option<(i64, i64)> = None;
        for e in trace.events.iter().filter(|e| e.stream == -1) {
            host_window = Some(host_window.map_or((e.ts, e.end), |(s, t)| (s.min(e.ts), t.max(e.end))));
            if let Some(name) = index[e.name as usize] {
                spans.push(HostSpan { name, ts: e.ts, end: e.end });
            }
        }
        HostSpans { names, spans, host_window }
    }

    /// `pred` of every kept name, by name index.
    pub fn names_where(&self, pred: impl Fn(&str) -> bool) -> Vec<bool> {
        self.names.iter().map(|n| pred(n)).collect()
    }

    /// Heap bytes, roughly (what a cache weighs it at).
    pub fn heap_bytes(&self) -> usize {
        self.names.iter().map(|s| s.len() + std::mem::size_of::<String>()).sum::<usize>()
            + self.spans.capacity() * std::mem::size_of::<HostSpan>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hta::trace::HtaEvent;

    fn event(name: u32, ts: i64, end: i64, stream: i64) -> HtaEvent {
        HtaEvent { name, cat: 0, ts, end, stream, correlation: -1 }
    }

    #[test]
    fn keeps_the_host_spans_of_loader_compile_and_region_names_in_order() {
        let trace = RankTrace {
            names: vec![
                "aten::mm".into(),
                "Torch-Compiled Region: 0/2".into(),
                "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__".into(),
                "compile_fx (dynamo_timed)".into(),
                "Torch-Compiled Region: 1/x".into(),
            ],
            cats: vec!["cpu_op".into()],
            events: vec![
                event(0, 5, 9, -1),
                event(2, 10, 20, -1),
                event(3, 30, 31, 7), // on a stream: not a host span
                event(3, 40, 39, -1),
                event(1, 1, 50, -1),
            ],
            ..RankTrace::default()
        };
        let spans = HostSpans::of_rank(&trace);
        assert_eq!(
            spans.names,
            [
                "Torch-Compiled Region: 0/2",
                "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
                "compile_fx (dynamo_timed)"
            ]
        );
        assert_eq!(
            spans.spans,
            [
                HostSpan { name: 1, ts: 10, end: 20 },
                HostSpan { name: 2, ts: 40, end: 39 },
                HostSpan { name: 0, ts: 1, end: 50 }
            ]
        );
        assert_eq!(spans.host_window, Some((1, 50)));
        assert_eq!(HostSpans::of_rank(&RankTrace::default()).host_window, None);
    }
}
