//! `oxprof capture` without the rest of oxprof: `cargo run -p oxprof-capture --example capture -- ADDR ...`.
use clap::Parser;

/// Capture a profile from running TensorFlow/JAX programs.
#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    args: oxprof_capture::cli::CaptureArgs,
}

fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(oxprof_capture::cli::run(&Cli::parse().args))
}
