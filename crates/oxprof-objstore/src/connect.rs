//! An `object_store` client for a [`Location`], with credentials found the cloud's
//! standard way, anonymous access on request, bounded retries and timeouts.
//!
//! Credentials are looked for where each cloud's own tools look (environment variables,
//! then shared files) and handed to `object_store`; they are never logged. When none is
//! found the store is not opened: `object_store` would otherwise fall back to a cloud
//! metadata server, which off the cloud is a long wait for a timeout. Such instance or
//! workload credentials are used when asked for (`OXPROF_CLOUD_METADATA=1`).

use crate::location::{Cloud, Location};
use crate::transport::GuardedConnector;
use crate::{StoreError, StoreLimits};
use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use object_store::azure::{AzureConfigKey, MicrosoftAzureBuilder};
use object_store::gcp::{GoogleCloudStorageBuilder, GoogleConfigKey};
use object_store::http::HttpBuilder;
use object_store::{BackoffConfig, ClientConfigKey, ObjectStore, RetryConfig};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// How remote logdirs are opened.
#[derive(Debug, Clone, Default)]
pub struct RemoteOptions {
    /// Send unsigned requests (public buckets; `--no-sign-request`).
    pub anonymous: bool,
    /// The on-disk cache of downloaded objects, keyed by URL and ETag (`--cache-dir`).
    pub disk_cache: Option<Arc<oxprof_diskcache::DiskCache>>,
    /// Budgets of listings and answers, and where redirects may go (defaults, or the
    /// environment's `OXPROF_OBJSTORE_*` variables).
    pub limits: StoreLimits,
}

static NO_SIGN_REQUEST: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Makes every store opened later in this process anonymous (the CLI's
/// `--no-sign-request`, which reaches stores opened deep inside sessions and diffs).
pub fn set_no_sign_request(anonymous: bool) {
    NO_SIGN_REQUEST.store(anonymous, std::sync::atomic::Ordering::Relaxed);
}

/// A connected client and where its credentials came from (for messages).
pub(crate) struct Connection {
    pub store: Arc<dyn ObjectStore>,
    pub credentials: String,
}

/// Retries with exponential backoff on 5xx, throttling and timeouts, bounded in count and
/// total time so that a dead server is an error within seconds, not minutes.
fn retry() -> RetryConfig {
    RetryConfig {
        backoff: BackoffConfig {
            init_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(2),
            base: 2.0,
        },
        max_retries: 4,
        retry_timeout: Duration::from_secs(20),
    }
}

/// Per-request timeouts: connecting, and a whole request (one ranged read is at most a few
/// MB, so a minute is a stalled server).
const CONNECT_TIMEOUT: &str = "5s";
const REQUEST_TIMEOUT: &str = "60s";

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

fn home() -> Option<PathBuf> {
    env("HOME").map(PathBuf::from)
}

fn metadata_allowed() -> bool {
    env("OXPROF_CLOUD_METADATA").is_some_and(|v| v == "1" || v.eq_ignore_ascii_case("true"))
}

/// Connects to `at`'s store.
pub(crate) fn connect(at: &Location, options: &RemoteOptions) -> Result<Connection, StoreError> {
    let url = at.url.as_str();
    let anonymous = options.anonymous || NO_SIGN_REQUEST.load(std::sync::atomic::Ordering::Relaxed);
    let built = |e: object_store::Error| StoreError::BadUrl { url: at.root.clone(), reason: e.to_string() };
    // Every request of the store (and of its credential providers) goes through it.
    let transport = GuardedConnector::new(options.limits.clone());
    match at.cloud {
        Cloud::S3 => {
            let mut builder =
                AmazonS3Builder::from_env().with_url(url).with_retry(retry()).with_http_connector(transport);
            builder = builder
                .with_config(AmazonS3ConfigKey::Client(ClientConfigKey::ConnectTimeout), CONNECT_TIMEOUT)
                .with_config(AmazonS3ConfigKey::Client(ClientConfigKey::Timeout), REQUEST_TIMEOUT);
            if builder.get_config_value(&AmazonS3ConfigKey::Endpoint).is_some_and(|e| e.starts_with("http://")) {
                builder = builder.with_allow_http(true);
            }
            let credentials = if anonymous {
                builder = builder.with_skip_signature(true);
                "none (--no-sign-request)".to_string()
            } else {
                s3_credentials(&mut builder, at)?
            };
            Ok(Connection { store: Arc::new(builder.build().map_err(built)?), credentials })
        }
        Cloud::Gcs => {
            let mut builder =
                GoogleCloudStorageBuilder::from_env().with_url(url).with_retry(retry()).with_http_connector(transport);
            builder = builder
                .with_config(GoogleConfigKey::Client(ClientConfigKey::ConnectTimeout), CONNECT_TIMEOUT)
                .with_config(GoogleConfigKey::Client(ClientConfigKey::Timeout), REQUEST_TIMEOUT);
            let credentials = if anonymous {
                builder = builder.with_skip_signature(true);
                "none (--no-sign-request)".to_string()
            } else {
                gcs_credentials(&builder, at)?
            };
            Ok(Connection { store: Arc::new(builder.build().map_err(built)?), credentials })
        }
        Cloud::Azure => {
            let mut builder =
                MicrosoftAzureBuilder::from_env().with_url(url).with_retry(retry()).with_http_connector(transport);
            builder = builder
                .with_config(AzureConfigKey::Client(ClientConfigKey::ConnectTimeout), CONNECT_TIMEOUT)
                .with_config(AzureConfigKey::Client(ClientConfigKey::Timeout), REQUEST_TIMEOUT);
            let credentials = if anonymous {
                builder = builder.with_skip_signature(true);
                "none (--no-sign-request)".to_string()
            } else {
                azure_credentials(&builder, at)?
            };
            Ok(Connection { store: Arc::new(builder.build().map_err(built)?), credentials })
        }
        Cloud::Http => {
            let base = &at.url[..url::Position::BeforePath];
            let builder = HttpBuilder::new()
                .with_url(base)
                .with_retry(retry())
                .with_http_connector(transport)
                .with_config(ClientConfigKey::ConnectTimeout, CONNECT_TIMEOUT)
                .with_config(ClientConfigKey::Timeout, REQUEST_TIMEOUT)
                .with_config(ClientConfigKey::AllowHttp, "true");
            Ok(Connection { store: Arc::new(builder.build().map_err(built)?), credentials: "none (HTTP)".into() })
        }
    }
}

/// The AWS credential chain oxprof follows: the environment (`AWS_ACCESS_KEY_ID` and
/// `AWS_SECRET_ACCESS_KEY`, with `AWS_SESSION_TOKEN`), a web identity token or container
/// credentials named by the environment, then the shared credentials file
/// (`AWS_SHARED_CREDENTIALS_FILE`, default `~/.aws/credentials`) at profile `AWS_PROFILE`
/// (default `default`).
fn s3_credentials(builder: &mut AmazonS3Builder, at: &Location) -> Result<String, StoreError> {
    if builder.get_config_value(&AmazonS3ConfigKey::AccessKeyId).is_some() {
        return Ok("AWS_ACCESS_KEY_ID".into());
    }
    for delegated in ["AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"] {
        if env(delegated).is_some() {
            return Ok(delegated.into());
        }
    }
    let profile = env("AWS_PROFILE").unwrap_or_else(|| "default".into());
    let file =
        env("AWS_SHARED_CREDENTIALS_FILE").map(PathBuf::from).or_else(|| home().map(|h| h.join(".aws/credentials")));
    if let Some(file) = &file
        && let Ok(text) = std::fs::read_to_string(file)
    {
        let section = ini_section(&text, &profile);
        if let (Some(id), Some(secret)) = (section.get("aws_access_key_id"), section.get("aws_secret_access_key")) {
            let mut b = std::mem::take(builder)
                .with_config(AmazonS3ConfigKey::AccessKeyId, id.clone())
                .with_config(AmazonS3ConfigKey::SecretAccessKey, secret.clone());
            if let Some(token) = section.get("aws_session_token") {
                b = b.with_config(AmazonS3ConfigKey::Token, token.clone());
            }
            *builder = b;
            return Ok(format!("{} [{profile}]", file.display()));
        }
    }
    if metadata_allowed() {
        return Ok("the instance metadata service (OXPROF_CLOUD_METADATA)".into());
    }
    let shown = file.map_or("~/.aws/credentials".into(), |f| f.display().to_string());
    Err(StoreError::NoCredentials {
        url: at.root.clone(),
        cloud: Cloud::S3.name(),
        tried: format!(
            "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_WEB_IDENTITY_TOKEN_FILE, AWS_CONTAINER_CREDENTIALS_RELATIVE_URI, \
             {shown} [{profile}] (AWS_PROFILE), and OXPROF_CLOUD_METADATA=1 for an instance role"
        ),
    })
}

/// Google's application default credentials, as `object_store` reads them: a service
/// account (`GOOGLE_SERVICE_ACCOUNT`, `GOOGLE_SERVICE_ACCOUNT_KEY`,
/// `GOOGLE_APPLICATION_CREDENTIALS`) or gcloud's `application_default_credentials.json`.
fn gcs_credentials(builder: &GoogleCloudStorageBuilder, at: &Location) -> Result<String, StoreError> {
    for key in
        [GoogleConfigKey::ServiceAccount, GoogleConfigKey::ServiceAccountKey, GoogleConfigKey::ApplicationCredentials]
    {
        if builder.get_config_value(&key).is_some() {
            return Ok(match key {
                GoogleConfigKey::ServiceAccountKey => "GOOGLE_SERVICE_ACCOUNT_KEY",
                GoogleConfigKey::ApplicationCredentials => "GOOGLE_APPLICATION_CREDENTIALS",
                _ => "GOOGLE_SERVICE_ACCOUNT",
            }
            .into());
        }
    }
    let adc = home().map(|h| h.join(".config/gcloud/application_default_credentials.json"));
    if let Some(adc) = adc.as_ref().filter(|f| f.is_file()) {
        return Ok(adc.display().to_string());
    }
    if metadata_allowed() {
        return Ok("the metadata server (OXPROF_CLOUD_METADATA)".into());
    }
    Err(StoreError::NoCredentials {
        url: at.root.clone(),
        cloud: Cloud::Gcs.name(),
        tried: "GOOGLE_APPLICATION_CREDENTIALS, GOOGLE_SERVICE_ACCOUNT, GOOGLE_SERVICE_ACCOUNT_KEY, \
                ~/.config/gcloud/application_default_credentials.json (gcloud auth application-default login), \
                and OXPROF_CLOUD_METADATA=1 for a VM's service account"
            .into(),
    })
}

/// Azure's: an account key, a SAS token, a bearer token, a service principal, a federated
/// token file, the Azure CLI, or the storage emulator (`AZURE_STORAGE_USE_EMULATOR`).
fn azure_credentials(builder: &MicrosoftAzureBuilder, at: &Location) -> Result<String, StoreError> {
    let named = [
        (AzureConfigKey::UseEmulator, "AZURE_STORAGE_USE_EMULATOR"),
        (AzureConfigKey::AccessKey, "AZURE_STORAGE_ACCOUNT_KEY"),
        (AzureConfigKey::SasKey, "AZURE_STORAGE_SAS_KEY"),
        (AzureConfigKey::Token, "AZURE_STORAGE_TOKEN"),
        (AzureConfigKey::ClientSecret, "AZURE_CLIENT_SECRET"),
        (AzureConfigKey::FederatedTokenFile, "AZURE_FEDERATED_TOKEN_FILE"),
        (AzureConfigKey::UseAzureCli, "AZURE_USE_AZURE_CLI"),
    ];
    for (key, name) in named {
        let value = builder.get_config_value(&key);
        let set = match key {
            AzureConfigKey::UseEmulator | AzureConfigKey::UseAzureCli => value.is_some_and(|v| v == "true" || v == "1"),
            _ => value.is_some(),
        };
        if set {
            return Ok(name.into());
        }
    }
    if metadata_allowed() {
        return Ok("the managed identity endpoint (OXPROF_CLOUD_METADATA)".into());
    }
    Err(StoreError::NoCredentials {
        url: at.root.clone(),
        cloud: Cloud::Azure.name(),
        tried: "AZURE_STORAGE_ACCOUNT_KEY, AZURE_STORAGE_SAS_KEY, AZURE_STORAGE_TOKEN, AZURE_CLIENT_ID/AZURE_CLIENT_SECRET, \
                AZURE_FEDERATED_TOKEN_FILE, AZURE_USE_AZURE_CLI=true, AZURE_STORAGE_USE_EMULATOR=true, \
                and OXPROF_CLOUD_METADATA=1 for a managed identity"
            .into(),
    })
}

/// The `key = value` pairs of `[name]` (or `[profile name]`) in an INI-style AWS file.
fn ini_section(text: &str, name: &str) -> std::collections::HashMap<String, String> {
    let mut inside = false;
    let mut out = std::collections::HashMap::new();
    for line in text.lines().map(str::trim) {
        if let Some(header) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            let header = header.trim();
            inside = header == name || header.strip_prefix("profile ").is_some_and(|h| h.trim() == name);
        } else if inside && let Some((k, v)) = line.split_once('=') {
            out.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_credential_files_are_read_by_profile() {
        let text =
            "[default]\naws_access_key_id = A\naws_secret_access_key=B\n\n[profile other]\naws_access_key_id=C\n";
        assert_eq!(ini_section(text, "default").get("aws_secret_access_key").unwrap(), "B");
        assert_eq!(ini_section(text, "other").get("aws_access_key_id").unwrap(), "C");
        assert!(ini_section(text, "missing").is_empty());
    }
}
