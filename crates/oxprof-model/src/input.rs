//! How an importer hands consumed input back: the loader maps a file, an importer reads
//! it front to back and reports the ranges it is done with, so peak memory is the model
//! plus a window of input rather than model plus file.

use std::ops::Range;

/// Receives byte ranges of the input that the importer no longer needs.
pub trait ReleasePages: Sync {
    /// `range` (absolute offsets into the imported buffer) has been consumed.
    fn release(&self, range: Range<usize>);
}

/// A [`ReleasePages`] that keeps everything (for in-memory buffers).
pub struct KeepPages;

impl ReleasePages for KeepPages {
    fn release(&self, _range: Range<usize>) {}
}
