//! Why an object store could not be opened, listed, read or written: one line naming the
//! URL or object and what to do. Credentials never appear in a message, only the names of
//! the variables and files they were looked for in; a secret in the URL itself (a password,
//! a signature) is hidden by [`crate::redact`] when the message is written.

use crate::limits::{ALLOW_REDIRECTS_VAR, MAX_LIST_MB_VAR};
use crate::transport::Refused;

/// What went wrong with an object store. Its message ([`std::fmt::Display`], and
/// [`std::fmt::Debug`] too) never shows a URL's userinfo or credential parameters.
pub enum StoreError {
    /// The URL is not one oxprof can open.
    BadUrl {
        /// The URL as given.
        url: String,
        /// Why (and what is accepted).
        reason: String,
    },
    /// No credentials were found where the cloud's tools look for them.
    NoCredentials {
        /// The URL.
        url: String,
        /// The cloud's name.
        cloud: &'static str,
        /// The variables and files looked at.
        tried: String,
    },
    /// The store refused the credentials or the request (HTTP 401/403).
    Denied {
        /// The object or prefix.
        url: String,
        /// 401 or 403, and the store's error code when it gave one.
        status: String,
        /// Where the credentials came from (a variable or file name, never a secret).
        source_of_credentials: String,
    },
    /// The object or bucket does not exist (HTTP 404).
    NotFound {
        /// The object or prefix.
        url: String,
        /// 404, and the store's error code when it gave one (`NoSuchBucket`).
        status: String,
    },
    /// The object was replaced while it was being read (its ETag changed).
    Changed {
        /// The object.
        url: String,
    },
    /// A budget of the store's answers was reached ([`crate::StoreLimits`]): a listing
    /// with too many entries or levels, an answer too large.
    Limit {
        /// The object or prefix.
        url: String,
        /// Which limit, and what raises it.
        what: String,
    },
    /// The server redirected to another origin than the request's, which oxprof does not
    /// follow unless told to.
    Redirect {
        /// The object or prefix.
        url: String,
        /// The origin redirected to (`scheme://host[:port]`).
        origin: String,
    },
    /// A multi-file upload stopped at a file: what it had already written was deleted
    /// (`undone` says so, with counts, or which objects are left when some could not be).
    Upload {
        /// Why the file failed.
        failed: Box<StoreError>,
        /// What became of the files written before it.
        undone: String,
    },
    /// Anything else the store or the network said, after retries.
    Other {
        /// The object or prefix.
        url: String,
        /// The store's message.
        cause: String,
    },
}

impl std::error::Error for StoreError {}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&crate::redact(&self.unredacted()))
    }
}

impl std::fmt::Debug for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "StoreError({:?})", self.to_string())
    }
}

impl StoreError {
    /// The message as the fields make it, secrets and all (only ever shown redacted).
    fn unredacted(&self) -> String {
        match self {
            StoreError::BadUrl { url, reason } => format!("{url}: {reason}"),
            StoreError::NoCredentials { url, cloud, tried } => format!(
                "{url}: no {cloud} credentials: tried {tried}; set one of them, or pass --no-sign-request for a public bucket"
            ),
            StoreError::Denied { url, status, source_of_credentials } => format!(
                "{url}: access denied ({status}) with credentials from {source_of_credentials}; check them, or the bucket's policy"
            ),
            StoreError::NotFound { url, status } => {
                format!("{url}: not found ({status}); check the bucket and the path")
            }
            StoreError::Changed { url } => format!("{url}: the object was replaced while it was being read; try again"),
            StoreError::Limit { url, what } => format!("{url}: {what}"),
            StoreError::Redirect { url, origin } => format!(
                "{url}: the server redirected to {origin}, another origin, which oxprof does not follow; \
                 if that server is trusted, add {origin} to {ALLOW_REDIRECTS_VAR} (comma-separated origins)"
            ),
            StoreError::Upload { failed, undone } => format!("{}; {undone}", failed.unredacted()),
            StoreError::Other { url, cause } => format!("{url}: {cause}"),
        }
    }

    /// Classifies an `object_store` error about `url`.
    pub(crate) fn from_object_store(url: &str, credentials: &str, e: object_store::Error) -> StoreError {
        let url = url.to_string();
        let denied = |status: String| StoreError::Denied {
            url: url.clone(),
            status,
            source_of_credentials: credentials.to_string(),
        };
        if let Some(refused) = refused_in(&e) {
            return match refused {
                Refused::Redirect { origin } => StoreError::Redirect { url, origin: origin.clone() },
                Refused::TooLarge { limit } => StoreError::Limit {
                    url,
                    what: format!(
                        "the server's answer (a listing, an error or metadata, not an object's bytes) is larger \
                         than {}; if the server is trusted and the logdir this large, raise {MAX_LIST_MB_VAR} (MiB)",
                        size_text(*limit)
                    ),
                },
                Refused::RedirectLoop(n) => StoreError::Other {
                    url,
                    cause: format!("the server redirected more than {n} times in a row; check the URL"),
                },
            };
        }
        match e {
            object_store::Error::NotFound { .. } => StoreError::NotFound { url, status: "404".into() },
            object_store::Error::PermissionDenied { .. } => denied("403".into()),
            object_store::Error::Unauthenticated { .. } => denied("401".into()),
            object_store::Error::Precondition { .. } => StoreError::Changed { url },
            other => {
                // Listing errors arrive as generic ones carrying the HTTP status and the
                // store's XML error body.
                let text = other.to_string();
                // The XML body's <Code>, or a bulk delete's `(code: …)` per key.
                let code = text
                    .split_once("<Code>")
                    .and_then(|(_, rest)| rest.split_once("</Code>"))
                    .or_else(|| text.split_once("(code: ").and_then(|(_, rest)| rest.split_once(')')))
                    .map(|(c, _)| c);
                let status = ["401", "403", "404", "412"]
                    .into_iter()
                    .find(|s| text.contains(&format!("status code: {s}")))
                    .or(match code {
                        Some("AccessDenied") => Some("403"),
                        Some("NoSuchKey" | "NoSuchBucket") => Some("404"),
                        _ => None,
                    });
                let with_code = |s: &str| code.map_or(s.to_string(), |c| format!("{s} {c}"));
                match status {
                    Some("404") => StoreError::NotFound { status: with_code("404"), url },
                    Some(s @ ("401" | "403")) => denied(with_code(s)),
                    Some(_) => StoreError::Changed { url },
                    None => StoreError::Other { url, cause: network_cause(&other, &text) },
                }
            }
        }
    }

    /// The URL or object the error is about.
    pub fn url(&self) -> &str {
        match self {
            StoreError::BadUrl { url, .. }
            | StoreError::NoCredentials { url, .. }
            | StoreError::Denied { url, .. }
            | StoreError::NotFound { url, .. }
            | StoreError::Changed { url }
            | StoreError::Limit { url, .. }
            | StoreError::Redirect { url, .. }
            | StoreError::Other { url, .. } => url,
            StoreError::Upload { failed, .. } => failed.url(),
        }
    }

    /// The message without its leading URL (for errors that name the object themselves).
    pub fn reason(&self) -> String {
        let text = self.to_string();
        let url = crate::redact(self.url());
        text.strip_prefix(url.as_ref()).and_then(|t| t.strip_prefix(": ")).map_or(text.clone(), str::to_string)
    }

    /// The error as an I/O error whose message is [`StoreError::reason`] (the seam's
    /// `LoadError::Io` names the file itself), keeping its kind.
    pub fn into_io(self) -> std::io::Error {
        std::io::Error::new(self.kind(), self.reason())
    }

    fn kind(&self) -> std::io::ErrorKind {
        match self {
            StoreError::NotFound { .. } => std::io::ErrorKind::NotFound,
            StoreError::Denied { .. } | StoreError::NoCredentials { .. } => std::io::ErrorKind::PermissionDenied,
            StoreError::BadUrl { .. } => std::io::ErrorKind::InvalidInput,
            StoreError::Upload { failed, .. } => failed.kind(),
            _ => std::io::ErrorKind::Other,
        }
    }
}

/// A byte count as a limit is written: whole MiB when it is some, else bytes.
fn size_text(bytes: u64) -> String {
    if bytes >= 1 << 20 && bytes & ((1 << 20) - 1) == 0 {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{bytes} bytes")
    }
}

/// The transport's refusal in `error`'s chain of causes, if it ended there.
fn refused_in(error: &object_store::Error) -> Option<&Refused> {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = cause {
        if let Some(refused) = e.downcast_ref::<Refused>() {
            return Some(refused);
        }
        cause = e.source();
    }
    None
}

/// What failed, in words a user can act on: the deepest cause in the error's chain
/// (`connection refused`, `connection closed before message completed`, a status line),
/// with the retries made, instead of `object_store`'s nested "Generic HTTP error: Generic
/// HTTP error: Error performing GET … - HTTP error: error sending request".
fn network_cause(error: &object_store::Error, text: &str) -> String {
    let mut deepest: &dyn std::error::Error = error;
    while let Some(source) = deepest.source() {
        deepest = source;
    }
    let mut root = one_line(&deepest.to_string());
    // Wrappers that only name the store, however deep the chain ends.
    while let Some(rest) = root.strip_prefix("Generic ").and_then(|r| r.split_once(" error: ")).map(|(_, r)| r) {
        root = rest.to_string();
    }
    if let Some((_, after)) = text.split_once("Server returned non-2xx status code: ") {
        // An HTTP status (after retries): the status line and the start of the body.
        root = one_line(after).chars().take(200).collect();
    }
    let retries = text
        .split_once(", after ")
        .and_then(|(_, rest)| rest.split_once(" retries"))
        .and_then(|(n, _)| n.parse::<u32>().ok())
        .filter(|n| *n > 0);
    let tried = retries.map_or(String::new(), |n| format!(" (after {n} retries)"));
    format!("{root}{tried}; check that the server is up and reachable, then try again")
}

/// The store's message on one line (some carry response bodies with newlines).
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bulk_delete_refused_reads_as_a_403() {
        // How object_store reports one key of a DeleteObjects request the server refused.
        let source = "DeleteObjects request failed for key x/a.parquet: Access Denied. (code: AccessDenied)";
        let e = object_store::Error::Generic { store: "S3", source: source.into() };
        let e = StoreError::from_object_store("s3://b/x/a.parquet", "AWS_ACCESS_KEY_ID", e);
        assert_eq!(
            e.to_string(),
            "s3://b/x/a.parquet: access denied (403 AccessDenied) with credentials from AWS_ACCESS_KEY_ID; check \
             them, or the bucket's policy"
        );
    }
}
