//! Counters for everything the decoder skipped, repaired or found odd. Nothing is dropped
//! silently: each kind has a severity and a sentence a user can act on, and tools show them.

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
        }
    }

    /// Severity of this kind.
    pub fn severity(self) -> Severity {
        match self {
            DiagnosticKind::UnknownField | DiagnosticKind::DuplicateMetadataKey => Severity::Info,
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
