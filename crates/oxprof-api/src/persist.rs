//! What the session keeps in the persistent cache (`oxprof-diskcache`), as bytes: a file's
//! identity read through its store (the one identity the session's memory caches key by
//! too), and what each tool family keeps per file (a host's OpStats analysis, trace
//! bodies and views, PyTorch views, HTA ranks) encoded so that a reloaded one gives byte-identical
//! answers (JSON with exact float round trips).

use oxprof_diskcache::{DiskCache, FileIdentity};
use oxprof_format::ProfileStore;
use oxprof_pytorch::hta::parts::RankParts;
use oxprof_pytorch::hta::trace::ProfilerStep;
use oxprof_xprof::inference::HostInferenceStats;
use oxprof_xprof::op_stats::convert::HostAnalysis;
use oxprof_xprof::op_stats::types::OpStats;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::path::Path;

/// Entry kind of a host's OpStats analysis.
pub(crate) const ANALYSIS_ENTRY: &str = "host-analysis";
/// Entry kind of a host's trace index (the host name is an extra input: the index embeds it).
pub(crate) const TRACE_INDEX_ENTRY: &str = "trace-index";
/// Entry kind of one host's rendered `trace_viewer@` body and its notes (the request's
/// parameters are the extra input; see [`write_trace_json`]).
pub(crate) const TRACE_JSON_ENTRY: &str = "trace-viewer-json";
/// Entry kind of one PyTorch view's typed report of a trace (the view is the extra input;
/// see [`PytorchViewOut`]).
pub(crate) const PYTORCH_VIEW_ENTRY: &str = "pytorch-view";
/// Entry kind of one PyTorch trace's HTA rank: its rank, steps and parts (see [`KeptRank`]).
pub(crate) const HTA_RANK_ENTRY: &str = "hta-rank";
/// Entry kind of a trace view's rendered body (the track list and the whole-trace window a
/// trace viewer opens with; the route and its parameters are the extra input).
pub(crate) const TRACE_VIEW_ENTRY: &str = "trace-view";

/// The fingerprint of this build's sources (see `build.rs`): part of every key, because
/// the crate version alone stays the same across builds whose results differ.
pub const BUILD_FINGERPRINT: &str = env!("OXPROF_BUILD_FINGERPRINT");

/// The cache key of what `kind` computes from a file, by the build `build`.
fn entry_key(build: &str, kind: &str, file: &FileIdentity, extra: &str) -> String {
    oxprof_diskcache::entry_key(&format!("{kind}@{build}"), file, extra)
}

/// The slot of one file's result in the persistent cache, keyed by the file's identity
/// when the slot was made; inert without a cache or an identity.
pub(crate) struct Persisted<'s> {
    cache: Option<&'s DiskCache>,
    store: &'s dyn ProfileStore,
    file: &'s Path,
    key: String,
    /// The file's identity when the slot was made.
    pub(crate) identity: Option<FileIdentity>,
}

impl<'s> Persisted<'s> {
    /// The slot of what `kind` computes from `file` (with `extra` inputs).
    pub(crate) fn new(
        cache: Option<&'s DiskCache>,
        store: &'s dyn ProfileStore,
        file: &'s Path,
        kind: &str,
        extra: &str,
    ) -> Persisted<'s> {
        let identity = cache.and_then(|_| identity(store, file));
        let key = identity.as_ref().map(|id| entry_key(BUILD_FINGERPRINT, kind, id, extra)).unwrap_or_default();
        Persisted { cache: cache.filter(|_| identity.is_some()), store, file, key, identity }
    }

    /// The stored bytes, if any.
    pub(crate) fn read(&self) -> Option<Vec<u8>> {
        self.cache?.get(&self.key)
    }

    /// What `read` makes of the stored bytes, streamed to it ([`DiskCache::get_with`]: for
    /// large entries, never whole in memory).
    pub(crate) fn read_with<T>(&self, read: impl FnOnce(&mut dyn std::io::Read, u64) -> Option<T>) -> Option<T> {
        self.cache?.get_with(&self.key, read)
    }

    /// Whether the slot is kept anywhere (a cache, and an identity for the file).
    pub(crate) fn is_active(&self) -> bool {
        self.cache.is_some()
    }

    /// Whether an entry is stored (not read or checked).
    pub(crate) fn exists(&self) -> bool {
        self.cache.is_some_and(|cache| cache.contains(&self.key))
    }

    /// Stores what `encode` makes, unless the file changed since the slot was made (the
    /// result may then be of the new contents: never kept under the old key). A failed
    /// write changes no answer.
    pub(crate) fn write(&self, encode: impl FnOnce() -> Vec<u8>) {
        let Some(cache) = self.cache else { return };
        if identity(self.store, self.file) != self.identity {
            return;
        }
        let _ = cache.put(&self.key, &encode());
    }

    /// As [`Persisted::write`], with the payload streamed to the entry's file by `encode`
    /// (for large entries: never whole in memory).
    pub(crate) fn write_streamed(&self, mut encode: impl FnMut(&mut dyn std::io::Write) -> std::io::Result<()>) {
        let Some(cache) = self.cache else { return };
        if identity(self.store, self.file) != self.identity {
            return;
        }
        let _ = cache.put_streamed(&self.key, &mut encode);
    }
}

/// A file's identity (`None` if unreadable): its stat and, for a local file, a digest of
/// blocks sampled across it (see `oxprof_diskcache::sample_ranges`: at most 192 KiB read).
/// A remote object is identified by its stat alone, its store's version tag (ETag) standing
/// for its contents, as the object store's own cache of whole objects keys them: no ranged
/// request per lookup.
pub(crate) fn identity(store: &dyn ProfileStore, file: &Path) -> Option<FileIdentity> {
    let stat = store.stat(file).ok()?;
    let sample_hash = match store.local_root() {
        Some(_) => {
            let blocks = store.read_ranges(file, &oxprof_diskcache::sample_ranges(stat.size)).ok()?;
            oxprof_diskcache::sample_hash(blocks.iter().map(Vec::as_slice))
        }
        None => 0,
    };
    Some(FileIdentity {
        size: stat.size,
        modified_ns: stat.modified_ns,
        changed_ns: stat.changed_ns,
        device: stat.device,
        inode: stat.inode,
        etag: stat.etag,
        sample_hash,
    })
}

/// A host analysis as it is written (here and in a pod's partials).
#[derive(Serialize)]
pub(crate) struct AnalysisOut<'a> {
    op_stats: &'a OpStats,
    advice: &'a [String],
    grouped: bool,
    inference: &'a HostInferenceStats,
}

impl<'a> AnalysisOut<'a> {
    /// `analysis`, to be written.
    pub(crate) fn of(analysis: &'a HostAnalysis) -> AnalysisOut<'a> {
        AnalysisOut {
            op_stats: &analysis.op_stats,
            advice: &analysis.advice,
            grouped: analysis.grouped,
            inference: &analysis.inference,
        }
    }
}

/// A host analysis as it is read back.
#[derive(Deserialize)]
pub(crate) struct AnalysisIn {
    op_stats: OpStats,
    advice: Vec<String>,
    grouped: bool,
    inference: HostInferenceStats,
}

impl AnalysisIn {
    /// The analysis read.
    pub(crate) fn into_analysis(self) -> HostAnalysis {
        HostAnalysis {
            op_stats: self.op_stats,
            advice: self.advice,
            grouped: self.grouped,
            inference: self.inference,
            alive: Default::default(),
        }
    }
}

/// A host analysis as bytes.
pub(crate) fn encode_analysis(analysis: &HostAnalysis) -> Vec<u8> {
    // Serializing plain data cannot fail; an empty payload would only be a miss later.
    serde_json::to_vec(&AnalysisOut::of(analysis)).unwrap_or_default()
}

/// A host analysis from bytes [`encode_analysis`] wrote (`None`: not one).
pub(crate) fn decode_analysis(bytes: &[u8]) -> Option<HostAnalysis> {
    serde_json::from_slice::<AnalysisIn>(bytes).ok().map(AnalysisIn::into_analysis)
}

/// Writes a rendered trace body and its notes: the notes as one line of JSON, then the
/// body as it is (megabytes of JSON: neither escaped into another document nor copied).
pub(crate) fn write_trace_json(notes: &[String], body: &str, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    serde_json::to_writer(&mut *out, notes)?;
    out.write_all(b"\n")?;
    out.write_all(body.as_bytes())
}

/// The notes and body [`write_trace_json`] wrote (`None`: not one).
pub(crate) fn decode_trace_json(bytes: Vec<u8>) -> Option<(Vec<String>, String)> {
    let split = bytes.iter().position(|&b| b == b'\n')?;
    let notes = serde_json::from_slice(&bytes[..split]).ok()?;
    let mut body = bytes;
    body.drain(..=split);
    Some((notes, String::from_utf8(body).ok()?))
}

/// A PyTorch view as the persistent cache keeps it: the report, and whether the trace
/// looked like a PyTorch trace (the one note it depends on). JSON with exact float round
/// trips, so a reloaded report answers byte for byte.
#[derive(Serialize, Deserialize)]
pub(crate) struct PytorchViewOut<T> {
    /// Which view the report is (read back only as that view).
    pub(crate) view: String,
    pub(crate) is_pytorch: bool,
    pub(crate) report: T,
}

/// One PyTorch trace as the HTA tools keep it in the persistent cache: what a request
/// assembles (its rank, steps and parts), not its rows. The host is not kept: it is the
/// file's name in the run that serves it. JSON with exact float round trips, so a reloaded
/// rank answers byte for byte.
#[derive(Serialize, Deserialize)]
pub(crate) struct KeptRank<'a> {
    /// `distributedInfo.rank`, −1 when the trace names none.
    pub(crate) rank: i64,
    pub(crate) steps: Cow<'a, [ProfilerStep]>,
    pub(crate) parts: Cow<'a, RankParts>,
}

impl KeptRank<'_> {
    /// The bytes [`KeptRank::decode`] reads back.
    pub(crate) fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// A rank from bytes [`KeptRank::encode`] wrote (`None`: not one).
    pub(crate) fn decode(bytes: &[u8]) -> Option<KeptRank<'static>> {
        serde_json::from_slice(bytes).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxprof_format::LocalStore;

    #[test]
    fn entries_of_another_build_are_never_read() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("host.xplane.pb");
        std::fs::write(&file, b"a profile's bytes").unwrap();
        let cache = DiskCache::open(&dir.path().join("cache"), 1 << 20).unwrap();
        let store = LocalStore::new(dir.path());
        let id = identity(&store, &file).unwrap();
        // What another build, and a build from before fingerprints (version only), stored.
        cache.put(&entry_key("0123456789abcdef", ANALYSIS_ENTRY, &id, ""), b"another build's result").unwrap();
        cache.put(&oxprof_diskcache::entry_key(ANALYSIS_ENTRY, &id, ""), b"an unfingerprinted result").unwrap();
        let slot = Persisted::new(Some(&cache), &store, &file, ANALYSIS_ENTRY, "");
        assert_eq!(slot.read(), None, "this build never reads them");
        slot.write(|| b"this build's result".to_vec());
        assert_eq!(slot.read().as_deref(), Some(&b"this build's result"[..]));
        assert_eq!(BUILD_FINGERPRINT.len(), 16, "{BUILD_FINGERPRINT}");
    }

    #[test]
    fn trace_bodies_round_trip_with_their_notes() {
        let encode = |notes: &[String], body: &str| {
            let mut out = Vec::new();
            write_trace_json(notes, body, &mut out).unwrap();
            out
        };
        let notes = vec!["a note\nover two lines".to_string(), String::new()];
        let body = "{\"traceEvents\":[\n]}";
        assert_eq!(decode_trace_json(encode(&notes, body)), Some((notes, body.to_string())));
        assert_eq!(decode_trace_json(encode(&[], "")), Some((Vec::new(), String::new())));
        assert_eq!(decode_trace_json(b"no notes line".to_vec()), None);
        assert_eq!(decode_trace_json(b"[1]\n{}".to_vec()), None, "notes are strings");
    }
}
