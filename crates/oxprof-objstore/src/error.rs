//! Why an object store could not be opened, listed, read or written: one line naming the
//! URL or object and what to do. Credentials never appear in a message, only the names of
//! the variables and files they were looked for in.

/// What went wrong with an object store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The URL is not one oxprof can open.
    #[error("{url}: {reason}")]
    BadUrl {
        /// The URL as given.
        url: String,
        /// Why (and what is accepted).
        reason: String,
    },
    /// No credentials were found where the cloud's tools look for them.
    #[error(
        "{url}: no {cloud} credentials: tried {tried}; set one of them, or pass --no-sign-request for a public bucket"
    )]
    NoCredentials {
        /// The URL.
        url: String,
        /// The cloud's name.
        cloud: &'static str,
        /// The variables and files looked at.
        tried: String,
    },
    /// The store refused the credentials or the request (HTTP 401/403).
    #[error(
        "{url}: access denied ({status}) with credentials from {source_of_credentials}; check them, or the bucket's policy"
    )]
    Denied {
        /// The object or prefix.
        url: String,
        /// 401 or 403, and the store's error code when it gave one.
        status: String,
        /// Where the credentials came from (a variable or file name, never a secret).
        source_of_credentials: String,
    },
    /// The object or bucket does not exist (HTTP 404).
    #[error("{url}: not found ({status}); check the bucket and the path")]
    NotFound {
        /// The object or prefix.
        url: String,
        /// 404, and the store's error code when it gave one (`NoSuchBucket`).
        status: String,
    },
    /// The object was replaced while it was being read (its ETag changed).
    #[error("{url}: the object was replaced while it was being read; try again")]
    Changed {
        /// The object.
        url: String,
    },
    /// A multi-file upload stopped at a file: what it had already written was deleted
    /// (`undone` says so, with counts, or which objects are left when some could not be).
    #[error("{failed}; {undone}")]
    Upload {
        /// Why the file failed.
        failed: Box<StoreError>,
        /// What became of the files written before it.
        undone: String,
    },
    /// Anything else the store or the network said, after retries.
    #[error("{url}: {cause}")]
    Other {
        /// The object or prefix.
        url: String,
        /// The store's message.
        cause: String,
    },
}

impl StoreError {
    /// Classifies an `object_store` error about `url`.
    pub(crate) fn from_object_store(url: &str, credentials: &str, e: object_store::Error) -> StoreError {
        let url = url.to_string();
        let denied = |status: String| StoreError::Denied {
            url: url.clone(),
            status,
            source_of_credentials: credentials.to_string(),
        };
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
            | StoreError::Other { url, .. } => url,
            StoreError::Upload { failed, .. } => failed.url(),
        }
    }

    /// The message without its leading URL (for errors that name the object themselves).
    pub fn reason(&self) -> String {
        let text = self.to_string();
        text.strip_prefix(self.url()).and_then(|t| t.strip_prefix(": ")).map_or(text.clone(), str::to_string)
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
