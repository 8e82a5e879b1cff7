//! Errors of the XSpace codec: where the protobuf structure broke, and why a buffer is not
//! a usable XSpace.
//!
//! Each error says its cause once: a wrapped error is printed in the message (a field named
//! `cause`), never also exposed as [`std::error::Error::source`], so that `anyhow`'s `{:#}`
//! (which appends every source) does not repeat it.

use oxprof_model::LimitExceeded;

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
    #[error("not a valid XSpace protobuf: {cause} (inside {context})")]
    Wire {
        /// The wire-level problem.
        cause: WireError,
        /// The message being decoded, e.g. `XSpace.planes[2].lines[5]`.
        context: String,
    },
    /// The buffer parsed, but holds nothing an XSpace has (only unknown fields).
    #[error("not an XSpace: {0} bytes with no XSpace fields in them")]
    NotAnXSpace(usize),
    /// The buffer is empty.
    #[error("the file is empty (0 bytes)")]
    Empty,
    /// A limit of the in-memory model was exceeded.
    #[error("too large to load: {0}")]
    TooLarge(&'static str),
    /// The input exceeds one of the [`oxprof_model::LoadLimits`] (a budget against hostile
    /// input).
    #[error("{0}")]
    LimitExceeded(LimitExceeded),
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxprof_model::Limit;
    use oxprof_testkit::error_chain as chain;

    #[test]
    fn every_error_says_its_cause_once() {
        let wire = WireError { offset: 200_000, what: "unterminated group" };
        let exceeded = LimitExceeded { limit: Limit::Planes, allowed: 1_024, at_least: 1_025 };
        let errors = [
            DecodeError::Wire { cause: wire.clone(), context: "XSpace".into() },
            DecodeError::NotAnXSpace(5),
            DecodeError::Empty,
            DecodeError::TooLarge("too many things"),
            DecodeError::LimitExceeded(exceeded),
        ];
        assert_eq!(chain(&wire).len(), 1);
        for e in &errors {
            assert_eq!(chain(e).len(), 1, "{e}");
        }
        assert_eq!(errors[0].to_string().matches("unterminated group at byte 200000").count(), 1);
    }
}
