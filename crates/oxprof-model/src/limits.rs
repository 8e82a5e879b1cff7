//! Budgets against hostile input: how much memory and work a profile file may cost. Shared
//! by every importer (they check them while scanning) and by the loaders above them.
//!
//! A server reads files it did not write. Without budgets, a 3 MB gzip file can inflate
//! to gigabytes, a dozen gzip-compressed string stats can do the same inside a plain file,
//! and a few megabytes of empty planes or lines can cost gigabytes of per-item bookkeeping.
//! [`LoadLimits`] bounds each of these, mostly in proportion to the file's size so that
//! genuine profiles of any size pass: every item costs bytes on the wire, and genuine
//! profiles spend far more per item than the budgets ask for. Each limit is checked while
//! the file is scanned, before the memory it guards is allocated, and hitting one is a
//! single error naming the limit and the flag or field that raises it ([`LimitExceeded`]).
//!
//! The defaults were measured on the committed fixtures and the third-party captures
//! (GPU, TPU, ROCm; 110 KB to 3 MB): gzip inflates them 2.5–7×, they spend at least
//! 10 KB per plane, 6 KB per line and 465 bytes per metadata entry, and hold no
//! compressed strings. The defaults leave at least 4× (inflation) and 20–90× (counts)
//! of headroom over those, and a floor for tiny files.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

/// A count or size a file may hold: `base`, plus `per_mib` for every MiB of the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Allowance {
    /// Allowed whatever the file's size (keeps tiny files from being refused).
    pub base: u64,
    /// Allowed per MiB (2^20 bytes) of the file.
    pub per_mib: u64,
}

impl Allowance {
    /// No limit.
    pub const UNLIMITED: Allowance = Allowance { base: u64::MAX, per_mib: 0 };

    /// What a file of `bytes` bytes may hold (saturating).
    pub fn for_size(&self, bytes: u64) -> u64 {
        let proportional = (u128::from(bytes) * u128::from(self.per_mib)) >> 20;
        self.base.saturating_add(u64::try_from(proportional).unwrap_or(u64::MAX))
    }
}

/// The budgets a profile must fit in to be decoded. `Default` suits a server with a few
/// GiB of memory per request; [`LoadLimits::none`] is for trusted input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadLimits {
    /// Largest profile accepted, in bytes after decompression (`--max-profile-bytes`).
    /// Default 2 GiB: protobuf's own limit for one message, so XProf cannot read a larger
    /// file either; a decoded profile and its analyses take about 1.7× its size.
    pub max_profile_bytes: u64,
    /// How far a gzip file may inflate, per MiB of the compressed file. Default: 64 MiB
    /// plus 32× (real profiles inflate 2.5–7×; a gzip bomb of zeros ~1,000×).
    pub inflated_bytes: Allowance,
    /// Total bytes of gunzipped `compressed_str_value` stats, per MiB of the (decompressed)
    /// file. Default: 64 MiB plus 8×.
    pub compressed_str_bytes: Allowance,
    /// Planes per MiB of the file. Default: 1,024 plus one per KiB.
    pub planes: Allowance,
    /// Lines (over all planes) per MiB of the file. Default: 16,384 plus one per 256 bytes.
    pub lines: Allowance,
    /// Event and stat metadata entries (over all planes, with the placeholders made for ids
    /// that events and stats use but the file lacks) per MiB of the file. Default: 65,536
    /// plus one per 32 bytes.
    pub metadata_entries: Allowance,
    /// Distinct strings a PyTorch trace may make its importer keep (event names,
    /// categories, arg keys, string and JSON arg values, thread names): their bytes plus
    /// [`STRING_ENTRY_BYTES`] each, per MiB of the (decompressed) file
    /// (`--max-interned-bytes`). Default: 64 MiB plus a quarter of the file. Real traces
    /// repeat a few thousand strings: the third-party ones spend at most 8% of their size
    /// on them (files under 2 MB), under 1% from 8 MB up; a trace of millions of distinct
    /// names costs several times its size in names, metadata and tables (on the
    /// 385 MB trace of 3.8 M distinct names and arg keys that `scripts/gen/many-names-trace.py`
    /// writes, 0.54× its size in strings alone).
    pub interned_bytes: Allowance,
}

/// What each distinct string is charged against [`LoadLimits::interned_bytes`] besides its
/// bytes: its end offset and its slot in the table's hash index.
pub const STRING_ENTRY_BYTES: u64 = 16;

impl Default for LoadLimits {
    fn default() -> Self {
        const MIB: u64 = 1 << 20;
        LoadLimits {
            max_profile_bytes: 2 << 30,
            inflated_bytes: Allowance { base: 64 * MIB, per_mib: 32 * MIB },
            compressed_str_bytes: Allowance { base: 64 * MIB, per_mib: 8 * MIB },
            planes: Allowance { base: 1_024, per_mib: 1_024 },
            lines: Allowance { base: 16_384, per_mib: 4_096 },
            metadata_entries: Allowance { base: 65_536, per_mib: 32_768 },
            interned_bytes: Allowance { base: 64 * MIB, per_mib: MIB / 4 },
        }
    }
}

impl LoadLimits {
    /// No limits at all (for trusted input only).
    pub fn none() -> Self {
        LoadLimits {
            max_profile_bytes: u64::MAX,
            inflated_bytes: Allowance::UNLIMITED,
            compressed_str_bytes: Allowance::UNLIMITED,
            planes: Allowance::UNLIMITED,
            lines: Allowance::UNLIMITED,
            metadata_entries: Allowance::UNLIMITED,
            interned_bytes: Allowance::UNLIMITED,
        }
    }

    /// The default limits with another `max_profile_bytes` (what `--max-profile-bytes` sets).
    pub fn with_max_profile_bytes(self, max_profile_bytes: u64) -> Self {
        LoadLimits { max_profile_bytes, ..self }
    }

    /// These limits with [`LoadLimits::interned_bytes`] set to `bytes` whatever the file's
    /// size (what `--max-interned-bytes` sets).
    pub fn with_max_interned_bytes(self, bytes: u64) -> Self {
        LoadLimits { interned_bytes: Allowance { base: bytes, per_mib: 0 }, ..self }
    }

    /// How many bytes a gzip file of `compressed` bytes may inflate to, and which limit
    /// says so.
    pub fn inflate_cap(&self, compressed: u64) -> (u64, Limit) {
        let by_ratio = self.inflated_bytes.for_size(compressed);
        if by_ratio < self.max_profile_bytes {
            (by_ratio, Limit::InflateRatio)
        } else {
            (self.max_profile_bytes, Limit::InflatedBytes)
        }
    }
}

/// Which budget of [`LoadLimits`] a file exceeded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Limit {
    /// A plain file larger than [`LoadLimits::max_profile_bytes`].
    ProfileBytes,
    /// A gzip file inflating past [`LoadLimits::max_profile_bytes`].
    InflatedBytes,
    /// A gzip file inflating past [`LoadLimits::inflated_bytes`] for its size.
    InflateRatio,
    /// Gunzipped string stats past [`LoadLimits::compressed_str_bytes`].
    CompressedStrBytes,
    /// More planes than [`LoadLimits::planes`] allows.
    Planes,
    /// More lines than [`LoadLimits::lines`] allows.
    Lines,
    /// More metadata entries than [`LoadLimits::metadata_entries`] allows.
    MetadataEntries,
    /// More distinct strings than [`LoadLimits::interned_bytes`] allows.
    InternedBytes,
}

impl Limit {
    /// The command-line flag or [`LoadLimits`] field that raises this limit.
    pub fn raise_with(self) -> &'static str {
        match self {
            Limit::ProfileBytes | Limit::InflatedBytes => "--max-profile-bytes",
            Limit::InflateRatio => "LoadLimits::inflated_bytes",
            Limit::CompressedStrBytes => "LoadLimits::compressed_str_bytes",
            Limit::Planes => "LoadLimits::planes",
            Limit::Lines => "LoadLimits::lines",
            Limit::MetadataEntries => "LoadLimits::metadata_entries",
            Limit::InternedBytes => "--max-interned-bytes",
        }
    }
}

/// A file exceeded a limit: which one, its value for this file, and how much the file
/// holds (at least: reading stops as soon as the limit is passed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LimitExceeded {
    /// The limit.
    pub limit: Limit,
    /// Its value for this file (bytes or items).
    pub allowed: u64,
    /// How much the file holds, as far as it was read (more than `allowed`).
    pub at_least: u64,
}

impl fmt::Display for LimitExceeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let allowed = Thousands(self.allowed);
        let raise = self.limit.raise_with();
        match self.limit {
            Limit::ProfileBytes => {
                write!(f, "is {} bytes, more than {allowed} ({raise})", Thousands(self.at_least))
            }
            Limit::InflatedBytes => write!(f, "inflates past {allowed} bytes ({raise})"),
            Limit::InflateRatio => {
                write!(f, "inflates past {allowed} bytes, far more than profiles of its compressed size do ({raise})")
            }
            Limit::CompressedStrBytes => {
                write!(f, "its compressed string stats inflate past {allowed} bytes in total ({raise})")
            }
            Limit::Planes => write!(f, "holds more than {allowed} planes, too many for its size ({raise})"),
            Limit::Lines => write!(f, "holds more than {allowed} lines, too many for its size ({raise})"),
            Limit::MetadataEntries => {
                write!(f, "holds more than {allowed} metadata entries, too many for its size ({raise})")
            }
            Limit::InternedBytes => write!(
                f,
                "holds more than {allowed} bytes of distinct names, arg keys and string values, too many for its size ({raise})"
            ),
        }
    }
}

/// A budget spent by several threads at once (e.g. placeholder metadata made while lines
/// are built in parallel). Whether it is exceeded does not depend on the order in which
/// threads spend it: only what is actually produced is counted.
#[derive(Debug)]
pub struct SharedBudget {
    limit: Limit,
    allowed: u64,
    used: AtomicU64,
}

impl SharedBudget {
    /// `allowed` items of `limit`, `used` of them already spent.
    pub fn new(limit: Limit, allowed: u64, used: u64) -> Self {
        SharedBudget { limit, allowed, used: AtomicU64::new(used) }
    }

    /// A budget that is never exceeded (trusted input, tests).
    pub fn unlimited(limit: Limit) -> Self {
        SharedBudget::new(limit, u64::MAX, 0)
    }

    /// Spends `amount`; an error once the total passes the allowance.
    pub fn spend(&self, amount: usize) -> Result<(), LimitExceeded> {
        let used = self.used.fetch_add(amount as u64, Ordering::Relaxed).saturating_add(amount as u64);
        if used > self.allowed {
            return Err(LimitExceeded { limit: self.limit, allowed: self.allowed, at_least: used });
        }
        Ok(())
    }
}

/// A number with thousands separators (`2,147,483,648`).
struct Thousands(u64);

impl fmt::Display for Thousands {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let digits = self.0.to_string();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i).is_multiple_of(3) {
                f.write_str(",")?;
            }
            write!(f, "{c}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allowances_grow_with_the_file_and_saturate() {
        let a = Allowance { base: 10, per_mib: 1_024 };
        assert_eq!(a.for_size(0), 10);
        assert_eq!(a.for_size(1 << 20), 1_034);
        assert_eq!(a.for_size(3 << 19), 1_546);
        assert_eq!(Allowance::UNLIMITED.for_size(u64::MAX), u64::MAX);
        assert_eq!(Allowance { base: 1, per_mib: u64::MAX }.for_size(u64::MAX), u64::MAX);
    }

    #[test]
    fn numbers_get_thousands_separators() {
        let t = |n| Thousands(n).to_string();
        assert_eq!([t(0), t(999), t(1_000), t(2_147_483_648)], ["0", "999", "1,000", "2,147,483,648"]);
    }

    #[test]
    fn the_inflate_cap_names_the_limit_that_binds() {
        let limits = LoadLimits::default();
        assert_eq!(limits.inflate_cap(1 << 20), (96 << 20, Limit::InflateRatio));
        assert_eq!(limits.inflate_cap(1 << 30), (2 << 30, Limit::InflatedBytes));
    }

    #[test]
    fn the_interned_bytes_budget_scales_with_the_file_and_names_its_flag() {
        let limits = LoadLimits::default();
        assert_eq!(limits.interned_bytes.for_size(0), 64 << 20);
        assert_eq!(limits.interned_bytes.for_size(400 << 20), 164 << 20);
        let raised = limits.with_max_interned_bytes(1 << 30);
        assert_eq!((raised.interned_bytes.for_size(0), raised.interned_bytes.for_size(400 << 20)), (1 << 30, 1 << 30));
        let e = LimitExceeded { limit: Limit::InternedBytes, allowed: 171_966_464, at_least: 171_966_500 };
        assert_eq!(
            e.to_string(),
            "holds more than 171,966,464 bytes of distinct names, arg keys and string values, too many for its size \
             (--max-interned-bytes)"
        );
    }
}
