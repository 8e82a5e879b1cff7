//! Writes a synthetic XSpace with many events for trace-viewer benchmarks:
//! `cargo run --release -p oxprof-api --example gen_synthetic_trace -- OUT.xplane.pb [EVENTS]`
//! (default 50,000,000 events). One `/host:CPU` plane with 16 threads; each thread repeats
//! steps (root events with `_r`/`step_num`) holding ops holding 1–8 short kernels:
//!
//! ```text
//! thread  |------------------ train N (step) ------------------|
//!           |--- op ---| |--- op ---| |--- op ---|  ...
//!            |k||k||k|     |k|          |k||k|
//! ```
//!
//! Written with a small hand-rolled protobuf encoder, line by line (memory stays at one
//! line's bytes), so hundreds of millions of events are possible.

use std::io::{BufWriter, Write};

const THREADS: u64 = 16;
const OP_NAMES: u64 = 200;

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn key(out: &mut Vec<u8>, field: u32, wire: u8) {
    varint(out, (u64::from(field) << 3) | u64::from(wire));
}

fn int_field(out: &mut Vec<u8>, field: u32, v: i64) {
    key(out, field, 0);
    varint(out, v as u64);
}

fn bytes_field(out: &mut Vec<u8>, field: u32, b: &[u8]) {
    key(out, field, 2);
    varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

fn event(out: &mut Vec<u8>, scratch: &mut Vec<u8>, metadata: i64, offset: i64, duration: i64, stats: &[(i64, i64)]) {
    scratch.clear();
    int_field(scratch, 1, metadata);
    int_field(scratch, 2, offset);
    int_field(scratch, 3, duration);
    let mut stat = Vec::new();
    for &(m, v) in stats {
        stat.clear();
        int_field(&mut stat, 1, m);
        int_field(&mut stat, 4, v);
        bytes_field(scratch, 4, &stat);
    }
    bytes_field(out, 4, scratch);
}

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let out_path = args.next().unwrap_or_else(|| "synthetic.xplane.pb".to_string());
    let total: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(50_000_000);
    let per_thread = total / THREADS;
    // Metadata: 1 = "train", 2.. = ops, then kernels.
    let mut metadata = Vec::new();
    let mut names = vec!["train".to_string()];
    names.extend((0..OP_NAMES).map(|i| format!("op_{i}/fusion.{}", i * 7 % 13)));
    names.extend((0..OP_NAMES).map(|i| format!("kernel_{i}")));
    for (i, name) in names.iter().enumerate() {
        let mut md = Vec::new();
        int_field(&mut md, 1, i as i64 + 1);
        bytes_field(&mut md, 2, name.as_bytes());
        let mut entry = Vec::new();
        int_field(&mut entry, 1, i as i64 + 1);
        bytes_field(&mut entry, 2, &md);
        bytes_field(&mut metadata, 4, &entry);
    }
    for (id, name) in [(1i64, "_r"), (2, "step_num")] {
        let mut md = Vec::new();
        int_field(&mut md, 1, id);
        bytes_field(&mut md, 2, name.as_bytes());
        let mut entry = Vec::new();
        int_field(&mut entry, 1, id);
        bytes_field(&mut entry, 2, &md);
        bytes_field(&mut metadata, 5, &entry);
    }
    // Lines, generated one at a time; the plane's length prefix needs their sizes, so each
    // line is encoded twice (size pass, then write pass) to keep memory flat.
    let line_bytes = |t: u64| -> Vec<u8> {
        let mut events = Vec::with_capacity((per_thread * 14) as usize);
        let mut scratch = Vec::new();
        let mut rng = 0x9e37_79b9_7f4a_7c15u64 ^ t;
        let mut next = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let mut written = 0u64;
        let mut ts: i64 = 1_000 * t as i64;
        let mut step = 0i64;
        while written < per_thread {
            let ops = 20 + next() % 40;
            // Lay out the step's ops first to know its duration.
            let mut body = Vec::new();
            let mut cursor = ts + 500;
            for _ in 0..ops {
                let op = 2 + (next() % OP_NAMES) as i64;
                let kernels = 1 + next() % 8;
                let op_start = cursor;
                let mut kcur = op_start + 100;
                let mut ks = Vec::new();
                for _ in 0..kernels {
                    let kd = 200 + (next() % 5_000) as i64;
                    ks.push((2 + OP_NAMES as i64 + (next() % OP_NAMES) as i64, kcur, kd));
                    kcur += kd + 50 + (next() % 500) as i64;
                }
                body.push((op, op_start, kcur - op_start, ks));
                cursor = kcur + 200 + (next() % 2_000) as i64;
            }
            event(&mut events, &mut scratch, 1, ts, cursor - ts, &[(1, 1), (2, step)]);
            written += 1;
            for (op, start, dur, ks) in body {
                event(&mut events, &mut scratch, op, start, dur, &[]);
                written += 1;
                for (k, kstart, kd) in ks {
                    event(&mut events, &mut scratch, k, kstart, kd, &[]);
                    written += 1;
                }
            }
            ts = cursor + 1_000;
            step += 1;
        }
        let mut line = Vec::with_capacity(events.len() + 64);
        int_field(&mut line, 1, t as i64 + 1);
        bytes_field(&mut line, 2, format!("worker/{t}").as_bytes());
        int_field(&mut line, 3, 1_000_000);
        line.extend_from_slice(&events);
        line
    };
    let mut plane_len = 0u64;
    let mut header = Vec::new();
    int_field(&mut header, 1, 0);
    bytes_field(&mut header, 2, b"/host:CPU");
    plane_len += header.len() as u64 + metadata.len() as u64;
    let mut sizes = Vec::new();
    for t in 0..THREADS {
        let n = line_bytes(t).len() as u64;
        let mut k = Vec::new();
        key(&mut k, 3, 2);
        varint(&mut k, n);
        plane_len += k.len() as u64 + n;
        sizes.push(n);
    }
    let mut w = BufWriter::with_capacity(1 << 20, std::fs::File::create(&out_path)?);
    let mut prefix = Vec::new();
    key(&mut prefix, 1, 2);
    varint(&mut prefix, plane_len);
    w.write_all(&prefix)?;
    w.write_all(&header)?;
    for t in 0..THREADS {
        let line = line_bytes(t);
        let mut k = Vec::new();
        key(&mut k, 3, 2);
        varint(&mut k, line.len() as u64);
        w.write_all(&k)?;
        w.write_all(&line)?;
    }
    w.write_all(&metadata)?;
    let mut host = Vec::new();
    bytes_field(&mut host, 4, b"synthetic");
    w.write_all(&host)?;
    w.flush()?;
    println!("wrote {out_path}: about {total} events in {THREADS} lines");
    Ok(())
}
