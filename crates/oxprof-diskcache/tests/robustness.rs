//! The cache's promises under abuse: torn and corrupt entries are misses, other layouts
//! are never read, concurrent writers never expose a partial entry, the bound holds with
//! least recently used entries going first, and a failed write is only an error value.

use oxprof_diskcache::{DiskCache, FileIdentity, LAYOUT, entry_key, sample_hash};
use std::sync::atomic::Ordering;

fn identity(byte: u8) -> FileIdentity {
    let block = vec![byte; 1024];
    FileIdentity {
        size: 10_000,
        modified_ns: 1_700_000_000_000_000_000,
        sample_hash: sample_hash([&block[..], &block]),
        ..FileIdentity::default()
    }
}

#[test]
fn a_stored_payload_comes_back_and_keys_follow_the_file() {
    let root = tempfile::tempdir().unwrap();
    let cache = DiskCache::open(root.path(), 1 << 20).unwrap();
    let key = entry_key("opstats", &identity(1), "");
    assert_eq!(cache.get(&key), None);
    cache.put(&key, b"payload").unwrap();
    assert_eq!(cache.get(&key).as_deref(), Some(&b"payload"[..]));
    // Any change of the file, the kind or the extra inputs is another key.
    assert_ne!(key, entry_key("opstats", &identity(2), ""));
    assert_ne!(key, entry_key("trace", &identity(1), ""));
    assert_ne!(key, entry_key("opstats", &identity(1), "host"));
    let mut touched = identity(1);
    touched.modified_ns += 1;
    assert_ne!(key, entry_key("opstats", &touched, ""));
    assert_ne!(sample_hash([&b"abc"[..], b"xyz"]), sample_hash([&b"abc"[..], b"xyw"]));
}

#[test]
fn torn_and_corrupt_entries_are_misses_and_are_removed() {
    let root = tempfile::tempdir().unwrap();
    let cache = DiskCache::open(root.path(), 1 << 20).unwrap();
    let payload = vec![7u8; 10_000];
    for damage in ["truncate", "flip", "empty"] {
        let key = entry_key("opstats", &identity(3), damage);
        cache.put(&key, &payload).unwrap();
        let path = cache.dir().join(format!("{key}.bin"));
        let mut bytes = std::fs::read(&path).unwrap();
        match damage {
            "truncate" => bytes.truncate(bytes.len() - 1),
            "flip" => *bytes.last_mut().unwrap() ^= 1,
            _ => bytes.clear(),
        }
        std::fs::write(&path, &bytes).unwrap();
        assert_eq!(cache.get(&key), None, "{damage}");
        assert!(!path.exists(), "{damage}: the damaged entry stays");
    }
    assert_eq!(cache.counters().rejected.load(Ordering::Relaxed), 3);
}

#[test]
fn another_layout_is_never_read() {
    let root = tempfile::tempdir().unwrap();
    let cache = DiskCache::open(root.path(), 1 << 20).unwrap();
    let key = entry_key("opstats", &identity(4), "");
    cache.put(&key, b"new layout").unwrap();
    let path = cache.dir().join(format!("{key}.bin"));
    // The same entry claiming the next layout (as a newer oxprof would write it).
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[8..12].copy_from_slice(&(LAYOUT + 1).to_le_bytes());
    std::fs::write(&path, &bytes).unwrap();
    assert_eq!(cache.get(&key), None);
    // Entries of other layouts live in other directories, and clear removes them too (an
    // older oxprof's entry: its header with that layout's number).
    let old = root.path().join("v0");
    std::fs::create_dir_all(&old).unwrap();
    bytes[8..12].copy_from_slice(&0u32.to_le_bytes());
    std::fs::write(old.join(format!("{key}.bin")), &bytes).unwrap();
    assert_eq!(cache.get(&key), None);
    cache.put(&key, b"x").unwrap();
    let cleared = cache.clear().unwrap();
    assert_eq!(cleared.entries, 2, "this layout's entry and the older one");
    assert!(!old.exists());
    assert_eq!(cache.get(&key), None);
}

#[test]
fn concurrent_writers_and_readers_see_whole_entries_only() {
    let root = tempfile::tempdir().unwrap();
    let key = entry_key("opstats", &identity(5), "");
    let payload: Vec<u8> = (0..2_000_000u32).map(|i| (i % 251) as u8).collect();
    std::thread::scope(|s| {
        for _ in 0..6 {
            s.spawn(|| {
                // A handle each, as separate processes would have.
                let cache = DiskCache::open(root.path(), 1 << 30).unwrap();
                for _ in 0..10 {
                    cache.put(&key, &payload).unwrap();
                    if let Some(found) = cache.get(&key) {
                        assert!(found == payload, "a partial or mixed entry was read");
                    }
                }
            });
        }
    });
    let cache = DiskCache::open(root.path(), 1 << 30).unwrap();
    assert!(cache.get(&key).is_some_and(|p| p == payload));
    let leftovers: Vec<_> = std::fs::read_dir(cache.dir())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left behind: {leftovers:?}");
}

#[test]
fn the_bound_holds_and_recently_used_entries_stay() {
    let root = tempfile::tempdir().unwrap();
    let cache = DiskCache::open(root.path(), 35_000).unwrap();
    let payload = vec![1u8; 10_000];
    let keys: Vec<String> = (0..3).map(|i| entry_key("opstats", &identity(10 + i), "")).collect();
    for key in &keys {
        cache.put(key, &payload).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // The oldest is used again, so the second oldest goes when a fourth arrives.
    assert!(cache.get(&keys[0]).is_some());
    std::thread::sleep(std::time::Duration::from_millis(20));
    let fourth = entry_key("opstats", &identity(20), "");
    cache.put(&fourth, &payload).unwrap();
    assert!(cache.usage().bytes <= 35_000, "{:?}", cache.usage());
    assert!(cache.get(&keys[0]).is_some());
    assert!(cache.get(&keys[1]).is_none());
    assert!(cache.get(&fourth).is_some());
    // An entry larger than the whole bound is not kept.
    let huge = entry_key("opstats", &identity(21), "");
    cache.put(&huge, &vec![0u8; 50_000]).unwrap();
    assert!(cache.get(&huge).is_none());
}

#[test]
fn a_failed_write_is_an_error_value_naming_the_directory() {
    let root = tempfile::tempdir().unwrap();
    let cache = DiskCache::open(root.path(), 1 << 20).unwrap();
    // The directory vanishes under the cache (as on a full or unmounted disk).
    std::fs::remove_dir_all(cache.dir()).unwrap();
    let key = entry_key("opstats", &identity(30), "");
    let err = cache.put(&key, b"x").unwrap_err();
    assert!(err.to_string().contains("cannot write the analysis cache"), "{err}");
    assert!(err.to_string().contains("--no-cache"), "{err}");
    assert_eq!(cache.get(&key), None);
}

#[test]
fn a_streamed_entry_is_the_entry_put_would_write_and_a_failed_stream_leaves_nothing() {
    let root = tempfile::tempdir().unwrap();
    let cache = DiskCache::open(root.path(), 1 << 20).unwrap();
    // Many small writes, as an encoder makes them, across the writer's buffer.
    let payload: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    let streamed = entry_key("trace", &identity(40), "");
    cache.put_streamed(&streamed, &mut |out| payload.chunks(7).try_for_each(|c| out.write_all(c))).unwrap();
    let put = entry_key("trace", &identity(41), "");
    cache.put(&put, &payload).unwrap();
    assert_eq!(cache.get(&streamed).as_deref(), Some(&payload[..]));
    let file = |key: &str| std::fs::read(cache.dir().join(format!("{key}.bin"))).unwrap();
    assert_eq!(file(&streamed), file(&put), "same header and payload bytes");

    // The encoder fails half way (a full disk, a bug): an error, no entry, no temporary file.
    let failed = entry_key("trace", &identity(42), "");
    let err = cache
        .put_streamed(&failed, &mut |out| {
            out.write_all(&payload[..1000])?;
            Err(std::io::Error::other("encoder gave up"))
        })
        .unwrap_err();
    assert!(err.to_string().contains("encoder gave up"), "{err}");
    assert_eq!(cache.get(&failed), None);
    let leftovers: Vec<_> = std::fs::read_dir(cache.dir())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_str().is_some_and(|n| n.ends_with(".tmp")))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    // Larger than the whole bound once streamed: not kept.
    let small = DiskCache::open(&root.path().join("small"), 10_000).unwrap();
    let huge = entry_key("trace", &identity(43), "");
    small.put_streamed(&huge, &mut |out| out.write_all(&payload)).unwrap();
    assert_eq!(small.get(&huge), None);
}

#[test]
fn a_streamed_read_counts_only_when_the_whole_entry_checks_out() {
    use std::io::Read;
    let root = tempfile::tempdir().unwrap();
    let cache = DiskCache::open(root.path(), 1 << 20).unwrap();
    let payload: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    let first_bytes = |input: &mut dyn Read, len: u64| {
        let mut head = [0u8; 100];
        input.read_exact(&mut head).ok()?;
        Some((head, len))
    };

    // A reader that stops early still gets its answer: the rest is read and checked here.
    let key = entry_key("trace", &identity(50), "");
    cache.put(&key, &payload).unwrap();
    let (head, len) = cache.get_with(&key, first_bytes).unwrap();
    assert_eq!((&head[..], len), (&payload[..100], payload.len() as u64));
    assert_eq!(cache.counters().hits.load(Ordering::Relaxed), 1);

    // A byte flipped past what the reader read: its answer is dropped, the entry removed.
    let path = cache.dir().join(format!("{key}.bin"));
    let mut bytes = std::fs::read(&path).unwrap();
    *bytes.last_mut().unwrap() ^= 1;
    std::fs::write(&path, &bytes).unwrap();
    assert_eq!(cache.get_with(&key, first_bytes), None);
    assert!(!path.exists());

    // Torn (shorter than its header says): the reader is not even asked.
    cache.put(&key, &payload).unwrap();
    let mut bytes = std::fs::read(&path).unwrap();
    bytes.truncate(bytes.len() - 1);
    std::fs::write(&path, &bytes).unwrap();
    assert_eq!(cache.get_with(&key, |_, _| -> Option<()> { panic!("a torn entry reached the reader") }), None);

    // An entry the reader cannot use is removed too (its caller writes a new one).
    cache.put(&key, &payload).unwrap();
    assert_eq!(cache.get_with(&key, |_, _| None::<()>), None);
    assert!(!path.exists());
    assert_eq!(cache.counters().rejected.load(Ordering::Relaxed), 3);
}
