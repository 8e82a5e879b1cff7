//! Log directories in object stores: `s3://`, `gs://`, `az://` (and `abfs://`,
//! `https://<account>.blob.core.windows.net/…`) and plain `http(s)://`, behind oxprof's
//! profile-store seam ([`oxprof_format::ProfileStore`]).
//!
//! ```text
//!  location.rs  a URL → which cloud, its bucket and prefix (no IO)
//!  connect.rs   an object_store client per cloud, credentials the cloud's standard way,
//!               anonymous access, retries and timeouts
//!  transport.rs the HTTP client under them: answers read no further than asked or allowed,
//!               redirects within the origin
//!  limits.rs    budgets of listings and answers, origins redirects may go to
//!  redact.rs    secrets (URL userinfo, signatures, tokens) out of any text shown
//!  runtime.rs   the one tokio runtime the blocking seam waits on (never a rayon thread's work)
//!  store.rs     RemoteStore: one listing per refresh, stat, parallel ranged reads, ETag checks,
//!               the on-disk object cache
//!  layout.rs    runs and hosts from a flat listing of keys (XProf's layout, as discovery.rs)
//!  upload.rs    writing into a store: multipart, nothing partial visible on failure
//! ```
//!
//! Everything here is IO at the edge; analyses never see a URL. Callers open a logdir with
//! [`open_store`], which answers a [`oxprof_format::LocalStore`] for a plain path.

// Library code must not panic on bad input: no unwrap/expect outside tests.
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

mod connect;
mod error;
pub mod layout;
pub mod limits;
pub mod location;
mod redact;
mod runtime;
mod store;
mod transport;
pub mod upload;

pub use connect::{RemoteOptions, set_no_sign_request};
pub use error::StoreError;
pub use limits::StoreLimits;
pub use location::{Cloud, Location, is_url};
pub use redact::{REDACTED, redact, redact_query};
pub use store::RemoteStore;
pub use upload::{upload_dir, upload_file};

use oxprof_format::{LocalStore, ProfileStore};
use std::path::Path;
use std::sync::Arc;

/// The store of a logdir as a user named it: a [`RemoteStore`] for a URL, a
/// [`LocalStore`] for anything else.
pub fn open_store(logdir: &Path, options: &RemoteOptions) -> Result<Arc<dyn ProfileStore>, StoreError> {
    // A URL may reach here as a path with its `//` intact (clap keeps it as given).
    match logdir.to_str().filter(|s| is_url(s)) {
        Some(url) => Ok(Arc::new(RemoteStore::open(url, options)?)),
        None => Ok(Arc::new(LocalStore::new(logdir))),
    }
}
