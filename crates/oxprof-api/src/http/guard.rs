//! Who may talk to the server, checked before any route runs:
//!
//! * **Host allow-list** (against DNS rebinding: a page whose own name resolves to
//!   127.0.0.1 talks to the server under that name): loopback names (`localhost`,
//!   `*.localhost`, loopback addresses), the address the server is bound to (any IP
//!   address when it is bound to all interfaces: an address is not a name an attacker
//!   controls), and names added with `--allow-host`.
//! * **No cross-site API calls**: browsers label requests another site's page makes
//!   (`Sec-Fetch-Site: cross-site` or `same-site`); API routes refuse them, so no page
//!   can make the server decode profiles for it. Static files (the UI itself) are exempt,
//!   so a link to oxprof still opens it.
//! * **State-changing routes** (POST) need this process's token in `X-Oxprof-Token`
//!   (the UI reads it from a `<meta name="oxprof-token">` element of its page, which other
//!   origins cannot read) and, when a browser sends an `Origin`, the server's own.

use super::HttpError;
use std::net::IpAddr;

/// The header carrying the token.
pub const TOKEN_HEADER: &str = "X-Oxprof-Token";

/// One request as the guard and the routes see it.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// `GET`, `POST`, ...
    pub method: &'a str,
    /// The URL path, still percent-encoded.
    pub path: &'a str,
    /// The raw query string, without `?`.
    pub query: &'a str,
    /// The `Host` header (or HTTP/2's `:authority`).
    pub host: Option<&'a str>,
    /// The `Origin` header.
    pub origin: Option<&'a str>,
    /// The `X-Oxprof-Token` header.
    pub token: Option<&'a str>,
    /// The `Sec-Fetch-Site` header.
    pub fetch_site: Option<&'a str>,
}

impl<'a> Request<'a> {
    /// A request to `localhost` without browser headers.
    pub fn new(method: &'a str, path: &'a str, query: &'a str) -> Self {
        Request { method, path, query, host: Some("localhost"), origin: None, token: None, fetch_site: None }
    }

    /// With this `Host` header (`None`: none sent).
    pub fn host(mut self, host: Option<&'a str>) -> Self {
        self.host = host;
        self
    }

    /// With this `Origin` header.
    pub fn origin(mut self, origin: &'a str) -> Self {
        self.origin = Some(origin);
        self
    }

    /// With this token.
    pub fn token(mut self, token: &'a str) -> Self {
        self.token = Some(token);
        self
    }

    /// With this `Sec-Fetch-Site` header.
    pub fn fetch_site(mut self, site: &'a str) -> Self {
        self.fetch_site = Some(site);
        self
    }
}

/// The guard's settings: the token and the accepted `Host` names.
#[derive(Debug, Clone)]
pub struct Guard {
    token: String,
    bound: Option<IpAddr>,
    extra_hosts: Vec<String>,
}

impl Guard {
    /// Loopback names only, with a fresh random token.
    pub fn loopback() -> Guard {
        Guard { token: random_token(), bound: None, extra_hosts: Vec::new() }
    }

    /// Also accepts the address the server is bound to (every IP address when it is
    /// bound to all interfaces).
    pub fn bound_to(mut self, address: IpAddr) -> Guard {
        self.bound = Some(address);
        self
    }

    /// Also accepts `Host: name` (`--allow-host`).
    pub fn allow_host(mut self, name: &str) -> Guard {
        self.extra_hosts.push(normalize_name(name));
        self
    }

    /// This process's token.
    pub fn token(&self) -> &str {
        &self.token
    }

    /// The UI's `index.html` with the token in a `<meta>` element before `</head>`.
    pub fn page_with_token(&self, index_html: &[u8]) -> Vec<u8> {
        let meta = format!("<meta name=\"oxprof-token\" content=\"{}\">", self.token);
        let text = String::from_utf8_lossy(index_html);
        match text.find("</head>") {
            Some(at) => format!("{}{meta}{}", &text[..at], &text[at..]).into_bytes(),
            None => format!("{meta}{text}").into_bytes(),
        }
    }

    /// The checks every request passes: a known `Host`.
    pub(crate) fn check(&self, request: &Request<'_>) -> Result<(), HttpError> {
        let Some(host) = request.host.filter(|h| !h.trim().is_empty()) else {
            return Err(HttpError { status: 400, message: "the request has no Host header".into() });
        };
        let name = host_name(host);
        if self.host_allowed(&name) {
            return Ok(());
        }
        Err(HttpError {
            status: 403,
            message: format!(
                "Host {name:?} is not allowed: oxprof serve answers loopback names and its own address only \
                 (start it with --allow-host {name} to serve that name)"
            ),
        })
    }

    /// Browsers' cross-site requests are refused on API routes.
    pub(crate) fn check_api(&self, request: &Request<'_>) -> Result<(), HttpError> {
        match request.fetch_site {
            Some(site) if site.eq_ignore_ascii_case("cross-site") || site.eq_ignore_ascii_case("same-site") => {
                Err(HttpError {
                    status: 403,
                    message: "requests from other sites' pages are refused (Sec-Fetch-Site)".into(),
                })
            }
            _ => Ok(()),
        }
    }

    /// What a state-changing route needs besides: the token, and a same-origin `Origin`
    /// when one is sent.
    pub(crate) fn check_state_change(&self, request: &Request<'_>) -> Result<(), HttpError> {
        let token_ok = request.token.is_some_and(|t| constant_time_eq(t.as_bytes(), self.token.as_bytes()));
        if !token_ok {
            return Err(HttpError {
                status: 403,
                message: format!(
                    "missing or wrong {TOKEN_HEADER} header: state-changing requests come from oxprof's own page"
                ),
            });
        }
        same_origin(request)
    }

    /// What a read-only API endpoint for programs rather than pages passes (the MCP
    /// server's HTTP endpoint, which has no page to carry the token): the `Host` and
    /// cross-site checks every API route makes, and, when a browser sends an `Origin`, the
    /// server's own (so that no page of another site can call it, even by a simple request).
    pub fn check_program_client(&self, request: &Request<'_>) -> Result<(), HttpError> {
        // The same rule as `check`, said without `oxprof serve`'s --allow-host.
        if let Some(name) = request.host.filter(|h| !h.trim().is_empty()).map(host_name)
            && !self.host_allowed(&name)
        {
            return Err(HttpError {
                status: 403,
                message: format!(
                    "Host {name:?} is not allowed: only loopback names and the server's own address are answered \
                     (against DNS rebinding)"
                ),
            });
        }
        self.check(request)?;
        self.check_api(request)?;
        same_origin(request)
    }

    fn host_allowed(&self, name: &str) -> bool {
        if name == "localhost" || name.ends_with(".localhost") || self.extra_hosts.iter().any(|h| h == name) {
            return true;
        }
        let Ok(ip) = name.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>() else { return false };
        ip.is_loopback() || self.bound.is_some_and(|bound| bound.is_unspecified() || bound == ip)
    }
}

/// No `Origin`, or the server's own (the scheme and the `Host` it was sent to).
fn same_origin(request: &Request<'_>) -> Result<(), HttpError> {
    let Some(origin) = request.origin else { return Ok(()) };
    let host = request.host.unwrap_or_default();
    let same = ["http://", "https://"]
        .iter()
        .any(|scheme| origin.strip_prefix(scheme).is_some_and(|o| o.eq_ignore_ascii_case(host)));
    if same {
        Ok(())
    } else {
        Err(HttpError { status: 403, message: format!("cross-origin request from {origin:?} refused") })
    }
}

/// The host part of a `Host` header (`name`, `name:port`, `[v6]`, `[v6]:port`), lowercase,
/// without a trailing dot.
fn host_name(header: &str) -> String {
    let header = header.trim();
    let name = if let Some(rest) = header.strip_prefix('[') {
        match rest.find(']') {
            Some(end) => &header[..end + 2],
            None => header,
        }
    } else if header.matches(':').count() == 1 {
        header.split(':').next().unwrap_or(header)
    } else {
        header
    };
    normalize_name(name)
}

fn normalize_name(name: &str) -> String {
    name.trim().trim_end_matches('.').to_ascii_lowercase()
}

/// 128 random bits as hex; falls back to time and address entropy if the OS has none
/// to give (the token then only stops cross-site pages, which cannot read it anyway).
fn random_token() -> String {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let address = &bytes as *const _ as usize as u128;
        bytes = (nanos ^ address.rotate_left(64) ^ u128::from(std::process::id())).to_le_bytes();
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn program_clients_pass_with_a_loopback_host_and_no_foreign_origin() {
        let guard = Guard::loopback();
        let request = |host: &'static str| Request::new("POST", "/mcp", "").host(Some(host));
        assert!(guard.check_program_client(&request("127.0.0.1:9")).is_ok());
        assert!(guard.check_program_client(&request("127.0.0.1:9").origin("http://127.0.0.1:9")).is_ok());
        assert_eq!(
            guard.check_program_client(&request("127.0.0.1:9").origin("https://evil.example")).unwrap_err().status,
            403
        );
        assert_eq!(
            guard.check_program_client(&request("127.0.0.1:9").origin("http://127.0.0.1:10")).unwrap_err().status,
            403
        );
        let foreign = guard.check_program_client(&request("evil.example")).unwrap_err();
        assert_eq!(foreign.status, 403);
        assert!(!foreign.message.contains("--allow-host"), "{}", foreign.message);
        assert_eq!(guard.check_program_client(&request("localhost").fetch_site("cross-site")).unwrap_err().status, 403);
    }

    #[test]
    fn host_names_are_parsed_from_headers() {
        assert_eq!(host_name("LocalHost:8791"), "localhost");
        assert_eq!(host_name("[::1]:8791"), "[::1]");
        assert_eq!(host_name("[::1]"), "[::1]");
        assert_eq!(host_name("127.0.0.1"), "127.0.0.1");
        assert_eq!(host_name("example.com.:80"), "example.com");
    }

    #[test]
    fn only_loopback_names_the_bound_address_and_allowed_hosts_pass() {
        let guard = Guard::loopback().bound_to("10.1.2.3".parse().unwrap()).allow_host("Box.Lan");
        let check = |host: &str| guard.check(&Request::new("GET", "/runs", "").host(Some(host))).is_ok();
        for ok in ["localhost:1", "app.localhost", "127.0.0.1:9", "127.8.0.1", "[::1]:2", "10.1.2.3:8791", "box.lan"] {
            assert!(check(ok), "{ok}");
        }
        for refused in ["evil.example", "10.1.2.4", "localhost.evil.example", "127.0.0.1.nip.io", "[::2]"] {
            assert!(!check(refused), "{refused}");
        }
        assert_eq!(guard.check(&Request::new("GET", "/", "").host(None)).unwrap_err().status, 400);
        // Bound to every interface: any address (not a name) passes.
        let all = Guard::loopback().bound_to("0.0.0.0".parse().unwrap());
        assert!(all.check(&Request::new("GET", "/", "").host(Some("192.168.1.5:8791"))).is_ok());
        assert!(all.check(&Request::new("GET", "/", "").host(Some("evil.example"))).is_err());
    }

    #[test]
    fn state_changes_need_the_token_and_the_same_origin() {
        let guard = Guard::loopback();
        let token = guard.token().to_string();
        let post = || Request::new("POST", "/capture_profile", "").host(Some("127.0.0.1:8791"));
        assert!(guard.check_state_change(&post()).is_err(), "no token");
        assert!(guard.check_state_change(&post().token("0123")).is_err(), "wrong token");
        assert!(guard.check_state_change(&post().token(&token)).is_ok(), "token, no Origin (not a browser)");
        assert!(guard.check_state_change(&post().token(&token).origin("http://127.0.0.1:8791")).is_ok());
        assert!(guard.check_state_change(&post().token(&token).origin("http://evil.example")).is_err());
        assert!(guard.check_state_change(&post().token(&token).origin("http://127.0.0.1:9999")).is_err());
        assert!(guard.check_api(&post().fetch_site("cross-site")).is_err());
        assert!(guard.check_api(&post().fetch_site("same-site")).is_err());
        assert!(guard.check_api(&post().fetch_site("same-origin")).is_ok());
        assert_ne!(Guard::loopback().token(), token, "a token per process (per guard)");
        assert_eq!(token.len(), 32);
    }

    #[test]
    fn the_token_goes_into_the_page_head() {
        let guard = Guard::loopback();
        let page = String::from_utf8(guard.page_with_token(b"<html><head><title>x</title></head><body></body></html>"))
            .unwrap();
        assert!(page.contains(&format!("<meta name=\"oxprof-token\" content=\"{}\"></head>", guard.token())), "{page}");
    }
}
