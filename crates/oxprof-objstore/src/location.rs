//! Object-store URLs: which cloud a logdir URL names, and the prefix of its keys. No IO.

use crate::StoreError;
use object_store::ObjectStoreScheme;
use url::Url;

/// Schemes oxprof opens as object stores (anything else is a local path).
const SCHEMES: &[&str] =
    &["s3://", "s3a://", "gs://", "az://", "adl://", "abfs://", "abfss://", "azure://", "http://", "https://"];

/// Whether `text` names an object store rather than a local path.
pub fn is_url(text: &str) -> bool {
    SCHEMES.iter().any(|scheme| text.get(..scheme.len()).is_some_and(|head| head.eq_ignore_ascii_case(scheme)))
}

/// The cloud a URL names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cloud {
    /// Amazon S3 or an S3-compatible endpoint.
    S3,
    /// Google Cloud Storage.
    Gcs,
    /// Azure Blob Storage.
    Azure,
    /// A plain HTTP(S) server (WebDAV listing for directories).
    Http,
}

impl Cloud {
    /// The cloud's name in messages.
    pub fn name(self) -> &'static str {
        match self {
            Cloud::S3 => "AWS S3",
            Cloud::Gcs => "Google Cloud Storage",
            Cloud::Azure => "Azure Blob Storage",
            Cloud::Http => "HTTP",
        }
    }
}

/// A logdir URL taken apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The URL as given, without a trailing `/`: host files are named under it.
    pub root: String,
    /// The parsed URL.
    pub url: Url,
    /// Which cloud.
    pub cloud: Cloud,
    /// The key prefix inside the bucket (no leading or trailing `/`; empty for the whole
    /// bucket).
    pub prefix: String,
}

impl Location {
    /// Parses a logdir URL.
    pub fn parse(text: &str) -> Result<Location, StoreError> {
        let bad = |reason: String| StoreError::BadUrl { url: text.to_string(), reason };
        let root = text.trim_end_matches('/').to_string();
        let url = Url::parse(&root).map_err(|e| bad(format!("not a URL ({e})")))?;
        let (scheme, path) = ObjectStoreScheme::parse(&url).map_err(|_| {
            bad("not an object-store URL; oxprof reads s3://BUCKET/PREFIX, gs://BUCKET/PREFIX, \
                 az://CONTAINER/PREFIX (with AZURE_STORAGE_ACCOUNT_NAME), https://ACCOUNT.blob.core.windows.net/CONTAINER/PREFIX \
                 and http(s)://HOST/PATH"
                .into())
        })?;
        let cloud = match scheme {
            ObjectStoreScheme::AmazonS3 => Cloud::S3,
            ObjectStoreScheme::GoogleCloudStorage => Cloud::Gcs,
            ObjectStoreScheme::MicrosoftAzure => Cloud::Azure,
            ObjectStoreScheme::Http => Cloud::Http,
            other => return Err(bad(format!("{other:?} URLs are not object stores; give a local path instead"))),
        };
        if matches!(cloud, Cloud::S3 | Cloud::Gcs) && url.host_str().is_none_or(str::is_empty) {
            return Err(bad("no bucket name; write s3://BUCKET/PREFIX or gs://BUCKET/PREFIX".into()));
        }
        let prefix = path.as_ref().trim_matches('/').to_string();
        Ok(Location { root, url, cloud, prefix })
    }

    /// The object key of `name`, a host file's name under [`Location::root`] (as listing
    /// made it), or `None` when it lies elsewhere.
    pub fn key_of(&self, name: &str) -> Option<String> {
        if name == self.root {
            return Some(self.prefix.clone());
        }
        let rel = name.strip_prefix(&self.root)?.strip_prefix('/')?;
        Some(if self.prefix.is_empty() { rel.to_string() } else { format!("{}/{rel}", self.prefix) })
    }

    /// The name of the object at `key` (inside the prefix) as host files carry it.
    pub fn name_of(&self, key: &str) -> String {
        let rel = if self.prefix.is_empty() { key } else { key.strip_prefix(&self.prefix).unwrap_or(key) };
        let rel = rel.trim_start_matches('/');
        if rel.is_empty() { self.root.clone() } else { format!("{}/{rel}", self.root) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_told_from_paths() {
        for url in [
            "s3://b/p",
            "S3://b",
            "gs://b",
            "az://c/p",
            "abfss://c@a.dfs.core.windows.net/p",
            "https://h/x",
            "http://h",
        ] {
            assert!(is_url(url), "{url}");
        }
        for path in ["/tmp/logs", "logs", "C:\\logs", "s3", "gs:/x", "./s3://x", ""] {
            assert!(!is_url(path), "{path}");
        }
    }

    #[test]
    fn a_url_names_its_cloud_bucket_and_prefix() {
        let s3 = Location::parse("s3://bucket/runs/a/").unwrap();
        assert_eq!((s3.cloud, s3.prefix.as_str(), s3.root.as_str()), (Cloud::S3, "runs/a", "s3://bucket/runs/a"));
        assert_eq!(Location::parse("gs://bucket").unwrap().prefix, "");
        assert_eq!(Location::parse("gs://bucket").unwrap().cloud, Cloud::Gcs);
        assert_eq!(Location::parse("az://container/p").unwrap().cloud, Cloud::Azure);
        assert_eq!(Location::parse("https://acct.blob.core.windows.net/c/p").unwrap().cloud, Cloud::Azure);
        assert_eq!(Location::parse("https://s3.us-east-1.amazonaws.com/bucket/p").unwrap().cloud, Cloud::S3);
        let http = Location::parse("http://127.0.0.1:8000/logs").unwrap();
        assert_eq!((http.cloud, http.prefix.as_str()), (Cloud::Http, "logs"));
        let e = Location::parse("ftp://host/x").unwrap_err().to_string();
        assert!(e.starts_with("ftp://host/x: "), "{e}");
        assert!(Location::parse("s3:///nobucket").is_err());
    }

    #[test]
    fn keys_and_names_map_both_ways() {
        let at = Location::parse("s3://b/logs").unwrap();
        assert_eq!(at.name_of("logs/plugins/profile/r/h.xplane.pb"), "s3://b/logs/plugins/profile/r/h.xplane.pb");
        assert_eq!(
            at.key_of("s3://b/logs/plugins/profile/r/h.xplane.pb").unwrap(),
            "logs/plugins/profile/r/h.xplane.pb"
        );
        assert_eq!(at.key_of("s3://b/logs").unwrap(), "logs");
        assert_eq!(at.key_of("s3://b/logsX/h"), None);
        assert_eq!(at.key_of("s3://other/logs/h"), None);
        let whole = Location::parse("s3://b").unwrap();
        assert_eq!(whole.key_of("s3://b/r/h.xplane.pb").unwrap(), "r/h.xplane.pb");
        assert_eq!(whole.name_of("r/h.xplane.pb"), "s3://b/r/h.xplane.pb");
    }
}
