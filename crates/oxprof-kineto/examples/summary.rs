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
    // The fastest of `--repeat N` imports (shared machines are noisy).
    let mut secs = f64::MAX;
    let mut space = None;
    for _ in 0..repeat {
        drop(space.take());
        let t = std::time::Instant::now();
        space =
            Some(oxprof_kineto::import_kineto(&bytes, &oxprof_model::KeepPages, &oxprof_model::LoadLimits::none())?);
        secs = secs.min(t.elapsed().as_secs_f64());
    }
    let space = space.ok_or("--repeat 0")?;
    println!(
        "{path}: {} bytes, {} events, {:.3} s ({:.0} MB/s), model {} bytes",
        bytes.len(),
        space.event_count(),
        secs,
        bytes.len() as f64 / secs / 1e6,
        space.heap_bytes()
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
