//! The cache directory holds only what oxprof wrote, and oxprof touches nothing else: a
//! directory of someone's files is refused, and in oxprof's own directory `clear`, the
//! trim, reads and writes leave alone every file that is not an entry (a `v1/`, `v2/`,
//! `v10/` of theirs, `*.bin` files of theirs, links, FIFOs). A FIFO at an entry's name
//! never blocks a read.

use oxprof_diskcache::DiskCache;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// Everything under `dir`, links not followed: path → what it is (a file's bytes, a link's
/// target, "dir", "fifo").
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).unwrap() {
            let path = entry.unwrap().path();
            let kind = std::fs::symlink_metadata(&path).unwrap().file_type();
            let what = if kind.is_symlink() {
                format!("link to {}", std::fs::read_link(&path).unwrap().display())
            } else if kind.is_dir() {
                stack.push(path.clone());
                "dir".to_string()
            } else if kind.is_file() {
                format!("file {:?}", std::fs::read(&path).unwrap())
            } else {
                "special".to_string()
            };
            out.insert(path.strip_prefix(dir).unwrap().to_path_buf(), what);
        }
    }
    out
}

/// A FIFO at `path` (opening it for reading would wait for a writer forever).
#[cfg(unix)]
fn mkfifo(path: &Path) {
    use std::os::unix::ffi::OsStrExt;
    let name = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o644) }, 0, "mkfifo {}", path.display());
}

/// An entry's name that is not any key oxprof computes.
fn entry_name(n: u8) -> String {
    format!("{:032x}.bin", u128::from(n) * 0x1111_1111)
}

fn set_old(path: &Path) {
    let long_ago = SystemTime::UNIX_EPOCH + Duration::from_secs(946_684_800); // 2000-01-01
    std::fs::File::options().write(true).open(path).unwrap().set_modified(long_ago).unwrap();
}

/// A directory as a user keeps it: folders named like layouts, `*.bin` files (one named
/// like an entry), a link out of it and a FIFO.
#[cfg(unix)]
fn users_directory(dir: &Path, outside: &Path) {
    for (folder, file) in [("v1", "thesis.bin"), ("v2", "photo.jpg"), ("v10", "data.bin")] {
        std::fs::create_dir_all(dir.join(folder)).unwrap();
        std::fs::write(dir.join(folder).join(file), format!("{folder}'s own")).unwrap();
    }
    std::fs::write(dir.join("v1").join(entry_name(1)), b"not oxprof's").unwrap();
    std::fs::write(dir.join("notes.txt"), b"remember").unwrap();
    std::fs::write(outside.join("target.bin"), b"OXPCACHE looks like an entry").unwrap();
    std::os::unix::fs::symlink(outside.join("target.bin"), dir.join("v1").join(entry_name(2))).unwrap();
    mkfifo(&dir.join("v1").join(entry_name(3)));
}

#[cfg(unix)]
#[test]
fn a_directory_of_someone_elses_files_is_refused_and_left_as_it_was() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, outside) = (tmp.path().join("home"), tmp.path().join("outside"));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    users_directory(&home, &outside);
    let before = (snapshot(&home), snapshot(&outside));
    match DiskCache::open(&home, 1 << 20) {
        Ok(cache) => {
            // What `oxprof cache clear` and a full cache would do next.
            let _ = cache.clear();
            let _ = cache.put(&"0".repeat(32), &[0u8; 4096]);
        }
        Err(e) => {
            let message = e.to_string();
            assert_eq!(message.lines().count(), 1, "{message}");
            assert!(message.starts_with(&home.display().to_string()), "{message}");
            assert!(message.contains("not oxprof's cache directory"), "{message}");
            assert!(message.contains("--cache-dir") && message.contains("--no-cache"), "{message}");
        }
    }
    assert_eq!((snapshot(&home), snapshot(&outside)), before, "nothing of theirs changed");
    // One file is enough to refuse a directory.
    let lone = tmp.path().join("lone");
    std::fs::create_dir(&lone).unwrap();
    std::fs::write(lone.join("a.txt"), b"mine").unwrap();
    if let Ok(cache) = DiskCache::open(&lone, 1 << 20) {
        let _ = cache.clear();
    }
    assert_eq!(snapshot(&lone).len(), 1, "{:?}", snapshot(&lone));
}

#[cfg(unix)]
#[test]
fn in_its_own_directory_oxprof_removes_only_its_entries() {
    let tmp = tempfile::tempdir().unwrap();
    let (root, outside) = (tmp.path().join("cache"), tmp.path().join("outside"));
    std::fs::create_dir_all(&outside).unwrap();
    // A small bound: the trim must evict.
    let cache = DiskCache::open(&root, 8 << 10).unwrap();
    // Files of the user's, inside oxprof's directory, older than any entry.
    users_directory(&root, &outside);
    for big in ["thesis.bin", &entry_name(1)] {
        std::fs::write(root.join("v1").join(big), vec![7u8; 64 << 10]).unwrap();
        set_old(&root.join("v1").join(big));
    }
    let keys: Vec<String> = (0..20).map(|i| format!("{:032x}", 0xabc0 + i)).collect();
    // Everything but oxprof's own files.
    let theirs = |snapshot: BTreeMap<PathBuf, String>| {
        let ours: Vec<PathBuf> = keys.iter().map(|k| Path::new("v1").join(format!("{k}.bin"))).collect();
        snapshot
            .into_iter()
            .filter(|(path, _)| {
                !ours.contains(path) && !path.ends_with("OXPROF-CACHE.TAG") && !path.ends_with("CACHEDIR.TAG")
            })
            .collect::<BTreeMap<_, _>>()
    };
    let before = (theirs(snapshot(&root)), snapshot(&outside));
    assert!(before.0.len() >= 10, "{:?}", before.0);

    // Writes: twenty 1 KiB entries in an 8 KiB cache, so the trim evicts many times.
    for key in &keys {
        cache.put(key, &[1u8; 1000]).unwrap();
    }
    let kept = keys.iter().filter(|k| cache.get(k).is_some()).count();
    assert!((1..20).contains(&kept), "the trim evicted oxprof's entries: {kept} kept");
    assert_eq!((theirs(snapshot(&root)), snapshot(&outside)), before, "the trim left theirs alone");
    // Reads of the link and the FIFO at entry names: misses.
    for n in [2u8, 3] {
        assert_eq!(cache.get(entry_name(n).trim_end_matches(".bin")), None);
    }
    // A write under those names does not replace them (nor write through the link).
    for n in [1u8, 2, 3] {
        let _ = cache.put(entry_name(n).trim_end_matches(".bin"), b"new");
    }
    assert_eq!((theirs(snapshot(&root)), snapshot(&outside)), before, "reads and writes left theirs alone");

    // Clear: every entry of oxprof's goes, nothing else.
    let removed = cache.clear().unwrap();
    assert_eq!(removed.entries as usize, kept, "{removed:?}");
    assert_eq!(cache.usage().entries, 0);
    assert_eq!((theirs(snapshot(&root)), snapshot(&outside)), before, "clear left theirs alone");
    let left: Vec<_> = snapshot(&root).into_keys().filter(|p| !before.0.contains_key(p)).collect();
    assert_eq!(left, [Path::new("CACHEDIR.TAG"), Path::new("OXPROF-CACHE.TAG")], "only the marks are left besides");
    let tag = std::fs::read_to_string(root.join("CACHEDIR.TAG")).unwrap();
    assert!(tag.starts_with("Signature: 8a477f597d28d172789f06886806bc55"), "{tag}");
}

/// A directory an oxprof from before markers filled (entries, a temporary file of a writer
/// that died) is taken over; a later `clear` empties it.
#[test]
fn an_older_oxprofs_directory_is_adopted() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("cache");
    {
        let cache = DiskCache::open(&root, 1 << 20).unwrap();
        cache.put(&"1".repeat(32), b"an entry").unwrap();
    }
    // As it was before markers: no marker, no tag, an abandoned temporary file.
    for name in ["OXPROF-CACHE.TAG", "CACHEDIR.TAG"] {
        let _ = std::fs::remove_file(root.join(name));
    }
    std::fs::write(root.join("v1/123-4.tmp"), [0u8; 40]).unwrap();
    std::fs::create_dir(root.join("v0")).unwrap();
    let cache = DiskCache::open(&root, 1 << 20).unwrap();
    assert_eq!(cache.get(&"1".repeat(32)).as_deref(), Some(&b"an entry"[..]));
    assert_eq!(cache.clear().unwrap().entries, 1);
    assert!(!root.join("v0").exists(), "an empty layout directory of oxprof's goes");
    assert!(root.join("v1").is_dir());
    // An empty directory is taken too, a file is not a directory.
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    DiskCache::open(&empty, 1 << 20).unwrap();
    let file = tmp.path().join("file");
    std::fs::write(&file, b"").unwrap();
    let message = DiskCache::open(&file, 1 << 20).unwrap_err().to_string();
    assert!(message.contains("cannot write the analysis cache"), "{message}");
}

/// Many processes opening one new directory at once all see it as theirs.
#[test]
fn concurrent_openers_of_a_new_directory_all_succeed() {
    for round in 0..20 {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join(format!("cache{round}"));
        let openers: Vec<_> = (0..8)
            .map(|_| {
                let root = root.clone();
                std::thread::spawn(move || DiskCache::open(&root, 1 << 20).map(|_| ()).map_err(|e| e.to_string()))
            })
            .collect();
        for opener in openers {
            opener.join().unwrap().unwrap();
        }
    }
}

/// An entry replaced by a link to a FIFO, or by a FIFO: a read is a prompt miss (opening a
/// FIFO for reading waits for a writer forever), and both stay where they are.
#[cfg(unix)]
#[test]
fn a_fifo_at_an_entrys_name_is_a_prompt_miss() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("cache");
    let cache = DiskCache::open(&root, 1 << 20).unwrap();
    let (linked, plain) = ("a".repeat(32), "b".repeat(32));
    for key in [&linked, &plain] {
        cache.put(key, b"an entry").unwrap();
        std::fs::remove_file(cache.dir().join(format!("{key}.bin"))).unwrap();
    }
    mkfifo(&tmp.path().join("fifo"));
    std::os::unix::fs::symlink(tmp.path().join("fifo"), cache.dir().join(format!("{linked}.bin"))).unwrap();
    mkfifo(&cache.dir().join(format!("{plain}.bin")));
    let before = snapshot(tmp.path());
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let cache = DiskCache::open(&root, 1 << 20).unwrap();
        let _ = done.send([cache.get(&linked), cache.get(&plain)]);
    });
    let got = finished.recv_timeout(Duration::from_secs(60)).expect("a read of a FIFO entry hung");
    assert_eq!(got, [None, None]);
    assert_eq!(snapshot(tmp.path()), before);
}
