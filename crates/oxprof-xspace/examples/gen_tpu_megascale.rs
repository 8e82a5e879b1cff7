//! Writes the synthetic multi-slice TPU profile of `testdata/tpu-synthetic/megascale/` (see
//! `testdata/README.md`): three hosts, two TensorCores each, four steps of one program whose
//! DCN collectives are host send/recv ops, in the schema XProf's `megascale_stats` reads:
//! * `/host:CPU`: `MegaScale:` TraceMes (XProf's test for DCN collective stats);
//! * `/device:TPU:N`: `XLA Modules` (the program run) and `XLA Ops` with `send`,
//!   `send-done`, `recv`, `recv-done` ops whose metadata carries `hlo_category`
//!   (`host send`/`host recv`) and, on sends, a `dcn_collective_info` proto;
//! * `/host:metadata`: the program's `Hlo Proto`, whose send/recv instructions carry channel
//!   ids and the frontend attributes `_xla_host_transfer_rendezvous` and
//!   `_xla_megascale_transfer_type` (done ops find their rendezvous by channel id).
//!
//! Three rendezvous per step (timeline of one step on a core, µs from the module start):
//! ```text
//! XLA Modules |jit_train_step(1)..............................................................|
//! XLA Ops     |send.1| |send.5| |send-done.2| |send-done.6| |recv.3| |recv.7| |recv-done.4| |recv-done.8|  |send.9| .. |recv-done.12|
//!              ALL_REDUCE (1, 2, 3, 4) and ALL_GATHER (5, 6, 7, 8) overlap; ONE_TO_ONE (9..12) runs alone
//! ```
//! plus a `host send` op outside the module and one that is not in the HLO (both skipped),
//! and at 900 µs a `barrier-cores` op with its `device_duration_ps` (10–45% of the step on
//! the `Steps` line; host2 waits 400 µs longer, a straggler for XProf's `BarrierCoresRule`).
//! Durations and gaps differ per host, core and step and are not whole nanoseconds, so
//! XProf's truncations show. Deterministic: the same bytes every run.
//!
//! Usage: `cargo run -p oxprof-xspace --example gen_tpu_megascale -- OUT_DIR`
//! (writes `OUT_DIR/megascale/plugins/profile/run/{host0,host1,host2}.xplane.pb.gz`, and
//! `OUT_DIR/megascale-mixed/…/{host0,host1}.xplane.pb.gz` where host1 has no `MegaScale:`
//! TraceMes, and `OUT_DIR/megascale-perfetto/…/host0.xplane.pb.gz`: see [`perfetto_space`]).

use oxprof_testkit::tpu::dcn::{self, COLLECTIVES, op_names};
use oxprof_testkit::tpu::{PS_PER_US, instruction, tuple, wire, write_gz};
use oxprof_testkit::{PlaneBuilder, Value, XSpaceBuilder};
use prost::Message;
use std::path::{Path, PathBuf};

const PROGRAM_ID: u64 = 1;
const PROGRAM: &str = "jit_train_step";
/// Start of the profile on every host (ns).
const T0_NS: i64 = 1_700_000_000_000_000_000;
const STEPS: i64 = 4;
const PERIOD_US: i64 = 2_000;
const CORES: i64 = 2;

/// The step program: for each collective a send of a parameter and a recv into a tuple,
/// sequenced by one token; the result is the tuple of the received arrays.
fn hlo_proto() -> Vec<u8> {
    let dcn::Instructions { mut instructions, parameters, results, result_ids } = dcn::instructions();
    instructions.push(instruction("tuple.99", "tuple", 99, &result_ids, tuple(results.clone())));
    let program_shape = wire::ProgramShapeProto {
        parameters,
        result: Some(tuple(results)),
        parameter_names: (0..COLLECTIVES.len()).map(|i| format!("p{i}")).collect(),
    };
    let entry = wire::HloComputationProto {
        name: "main".to_string(),
        instructions,
        program_shape: Some(program_shape.clone()),
        id: 1,
        root_id: 99,
        is_fusion_computation: false,
    };
    wire::HloProto {
        hlo_module: Some(wire::HloModuleProto {
            name: PROGRAM.to_string(),
            entry_computation_name: "main".to_string(),
            computations: vec![entry],
            host_program_shape: Some(program_shape),
            id: PROGRAM_ID as i64,
            entry_computation_id: 1,
        }),
    }
    .encode_to_vec()
}

/// A duration or gap in ps that is not a whole number of ns, varying with its inputs.
fn ps(us: i64, host: i64, core: i64, step: i64, salt: i64) -> i64 {
    us * PS_PER_US + 1_000 * (37 * host + 11 * core + 7 * step + 3 * salt) + 123 * (salt + 1)
}

fn tpu_plane(p: &mut PlaneBuilder, host: i64, core: i64) {
    let long = dcn::long_name;
    dcn::declare_ops(p, PROGRAM_ID);
    p.event_display_name(&long("send.77"), "send.77");
    p.event_metadata_stat(&long("send.77"), "hlo_category", "host send");
    let barrier = long("barrier-cores.13");
    p.event_display_name(&barrier, "barrier-cores.13");
    p.event_metadata_stat(&barrier, "hlo_category", "barrier");
    let step_start = |s: i64| (s * PERIOD_US + 100 + 5 * host) * PS_PER_US;
    p.line(1, "Steps", T0_NS, |l| {
        for s in 0..STEPS {
            l.event(&(10 + s).to_string(), step_start(s), (1_800 + 40 * s) * PS_PER_US);
        }
    });
    p.line(2, "XLA Modules", T0_NS, |l| {
        for s in 0..STEPS {
            l.event(&format!("{PROGRAM}({PROGRAM_ID})"), step_start(s), (1_600 + 40 * s) * PS_PER_US)
                .stat("run_id", 10 + s)
                .stat("queue_id", 0i64)
                .stat("core_type", 0i64);
        }
    });
    p.line(3, "XLA Ops", T0_NS, |l| {
        // A host send before the first module: XProf skips it.
        l.event(&long("send.1"), 10 * PS_PER_US, 5 * PS_PER_US);
        for s in 0..STEPS {
            let [ar, ag, oo] = [&COLLECTIVES[0], &COLLECTIVES[1], &COLLECTIVES[2]].map(op_names);
            let mut t = step_start(s) + 20 * PS_PER_US;
            let mut op = |name: &str, gap_us: i64, dur_us: i64, salt: i64| {
                t += ps(gap_us, host, core, s, salt);
                let d = ps(dur_us, host, core, s, salt + 1);
                l.event(&long(name), t, d);
                t += d;
            };
            // The all-reduce and all-gather overlap; the one-to-one runs alone.
            op(&ar[0], 0, 12, 0);
            op(&ag[0], 3, 8, 1);
            op(&ar[1], 40 + 10 * s, 25, 2);
            op(&ag[1], 5, 14, 3);
            op(&ar[2], 30, 9, 4);
            op(&ag[2], 2, 6, 5);
            op(&ar[3], 120 + 15 * host + 7 * core, 33, 6);
            op(&ag[3], 4, 21, 7);
            // A host send whose instruction is not in the HLO: XProf skips it.
            op("send.77", 10, 3, 8);
            op(&oo[0], 50, 7, 9);
            op(&oo[1], 20, 4, 10);
            op(&oo[2], 15, 5, 11);
            op(&oo[3], 60 + 20 * s, 11, 12);
            // The cores wait for each other at the end of the step; the device duration XProf
            // measures is the event's own.
            // host2 waits far longer: XProf names it a straggler.
            let straggle = if host == 2 { 400 } else { 0 };
            let wait = ps(150 + 60 * s + 25 * core + 40 * host + straggle, host, core, s, 13);
            l.event(&barrier, step_start(s) + 900 * PS_PER_US, wait).stat("device_duration_ps", wait as u64);
        }
    });
}

/// One host; `megascale`: with the runtime's `MegaScale:` TraceMes (without them XProf does
/// not look for DCN collectives).
fn host_space(host: i64, megascale: bool) -> Vec<u8> {
    let mut b = XSpaceBuilder::new().hostname(&format!("host{host}"));
    b = b.plane("/host:CPU", |p| {
        p.id(0);
        p.line(1, "python", T0_NS, |l| {
            for s in 0..STEPS {
                let t = (s * PERIOD_US + 5 * host) * PS_PER_US;
                l.event("train", t, 1_900 * PS_PER_US).stat("step_num", s);
            }
        });
        // The megascale runtime's TraceMes: XProf only tests that their names exist.
        p.line(2, "megascale_dcn", T0_NS, |l| {
            for s in (0..STEPS).filter(|_| megascale) {
                let t = (s * PERIOD_US + 150 + 5 * host) * PS_PER_US;
                for c in &COLLECTIVES {
                    l.event(&format!("MegaScale: {}", c.rendezvous), t, 400 * PS_PER_US);
                }
            }
        });
    });
    for core in 0..CORES {
        b = b.plane(&format!("/device:TPU:{core}"), |p| {
            p.id(core + 1);
            tpu_plane(p, host, core)
        });
    }
    b = b.plane("/host:metadata", |p| {
        p.id(100);
        p.event_metadata_stat(&format!("{PROGRAM}({PROGRAM_ID})"), "Hlo Proto", Value::Bytes(hlo_proto()));
    });
    b.to_bytes()
}

/// The run of `megascale-perfetto/`: one host whose two TensorCores each run a program
/// twice (`run_id` as XProf's runtime writes it, a uint64) with one DCN collective whose
/// ops name their rendezvous in their long names, and the `/device:CUSTOM:Megascale Trace`
/// plane of that collective's action graph, for XProf's Perfetto trace (flows, DMA
/// markers, network and in-flight counters, tiny ops folded). One run, µs from its start:
/// ```text
/// XLA Modules |jit_dcn_step(run 5+r)......................................................|
/// XLA Ops       |send.1| |f|f|f| |send-done.1| |recv.2|          |recv-done.2| |fusion.9|
///               (three 0.2 ns fusions in one ns: folded into "3 events are hidden")
/// Megascale    |device_<id>_gid_rv_1..........................................|
///                |D2H START| |D2H END| |NetSend END| |H2D START| |H2D END| |H2D END|
///                                                    |NetRecv END|
/// ```
fn perfetto_space() -> Vec<u8> {
    const RENDEZVOUS: &str = "rv_1";
    let long = |name: &str, op: &str| {
        format!("%{name} = {op}(), frontend_attributes={{_xla_host_transfer_rendezvous=\"{RENDEZVOUS}\"}}")
    };
    let run_start = |run: i64, core: i64| (run * 500 + 50 + 3 * core) * PS_PER_US;
    let mut b = XSpaceBuilder::new().hostname("host0");
    for core in 0..CORES {
        b = b.plane(&format!("/device:TPU:{core}"), |p| {
            p.id(core + 1);
            for (name, op) in
                [("send.1", "send"), ("send-done.1", "send-done"), ("recv.2", "recv"), ("recv-done.2", "recv-done")]
            {
                p.event_display_name(&long(name, op), name);
                p.event_metadata_stat(
                    &long(name, op),
                    "hlo_category",
                    if op.starts_with("send") { "host send" } else { "host recv" },
                );
                p.event_metadata_stat(&long(name, op), "program_id", PROGRAM_ID);
            }
            p.line(2, "XLA Modules", T0_NS, |l| {
                for run in 0..2 {
                    l.event("jit_dcn_step(1)", run_start(run, core), 300 * PS_PER_US).stat("run_id", 5 + run as u64);
                }
            });
            p.line(3, "XLA Ops", T0_NS, |l| {
                for run in 0..2 {
                    let t = run_start(run, core);
                    l.event(&long("send.1", "send"), t + 10 * PS_PER_US, ps(2, 0, core, run, 0));
                    for k in 0..3 {
                        l.event(&format!("fusion.{k}"), t + 13 * PS_PER_US + 100 * k, 200);
                    }
                    l.event(&long("send-done.1", "send-done"), t + 20 * PS_PER_US, ps(1, 0, core, run, 1));
                    l.event(&long("recv.2", "recv"), t + 22 * PS_PER_US, ps(1, 0, core, run, 2));
                    l.event(&long("recv-done.2", "recv-done"), t + 30 * PS_PER_US, ps(4, 0, core, run, 3));
                    l.event("fusion.9", t + 40 * PS_PER_US, ps(20, 0, core, run, 4));
                }
            });
            p.line(4, "XLA TraceMe", T0_NS, |l| {
                for run in 0..2 {
                    let t = run_start(run, core) + 50 * PS_PER_US;
                    l.event("tiny_a", t, 300);
                    l.event("tiny_b", t + 400, 300);
                }
            });
        });
    }
    b = b.plane("/device:CUSTOM:Megascale Trace", |p| {
        p.id(50);
        for core in 0..CORES {
            let device = 100_001 + core;
            let graph = format!("device_{device}_gid_{RENDEZVOUS}");
            p.line(core + 1, &format!("megascale core {core}"), T0_NS, |l| {
                for run in 0..2 {
                    let t = run_start(run, core);
                    let key = format!("{graph}$launch{run}^i{}", run + 1);
                    let at = |us: i64| t + us * PS_PER_US;
                    l.event(&graph, at(11), 18 * PS_PER_US).stat("graph_key", key.as_str()).stat("input_size", 4096i64);
                    l.event("DeviceToHost START", at(12), 500_000)
                        .stat("graph_key", key.as_str())
                        .stat("action_index", 0i64);
                    l.event("DeviceToHost END", at(14), 500_000).stat("graph_key", key.as_str());
                    l.event("NetworkSend END", at(16), 700_000)
                        .stat("graph_key", key.as_str())
                        .stat("action_duration_ns", 2_000i64)
                        .stat("buffer_sizes", "s0->1d|$c0=4096 s1->1d|$c1=8");
                    l.event("NetworkReceive END", at(17), 300_000)
                        .stat("graph_key", key.as_str())
                        .stat("network_transport_latency_us", 3u64)
                        .stat("buffer_sizes", "s1->0d|$c0=4096");
                    l.event("HostToDevice START", at(24), 500_000)
                        .stat("graph_key", key.as_str())
                        .stat("action_index", 0i64);
                    l.event("HostToDevice END", at(26), 500_000).stat("graph_key", key.as_str());
                    l.event("HostToDevice END", at(28), PS_PER_US).stat("graph_key", key.as_str());
                }
            });
        }
    });
    b.to_bytes()
}

fn write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_gz(path, bytes)?;
    println!("wrote {}", path.display());
    Ok(())
}

fn main() -> std::io::Result<()> {
    let out: PathBuf =
        std::env::args().nth(1).map(PathBuf::from).unwrap_or_else(|| PathBuf::from("testdata/tpu-synthetic"));
    let dir = out.join("megascale/plugins/profile/run");
    for host in 0..3 {
        write(&dir.join(format!("host{host}.xplane.pb.gz")), &host_space(host, true))?;
    }
    // A run where one host has no MegaScale: TraceMes: XProf answers that host, and
    // ALL_HOSTS, with the empty table, and the other host with its own.
    let dir = out.join("megascale-mixed/plugins/profile/run");
    for host in 0..2 {
        write(&dir.join(format!("host{host}.xplane.pb.gz")), &host_space(host, host == 0))?;
    }
    // Megascale action graphs and rendezvous-named ops, for megascale_stats perfetto=true.
    write(&out.join("megascale-perfetto/plugins/profile/run/host0.xplane.pb.gz"), &perfetto_space())?;
    Ok(())
}
