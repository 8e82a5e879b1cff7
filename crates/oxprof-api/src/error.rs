//! API errors. Each maps to a CLI exit code and an HTTP status.

/// Why a request failed as a whole.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// The path holds no profiles, or cannot be read.
    #[error(transparent)]
    Discovery(#[from] oxprof_format::DiscoveryError),
    /// A profile file could not be loaded.
    #[error(transparent)]
    Load(#[from] oxprof_format::LoadError),
    /// No run of that name.
    #[error("no run named {name:?}; available runs: {available}")]
    UnknownRun {
        /// The requested run.
        name: String,
        /// Comma-separated run names.
        available: String,
    },
    /// No host of that name in the run.
    #[error("no host named {host:?} in run {run:?}; available hosts: {available} (or ALL_HOSTS)")]
    UnknownHost {
        /// The requested host.
        host: String,
        /// The run.
        run: String,
        /// Comma-separated host names.
        available: String,
    },
    /// No tool of that name.
    #[error("unknown tool {0:?}")]
    UnknownTool(String),
    /// A tool oxprof knows but does not compute yet.
    #[error("tool {tool:?} is not available in this version of oxprof")]
    NotYetAvailable {
        /// The tool.
        tool: String,
    },
    /// A parameter is missing or malformed.
    #[error("bad parameter {name:?}: {reason}")]
    BadParameter {
        /// The parameter.
        name: String,
        /// What is wrong.
        reason: String,
    },
    /// A summary file (`oxprof summary`) that cannot be used.
    #[error("{path}: {cause}")]
    Summary {
        /// The file as named.
        path: String,
        /// Why (another version, not a summary, over the size budget…).
        cause: String,
    },
    /// Something the request names does not exist (or may not be read).
    #[error("{0}")]
    NotFound(String),
    /// The computation this request waited for was abandoned (a bug: it panicked).
    #[error(transparent)]
    Abandoned(#[from] oxprof_flight::Abandoned),
    /// A failure with its HTTP status, from a route added by the server's host program.
    #[error("{message}")]
    Http {
        /// HTTP status code.
        status: u16,
        /// The message.
        message: String,
    },
    /// A pod's partial result that cannot be read (another format version, damaged, not
    /// one).
    #[error("{path}: {cause}; recompute it with `oxprof pod partial` from the host's profile")]
    Partial {
        /// The partial's file.
        path: std::path::PathBuf,
        /// What is wrong with it.
        cause: oxprof_wire::artifact::ArtifactError,
    },
    /// A tool that needs a host's events, asked of a pod result's host whose own profile
    /// its pod.json does not name (the partial holds what the multi-host tools read only).
    #[error(
        "{path}: host {host} of a pod result is a partial result, which holds what the multi-host tools need \
         (overview_page, input_pipeline_analyzer, framework_op_stats, pod_viewer, megascale_stats, ...) but \
         not its events, and the pod result's pod.json does not name its profile; open the host's own profile \
         for this tool"
    )]
    PodHostWithoutEvents {
        /// The host.
        host: String,
        /// Its partial's file.
        path: std::path::PathBuf,
    },
    /// A pod result's host whose own profile (as its pod.json names it) this session may
    /// not read, or not as named.
    #[error("host {host} of a pod result: its profile {profile} {reason}")]
    PodHostSource {
        /// The host.
        host: String,
        /// Its profile, as pod.json names it.
        profile: String,
        /// Why it is not read.
        reason: String,
    },
    /// A computation panicked (a bug); the request is answered 500 and the server goes on.
    #[error("internal error while answering this request; please report it")]
    Panicked,
    /// One failure shared by concurrent requests that waited on the same computation.
    #[error(transparent)]
    Shared(std::sync::Arc<ApiError>),
}

impl ApiError {
    /// The HTTP status this error maps to.
    pub fn http_status(&self) -> u16 {
        match self {
            ApiError::UnknownRun { .. } | ApiError::UnknownHost { .. } | ApiError::UnknownTool(_) => 404,
            ApiError::Discovery(_) | ApiError::NotFound(_) => 404,
            ApiError::Abandoned(_) | ApiError::Panicked => 500,
            ApiError::Http { status, .. } => *status,
            ApiError::BadParameter { .. } => 400,
            ApiError::Summary { .. } | ApiError::Partial { .. } | ApiError::PodHostWithoutEvents { .. } => 422,
            ApiError::PodHostSource { .. } => 403,
            ApiError::Load(oxprof_format::LoadError::LimitExceeded { .. }) => 413,
            ApiError::Load(oxprof_format::LoadError::FileChanged { .. }) => 409,
            ApiError::Load(_) => 422,
            ApiError::NotYetAvailable { .. } => 501,
            ApiError::Shared(e) => e.http_status(),
        }
    }
}
