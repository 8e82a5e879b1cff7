//! Writes the synthetic TPU counter profiles of `testdata/tpu-synthetic/counters*/` (see
//! `testdata/README.md`): two hosts, two TPU v6e chips each, every chip with two counter
//! samples (lines) of TensorCore, ICI, SparseCore and HBM performance counters in the schema XProf's
//! `perf_counters` and `utilization_viewer` read (plane stats `device_id`,
//! `global_chip_id`, `device_type_string`; events with `performance_counter_id`,
//! `counter_value`, `performance_counter_description`, `performance_counter_sets`).
//! Deterministic: the same bytes every run.
//!
//! Usage: `cargo run -p oxprof-xspace --example gen_tpu_counters -- OUT_DIR`
//! (writes `OUT_DIR/counters/plugins/profile/run/{host0,host1}.xplane.pb.gz`,
//! `OUT_DIR/counters-gpu/…/gpuhost.xplane.pb.gz` and `OUT_DIR/counters-v7x/…/host0.xplane.pb.gz`,
//! one TPU v7x chip).

use flate2::Compression;
use flate2::write::GzEncoder;
use oxprof_testkit::XSpaceBuilder;
use std::io::Write;
use std::path::PathBuf;

/// TPU v6e TensorCore counters (`xprof/utils/tpu_counter_ids_v6e.h`): name suffix, id.
const TC_COUNTERS: &[(&str, u64)] = &[
    ("CYCLES", 3257466888),
    ("SCALAR_ALU_INSTRUCTION_0", 3257466968),
    ("SCALAR_ALU_INSTRUCTION_1", 3257466976),
    ("VECTOR_ALU_INSTRUCTION_0", 3257467136),
    ("VECTOR_ALU_INSTRUCTION_1", 3257467144),
    ("VECTOR_ALU_INSTRUCTION_2", 3257467152),
    ("VECTOR_ALU_INSTRUCTION_3", 3257467160),
    ("VST_INSTRUCTION", 3257467168),
    ("VLD_INSTRUCTION_0", 3257467184),
    ("VLD_INSTRUCTION_1", 3257467192),
    ("MXU_BUSY_0", 3257467400),
    ("MXU_BUSY_1", 3257467408),
    ("MXU_BUSY_2", 3257467416),
    ("MATMUL_LMR_BF16_MXU_0", 3257467352),
    ("MATMUL_LMR_BF16_MXU_1", 3257467360),
    ("MATMUL_VREG_F32_MXU_0", 3257467272),
    ("MATMUL_VREG_I8_MXU_1", 3257467328),
    ("MATPUSH_CYCLES_MXU_0", 3257467440),
    ("MATPUSH_CYCLES_MXU_1", 3257467448),
    ("XLU_BUSY_0", 3257467536),
    ("XLU_BUSY_1", 3257467544),
    ("XLU_BUSY_2", 3257467552),
    ("PACKED_XLU_0", 3257467520),
    ("TRANSPOSE_XLU_1", 3257467512),
    ("VPU_VALU_FADD_OPS_0", 3257468576),
    ("VPU_VALU_FMAC_OPS_3", 3257468728),
];
const TC_PREFIX: &str = "VF_CHIP_TC_TCS_TC_MISC_TCS_STATS_TCS_STATS_COUNTERS_UNPRIVILEGED_COUNT_";

/// TPU v6e ICI counters: full name, id.
const ICI_COUNTERS: &[(&str, u64)] = &[
    ("VF_CHIP_OCI_ICR_PERF_COUNTERS_FIFO_STATS_COUNTERS_UNPRIVILEGED_BN_RD_REQ_0_INSERTION_COUNT", 2953257136),
    ("VF_CHIP_OCI_ICR_PERF_COUNTERS_FIFO_STATS_COUNTERS_UNPRIVILEGED_BN_RD_REQ_1_INSERTION_COUNT", 2953257192),
    ("VF_CHIP_OCI_ICR_PERF_COUNTERS_FIFO_STATS_COUNTERS_UNPRIVILEGED_BN_WR_REQ_0_INSERTION_COUNT", 2953257248),
];

/// TPU v6e SparseCore and HBM counters: full name (after `VF_CHIP_`), id.
const SC_HBM_COUNTERS: &[(&str, u64)] = &[
    ("SC_0_SCT_0_SC_STATS_COUNTERS_UNPRIVILEGED_COUNT_CYCLES", 3490185224),
    ("SC_0_SCT_0_SC_STATS_COUNTERS_UNPRIVILEGED_COUNT_TEC_S0_INSTRUCTION", 3490185720),
    ("SC_0_SCT_3_SC_STATS_COUNTERS_UNPRIVILEGED_COUNT_TEC_SCALAR_ISSUE", 3496477160),
    ("SC_1_SCT_0_SC_STATS_COUNTERS_UNPRIVILEGED_COUNT_CYCLES", 3534225416),
    ("SC_1_SCT_5_SC_STATS_COUNTERS_UNPRIVILEGED_COUNT_VECTOR_ISSUE", 3544712128),
    ("SC_1_SCT_15_SC_STATS_COUNTERS_UNPRIVILEGED_COUNT_VEX_INSTRUCTION", 3565683704),
    ("SC_0_SCS_SC_STATS_COUNTERS_UNPRIVILEGED_COUNT_CYCLES", 3532193800),
    ("SC_0_SCS_SC_STATS_COUNTERS_UNPRIVILEGED_COUNT_SCALAR_ISSUE", 3532193808),
    ("SC_0_SCS_SC_STATS_COUNTERS_UNPRIVILEGED_COUNT_SMISC_INSTRUCTION", 3532193840),
    ("HBM_0_HBMC_0_CMN_HI_FREQ_STATS_COUNTERS_UNPRIVILEGED_RD_RESP_PS0", 3019980856),
    ("HBM_1_HBMC_15_CMN_HI_FREQ_STATS_COUNTERS_UNPRIVILEGED_RD_RESP_PS1", 3084992576),
    ("HBM_0_HBMC_3_CMN_HI_FREQ_STATS_COUNTERS_UNPRIVILEGED_WR_REQ_PS1", 3026272288),
    ("HBM_1_HBMC_7_CMN_HI_FREQ_STATS_COUNTERS_UNPRIVILEGED_PARTIAL_WRITE_REQ_PS0", 3068215336),
];

/// TPU v7x counters (`xprof/utils/tpu_counter_ids_v7x.h`; name after `VF_CHIP_`, id): both
/// dies' power manager cycles and throttling, TensorCore, HBM, ICI and SparseCore counters.
const V7X_COUNTERS: &[(&str, u64)] = &[
    ("DIE0_PWRMGR_PWRMGR_TC_THROTTLE_CORE_DEBUG_STATS_UNPRIVILEGED_CYCLE_COUNT", 2847490056),
    ("DIE0_PWRMGR_PWRMGR_TC_THROTTLE_CORE_DEBUG_STATS_UNPRIVILEGED_CLOCKS_SKIPPED", 2847490064),
    ("DIE1_PWRMGR_PWRMGR_TC_THROTTLE_CORE_DEBUG_STATS_UNPRIVILEGED_CYCLE_COUNT", 3384360968),
    ("DIE1_PWRMGR_PWRMGR_TC_THROTTLE_CORE_DEBUG_STATS_UNPRIVILEGED_EXT_THROTTLE_CLOCKS_SKIPPED", 3384361000),
    ("DIE1_PWRMGR_PWRMGR_TC_THROTTLE_CORE_DEBUG_STATS_UNPRIVILEGED_LDIDT_DROOP_CLOCKS_SKIPPED", 3384361024),
    ("DIE0_TC_TCS_TC_MISC_TCS_STATS_TCS_STATS_COUNTERS_UNPRIVILEGED_COUNT_CYCLES", 2791874568),
    ("DIE0_TC_TCS_TC_MISC_TCS_STATS_TCS_STATS_COUNTERS_UNPRIVILEGED_COUNT_SCALAR_ALU_INSTRUCTION_0", 2791874648),
    ("DIE0_TC_TCS_TC_MISC_TCS_STATS_TCS_STATS_COUNTERS_UNPRIVILEGED_COUNT_VECTOR_ALU_INSTRUCTION_2", 2791874832),
    ("DIE0_TC_TCS_TC_MISC_TCS_STATS_TCS_STATS_COUNTERS_UNPRIVILEGED_COUNT_VPU_VALU_FMUL_OPS_1", 2791876296),
    ("DIE0_TC_TCS_TC_MISC_TCS_STATS_TCS_STATS_COUNTERS_UNPRIVILEGED_COUNT_VST_INSTRUCTION", 2791874848),
    ("DIE0_TC_TCS_TC_MISC_TCS_STATS_TCS_STATS_COUNTERS_UNPRIVILEGED_COUNT_VLD_INSTRUCTION_1", 2791874872),
    ("DIE0_TC_TCS_TC_MISC_TCS_STATS_TCS_STATS_COUNTERS_UNPRIVILEGED_COUNT_MXU_BUSY_0", 2791875016),
    ("DIE0_TC_TCS_TC_MISC_TCS_STATS_TCS_STATS_COUNTERS_UNPRIVILEGED_COUNT_MXU_BUSY_1", 2791875024),
    ("DIE0_TC_TCS_TC_MISC_TCS_STATS_TCS_STATS_COUNTERS_UNPRIVILEGED_COUNT_MXU_BUSY_2", 2791875032),
    ("DIE0_TC_TCS_TC_MISC_TCS_STATS_TCS_STATS_COUNTERS_UNPRIVILEGED_COUNT_MATMUL_LMR_BF16_MXU_0", 2791875000),
    ("DIE0_TC_TCS_TC_MISC_TCS_STATS_TCS_STATS_COUNTERS_UNPRIVILEGED_COUNT_MATMUL_VREG_F8_MXU_1", 2791874992),
    ("DIE0_TC_TCS_TC_MISC_TCS_STATS_TCS_STATS_COUNTERS_UNPRIVILEGED_COUNT_MATMUL_VREG_F32_MXU_0", 2791874952),
    ("DIE0_TC_TCS_TC_MISC_TCS_STATS_TCS_STATS_COUNTERS_UNPRIVILEGED_COUNT_MATPUSH_CYCLES_MXU_1", 2791875064),
    ("DIE0_TC_TCS_TC_MISC_TCS_STATS_TCS_STATS_COUNTERS_UNPRIVILEGED_COUNT_XLU_BUSY_1", 2791875160),
    ("DIE0_TC_TCS_TC_MISC_TCS_STATS_TCS_STATS_COUNTERS_UNPRIVILEGED_COUNT_XLU_BUSY_2", 2791875168),
    ("DIE0_TC_TCS_TC_MISC_TCS_STATS_TCS_STATS_COUNTERS_UNPRIVILEGED_COUNT_PACKED_XLU_0", 2791875136),
    ("DIE0_TC_TCS_TC_MISC_TCS_STATS_TCS_STATS_COUNTERS_UNPRIVILEGED_COUNT_TRANSPOSE_XLU_1", 2791875128),
    ("DIE1_TC_TCS_TC_MISC_TCS_STATS_TCS_STATS_COUNTERS_UNPRIVILEGED_COUNT_CYCLES", 3328745480),
    ("DIE1_TC_TCS_TC_MISC_TCS_STATS_TCS_STATS_COUNTERS_UNPRIVILEGED_COUNT_SCALAR_ALU_INSTRUCTION_0", 3328745560),
    ("DIE1_TC_TCS_TC_MISC_TCS_STATS_TCS_STATS_COUNTERS_UNPRIVILEGED_COUNT_VECTOR_ALU_INSTRUCTION_2", 3328745744),
    ("DIE1_TC_TCS_TC_MISC_TCS_STATS_TCS_STATS_COUNTERS_UNPRIVILEGED_COUNT_VPU_VALU_FMUL_OPS_1", 3328747208),
    ("DIE1_TC_TCS_TC_MISC_TCS_STATS_TCS_STATS_COUNTERS_UNPRIVILEGED_COUNT_VST_INSTRUCTION", 3328745760),
    ("DIE1_TC_TCS_TC_MISC_TCS_STATS_TCS_STATS_COUNTERS_UNPRIVILEGED_COUNT_VLD_INSTRUCTION_1", 3328745784),
    ("DIE1_TC_TCS_TC_MISC_TCS_STATS_TCS_STATS_COUNTERS_UNPRIVILEGED_COUNT_MXU_BUSY_0", 3328745928),
    ("DIE1_TC_TCS_TC_MISC_TCS_STATS_TCS_STATS_COUNTERS_UNPRIVILEGED_COUNT_MXU_BUSY_1", 3328745936),
    ("DIE1_TC_TCS_TC_MISC_TCS_STATS_TCS_STATS_COUNTERS_UNPRIVILEGED_COUNT_MXU_BUSY_2", 3328745944),
    ("DIE1_TC_TCS_TC_MISC_TCS_STATS_TCS_STATS_COUNTERS_UNPRIVILEGED_COUNT_MATMUL_LMR_BF16_MXU_0", 3328745912),
    ("DIE1_TC_TCS_TC_MISC_TCS_STATS_TCS_STATS_COUNTERS_UNPRIVILEGED_COUNT_MATMUL_VREG_F8_MXU_1", 3328745904),
    ("DIE1_TC_TCS_TC_MISC_TCS_STATS_TCS_STATS_COUNTERS_UNPRIVILEGED_COUNT_MATMUL_VREG_F32_MXU_0", 3328745864),
    ("DIE1_TC_TCS_TC_MISC_TCS_STATS_TCS_STATS_COUNTERS_UNPRIVILEGED_COUNT_MATPUSH_CYCLES_MXU_1", 3328745976),
    ("DIE1_TC_TCS_TC_MISC_TCS_STATS_TCS_STATS_COUNTERS_UNPRIVILEGED_COUNT_XLU_BUSY_1", 3328746072),
    ("DIE1_TC_TCS_TC_MISC_TCS_STATS_TCS_STATS_COUNTERS_UNPRIVILEGED_COUNT_XLU_BUSY_2", 3328746080),
    ("DIE1_TC_TCS_TC_MISC_TCS_STATS_TCS_STATS_COUNTERS_UNPRIVILEGED_COUNT_PACKED_XLU_0", 3328746048),
    ("DIE1_TC_TCS_TC_MISC_TCS_STATS_TCS_STATS_COUNTERS_UNPRIVILEGED_COUNT_TRANSPOSE_XLU_1", 3328746040),
    ("DIE0_HBM_0_SS_HBMC_0_CMN_HI_FREQ_STATS_COUNTERS_UNPRIVILEGED_RD_RESP_PS0", 2705724472),
    ("DIE0_HBM_3_SS_HBMC_15_CMN_HI_FREQ_STATS_COUNTERS_UNPRIVILEGED_WR_REQ_PS1", 2713981984),
    ("DIE1_HBM_2_SS_HBMC_7_CMN_HI_FREQ_STATS_COUNTERS_UNPRIVILEGED_RD_RESP_PS1", 3247707200),
    ("DIE1_HBM_1_SS_HBMC_4_CMN_HI_FREQ_STATS_COUNTERS_UNPRIVILEGED_PARTIAL_WRITE_REQ_PS0", 3245216808),
    ("DIE1_OCI_ICR_0_PERF_COUNTERS_FIFO_STATS_COUNTERS_UNPRIVILEGED_BN_RD_REQ_0_INSERTION_COUNT", 3238449440),
    ("DIE1_OCI_ICR_3_PERF_COUNTERS_FIFO_STATS_COUNTERS_UNPRIVILEGED_BN_WR_REQ_0_INSERTION_COUNT", 3238547800),
    ("DIE0_SC_0_SCTD_0_SC_STATS_COUNTERS_UNPRIVILEGED_COUNT_CYCLES", 2792513544),
    ("DIE0_SC_0_SCTD_3_SC_STATS_COUNTERS_UNPRIVILEGED_COUNT_TEC_SCALAR_ISSUE", 2795659280),
    ("DIE1_SC_1_SCTD_0_SC_STATS_COUNTERS_UNPRIVILEGED_COUNT_CYCLES", 3356647432),
    ("DIE1_SC_1_SCTD_9_SC_STATS_COUNTERS_UNPRIVILEGED_COUNT_TEC_S1_INSTRUCTION", 3366084648),
    ("DIE1_SC_1_SCTC_5_SC_STATS_COUNTERS_UNPRIVILEGED_COUNT_VECTOR_ISSUE", 3376037904),
    ("DIE1_SC_1_SCTC_15_SC_STATS_COUNTERS_UNPRIVILEGED_COUNT_VEX_INSTRUCTION", 3381280840),
    ("DIE0_SC_1_SCS_SC_STATS_COUNTERS_UNPRIVILEGED_COUNT_CYCLES", 2845184008),
    ("DIE0_SC_1_SCS_SC_STATS_COUNTERS_UNPRIVILEGED_COUNT_SCALAR_ISSUE", 2845184016),
    ("DIE0_SC_1_SCS_SC_STATS_COUNTERS_UNPRIVILEGED_COUNT_SMISC_INSTRUCTION", 2845184048),
];

/// A counter value that differs per host, chip, sample and counter, deterministically.
fn value(host: u64, chip: u64, sample: u64, index: u64, id: u64) -> u64 {
    if id == 3257466888 {
        // Cycles: 1–2 ms at 1.75 GHz.
        return 1_750_000 + 250_000 * sample + 10_000 * chip + 1_000 * host;
    }
    (id % 9973) * (index + 1) * (sample + 2) + 37 * chip + 101 * host
}

fn host_space(host: u64) -> Vec<u8> {
    let mut space = XSpaceBuilder::new().hostname(&format!("host{host}"));
    space = space.plane("/host:CPU", |p| {
        p.line(1, "python", 1_000, |l| {
            l.event("train_step", 0, 2_000_000_000);
        });
    });
    for chip in 0..2u64 {
        let global_chip = host * 2 + chip;
        space = space.plane(&format!("/device:TPU:{chip}"), |p| {
            p.id(chip as i64 + 1);
            p.stat("device_id", chip as i64);
            p.stat("global_chip_id", global_chip as i64);
            p.stat("device_type_string", "TPU v6 Lite");
            for sample in 0..2u64 {
                let line_id = sample as i64 + 1;
                let line_name = if sample == 0 { "jit_train_step(1)" } else { "jit_eval_step(2)" };
                p.line(line_id, line_name, 1_000, |l| {
                    let counters = TC_COUNTERS
                        .iter()
                        .map(|&(suffix, id)| (format!("{TC_PREFIX}{suffix}"), id))
                        .chain(ICI_COUNTERS.iter().map(|&(name, id)| (name.to_string(), id)))
                        // SparseCore and HBM counters on the second sample only: the first
                        // keeps XProf's zero rows for absent counters covered.
                        .chain(
                            SC_HBM_COUNTERS
                                .iter()
                                .filter(|_| sample == 1)
                                .map(|&(name, id)| (format!("VF_CHIP_{name}"), id)),
                        );
                    for (index, (name, id)) in counters.enumerate() {
                        let v = value(host, chip, sample, index as u64, id);
                        let e = l
                            .event(&name, 1_000 * index as i64, 1_000)
                            .stat("performance_counter_id", id)
                            .stat("counter_value", v);
                        // Only some counters carry a description and a set, as on real captures.
                        if index % 3 == 0 {
                            e.stat(
                                "performance_counter_description",
                                format!("counts {}", name.to_lowercase()).as_str(),
                            )
                            .stat("performance_counter_sets", if index % 2 == 0 { "tc_basic" } else { "tc_mxu" });
                        }
                    }
                });
            }
        });
    }
    space.to_bytes()
}

/// A GPU host whose counters carry their own descriptions and sets, with ids and names
/// XProf's built-in TPU counter database does not know (except two probes: a known TPU
/// counter name under an unknown id, and an unknown name under a known id).
fn gpu_space() -> Vec<u8> {
    XSpaceBuilder::new()
        .hostname("gpuhost")
        .plane("/host:CPU", |p| {
            p.line(1, "python", 1_000, |l| {
                l.event("train_step", 0, 1_000_000);
            });
        })
        .plane("/device:GPU:0", |p| {
            p.stat("device_id", 0i64);
            p.line(3, "Stream #3(Compute)", 1_000, |l| {
                let counters: [(&str, u64, &str, &str); 4] = [
                    ("sm__cycles_elapsed.avg", 11, "SM cycles elapsed", "basic"),
                    ("dram__bytes_read.sum", 12, "DRAM bytes read", "memory"),
                    (&format!("{TC_PREFIX}CYCLES"), 13, "probe: TPU name, other id", "probe"),
                    ("probe_unknown_name", 3257466888, "probe: other name, TPU id", "probe"),
                ];
                for (index, (name, id, description, set)) in counters.into_iter().enumerate() {
                    l.event(name, 100 * index as i64, 100)
                        .stat("performance_counter_id", id)
                        .stat("counter_value", 1_000 + 7 * index as u64)
                        .stat("performance_counter_description", description)
                        .stat("performance_counter_sets", set);
                }
            });
        })
        .to_bytes()
}

/// A TPU v7x host: one chip, two samples; cycle counters near 2 ms at 1.9 GHz (the
/// TensorCore's a little under its power manager's, which include skipped clocks), every
/// other counter a deterministic value. Die 1's counters on the second sample only.
fn v7x_space() -> Vec<u8> {
    XSpaceBuilder::new()
        .hostname("host0")
        .plane("/host:CPU", |p| {
            p.line(1, "python", 1_000, |l| {
                l.event("train_step", 0, 2_000_000_000);
            });
        })
        .plane("/device:TPU:0", |p| {
            p.id(1);
            p.stat("device_id", 0i64);
            p.stat("global_chip_id", 0i64);
            p.stat("device_type_string", "TPU v7x");
            for sample in 0..2u64 {
                p.line(sample as i64 + 1, "jit_train_step(1)", 1_000, |l| {
                    let counters = V7X_COUNTERS.iter().filter(|(name, _)| sample == 1 || !name.starts_with("DIE1_"));
                    for (index, &(name, id)) in counters.enumerate() {
                        let v = if name.ends_with("CYCLE_COUNT") {
                            3_800_000 + 100_000 * sample
                        } else if name.ends_with("_CYCLES") && !name.contains("MATPUSH") {
                            3_700_000 + 100_000 * sample + 1_000 * index as u64
                        } else {
                            (id % 9973) * (index as u64 + 1) * (sample + 2)
                        };
                        l.event(&format!("VF_CHIP_{name}"), 1_000 * index as i64, 1_000)
                            .stat("performance_counter_id", id)
                            .stat("counter_value", v);
                    }
                });
            }
        })
        .to_bytes()
}

fn write_gz(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    // mtime 0 and no file name in the header: the same bytes every run.
    let mut gz = GzEncoder::new(Vec::new(), Compression::best());
    gz.write_all(bytes)?;
    std::fs::write(path, gz.finish()?)?;
    println!("wrote {}", path.display());
    Ok(())
}

fn main() -> std::io::Result<()> {
    let out: PathBuf =
        std::env::args().nth(1).map(PathBuf::from).unwrap_or_else(|| PathBuf::from("testdata/tpu-synthetic"));
    let dir = out.join("counters/plugins/profile/run");
    std::fs::create_dir_all(&dir)?;
    for host in 0..2u64 {
        write_gz(&dir.join(format!("host{host}.xplane.pb.gz")), &host_space(host))?;
    }
    let dir = out.join("counters-gpu/plugins/profile/run");
    std::fs::create_dir_all(&dir)?;
    write_gz(&dir.join("gpuhost.xplane.pb.gz"), &gpu_space())?;
    let dir = out.join("counters-v7x/plugins/profile/run");
    std::fs::create_dir_all(&dir)?;
    write_gz(&dir.join("host0.xplane.pb.gz"), &v7x_space())?;
    Ok(())
}
