//! A gzip file inflated on one thread while an importer reads it on another: the inflated
//! bytes go into an anonymous mapping sized by the gzip trailer, the importer reads the
//! part that has arrived ([`Incoming`]) and hands back what it consumed ([`ReleasePages`]),
//! whose pages are dropped at once. Inflating and importing then overlap (two cores), and
//! the inflater keeps at most [`LEAD`] ahead of what the importer released, so peak memory
//! is the model plus a window of input — not the whole inflated file.
//!
//! The mapping cannot move while it is read: a file that inflates past its trailer's size
//! (several members, or past 4 GiB, where the trailer wraps) makes [`inflate_and_import`]
//! answer [`Streamed::Overflowed`], and the caller inflates it the ordinary way.
//!
//! Invariants: the inflater writes only past `written`, readers see only `..written`
//! (published under the lock); the inflater never waits for room while the importer waits
//! for bytes (so neither can wait for the other forever), and it stops when the importer
//! is done.

use oxprof_model::{Incoming, ReleasePages};
use std::io::Read;
use std::ops::Range;
use std::sync::{Condvar, Mutex, MutexGuard};

/// How far the inflater may run ahead of the input the importer has released.
pub(crate) const LEAD: usize = 64 << 20;
/// Bytes inflated between two publications to the importer.
const PUBLISH_EVERY: usize = 1 << 20;

/// The outcome of [`inflate_and_import`].
pub(crate) enum Streamed<T> {
    /// The importer's result, with the inflater's error if inflating failed (the importer
    /// then saw the input end where inflating stopped).
    Done(T, Option<std::io::Error>),
    /// The file inflated past the mapping's size: nothing of the import is usable.
    Overflowed,
}

struct State {
    written: usize,
    released: usize,
    done: bool,
    /// The importer waits for bytes: the inflater must not wait for room.
    importer_waiting: bool,
    /// The importer has finished: the inflater stops.
    importer_done: bool,
    overflowed: bool,
    error: Option<std::io::Error>,
}

/// The mapping shared by the inflater (writing past `written`) and the importer.
struct Shared {
    base: *mut u8,
    len: usize,
    lead: usize,
    state: Mutex<State>,
    /// Signalled when bytes arrive or inflating ends.
    arrived: Condvar,
    /// Signalled when the importer releases input, waits, or finishes.
    room: Condvar,
}

// SAFETY: `base..base + len` is an anonymous mapping owned by the caller of
// `inflate_and_import` for the whole of both threads' work. The inflater writes only at
// `written..` and the importer reads only `..written`, where `written` only grows and is
// published under `state`'s lock (which orders the writes before the reads).
unsafe impl Sync for Shared {}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic on the other thread poisons the lock; the state is still consistent.
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Inflates `reader` into the mapping, publishing as it goes.
    fn inflate(&self, mut reader: impl Read) {
        let mut written = 0;
        let outcome = loop {
            {
                let mut state = self.lock();
                while written - state.released >= self.lead && !state.importer_waiting && !state.importer_done {
                    state = self.room.wait(state).unwrap_or_else(|poisoned| poisoned.into_inner());
                }
                if state.importer_done {
                    break Ok(());
                }
            }
            if written == self.len {
                // Full: the file is longer than its trailer said if one more byte comes.
                let mut probe = [0u8; 1];
                break match read_some(&mut reader, &mut probe) {
                    Ok(0) => Ok(()),
                    Ok(_) => {
                        self.lock().overflowed = true;
                        Ok(())
                    }
                    Err(e) => Err(e),
                };
            }
            let end = (written + PUBLISH_EVERY).min(self.len);
            // SAFETY: `written..end` lies in the mapping and past what the importer may
            // read (see `Shared`); no other reference to it exists.
            let chunk = unsafe { std::slice::from_raw_parts_mut(self.base.add(written), end - written) };
            let mut filled = 0;
            let mut error = None;
            while filled < chunk.len() {
                match read_some(&mut reader, &mut chunk[filled..]) {
                    Ok(0) => break,
                    Ok(n) => filled += n,
                    Err(e) => {
                        error = Some(e);
                        break;
                    }
                }
            }
            written += filled;
            self.lock().written = written;
            self.arrived.notify_all();
            if let Some(e) = error {
                break Err(e);
            }
            if filled < chunk.len() {
                break Ok(());
            }
        };
        let mut state = self.lock();
        state.done = true;
        state.error = outcome.err();
        drop(state);
        self.arrived.notify_all();
    }
}

fn read_some(reader: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    loop {
        match reader.read(buf) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            other => return other,
        }
    }
}

impl Incoming for Shared {
    fn wait_past(&self, have: usize) -> &[u8] {
        let mut state = self.lock();
        while state.written <= have && !state.done {
            state.importer_waiting = true;
            self.room.notify_all();
            state = self.arrived.wait(state).unwrap_or_else(|poisoned| poisoned.into_inner());
        }
        state.importer_waiting = false;
        // After an overflow the input is unusable: end it here, the caller discards it.
        let written = if state.overflowed { have.min(state.written) } else { state.written };
        // SAFETY: `..written` has been written and is never written again (see `Shared`).
        unsafe { std::slice::from_raw_parts(self.base, written) }
    }

    fn expected_len(&self) -> usize {
        // The mapping is one byte longer than the trailer announced.
        self.len - 1
    }
}

impl ReleasePages for Shared {
    fn release(&self, range: Range<usize>) {
        const PAGE: usize = 4096;
        let start = range.start.div_ceil(PAGE) * PAGE;
        let end = (range.end / PAGE) * PAGE;
        if end > start && end <= self.len {
            // SAFETY: the importer never reads a released range again, and the inflater
            // wrote it already (the importer only consumes arrived bytes). Dropped pages of
            // an anonymous mapping would read as zeros; they are not read.
            unsafe {
                libc::madvise(self.base.add(start).cast(), end - start, libc::MADV_DONTNEED);
            }
        }
        let mut state = self.lock();
        if range.end > state.released {
            state.released = range.end;
            drop(state);
            self.room.notify_all();
        }
    }
}

/// Inflates `reader` into `map` on a second thread while `import` reads it on this one.
pub(crate) fn inflate_and_import<T>(
    map: &mut memmap2::MmapMut,
    reader: impl Read + Send,
    import: impl FnOnce(&dyn Incoming, &dyn ReleasePages) -> T,
) -> Streamed<T> {
    inflate_and_import_within(map, reader, LEAD, import)
}

fn inflate_and_import_within<T>(
    map: &mut memmap2::MmapMut,
    reader: impl Read + Send,
    lead: usize,
    import: impl FnOnce(&dyn Incoming, &dyn ReleasePages) -> T,
) -> Streamed<T> {
    let shared = Shared {
        base: map.as_mut_ptr(),
        len: map.len(),
        lead,
        state: Mutex::new(State {
            written: 0,
            released: 0,
            done: false,
            importer_waiting: false,
            importer_done: false,
            overflowed: false,
            error: None,
        }),
        arrived: Condvar::new(),
        room: Condvar::new(),
    };
    let result = std::thread::scope(|scope| {
        scope.spawn(|| shared.inflate(reader));
        let result = import(&shared, &shared);
        shared.lock().importer_done = true;
        shared.room.notify_all();
        result
    });
    let mut state = shared.lock();
    if state.overflowed {
        return Streamed::Overflowed;
    }
    Streamed::Done(result, state.error.take())
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::Compression;
    use flate2::write::GzEncoder;
    use oxprof_model::{KeepPages, LoadLimits};
    use std::io::Write;

    /// A PyTorch trace of `events` kernels on two streams (about 150 bytes each).
    fn trace(events: usize) -> Vec<u8> {
        let mut out = String::from(r#"{"schemaVersion": 1, "traceEvents": ["#);
        for i in 0..events {
            let sep = if i == 0 { "" } else { "," };
            out.push_str(&format!(
                r#"{sep}{{"ph": "X", "cat": "kernel", "name": "k{}", "pid": 0, "tid": {}, "ts": {}.125, "dur": 1.5, "args": {{"correlation": {i}}}}}"#,
                i % 7,
                7 + i % 2,
                i * 2
            ));
            out.push('\n');
        }
        out.push_str("]}");
        out.into_bytes()
    }

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut encoder = GzEncoder::new(Vec::new(), Compression::fast());
        encoder.write_all(bytes).unwrap();
        encoder.finish().unwrap()
    }

    fn inflater(gz: &[u8]) -> flate2::read::MultiGzDecoder<&[u8]> {
        flate2::read::MultiGzDecoder::new(gz)
    }

    fn map(len: usize) -> memmap2::MmapMut {
        memmap2::MmapMut::map_anon(len).unwrap()
    }

    /// Inflating a ~3 MB trace 64 KiB ahead of the importer gives the model of the whole.
    #[test]
    fn a_trace_imported_while_it_inflates_is_the_whole_traces_model() {
        let json = trace(20_000);
        let expected = oxprof_kineto::import_kineto(&json, &KeepPages, &LoadLimits::default()).unwrap();
        let gz = gzip(&json);
        let mut map = map(json.len() + 1);
        let streamed = inflate_and_import_within(&mut map, inflater(&gz), 64 << 10, |incoming, release| {
            oxprof_kineto::import_kineto_incoming(incoming, release, &LoadLimits::default())
        });
        let Streamed::Done(Ok(space), None) = streamed else { panic!("not imported") };
        assert_eq!(oxprof_model::compare::first_difference(&expected, &space), None);
        assert_eq!(space.event_count(), 20_000);
    }

    /// Stress: leads from one byte up, each run handing the input over thousands of times
    /// between the two threads; every run ends (no lost wake-up) with the whole trace's model.
    #[test]
    fn tiny_leads_hand_over_often_and_lose_nothing() {
        let json = trace(3_000);
        let expected = oxprof_kineto::import_kineto(&json, &KeepPages, &LoadLimits::default()).unwrap();
        let gz = gzip(&json);
        for lead in [1, 7, 4096, 65_537] {
            for _ in 0..5 {
                let mut map = map(json.len() + 1);
                let streamed = inflate_and_import_within(&mut map, inflater(&gz), lead, |incoming, release| {
                    oxprof_kineto::import_kineto_incoming(incoming, release, &LoadLimits::default())
                });
                let Streamed::Done(Ok(space), None) = streamed else { panic!("lead {lead}: not imported") };
                assert_eq!(oxprof_model::compare::first_difference(&expected, &space), None, "lead {lead}");
            }
        }
    }

    /// An importer that never releases anything still gets every byte (the inflater runs
    /// past its lead while the importer waits); one that stops at once stops the inflater.
    #[test]
    fn neither_side_waits_for_the_other_forever() {
        let json = trace(5_000);
        let gz = gzip(&json);
        let mut map = map(json.len() + 1);
        let streamed = inflate_and_import_within(&mut map, inflater(&gz), 4 << 10, |incoming, _release| {
            let mut have = 0;
            loop {
                let now = incoming.wait_past(have).len();
                if now == have {
                    return now;
                }
                have = now;
            }
        });
        assert!(matches!(streamed, Streamed::Done(n, None) if n == json.len()));
        let streamed = inflate_and_import_within(&mut map, inflater(&gz), 4 << 10, |_incoming, _release| 7);
        assert!(matches!(streamed, Streamed::Done(7, None)));
    }

    /// A file longer than its mapping is refused as a whole (the caller inflates it the
    /// ordinary way); a damaged one ends the input where it broke, with the error.
    #[test]
    fn a_file_past_its_mapping_or_damaged_is_reported() {
        let json = trace(5_000);
        let gz = gzip(&json);
        let mut short = map(json.len() / 2);
        let streamed = inflate_and_import_within(&mut short, inflater(&gz), LEAD, |incoming, release| {
            oxprof_kineto::import_kineto_incoming(incoming, release, &LoadLimits::default())
        });
        assert!(matches!(streamed, Streamed::Overflowed));

        let mut damaged = gz.clone();
        let middle = damaged.len() / 2;
        damaged[middle..middle + 64].fill(0xff);
        let mut map = map(json.len() + 1);
        let streamed = inflate_and_import_within(&mut map, inflater(&damaged), LEAD, |incoming, release| {
            oxprof_kineto::import_kineto_incoming(incoming, release, &LoadLimits::default())
        });
        assert!(matches!(streamed, Streamed::Done(_, Some(_))));
    }
}
