//! Requests hyper refuses before any handler sees them — a URL longer than its limit
//! (65,534 bytes: a `/oxprof/api/query?sql=` of about 64 KiB), or headers past its buffer —
//! get hyper's own answer: a bare `414`/`431`, no body and none of the headers every other
//! answer carries. The connections of [`Listener`] replace that answer, on its way out, by
//! the service's own for the same status (a one-line JSON body, the security headers).
//!
//! Hyper's automatic answers are the only ones that start a write with these status lines
//! (the service never answers 414 or 431), and the last thing hyper writes on such a
//! connection before it closes it.

use axum::serve::Listener as AxumListener;
use oxprof_api::http::{HttpError, Service};
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};

/// Hyper's automatic answers (their status lines) and what the service says instead.
const REPLACED: &[(&[u8], u16, &str)] = &[
    (
        b"HTTP/1.1 414 ",
        414,
        "the request's URL is longer than 65534 bytes, the most the server reads; send less in it \
         (a query's SQL: at most 64 KiB)",
    ),
    (b"HTTP/1.1 431 ", 431, "the request's headers are larger than the server reads; send fewer or shorter ones"),
];

/// A TCP listener whose connections answer hyper's refusals as the service does.
pub struct Listener {
    inner: TcpListener,
    /// For each of [`REPLACED`]: the whole answer, as bytes on the wire.
    answers: Arc<Vec<Vec<u8>>>,
}

impl Listener {
    /// Wraps `inner`, with the answers `service` gives.
    pub fn new(inner: TcpListener, service: &Service) -> Listener {
        let answers = REPLACED
            .iter()
            .map(|&(_, status, message)| wire(service, HttpError { status, message: message.to_string() }))
            .collect();
        Listener { inner, answers: Arc::new(answers) }
    }
}

/// The service's answer to `error`, as an HTTP/1.1 response that closes the connection.
fn wire(service: &Service, error: HttpError) -> Vec<u8> {
    let response = service.error_answer(error);
    let reason =
        axum::http::StatusCode::from_u16(response.status).ok().and_then(|s| s.canonical_reason()).unwrap_or("Error");
    let body = response.body.as_bytes();
    let mut head = format!(
        "HTTP/1.1 {} {reason}\r\ncontent-type: {}\r\ncontent-length: {}\r\nconnection: close\r\n",
        response.status,
        response.content_type,
        body.len()
    );
    for (name, value) in &response.headers {
        head.push_str(&format!("{}: {value}\r\n", name.to_ascii_lowercase()));
    }
    head.push_str("\r\n");
    let mut out = head.into_bytes();
    out.extend_from_slice(body);
    out
}

impl AxumListener for Listener {
    type Io = Connection;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Connection, SocketAddr) {
        let (stream, addr) = AxumListener::accept(&mut self.inner).await;
        (Connection { inner: stream, answers: self.answers.clone(), state: State::Passing }, addr)
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }
}

/// Where a connection's writes are.
enum State {
    /// Hyper's bytes go out as they are.
    Passing,
    /// The service's answer (index in `answers`) replaces hyper's; `written` bytes are out.
    Replacing { answer: usize, written: usize },
    /// The answer is out; whatever hyper still writes is dropped.
    Replaced,
}

/// One accepted connection (see the module docs).
pub struct Connection {
    inner: TcpStream,
    answers: Arc<Vec<Vec<u8>>>,
    state: State,
}

impl Connection {
    /// Starts replacing when `first` (the start of a write) is one of hyper's answers.
    fn notice(&mut self, first: &[u8]) {
        if let State::Passing = self.state
            && let Some(answer) = REPLACED.iter().position(|(line, _, _)| first.starts_with(line))
        {
            self.state = State::Replacing { answer, written: 0 };
        }
    }

    /// Writes the rest of the replacing answer; `Ready(Ok)` once it is all out.
    fn push_answer(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while let State::Replacing { answer, written } = self.state {
            let Some(bytes) = self.answers.get(answer) else {
                self.state = State::Replaced;
                break;
            };
            let Some(rest) = bytes.get(written..).filter(|r| !r.is_empty()) else {
                self.state = State::Replaced;
                break;
            };
            match Pin::new(&mut self.inner).poll_write(cx, rest) {
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Poll::Ready(Ok(n)) => self.state = State::Replacing { answer, written: written + n },
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
        Poll::Ready(Ok(()))
    }
}

impl AsyncRead for Connection {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for Connection {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.notice(buf);
        if let State::Passing = self.state {
            return Pin::new(&mut self.inner).poll_write(cx, buf);
        }
        // Hyper's bytes count as written once the answer replacing them is.
        self.push_answer(cx).map_ok(|()| buf.len())
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        if let Some(first) = bufs.iter().find(|b| !b.is_empty()) {
            self.notice(first);
        }
        if let State::Passing = self.state {
            return Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        }
        let total = bufs.iter().map(|b| b.len()).sum();
        self.push_answer(cx).map_ok(|()| total)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.push_answer(cx) {
            Poll::Ready(Ok(())) => Pin::new(&mut self.inner).poll_flush(cx),
            other => other,
        }
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.push_answer(cx) {
            Poll::Ready(Ok(())) => Pin::new(&mut self.inner).poll_shutdown(cx),
            other => other,
        }
    }
}
