//! What the server's `/capture_profile` route may do on behalf of a web page: which
//! profiler servers it may connect to, how many captures run at once, and how long one
//! may trace. (`oxprof capture` is run by the user and is not restricted.)
//!
//! **Targets.** By default only loopback addresses (`127.0.0.0/8`, `::1`) are allowed.
//! Names are resolved and *every* address they resolve to must be allowed (`localhost` is
//! fine; a name that resolves elsewhere, like `localtest.me`-style tricks, is refused); the
//! capture then connects to exactly the addresses that were checked, so a name cannot
//! resolve to something else in between (DNS rebinding). More targets are allowed with
//! [`AllowedTarget`] entries (the server's `--capture-allow`):
//!
//! | entry | allows |
//! | --- | --- |
//! | `worker1` | host name `worker1` (as written in `service_addr`, any case), any port, whatever it resolves to |
//! | `worker1:8466` | that name, that port only |
//! | `10.0.0.5` or `fd00::5` | that IP address, any port (also when a name resolves to it) |
//! | `10.0.0.5:8466` or `[fd00::5]:8466` | that IP address, that port only |
//! | `10.0.0.0/8` or `fd00::/8` | every address of the block, any port (`0.0.0.0/0` and `::/0`: any) |
//!
//! IPv4-mapped IPv6 addresses (`::ffff:10.0.0.5`) are checked as their IPv4 address.
//!
//! **Concurrency.** [`CaptureLimiter`] counts running captures; a capture beyond
//! [`CapturePolicy::max_concurrent`] is refused at once ([`CaptureError::TooManyCaptures`],
//! HTTP 429) instead of queueing a thread.
//!
//! **Bounds.** `duration` ≤ [`CapturePolicy::max_duration`] (default 10 min), `delay` ≤
//! [`CapturePolicy::max_delay`] (10 min), `num_retry` ≤ [`CapturePolicy::max_retries`] (10),
//! addresses in `service_addr` ≤ [`CapturePolicy::max_workers`] (64).

use crate::error::CaptureError;
use crate::options::{MAX_DELAY, MAX_DURATION};
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// Default of [`CapturePolicy::max_concurrent`].
pub const DEFAULT_MAX_CONCURRENT: usize = 4;
/// Default of [`CapturePolicy::max_duration`]: 10 min.
pub const DEFAULT_MAX_DURATION: Duration = Duration::from_secs(600);
/// Default of [`CapturePolicy::max_delay`]: 10 min.
pub const DEFAULT_MAX_DELAY: Duration = Duration::from_secs(600);
/// Default of [`CapturePolicy::max_retries`].
pub const DEFAULT_MAX_RETRIES: u32 = 10;
/// Default of [`CapturePolicy::max_workers`].
pub const DEFAULT_MAX_WORKERS: usize = 64;

/// What the `/capture_profile` route allows (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapturePolicy {
    /// Targets that may be captured from (loopback by default).
    pub allow: Vec<AllowedTarget>,
    /// Captures running at once (at least 1 is used).
    pub max_concurrent: usize,
    /// Longest `duration` (never more than [`MAX_DURATION`], 1 h).
    pub max_duration: Duration,
    /// Longest `delay` (never more than [`MAX_DELAY`], 1 h).
    pub max_delay: Duration,
    /// Largest `num_retry`.
    pub max_retries: u32,
    /// Most workers (addresses in `service_addr`) in one capture.
    pub max_workers: usize,
}

impl Default for CapturePolicy {
    fn default() -> Self {
        CapturePolicy::loopback_only()
    }
}

impl CapturePolicy {
    /// Loopback targets only (`127.0.0.0/8`, `::1`), at most 4 captures at once, each of
    /// up to 64 workers, up to 10 min long after up to 10 min of delay, with up to 10
    /// retries.
    pub fn loopback_only() -> Self {
        CapturePolicy {
            allow: vec![
                AllowedTarget::Net { net: IpNet::V4_LOOPBACK, port: None },
                AllowedTarget::Net { net: IpNet::V6_LOOPBACK, port: None },
            ],
            max_concurrent: DEFAULT_MAX_CONCURRENT,
            max_duration: DEFAULT_MAX_DURATION,
            max_delay: DEFAULT_MAX_DELAY,
            max_retries: DEFAULT_MAX_RETRIES,
            max_workers: DEFAULT_MAX_WORKERS,
        }
    }

    /// Parses one allow-list entry (`HOST`, `HOST:PORT`, `IP`, `IP:PORT`, `[IPv6]:PORT`
    /// or `CIDR`; see the module docs). Usable as a clap `value_parser`.
    pub fn parse_allow(text: &str) -> Result<AllowedTarget, CaptureError> {
        text.parse()
    }

    /// This policy with more allowed targets.
    pub fn allowing(mut self, entries: impl IntoIterator<Item = AllowedTarget>) -> Self {
        self.allow.extend(entries);
        self
    }

    /// The duration limit in force (`max_duration`, at most [`MAX_DURATION`]).
    pub fn duration_limit(&self) -> Duration {
        self.max_duration.min(MAX_DURATION)
    }

    /// The delay limit in force (`max_delay`, at most [`MAX_DELAY`]).
    pub fn delay_limit(&self) -> Duration {
        self.max_delay.min(MAX_DELAY)
    }

    /// Checks `address` (`host:port`, normalized) against the allow-list, given what it
    /// resolved to (`resolved`: not empty). Pure: the resolution is the caller's.
    pub fn check_resolved(&self, address: &str, resolved: &[SocketAddr]) -> Result<(), CaptureError> {
        let (host, port) = split_host_port(address)?;
        if let Ok(ip) = host.parse::<IpAddr>() {
            if self.allows_ip(ip, port) {
                return Ok(());
            }
            return Err(CaptureError::TargetNotAllowed {
                address: address.to_string(),
                reason: format!("{ip} is neither a loopback address nor allowed"),
                suggestion: SocketAddr::new(ip, port).to_string(),
            });
        }
        let name = normalize_host_name(&host);
        let named = self.allow.iter().any(|entry| match entry {
            AllowedTarget::Host { name: allowed, port: allowed_port } => {
                *allowed == name && allowed_port.is_none_or(|p| p == port)
            }
            AllowedTarget::Net { .. } => false,
        });
        if named {
            return Ok(());
        }
        match resolved.iter().find(|target| !self.allows_ip(target.ip(), port)) {
            None if !resolved.is_empty() => Ok(()),
            None => Err(CaptureError::Unresolvable { address: address.to_string(), reason: "no address found".into() }),
            Some(outside) => Err(CaptureError::TargetNotAllowed {
                address: address.to_string(),
                reason: format!("{host} resolves to {}, which is neither a loopback address nor allowed", outside.ip()),
                suggestion: format!("{name}:{port}"),
            }),
        }
    }

    /// Resolves the addresses (at once, each within `timeout`) and checks each
    /// ([`Self::check_resolved`]); the result pins each address to the socket addresses
    /// that were checked, in the order given.
    pub async fn resolve_targets(
        &self,
        addresses: &[String],
        timeout: Duration,
    ) -> Result<Vec<ResolvedTarget>, CaptureError> {
        let mut lookups = tokio::task::JoinSet::new();
        for (index, address) in addresses.iter().enumerate() {
            let address = address.clone();
            lookups.spawn(async move { (index, crate::client::resolve(&address, timeout).await) });
        }
        let mut resolved: Vec<Option<Vec<SocketAddr>>> = vec![None; addresses.len()];
        while let Some(joined) = lookups.join_next().await {
            let (index, result) = joined.map_err(|e| CaptureError::Internal(format!("a name lookup stopped: {e}")))?;
            if let Some(slot) = resolved.get_mut(index) {
                *slot = Some(result?);
            }
        }
        let mut targets = Vec::with_capacity(addresses.len());
        for (address, socket_addrs) in addresses.iter().zip(resolved) {
            let socket_addrs = socket_addrs.unwrap_or_default();
            self.check_resolved(address, &socket_addrs)?;
            targets.push(ResolvedTarget { address: address.clone(), socket_addrs });
        }
        Ok(targets)
    }

    fn allows_ip(&self, ip: IpAddr, port: u16) -> bool {
        self.allow.iter().any(|entry| match entry {
            AllowedTarget::Net { net, port: allowed_port } => {
                net.contains(ip) && allowed_port.is_none_or(|p| p == port)
            }
            AllowedTarget::Host { .. } => false,
        })
    }
}

/// An address checked against the policy, with the socket addresses it resolved to: the
/// capture connects to those only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedTarget {
    /// The address as given (`host:port`, normalized): names the worker's file.
    pub address: String,
    /// What it resolved to (at least one).
    pub socket_addrs: Vec<SocketAddr>,
}

/// One entry of the allow-list (see the module docs for the syntax).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AllowedTarget {
    /// A host name as written in `service_addr` (lowercase, no trailing dot), any port
    /// or one. Allowed whatever it resolves to.
    Host {
        /// The name.
        name: String,
        /// The port, or `None` for any.
        port: Option<u16>,
    },
    /// An IP address block, any port or one.
    Net {
        /// The block (a single address is a /32 or /128).
        net: IpNet,
        /// The port, or `None` for any.
        port: Option<u16>,
    },
}

impl FromStr for AllowedTarget {
    type Err = CaptureError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let entry = text.trim();
        let bad = |reason: &str| {
            CaptureError::BadOption(format!(
                "bad --capture-allow entry {entry:?}: {reason} (expected HOST, HOST:PORT, IP, IP:PORT, [IPv6]:PORT \
                 or a CIDR block like 10.0.0.0/8)"
            ))
        };
        if entry.is_empty() {
            return Err(bad("it is empty"));
        }
        if let Some((ip, prefix)) = entry.split_once('/') {
            let ip: IpAddr = ip.parse().map_err(|_| bad("not an IP address before '/'"))?;
            let prefix: u8 = prefix.parse().map_err(|_| bad("the prefix length is not a number"))?;
            let net = IpNet::new(ip, prefix).ok_or_else(|| bad("the prefix length is too long"))?;
            return Ok(AllowedTarget::Net { net, port: None });
        }
        if let Ok(ip) = entry.parse::<IpAddr>() {
            return Ok(AllowedTarget::Net { net: IpNet::host(ip), port: None });
        }
        if let Ok(socket) = entry.parse::<SocketAddr>() {
            return Ok(AllowedTarget::Net { net: IpNet::host(socket.ip()), port: Some(socket.port()) });
        }
        let (name, port) = match entry.rsplit_once(':') {
            Some((name, port)) => (name, Some(port.parse::<u16>().map_err(|_| bad("the port is not 1 to 65535"))?)),
            None => (entry, None),
        };
        if port == Some(0) {
            return Err(bad("the port is not 1 to 65535"));
        }
        let name = normalize_host_name(name);
        let valid = !name.is_empty()
            && name.len() <= 253
            && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'));
        if !valid {
            return Err(bad("not a host name"));
        }
        Ok(AllowedTarget::Host { name, port })
    }
}

impl fmt::Display for AllowedTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AllowedTarget::Host { name, port: None } => write!(f, "{name}"),
            AllowedTarget::Host { name, port: Some(port) } => write!(f, "{name}:{port}"),
            AllowedTarget::Net { net, port: None } => write!(f, "{net}"),
            AllowedTarget::Net { net, port: Some(port) } => write!(f, "{}", SocketAddr::new(net.addr, *port)),
        }
    }
}

/// An IP address block (`10.0.0.0/8`, `::1/128`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpNet {
    addr: IpAddr,
    prefix: u8,
}

impl IpNet {
    /// `127.0.0.0/8`.
    pub const V4_LOOPBACK: IpNet = IpNet { addr: IpAddr::V4(Ipv4Addr::new(127, 0, 0, 0)), prefix: 8 };
    /// `::1/128`.
    pub const V6_LOOPBACK: IpNet = IpNet { addr: IpAddr::V6(Ipv6Addr::LOCALHOST), prefix: 128 };

    /// The block of `addr` with `prefix` leading bits (host bits cleared); `None` when the
    /// prefix is longer than the address.
    pub fn new(addr: IpAddr, prefix: u8) -> Option<IpNet> {
        let addr = match addr {
            IpAddr::V4(v4) if prefix <= 32 => IpAddr::V4(Ipv4Addr::from(u32::from(v4) & v4_mask(prefix))),
            IpAddr::V6(v6) if prefix <= 128 => IpAddr::V6(Ipv6Addr::from(u128::from(v6) & v6_mask(prefix))),
            _ => return None,
        };
        Some(IpNet { addr, prefix })
    }

    /// The block of one address.
    pub fn host(addr: IpAddr) -> IpNet {
        let addr = addr.to_canonical();
        IpNet { addr, prefix: if addr.is_ipv4() { 32 } else { 128 } }
    }

    /// Whether `ip` is in the block (IPv4-mapped IPv6 addresses count as IPv4).
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, ip.to_canonical()) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => u32::from(ip) & v4_mask(self.prefix) == u32::from(net),
            (IpAddr::V6(net), IpAddr::V6(ip)) => u128::from(ip) & v6_mask(self.prefix) == u128::from(net),
            _ => false,
        }
    }
}

impl fmt::Display for IpNet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

fn v4_mask(prefix: u8) -> u32 {
    u32::MAX.checked_shl(32 - u32::from(prefix.min(32))).unwrap_or(0)
}

fn v6_mask(prefix: u8) -> u128 {
    u128::MAX.checked_shl(128 - u32::from(prefix.min(128))).unwrap_or(0)
}

/// Lowercase, without a trailing dot: how names are compared.
fn normalize_host_name(name: &str) -> String {
    name.trim_end_matches('.').to_ascii_lowercase()
}

/// `host:port` → (host without brackets, port).
fn split_host_port(address: &str) -> Result<(String, u16), CaptureError> {
    let bad = || CaptureError::BadAddress { address: address.to_string(), reason: "expected host:port".into() };
    let (host, port) = address.rsplit_once(':').ok_or_else(bad)?;
    let port = port.parse::<u16>().map_err(|_| bad())?;
    let host = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
    Ok((host.to_string(), port))
}

/// Counts running captures and refuses more than its maximum (see the module docs).
/// Clones share the count.
#[derive(Debug, Clone)]
pub struct CaptureLimiter {
    inner: Arc<LimiterState>,
}

#[derive(Debug)]
struct LimiterState {
    running: AtomicUsize,
    max: usize,
}

impl CaptureLimiter {
    /// A limiter of `max` captures at once (at least 1).
    pub fn new(max: usize) -> Self {
        CaptureLimiter { inner: Arc::new(LimiterState { running: AtomicUsize::new(0), max: max.max(1) }) }
    }

    /// A permit for one capture (released when dropped), or
    /// [`CaptureError::TooManyCaptures`] at once when `max` are running.
    pub fn try_acquire(&self) -> Result<CapturePermit, CaptureError> {
        let max = self.inner.max;
        match self.inner.running.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < max).then_some(n + 1)) {
            Ok(_) => Ok(CapturePermit { state: Arc::clone(&self.inner) }),
            Err(running) => Err(CaptureError::TooManyCaptures { running, max }),
        }
    }

    /// Captures running now.
    pub fn running(&self) -> usize {
        self.inner.running.load(Ordering::Acquire)
    }

    /// The maximum.
    pub fn max(&self) -> usize {
        self.inner.max
    }
}

/// One running capture's place in a [`CaptureLimiter`]; dropping it frees the place.
#[derive(Debug)]
pub struct CapturePermit {
    state: Arc<LimiterState>,
}

impl Drop for CapturePermit {
    fn drop(&mut self) {
        self.state.running.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sock(text: &str) -> SocketAddr {
        text.parse().unwrap()
    }

    #[test]
    fn allow_entries_parse() {
        let parse = |t: &str| CapturePolicy::parse_allow(t).unwrap().to_string();
        assert_eq!(parse("Worker1."), "worker1");
        assert_eq!(parse("worker1:8466"), "worker1:8466");
        assert_eq!(parse("10.0.0.5"), "10.0.0.5/32");
        assert_eq!(parse("10.0.0.5:8466"), "10.0.0.5:8466");
        assert_eq!(parse("[fd00::5]:8466"), "[fd00::5]:8466");
        assert_eq!(parse("fd00::5"), "fd00::5/128");
        assert_eq!(parse("10.1.2.3/8"), "10.0.0.0/8");
        assert_eq!(parse("0.0.0.0/0"), "0.0.0.0/0");
        assert_eq!(parse("::/0"), "::/0");
        for bad in ["", "10.0.0.0/33", "::/129", "x/8", "10.0.0.0/x", "host:http", "host:0", "a b", "a/b:1", "http://x"]
        {
            let message = CapturePolicy::parse_allow(bad).unwrap_err().to_string();
            assert!(message.contains("--capture-allow"), "{bad:?}: {message}");
        }
    }

    /// The server's `--capture-allow` flag can parse with `parse_allow` directly.
    #[test]
    fn parse_allow_is_a_clap_value_parser() {
        let command = clap::Command::new("serve").arg(
            clap::Arg::new("capture-allow")
                .long("capture-allow")
                .action(clap::ArgAction::Append)
                .value_parser(CapturePolicy::parse_allow),
        );
        let matches = command.clone().try_get_matches_from([
            "serve",
            "--capture-allow",
            "w1:8466",
            "--capture-allow",
            "10.0.0.0/8",
        ]);
        let entries: Vec<AllowedTarget> =
            matches.unwrap().get_many::<AllowedTarget>("capture-allow").unwrap().cloned().collect();
        assert_eq!(entries.iter().map(ToString::to_string).collect::<Vec<_>>(), ["w1:8466", "10.0.0.0/8"]);
        let error = command.try_get_matches_from(["serve", "--capture-allow", "10.0.0.0/99"]).unwrap_err();
        assert!(error.to_string().contains("bad --capture-allow entry"), "{error}");
    }

    #[test]
    fn loopback_only_by_default() {
        let policy = CapturePolicy::default();
        assert!(policy.check_resolved("127.0.0.1:9999", &[sock("127.0.0.1:9999")]).is_ok());
        assert!(policy.check_resolved("127.8.9.10:1", &[sock("127.8.9.10:1")]).is_ok());
        assert!(policy.check_resolved("[::1]:9999", &[sock("[::1]:9999")]).is_ok());
        assert!(policy.check_resolved("[::ffff:127.0.0.1]:9", &[sock("[::ffff:127.0.0.1]:9")]).is_ok());
        // A name resolving to loopback only is fine.
        let localhost = [sock("[::1]:9999"), sock("127.0.0.1:9999")];
        assert!(policy.check_resolved("localhost:9999", &localhost).is_ok());
        for (address, resolved) in [
            ("10.0.0.1:9999", vec![sock("10.0.0.1:9999")]),
            ("0.0.0.0:9999", vec![sock("0.0.0.0:9999")]),
            ("[::ffff:10.0.0.1]:9", vec![sock("[::ffff:10.0.0.1]:9")]),
            // A name that resolves elsewhere, even partly.
            ("localtest.example:9999", vec![sock("10.1.1.1:9999")]),
            ("mixed.example:9999", vec![sock("127.0.0.1:9999"), sock("192.168.1.9:9999")]),
        ] {
            let error = policy.check_resolved(address, &resolved).unwrap_err();
            assert!(matches!(error, CaptureError::TargetNotAllowed { .. }), "{address}: {error:?}");
            assert_eq!(error.http_status(), 403);
            assert!(error.to_string().contains("--capture-allow"), "{error}");
        }
        let error = policy.check_resolved("mixed.example:9999", &[sock("192.168.1.9:9999")]).unwrap_err();
        assert!(error.to_string().contains("resolves to 192.168.1.9"), "{error}");
        assert!(error.to_string().contains("--capture-allow mixed.example:9999"), "{error}");
    }

    #[test]
    fn extra_entries_allow_more() {
        let entries = ["worker1:8466", "gpu-box", "10.0.0.0/8", "192.168.1.5:7000", "[fd00::5]:9"];
        let policy =
            CapturePolicy::loopback_only().allowing(entries.iter().map(|e| CapturePolicy::parse_allow(e).unwrap()));
        let allowed = |address: &str, ip: &str| policy.check_resolved(address, &[sock(ip)]).is_ok();
        assert!(allowed("WORKER1:8466", "172.16.0.1:8466"), "names are allowed whatever they resolve to");
        assert!(!allowed("worker1:8467", "172.16.0.1:8467"), "only on the port given");
        assert!(allowed("gpu-box:1", "172.16.0.2:1"));
        assert!(allowed("10.200.0.1:9999", "10.200.0.1:9999"));
        assert!(allowed("name.example:9999", "10.200.0.1:9999"), "a name resolving into an allowed block");
        assert!(allowed("192.168.1.5:7000", "192.168.1.5:7000"));
        assert!(!allowed("192.168.1.5:7001", "192.168.1.5:7001"));
        assert!(allowed("[fd00::5]:9", "[fd00::5]:9"));
        assert!(!allowed("11.0.0.1:9", "11.0.0.1:9"));
        let everything = CapturePolicy::loopback_only().allowing([CapturePolicy::parse_allow("0.0.0.0/0").unwrap()]);
        assert!(everything.check_resolved("8.8.8.8:53", &[sock("8.8.8.8:53")]).is_ok());
        assert!(everything.check_resolved("[2001:db8::1]:53", &[sock("[2001:db8::1]:53")]).is_err());
    }

    #[test]
    fn limiter_refuses_beyond_its_maximum() {
        let limiter = CaptureLimiter::new(2);
        let a = limiter.try_acquire().unwrap();
        let b = limiter.clone().try_acquire().unwrap();
        let error = limiter.try_acquire().unwrap_err();
        assert!(matches!(error, CaptureError::TooManyCaptures { running: 2, max: 2 }), "{error:?}");
        assert_eq!(error.http_status(), 429);
        assert!(error.to_string().starts_with("2 captures already running"), "{error}");
        assert!(error.to_string().contains("wait for one to finish"), "{error}");
        drop(a);
        assert_eq!(limiter.running(), 1);
        let _c = limiter.try_acquire().unwrap();
        drop(b);
        assert_eq!(limiter.running(), 1);
        assert_eq!(CaptureLimiter::new(0).max(), 1);
    }

    #[test]
    fn limits_never_exceed_the_hard_ones() {
        let policy = CapturePolicy { max_duration: Duration::MAX, max_delay: Duration::MAX, ..Default::default() };
        assert_eq!(policy.duration_limit(), MAX_DURATION);
        assert_eq!(policy.delay_limit(), MAX_DELAY);
        assert_eq!(CapturePolicy::default().duration_limit(), Duration::from_secs(600));
    }
}
