//! Surviving a mapped file that shrinks while it is decoded.
//!
//! Reading a page of a memory-mapped file past its current end raises SIGBUS, whose
//! default action kills the process: a server decoding a profile that someone truncates
//! in place would die with every request it was serving. This module installs (once per
//! process, on first use) a SIGBUS handler that recognises a fault inside a mapping
//! registered here, maps anonymous zero pages over the rest of that mapping, marks it as
//! changed and returns: the faulting read runs again and reads zeros, the decoder finishes
//! (on garbage, which it treats as it treats any bad input) and the loader reports
//! [`crate::LoadError::FileChanged`] instead of whatever the decoder made of it.
//!
//! Safety argument:
//! * The handler only loads atomics and calls `mmap`, both async-signal-safe. It never
//!   allocates or locks.
//! * A mapping is registered after it is created and unregistered before it is unmapped
//!   ([`GuardedMap`]'s field order), and only while one decode reads it; an address inside
//!   a registered range is therefore inside a live mapping of ours, and replacing its pages
//!   with zeros changes nothing but the bytes the decoder sees.
//! * The decoder treats the mapped bytes as hostile input that may change at any time
//!   (another process can also rewrite the file in place): every read is bounds-checked,
//!   and the UTF-8 it keeps is validated after being copied, never in place.
//! * Faults outside every registered mapping (and SIGBUS sent by `kill`) go to the handler
//!   that was installed before ours (Rust's runtime installs one to report stack
//!   overflows), or, when that was the default action, restore the default and return, so
//!   the faulting instruction faults again and the process dies as it would have.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Mappings decoded at the same time (one per concurrent load of a large plain file).
/// A load that finds no free slot reads the file into memory instead.
const SLOTS: usize = 64;

struct Slot {
    /// Start address of the mapping; 0 when the slot is free.
    start: AtomicUsize,
    /// Length in bytes; 0 while the slot is being claimed or released.
    len: AtomicUsize,
    changed: AtomicBool,
}

#[allow(clippy::declare_interior_mutable_const)] // only used to initialise the array
const FREE: Slot = Slot { start: AtomicUsize::new(0), len: AtomicUsize::new(0), changed: AtomicBool::new(false) };
static REGISTRY: [Slot; SLOTS] = [FREE; SLOTS];
static PAGE_SIZE: AtomicUsize = AtomicUsize::new(4096);
/// The SIGBUS action before ours; set once, before ours is installed.
static PREVIOUS: OnceLock<Option<libc::sigaction>> = OnceLock::new();

/// A memory-mapped file registered with the SIGBUS handler.
pub(crate) struct GuardedMap {
    // Field order matters: the registration is dropped (released) before the mapping.
    guard: Registration,
    map: memmap2::Mmap,
}

impl GuardedMap {
    /// Maps `file` read-only and registers the mapping; `None` when the handler could not
    /// be installed or every slot is taken (callers then read the file instead).
    pub(crate) fn map(file: &std::fs::File) -> std::io::Result<Option<GuardedMap>> {
        if !install_handler() {
            return Ok(None);
        }
        // SAFETY: a private read-only mapping; the file may change under it, which this
        // module exists to survive (see the safety argument above).
        let map = unsafe { memmap2::Mmap::map(file) }?;
        let Some(guard) = Registration::new(map.as_ptr() as usize, map.len()) else {
            return Ok(None);
        };
        Ok(Some(GuardedMap { guard, map }))
    }

    /// The mapped bytes.
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.map
    }

    /// The mapping, to advise on ranges.
    pub(crate) fn mmap(&self) -> &memmap2::Mmap {
        &self.map
    }

    /// Whether a read faulted because the file shrank (its pages now read as zeros).
    pub(crate) fn changed(&self) -> bool {
        REGISTRY[self.guard.0].changed.load(Ordering::Acquire)
    }
}

/// A claimed slot of [`REGISTRY`], released on drop.
struct Registration(usize);

impl Registration {
    fn new(start: usize, len: usize) -> Option<Registration> {
        if start == 0 || len == 0 {
            return None;
        }
        for (i, slot) in REGISTRY.iter().enumerate() {
            if slot.start.compare_exchange(0, start, Ordering::AcqRel, Ordering::Relaxed).is_ok() {
                slot.changed.store(false, Ordering::Release);
                slot.len.store(len, Ordering::Release);
                return Some(Registration(i));
            }
        }
        None
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        let slot = &REGISTRY[self.0];
        slot.len.store(0, Ordering::Release);
        slot.start.store(0, Ordering::Release);
    }
}

/// Installs the handler once per process; false if that failed.
fn install_handler() -> bool {
    static INSTALLED: OnceLock<bool> = OnceLock::new();
    *INSTALLED.get_or_init(|| {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        if let Ok(page) = usize::try_from(page)
            && page.is_power_of_two()
        {
            PAGE_SIZE.store(page, Ordering::Relaxed);
        }
        // SAFETY: an all-zero `sigaction` is a valid value (no handler, empty mask, no
        // flags); `sigaction` with a null new action only reads the current one.
        let previous = unsafe {
            let mut previous: libc::sigaction = std::mem::zeroed();
            (libc::sigaction(libc::SIGBUS, std::ptr::null(), &mut previous) == 0).then_some(previous)
        };
        if PREVIOUS.set(previous).is_err() || previous.is_none() {
            return false;
        }
        // SAFETY: as above; `on_sigbus` has the signature SA_SIGINFO handlers are called
        // with, and only does async-signal-safe work.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            let handler: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) = on_sigbus;
            action.sa_sigaction = handler as libc::sighandler_t;
            action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(libc::SIGBUS, &action, std::ptr::null_mut()) == 0
        }
    })
}

extern "C" fn on_sigbus(signal: libc::c_int, info: *mut libc::siginfo_t, context: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid `siginfo_t` to SA_SIGINFO handlers.
    let (code, address) = unsafe { ((*info).si_code, (*info).si_addr() as usize) };
    // si_code > 0: raised by the kernel for a memory access, not sent by `kill`.
    if code > 0 {
        for slot in &REGISTRY {
            let start = slot.start.load(Ordering::Acquire);
            let len = slot.len.load(Ordering::Acquire);
            if start == 0 || address < start || address - start >= len {
                continue;
            }
            let page = PAGE_SIZE.load(Ordering::Relaxed);
            let from = address & !(page - 1);
            let end = (start + len).div_ceil(page) * page;
            // SAFETY: [from, end) lies inside a live mapping of ours (registered mappings
            // are unregistered before they are unmapped); replacing its pages with private
            // zero pages only changes what the decoder reads. `mmap` is async-signal-safe.
            let zeros = unsafe {
                libc::mmap(
                    from as *mut libc::c_void,
                    end - from,
                    libc::PROT_READ,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                    -1,
                    0,
                )
            };
            if zeros != libc::MAP_FAILED {
                slot.changed.store(true, Ordering::Release);
                return;
            }
            break;
        }
    }
    // Not ours: what would have happened without this handler.
    match PREVIOUS.get().copied().flatten() {
        Some(previous) if previous.sa_sigaction != libc::SIG_DFL && previous.sa_sigaction != libc::SIG_IGN => {
            if previous.sa_flags & libc::SA_SIGINFO != 0 {
                // SAFETY: with SA_SIGINFO, `sa_sigaction` is a three-argument handler.
                let handler: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                    unsafe { std::mem::transmute(previous.sa_sigaction) };
                handler(signal, info, context);
            } else {
                // SAFETY: without SA_SIGINFO, `sa_sigaction` is a one-argument handler.
                let handler: extern "C" fn(libc::c_int) = unsafe { std::mem::transmute(previous.sa_sigaction) };
                handler(signal);
            }
        }
        _ => {
            // SAFETY: restoring the default action is async-signal-safe; returning then
            // repeats the fault, which now terminates the process as it would have.
            unsafe {
                let mut default: libc::sigaction = std::mem::zeroed();
                default.sa_sigaction = libc::SIG_DFL;
                libc::sigemptyset(&mut default.sa_mask);
                libc::sigaction(libc::SIGBUS, &default, std::ptr::null_mut());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn file_of(len: usize) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mapped.bin");
        let mut file = std::fs::File::create(&path).unwrap();
        file.write_all(&vec![7u8; len]).unwrap();
        (dir, path)
    }

    /// Reads every page, as the decoder would (volatile, so the reads happen).
    fn sum_pages(bytes: &[u8]) -> u64 {
        bytes.iter().step_by(4096).map(|b| u64::from(unsafe { std::ptr::read_volatile(b) })).sum()
    }

    #[test]
    fn a_mapping_whose_file_shrinks_reads_zeros_and_says_it_changed() {
        let (_dir, path) = file_of(8 << 20);
        let file = std::fs::OpenOptions::new().read(true).write(true).open(&path).unwrap();
        let map = GuardedMap::map(&file).unwrap().expect("the handler installs on Linux");
        assert_eq!(sum_pages(map.bytes()), 7 * 2048);
        assert!(!map.changed());
        file.set_len(1 << 20).unwrap();
        // The first MiB is still the file's; the rest faults and reads as zeros.
        assert_eq!(sum_pages(map.bytes()), 7 * 256);
        assert!(map.changed());
        drop(map);
        // The slot is free again: a new mapping starts unchanged.
        let again = GuardedMap::map(&file).unwrap().unwrap();
        assert!(!again.changed());
    }

    /// A SIGBUS outside every registered mapping still kills the process, as it would
    /// without the handler (checked in a child process running this same test).
    #[test]
    fn a_fault_outside_registered_mappings_still_kills_the_process() {
        const CHILD: &str = "OXPROF_MAPGUARD_CHILD";
        if std::env::var_os(CHILD).is_some() {
            let (_dir, path) = file_of(2 << 20);
            let file = std::fs::OpenOptions::new().read(true).write(true).open(&path).unwrap();
            let _registered = GuardedMap::map(&file).unwrap().unwrap();
            // SAFETY: a test of what happens when a mapped file shrinks.
            let unregistered = unsafe { memmap2::Mmap::map(&file) }.unwrap();
            file.set_len(4096).unwrap();
            sum_pages(&unregistered);
            unreachable!("reading past the end of an unregistered mapping must raise SIGBUS");
        }
        let status = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "mapguard::tests::a_fault_outside_registered_mappings_still_kills_the_process"])
            .env(CHILD, "1")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap();
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(libc::SIGBUS), "{status:?}");
    }
}
