//! String interning: every distinct string of a plane (event names, stat names, string
//! stat values) is stored once in one buffer and referred to by a [`StrId`].

use hashbrown::HashTable;
use std::hash::BuildHasher;

/// Index of an interned string in its plane's string table (the default is
/// [`StrId::EMPTY`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StrId(pub(crate) u32);

impl StrId {
    /// The empty string, present in every table.
    pub const EMPTY: StrId = StrId(0);
}

/// An append-only set of strings.
#[derive(Clone)]
pub struct StringTable {
    text: String,
    ends: Vec<u32>,
    index: HashTable<u32>,
    hasher: rustc_hash::FxBuildHasher,
}

impl Default for StringTable {
    fn default() -> Self {
        let mut table = StringTable {
            text: String::new(),
            ends: Vec::new(),
            index: HashTable::new(),
            hasher: rustc_hash::FxBuildHasher,
        };
        table.intern("");
        table
    }
}

impl std::fmt::Debug for StringTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StringTable").field("len", &self.len()).finish()
    }
}

impl StringTable {
    /// Number of distinct strings (including the empty string).
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Always false: the empty string is always present.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The string behind `id`. Ids from another table give an unspecified string, never a
    /// panic.
    #[inline]
    pub fn get(&self, id: StrId) -> &str {
        let i = id.0 as usize;
        let Some(&end) = self.ends.get(i) else {
            return "";
        };
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.text[start as usize..end as usize]
    }

    fn slice<'a>(text: &'a str, ends: &[u32], i: u32) -> &'a str {
        let i = i as usize;
        let start = if i == 0 { 0 } else { ends[i - 1] as usize };
        &text[start..ends[i] as usize]
    }

    /// Looks up a string without adding it.
    pub fn find(&self, s: &str) -> Option<StrId> {
        let hash = self.hasher.hash_one(s);
        self.index.find(hash, |&i| Self::slice(&self.text, &self.ends, i) == s).map(|&i| StrId(i))
    }

    /// Adds `s` if new; returns its id.
    pub fn intern(&mut self, s: &str) -> StrId {
        let hash = self.hasher.hash_one(s);
        let (text, ends) = (&self.text, &self.ends);
        if let Some(&i) = self.index.find(hash, |&i| Self::slice(text, ends, i) == s) {
            return StrId(i);
        }
        let id = self.ends.len() as u32;
        self.text.push_str(s);
        self.ends.push(self.text.len() as u32);
        let (text, ends, hasher) = (&self.text, &self.ends, &self.hasher);
        self.index.insert_unique(hash, id, |&i| hasher.hash_one(Self::slice(text, ends, i)));
        StrId(id)
    }

    /// Interns bytes that should be UTF-8 but may change while they are read (a mapped
    /// file that another process rewrites): a string already present is found by comparing
    /// bytes; a new one is copied first and the copy validated before it is stored, so the
    /// table never holds invalid UTF-8 whatever happens to `bytes` meanwhile. Returns the
    /// id and whether invalid sequences were replaced with U+FFFD.
    pub(crate) fn intern_untrusted(&mut self, bytes: &[u8]) -> (StrId, bool) {
        let Ok(s) = std::str::from_utf8(bytes) else {
            // Copied first: `from_utf8_lossy` of `bytes` would validate and copy separately.
            let copy = bytes.to_vec();
            return (self.intern(&String::from_utf8_lossy(&copy)), true);
        };
        let hash = self.hasher.hash_one(s);
        let StringTable { text, ends, index, hasher } = self;
        let entry =
            index.entry(hash, |&i| Self::slice(text, ends, i) == s, |&i| hasher.hash_one(Self::slice(text, ends, i)));
        match entry {
            hashbrown::hash_table::Entry::Occupied(found) => (StrId(*found.get()), false),
            hashbrown::hash_table::Entry::Vacant(vacant) => {
                // Most strings are short: copy them to the stack, not the heap.
                let mut stack = [0u8; 1024];
                let heap;
                let copy: &[u8] = match stack.get_mut(..bytes.len()) {
                    Some(buf) => {
                        buf.copy_from_slice(bytes);
                        buf
                    }
                    None => {
                        heap = bytes.to_vec();
                        &heap
                    }
                };
                // If the bytes changed since they were hashed, the entry sits under a stale
                // hash: a duplicate at worst, and the loader reports the file as changed.
                let replaced = match std::str::from_utf8(copy) {
                    Ok(valid) => {
                        text.push_str(valid);
                        false
                    }
                    Err(_) => {
                        text.push_str(&String::from_utf8_lossy(copy));
                        true
                    }
                };
                let id = ends.len() as u32;
                ends.push(text.len() as u32);
                vacant.insert(id);
                (StrId(id), replaced)
            }
        }
    }

    /// Approximate heap size in bytes.
    pub fn heap_bytes(&self) -> usize {
        self.text.capacity() + self.ends.capacity() * 4 + self.index.capacity() * 5
    }

    /// Iterates `(id, string)` in insertion order.
    pub fn iter(&self) -> impl Iterator<Item = (StrId, &str)> {
        (0..self.ends.len() as u32).map(|i| (StrId(i), Self::slice(&self.text, &self.ends, i)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interns_once_and_returns_the_same_id() {
        let mut t = StringTable::default();
        let a = t.intern("alpha");
        let b = t.intern("beta");
        assert_eq!(t.intern("alpha"), a);
        assert_ne!(a, b);
        assert_eq!(t.get(a), "alpha");
        assert_eq!(t.get(b), "beta");
        assert_eq!(t.get(StrId::EMPTY), "");
        assert_eq!(t.find("beta"), Some(b));
        assert_eq!(t.find("gamma"), None);
        assert_eq!(t.get(StrId(999)), "");
    }

    #[test]
    fn untrusted_bytes_intern_like_strings_and_replace_invalid_utf8() {
        let mut t = StringTable::default();
        let a = t.intern("alpha");
        assert_eq!(t.intern_untrusted(b"alpha"), (a, false));
        let long = "x".repeat(5_000);
        let (b, replaced) = t.intern_untrusted(long.as_bytes());
        assert!(!replaced);
        assert_eq!((t.get(b), t.find(&long)), (long.as_str(), Some(b)));
        let (c, replaced) = t.intern_untrusted(b"bad \xff byte");
        assert!(replaced);
        assert_eq!(t.get(c), "bad \u{fffd} byte");
        assert_eq!(t.intern_untrusted(b"gamma").0, t.find("gamma").unwrap());
    }
}
