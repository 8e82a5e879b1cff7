//! Counters for everything an importer skipped, repaired or found odd. Nothing is dropped
//! silently: each kind has a severity and a sentence a user can act on, and tools show them.
//! The first kinds are the XSpace decoder's; the `Json*`/trace-event kinds are those of the
//! Chrome-trace (PyTorch/Kineto) importer.

use std::collections::BTreeMap;

/// How much a diagnostic matters to the numbers a user sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// Harmless (e.g. fields from a newer schema version).
    Info,
    /// Data was repaired or could not be used; some numbers may be affected.
    DataLoss,
}

impl Severity {
    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::DataLoss => "data_loss",
        }
    }
}

/// A kind of odd input the decoder counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum DiagnosticKind {
    /// Fields not in the XSpace schema (or with an unexpected wire type); skipped.
    UnknownField,
    /// Strings that were not valid UTF-8; invalid bytes replaced with U+FFFD.
    InvalidUtf8,
    /// Events whose metadata id has no `event_metadata` entry; shown with an empty name.
    UnknownEventMetadata,
    /// Stats whose metadata id has no `stat_metadata` entry; shown with an empty name.
    UnknownStatMetadata,
    /// `ref_value` stats pointing at a missing stat metadata entry; read as "".
    DanglingRefValue,
    /// `compressed_str_value` stats that were not valid gzip text; read as "".
    BadCompressedString,
    /// Metadata map keys that appeared more than once; the last entry wins.
    DuplicateMetadataKey,
    /// A JSON trace ended early (e.g. the profiler was killed while writing): what was read
    /// is kept, the unfinished event is dropped.
    TruncatedInput,
    /// A JSON trace stopped parsing mid-way (bytes that are not JSON); events before that
    /// point are kept, the rest of the file is skipped.
    CorruptTail,
    /// Trailing commas (`[1,]`, `{"a":1,}`) in a JSON trace; accepted.
    TrailingComma,
    /// Trace events that are not objects or lack a usable phase; skipped.
    MalformedEvent,
    /// Trace events with an unknown phase (`ph`); kept as instants.
    UnknownPhase,
    /// Trace events of a category the importer does not map; kept on their thread.
    UnknownCategory,
    /// Timestamps or durations written as strings; parsed.
    StringTimestamp,
    /// Events whose timestamp is missing, not a number, NaN or out of range; skipped.
    BadTimestamp,
    /// Negative, NaN or out-of-range durations; read as 0.
    BadDuration,
    /// End (`E`) events with no open begin event on their thread; skipped.
    UnmatchedEnd,
    /// Begin (`B`) events never ended; closed at the end of the trace.
    UnmatchedBegin,
    /// Complete events that overlap a sibling on one thread without nesting; laid out on
    /// extra lines of that thread (none is dropped).
    OverlappingEvents,
    /// Threads or streams without a name; named after their id.
    MissingThreadName,
    /// Names given to more than one thread, or a thread named twice (the last name wins).
    DuplicateThreadName,
    /// Flow events (`s`/`f`) with no event at their timestamp on their thread; skipped.
    UnboundFlow,
}

impl DiagnosticKind {
    /// Stable snake_case code.
    pub fn code(self) -> &'static str {
        match self {
            DiagnosticKind::UnknownField => "unknown_field",
            DiagnosticKind::InvalidUtf8 => "invalid_utf8",
            DiagnosticKind::UnknownEventMetadata => "unknown_event_metadata",
            DiagnosticKind::UnknownStatMetadata => "unknown_stat_metadata",
            DiagnosticKind::DanglingRefValue => "dangling_ref_value",
            DiagnosticKind::BadCompressedString => "bad_compressed_string",
            DiagnosticKind::DuplicateMetadataKey => "duplicate_metadata_key",
            DiagnosticKind::TruncatedInput => "truncated_input",
            DiagnosticKind::CorruptTail => "corrupt_tail",
            DiagnosticKind::TrailingComma => "trailing_comma",
            DiagnosticKind::MalformedEvent => "malformed_event",
            DiagnosticKind::UnknownPhase => "unknown_phase",
            DiagnosticKind::UnknownCategory => "unknown_category",
            DiagnosticKind::StringTimestamp => "string_timestamp",
            DiagnosticKind::BadTimestamp => "bad_timestamp",
            DiagnosticKind::BadDuration => "bad_duration",
            DiagnosticKind::UnmatchedEnd => "unmatched_end",
            DiagnosticKind::UnmatchedBegin => "unmatched_begin",
            DiagnosticKind::OverlappingEvents => "overlapping_events",
            DiagnosticKind::MissingThreadName => "missing_thread_name",
            DiagnosticKind::DuplicateThreadName => "duplicate_thread_name",
            DiagnosticKind::UnboundFlow => "unbound_flow",
        }
    }

    /// Severity of this kind.
    pub fn severity(self) -> Severity {
        match self {
            DiagnosticKind::UnknownField
            | DiagnosticKind::DuplicateMetadataKey
            | DiagnosticKind::TrailingComma
            | DiagnosticKind::UnknownPhase
            | DiagnosticKind::UnknownCategory
            | DiagnosticKind::StringTimestamp
            | DiagnosticKind::OverlappingEvents
            | DiagnosticKind::MissingThreadName
            | DiagnosticKind::DuplicateThreadName => Severity::Info,
            _ => Severity::DataLoss,
        }
    }

    /// What it means, for users.
    pub fn message(self) -> &'static str {
        match self {
            DiagnosticKind::UnknownField => {
                "fields unknown to this XSpace schema were skipped (written by a newer profiler?)"
            }
            DiagnosticKind::InvalidUtf8 => "strings with invalid UTF-8 had bad bytes replaced by U+FFFD",
            DiagnosticKind::UnknownEventMetadata => {
                "events refer to event metadata the file lacks; they are shown without a name"
            }
            DiagnosticKind::UnknownStatMetadata => {
                "stats refer to stat metadata the file lacks; they are shown without a name"
            }
            DiagnosticKind::DanglingRefValue => "reference stats point at missing stat metadata; read as empty strings",
            DiagnosticKind::BadCompressedString => {
                "compressed string stats could not be gunzipped; read as empty strings"
            }
            DiagnosticKind::DuplicateMetadataKey => "metadata ids appear more than once; the last entry was kept",
            DiagnosticKind::TruncatedInput => {
                "the trace ends early (profiler killed while writing?); the events read are kept"
            }
            DiagnosticKind::CorruptTail => "the trace holds bytes that are not JSON; the events before them are kept",
            DiagnosticKind::TrailingComma => "trailing commas in the JSON were accepted",
            DiagnosticKind::MalformedEvent => "trace events that are not objects or have no usable phase were skipped",
            DiagnosticKind::UnknownPhase => "trace events with an unknown phase (ph) were kept as instant events",
            DiagnosticKind::UnknownCategory => "trace events of unknown categories were kept on their thread",
            DiagnosticKind::StringTimestamp => "timestamps written as strings were parsed as numbers",
            DiagnosticKind::BadTimestamp => "events with a missing, non-numeric or out-of-range timestamp were skipped",
            DiagnosticKind::BadDuration => "negative, NaN or out-of-range durations were read as 0",
            DiagnosticKind::UnmatchedEnd => "end (E) events without a begin (B) on their thread were skipped",
            DiagnosticKind::UnmatchedBegin => "begin (B) events never ended were closed at the end of the trace",
            DiagnosticKind::OverlappingEvents => {
                "events overlapping without nesting on one thread were laid out on extra lines of that thread"
            }
            DiagnosticKind::MissingThreadName => "threads or streams without a name were named after their id",
            DiagnosticKind::DuplicateThreadName => "several threads share a name, or a thread was named twice",
            DiagnosticKind::UnboundFlow => "flow events with no event at their time on their thread were skipped",
        }
    }
}

/// Counts per diagnostic kind.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Diagnostics {
    counts: BTreeMap<DiagnosticKind, u64>,
}

impl Diagnostics {
    /// Adds `n` occurrences of `kind`.
    pub fn add(&mut self, kind: DiagnosticKind, n: u64) {
        if n > 0 {
            *self.counts.entry(kind).or_default() += n;
        }
    }

    /// Merges another set of counts into this one.
    pub fn merge(&mut self, other: &Diagnostics) {
        for (&k, &n) in &other.counts {
            self.add(k, n);
        }
    }

    /// The count for `kind`.
    pub fn count(&self, kind: DiagnosticKind) -> u64 {
        self.counts.get(&kind).copied().unwrap_or(0)
    }

    /// Non-zero counts, in a stable order.
    pub fn iter(&self) -> impl Iterator<Item = (DiagnosticKind, u64)> + '_ {
        self.counts.iter().map(|(&k, &n)| (k, n))
    }

    /// True when nothing was counted.
    pub fn is_empty(&self) -> bool {
        self.counts.is_empty()
    }
}
