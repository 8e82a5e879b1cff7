//! One string table for everything the first pass keeps (event names, categories, arg
//! keys, string values, thread names): a trace repeats the same few thousand strings
//! millions of times, and the input's pages are released as it is read, so each distinct
//! string is copied once into an arena and referred to by a 32-bit id.

use hashbrown::HashTable;
use std::hash::BuildHasher;

/// Id of an interned string.
pub(crate) type Sid = u32;

/// Strings by id, deduplicated.
pub(crate) struct Interner {
    arena: String,
    /// `(start, end)` of each string in `arena`.
    spans: Vec<(usize, usize)>,
    table: HashTable<Sid>,
    /// foldhash: several times faster than FxHash on the long strings traces are full of
    /// (demangled kernel names, call stacks); ids do not depend on it.
    hasher: hashbrown::DefaultHashBuilder,
    /// Strings whose bytes were not valid UTF-8 (repaired with U+FFFD).
    pub(crate) invalid_utf8: u64,
}

impl Interner {
    pub(crate) fn new() -> Self {
        let mut i = Interner {
            arena: String::new(),
            spans: Vec::new(),
            table: HashTable::new(),
            hasher: hashbrown::DefaultHashBuilder::default(),
            invalid_utf8: 0,
        };
        i.intern(b"");
        i
    }

    /// The id of `bytes` (copied on first sight; invalid UTF-8 is repaired and counted).
    #[inline]
    pub(crate) fn intern(&mut self, bytes: &[u8]) -> Sid {
        let hash = self.hasher.hash_one(bytes);
        let (arena, spans) = (&self.arena, &self.spans);
        if let Some(&id) = self.table.find(hash, |&id| {
            let (s, e) = spans[id as usize];
            &arena.as_bytes()[s..e] == bytes
        }) {
            return id;
        }
        self.insert_new(hash, bytes)
    }

    #[cold]
    fn insert_new(&mut self, hash: u64, bytes: &[u8]) -> Sid {
        let text = match std::str::from_utf8(bytes) {
            Ok(s) => s,
            Err(_) => {
                // Kept (and found again) under the repaired text.
                self.invalid_utf8 += 1;
                let repaired = String::from_utf8_lossy(bytes).into_owned();
                return self.intern(repaired.as_bytes());
            }
        };
        let start = self.arena.len();
        self.arena.push_str(text);
        let id = self.spans.len() as Sid;
        self.spans.push((start, self.arena.len()));
        let (arena, spans, hasher) = (&self.arena, &self.spans, &self.hasher);
        self.table.insert_unique(hash, id, |&other| {
            let (s, e) = spans[other as usize];
            hasher.hash_one(&arena.as_bytes()[s..e])
        });
        id
    }

    /// The string behind an id.
    #[inline]
    pub(crate) fn get(&self, id: Sid) -> &str {
        let (s, e) = self.spans[id as usize];
        &self.arena[s..e]
    }

    /// Number of distinct strings.
    pub(crate) fn len(&self) -> usize {
        self.spans.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_deduplicated_and_repaired() {
        let mut i = Interner::new();
        let a = i.intern(b"aten::add");
        let b = i.intern(b"cudaLaunchKernel");
        assert_eq!(i.intern(b"aten::add"), a);
        assert_ne!(a, b);
        assert_eq!(i.intern(b""), 0);
        assert_eq!(i.get(b), "cudaLaunchKernel");
        let bad = i.intern(b"x\xffy");
        assert_eq!(i.get(bad), "x\u{fffd}y");
        assert_eq!(i.invalid_utf8, 1);
        for n in 0..10_000 {
            let id = i.intern(format!("s{n}").as_bytes());
            assert_eq!(i.get(id), format!("s{n}"));
        }
        assert_eq!(i.intern(b"aten::add"), a);
    }
}
