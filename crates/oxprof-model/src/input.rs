//! How an importer hands consumed input back: the loader maps a file, an importer reads
//! it front to back and reports the ranges it is done with, so peak memory is the model
//! plus a window of input rather than model plus file.

use std::ops::Range;

/// Receives byte ranges of the input that the importer no longer needs.
pub trait ReleasePages: Sync {
    /// `range` (absolute offsets into the imported buffer) has been consumed.
    fn release(&self, range: Range<usize>);

    /// Whether a released range still reads as its original bytes (a file mapping reads
    /// dropped pages again from the file; an anonymous one would read zeros). Importers may
    /// then read parts of the input side by side, one of them on a guess that can prove
    /// wrong and have its part read again.
    fn rereadable(&self) -> bool {
        false
    }
}

/// A [`ReleasePages`] that keeps everything (for in-memory buffers).
pub struct KeepPages;

impl ReleasePages for KeepPages {
    fn release(&self, _range: Range<usize>) {}

    fn rereadable(&self) -> bool {
        true
    }
}

/// Input that is still arriving while it is imported (a gzip file inflated by another
/// thread): its first bytes are final, more follow until the input is complete. An importer
/// that reads front to back can start on the first bytes instead of waiting for all of them.
pub trait Incoming: Sync {
    /// Blocks until more than `have` bytes have arrived or the input is complete, then
    /// answers every byte arrived so far (never fewer than `have`: exactly `have` means the
    /// input is complete).
    fn wait_past(&self, have: usize) -> &[u8];

    /// The length the input is expected to reach (budgets that scale with the input's size
    /// use it before it has all arrived); a hint, which the input may fall short of.
    fn expected_len(&self) -> usize;
}
