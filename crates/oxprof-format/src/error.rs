//! Why a profile file could not be loaded. Every error names the file and what to do about
//! it (decoding errors themselves are `oxprof_xspace::DecodeError`).
//!
//! Each error says its cause once: a wrapped error is either printed in the message (a
//! field named `cause`) or exposed as [`std::error::Error::source`], never both, so that
//! `anyhow`'s `{:#}` (which appends every source) does not repeat it.

use oxprof_model::LimitExceeded;
use oxprof_xspace::DecodeError;
use std::path::PathBuf;

/// Why a profile file could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file could not be opened or read.
    #[error("{path}: cannot read: {cause}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        cause: std::io::Error,
    },
    /// The file looked gzip-compressed but could not be decompressed.
    #[error("{path}: not a valid gzip file: {cause}; re-copy or re-capture the profile")]
    Gzip {
        /// The file.
        path: PathBuf,
        /// The decompression error.
        cause: std::io::Error,
    },
    /// The bytes are not a usable XSpace.
    #[error("{path}: {cause}; {hint}")]
    Decode {
        /// The file.
        path: PathBuf,
        /// What was wrong.
        cause: DecodeError,
        /// What to do about it.
        hint: &'static str,
    },
    /// The bytes are not a usable PyTorch (Kineto/Chrome JSON) trace.
    #[error("{path}: {cause}; {hint}")]
    Kineto {
        /// The file.
        path: PathBuf,
        /// What was wrong.
        cause: oxprof_kineto::KinetoError,
        /// What to do about it.
        hint: &'static str,
    },
    /// The file exceeds one of the [`oxprof_model::LoadLimits`]: refused before it could take
    /// more memory or time than a genuine profile of its size would.
    #[error("{path}: {exceeded}; raise the limit if the file is genuine")]
    LimitExceeded {
        /// The file.
        path: PathBuf,
        /// Which limit, its value for this file, and how far the file got.
        exceeded: LimitExceeded,
    },
    /// No format oxprof reads recognises the file's content (nor its name).
    #[error("{path}: not a profile oxprof reads ({found}); oxprof reads {}", crate::formats::formats_we_read())]
    UnknownFormat {
        /// The file.
        path: PathBuf,
        /// What the content looks like instead.
        found: &'static str,
    },
    /// The file was truncated or rewritten while it was being read (its size or
    /// modification time changed, or pages of its mapping vanished).
    #[error("{path}: the file changed while it was being read; try again once it is complete")]
    FileChanged {
        /// The file.
        path: PathBuf,
    },
}

impl LoadError {
    /// The file the error is about.
    pub fn path(&self) -> &std::path::Path {
        match self {
            LoadError::Io { path, .. }
            | LoadError::Gzip { path, .. }
            | LoadError::Decode { path, .. }
            | LoadError::Kineto { path, .. }
            | LoadError::LimitExceeded { path, .. }
            | LoadError::UnknownFormat { path, .. }
            | LoadError::FileChanged { path } => path,
        }
    }

    pub(crate) fn kineto(path: PathBuf, cause: oxprof_kineto::KinetoError) -> LoadError {
        let hint = match &cause {
            oxprof_kineto::KinetoError::LimitExceeded(exceeded) => {
                return LoadError::LimitExceeded { path, exceeded: *exceeded };
            }
            oxprof_kineto::KinetoError::NotATrace { .. } => {
                "is this a trace written by torch.profiler (export_chrome_trace or tensorboard_trace_handler)?"
            }
            oxprof_kineto::KinetoError::Build(_) => "split the capture into shorter traces",
        };
        LoadError::Kineto { path, cause, hint }
    }

    pub(crate) fn decode(path: PathBuf, cause: DecodeError) -> LoadError {
        let hint = match &cause {
            DecodeError::LimitExceeded(exceeded) => return LoadError::LimitExceeded { path, exceeded: *exceeded },
            DecodeError::Empty => "the profiler may have crashed while writing it; capture the profile again",
            DecodeError::Wire { cause, .. }
                if cause.what.contains("truncated") || cause.what.contains("past the end") =>
            {
                "the file is incomplete (still being written, or cut short while copying); copy or capture it again"
            }
            DecodeError::TooLarge(_) => "split the capture into shorter profiles",
            _ => "is this an .xplane.pb file written by TensorFlow, JAX or PyTorch/XLA?",
        };
        LoadError::Decode { path, cause, hint }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxprof_model::Limit;
    use oxprof_testkit::error_chain as chain;
    use oxprof_xspace::WireError;

    fn assert_says_its_cause_once(e: &dyn std::error::Error) {
        let segments = chain(e);
        let joined = segments.join(": ");
        for s in &segments {
            assert_eq!(joined.matches(s.as_str()).count(), 1, "{s:?} is repeated in {joined:?}");
        }
    }

    #[test]
    fn every_error_says_its_cause_once() {
        let io = || std::io::Error::other("disk on fire");
        let wire = WireError { offset: 200_000, what: "unterminated group" };
        let exceeded = LimitExceeded { limit: Limit::Planes, allowed: 1_024, at_least: 1_025 };
        let decode_errors = [
            DecodeError::Wire { cause: wire.clone(), context: "XSpace".into() },
            DecodeError::NotAnXSpace(5),
            DecodeError::Empty,
            DecodeError::TooLarge("too many things"),
            DecodeError::LimitExceeded(exceeded),
        ];
        assert_says_its_cause_once(&wire);
        for e in &decode_errors {
            assert_says_its_cause_once(e);
        }
        let path = PathBuf::from("x.xplane.pb");
        let mut load_errors = vec![
            LoadError::Io { path: path.clone(), cause: io() },
            LoadError::Gzip { path: path.clone(), cause: io() },
            LoadError::LimitExceeded { path: path.clone(), exceeded },
            LoadError::FileChanged { path: path.clone() },
            LoadError::UnknownFormat { path: path.clone(), found: "JSON of no known profile format" },
        ];
        load_errors.extend(decode_errors.into_iter().map(|e| LoadError::decode(path.clone(), e)));
        for e in &load_errors {
            assert_says_its_cause_once(e);
            assert_eq!(e.path(), path);
        }
        let discovery = crate::DiscoveryError::Io { path: path.clone(), cause: io() };
        assert_says_its_cause_once(&discovery);
        assert_says_its_cause_once(&crate::DiscoveryError::NoProfiles(path));
        // The case that motivated this: the wire error appeared twice under `{:#}`.
        let e = LoadError::decode(
            PathBuf::from("x.xplane.pb"),
            DecodeError::Wire { cause: wire, context: "XSpace".into() },
        );
        assert_eq!(chain(&e).len(), 1);
        assert_eq!(e.to_string().matches("unterminated group at byte 200000").count(), 1);
    }

    #[test]
    fn a_limit_error_names_the_limit_and_how_to_raise_it() {
        let e = LoadError::LimitExceeded {
            path: PathBuf::from("x.xplane.pb.gz"),
            exceeded: LimitExceeded { limit: Limit::InflatedBytes, allowed: 2_147_483_648, at_least: 2_147_483_649 },
        };
        assert_eq!(
            e.to_string(),
            "x.xplane.pb.gz: inflates past 2,147,483,648 bytes (--max-profile-bytes); raise the limit if the file is genuine"
        );
    }
}
