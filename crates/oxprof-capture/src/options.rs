//! What a capture asks for: the options of one capture session, the `ProfileRequest`
//! built from them (as XProf's `capture_profile.cc` builds it), and the naming of
//! sessions and output files.

use crate::error::CaptureError;
use crate::proto::{ProfileOptions, ProfileRequest};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The tool names XProf's client puts in every request (only TPU servers act on them;
/// `xplane.pb` is the raw XSpace).
pub const REQUESTED_TOOLS: [&str; 10] = [
    "trace_viewer",
    "op_profile",
    "input_pipeline",
    "kernel_stats",
    "memory_viewer",
    "memory_profile",
    "overview_page",
    "pod_viewer",
    "tensorflow_stats",
    "xplane.pb",
];

/// XProf's `kMaxEvents`.
pub const MAX_EVENTS: u64 = 1_000_000;

/// The largest message gRPC can carry (2 GiB - 1).
pub const MAX_GRPC_MESSAGE_BYTES: usize = i32::MAX as usize;

/// Options of one capture session over one or more workers.
#[derive(Debug, Clone, PartialEq)]
pub struct CaptureOptions {
    /// How long the servers trace.
    pub duration: Duration,
    /// How long after the request the tracing starts (same instant on every worker).
    pub delay: Duration,
    /// Host TraceMe level: 0 off, 1 user annotations, 2 default, 3 verbose.
    pub host_tracer_level: u32,
    /// Device tracer level: 0 off, 1 on.
    pub device_tracer_level: u32,
    /// Python tracer level: 0 off, 1 on.
    pub python_tracer_level: u32,
    /// Whether tf.data ops are traced (XProf's capture always asks for them).
    pub include_dataset_ops: bool,
    /// Further attempts after a retryable failure (UNAVAILABLE, refused, empty trace, ...).
    pub retries: u32,
    /// Run directory name; `None`: the current UTC time as `YYYY_MM_DD_HH_MM_SS`.
    pub session_id: Option<String>,
    /// Time allowed for the TCP connection.
    pub connect_timeout: Duration,
    /// Time allowed beyond delay + duration for the server to collect and send the data.
    pub deadline_margin: Duration,
    /// Largest response accepted.
    pub max_response_bytes: usize,
    /// Wait before the first retry; doubles on each further retry.
    pub backoff_initial: Duration,
    /// Upper bound of the wait between attempts.
    pub backoff_max: Duration,
}

impl Default for CaptureOptions {
    fn default() -> Self {
        CaptureOptions {
            duration: Duration::from_secs(2),
            delay: Duration::ZERO,
            host_tracer_level: 2,
            device_tracer_level: 1,
            python_tracer_level: 0,
            include_dataset_ops: true,
            retries: 3,
            session_id: None,
            connect_timeout: Duration::from_secs(5),
            deadline_margin: Duration::from_secs(30),
            max_response_bytes: MAX_GRPC_MESSAGE_BYTES,
            backoff_initial: Duration::from_millis(500),
            backoff_max: Duration::from_secs(8),
        }
    }
}

impl CaptureOptions {
    /// Checks the ranges XProf's UI offers and oxprof's hard limits ([`MAX_DURATION`],
    /// [`MAX_DELAY`]); the session id must be a plain name (see
    /// [`crate::files::validate_session_id`]).
    pub fn validate(&self) -> Result<(), CaptureError> {
        if self.duration.is_zero() {
            return Err(CaptureError::BadOption("the duration must be more than 0".into()));
        }
        if self.duration > MAX_DURATION {
            return Err(CaptureError::BadOption(format!(
                "the duration ({}) is more than the limit of {}",
                human_duration(self.duration),
                human_duration(MAX_DURATION)
            )));
        }
        if self.delay > MAX_DELAY {
            return Err(CaptureError::BadOption(format!(
                "the delay ({}) is more than the limit of {}",
                human_duration(self.delay),
                human_duration(MAX_DELAY)
            )));
        }
        if self.host_tracer_level > 3 {
            return Err(CaptureError::BadOption("the host tracer level must be 0..=3".into()));
        }
        if self.device_tracer_level > 1 {
            return Err(CaptureError::BadOption("the device tracer level must be 0 or 1".into()));
        }
        if self.python_tracer_level > 1 {
            return Err(CaptureError::BadOption("the python tracer level must be 0 or 1".into()));
        }
        if let Some(id) = &self.session_id {
            crate::files::validate_session_id(id)?;
        }
        Ok(())
    }

    /// The time one attempt may take: delay + duration + margin (saturating: never
    /// overflows whatever the options).
    pub fn deadline(&self) -> Duration {
        self.delay.saturating_add(self.duration).saturating_add(self.deadline_margin)
    }

    /// The wait before attempt `attempt` (2, 3, ...): capped exponential backoff,
    /// `initial · 2^(attempt-2)` bounded by `backoff_max`.
    pub fn backoff_before(&self, attempt: u32) -> Duration {
        let doublings = attempt.saturating_sub(2).min(20);
        self.backoff_initial.saturating_mul(1 << doublings).min(self.backoff_max)
    }
}

/// The longest capture oxprof asks a server for (1 h; XProf's client caps events at
/// [`MAX_EVENTS`] anyway). The `/capture_profile` route has a lower limit of its own,
/// [`crate::policy::CapturePolicy::max_duration`].
pub const MAX_DURATION: Duration = Duration::from_secs(3600);

/// The longest delay before tracing starts (1 h).
pub const MAX_DELAY: Duration = Duration::from_secs(3600);

/// `90 s`, `10 min`, `1 h`, `250 ms`: a duration for messages.
pub fn human_duration(duration: Duration) -> String {
    let ms = duration.as_millis();
    if ms > 0 && ms.is_multiple_of(3_600_000) {
        format!("{} h", ms / 3_600_000)
    } else if ms > 0 && ms.is_multiple_of(60_000) {
        format!("{} min", ms / 60_000)
    } else if ms > 0 && ms.is_multiple_of(1000) {
        format!("{} s", ms / 1000)
    } else if ms < 1000 {
        format!("{ms} ms")
    } else {
        format!("{:.3} s", duration.as_secs_f64())
    }
}

/// Parses a duration such as `2s`, `500ms`, `1.5s`, `1m` or `0` (a bare number is seconds).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number.parse().map_err(|_| format!("bad duration {text:?} (expected e.g. 2s, 500ms, 1m)"))?;
    let seconds = match unit.trim() {
        "" | "s" | "sec" => value,
        "ms" => value / 1000.0,
        "m" | "min" => value * 60.0,
        _ => return Err(format!("bad duration unit in {text:?} (use ms, s or m)")),
    };
    if !seconds.is_finite() || !(0.0..=86_400.0).contains(&seconds) {
        return Err(format!("duration {text:?} out of range"));
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// Strips the optional `grpc://` scheme XProf accepts and checks `host:port`.
pub fn normalize_address(address: &str) -> Result<String, CaptureError> {
    let trimmed = address.trim();
    let bare = trimmed.strip_prefix("grpc://").unwrap_or(trimmed).trim_end_matches('/');
    let bad = |reason: &str| CaptureError::BadAddress { address: address.to_string(), reason: reason.into() };
    let (host, port) = bare.rsplit_once(':').ok_or_else(|| bad("expected host:port, e.g. localhost:9999"))?;
    if host.is_empty() || host.contains('/') {
        return Err(bad("expected host:port, e.g. localhost:9999"));
    }
    port.parse::<u16>().map_err(|_| bad("the port must be a number from 1 to 65535"))?;
    Ok(bare.to_string())
}

/// Splits `ADDR[,ADDR...]` and normalizes each address; duplicates are dropped.
pub fn parse_address_list(list: &str) -> Result<Vec<String>, CaptureError> {
    let mut out: Vec<String> = Vec::new();
    for part in list.split(',').filter(|p| !p.trim().is_empty()) {
        let address = normalize_address(part)?;
        if !out.contains(&address) {
            out.push(address);
        }
    }
    if out.is_empty() {
        return Err(CaptureError::BadAddress { address: list.to_string(), reason: "no address given".into() });
    }
    Ok(out)
}

/// The file stem XProf gives a worker's profile: its address with `:` replaced by `_`
/// (`10.0.0.1:6009` → `10.0.0.1_6009`); path separators are replaced too.
pub fn host_file_stem(address: &str) -> String {
    address.chars().map(|c| if matches!(c, ':' | '/' | '\\') { '_' } else { c }).collect()
}

/// `<logdir>/plugins/profile`, the repository root of XProf's capture.
pub fn repository_root(logdir: &Path) -> PathBuf {
    logdir.join("plugins").join("profile")
}

/// The default session id: the current time (UTC) as XProf formats it, `YYYY_MM_DD_HH_MM_SS`.
/// (XProf uses local time; oxprof uses UTC so that runs sort the same on every machine.)
pub fn default_session_id(now: SystemTime) -> String {
    let secs = now.duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let (days, rem) = ((secs / 86_400) as i64, secs % 86_400);
    let (year, month, day) = civil_from_days(days);
    format!("{year:04}_{month:02}_{day:02}_{:02}_{:02}_{:02}", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// Days since 1970-01-01 → (year, month, day) in the proleptic Gregorian calendar
/// (Howard Hinnant's `civil_from_days`: count in 400-year eras starting on March 1st).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * month_index + 2) / 5 + 1) as u32;
    let month = if month_index < 10 { month_index + 3 } else { month_index - 9 } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// Builds the request XProf's `PopulateProfileRequest` sends, plus `emit_xspace` so the
/// server returns the XSpace instead of writing it on its own filesystem.
///
/// `start_timestamp_ns` is the wall-clock instant (Unix ns) tracing should start on every
/// worker: now + delay, as in XProf's `CaptureRemoteTrace`.
pub fn build_profile_request(
    options: &CaptureOptions,
    repository_root: &Path,
    session_id: &str,
    address: &str,
    start_timestamp_ns: u64,
) -> ProfileRequest {
    let duration_ms = options.duration.as_millis().min(u128::from(u64::MAX)) as u64;
    let repository_root = repository_root.to_string_lossy().into_owned();
    let repository_path =
        Path::new(&repository_root).parent().and_then(Path::parent).map(|p| p.to_string_lossy().into_owned());
    ProfileRequest {
        duration_ms,
        max_events: MAX_EVENTS,
        tools: REQUESTED_TOOLS.iter().map(|t| t.to_string()).collect(),
        tool_options: Default::default(),
        opts: Some(ProfileOptions {
            version: 1,
            device_type: 0,
            include_dataset_ops: options.include_dataset_ops,
            host_tracer_level: options.host_tracer_level,
            device_tracer_level: options.device_tracer_level,
            python_tracer_level: options.python_tracer_level,
            enable_hlo_proto: true,
            start_timestamp_ns,
            duration_ms,
            repository_path: repository_path.unwrap_or_default(),
            trace_options: None,
            advanced_configuration: Default::default(),
            raise_error_on_start_failure: false,
            // XProf sets it only when the user chose the session id.
            session_id: options.session_id.clone().unwrap_or_default(),
            override_hostname: String::new(),
        }),
        repository_root,
        session_id: session_id.to_string(),
        host_name: address.to_string(),
        emit_xspace: true,
    }
}

/// Unix nanoseconds of `now + delay` (saturating at `u64::MAX` when out of range).
pub fn start_timestamp_ns(now: SystemTime, delay: Duration) -> u64 {
    match now.checked_add(delay) {
        Some(start) => {
            start.duration_since(UNIX_EPOCH).map(|d| d.as_nanos().min(u128::from(u64::MAX)) as u64).unwrap_or(0)
        }
        None => u64::MAX,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse() {
        assert_eq!(parse_duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("1m"), Ok(Duration::from_secs(60)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        assert!(parse_duration("2h").is_err());
        assert!(parse_duration("abc").is_err());
        assert!(parse_duration("-1s").is_err());
    }

    #[test]
    fn addresses_normalize() {
        assert_eq!(
            parse_address_list("grpc://localhost:9999, 10.0.0.2:6009,localhost:9999").unwrap(),
            vec!["localhost:9999".to_string(), "10.0.0.2:6009".to_string()]
        );
        assert_eq!(normalize_address("[::1]:9999").unwrap(), "[::1]:9999");
        assert!(normalize_address("localhost").is_err());
        assert!(normalize_address("localhost:http").is_err());
        assert!(parse_address_list(" , ").is_err());
        assert_eq!(host_file_stem("127.0.0.1:9999"), "127.0.0.1_9999");
    }

    #[test]
    fn session_id_is_xprof_timestamp() {
        let t = UNIX_EPOCH + Duration::from_secs(1_795_316_540); // 2026-11-22 03:02:20 UTC
        assert_eq!(default_session_id(t), "2026_11_22_03_02_20");
        assert_eq!(default_session_id(UNIX_EPOCH + Duration::from_secs(951_782_400)), "2000_02_29_00_00_00");
    }

    /// Absurd durations are refused by `validate`, and nothing computed from them
    /// panics (2^64-1 ms used to overflow the deadline's addition).
    #[test]
    fn huge_durations_are_refused_and_never_panic() {
        let huge = CaptureOptions {
            duration: Duration::from_millis(u64::MAX),
            delay: Duration::MAX,
            deadline_margin: Duration::MAX,
            ..CaptureOptions::default()
        };
        let message = huge.validate().unwrap_err().to_string();
        assert!(message.contains("limit of 1 h"), "{message}");
        let delay = CaptureOptions { delay: Duration::from_secs(3601), ..CaptureOptions::default() };
        assert!(delay.validate().unwrap_err().to_string().contains("delay (3601 s) is more than the limit of 1 h"));
        assert_eq!(huge.deadline(), Duration::MAX);
        assert_eq!(start_timestamp_ns(SystemTime::now(), Duration::MAX), u64::MAX);
        let request = build_profile_request(&huge, Path::new("/l/plugins/profile"), "s", "a:1", u64::MAX);
        assert_eq!(request.duration_ms, u64::MAX);
        let at_limit = CaptureOptions { duration: MAX_DURATION, delay: MAX_DELAY, ..CaptureOptions::default() };
        assert!(at_limit.validate().is_ok());
        assert_eq!(human_duration(Duration::from_secs(600)), "10 min");
        assert_eq!(human_duration(Duration::from_millis(1500)), "1.500 s");
    }

    #[test]
    fn backoff_doubles_and_caps() {
        let o = CaptureOptions::default();
        assert_eq!(o.backoff_before(2), Duration::from_millis(500));
        assert_eq!(o.backoff_before(3), Duration::from_secs(1));
        assert_eq!(o.backoff_before(4), Duration::from_secs(2));
        assert_eq!(o.backoff_before(10), Duration::from_secs(8));
        assert_eq!(o.backoff_before(u32::MAX), Duration::from_secs(8));
    }

    /// The request matches what XProf 2.24's client sent to a JAX server (recorded in
    /// refdata/live_capture/grpc_methods_jax_decoded.json), plus emit_xspace.
    #[test]
    fn request_matches_xprof() {
        let o = CaptureOptions { python_tracer_level: 0, ..CaptureOptions::default() };
        let r = build_profile_request(&o, Path::new("/logs/x/plugins/profile"), "s1", "127.0.0.1:9998", 7);
        assert_eq!(r.duration_ms, 2000);
        assert_eq!(r.max_events, 1_000_000);
        assert_eq!(r.tools.len(), 10);
        assert_eq!(r.tools[9], "xplane.pb");
        assert_eq!(r.host_name, "127.0.0.1:9998");
        assert!(r.emit_xspace);
        let opts = r.opts.unwrap();
        assert_eq!((opts.host_tracer_level, opts.device_tracer_level, opts.version), (2, 1, 1));
        assert!(opts.include_dataset_ops && opts.enable_hlo_proto);
        assert_eq!(opts.repository_path, "/logs/x");
        assert_eq!(opts.start_timestamp_ns, 7);
    }
}
