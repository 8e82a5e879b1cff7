//! The `oxprof` command: a thin shell over `oxprof-api`. Parses arguments, prints
//! responses, maps failures to exit codes (2 = bad input).

use anyhow::Result;
use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

/// oxprof: a profiler for machine-learning workloads (XSpace / XProf profiles).
#[derive(Debug, Parser)]
#[command(name = "oxprof", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Show what profiles hold: runs, hosts, planes, lines, event and metadata counts.
    Inspect {
        /// A log directory, a run directory, or one .xplane.pb(.gz) file.
        path: PathBuf,
        /// Print JSON instead of tables.
        #[arg(long)]
        json: bool,
    },
}

/// Exit code for bad input (unreadable or corrupt profiles, nothing found).
const EXIT_BAD_INPUT: u8 = 2;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("oxprof: {e:#}");
            ExitCode::from(EXIT_BAD_INPUT)
        }
    }
}

fn run(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Inspect { path, json } => {
            let report = oxprof_api::inspect::inspect(&path)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                print!("{}", oxprof_api::inspect::render_text(&report));
            }
            let mut failed = false;
            for host in report.failures() {
                failed = true;
                if let Some(err) = &host.error {
                    eprintln!("oxprof: {err}");
                }
            }
            Ok(if failed { ExitCode::from(EXIT_BAD_INPUT) } else { ExitCode::SUCCESS })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_valid() {
        Cli::command().debug_assert();
    }
}
