//! The HTTP client under every store, held to [`StoreLimits`] whatever a server answers:
//!
//! * **Bytes received.** An answer to a ranged GET (206) is read up to the length of the
//!   range asked for and no further, whatever its `Content-Length` says or however long it
//!   goes on; a whole-object GET (`ObjectBytes`, when a server ignores ranges) up to the
//!   bytes its reader wants. Every other answer (PROPFIND, listing pages, error bodies,
//!   tokens) may be at most `max_list_bytes`: past that the request fails
//!   ([`Refused::TooLarge`]). No answer is ever sized by its headers before it arrives.
//! * **Redirects** are followed only within the request's own origin, or to origins the
//!   limits name; any other fails the request ([`Refused::Redirect`]) before it is sent.
//!
//! It is `object_store`'s reqwest client otherwise, built from the same client options
//! (timeouts, proxy, plain HTTP, certificates), with a redirect policy and a counting body.

use crate::limits::{StoreLimits, origin_of};
use bytes::Bytes;
use http::StatusCode;
use http::header::{CONTENT_RANGE, RANGE};
use http_body::{Body, Frame, SizeHint};
use object_store::ClientConfigKey;
use object_store::client::{
    HttpClient, HttpConnector, HttpError, HttpErrorKind, HttpRequest, HttpResponse, HttpResponseBody, HttpService,
};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

/// Why the client refused an answer: found in an error's chain by
/// `StoreError::from_object_store`, which words it for the user.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Refused {
    /// An answer that is not an object's bytes went past `max_list_bytes`.
    #[error("the server's answer is larger than {limit} bytes")]
    TooLarge {
        /// The limit, in bytes.
        limit: u64,
    },
    /// A redirect to an origin that is neither the request's nor allowed.
    #[error("the server redirected to {origin}, another origin")]
    Redirect {
        /// The origin redirected to (`scheme://host[:port]`; never a path or query).
        origin: String,
    },
    /// More redirects in a row than any store needs.
    #[error("the server redirected more than {0} times in a row")]
    RedirectLoop(usize),
}

/// Redirects followed in a row (reqwest's default).
const MAX_REDIRECTS: usize = 10;

/// Marks a GET as a read of an object's bytes, `0` to the given byte: its answer is read
/// that far and no further (a server that ignores ranges sends the whole object).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ObjectBytes(pub u64);

/// Makes the [`HttpClient`]s of one store: reqwest, capped and with a redirect policy.
#[derive(Debug)]
pub(crate) struct GuardedConnector {
    limits: Arc<StoreLimits>,
}

impl GuardedConnector {
    pub(crate) fn new(limits: StoreLimits) -> Self {
        GuardedConnector { limits: Arc::new(limits) }
    }
}

impl HttpConnector for GuardedConnector {
    fn connect(&self, options: &object_store::ClientOptions) -> object_store::Result<HttpClient> {
        let client = reqwest_client(options, self.limits.clone())
            .map_err(|e| object_store::Error::Generic { store: "HTTP client", source: e.into() })?;
        Ok(HttpClient::new(Guarded { client, max_list_bytes: self.limits.max_list_bytes }))
    }
}

/// A reqwest client as `object_store` builds one from `options`, with oxprof's redirect
/// policy.
fn reqwest_client(options: &object_store::ClientOptions, limits: Arc<StoreLimits>) -> Result<reqwest::Client, String> {
    let value = |key: ClientConfigKey| options.get_config_value(&key);
    let flag = |key: ClientConfigKey| value(key).is_some_and(|v| v.eq_ignore_ascii_case("true") || v == "1");
    let duration = |key: ClientConfigKey| -> Result<Option<std::time::Duration>, String> {
        value(key).map(|v| humantime::parse_duration(&v).map_err(|e| format!("{key:?} {v:?}: {e}"))).transpose()
    };
    let policy = reqwest::redirect::Policy::custom(move |attempt| {
        if attempt.previous().len() > MAX_REDIRECTS {
            return attempt.error(Refused::RedirectLoop(MAX_REDIRECTS));
        }
        let allowed = attempt.previous().first().is_none_or(|from| limits.may_redirect(from, attempt.url()));
        if allowed {
            attempt.follow()
        } else {
            let origin = origin_of(attempt.url());
            attempt.error(Refused::Redirect { origin })
        }
    });
    let agent =
        value(ClientConfigKey::UserAgent).unwrap_or_else(|| concat!("oxprof/", env!("CARGO_PKG_VERSION")).into());
    let mut builder = reqwest::Client::builder()
        .user_agent(agent)
        .redirect(policy)
        // As object_store: a compressed answer's length is not the object's.
        .no_gzip()
        .no_brotli()
        .no_zstd()
        .no_deflate()
        .https_only(!flag(ClientConfigKey::AllowHttp))
        .danger_accept_invalid_certs(flag(ClientConfigKey::AllowInvalidCertificates));
    if let Some(headers) = options.get_default_headers() {
        builder = builder.default_headers(headers.clone());
    }
    if let Some(proxy) = value(ClientConfigKey::ProxyUrl) {
        let mut proxy = reqwest::Proxy::all(&proxy).map_err(|e| format!("proxy: {e}"))?;
        if let Some(excludes) = value(ClientConfigKey::ProxyExcludes) {
            proxy = proxy.no_proxy(reqwest::NoProxy::from_string(&excludes));
        }
        builder = builder.proxy(proxy);
    }
    if let Some(timeout) = duration(ClientConfigKey::Timeout)? {
        builder = builder.timeout(timeout);
    }
    if let Some(timeout) = duration(ClientConfigKey::ConnectTimeout)? {
        builder = builder.connect_timeout(timeout);
    }
    if let Some(timeout) = duration(ClientConfigKey::ReadTimeout)? {
        builder = builder.read_timeout(timeout);
    }
    if let Some(timeout) = duration(ClientConfigKey::PoolIdleTimeout)? {
        builder = builder.pool_idle_timeout(timeout);
    }
    if let Some(max) = value(ClientConfigKey::PoolMaxIdlePerHost).and_then(|v| v.parse().ok()) {
        builder = builder.pool_max_idle_per_host(max);
    }
    if flag(ClientConfigKey::Http1Only) {
        builder = builder.http1_only();
    }
    if flag(ClientConfigKey::Http2Only) {
        builder = builder.http2_prior_knowledge();
    }
    builder.build().map_err(|e| e.to_string())
}

/// reqwest behind the caps.
#[derive(Debug)]
struct Guarded {
    client: reqwest::Client,
    max_list_bytes: u64,
}

#[async_trait::async_trait]
impl HttpService for Guarded {
    async fn call(&self, request: HttpRequest) -> Result<HttpResponse, HttpError> {
        let asked = request.headers().get(RANGE).and_then(|v| v.to_str().ok()).and_then(range_len);
        let object = request.extensions().get::<ObjectBytes>().copied();
        let response = self.client.call(request).await?;
        let (parts, body) = response.into_parts();
        let cap = if parts.status.is_success()
            && let Some(ObjectBytes(end)) = object
        {
            Cap::Truncate(end)
        } else if parts.status == StatusCode::PARTIAL_CONTENT
            && let Some(asked) = asked
        {
            // The range the server says it sent, when that is shorter (the object's end).
            let sent = parts.headers.get(CONTENT_RANGE).and_then(|v| v.to_str().ok()).and_then(content_range_len);
            Cap::Truncate(sent.map_or(asked, |sent| sent.min(asked)))
        } else {
            Cap::Fail(self.max_list_bytes)
        };
        Ok(HttpResponse::from_parts(parts, HttpResponseBody::new(Capped { inner: body, read: 0, cap, done: false })))
    }
}

/// The length of the first range of a `Range: bytes=a-b` header (bounded ranges only: the
/// only ones oxprof asks for).
fn range_len(header: &str) -> Option<u64> {
    let (start, end) = header.strip_prefix("bytes=")?.split(',').next()?.split_once('-')?;
    let (start, end) = (start.trim().parse::<u64>().ok()?, end.trim().parse::<u64>().ok()?);
    end.checked_sub(start)?.checked_add(1)
}

/// The length of a `Content-Range: bytes a-b/n` header's range.
fn content_range_len(header: &str) -> Option<u64> {
    let range = header.strip_prefix("bytes ")?.split('/').next()?;
    range_len(&format!("bytes={range}"))
}

/// How far an answer is read.
#[derive(Debug, Clone, Copy)]
enum Cap {
    /// This many bytes, then the answer ends (what was asked for has arrived).
    Truncate(u64),
    /// At most this many bytes, else the request fails.
    Fail(u64),
}

/// A response body that ends or fails at its [`Cap`], and never promises more than it.
struct Capped {
    inner: HttpResponseBody,
    read: u64,
    cap: Cap,
    done: bool,
}

impl Body for Capped {
    type Data = Bytes;
    type Error = HttpError;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, HttpError>>> {
        let this = &mut *self;
        if this.done {
            return Poll::Ready(None);
        }
        let frame = match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => frame,
            other => return other,
        };
        let mut data = match frame.into_data() {
            Ok(data) => data,
            Err(frame) => return Poll::Ready(Some(Ok(frame))),
        };
        let len = data.len() as u64;
        match this.cap {
            Cap::Truncate(limit) if this.read + len >= limit => {
                // The rest is not read: dropping the body closes the connection.
                data.truncate((limit - this.read) as usize);
                this.read = limit;
                this.done = true;
                if data.is_empty() {
                    return Poll::Ready(None);
                }
            }
            Cap::Fail(limit) if this.read + len > limit => {
                this.done = true;
                return Poll::Ready(Some(Err(HttpError::new(HttpErrorKind::Decode, Refused::TooLarge { limit }))));
            }
            _ => this.read += len,
        }
        Poll::Ready(Some(Ok(Frame::data(data))))
    }

    fn is_end_stream(&self) -> bool {
        self.done || self.inner.is_end_stream()
    }

    /// The inner hint within the cap: a `Content-Length: 64 GiB` never sizes a buffer.
    fn size_hint(&self) -> SizeHint {
        let left = match self.cap {
            Cap::Truncate(limit) | Cap::Fail(limit) => limit.saturating_sub(self.read),
        };
        let inner = self.inner.size_hint();
        let mut hint = SizeHint::new();
        let upper = inner.upper().map_or(left, |upper| upper.min(left));
        hint.set_upper(upper);
        hint.set_lower(inner.lower().min(upper));
        hint
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_measured() {
        assert_eq!(range_len("bytes=0-8388607"), Some(8 << 20));
        assert_eq!(range_len("bytes=10-10"), Some(1));
        assert_eq!(range_len("bytes=10-"), None);
        assert_eq!(range_len("bytes=10-9"), None);
        assert_eq!(content_range_len("bytes 0-99/100"), Some(100));
        assert_eq!(content_range_len("bytes */100"), None);
    }

    fn body_of(chunks: Vec<&'static [u8]>, length: Option<u64>, cap: Cap) -> Capped {
        let stream =
            futures::stream::iter(chunks.into_iter().map(|c| Ok::<_, HttpError>(Frame::data(Bytes::from_static(c)))));
        let inner = HttpResponseBody::new(Claimed { inner: http_body_util::StreamBody::new(stream), length });
        Capped { inner, read: 0, cap, done: false }
    }

    /// A body that claims a length (as a `Content-Length` would).
    struct Claimed<B> {
        inner: B,
        length: Option<u64>,
    }

    impl<B: Body<Data = Bytes, Error = HttpError> + Unpin> Body for Claimed<B> {
        type Data = Bytes;
        type Error = HttpError;
        fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, HttpError>>> {
            Pin::new(&mut self.inner).poll_frame(cx)
        }
        fn size_hint(&self) -> SizeHint {
            self.length.map_or_else(SizeHint::new, SizeHint::with_exact)
        }
    }

    fn collect(body: Capped) -> Result<Vec<u8>, String> {
        let mut out = Vec::new();
        let mut stream = HttpResponseBody::new(body).bytes_stream();
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        runtime.block_on(async {
            use futures::StreamExt;
            while let Some(chunk) = stream.next().await {
                out.extend_from_slice(
                    &chunk.map_err(|e| std::error::Error::source(&e).map_or(e.to_string(), |s| s.to_string()))?,
                );
            }
            Ok(out)
        })
    }

    #[test]
    fn a_range_is_read_to_its_length_and_no_further() {
        let body = body_of(vec![b"abc", b"def", b"ghi"], Some(64 << 30), Cap::Truncate(5));
        assert_eq!(body.size_hint().upper(), Some(5), "a lying length never sizes a buffer");
        assert_eq!(collect(body).unwrap(), b"abcde");
        assert_eq!(collect(body_of(vec![b"abc", b"de"], None, Cap::Truncate(5))).unwrap(), b"abcde");
        assert_eq!(collect(body_of(vec![b"abc"], None, Cap::Truncate(5))).unwrap(), b"abc");
    }

    #[test]
    fn other_answers_fail_past_their_budget() {
        assert_eq!(collect(body_of(vec![b"abc", b"de"], None, Cap::Fail(5))).unwrap(), b"abcde");
        let e = collect(body_of(vec![b"abc", b"def"], None, Cap::Fail(5))).unwrap_err();
        assert_eq!(e, "the server's answer is larger than 5 bytes");
    }
}
