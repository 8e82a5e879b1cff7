//! Progress of long loads (inflating, decoding, importing), reported to one sink per
//! process that the binary installs (a progress bar on a terminal). Libraries never draw:
//! without a sink, reporting costs an atomic load.
//!
//! Loads report bytes: [`Reporting`] wraps the decoder's page releases (each consumed
//! range), [`CountingReader`] the compressed bytes an inflater reads. Several loads side by
//! side add up into one total. A server installs a [`Tally`] ([`install_tally`]) instead of
//! a bar, and answers its progress route from [`snapshot`].

use oxprof_model::ReleasePages;
use std::io::Read;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

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

/// The loads under way, as a [`Tally`] saw them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// Phases under way (0: none).
    pub loads: usize,
    /// The latest phase and its file's base name (`reading x.pt.trace.json`).
    pub what: String,
    /// Bytes the phases under way read in all.
    pub total_bytes: u64,
    /// Bytes read so far.
    pub done_bytes: u64,
    /// Milliseconds since the first of them began.
    pub elapsed_ms: u64,
}

/// A sink that keeps the loads under way for whoever asks ([`Tally::snapshot`]): what a
/// server installs so its pages can show a long first analysis's progress.
#[derive(Debug)]
pub struct Tally {
    state: Mutex<TallyState>,
}

#[derive(Debug)]
struct TallyState {
    loads: usize,
    what: String,
    total: u64,
    done: u64,
    since: Option<Instant>,
}

impl Tally {
    /// No load under way.
    pub const fn new() -> Tally {
        Tally { state: Mutex::new(TallyState { loads: 0, what: String::new(), total: 0, done: 0, since: None }) }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, TallyState> {
        // A panic while the counters were updated leaves counters, nothing to repair.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The loads under way now.
    pub fn snapshot(&self) -> Snapshot {
        let state = self.state();
        Snapshot {
            loads: state.loads,
            what: state.what.clone(),
            total_bytes: state.total,
            done_bytes: state.done.min(state.total),
            elapsed_ms: state.since.map_or(0, |t| u64::try_from(t.elapsed().as_millis()).unwrap_or(u64::MAX)),
        }
    }
}

impl Default for Tally {
    fn default() -> Tally {
        Tally::new()
    }
}

impl ProgressSink for Tally {
    fn begin(&self, what: &str, total: u64) {
        let mut state = self.state();
        state.loads += 1;
        state.total = state.total.saturating_add(total);
        state.what = what.to_string();
        state.since.get_or_insert_with(Instant::now);
    }

    fn advance(&self, bytes: u64) {
        let mut state = self.state();
        state.done = state.done.saturating_add(bytes);
    }

    fn end(&self) {
        let mut state = self.state();
        state.loads = state.loads.saturating_sub(1);
        if state.loads == 0 {
            *state = TallyState { loads: 0, what: String::new(), total: 0, done: 0, since: None };
        }
    }
}

/// The process's tally, when [`install_tally`] installed it.
static TALLY: Tally = Tally::new();
static TALLY_INSTALLED: AtomicBool = AtomicBool::new(false);

/// A sink that forwards to [`TALLY`].
struct Tallied;

impl ProgressSink for Tallied {
    fn begin(&self, what: &str, total: u64) {
        TALLY.begin(what, total);
    }
    fn advance(&self, bytes: u64) {
        TALLY.advance(bytes);
    }
    fn end(&self) {
        TALLY.end();
    }
}

/// Installs the process's [`Tally`] as its sink (false when another sink came first).
pub fn install_tally() -> bool {
    let installed = install(Box::new(Tallied));
    if installed {
        TALLY_INSTALLED.store(true, Ordering::Release);
    }
    installed
}

/// The loads under way, when this process installed its tally ([`install_tally`]).
pub fn snapshot() -> Option<Snapshot> {
    TALLY_INSTALLED.load(Ordering::Acquire).then(|| TALLY.snapshot())
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

    /// A tally adds loads side by side, caps what it shows at the total, and starts again
    /// once every load ended.
    #[test]
    fn a_tally_follows_the_loads_under_way() {
        let tally = super::Tally::new();
        assert_eq!(tally.snapshot(), Snapshot::default());
        tally.begin("reading a.xplane.pb", 100);
        tally.begin("inflating b.json.gz", 50);
        tally.advance(120);
        let now = tally.snapshot();
        assert_eq!(
            (now.loads, now.what.as_str(), now.total_bytes, now.done_bytes),
            (2, "inflating b.json.gz", 150, 120)
        );
        tally.advance(100);
        assert_eq!(tally.snapshot().done_bytes, 150);
        tally.end();
        assert_eq!(tally.snapshot().loads, 1);
        tally.end();
        assert_eq!(tally.snapshot(), Snapshot::default());
        // More ends than begins (a sink installed mid-load) never underflow.
        tally.end();
        assert_eq!(tally.snapshot().loads, 0);
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
