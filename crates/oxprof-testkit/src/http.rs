//! Reading HTTP/1.1 requests in the tests' own loopback servers (WebDAV logdirs, hostile
//! object stores), whose answers each test writes by hand.

use std::io::BufRead;

/// A request as a test server read it (no body: the tests' clients send none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// `GET`, `HEAD`, `PROPFIND`…
    pub method: String,
    /// The target as sent (path and query).
    pub path: String,
    /// The headers in order, names as sent.
    pub headers: Vec<(String, String)>,
}

impl Request {
    /// The first header named `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// The next request on a connection; `None` once the client closed it.
pub fn read_request(reader: &mut impl BufRead) -> std::io::Result<Option<Request>> {
    let mut line = String::new();
    if reader.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    let mut parts = line.split_whitespace();
    let (method, path) = (parts.next().unwrap_or("").to_string(), parts.next().unwrap_or("").to_string());
    let mut headers = Vec::new();
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header)? == 0 {
            break;
        }
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            headers.push((name.trim().to_string(), value.trim().to_string()));
        }
    }
    Ok(Some(Request { method, path, headers }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_read_one_after_the_other() {
        let wire = b"HEAD /logs/h.pb HTTP/1.1\r\nHost: x\r\nRange: bytes=0-9\r\n\r\nGET /a HTTP/1.1\r\n\r\n";
        let mut reader = &wire[..];
        let first = read_request(&mut reader).unwrap().unwrap();
        assert_eq!((first.method.as_str(), first.path.as_str()), ("HEAD", "/logs/h.pb"));
        assert_eq!(first.header("range"), Some("bytes=0-9"));
        assert_eq!(read_request(&mut reader).unwrap().unwrap().path, "/a");
        assert_eq!(read_request(&mut reader).unwrap(), None);
    }
}
