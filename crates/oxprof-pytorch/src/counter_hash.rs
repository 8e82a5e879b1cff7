//! A hash for ids a profiler counts up (correlation ids): nearby ids land in nearby
//! buckets, so a table of millions of them is walked almost in memory order as the events
//! come, instead of missing the cache on every lookup as a scrambling hash does.
//!
//! The low [`LOCALITY_BITS`] bits of an id stay as they are (a run of 64 consecutive ids
//! fills 64 consecutive buckets); the higher bits are mixed (fmix64) into the rest of the
//! hash, which picks the block and the tag the table compares first. Made-up ids cannot
//! pile up: ids that share their high bits differ in their low ones, which place them in
//! distinct buckets of one block.

use std::hash::{BuildHasherDefault, Hasher};

/// Low id bits kept in place.
const LOCALITY_BITS: u32 = 6;

/// A hash map keyed by counted-up ids.
pub(crate) type CounterMap<V> = std::collections::HashMap<i64, V, BuildHasherDefault<CounterHasher>>;

/// The hasher of [`CounterMap`].
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct CounterHasher(u64);

impl Hasher for CounterHasher {
    fn write(&mut self, bytes: &[u8]) {
        // Not used by i64 keys; any other key still hashes every byte.
        for &byte in bytes {
            self.write_u64(self.0.rotate_left(8) ^ u64::from(byte));
        }
    }

    fn write_i64(&mut self, id: i64) {
        self.write_u64(id as u64);
    }

    fn write_u64(&mut self, id: u64) {
        let low = id & ((1 << LOCALITY_BITS) - 1);
        self.0 = (fmix64(id >> LOCALITY_BITS) << LOCALITY_BITS) | low;
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// MurmurHash3's 64-bit finaliser.
fn fmix64(mut k: u64) -> u64 {
    k ^= k >> 33;
    k = k.wrapping_mul(0xff51_afd7_ed55_8ccd);
    k ^= k >> 33;
    k = k.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    k ^ (k >> 33)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    fn hash(id: i64) -> u64 {
        BuildHasherDefault::<CounterHasher>::default().hash_one(id)
    }

    #[test]
    fn consecutive_ids_share_a_block_and_made_up_ones_spread() {
        // A run of 64 ids: one block, consecutive low bits.
        let base = 1_000_000_i64 * 64;
        let block = hash(base) >> LOCALITY_BITS;
        for k in 0..64 {
            assert_eq!(hash(base + k) >> LOCALITY_BITS, block);
            assert_eq!(hash(base + k) & 63, k as u64);
        }
        // Ids a hostile trace strides by a power of two land in different blocks and tags.
        let tags: std::collections::HashSet<u64> = (0..1_000).map(|k| hash(k << 20) >> 57).collect();
        assert!(tags.len() > 100, "{} tags", tags.len());
        // The map answers as a map.
        let mut map: CounterMap<u32> = CounterMap::default();
        for id in (0..10_000).map(|k| (k * 14) << 3) {
            *map.entry(id).or_default() += 1;
        }
        assert_eq!((map.len(), map.get(&(14 << 3)), map.get(&1)), (10_000, Some(&1), None));
    }
}
