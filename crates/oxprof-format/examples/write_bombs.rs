//! Writes the hostile profiles of the security review into a log directory (run `bombs`,
//! one host per bomb), to measure how oxprof refuses them:
//!
//! ```text
//! cargo run --release -p oxprof-format --example write_bombs -- /tmp/bombs
//! oxprof serve /tmp/bombs   # then /data?run=bombs&tag=overview_page&host=<bomb>
//! ```

use oxprof_testkit::bombs;
use std::path::PathBuf;

fn main() -> std::io::Result<()> {
    let root = PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| "bombs".into()));
    let run = root.join("plugins/profile/bombs");
    std::fs::create_dir_all(&run)?;
    // 3 GiB of zeros in a ~3 MB gzip file.
    bombs::gzip_of_zeros(3 << 30, std::fs::File::create(run.join("gzip_3gib.xplane.pb.gz"))?)?;
    // Twelve 256 MiB compressed strings in a ~3 MB file.
    std::fs::write(run.join("strings_12x256mib.xplane.pb"), bombs::compressed_strings(12, 256 << 20))?;
    // A million empty planes (~19 MB) and a million empty lines (~2 MB).
    std::fs::write(run.join("planes_1m.xplane.pb"), bombs::empty_planes(1_000_000))?;
    std::fs::write(run.join("lines_1m.xplane.pb"), bombs::empty_lines(1_000_000))?;
    std::fs::write(run.join("metadata_1m.xplane.pb"), bombs::empty_metadata(1_000_000))?;
    std::fs::write(run.join("unknown_ids_1m.xplane.pb"), bombs::unknown_metadata_ids(1_000_000))?;
    for entry in std::fs::read_dir(&run)? {
        let entry = entry?;
        println!("{:>12} bytes  {}", entry.metadata()?.len(), entry.path().display());
    }
    Ok(())
}
