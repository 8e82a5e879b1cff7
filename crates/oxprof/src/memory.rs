//! This machine's memory, for defaults that scale with it: the in-memory caches' bound of
//! `serve` and `mcp` when `--cache-mb` is not given.

/// The least the caches are bounded at by default, in MB.
const FLOOR_MB: usize = 512;

/// The default `--cache-mb`: a quarter of this machine's physical memory, at least
/// [`FLOOR_MB`]. A huge trace's model (about 0.4× its JSON: 4.1 GB for a 10 GB PyTorch
/// trace) is then kept between a trace viewer's requests instead of decoded again for each,
/// and three quarters stay for decoding, queries and everything else on the machine.
pub fn default_cache_mb() -> usize {
    physical_mb().map_or(FLOOR_MB, |mb| (mb / 4).max(FLOOR_MB))
}

/// Physical memory in MB (`None` where it cannot be read).
fn physical_mb() -> Option<usize> {
    #[cfg(unix)]
    {
        // SAFETY: sysconf only reads the system's configuration.
        let (pages, page_size) = unsafe { (libc::sysconf(libc::_SC_PHYS_PAGES), libc::sysconf(libc::_SC_PAGESIZE)) };
        let bytes = u128::try_from(pages).ok()?.checked_mul(u128::try_from(page_size).ok()?)?;
        usize::try_from(bytes >> 20).ok().filter(|&mb| mb > 0)
    }
    #[cfg(not(unix))]
    {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_a_quarter_of_memory_and_never_below_the_floor() {
        let default = default_cache_mb();
        assert!(default >= FLOOR_MB, "{default}");
        if let Some(mb) = physical_mb() {
            assert_eq!(default, (mb / 4).max(FLOOR_MB), "{mb} MB of memory");
            // This machine's memory as /proc reports it, where there is a /proc.
            if let Ok(meminfo) = std::fs::read_to_string("/proc/meminfo") {
                let kb: usize = meminfo
                    .lines()
                    .find_map(|l| l.strip_prefix("MemTotal:"))
                    .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
                    .unwrap();
                assert!(mb.abs_diff(kb / 1024) <= 1024, "sysconf {mb} MB, /proc {} MB", kb / 1024);
            }
        }
    }
}
