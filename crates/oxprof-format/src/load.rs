//! Reading a profile file from disk: plain or gzip-compressed `.xplane.pb`.
//!
//! Plain files are memory-mapped and decoded in place; pages the decoder has consumed are
//! dropped from this process's memory at once (`MADV_DONTNEED`), so peak memory is the
//! model plus a few megabytes of input, not model plus file. Gzip files are decompressed
//! into memory first.
//!
//! Caveat of memory mapping: if another process truncates the file while it is decoded,
//! the OS raises SIGBUS. Profilers write `.xplane.pb` files once, before they are read.

use crate::decode::{KeepPages, ReleasePages, decode_xspace_lines_of};
use crate::error::LoadError;
use crate::model::XSpace;
use memmap2::{Mmap, UncheckedAdvice};
use std::io::Read;
use std::ops::Range;
use std::path::Path;

const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
/// Below this size a plain read is as fast as a mapping and simpler.
const MMAP_THRESHOLD: u64 = 1 << 20;

/// Reads and decodes one XSpace file (`.xplane.pb` or gzip-compressed).
pub fn load_xspace(path: &Path) -> Result<XSpace, LoadError> {
    load_xspace_lines_of(path, &|_| true)
}

/// Reads one XSpace file, decoding the lines (events) of only the planes whose name
/// passes `lines_of` (see [`crate::decode_xspace_lines_of`]). A plain file's skipped
/// lines are never read from disk.
pub fn load_xspace_lines_of(path: &Path, lines_of: &dyn Fn(&str) -> bool) -> Result<XSpace, LoadError> {
    let io = |source| LoadError::Io { path: path.to_path_buf(), source };
    let mut file = std::fs::File::open(path).map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    if meta.is_dir() {
        return Err(io(std::io::Error::new(std::io::ErrorKind::IsADirectory, "is a directory, not a profile file")));
    }
    let mut magic = [0u8; 2];
    let head = read_up_to(&mut file, &mut magic).map_err(io)?;
    if head == 2 && magic == GZIP_MAGIC {
        let file = std::fs::File::open(path).map_err(io)?;
        let mut data = Vec::new();
        flate2::read::MultiGzDecoder::new(std::io::BufReader::new(file))
            .read_to_end(&mut data)
            .map_err(|source| LoadError::Gzip { path: path.to_path_buf(), source })?;
        return decode_xspace_lines_of(&data, &KeepPages, lines_of)
            .map_err(|e| LoadError::decode(path.to_path_buf(), e));
    }
    if meta.len() < MMAP_THRESHOLD {
        let data = std::fs::read(path).map_err(io)?;
        return decode_xspace_lines_of(&data, &KeepPages, lines_of)
            .map_err(|e| LoadError::decode(path.to_path_buf(), e));
    }
    // SAFETY: the mapping is read-only and private; the file is not modified by oxprof.
    // Concurrent truncation by another process is the documented caveat above.
    let map = unsafe { Mmap::map(&file) }.map_err(io)?;
    let release = MappedRelease { map: &map };
    decode_xspace_lines_of(&map, &release, lines_of).map_err(|e| LoadError::decode(path.to_path_buf(), e))
}

/// Pins glibc's mmap threshold at its default (128 KiB), once per process.
///
/// glibc raises the threshold each time a large block is freed (up to 32 MiB): after the
/// decoder frees its per-line buffers, the multi-megabyte tables of the analyses (grouping
/// forest, trace index sort rows, hash maps) come from the heap instead of their own
/// mappings, and their pages stay resident after they are freed. On the 85 MB profile that
/// kept 15 MB of freed grouping tables in RSS for the rest of a request. A pinned threshold
/// (setting it also turns the adjustment off) gives every block of 128 KiB or more back to
/// the OS as soon as it is freed. Other allocators and platforms: nothing to do.
///
/// This tunes the whole process's allocator, so the library never calls it: programs that
/// load large profiles (the `oxprof` binary, benchmarks) call it once at start.
pub fn return_freed_large_blocks_to_the_os() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            unsafe extern "C" {
                fn mallopt(param: i32, value: i32) -> i32;
            }
            /// glibc's `M_MMAP_THRESHOLD` (malloc.h).
            const M_MMAP_THRESHOLD: i32 = -3;
            // SAFETY: glibc's `mallopt` is thread-safe and only tunes the allocator; Rust's
            // default global allocator on linux-gnu is glibc's malloc.
            unsafe {
                mallopt(M_MMAP_THRESHOLD, 128 * 1024);
            }
        });
    }
}

/// Reads an XSpace from bytes already in memory (plain or gzip).
pub fn decode_bytes(path_for_errors: &Path, bytes: &[u8]) -> Result<XSpace, LoadError> {
    if bytes.starts_with(&GZIP_MAGIC) {
        let mut data = Vec::new();
        flate2::read::MultiGzDecoder::new(bytes)
            .read_to_end(&mut data)
            .map_err(|source| LoadError::Gzip { path: path_for_errors.to_path_buf(), source })?;
        return crate::decode_xspace(&data).map_err(|e| LoadError::decode(path_for_errors.to_path_buf(), e));
    }
    crate::decode_xspace(bytes).map_err(|e| LoadError::decode(path_for_errors.to_path_buf(), e))
}

fn read_up_to(file: &mut std::fs::File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match file.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

struct MappedRelease<'a> {
    map: &'a Mmap,
}

impl ReleasePages for MappedRelease<'_> {
    fn release(&self, range: Range<usize>) {
        const PAGE: usize = 4096;
        let start = range.start.div_ceil(PAGE) * PAGE;
        let end = (range.end / PAGE) * PAGE;
        if end > start {
            // SAFETY: the decoder never reads a range again after releasing it, and the
            // mapping is a private read-only file mapping: dropped pages would be re-read
            // from the file if touched, so this cannot change what the decoder sees.
            let _ = unsafe { self.map.unchecked_advise_range(UncheckedAdvice::DontNeed, start, end - start) };
        }
    }
}
