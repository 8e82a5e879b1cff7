//! Prints where a decoded profile's memory goes (a development aid).
fn main() {
    let Some(p) = std::env::args().nth(1) else {
        eprintln!("usage: heap FILE.xplane.pb");
        return;
    };
    let s = match oxprof_format::load_xspace(std::path::Path::new(&p)) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            return;
        }
    };
    for pl in &s.planes {
        println!(
            "{} heap={} strings={} event_metadata={} lines={}",
            pl.name,
            pl.heap_bytes(),
            pl.strings().heap_bytes(),
            pl.event_metadata().len(),
            pl.lines.len()
        );
        for l in &pl.lines {
            println!("   {} events={} stats={}", l.name, l.event_count(), l.stat_count());
        }
    }
}
