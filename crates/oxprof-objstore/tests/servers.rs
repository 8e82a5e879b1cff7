//! Against real object-store servers on 127.0.0.1, started by
//! `scripts/ci/objstore-servers.sh` (SeaweedFS's S3 gateway, Azurite) whose `env` file sets
//! `OXPROF_TEST_S3_ENDPOINT`, the `AWS_*` variables and `OXPROF_TEST_AZURE_*`. Without them
//! each test says so and passes: `scripts/ci/test-objstore.sh` runs them with the servers.

use object_store::ObjectStoreExt;
use object_store::aws::AmazonS3Builder;
use object_store::azure::MicrosoftAzureBuilder;
use object_store::path::Path as Key;
use object_store::{ObjectStore, PutPayload};
use oxprof_format::{LoadError, LoadLimits, ProfileStore};
use oxprof_objstore::{RemoteOptions, RemoteStore, upload_dir, upload_file};
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

/// A prefix no other test of any run uses: not the clock alone (tests start side by side;
/// CI once saw one test list another's object under "its" prefix, most likely because both
/// read the same nanoseconds).
fn fresh_prefix() -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("it-{nanos}-{}-{n}", std::process::id())
}

/// The bucket's own client (object_store, talking to the real server) and a fresh prefix.
fn s3() -> Option<(Arc<dyn ObjectStore>, String)> {
    let Ok(bucket) = std::env::var("OXPROF_TEST_S3_BUCKET") else {
        eprintln!("skipped: no S3 server (run scripts/ci/test-objstore.sh)");
        return None;
    };
    let client = AmazonS3Builder::from_env().with_bucket_name(&bucket).with_allow_http(true).build().unwrap();
    Some((Arc::new(client), format!("s3://{bucket}/{}", fresh_prefix())))
}

fn azure() -> Option<(Arc<dyn ObjectStore>, String)> {
    let Ok(container) = std::env::var("OXPROF_TEST_AZURE_CONTAINER") else {
        eprintln!("skipped: no Azurite server (run scripts/ci/test-objstore.sh)");
        return None;
    };
    let client = MicrosoftAzureBuilder::from_env().with_container_name(&container).build().unwrap();
    Some((Arc::new(client), format!("az://{container}/{}", fresh_prefix())))
}

/// `url` (under the test's root) → the object key.
fn key(root: &str, rel: &str) -> Key {
    let prefix = root.splitn(4, '/').nth(3).unwrap();
    Key::from(format!("{prefix}/{rel}"))
}

fn put(client: &Arc<dyn ObjectStore>, root: &str, rel: &str, bytes: Vec<u8>) {
    runtime().block_on(client.put(&key(root, rel), PutPayload::from(bytes))).unwrap();
}

/// A one-plane profile whose single event is named `op`:
/// ```text
/// /host:CPU  thread  [op 0..10)
/// ```
fn profile(op: &str) -> Vec<u8> {
    oxprof_testkit::XSpaceBuilder::new()
        .plane("/host:CPU", |p| {
            p.line(1, "thread", 0, |l| {
                l.event(op, 0, 10);
            });
        })
        .to_bytes()
}

fn event_name(space: &oxprof_format::XSpace) -> String {
    let plane = &space.planes[0];
    plane.event_metadata().iter().map(|m| plane.str(m.name).to_string()).collect::<Vec<_>>().join(",")
}

fn listing_finds_runs_added_later(client: Arc<dyn ObjectStore>, root: String) {
    put(&client, &root, "plugins/profile/2024_01_01/h0.xplane.pb", profile("a"));
    let store = RemoteStore::open(&root, &RemoteOptions::default()).unwrap();
    let runs = store.discover(None).unwrap().runs;
    assert_eq!(runs.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(), ["2024_01_01"]);
    put(&client, &root, "plugins/profile/2025_01_01/h0.xplane.pb", profile("b"));
    put(&client, &root, "plugins/profile/2025_01_01/h1.xplane.pb", profile("c"));
    put(&client, &root, "train/plugins/profile/2026_01_01/h0.xplane.pb.gz", profile("d"));
    let discovery = store.discover(None).unwrap();
    let names: Vec<_> = discovery.runs.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["train/2026_01_01", "2025_01_01", "2024_01_01"]);
    let host = &discovery.run("2025_01_01").unwrap().hosts[1];
    assert_eq!(host.path, PathBuf::from(format!("{root}/plugins/profile/2025_01_01/h1.xplane.pb")));
    let space = store.load(&host.path, &LoadLimits::default(), &|_| true).unwrap();
    assert_eq!(event_name(&space), "c");
    // A run directory and a single object are logdirs too.
    let run = RemoteStore::open(&format!("{root}/plugins/profile/2025_01_01"), &RemoteOptions::default()).unwrap();
    assert_eq!(run.discover(None).unwrap().runs[0].hosts.len(), 2);
    let one = RemoteStore::open(host.path.to_str().unwrap(), &RemoteOptions::default()).unwrap();
    assert_eq!(one.discover(None).unwrap().runs[0].hosts[0].host, "h1");
}

#[test]
fn s3_listing_finds_runs_added_later_and_loads_them() {
    if let Some((client, root)) = s3() {
        listing_finds_runs_added_later(client, root);
    }
}

#[test]
fn azure_listing_finds_runs_added_later_and_loads_them() {
    if let Some((client, root)) = azure() {
        listing_finds_runs_added_later(client, root);
    }
}

fn a_replaced_object_is_reloaded_never_mixed(client: Arc<dyn ObjectStore>, root: String) {
    put(&client, &root, "run/h.xplane.pb", profile("old"));
    // A run directory as the logdir.
    let store = RemoteStore::open(&format!("{root}/run"), &RemoteOptions::default()).unwrap();
    let file = store.discover(None).unwrap().runs[0].hosts[0].path.clone();
    let before = store.stat(&file).unwrap();
    // Replaced after the read began (its ETag known), before its bytes arrive.
    put(&client, &root, "run/h.xplane.pb", profile("new, and longer"));
    let read = store.read_range(&file, 0..before.size);
    assert!(matches!(read, Err(LoadError::FileChanged { .. })), "{read:?}");
    // The next read sees the new object whole.
    let after = store.stat(&file).unwrap();
    assert_ne!(after.etag, before.etag);
    let space = store.load(&file, &LoadLimits::default(), &|_| true).unwrap();
    assert_eq!(event_name(&space), "new, and longer");
}

#[test]
fn s3_a_replaced_object_is_reloaded_never_mixed() {
    if let Some((client, root)) = s3() {
        a_replaced_object_is_reloaded_never_mixed(client, root);
    }
}

#[test]
fn azure_a_replaced_object_is_reloaded_never_mixed() {
    if let Some((client, root)) = azure() {
        a_replaced_object_is_reloaded_never_mixed(client, root);
    }
}

#[test]
fn s3_missing_objects_and_buckets_say_404() {
    let Some((_, root)) = s3() else { return };
    let store = RemoteStore::open(&root, &RemoteOptions::default()).unwrap();
    let e = store.discover(None).unwrap_err().to_string();
    assert!(e.starts_with(&root) && e.contains("not found (404)"), "{e}");
    let e = store.stat(Path::new(&format!("{root}/x.xplane.pb"))).unwrap_err().to_string();
    assert!(e.contains("not found (404)"), "{e}");
    let other = RemoteStore::open("s3://no-such-bucket-oxprof/x", &RemoteOptions::default()).unwrap();
    let e = other.discover(None).unwrap_err().to_string();
    assert!(e.contains("404 NoSuchBucket"), "{e}");
}

#[test]
fn s3_large_reads_are_ranged_parallel_and_cached_by_etag() {
    let Some((client, root)) = s3() else { return };
    // 20 MB of a pattern: three ranged GETs, reassembled in order.
    let bytes: Vec<u8> = (0..20_000_000u32).map(|i| (i % 251) as u8).collect();
    put(&client, &root, "run/big.xplane.pb", bytes.clone());
    let dir = tempfile::tempdir().unwrap();
    let cache = Arc::new(oxprof_diskcache::DiskCache::open(dir.path(), 1 << 30).unwrap());
    let options = RemoteOptions { disk_cache: Some(cache.clone()), ..RemoteOptions::default() };
    let store = RemoteStore::open(&root, &options).unwrap();
    let file = PathBuf::from(format!("{root}/run/big.xplane.pb"));
    assert_eq!(store.read_range(&file, 0..u64::MAX).unwrap(), bytes);
    assert_eq!(store.read_range(&file, 8_388_600..8_388_700).unwrap(), bytes[8_388_600..8_388_700]);
    assert_eq!(cache.usage().entries, 1);
    // Served from the disk cache now (a second store: no memory of the first).
    let again = RemoteStore::open(&root, &options).unwrap();
    assert_eq!(again.read_range(&file, 0..u64::MAX).unwrap(), bytes);
    assert!(cache.counters().hits.load(std::sync::atomic::Ordering::Relaxed) >= 1);
}

#[test]
fn s3_uploads_are_whole_single_and_multipart() {
    let Some((client, root)) = s3() else { return };
    let dir = tempfile::tempdir().unwrap();
    for (name, size) in [("small.bin", 1_000usize), ("large.bin", 19_000_000)] {
        let local = dir.path().join(name);
        let bytes: Vec<u8> = (0..size).map(|i| (i % 253) as u8).collect();
        std::fs::write(&local, &bytes).unwrap();
        let url = format!("{root}/up/{name}");
        assert_eq!(upload_file(&local, &url, &RemoteOptions::default()).unwrap(), size as u64);
        let got = runtime().block_on(async { client.get(&key(&root, &format!("up/{name}"))).await?.bytes().await });
        assert_eq!(got.unwrap().as_ref(), bytes.as_slice());
    }
    // A failed upload (the local file is missing) leaves no object behind.
    let url = format!("{root}/up/missing.bin");
    assert!(upload_file(&dir.path().join("missing.bin"), &url, &RemoteOptions::default()).is_err());
    let head = runtime().block_on(client.head(&key(&root, "up/missing.bin")));
    assert!(matches!(head, Err(object_store::Error::NotFound { .. })));
}

#[test]
fn s3_listing_by_key_ranges_equals_the_paginated_listing() {
    let Some((client, root)) = s3() else { return };
    // 2,600 objects: three full pages, so ranges are split and split again.
    let names: Vec<String> = (0..2_600)
        .map(|i| if i % 7 == 0 { format!("r/Run{i:05}/h.xplane.pb") } else { format!("r/run_{i:05}/h.xplane.pb") })
        .collect();
    runtime().block_on(async {
        use futures::StreamExt;
        futures::stream::iter(&names)
            .map(|name| {
                let client = client.clone();
                let key = key(&root, name);
                async move { client.put(&key, PutPayload::from(vec![1u8])).await.unwrap() }
            })
            .buffer_unordered(16)
            .collect::<Vec<_>>()
            .await
    });
    let store = RemoteStore::open(&root, &RemoteOptions::default()).unwrap();
    let prefix = store.location().prefix.clone();
    let paged: Vec<String> = store.list_as(&prefix, false).unwrap().iter().map(|m| m.location.to_string()).collect();
    let ranged: Vec<String> = store.list_as(&prefix, true).unwrap().iter().map(|m| m.location.to_string()).collect();
    assert_eq!(paged.len(), names.len());
    assert_eq!(ranged, paged);
}

/// Every key under the test's `root`, relative to it.
fn keys_under(client: &Arc<dyn ObjectStore>, root: &str) -> Vec<String> {
    use futures::TryStreamExt;
    let prefix = key(root, "").as_ref().trim_end_matches('/').to_string();
    let listed: Vec<_> = runtime().block_on(client.list(Some(&Key::from(prefix.as_str()))).try_collect()).unwrap();
    let mut keys: Vec<String> = listed.iter().map(|m| m.location.as_ref()[prefix.len() + 1..].to_string()).collect();
    keys.sort();
    keys
}

fn a_failed_directory_upload_leaves_nothing(client: Arc<dyn ObjectStore>, root: String) {
    // Uploaded in path order: a/1.bin, a/2.bin, then b/missing.bin fails (a symlink to
    // nothing: opening it fails, a real mid-way failure of the local side), c/3.bin never goes.
    let dir = tempfile::tempdir().unwrap();
    for rel in ["a/1.bin", "a/2.bin", "c/3.bin"] {
        let path = dir.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, rel.as_bytes()).unwrap();
    }
    std::fs::create_dir_all(dir.path().join("b")).unwrap();
    std::os::unix::fs::symlink(dir.path().join("nowhere"), dir.path().join("b/missing.bin")).unwrap();
    let e = upload_dir(dir.path(), &format!("{root}/set"), &RemoteOptions::default()).unwrap_err().to_string();
    assert!(e.starts_with(&format!("{root}/set/b/missing.bin: ")), "{e}");
    assert!(
        e.ends_with(&format!(
            "; the upload of 4 files to {root}/set stopped at file 3 of 4; the 2 uploaded before it were deleted \
             again, so nothing was left there"
        )),
        "{e}"
    );
    assert_eq!(e.lines().count(), 1);
    assert!(keys_under(&client, &root).is_empty(), "{:?}", keys_under(&client, &root));
    // Whole when nothing fails.
    std::fs::remove_file(dir.path().join("b/missing.bin")).unwrap();
    assert_eq!(upload_dir(dir.path(), &format!("{root}/set"), &RemoteOptions::default()).unwrap(), (3, 21));
    assert_eq!(keys_under(&client, &root), ["set/a/1.bin", "set/a/2.bin", "set/c/3.bin"]);
}

#[test]
fn s3_a_failed_directory_upload_leaves_nothing() {
    if let Some((client, root)) = s3() {
        a_failed_directory_upload_leaves_nothing(client, root);
    }
}

#[test]
fn azure_a_failed_directory_upload_leaves_nothing() {
    if let Some((client, root)) = azure() {
        a_failed_directory_upload_leaves_nothing(client, root);
    }
}
