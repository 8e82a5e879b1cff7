//! Error types of the format crate. Every error names the file and what to do about it.

use std::path::PathBuf;

/// A malformed protobuf encountered while decoding, with its byte offset.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} at byte {offset}")]
pub struct WireError {
    /// Absolute byte offset in the (decompressed) file.
    pub offset: u64,
    /// What was wrong.
    pub what: &'static str,
}

/// Why a buffer could not be decoded as an XSpace.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The protobuf structure is broken (truncated, corrupt, or not protobuf at all).
    #[error("not a valid XSpace protobuf: {source} (inside {context})")]
    Wire {
        /// The wire-level problem.
        source: WireError,
        /// The message being decoded, e.g. `XSpace.planes[2].lines[5]`.
        context: String,
    },
    /// The buffer parsed, but holds nothing an XSpace has (only unknown fields).
    #[error("not an XSpace: {0} bytes with no XSpace fields in them")]
    NotAnXSpace(usize),
    /// The buffer is empty.
    #[error("the file is empty (0 bytes)")]
    Empty,
    /// Bytes that should hold an `xla.HloProto` do not.
    #[error("not a valid HLO proto ({0} bytes)")]
    NotAnHloProto(usize),
    /// A limit of the in-memory model was exceeded.
    #[error("too large to load: {0}")]
    TooLarge(&'static str),
}

/// Why a profile file could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file could not be opened or read.
    #[error("{path}: cannot read: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The file looked gzip-compressed but could not be decompressed.
    #[error("{path}: not a valid gzip file: {source}; re-copy or re-capture the profile")]
    Gzip {
        /// The file.
        path: PathBuf,
        /// The decompression error.
        source: std::io::Error,
    },
    /// The bytes are not a usable XSpace.
    #[error("{path}: {source}; {hint}")]
    Decode {
        /// The file.
        path: PathBuf,
        /// What was wrong.
        source: DecodeError,
        /// What to do about it.
        hint: &'static str,
    },
}

impl LoadError {
    /// The file the error is about.
    pub fn path(&self) -> &std::path::Path {
        match self {
            LoadError::Io { path, .. } | LoadError::Gzip { path, .. } | LoadError::Decode { path, .. } => path,
        }
    }

    pub(crate) fn decode(path: PathBuf, source: DecodeError) -> LoadError {
        let hint = match &source {
            DecodeError::Empty => "the profiler may have crashed while writing it; capture the profile again",
            DecodeError::Wire { source, .. }
                if source.what.contains("truncated") || source.what.contains("past the end") =>
            {
                "the file is incomplete (still being written, or cut short while copying); copy or capture it again"
            }
            DecodeError::TooLarge(_) => "split the capture into shorter profiles",
            _ => "is this an .xplane.pb file written by TensorFlow, JAX or PyTorch/XLA?",
        };
        LoadError::Decode { path, source, hint }
    }
}
