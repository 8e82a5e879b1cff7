//! Imports one trace (`.json` or `.json.gz`) and prints its planes, lines, event counts,
//! diagnostics, time taken and the model's size: `cargo run --release -p oxprof-kineto
//! --example summary -- FILE [--lines] [--repeat N]`.

use std::io::Read;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let path = args.get(1).ok_or("usage: summary FILE [--lines]")?;
    let show_lines = args.iter().any(|a| a == "--lines");
    let repeat: usize =
        args.iter().position(|a| a == "--repeat").and_then(|i| args.get(i + 1)?.parse().ok()).unwrap_or(1);
    let raw = std::fs::read(path)?;
    let bytes = if raw.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        flate2::read::MultiGzDecoder::new(&raw[..]).read_to_end(&mut out)?;
        out
    } else {
        raw
    };
    // The fastest of `--repeat N` runs (shared machines are noisy), wall and CPU (all
    // threads) seconds: the parse alone, then the whole import (parse + model build).
    let limits = oxprof_model::LoadLimits::none();
    let mb = bytes.len() as f64 / 1e6;
    let (mut parse_wall, mut parse_cpu) = (f64::MAX, f64::MAX);
    for _ in 0..repeat {
        let (t, c) = (std::time::Instant::now(), cpu_seconds());
        oxprof_kineto::parse_only(&bytes, &limits)?;
        parse_wall = parse_wall.min(t.elapsed().as_secs_f64());
        parse_cpu = parse_cpu.min(cpu_seconds() - c);
    }
    let (mut secs, mut cpu) = (f64::MAX, f64::MAX);
    let mut space = None;
    for _ in 0..repeat {
        drop(space.take());
        let (t, c) = (std::time::Instant::now(), cpu_seconds());
        space = Some(oxprof_kineto::import_kineto(&bytes, &oxprof_model::KeepPages, &limits)?);
        secs = secs.min(t.elapsed().as_secs_f64());
        cpu = cpu.min(cpu_seconds() - c);
    }
    let space = space.ok_or("--repeat 0")?;
    println!(
        "{path}: {} bytes, {} events, {:.3} s ({:.0} MB/s), model {} bytes",
        bytes.len(),
        space.event_count(),
        secs,
        mb / secs,
        space.heap_bytes()
    );
    println!(
        "  parse {parse_wall:.3} s wall, {parse_cpu:.3} s CPU ({:.0} MB/s per core); import {secs:.3} s wall, {cpu:.3} s CPU ({:.0} MB/s per core)",
        mb / parse_cpu,
        mb / cpu
    );
    for p in &space.planes {
        println!("  plane {} (id {}): {} lines, {} events", p.name, p.id, p.lines.len(), p.event_count());
        if show_lines {
            for l in &p.lines {
                println!("    line {:>20} {:<50} {:>8} events  ts {}", l.id, l.name, l.event_count(), l.timestamp_ns);
            }
        }
        let stats: Vec<String> = p.stats().map(|s| format!("{s:?}")).collect();
        if show_lines && !stats.is_empty() {
            println!("    stats: {}", stats.join(", "));
        }
    }
    for (k, n) in space.diagnostics.iter() {
        println!("  diagnostic {}: {n} ({})", k.code(), k.message());
    }
    Ok(())
}

/// CPU seconds this process has used, all threads (user + system).
fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else { return 0.0 };
    // After the command name (which may hold spaces): state is field 3, utime 14, stime 15.
    let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else { return 0.0 };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = fields.get(11..13).map_or(0.0, |f| f.iter().filter_map(|v| v.parse::<f64>().ok()).sum());
    // Linux reports clock ticks of 1/100 s (USER_HZ).
    ticks / 100.0
}
