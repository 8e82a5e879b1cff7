//! What a store's server may make oxprof do: how many entries and directory levels a
//! listing may hold, how long it may take, how large an answer that is not an object's bytes may be, and which
//! other origins a redirect may lead to. Each has a default and an environment variable that
//! changes it, which the error for that limit names. (Object bytes are held to
//! `--max-profile-bytes` and to the ranges asked for, in `store.rs` and `transport.rs`.)

use url::Url;

/// Entries (objects, and directories of a WebDAV walk) one listing may hold.
pub const DEFAULT_MAX_LISTED: usize = 1_000_000;
/// Directory levels a WebDAV walk descends below the logdir (XProf's layout is
/// `run/plugins/profile/session/file`).
pub const DEFAULT_MAX_DEPTH: usize = 12;
/// Seconds one listing (a WebDAV walk: one PROPFIND per directory) may take: a server
/// that answers every PROPFIND with hundreds of fresh directories cannot keep a request
/// walking for the minutes the entry budget alone would allow.
pub const DEFAULT_MAX_LIST_SECONDS: u64 = 120;
/// Largest answer that is not an object's bytes: a PROPFIND, a listing page, an error body,
/// a token (a page of 1,000 S3 keys is ~0.3 MB; a PROPFIND of 30,000 entries ~16 MB).
pub const DEFAULT_MAX_LIST_BYTES: u64 = 16 << 20;

/// The variable that raises [`StoreLimits::max_listed`].
pub const MAX_LISTED_VAR: &str = "OXPROF_OBJSTORE_MAX_LISTED";
/// The variable that raises [`StoreLimits::max_depth`].
pub const MAX_DEPTH_VAR: &str = "OXPROF_OBJSTORE_MAX_DEPTH";
/// The variable that raises [`StoreLimits::max_list_seconds`].
pub const MAX_LIST_SECONDS_VAR: &str = "OXPROF_OBJSTORE_MAX_LIST_SECONDS";
/// The variable that raises [`StoreLimits::max_list_bytes`] (in MiB).
pub const MAX_LIST_MB_VAR: &str = "OXPROF_OBJSTORE_MAX_LIST_MB";
/// The variable naming origins redirects may lead to (comma-separated; `*`: any).
pub const ALLOW_REDIRECTS_VAR: &str = "OXPROF_OBJSTORE_ALLOW_REDIRECTS";

/// Budgets of one store's listings and answers, and where its redirects may go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreLimits {
    /// Most entries one listing may hold ([`MAX_LISTED_VAR`]).
    pub max_listed: usize,
    /// Most directory levels a WebDAV walk descends ([`MAX_DEPTH_VAR`]).
    pub max_depth: usize,
    /// Longest one listing may take, in seconds ([`MAX_LIST_SECONDS_VAR`]).
    pub max_list_seconds: u64,
    /// Largest answer that is not an object's bytes, in bytes ([`MAX_LIST_MB_VAR`]).
    pub max_list_bytes: u64,
    /// Origins (`scheme://host[:port]`) a redirect may lead to besides the request's own
    /// ([`ALLOW_REDIRECTS_VAR`]). A redirect to any other origin fails the request.
    pub redirect_origins: Vec<String>,
    /// Follow redirects to any origin (`*` in [`ALLOW_REDIRECTS_VAR`]).
    pub redirect_anywhere: bool,
}

impl Default for StoreLimits {
    /// The defaults, each replaced by its environment variable when that is set.
    fn default() -> Self {
        let number =
            |name: &str| std::env::var(name).ok().and_then(|v| v.trim().parse::<u64>().ok()).filter(|&n| n > 0);
        let allowed = std::env::var(ALLOW_REDIRECTS_VAR).unwrap_or_default();
        let mut limits = StoreLimits {
            max_listed: number(MAX_LISTED_VAR).map_or(DEFAULT_MAX_LISTED, |n| n as usize),
            max_depth: number(MAX_DEPTH_VAR).map_or(DEFAULT_MAX_DEPTH, |n| n as usize),
            max_list_seconds: number(MAX_LIST_SECONDS_VAR).unwrap_or(DEFAULT_MAX_LIST_SECONDS),
            max_list_bytes: number(MAX_LIST_MB_VAR).map_or(DEFAULT_MAX_LIST_BYTES, |mb| mb.saturating_mul(1 << 20)),
            redirect_origins: Vec::new(),
            redirect_anywhere: false,
        };
        for origin in allowed.split(',').map(str::trim).filter(|o| !o.is_empty()) {
            limits = limits.allow_redirects_to(origin);
        }
        limits
    }
}

impl StoreLimits {
    /// These limits, also following redirects to `origin` (`https://cdn.example.com`, a
    /// URL whose origin is meant, or `*` for any).
    pub fn allow_redirects_to(mut self, origin: &str) -> Self {
        if origin == "*" {
            self.redirect_anywhere = true;
        } else {
            self.redirect_origins.push(origin_of_text(origin));
        }
        self
    }

    /// Whether a redirect from `from` may lead to `to`.
    pub(crate) fn may_redirect(&self, from: &Url, to: &Url) -> bool {
        let to = origin_of(to);
        self.redirect_anywhere || origin_of(from) == to || self.redirect_origins.contains(&to)
    }
}

/// A URL's origin as browsers write it (`http://127.0.0.1:8000`, default ports left out).
pub(crate) fn origin_of(url: &Url) -> String {
    url.origin().ascii_serialization()
}

/// The origin a user wrote: a URL's, or the text as given (lowercase) when it is not one.
fn origin_of_text(text: &str) -> String {
    match Url::parse(text) {
        Ok(url) if url.has_host() => origin_of(&url),
        _ => text.trim_end_matches('/').to_ascii_lowercase(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redirects_stay_within_the_origin_unless_allowed() {
        let url = |s: &str| Url::parse(s).unwrap();
        let limits = StoreLimits {
            max_listed: 1,
            max_depth: 1,
            max_list_seconds: 1,
            max_list_bytes: 1,
            redirect_origins: Vec::new(),
            redirect_anywhere: false,
        };
        let from = url("http://127.0.0.1:8000/logs/a");
        assert!(limits.may_redirect(&from, &url("http://127.0.0.1:8000/other?x=1")));
        assert!(!limits.may_redirect(&from, &url("http://127.0.0.1:8001/logs/a")));
        assert!(!limits.may_redirect(&from, &url("https://127.0.0.1:8000/logs/a")));
        assert!(!limits.may_redirect(&from, &url("http://localhost:8000/logs/a")));
        let allowed = limits.clone().allow_redirects_to("HTTP://127.0.0.1:8001/");
        assert!(allowed.may_redirect(&from, &url("http://127.0.0.1:8001/x")));
        assert!(!allowed.may_redirect(&from, &url("http://127.0.0.1:8002/x")));
        assert!(limits.allow_redirects_to("*").may_redirect(&from, &url("http://127.0.0.1:9/")));
        // Default ports are the same origin written either way.
        let https = url("https://h.example/x");
        assert!(StoreLimits::default().may_redirect(&https, &url("https://h.example:443/y")));
    }
}
