//! One string table for everything the first pass keeps (event names, categories, arg
//! keys, string values, thread names): a trace repeats the same few thousand strings
//! millions of times, and the input's pages are released as it is read, so each distinct
//! string is copied once and referred to by a 32-bit id.
//!
//! The table is the model's own [`StringTable`] (one growing buffer of text, an end offset
//! and a hash slot per string), and it becomes the host plane's: the plane that holds
//! almost every name reads the same table instead of a second copy. Arg keys (the stat
//! names) are numbered apart as well, densely in order of first use, since they become the
//! planes' stat metadata ids.
//!
//! What the table may cost is bounded by [`LoadLimits::interned_bytes`]: every distinct
//! string is charged its bytes plus [`STRING_ENTRY_BYTES`]; past the allowance the reader
//! stops and the import fails with one line naming the limit.

use oxprof_model::limits::{Limit, LimitExceeded, LoadLimits, STRING_ENTRY_BYTES};
use oxprof_model::{StrId, StringTable};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Id of an interned string.
pub(crate) type Sid = u32;

/// The most text the table holds: its ends are 32-bit offsets.
const MAX_TEXT: usize = u32::MAX as usize;

/// Strings by id, deduplicated, within a budget; arg keys numbered apart.
pub(crate) struct Interner {
    table: StringTable,
    /// The table once shared with the host plane ([`Interner::share`]): read only.
    shared: Option<Arc<StringTable>>,
    /// Arg keys and stat names by key id: their string ids.
    keys: Vec<Sid>,
    /// Per string id, its key id + 1 (0: not a key), up to the last key's string id.
    key_of: Vec<u32>,
    /// Strings whose bytes were not valid UTF-8 (repaired with U+FFFD), each time met.
    pub(crate) invalid_utf8: u64,
    /// What the table may cost (see [`Interner::cost`]).
    allowed: u64,
    state: State,
    /// While the trace is read in two halves: this table's half, and the first half's cost
    /// (the first reader publishes it; the second adds it to its own).
    halves: Option<(Half, Arc<AtomicU64>)>,
}

/// Which half of a split read a table belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Half {
    First,
    Second,
}

/// Whether the table is within its budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum State {
    Within,
    /// Past [`LoadLimits::interned_bytes`].
    OverBudget,
    /// A string would take the text past 4 GiB (only with the budget raised that far).
    Full,
    /// The second half of a split read: the two tables together past the budget. Both
    /// tables count the strings both halves hold, so this is not the trace's verdict: the
    /// second reader gives up and the first reads on alone, holding at most the budget.
    HalvesOverBudget,
}

impl Interner {
    /// An empty table (holding "", string and key id 0) that may cost `allowed`.
    pub(crate) fn new(allowed: u64) -> Self {
        Interner {
            table: StringTable::default(),
            shared: None,
            keys: vec![0],
            key_of: vec![1],
            invalid_utf8: 0,
            allowed,
            state: State::Within,
            halves: None,
        }
    }

    /// What a file of `file_bytes` bytes may spend on strings.
    pub(crate) fn allowance(limits: &LoadLimits, file_bytes: u64) -> u64 {
        limits.interned_bytes.for_size(file_bytes)
    }

    /// The id of `bytes` (copied on first sight; invalid UTF-8 is repaired and counted).
    /// Once the table is full, every string is "" (the reader stops at the event's end).
    #[inline]
    pub(crate) fn intern(&mut self, bytes: &[u8]) -> Sid {
        debug_assert!(self.shared.is_none(), "strings are interned before the table is shared");
        // A repaired string may be up to 3 times longer (U+FFFD for each bad byte).
        if self.table.text_bytes() + 3 * bytes.len() > MAX_TEXT {
            return self.full(bytes);
        }
        let before = self.table.len();
        let (id, repaired) = self.table.intern_utf8(bytes);
        if repaired || self.table.len() != before {
            self.added(repaired);
        }
        id_of(id)
    }

    /// Counts a repair and charges what was added.
    #[cold]
    fn added(&mut self, repaired: bool) {
        self.invalid_utf8 += u64::from(repaired);
        if self.state != State::Within {
            return;
        }
        let cost = self.cost();
        match &self.halves {
            Some((Half::First, first)) => first.store(cost, Ordering::Relaxed),
            Some((Half::Second, first)) if cost.saturating_add(first.load(Ordering::Relaxed)) > self.allowed => {
                self.state = State::HalvesOverBudget;
                return;
            }
            _ => {}
        }
        if cost > self.allowed {
            self.state = State::OverBudget;
        }
    }

    /// Makes this table one half of a split read (`first`: the first half's cost, shared by
    /// both readers), or ends the split (`None`).
    pub(crate) fn set_half(&mut self, half: Option<(Half, Arc<AtomicU64>)>) {
        if let Some((Half::First, first)) = &half {
            first.store(self.cost(), Ordering::Relaxed);
        }
        self.halves = half;
    }

    /// `bytes` when they do not fit: found if present, else "" and the table is full.
    #[cold]
    fn full(&mut self, bytes: &[u8]) -> Sid {
        match std::str::from_utf8(bytes).ok().and_then(|s| self.table.find(s)) {
            Some(id) => id_of(id),
            None => {
                self.state = State::Full;
                0
            }
        }
    }

    /// The string behind an id.
    #[inline]
    pub(crate) fn get(&self, id: Sid) -> &str {
        self.table().get(StrId::new(id))
    }

    /// Number of distinct strings.
    pub(crate) fn len(&self) -> usize {
        self.table().len()
    }

    /// The key id of an arg key (or stat name), numbered on first use.
    pub(crate) fn key(&mut self, bytes: &[u8]) -> u32 {
        let sid = self.intern(bytes);
        self.key_of_string(sid)
    }

    /// The key id of an interned string, numbered on first use.
    pub(crate) fn key_of_string(&mut self, sid: Sid) -> u32 {
        match self.key_of.get(sid as usize) {
            Some(&k) if k != 0 => k - 1,
            _ => {
                let key = self.keys.len() as u32;
                self.keys.push(sid);
                if self.key_of.len() <= sid as usize {
                    self.key_of.resize(sid as usize + 1, 0);
                }
                self.key_of[sid as usize] = key + 1;
                key
            }
        }
    }

    /// The text of a key id.
    #[inline]
    pub(crate) fn key_str(&self, key: u32) -> &str {
        self.get(self.keys.get(key as usize).copied().unwrap_or(0))
    }

    /// The string id of a key id.
    pub(crate) fn key_string(&self, key: u32) -> Sid {
        self.keys.get(key as usize).copied().unwrap_or(0)
    }

    /// Number of key ids.
    pub(crate) fn key_count(&self) -> usize {
        self.keys.len()
    }

    /// What the table costs against the budget: its text, and [`STRING_ENTRY_BYTES`] per
    /// string.
    pub(crate) fn cost(&self) -> u64 {
        self.table().text_bytes() as u64 + STRING_ENTRY_BYTES * self.table().len() as u64
    }

    /// What the table may cost.
    pub(crate) fn allowed(&self) -> u64 {
        self.allowed
    }

    /// Whether the table is within its budget.
    pub(crate) fn state(&self) -> State {
        self.state
    }

    /// The budget exceeded, as the import's error.
    pub(crate) fn exceeded(&self) -> LimitExceeded {
        LimitExceeded { limit: Limit::InternedBytes, allowed: self.allowed, at_least: self.cost() }
    }

    /// The table, for the plane that keeps it; this interner reads the same table from
    /// now on, and must intern nothing new (a new string would copy the table).
    pub(crate) fn share(&mut self) -> Arc<StringTable> {
        let shared = match &self.shared {
            Some(shared) => shared.clone(),
            None => Arc::new(std::mem::take(&mut self.table)),
        };
        self.shared = Some(shared.clone());
        shared
    }

    /// The table.
    #[inline]
    fn table(&self) -> &StringTable {
        self.shared.as_deref().unwrap_or(&self.table)
    }
}

#[inline]
fn id_of(id: StrId) -> Sid {
    id.index()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_deduplicated_and_repaired() {
        let mut i = Interner::new(u64::MAX);
        let a = i.intern(b"aten::add");
        let b = i.intern(b"cudaLaunchKernel");
        assert_eq!(i.intern(b"aten::add"), a);
        assert_ne!(a, b);
        assert_eq!(i.intern(b""), 0);
        assert_eq!(i.get(b), "cudaLaunchKernel");
        let bad = i.intern(b"x\xffy");
        assert_eq!(i.get(bad), "x\u{fffd}y");
        assert_eq!(i.intern(b"x\xffy"), bad);
        assert_eq!(i.invalid_utf8, 2);
        for n in 0..10_000 {
            let id = i.intern(format!("s{n}").as_bytes());
            assert_eq!(i.get(id), format!("s{n}"));
        }
        assert_eq!(i.intern(b"aten::add"), a);
        assert_eq!(i.state(), State::Within);
    }

    #[test]
    fn keys_are_numbered_apart_in_order_of_first_use() {
        let mut i = Interner::new(u64::MAX);
        let name = i.intern(b"name");
        assert_eq!([i.key(b"stream"), i.key(b"name"), i.key(b"stream")], [1, 2, 1]);
        assert_eq!(i.key_string(2), name);
        assert_eq!((i.key_str(1), i.key_str(0), i.key_str(99)), ("stream", "", ""));
        assert_eq!((i.key_count(), i.len()), (3, 3));
    }

    /// Each distinct string is charged its bytes and an entry; past the allowance the
    /// state says so (and stays so), while strings are still interned.
    #[test]
    fn the_budget_charges_distinct_strings_once() {
        let entry = STRING_ENTRY_BYTES;
        // "" is charged too.
        let mut i = Interner::new(entry + 2 * (entry + 8));
        for _ in 0..3 {
            i.intern(b"aaaaaaaa");
            i.intern(b"bbbbbbbb");
        }
        assert_eq!((i.cost(), i.state()), (3 * entry + 16, State::Within));
        let c = i.intern(b"c");
        assert_eq!((i.get(c), i.state()), ("c", State::OverBudget));
        let e = i.exceeded();
        assert_eq!((e.limit, e.allowed, e.at_least), (Limit::InternedBytes, 3 * entry + 16, 4 * entry + 17));
        i.intern(b"dd");
        assert_eq!(i.state(), State::OverBudget);
    }

    /// Two halves read side by side: the second stops once both tables together pass the
    /// budget (its own state then says so, not the trace's), the first is charged alone.
    #[test]
    fn the_second_half_gives_up_when_both_tables_pass_the_budget() {
        let entry = STRING_ENTRY_BYTES;
        let allowed = entry + 4 * (entry + 8);
        let first_cost = Arc::new(AtomicU64::new(0));
        let mut first = Interner::new(allowed);
        first.set_half(Some((Half::First, first_cost.clone())));
        first.intern(b"aaaaaaaa");
        first.intern(b"bbbbbbbb");
        assert_eq!(first_cost.load(Ordering::Relaxed), first.cost());
        let mut second = Interner::new(allowed);
        second.set_half(Some((Half::Second, first_cost.clone())));
        second.intern(b"aaaaaaaa");
        assert_eq!(second.state(), State::Within);
        // "" twice, and three strings of 8 bytes: past the budget only counted twice.
        second.intern(b"cccccccc");
        assert_eq!((first.state(), second.state()), (State::Within, State::HalvesOverBudget));
        first.set_half(None);
        first.intern(b"cccccccc");
        assert_eq!(first.state(), State::Within);
        first.intern(b"dddddddd");
        first.intern(b"e");
        assert_eq!(first.state(), State::OverBudget);
    }
}
