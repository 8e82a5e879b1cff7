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

    /// The id of the `index`-th string of a table (ids are dense, in order of interning; an
    /// index the table lacks reads as "").
    pub const fn new(index: u32) -> Self {
        StrId(index)
    }

    /// Its position in its table.
    pub const fn index(self) -> u32 {
        self.0
    }
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

    /// Strings are hashed as bytes, so that bytes not yet known to be UTF-8 are looked up
    /// without validating them first.
    #[inline]
    fn hash(&self, bytes: &[u8]) -> u64 {
        self.hasher.hash_one(bytes)
    }

    /// Looks up a string without adding it.
    pub fn find(&self, s: &str) -> Option<StrId> {
        self.find_bytes(self.hash(s.as_bytes()), s.as_bytes())
    }

    #[inline]
    fn find_bytes(&self, hash: u64, bytes: &[u8]) -> Option<StrId> {
        let (text, ends) = (&self.text, &self.ends);
        self.index.find(hash, |&i| Self::slice(text, ends, i).as_bytes() == bytes).map(|&i| StrId(i))
    }

    /// Adds `s` if new; returns its id.
    pub fn intern(&mut self, s: &str) -> StrId {
        let hash = self.hash(s.as_bytes());
        match self.find_bytes(hash, s.as_bytes()) {
            Some(id) => id,
            None => self.insert_new(hash, s),
        }
    }

    #[cold]
    fn insert_new(&mut self, hash: u64, s: &str) -> StrId {
        let id = self.ends.len() as u32;
        self.text.push_str(s);
        self.ends.push(self.text.len() as u32);
        let (text, ends, hasher) = (&self.text, &self.ends, &self.hasher);
        self.index.insert_unique(hash, id, |&i| hasher.hash_one(Self::slice(text, ends, i).as_bytes()));
        StrId(id)
    }

    /// Interns bytes that should be UTF-8 but are untrusted, and may even change while
    /// they are read (a mapped file that another process rewrites): a string already
    /// present is found by comparing bytes, without validating them; a new one is copied
    /// first and the copy validated before it is stored (invalid sequences replaced with
    /// U+FFFD, and found again under the repaired text), so the table never holds invalid
    /// UTF-8 whatever happens to `bytes` meanwhile. Returns the id and whether the bytes
    /// were repaired.
    #[inline]
    pub fn intern_utf8(&mut self, bytes: &[u8]) -> (StrId, bool) {
        let hash = self.hash(bytes);
        match self.find_bytes(hash, bytes) {
            Some(id) => (id, false),
            None => self.insert_copied(hash, bytes),
        }
    }

    #[cold]
    fn insert_copied(&mut self, hash: u64, bytes: &[u8]) -> (StrId, bool) {
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
        match std::str::from_utf8(copy) {
            // If the bytes changed since they were hashed, the entry sits under a stale
            // hash: a duplicate at worst, and the loader reports the file as changed.
            Ok(valid) => (self.insert_new(hash, valid), false),
            Err(_) => (self.intern(&String::from_utf8_lossy(copy)), true),
        }
    }

    /// Bytes of text held (every distinct string once).
    pub fn text_bytes(&self) -> usize {
        self.text.len()
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
        assert_eq!(t.intern_utf8(b"alpha"), (a, false));
        let long = "x".repeat(5_000);
        let (b, replaced) = t.intern_utf8(long.as_bytes());
        assert!(!replaced);
        assert_eq!((t.get(b), t.find(&long)), (long.as_str(), Some(b)));
        let (c, replaced) = t.intern_utf8(b"bad \xff byte");
        assert!(replaced);
        assert_eq!(t.get(c), "bad \u{fffd} byte");
        // The same bad bytes again: the repaired string, not a second copy.
        assert_eq!(t.intern_utf8(b"bad \xff byte"), (c, true));
        assert_eq!(t.intern_utf8(b"gamma").0, t.find("gamma").unwrap());
    }

    /// Every distinct string once in one buffer, ids in order of first sight, through the
    /// index's growth.
    #[test]
    fn strings_are_kept_once_in_one_buffer_whatever_their_number() {
        let mut t = StringTable::default();
        let names: Vec<String> = (0..100_000).map(|n| format!("aten::op{n}")).collect();
        for (n, name) in names.iter().enumerate() {
            assert_eq!(t.intern_utf8(name.as_bytes()), (StrId(n as u32 + 1), false));
        }
        for (n, name) in names.iter().enumerate().rev() {
            assert_eq!(t.intern(name), StrId(n as u32 + 1));
            assert_eq!(t.get(StrId(n as u32 + 1)), name);
        }
        assert_eq!(t.len(), 100_001);
        assert_eq!(t.text_bytes(), names.iter().map(String::len).sum::<usize>());
    }
}
