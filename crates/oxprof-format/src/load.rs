//! Reading a profile file from disk, plain or gzip-compressed, in whichever format its
//! content is (see [`crate::formats`]), within [`LoadLimits`].
//!
//! Plain files are memory-mapped and decoded in place; pages the decoder has consumed are
//! dropped from this process's memory at once (`MADV_DONTNEED`), so peak memory is the
//! model plus a few megabytes of input, not model plus file. Gzip files are inflated into
//! an anonymous mapping sized by their trailer, whose consumed pages are dropped the same
//! way, and refused as soon as they inflate past their budget. XSpace files are inflated
//! first, then decoded; PyTorch traces are imported while they inflate, on a second thread
//! (`crate::inflating`), so the two overlap and only a window of the inflated JSON is ever
//! resident.
//!
//! Files that change while they are read: a mapped file that shrinks would raise SIGBUS;
//! `mapguard` turns that into zero pages (Linux; elsewhere files are read, not mapped),
//! and the loader reports
//! [`LoadError::FileChanged`] whenever a mapping lost pages or the file's size or
//! modification time differ between opening it and the end of the decode.

use crate::error::LoadError;
use crate::formats::{Detected, Format, SNIFF_BYTES, describe_unknown, detect, format_of_name, import};
use crate::progress::{CountingReader, Phase, Reporting};
use oxprof_model::XSpace;
use oxprof_model::limits::{Limit, LimitExceeded, LoadLimits};
use oxprof_model::{KeepPages, ReleasePages};
use std::fs::{File, Metadata};
use std::io::{Read, Seek, Write};
use std::ops::Range;
use std::path::Path;

const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
/// Below this size a plain read is as fast as a mapping and simpler.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
const MMAP_THRESHOLD: u64 = 1 << 20;

/// Reads and decodes one XSpace file (`.xplane.pb` or gzip-compressed), within the
/// default [`LoadLimits`].
pub fn load_xspace(path: &Path) -> Result<XSpace, LoadError> {
    load_xspace_with(path, &LoadLimits::default(), &|_| true)
}

/// Reads one XSpace file, decoding the lines (events) of only the planes whose name
/// passes `lines_of` (see [`crate::decode_xspace_lines_of`]), within the default
/// [`LoadLimits`]. A plain file's skipped lines are never read from disk.
pub fn load_xspace_lines_of(path: &Path, lines_of: &dyn Fn(&str) -> bool) -> Result<XSpace, LoadError> {
    load_xspace_with(path, &LoadLimits::default(), lines_of)
}

/// Reads one XSpace file within `limits`, decoding the lines of only the planes whose
/// name passes `lines_of` (`&|_| true` for all).
///
/// Errors: [`LoadError::LimitExceeded`] when the file exceeds a limit (checked before the
/// memory it guards is allocated; a gzip file stops inflating at its cap);
/// [`LoadError::FileChanged`] when the file was truncated or rewritten while it was read.
pub fn load_xspace_with(
    path: &Path,
    limits: &LoadLimits,
    lines_of: &dyn Fn(&str) -> bool,
) -> Result<XSpace, LoadError> {
    let io = |cause| LoadError::Io { path: path.to_path_buf(), cause };
    let mut file = File::open(path).map_err(io)?;
    let before = file.metadata().map_err(io)?;
    if before.is_dir() {
        return Err(io(std::io::Error::new(std::io::ErrorKind::IsADirectory, "is a directory, not a profile file")));
    }
    let (result, pages_vanished) = read_and_decode(&mut file, &before, path, limits, lines_of);
    // Whatever the decoder made of a file that changed under it, that is the news.
    let changed_since_open = file.metadata().is_ok_and(|after| !same_version(&before, &after));
    if pages_vanished || changed_since_open {
        return Err(LoadError::FileChanged { path: path.to_path_buf() });
    }
    result
}

/// A file's name as a progress line shows it.
fn shown(path: &Path) -> String {
    path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned())
}

/// Whether two `fstat`s of one open file describe the same contents.
fn same_version(before: &Metadata, after: &Metadata) -> bool {
    before.len() == after.len() && before.modified().ok() == after.modified().ok()
}

/// Decodes an open file; the flag says whether its mapping lost pages (the file shrank).
fn read_and_decode(
    file: &mut File,
    meta: &Metadata,
    path: &Path,
    limits: &LoadLimits,
    lines_of: &dyn Fn(&str) -> bool,
) -> (Result<XSpace, LoadError>, bool) {
    let io = |cause| LoadError::Io { path: path.to_path_buf(), cause };
    let mut head = vec![0u8; SNIFF_BYTES];
    let head_len = match read_up_to(file, &mut head).and_then(|n| file.rewind().map(|()| n)) {
        Ok(n) => n,
        Err(e) => return (Err(io(e)), false),
    };
    let detected = match detect_or_name(path, &head[..head_len]) {
        Ok(detected) => detected,
        Err(e) => return (Err(e), false),
    };
    let decode = |buf: &[u8], release: &dyn ReleasePages| {
        let _phase = Phase::begin(|| format!("reading {}", shown(path)), buf.len() as u64);
        import(detected.format, path, buf, &Reporting::new(release), limits, lines_of)
    };
    if detected.gzip {
        #[cfg(target_os = "linux")]
        if detected.format == Format::Kineto {
            match inflate_and_import_kineto(file, meta.len(), limits, path) {
                Ok(Some(result)) => return (result, false),
                // No usable trailer, or the file inflated past it: the ordinary way.
                Ok(None) => {}
                Err(e) => return (Err(e), false),
            }
        }
        #[cfg(target_os = "linux")]
        match inflate_mapped(file, meta.len(), limits, path) {
            Ok(Inflated::Mapped(map, len)) => {
                return (decode(&map[..len], &MappedRelease { map: &map, of_file: false }), false);
            }
            Ok(Inflated::Heap(data)) => return (decode(&data, &KeepPages), false),
            Ok(Inflated::NoHint) => {}
            Err(e) => return (Err(e), false),
        }
        let inflated = {
            let _phase = Phase::begin(|| format!("inflating {}", shown(path)), meta.len());
            inflate(CountingReader(std::io::BufReader::new(&*file)), meta.len(), limits, path)
        };
        return (inflated.and_then(|data| decode(&data, &KeepPages)), false);
    }
    if meta.len() > limits.max_profile_bytes {
        let exceeded =
            LimitExceeded { limit: Limit::ProfileBytes, allowed: limits.max_profile_bytes, at_least: meta.len() };
        return (Err(LoadError::LimitExceeded { path: path.to_path_buf(), exceeded }), false);
    }
    #[cfg(target_os = "linux")]
    if meta.len() >= MMAP_THRESHOLD {
        match crate::mapguard::GuardedMap::map(file) {
            Ok(Some(map)) => {
                let result = decode(map.bytes(), &MappedRelease { map: map.mmap(), of_file: true });
                return (result, map.changed());
            }
            // No SIGBUS guard to be had (every slot taken): read the file instead.
            Ok(None) => {}
            Err(e) => return (Err(io(e)), false),
        }
    }
    let mut data = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    if let Err(e) = file.take(limits.max_profile_bytes.saturating_add(1)).read_to_end(&mut data) {
        return (Err(io(e)), false);
    }
    (decode(&data, &KeepPages), false)
}

/// Inflates a gzip stream of `compressed` bytes, stopping as soon as it passes its cap
/// ([`LoadLimits::inflated_bytes`] for its size, at most `max_profile_bytes`).
fn inflate(reader: impl Read, compressed: u64, limits: &LoadLimits, path: &Path) -> Result<Vec<u8>, LoadError> {
    let (cap, limit) = limits.inflate_cap(compressed);
    let mut data = Vec::new();
    flate2::read::MultiGzDecoder::new(reader)
        .take(cap.saturating_add(1))
        .read_to_end(&mut data)
        .map_err(|cause| LoadError::Gzip { path: path.to_path_buf(), cause })?;
    if data.len() as u64 > cap {
        let exceeded = LimitExceeded { limit, allowed: cap, at_least: data.len() as u64 };
        return Err(LoadError::LimitExceeded { path: path.to_path_buf(), exceeded });
    }
    Ok(data)
}

/// A gzip file inflated by [`inflate_mapped`].
#[cfg(target_os = "linux")]
enum Inflated {
    /// Into an anonymous mapping (its first `len` bytes), whose consumed pages the decoder
    /// can hand back as it does a plain file's.
    Mapped(memmap2::Mmap, usize),
    /// Into the heap: the file inflated past the size its trailer announced.
    Heap(Vec<u8>),
    /// No usable size in the trailer (small file, or one past its cap): inflate as usual.
    NoHint,
}

/// Inflates a gzip file into an anonymous mapping sized by the gzip trailer (ISIZE, the
/// inflated size modulo 2^32), so that the decoder can drop the pages it consumed: peak
/// memory is then about the inflated input, not the input plus the whole model. The
/// trailer is only a hint (several members, or past 4 GiB): a file that inflates past it
/// continues into the heap, within the same caps.
#[cfg(target_os = "linux")]
fn inflate_mapped(file: &mut File, compressed: u64, limits: &LoadLimits, path: &Path) -> Result<Inflated, LoadError> {
    let io = |cause| LoadError::Io { path: path.to_path_buf(), cause };
    let (cap, limit) = limits.inflate_cap(compressed);
    let Some(mut map) = map_for_trailer(file, compressed, cap, path)? else { return Ok(Inflated::NoHint) };
    let size = map.len();
    let gzip_error = |cause| LoadError::Gzip { path: path.to_path_buf(), cause };
    let _phase = Phase::begin(|| format!("inflating {}", shown(path)), compressed);
    let mut reader = flate2::read::MultiGzDecoder::new(CountingReader(std::io::BufReader::new(&*file)));
    let mut len = 0;
    while len < size {
        match reader.read(&mut map[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(gzip_error(e)),
        }
    }
    if len < size {
        return Ok(Inflated::Mapped(map.make_read_only().map_err(io)?, len));
    }
    // Longer than announced: the rest into the heap, within the cap.
    let mut data = map[..len].to_vec();
    drop(map);
    reader.take(cap.saturating_add(1) - len as u64).read_to_end(&mut data).map_err(gzip_error)?;
    if data.len() as u64 > cap {
        let exceeded = LimitExceeded { limit, allowed: cap, at_least: data.len() as u64 };
        return Err(LoadError::LimitExceeded { path: path.to_path_buf(), exceeded });
    }
    Ok(Inflated::Heap(data))
}

/// An anonymous mapping one byte longer than a gzip file's trailer says it inflates to
/// (filling that byte means the trailer was short), or `None` when the trailer gives no
/// usable size (small file, or past `cap`). Leaves the file at its start.
#[cfg(target_os = "linux")]
fn map_for_trailer(
    file: &mut File,
    compressed: u64,
    cap: u64,
    path: &Path,
) -> Result<Option<memmap2::MmapMut>, LoadError> {
    use std::io::SeekFrom;
    let io = |cause| LoadError::Io { path: path.to_path_buf(), cause };
    if compressed < 18 {
        return Ok(None);
    }
    let mut trailer = [0u8; 4];
    file.seek(SeekFrom::End(-4))
        .and_then(|_| file.read_exact(&mut trailer))
        .and_then(|()| file.rewind())
        .map_err(io)?;
    let hint = u64::from(u32::from_le_bytes(trailer));
    if hint < MMAP_THRESHOLD || hint > cap {
        return Ok(None);
    }
    let Ok(size) = usize::try_from(hint + 1) else { return Ok(None) };
    Ok(memmap2::MmapMut::map_anon(size).ok())
}

/// A gzip'd PyTorch trace inflated on a second thread while it is imported
/// ([`crate::inflating`]); `None` when the file has no usable trailer or inflates past
/// it (the file is then back at its start for the ordinary way).
#[cfg(target_os = "linux")]
fn inflate_and_import_kineto(
    file: &mut File,
    compressed: u64,
    limits: &LoadLimits,
    path: &Path,
) -> Result<Option<Result<XSpace, LoadError>>, LoadError> {
    use crate::inflating::{Streamed, inflate_and_import};
    let (cap, _) = limits.inflate_cap(compressed);
    let Some(mut map) = map_for_trailer(file, compressed, cap, path)? else { return Ok(None) };
    let _phase = Phase::begin(|| format!("importing {}", shown(path)), compressed);
    let reader = flate2::read::MultiGzDecoder::new(CountingReader(std::io::BufReader::new(&*file)));
    let streamed = inflate_and_import(&mut map, reader, |incoming, release| {
        oxprof_kineto::import_kineto_incoming(incoming, release, limits)
    });
    match streamed {
        Streamed::Done(_, Some(cause)) => Ok(Some(Err(LoadError::Gzip { path: path.to_path_buf(), cause }))),
        Streamed::Done(result, None) => Ok(Some(result.map_err(|e| LoadError::kineto(path.to_path_buf(), e)))),
        Streamed::Overflowed => {
            drop(map);
            file.rewind().map_err(|cause| LoadError::Io { path: path.to_path_buf(), cause })?;
            Ok(None)
        }
    }
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

/// Reads an XSpace from bytes already in memory (plain or gzip), within the default
/// [`LoadLimits`].
pub fn decode_bytes(path_for_errors: &Path, bytes: &[u8]) -> Result<XSpace, LoadError> {
    decode_bytes_with(path_for_errors, bytes, &LoadLimits::default())
}

/// Reads a profile from bytes already in memory (any format the seam knows, plain or
/// gzip), within `limits`.
pub fn decode_bytes_with(path_for_errors: &Path, bytes: &[u8], limits: &LoadLimits) -> Result<XSpace, LoadError> {
    import_bytes(path_for_errors, bytes, limits, &|_| true)
}

/// A profile in memory (any format the seam knows, plain or gzip) within `limits`,
/// decoding the lines of only the planes `lines_of` accepts.
pub fn decode_bytes_lines_of(
    path_for_errors: &Path,
    bytes: &[u8],
    limits: &LoadLimits,
    lines_of: &dyn Fn(&str) -> bool,
) -> Result<XSpace, LoadError> {
    import_bytes(path_for_errors, bytes, limits, lines_of)
}

/// A profile arriving as a stream (an object store's download), decoded as it arrives
/// where the format allows: `head` is its first bytes (at least what format detection
/// needs, or all of it), `rest` the remainder, `size` its length. A gzip stream is
/// inflated while it downloads (a PyTorch trace also imported while it inflates, into a
/// mapping that reserves address space up to the inflation cap); other formats are
/// gathered, then imported. Answers the
/// model and the raw bytes read (for a cache).
pub fn decode_stream_lines_of(
    path: &Path,
    head: Vec<u8>,
    mut rest: impl Read + Send,
    size: u64,
    limits: &LoadLimits,
    lines_of: &dyn Fn(&str) -> bool,
) -> Result<(XSpace, Vec<u8>), LoadError> {
    let io = |cause| LoadError::Io { path: path.to_path_buf(), cause };
    let detected = detect_or_name(path, &head[..head.len().min(SNIFF_BYTES)])?;
    if !detected.gzip {
        let mut raw = head;
        raw.reserve(size.saturating_sub(raw.len() as u64) as usize);
        rest.read_to_end(&mut raw).map_err(io)?;
        let space = import(detected.format, path, &raw, &KeepPages, limits, lines_of)?;
        return Ok((space, raw));
    }
    // The compressed bytes are kept as the inflater reads them.
    struct Keep<R> {
        inner: R,
        kept: Vec<u8>,
    }
    impl<R: Read> Read for Keep<R> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.inner.read(buf)?;
            self.kept.extend_from_slice(&buf[..n]);
            Ok(n)
        }
    }
    let mut keep = Keep { inner: std::io::Cursor::new(head).chain(rest), kept: Vec::with_capacity(size as usize) };
    #[cfg(target_os = "linux")]
    if detected.format == Format::Kineto {
        // A PyTorch trace is imported while it downloads and inflates. Its inflated size
        // is unknown until the end (the gzip trailer is the last thing to arrive): the
        // mapping reserves address space up to the cap, of which only a window is touched.
        let (cap, limit) = limits.inflate_cap(size);
        let map = usize::try_from(cap + 1)
            .ok()
            .and_then(|len| memmap2::MmapOptions::new().len(len).no_reserve_swap().map_anon().ok());
        if let Some(mut map) = map {
            use crate::inflating::{Streamed, inflate_and_import};
            let reader = flate2::read::MultiGzDecoder::new(&mut keep);
            let streamed = inflate_and_import(&mut map, reader, |incoming, release| {
                oxprof_kineto::import_kineto_incoming(incoming, release, limits)
            });
            let space = match streamed {
                Streamed::Done(_, Some(cause)) => return Err(LoadError::Gzip { path: path.to_path_buf(), cause }),
                Streamed::Done(result, None) => result.map_err(|e| LoadError::kineto(path.to_path_buf(), e))?,
                Streamed::Overflowed => {
                    let exceeded = LimitExceeded { limit, allowed: cap, at_least: cap + 1 };
                    return Err(LoadError::LimitExceeded { path: path.to_path_buf(), exceeded });
                }
            };
            keep.read_to_end(&mut Vec::new()).map_err(io)?;
            return Ok((space, keep.kept));
        }
    }
    let inflated = inflate(&mut keep, size, limits, path)?;
    // Anything after the gzip members (not read by the inflater) still belongs to the object.
    keep.read_to_end(&mut Vec::new()).map_err(io)?;
    let space = import(detected.format, path, &inflated, &KeepPages, limits, lines_of)?;
    Ok((space, keep.kept))
}

/// A plain (not gzip) profile arriving as a stream, as [`decode_stream_lines_of`] takes it,
/// written to an unlinked temporary file (in `TMPDIR`) as it arrives and decoded from a
/// mapping of it, whose pages are given back as they are decoded, as a local file's are:
/// the download is never in memory whole beside the model it becomes. Answers the model and
/// the bytes read. A gzip stream, or one under a mapping's worth, is decoded as
/// [`decode_stream_lines_of`] decodes it (its raw bytes are dropped).
pub fn decode_stream_spilled(
    path: &Path,
    head: Vec<u8>,
    mut rest: impl Read + Send,
    size: u64,
    limits: &LoadLimits,
    lines_of: &dyn Fn(&str) -> bool,
) -> Result<(XSpace, u64), LoadError> {
    let detected = detect_or_name(path, &head[..head.len().min(SNIFF_BYTES)])?;
    if detected.gzip || size < MMAP_THRESHOLD {
        let (space, raw) = decode_stream_lines_of(path, head, rest, size, limits, lines_of)?;
        return Ok((space, raw.len() as u64));
    }
    let spill_error = |cause: std::io::Error| {
        let cause = std::io::Error::new(
            cause.kind(),
            format!(
                "cannot keep the download in {} ({cause}); set TMPDIR to a folder with room",
                std::env::temp_dir().display()
            ),
        );
        LoadError::Io { path: path.to_path_buf(), cause }
    };
    let mut file = tempfile::tempfile().map_err(spill_error)?;
    file.write_all(&head).map_err(spill_error)?;
    // One byte past the budget is enough to know it was passed.
    let copied = std::io::copy(&mut (&mut rest).take(limits.max_profile_bytes.saturating_add(1)), &mut file);
    let copied = copied.map_err(|cause| LoadError::Io { path: path.to_path_buf(), cause })?;
    let bytes_read = head.len() as u64 + copied;
    drop(head);
    file.rewind().map_err(spill_error)?;
    let meta = file.metadata().map_err(spill_error)?;
    let (result, _) = read_and_decode(&mut file, &meta, path, limits, lines_of);
    Ok((result?, bytes_read))
}

/// A profile in memory (plain or gzip) into the model through the format seam.
pub(crate) fn import_bytes(
    path: &Path,
    bytes: &[u8],
    limits: &LoadLimits,
    lines_of: &dyn Fn(&str) -> bool,
) -> Result<XSpace, LoadError> {
    let detected = detect_or_name(path, &bytes[..bytes.len().min(SNIFF_BYTES)])?;
    let import = |buf: &[u8]| import(detected.format, path, buf, &KeepPages, limits, lines_of);
    if detected.gzip {
        return import(&inflate(bytes, bytes.len() as u64, limits, path)?);
    }
    import(bytes)
}

/// The format of a file by its first bytes; by its name when they are not recognised (an
/// empty or damaged `.xplane.pb` gets the XSpace decoder's diagnosis); else the error
/// naming what the file looks like and the formats oxprof reads.
pub(crate) fn detect_or_name(path: &Path, head: &[u8]) -> Result<Detected, LoadError> {
    if let Some(detected) = detect(head) {
        return Ok(detected);
    }
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    match format_of_name(name) {
        Some((spec, _)) => Ok(Detected { format: spec.format, gzip: head.starts_with(&GZIP_MAGIC) }),
        None => Err(LoadError::UnknownFormat { path: path.to_path_buf(), found: describe_unknown(head) }),
    }
}

fn read_up_to(file: &mut File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match file.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
struct MappedRelease<'a> {
    map: &'a memmap2::Mmap,
    /// A mapping of the file itself (dropped pages are read again from it), not of memory
    /// the file was inflated into.
    of_file: bool,
}

impl ReleasePages for MappedRelease<'_> {
    fn release(&self, range: Range<usize>) {
        const PAGE: usize = 4096;
        let start = range.start.div_ceil(PAGE) * PAGE;
        let end = (range.end / PAGE) * PAGE;
        if end > start {
            // SAFETY: a private file mapping's dropped pages are read again from the file if
            // touched (`rereadable`); an anonymous mapping's (inflated gzip) would read as
            // zeros, and importers never read a released range of one again.
            let _ = unsafe { self.map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, start, end - start) };
        }
    }

    fn rereadable(&self) -> bool {
        self.of_file
    }
}
