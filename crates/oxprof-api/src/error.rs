//! API errors. Each maps to a CLI exit code and (later) an HTTP status.

/// Why a request failed as a whole.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// The path holds no profiles, or cannot be read.
    #[error(transparent)]
    Discovery(#[from] oxprof_format::DiscoveryError),
    /// No run of that name.
    #[error("no run named {name:?}; available runs: {available}")]
    UnknownRun {
        /// The requested run.
        name: String,
        /// Comma-separated run names.
        available: String,
    },
}
