//! What identifies a profile file's contents in a cache key: its stat (size, modification
//! and status-change times, device and inode, a store's version tag) and a digest of
//! blocks sampled across the whole file.
//!
//! Why this cannot miss a change of a local file: every write to a file sets its
//! status-change time (`ctime`) to the clock, and no call lets a user set it back (the
//! modification time, which `touch -d` or `utimensat` restore, is not enough alone); a
//! file replaced by another (renamed over it, copied there, restored from a backup) has
//! another inode or another `ctime`. The sampled digest ([`sample_ranges`]: both ends and
//! [`SAMPLE_BLOCKS`] blocks spread between them, at most 192 KiB read) is a second line for
//! what `ctime` cannot see: systems without it (non-Unix), and an edit in the same clock
//! tick as the write before it (Linux since 6.13 stamps a queried file's next change with a
//! fine-grained time, so that tick is closed there too on ext4, XFS, Btrfs and tmpfs).
//! Remote objects are identified by their store's version tag (ETag) instead, as the
//! object store's own cache of whole objects is: no ranged request per lookup.

use std::ops::Range;
use xxhash_rust::xxh3::{Xxh3, xxh3_128};

/// How much of each end of a file its identity hashes.
pub const IDENTITY_BLOCK: u64 = 64 << 10;
/// How many blocks between the two ends of a file its identity hashes.
pub const SAMPLE_BLOCKS: u64 = 16;
/// The size of each of those blocks.
pub const SAMPLE_BLOCK: u64 = 4 << 10;

/// What identifies a profile file's contents, as cheaply as it can be read (see the
/// module docs): a rewritten file differs in at least one of these.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct FileIdentity {
    /// Size in bytes.
    pub size: u64,
    /// Modification time, ns since the Unix epoch (0 when unknown).
    pub modified_ns: u64,
    /// Status-change time (`ctime`), ns since the Unix epoch (0 when unknown: remote
    /// objects, non-Unix systems).
    pub changed_ns: u64,
    /// The device holding the file (0 when unknown).
    pub device: u64,
    /// The file's inode on that device (0 when unknown).
    pub inode: u64,
    /// The store's version tag (an object store's ETag), when it has one.
    pub etag: Option<String>,
    /// xxh3 of the blocks [`sample_ranges`] names, in order (0 when none were read).
    pub sample_hash: u64,
}

impl FileIdentity {
    /// The identity as text, every field (keys and fingerprints are made of it).
    pub fn tag(&self) -> String {
        format!(
            "{}:{}:{}:{}:{}:{}:{:x}",
            self.size,
            self.modified_ns,
            self.changed_ns,
            self.device,
            self.inode,
            self.etag.as_deref().unwrap_or(""),
            self.sample_hash
        )
    }
}

/// The byte ranges of a file of `size` bytes that its identity hashes, in order: the
/// whole file up to 2 × [`IDENTITY_BLOCK`] + [`SAMPLE_BLOCKS`] × [`SAMPLE_BLOCK`] (192 KiB);
/// beyond, the first and last [`IDENTITY_BLOCK`] and [`SAMPLE_BLOCKS`] blocks of
/// [`SAMPLE_BLOCK`] bytes evenly spread between them.
pub fn sample_ranges(size: u64) -> Vec<Range<u64>> {
    if size <= 2 * IDENTITY_BLOCK + SAMPLE_BLOCKS * SAMPLE_BLOCK {
        return std::iter::once(0..size).collect();
    }
    let middle = size - 2 * IDENTITY_BLOCK;
    let mut ranges = Vec::with_capacity(SAMPLE_BLOCKS as usize + 2);
    ranges.push(0..IDENTITY_BLOCK);
    for i in 0..SAMPLE_BLOCKS {
        // Block i starts at the (i+½)/n point of the middle, less half a block.
        let centre =
            IDENTITY_BLOCK + (u128::from(middle) * u128::from(2 * i + 1) / u128::from(2 * SAMPLE_BLOCKS)) as u64;
        let start = centre.saturating_sub(SAMPLE_BLOCK / 2).max(IDENTITY_BLOCK);
        ranges.push(start..(start + SAMPLE_BLOCK).min(size - IDENTITY_BLOCK));
    }
    ranges.push(size - IDENTITY_BLOCK..size);
    ranges
}

/// The digest of the blocks read at [`sample_ranges`] (each block's length is hashed
/// with it, so a short read differs from a full one).
pub fn sample_hash<'b>(blocks: impl IntoIterator<Item = &'b [u8]>) -> u64 {
    let mut hasher = Xxh3::new();
    for block in blocks {
        hasher.update(&(block.len() as u64).to_le_bytes());
        hasher.update(block);
    }
    hasher.digest()
}

/// The key of one entry: what was computed (`kind`, e.g. `"opstats"`), from which file,
/// with which extra inputs (e.g. the host name a trace index embeds).
pub fn entry_key(kind: &str, file: &FileIdentity, extra: &str) -> String {
    let text = format!("oxprof {}\0{kind}\0{}\0{extra}", env!("CARGO_PKG_VERSION"), file.tag());
    format!("{:032x}", xxh3_128(text.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_files_are_hashed_whole_and_large_ones_sampled_across() {
        assert_eq!(sample_ranges(0), std::iter::once(0..0).collect::<Vec<_>>());
        assert_eq!(sample_ranges(192 << 10), std::iter::once(0..192 << 10).collect::<Vec<_>>());
        let size = 1 << 30;
        let ranges = sample_ranges(size);
        assert_eq!(ranges.len() as u64, SAMPLE_BLOCKS + 2);
        assert_eq!(ranges[0], 0..IDENTITY_BLOCK);
        assert_eq!(*ranges.last().unwrap(), size - IDENTITY_BLOCK..size);
        let read: u64 = ranges.iter().map(|r| r.end - r.start).sum();
        assert_eq!(read, 2 * IDENTITY_BLOCK + SAMPLE_BLOCKS * SAMPLE_BLOCK, "192 KiB read, whatever the size");
        for pair in ranges.windows(2) {
            assert!(pair[0].end <= pair[1].start, "in order, apart: {pair:?}");
        }
        // The middle is covered evenly: no gap between blocks over 1/16th of it (plus one).
        let gaps = ranges.windows(2).map(|p| p[1].start - p[0].end);
        assert!(gaps.max().unwrap() <= (size - 2 * IDENTITY_BLOCK) / SAMPLE_BLOCKS, "{ranges:?}");
        // Just past the whole-file size: blocks stay inside the middle.
        for size in [(192 << 10) + 1, (200 << 10) + 7, 1 << 20] {
            let ranges = sample_ranges(size);
            assert!(ranges.iter().all(|r| r.start <= r.end && r.end <= size), "{size}: {ranges:?}");
            for pair in ranges.windows(2) {
                assert!(pair[0].end <= pair[1].start, "{size}: {pair:?}");
            }
        }
    }

    #[test]
    fn every_field_is_in_the_key() {
        let base = FileIdentity {
            size: 1,
            modified_ns: 2,
            changed_ns: 3,
            device: 4,
            inode: 5,
            etag: Some("e".into()),
            sample_hash: 6,
        };
        let key = entry_key("k", &base, "x");
        let changed = [
            FileIdentity { size: 9, ..base.clone() },
            FileIdentity { modified_ns: 9, ..base.clone() },
            FileIdentity { changed_ns: 9, ..base.clone() },
            FileIdentity { device: 9, ..base.clone() },
            FileIdentity { inode: 9, ..base.clone() },
            FileIdentity { etag: None, ..base.clone() },
            FileIdentity { sample_hash: 9, ..base.clone() },
        ];
        for other in changed {
            assert_ne!(entry_key("k", &other, "x"), key, "{other:?}");
        }
        assert_ne!(entry_key("j", &base, "x"), key);
        assert_ne!(entry_key("k", &base, "y"), key);
        assert_ne!(sample_hash([&b"ab"[..], b"c"]), sample_hash([&b"a"[..], b"bc"]));
    }
}
