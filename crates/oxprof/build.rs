//! Link settings of the `oxprof` binary: relative relocations packed (`DT_RELR`) where the
//! C library that will load the binary understands them.
//!
//! The binary is position-independent and its read-only data holds ~190,000 pointers, each
//! with a 24-byte `R_X86_64_RELATIVE` entry the loader reads at every start: 4.6 MB of
//! `.rela.dyn` paged in before `main`, part of every run's peak RSS. Packed, they take
//! ~50 KB (measured: an idle `oxprof serve` 16.4 → 11.8 MB, a cold overview of the 85 MB
//! profile 128 → 123 MB). Address-space randomization is unchanged.
//!
//! Only for a native build on glibc ≥ 2.36 (the first loader that reads `DT_RELR`; GNU ld
//! then also records the `GLIBC_ABI_DT_RELR` requirement, so an older loader refuses the
//! binary with a message instead of crashing). Builds with their own linker — the wheel's
//! zig build for manylinux (glibc 2.28), cross builds — are left as they were, and
//! `OXPROF_PACK_RELOCS=0` turns it off.
//!
//! And identical code folded (`--icf=all`) in a release build linked by rust-lld (what
//! rustc links x86_64-unknown-linux-gnu with by default): generic code often compiles to
//! the same machine code for different types, and one copy is kept (0.6 MB of a 61 MB
//! binary; Rust makes no promise that two functions have different addresses).
//! `OXPROF_FOLD_CODE=0` turns it off.

use std::env;

fn main() {
    println!("cargo:rerun-if-env-changed=OXPROF_PACK_RELOCS");
    println!("cargo:rerun-if-env-changed=RUSTC_LINKER");
    let target = env::var("TARGET").unwrap_or_default();
    let linker_variable = format!("CARGO_TARGET_{}_LINKER", target.to_uppercase().replace(['-', '.'], "_"));
    println!("cargo:rerun-if-env-changed={linker_variable}");

    let linux_gnu = env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux")
        && env::var("CARGO_CFG_TARGET_ENV").as_deref() == Ok("gnu");
    let native = env::var("HOST").ok().as_deref() == Some(target.as_str());
    let own_linker = env::var_os(&linker_variable).is_some() || env::var_os("RUSTC_LINKER").is_some();
    let wanted = env::var("OXPROF_PACK_RELOCS").as_deref() != Ok("0");
    if linux_gnu && native && !own_linker && wanted && host_glibc_reads_relr() {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
        // Lets the binary's tests know what to expect of it.
        println!("cargo:rustc-env=OXPROF_PACKED_RELOCS=1");
    } else {
        println!("cargo:rustc-env=OXPROF_PACKED_RELOCS=0");
    }

    println!("cargo:rerun-if-env-changed=OXPROF_FOLD_CODE");
    let release = env::var("PROFILE").as_deref() == Ok("release");
    let rust_lld = target == "x86_64-unknown-linux-gnu" && !own_linker && !linker_chosen_by_flags();
    if release && native && rust_lld && env::var("OXPROF_FOLD_CODE").as_deref() != Ok("0") {
        println!("cargo:rustc-link-arg-bins=-Wl,--icf=all");
    }
}

/// Whether RUSTFLAGS choose the linker (or turn rust-lld off): then `--icf` may be unknown to it.
fn linker_chosen_by_flags() -> bool {
    let flags = env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    ["linker", "link-self-contained", "fuse-ld"].iter().any(|word| flags.contains(word))
}

/// Whether this machine's glibc (the one a native build links against) is 2.36 or later.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn host_glibc_reads_relr() -> bool {
    unsafe extern "C" {
        fn gnu_get_libc_version() -> *const std::ffi::c_char;
    }
    // SAFETY: glibc returns a pointer to a static NUL-terminated string.
    let version = unsafe { std::ffi::CStr::from_ptr(gnu_get_libc_version()) };
    let mut parts = version.to_str().unwrap_or("").split('.').map(|part| part.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (major, minor) >= (2, 36)
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn host_glibc_reads_relr() -> bool {
    false
}
