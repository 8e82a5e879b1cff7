//! The hash XProf's trace JSON depends on: libstdc++'s `std::hash<std::string_view>` (the
//! fingerprints that order the `stackFrames` ids).

/// libstdc++'s `std::_Hash_bytes(ptr, len, 0xc70f6907)` on 64-bit targets (the value of
/// `std::hash<std::string_view>`), a MurmurHash2 variant.
pub fn stdlib_hash_bytes(bytes: &[u8]) -> u64 {
    const MUL: u64 = (0xc6a4_a793_u64 << 32) + 0x5bd1_e995;
    const SEED: u64 = 0xc70f_6907;
    let shift_mix = |v: u64| v ^ (v >> 47);
    let len = bytes.len() as u64;
    let mut hash = SEED ^ len.wrapping_mul(MUL);
    let mut chunks = bytes.chunks_exact(8);
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let data = shift_mix(u64::from_le_bytes(word).wrapping_mul(MUL)).wrapping_mul(MUL);
        hash ^= data;
        hash = hash.wrapping_mul(MUL);
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let data = rest.iter().rev().fold(0u64, |acc, &b| (acc << 8) + u64::from(b));
        hash ^= data;
        hash = hash.wrapping_mul(MUL);
    }
    hash = shift_mix(hash).wrapping_mul(MUL);
    shift_mix(hash)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stdlib_hash_is_stable() {
        // Different inputs give different values and the empty input the seed mix.
        assert_ne!(stdlib_hash_bytes(b"abc"), stdlib_hash_bytes(b"abd"));
        assert_eq!(stdlib_hash_bytes(b"@@x"), stdlib_hash_bytes(b"@@x"));
    }
}
