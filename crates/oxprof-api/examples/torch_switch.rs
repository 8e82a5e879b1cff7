//! Times switching between the PyTorch and HTA tools on one run in-process (the HTTP
//! service without sockets): the first tool is cold (the trace is read), every other tool's
//! first request should answer from the session. A development aid for the numbers in
//! README.md; `scripts/bench/torch-switch.py` measures the same through `oxprof serve`.
//!
//! ```text
//! cargo run --release -p oxprof-api --example torch_switch -- TRACE [TOOL,TOOL,...]
//! DUMP=DIR …   also writes each body to DIR/<n>_<tool>[_<host>].json (to compare outputs
//!              before and after a change); HOSTS=h1,h2 asks each tool for those hosts too
//! ```
use oxprof_api::http::{NoAssets, Service, ServiceOptions};
use std::sync::Arc;
use std::time::Instant;

const TOOLS: &str = "pytorch_overview,pytorch_op_stats,pytorch_kernel_stats,pytorch_memory,pytorch_modules,\
                     hta_gpu_idle,hta_distributed,pytorch_overview,hta_gpu_idle";

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(trace) = args.next() else {
        eprintln!("usage: torch_switch TRACE [TOOL,TOOL,...]");
        std::process::exit(2);
    };
    let tools = args.next().unwrap_or_else(|| TOOLS.to_string());
    let mut options = ServiceOptions::new(&trace);
    options.cache_bytes = 8 << 30;
    let service = match Service::new(options, Arc::new(NoAssets)) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{trace}: {e}");
            std::process::exit(1);
        }
    };
    let dump = std::env::var_os("DUMP").map(std::path::PathBuf::from);
    let hosts = std::env::var("HOSTS").unwrap_or_default();
    let mut requests: Vec<(String, String)> = Vec::new();
    for tool in tools.split(',') {
        requests.push((tool.to_string(), String::new()));
        for host in hosts.split(',').filter(|h| !h.is_empty()) {
            requests.push((tool.to_string(), host.to_string()));
        }
    }
    for (n, (tool, host)) in requests.iter().enumerate() {
        let t = Instant::now();
        let query = if host.is_empty() { format!("tag={tool}") } else { format!("tag={tool}&host={host}") };
        let response = service.handle("GET", "/data", &query);
        println!(
            "{tool:22} {host:10} {:8.3} s  status {} {} bytes",
            t.elapsed().as_secs_f64(),
            response.status,
            response.body.as_bytes().len()
        );
        if let Some(dir) = &dump {
            let file =
                if host.is_empty() { format!("{n:02}_{tool}.json") } else { format!("{n:02}_{tool}_{host}.json") };
            let mut body = response.body.as_bytes().to_vec();
            body.extend_from_slice(b"\nnotes: ");
            body.extend_from_slice(service.handle("GET", "/oxprof/api/notes", &query).body.as_bytes());
            if let Err(e) = std::fs::write(dir.join(file), body) {
                eprintln!("{}: {e}", dir.display());
            }
        }
    }
    let info = service.handle("GET", "/oxprof/api/info", "");
    println!("{}", info.body_json().map(|v| v["files"].to_string()).unwrap_or_default());
}
