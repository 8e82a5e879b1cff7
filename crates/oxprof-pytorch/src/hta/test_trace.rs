//! Tiny PyTorch-like spaces for the HTA analyses' tests, built with the model builder the
//! way the Kineto importer lays them out (`/host:CPU` threads, `/device:GPU:0` streams,
//! `category` on event metadata, `stream` and `correlation_id` on events).

use super::trace::RankTrace;
use oxprof_model::{ModelBuilder, XSpace};

/// One event (µs).
#[derive(Debug, Clone)]
pub(crate) struct Ev {
    name: &'static str,
    cat: &'static str,
    ts: i64,
    end: i64,
    stream: Option<i64>,
    corr: Option<i64>,
}

/// A kernel on `stream`.
pub(crate) fn gpu(name: &'static str, ts: i64, end: i64, stream: i64, corr: i64) -> Ev {
    Ev { name, cat: "kernel", ts, end, stream: Some(stream), corr: Some(corr) }
}

/// A host event (`cuda_runtime` when it has a correlation, else `cpu_op`).
pub(crate) fn host(name: &'static str, ts: i64, end: i64, corr: Option<i64>) -> Ev {
    Ev { name, cat: if corr.is_some() { "cuda_runtime" } else { "cpu_op" }, ts, end, stream: None, corr }
}

/// A GPU memcpy on `stream`.
pub(crate) fn memcpy(ts: i64, end: i64, stream: i64, corr: i64) -> Ev {
    Ev { name: "Memcpy HtoD (Pageable -> Device)", cat: "gpu_memcpy", ts, end, stream: Some(stream), corr: Some(corr) }
}

const PS: i64 = 1_000_000;

/// The space of `events` (host events one per thread line; GPU events per stream line).
pub(crate) fn space(events: &[Ev], rank: Option<i64>) -> XSpace {
    let (hosts, gpus): (Vec<&Ev>, Vec<&Ev>) = events.iter().partition(|e| e.stream.is_none());
    let mut b = ModelBuilder::new().plane("/host:CPU", |p| {
        if let Some(r) = rank {
            p.stat("distributedInfo", format!("{{\"backend\": \"nccl\", \"rank\": {r}, \"world_size\": 2}}"));
        }
        for e in &hosts {
            p.event_metadata_stat(e.name, "category", e.cat);
        }
        for (i, e) in hosts.iter().enumerate() {
            p.line(i as i64 + 1, "thread", 0, |l| {
                let mut ev = l.event(e.name, e.ts * PS, (e.end - e.ts) * PS);
                if let Some(c) = e.corr {
                    ev = ev.stat("correlation_id", c);
                }
                let _ = ev;
            });
        }
    });
    if !gpus.is_empty() {
        b = b.plane("/device:GPU:0", |p| {
            for e in &gpus {
                p.event_metadata_stat(e.name, "category", e.cat);
            }
            let mut streams: Vec<i64> = gpus.iter().filter_map(|e| e.stream).collect();
            streams.sort_unstable();
            streams.dedup();
            for s in streams {
                p.line(s, &format!("Stream #{s}"), 0, |l| {
                    let mut on: Vec<&&Ev> = gpus.iter().filter(|e| e.stream == Some(s)).collect();
                    on.sort_by_key(|e| e.ts);
                    for e in on {
                        let mut ev = l.event(e.name, e.ts * PS, (e.end - e.ts) * PS).stat("stream", s);
                        if let Some(c) = e.corr {
                            ev = ev.stat("correlation_id", c);
                        }
                        let _ = ev;
                    }
                });
            }
        });
    }
    b.build().expect("test space builds")
}

/// The rank trace of `events` (rank 0).
pub(crate) fn rank(events: &[Ev]) -> RankTrace {
    RankTrace::from_space(&space(events, None), "host0", 0)
}
