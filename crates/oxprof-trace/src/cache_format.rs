//! A [`TraceIndex`] as bytes, for the persistent analysis cache.
//!
//! Layout (little endian): magic `OXPTRIDX`, format version, the source file's size and
//! modification time (ns), payload, then payload length and xxh3-64 checksum of the
//! payload (a trailer, so that [`write_index_to`] streams the payload to a writer without
//! holding it, and [`read_index_from`] parses a stream through a 64 KiB buffer, checking
//! the checksum at its end). Reading rejects anything that does not match exactly (other
//! version, other source file state, truncated or corrupted bytes), so a stale or damaged
//! cache is never used: callers rebuild the index and overwrite it. No files here: callers
//! choose where the bytes go.

use xxhash_rust::xxh3::Xxh3;

use super::index::{DROPPED_LEVEL, DeviceInfo, NUM_LEVELS, ResourceInfo, TraceIndex, TrackInfo, TrackKind};

/// Bumped whenever the index layout or its meaning changes.
pub const CACHE_VERSION: u32 = 6;
const MAGIC: &[u8; 8] = b"OXPTRIDX";
/// Magic, version, source size and mtime.
const HEADER_LEN: usize = 8 + 4 + 8 + 8;
/// Payload length, payload checksum.
const TRAILER_LEN: usize = 8 + 8;
/// Bytes the writer gathers before it hands them on (and hashes them).
const WRITE_CHUNK: usize = 64 << 10;
/// Bytes the reader reads at a time.
const READ_CHUNK: usize = 64 << 10;
/// Most bytes an array is given before its elements are read: a stream whose stated length
/// lies cannot make the reader allocate more than this ahead of the bytes it really has.
const MAX_RESERVE: usize = 16 << 20;

/// Why a cache was not usable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CacheError {
    /// Not a cache file, or truncated header.
    BadHeader,
    /// Written by another format version.
    Version(u32),
    /// The source file changed since the cache was written.
    Stale,
    /// Checksum or structure mismatch.
    Corrupt,
}

impl std::fmt::Display for CacheError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CacheError::BadHeader => f.write_str("not an oxprof trace index cache"),
            CacheError::Version(v) => write!(f, "trace index cache version {v}, expected {CACHE_VERSION}"),
            CacheError::Stale => f.write_str("trace index cache is older than its profile"),
            CacheError::Corrupt => f.write_str("trace index cache is corrupt"),
        }
    }
}

impl std::error::Error for CacheError {}

/// Gathers the payload in a small buffer (`buf`) and hands it to `out` a chunk at a time,
/// hashing what it hands on; the first error of `out` is kept and ends the writing.
struct Writer<'w> {
    buf: Vec<u8>,
    out: &'w mut dyn std::io::Write,
    hasher: Xxh3,
    written: u64,
    error: Option<std::io::Error>,
}

impl Writer<'_> {
    /// Hands the gathered bytes on once a chunk is full (every write calls it: strings
    /// may overshoot a chunk by their length).
    #[inline]
    fn maybe_drain(&mut self) {
        if self.buf.len() >= WRITE_CHUNK {
            self.drain();
        }
    }
    fn drain(&mut self) {
        self.hasher.update(&self.buf);
        self.written += self.buf.len() as u64;
        if self.error.is_none()
            && let Err(e) = self.out.write_all(&self.buf)
        {
            self.error = Some(e);
        }
        self.buf.clear();
    }
    fn u8(&mut self, v: u8) {
        self.buf.push(v);
        self.maybe_drain();
    }
    fn u16(&mut self, v: u16) {
        self.buf.extend_from_slice(&v.to_le_bytes());
        self.maybe_drain();
    }
    fn u32(&mut self, v: u32) {
        self.buf.extend_from_slice(&v.to_le_bytes());
        self.maybe_drain();
    }
    fn u64(&mut self, v: u64) {
        self.buf.extend_from_slice(&v.to_le_bytes());
        self.maybe_drain();
    }
    fn len(&mut self, n: usize) {
        self.u64(n as u64);
    }
    fn str(&mut self, s: &str) {
        self.len(s.len());
        self.bytes(s.as_bytes());
    }
    fn u32s(&mut self, v: &[u32]) {
        self.len(v.len());
        for &x in v {
            self.u32(x);
        }
    }
    fn bytes(&mut self, v: &[u8]) {
        for chunk in v.chunks(WRITE_CHUNK) {
            self.buf.extend_from_slice(chunk);
            self.maybe_drain();
        }
    }
}

/// Reads an index's bytes from a stream through a small buffer (`buf[start..end]` is read
/// but not consumed), never past `limit` (the end of the part being read: the payload, then
/// the trailer), hashing the payload's bytes a buffer at a time as they are consumed.
struct Reader<'r> {
    input: &'r mut dyn std::io::Read,
    buf: Box<[u8]>,
    start: usize,
    end: usize,
    /// Offset in the stream of `buf[start]`.
    at: u64,
    /// Bytes the stream holds in all (as its container says).
    total: u64,
    /// Offset the reading may not pass.
    limit: u64,
    /// The hash of the payload consumed so far, when hashing: of all bytes before
    /// `buf[hashed]` (the consumed bytes from there on are hashed when the buffer is
    /// refilled or the hashing ends).
    hasher: Option<Xxh3>,
    hashed: usize,
}

impl Reader<'_> {
    /// Consumes `n` bytes (at most [`READ_CHUNK`]) and returns them.
    fn take(&mut self, n: usize) -> Result<&[u8], CacheError> {
        debug_assert!(n <= READ_CHUNK);
        if self.at + n as u64 > self.limit {
            return Err(CacheError::Corrupt);
        }
        if self.end - self.start < n {
            self.refill(n)?;
        }
        let taken = &self.buf[self.start..self.start + n];
        self.start += n;
        self.at += n as u64;
        Ok(taken)
    }
    /// Hashes the bytes consumed since the last call (when hashing).
    fn hash_consumed(&mut self) {
        if let Some(hasher) = &mut self.hasher {
            hasher.update(&self.buf[self.hashed..self.start]);
        }
        self.hashed = self.start;
    }
    /// Starts hashing what is consumed from here on.
    fn start_hashing(&mut self) {
        (self.hasher, self.hashed) = (Some(Xxh3::new()), self.start);
    }
    /// Ends the hashing: the hash of what was consumed since [`Reader::start_hashing`].
    fn end_hashing(&mut self) -> Option<u64> {
        self.hash_consumed();
        self.hasher.take().map(|hasher| hasher.digest())
    }
    /// Moves the unconsumed bytes to the front and reads until `n` are buffered.
    fn refill(&mut self, n: usize) -> Result<(), CacheError> {
        self.hash_consumed();
        self.buf.copy_within(self.start..self.end, 0);
        self.end -= self.start;
        (self.start, self.hashed) = (0, 0);
        let in_stream = self.total - (self.at + self.end as u64);
        let wanted = (self.buf.len() - self.end).min(usize::try_from(in_stream).unwrap_or(usize::MAX));
        let goal = self.end + wanted;
        while self.end < n {
            match self.input.read(&mut self.buf[self.end..goal]) {
                Ok(0) | Err(_) => return Err(CacheError::Corrupt),
                Ok(read) => self.end += read,
            }
        }
        Ok(())
    }
    /// Bytes left before `limit`.
    fn left(&self) -> u64 {
        self.limit.saturating_sub(self.at)
    }
    fn u8(&mut self) -> Result<u8, CacheError> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Result<u16, CacheError> {
        let b = self.take(2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }
    fn u32(&mut self) -> Result<u32, CacheError> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn u64(&mut self) -> Result<u64, CacheError> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }
    /// A count, bounded by the bytes left (each element takes at least `min_size`).
    fn len(&mut self, min_size: usize) -> Result<usize, CacheError> {
        let n = usize::try_from(self.u64()?).map_err(|_| CacheError::Corrupt)?;
        if (n as u64).saturating_mul(min_size.max(1) as u64) > self.left() {
            return Err(CacheError::Corrupt);
        }
        Ok(n)
    }
    /// `n` bytes (any number, bounded by [`Reader::left`]).
    fn bytes(&mut self, n: usize) -> Result<Vec<u8>, CacheError> {
        if n as u64 > self.left() {
            return Err(CacheError::Corrupt);
        }
        let mut out = Vec::with_capacity(n.min(MAX_RESERVE));
        while out.len() < n {
            let piece = (n - out.len()).min(READ_CHUNK);
            out.extend_from_slice(self.take(piece)?);
        }
        Ok(out)
    }
    fn str(&mut self) -> Result<String, CacheError> {
        let n = self.len(1)?;
        String::from_utf8(self.bytes(n)?).map_err(|_| CacheError::Corrupt)
    }
    fn u32s(&mut self) -> Result<Vec<u32>, CacheError> {
        let n = self.len(4)?;
        let mut out = Vec::with_capacity(n.min(MAX_RESERVE / 4));
        while out.len() < n {
            let piece = (n - out.len()).min(READ_CHUNK / 4);
            let raw = self.take(piece * 4)?;
            out.extend(raw.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])));
        }
        Ok(out)
    }
}

/// Serializes an index; `source` = (file size, modification time in ns) of the profile.
pub fn write_index(index: &TraceIndex, source: (u64, u64)) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN + index.num_events * 6 + TRAILER_LEN);
    // Writing into a Vec cannot fail (`impl Write for Vec` only grows it).
    let _ = write_index_to(index, source, &mut out);
    out
}

/// Serializes an index into `out` as [`write_index`] does, a chunk at a time: memory for
/// one chunk, not for the whole (~6 bytes per event) serialization.
pub fn write_index_to(index: &TraceIndex, source: (u64, u64), out: &mut dyn std::io::Write) -> std::io::Result<()> {
    let mut header = Vec::with_capacity(HEADER_LEN);
    header.extend_from_slice(MAGIC);
    header.extend_from_slice(&CACHE_VERSION.to_le_bytes());
    header.extend_from_slice(&source.0.to_le_bytes());
    header.extend_from_slice(&source.1.to_le_bytes());
    out.write_all(&header)?;
    let mut w =
        Writer { buf: Vec::with_capacity(WRITE_CHUNK + 4096), out, hasher: Xxh3::new(), written: 0, error: None };
    w.str(&index.hostname);
    w.u64(index.min_ps);
    w.u64(index.max_ps);
    w.len(index.num_events);
    w.len(index.stack_frames.len());
    for (fp, s) in &index.stack_frames {
        w.u64(*fp);
        w.str(s);
    }
    w.len(index.devices.len());
    for d in &index.devices {
        w.u32(d.device_id);
        w.str(&d.name);
        w.len(d.resources.len());
        for r in &d.resources {
            w.u32(r.resource_id);
            w.str(&r.name);
            w.len(r.num_events);
        }
    }
    w.len(index.tracks.len());
    for t in &index.tracks {
        w.u32(t.device_id);
        match &t.kind {
            Some(TrackKind::Thread { resource_id }) => {
                w.u8(0);
                w.u32(*resource_id);
            }
            Some(TrackKind::Counter { name }) => {
                w.u8(1);
                w.str(name);
            }
            None => w.u8(2),
        }
        w.u32(t.plane);
        w.u32s(&t.lines);
        w.len(t.line_of.len());
        for &x in &t.line_of {
            w.u16(x);
        }
        w.u32(t.count);
        w.u32s(&t.src);
        w.len(t.regions.len());
        for &(ts, dur) in &t.regions {
            w.u64(ts as u64);
            w.u64(dur as u64);
        }
        w.len(t.serials.len());
        for &(pos, serial) in &t.serials {
            w.u32(pos);
            w.u16(serial);
        }
        w.len(t.level.len());
        w.bytes(&t.level);
        w.u32s(&t.level0);
        w.u32s(&t.flow_pos);
        w.len(t.flow_data.len());
        for &f in &t.flow_data {
            w.u64(f);
        }
        w.u64(t.max_duration_ps);
        w.u32s(&t.derived_name_ids);
        w.len(t.derived_names.as_ref().map_or(0, |n| n.len()));
        for (shown, long) in t.derived_names.iter().flat_map(|n| n.entries()) {
            w.str(shown);
            w.u8(u8::from(long.is_some()));
            w.str(long.unwrap_or(""));
        }
        let offload = t.derived_names.as_ref().map_or(&[][..], |n| n.offload_entries());
        w.len(offload.len());
        for (id, args) in offload {
            w.u32(*id);
            w.u8(u8::from(args.raw_bytes_accessed.is_some()) | (u8::from(args.shape_with_layout.is_some()) << 1));
            w.u64(args.raw_bytes_accessed.unwrap_or(0) as u64);
            w.str(args.shape_with_layout.as_deref().unwrap_or(""));
        }
        w.len(t.derived_groups.len());
        for &g in &t.derived_groups {
            w.u64(g as u64);
        }
    }
    w.drain();
    if let Some(e) = w.error {
        return Err(e);
    }
    let mut trailer = [0u8; TRAILER_LEN];
    trailer[..8].copy_from_slice(&w.written.to_le_bytes());
    trailer[8..].copy_from_slice(&w.hasher.digest().to_le_bytes());
    w.out.write_all(&trailer)
}

/// Deserializes an index written by [`write_index`] for the same source file state.
pub fn read_index(bytes: &[u8], source: (u64, u64)) -> Result<TraceIndex, CacheError> {
    read_index_from(&mut &bytes[..], bytes.len() as u64, source)
}

/// [`read_index`] from a stream of `len` bytes (read through a small buffer: the bytes are
/// never whole in memory beside the index they become).
pub fn read_index_from(input: &mut dyn std::io::Read, len: u64, source: (u64, u64)) -> Result<TraceIndex, CacheError> {
    let buf = vec![0u8; READ_CHUNK].into_boxed_slice();
    let mut r = Reader { input, buf, start: 0, end: 0, at: 0, total: len, limit: len, hasher: None, hashed: 0 };
    if len < HEADER_LEN as u64 || r.take(8)? != MAGIC {
        return Err(CacheError::BadHeader);
    }
    let version = r.u32()?;
    if version != CACHE_VERSION {
        return Err(CacheError::Version(version));
    }
    let size = r.u64()?;
    let mtime = r.u64()?;
    if (size, mtime) != source {
        return Err(CacheError::Stale);
    }
    let payload_end = len.checked_sub(TRAILER_LEN as u64).filter(|&end| end >= r.at).ok_or(CacheError::Corrupt)?;
    let payload_len = payload_end - r.at;
    r.limit = payload_end;
    r.start_hashing();
    let index = read_payload(&mut r)?;
    if r.at != payload_end {
        return Err(CacheError::Corrupt);
    }
    let checksum = r.end_hashing();
    r.limit = len;
    if (r.u64()?, Some(r.u64()?)) != (payload_len, checksum) {
        return Err(CacheError::Corrupt);
    }
    Ok(index)
}

/// The index in a payload (its checks of structure included; the checksum is the caller's).
fn read_payload(r: &mut Reader<'_>) -> Result<TraceIndex, CacheError> {
    let mut index = TraceIndex { hostname: r.str()?, min_ps: r.u64()?, max_ps: r.u64()?, ..TraceIndex::default() };
    index.num_events = usize::try_from(r.u64()?).map_err(|_| CacheError::Corrupt)?;
    for _ in 0..r.len(16)? {
        let fp = r.u64()?;
        index.stack_frames.push((fp, r.str()?));
    }
    for _ in 0..r.len(16)? {
        let device_id = r.u32()?;
        let name = r.str()?;
        let mut resources = Vec::new();
        for _ in 0..r.len(20)? {
            let resource_id = r.u32()?;
            let name = r.str()?;
            let num_events = usize::try_from(r.u64()?).map_err(|_| CacheError::Corrupt)?;
            resources.push(ResourceInfo { resource_id, name, num_events });
        }
        index.devices.push(DeviceInfo { device_id, name, resources });
    }
    for _ in 0..r.len(8)? {
        let device_id = r.u32()?;
        let kind = match r.u8()? {
            0 => Some(TrackKind::Thread { resource_id: r.u32()? }),
            1 => Some(TrackKind::Counter { name: r.str()? }),
            2 => None,
            _ => return Err(CacheError::Corrupt),
        };
        let plane = r.u32()?;
        let lines = r.u32s()?;
        let n = r.len(2)?;
        let line_of = (0..n).map(|_| r.u16()).collect::<Result<Vec<_>, _>>()?;
        let count = r.u32()?;
        let src = r.u32s()?;
        let n = r.len(16)?;
        let regions = (0..n).map(|_| Ok((r.u64()? as i64, r.u64()? as i64))).collect::<Result<Vec<_>, CacheError>>()?;
        let n = r.len(6)?;
        let serials = (0..n).map(|_| Ok((r.u32()?, r.u16()?))).collect::<Result<Vec<_>, CacheError>>()?;
        let n = r.len(1)?;
        let level = r.bytes(n)?;
        let level0 = r.u32s()?;
        let flow_pos = r.u32s()?;
        let n = r.len(8)?;
        let flow_data = (0..n).map(|_| r.u64()).collect::<Result<Vec<_>, _>>()?;
        let max_duration_ps = r.u64()?;
        let derived_name_ids = r.u32s()?;
        let n = r.len(17)?;
        let derived_entries = (0..n)
            .map(|_| {
                let shown = r.str()?;
                let has_long = r.u8()? != 0;
                let long = r.str()?;
                Ok((shown, has_long.then_some(long)))
            })
            .collect::<Result<Vec<_>, CacheError>>()?;
        if derived_name_ids.iter().any(|&id| id as usize >= derived_entries.len())
            || (!derived_name_ids.is_empty() && derived_name_ids.len() != regions.len())
        {
            return Err(CacheError::Corrupt);
        }
        let n = r.len(21)?;
        let offload = (0..n)
            .map(|_| {
                let id = r.u32()?;
                let flags = r.u8()?;
                let bytes = r.u64()? as i64;
                let shape = r.str()?;
                let args = super::derived::OffloadArgs {
                    raw_bytes_accessed: (flags & 1 != 0).then_some(bytes),
                    shape_with_layout: (flags & 2 != 0).then_some(shape),
                };
                Ok((id, args))
            })
            .collect::<Result<Vec<_>, CacheError>>()?;
        if offload.iter().any(|(id, _)| *id as usize >= derived_entries.len())
            || offload.windows(2).any(|w| w[0].0 >= w[1].0)
        {
            return Err(CacheError::Corrupt);
        }
        let derived_names = (!derived_name_ids.is_empty()).then(|| {
            let mut names = super::derived::DerivedNames::from_entries(derived_entries);
            names.set_offload_entries(offload);
            std::sync::Arc::new(names)
        });
        let n = r.len(8)?;
        let derived_groups = (0..n).map(|_| Ok(r.u64()? as i64)).collect::<Result<Vec<_>, CacheError>>()?;
        if !derived_groups.is_empty() && derived_groups.len() != derived_name_ids.len() {
            return Err(CacheError::Corrupt);
        }
        // Structural checks: every per-event table has one entry per event, and positions
        // are in range, so views never index out of bounds.
        let count_usize = count as usize;
        let positions_ok = level.len() == count_usize
            && level.iter().all(|&l| usize::from(l) < NUM_LEVELS || l == DROPPED_LEVEL)
            && level0.windows(2).all(|w| w[0] < w[1])
            && level0.iter().all(|&p| level.get(p as usize) == Some(&0))
            && level.iter().filter(|&&l| l == 0).count() == level0.len()
            && serials.windows(2).all(|w| w[0].0 < w[1].0)
            && serials.last().is_none_or(|&(p, _)| p < count)
            && flow_pos.iter().all(|&p| p < count)
            && flow_pos.len() == flow_data.len()
            && (src.is_empty() || src.len() == count_usize)
            && (line_of.is_empty() || line_of.len() == count_usize)
            && line_of.iter().all(|&l| usize::from(l) < lines.len())
            && !lines.is_empty();
        if !positions_ok {
            return Err(CacheError::Corrupt);
        }
        index.tracks.push(TrackInfo {
            device_id,
            kind,
            plane,
            lines,
            line_of,
            count,
            src,
            regions,
            serials,
            level,
            level0,
            flow_pos,
            flow_data,
            max_duration_ps,
            derived_name_ids,
            derived_names,
            derived_groups,
        });
    }
    Ok(index)
}
