//! The format seam: which importer reads a profile, decided by the file's content (magic
//! bytes, gzip, the first non-space byte, key names), and the one table of formats that
//! detection, discovery and error messages all read.
//!
//! Adding a format is one row in [`FORMATS`] (name, file suffixes for discovery, a sniff
//! of the first bytes) and one arm in [`import`]. A file's name decides only what content
//! cannot: an empty or damaged file whose suffix names a format goes to that format's
//! importer, so its error says what is wrong with it instead of "unknown format".

use crate::error::LoadError;
use oxprof_model::limits::LoadLimits;
use oxprof_model::{ReleasePages, XSpace};
use std::io::Read;
use std::path::Path;

/// A profile format oxprof reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// XProf's XSpace protobuf (`.xplane.pb`), written by TensorFlow, JAX and PyTorch/XLA.
    XSpace,
    /// PyTorch profiler traces: Kineto's Chrome-trace JSON (`.pt.trace.json`), written by
    /// `torch.profiler` (`export_chrome_trace`, `tensorboard_trace_handler`).
    Kineto,
}

/// What the seam knows about one format.
#[derive(Debug)]
pub struct FormatSpec {
    /// The format.
    pub format: Format,
    /// Its name in messages and listings.
    pub name: &'static str,
    /// Who writes it.
    pub written_by: &'static str,
    /// File-name suffixes discovery lists in a run directory (the host name precedes them),
    /// plain before compressed.
    pub suffixes: &'static [&'static str],
    /// Whether the first bytes of a file (gunzipped when it is gzip) are this format.
    sniff: fn(&[u8]) -> bool,
}

/// Every format oxprof reads, in the order detection tries them.
pub const FORMATS: &[FormatSpec] = &[
    FormatSpec {
        format: Format::XSpace,
        name: "XSpace",
        written_by: "TensorFlow, JAX, PyTorch/XLA",
        suffixes: &[".xplane.pb", ".xplane.pb.gz"],
        sniff: looks_like_xspace,
    },
    FormatSpec {
        format: Format::Kineto,
        name: "PyTorch trace",
        written_by: "torch.profiler",
        // tensorboard_trace_handler's `<worker>.<timestamp>.pt.trace.json[.gz]`; traces of
        // other names are read when given by path (their content decides).
        suffixes: &[".pt.trace.json", ".pt.trace.json.gz"],
        sniff: oxprof_kineto::sniff,
    },
];

/// How many leading bytes detection looks at (after gunzipping): enough for a JSON trace
/// whose writer put tens of KiB of metadata before its keys (see
/// [`oxprof_kineto::SNIFF_BYTES`]).
pub const SNIFF_BYTES: usize = oxprof_kineto::SNIFF_BYTES;

const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// A detected format, and whether the file is gzip-compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Detected {
    /// The format of the (decompressed) content.
    pub format: Format,
    /// The file is gzip-compressed.
    pub gzip: bool,
}

impl Format {
    /// This format's row of [`FORMATS`].
    pub fn spec(self) -> &'static FormatSpec {
        // Every variant has a row; `formats_table_is_complete` checks it.
        FORMATS.iter().find(|f| f.format == self).unwrap_or(&FORMATS[0])
    }
}

/// The format of a file whose first bytes are `head` (at least [`SNIFF_BYTES`] of them, or
/// the whole file), looking inside gzip; `None` when no format recognises them.
pub fn detect(head: &[u8]) -> Option<Detected> {
    if head.starts_with(&GZIP_MAGIC) {
        let inner = gunzip_head(head);
        return sniff(&inner).map(|format| Detected { format, gzip: true });
    }
    sniff(head).map(|format| Detected { format, gzip: false })
}

fn sniff(content: &[u8]) -> Option<Format> {
    FORMATS.iter().find(|f| (f.sniff)(content)).map(|f| f.format)
}

/// The first [`SNIFF_BYTES`] a gzip prefix inflates to (as many as the prefix holds).
pub(crate) fn gunzip_head(compressed: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(SNIFF_BYTES);
    let mut decoder = flate2::read::GzDecoder::new(compressed).take(SNIFF_BYTES as u64);
    // A prefix of a stream ends early: keep what was inflated before it did.
    let mut chunk = [0u8; 1024];
    while let Ok(n) = decoder.read(&mut chunk) {
        if n == 0 {
            break;
        }
        out.extend_from_slice(&chunk[..n]);
    }
    out
}

/// The format a file name claims, and the host name before its suffix.
pub fn format_of_name(file_name: &str) -> Option<(&'static FormatSpec, &str)> {
    FORMATS.iter().find_map(|spec| {
        spec.suffixes
            .iter()
            .find_map(|suffix| file_name.strip_suffix(suffix))
            .filter(|host| !host.is_empty())
            .map(|host| (spec, host))
    })
}

/// "XSpace (.xplane.pb, .xplane.pb.gz; from TensorFlow, JAX, PyTorch/XLA)" for every format:
/// what an error about an unreadable file lists.
pub fn formats_we_read() -> String {
    FORMATS
        .iter()
        .map(|f| format!("{} ({}; from {})", f.name, f.suffixes.join(", "), f.written_by))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A short description of bytes no format recognised, for the error message.
pub fn describe_unknown(head: &[u8]) -> &'static str {
    let gzip = head.starts_with(&GZIP_MAGIC);
    let content = if gzip { gunzip_head(head) } else { head.to_vec() };
    let first = content.iter().copied().find(|b| !b.is_ascii_whitespace());
    match (gzip, first) {
        (_, None) if head.is_empty() => "the file is empty",
        (true, None) => "gzip whose content is empty or unreadable",
        (false, None) => "only whitespace",
        (true, Some(b'{' | b'[')) => "gzip-compressed JSON of no known profile format",
        (false, Some(b'{' | b'[')) => "JSON of no known profile format",
        (true, Some(_)) => "gzip-compressed data of no known profile format",
        (false, Some(b'<')) => "XML or HTML",
        (false, Some(_)) if std::str::from_utf8(&content).is_ok() => "text of no known profile format",
        (false, Some(_)) => "binary data of no known profile format",
    }
}

/// Reads `content` (decompressed) as `format` into the model, handing consumed ranges to
/// `release` and decoding the lines of only the planes `lines_of` accepts.
pub fn import(
    format: Format,
    path: &Path,
    content: &[u8],
    release: &dyn ReleasePages,
    limits: &LoadLimits,
    lines_of: &dyn Fn(&str) -> bool,
) -> Result<XSpace, LoadError> {
    match format {
        Format::XSpace => oxprof_xspace::decode_xspace_within(content, release, lines_of, limits)
            .map_err(|e| LoadError::decode(path.to_path_buf(), e)),
        // A trace's planes are built from events in any order: all of them are read.
        Format::Kineto => {
            oxprof_kineto::import_kineto(content, release, limits).map_err(|e| LoadError::kineto(path.to_path_buf(), e))
        }
    }
}

/// Whether `head` starts like a serialised XSpace: its leading top-level fields are
/// XSpace's (planes, errors, warnings, hostnames: all length-delimited) with lengths that
/// fit, and a first plane starts with one of XPlane's first fields (serialisers write
/// fields in order: id, name, lines). A head shorter than [`SNIFF_BYTES`] is the whole
/// file, so its fields must end exactly at its end. (Whitespace-led JSON such as
/// `\n{"` reads as a plane of 123 bytes starting with field 4: refused on both counts.)
fn looks_like_xspace(head: &[u8]) -> bool {
    let whole_file = head.len() < SNIFF_BYTES;
    let mut at = 0;
    let mut fields = 0;
    while at < head.len() {
        let Some((tag, tag_len)) = varint(&head[at..]) else { return fields > 0 && !whole_file };
        // Fields 1..=4, wire type 2 (length-delimited).
        if tag & 7 != 2 || !(1..=4).contains(&(tag >> 3)) {
            return false;
        }
        let Some((len, len_len)) = varint(&head[at + tag_len..]) else { return fields > 0 && !whole_file };
        let body = at + tag_len + len_len;
        if fields == 0 && tag >> 3 == 1 && len > 0 {
            match head.get(body) {
                Some(0x08 | 0x12 | 0x1a) => {}
                Some(_) => return false,
                None => return !whole_file,
            }
        }
        fields += 1;
        let Some(next) = usize::try_from(len).ok().and_then(|len| body.checked_add(len)) else { return false };
        if next > head.len() {
            return !whole_file;
        }
        at = next;
    }
    fields > 0
}

/// A protobuf varint at the start of `bytes`: (value, bytes used); `None` if cut short or
/// longer than 10 bytes.
fn varint(bytes: &[u8]) -> Option<(u64, usize)> {
    let mut value = 0u64;
    for (i, &b) in bytes.iter().take(10).enumerate() {
        value |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some((value, i + 1));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        encoder.write_all(bytes).unwrap();
        encoder.finish().unwrap()
    }

    /// An XSpace with one plane `{id: 7, name: "/host:CPU"}` and a hostname.
    fn tiny_xspace() -> Vec<u8> {
        let name = b"/host:CPU";
        let mut plane = vec![0x08, 7, 0x12, name.len() as u8];
        plane.extend_from_slice(name);
        let mut space = vec![0x0a, plane.len() as u8];
        space.extend_from_slice(&plane);
        space.extend_from_slice(&[0x22, 2, b'v', b'm']);
        space
    }

    #[test]
    fn formats_table_is_complete() {
        for format in [Format::XSpace, Format::Kineto] {
            // A new variant fails to compile here until it is listed above.
            match format {
                Format::XSpace | Format::Kineto => {}
            }
            assert_eq!(FORMATS.iter().filter(|f| f.format == format).count(), 1, "{format:?}");
            assert_eq!(format.spec().format, format);
        }
    }

    #[test]
    fn xspace_is_recognised_by_content_plain_or_gzip() {
        let space = tiny_xspace();
        assert_eq!(detect(&space), Some(Detected { format: Format::XSpace, gzip: false }));
        assert_eq!(detect(&gzip(&space)), Some(Detected { format: Format::XSpace, gzip: true }));
        // A prefix of a large file: the last field runs past the head.
        let mut long = vec![0x0a, 0x80, 0x80, 0x04, 0x08, 1];
        long.resize(SNIFF_BYTES, 0);
        assert_eq!(detect(&long).map(|d| d.format), Some(Format::XSpace));
    }

    #[test]
    fn pytorch_traces_are_recognised_by_content_plain_or_gzip() {
        for trace in [&b"\n{\"traceEvents\": []}"[..], b"[{\"ph\": \"X\"}]", b"{\n  \"schemaVersion\": 1,"] {
            assert_eq!(detect(trace), Some(Detected { format: Format::Kineto, gzip: false }));
            assert_eq!(detect(&gzip(trace)), Some(Detected { format: Format::Kineto, gzip: true }));
        }
        assert_eq!(
            format_of_name("worker0.1623143089861.pt.trace.json.gz").map(|(f, h)| (f.format, h)),
            Some((Format::Kineto, "worker0.1623143089861"))
        );
    }

    #[test]
    fn other_content_is_no_format() {
        for bytes in [
            &b""[..],
            b"   \n",
            b"{\"a\": 1}",
            b"[1, 2]",
            b"hello, world\n",
            b"<html></html>",
            &[0x0a, 0x05, 0xff, 0xff][..],
            &[0x08, 0x01][..],
            &[0xff; 64][..],
        ] {
            assert_eq!(detect(bytes), None, "{bytes:?}");
            assert_eq!(detect(&gzip(bytes)), None, "gzip of {bytes:?}");
        }
    }

    #[test]
    fn unknown_content_is_described() {
        assert_eq!(describe_unknown(b""), "the file is empty");
        assert_eq!(describe_unknown(b"{\"a\": 1}"), "JSON of no known profile format");
        assert_eq!(describe_unknown(&gzip(b" [1]")), "gzip-compressed JSON of no known profile format");
        assert_eq!(describe_unknown(b"<html>"), "XML or HTML");
        assert_eq!(describe_unknown(b"id,name\n"), "text of no known profile format");
        assert_eq!(describe_unknown(&[0x80, 0xff, 0x00]), "binary data of no known profile format");
    }

    #[test]
    fn names_give_the_claimed_format_and_the_host() {
        assert_eq!(
            format_of_name("10.0.0.1_8466.xplane.pb").map(|(f, h)| (f.format, h)),
            Some((Format::XSpace, "10.0.0.1_8466"))
        );
        assert_eq!(format_of_name("vm.xplane.pb.gz").map(|(_, h)| h), Some("vm"));
        assert!(format_of_name(".xplane.pb").is_none());
        assert!(format_of_name("notes.txt").is_none());
        assert!(formats_we_read().starts_with("XSpace (.xplane.pb, .xplane.pb.gz; from TensorFlow"));
        assert!(formats_we_read().ends_with("PyTorch trace (.pt.trace.json, .pt.trace.json.gz; from torch.profiler)"));
    }
}
