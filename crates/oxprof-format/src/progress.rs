//! Progress of long loads (inflating, decoding, importing), reported to one sink per
//! process that the binary installs (a progress bar on a terminal). Libraries never draw:
//! without a sink, reporting costs an atomic load.
//!
//! Loads report bytes: [`Reporting`] wraps the decoder's page releases (each consumed
//! range), [`CountingReader`] the compressed bytes an inflater reads. Several loads side by
//! side add up into one total.

use oxprof_model::ReleasePages;
use std::io::Read;
use std::ops::Range;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Where progress goes.
pub trait ProgressSink: Send + Sync {
    /// A phase of `total` bytes begins (`what`: the phase and the file, for people).
    fn begin(&self, what: &str, total: u64);
    /// `bytes` more of the current phases are done.
    fn advance(&self, bytes: u64);
    /// A phase that began is over (done or failed).
    fn end(&self);
}

static SINK: OnceLock<Box<dyn ProgressSink>> = OnceLock::new();

/// Installs the process's sink (the first one wins; false when one was installed already).
pub fn install(sink: Box<dyn ProgressSink>) -> bool {
    SINK.set(sink).is_ok()
}

fn sink() -> Option<&'static dyn ProgressSink> {
    SINK.get().map(|s| &**s)
}

/// One phase of a load, ended when dropped.
pub(crate) struct Phase(bool);

impl Phase {
    /// Begins `what` (`total` bytes) when a sink is installed.
    pub(crate) fn begin(what: impl FnOnce() -> String, total: u64) -> Phase {
        match sink() {
            Some(sink) => {
                sink.begin(&what(), total);
                Phase(true)
            }
            None => Phase(false),
        }
    }
}

impl Drop for Phase {
    fn drop(&mut self) {
        if self.0
            && let Some(sink) = sink()
        {
            sink.end();
        }
    }
}

/// A decoder's page releases, reported as progress before they are passed on.
pub(crate) struct Reporting<'a> {
    inner: &'a dyn ReleasePages,
    /// The end of the last range reported.
    reported: AtomicUsize,
}

impl<'a> Reporting<'a> {
    /// Reports `inner`'s releases of a buffer starting at offset 0.
    pub(crate) fn new(inner: &'a dyn ReleasePages) -> Reporting<'a> {
        Reporting { inner, reported: AtomicUsize::new(0) }
    }
}

impl ReleasePages for Reporting<'_> {
    fn release(&self, range: Range<usize>) {
        if let Some(sink) = sink() {
            let before = self.reported.fetch_max(range.end, Ordering::Relaxed);
            if range.end > before {
                sink.advance((range.end - before) as u64);
            }
        }
        self.inner.release(range);
    }

    fn rereadable(&self) -> bool {
        self.inner.rereadable()
    }
}

/// A reader whose bytes are reported as they are read.
pub(crate) struct CountingReader<R>(pub(crate) R);

impl<R: Read> Read for CountingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.0.read(buf)?;
        if n > 0
            && let Some(sink) = sink()
        {
            sink.advance(n as u64);
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxprof_model::KeepPages;
    use std::sync::atomic::AtomicU64;

    #[derive(Default)]
    struct Tally {
        begun: AtomicU64,
        done: AtomicU64,
        ended: AtomicU64,
    }

    impl ProgressSink for &'static Tally {
        fn begin(&self, _: &str, total: u64) {
            self.begun.fetch_add(total, Ordering::Relaxed);
        }
        fn advance(&self, bytes: u64) {
            self.done.fetch_add(bytes, Ordering::Relaxed);
        }
        fn end(&self) {
            self.ended.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Releases and reads are counted once each, phases begin and end (one sink per
    /// process: this is the crate's only test that installs one).
    #[test]
    fn releases_and_reads_are_reported_once() {
        static TALLY: OnceLock<Tally> = OnceLock::new();
        let tally: &'static Tally = TALLY.get_or_init(Tally::default);
        assert!(install(Box::new(tally)));
        {
            let _phase = Phase::begin(|| "decoding x".into(), 100);
            let reporting = Reporting::new(&KeepPages);
            reporting.release(0..40);
            reporting.release(10..40);
            reporting.release(40..100);
        }
        let mut read = Vec::new();
        CountingReader(&b"0123456789"[..]).read_to_end(&mut read).unwrap();
        assert_eq!(tally.begun.load(Ordering::Relaxed), 100);
        assert_eq!(tally.done.load(Ordering::Relaxed), 110);
        assert_eq!(tally.ended.load(Ordering::Relaxed), 1);
    }
}
