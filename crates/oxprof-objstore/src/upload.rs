//! Writing into an object store (captures, exports): an object appears whole or not at
//! all. Small files are one PUT (atomic by the store); larger ones a multipart upload whose
//! parts stay invisible until it completes, and which is aborted (its parts deleted) when
//! any part fails. A directory (a dataset, a capture) is all or nothing too: when one of its
//! files fails, those already uploaded are deleted again.
//!
//! `oxprof export --to s3://…` and `oxprof capture --logdir s3://…` call [`upload_file`] /
//! [`upload_dir`] on what they wrote to a local temporary directory.

use crate::StoreError;
use crate::connect::{Connection, RemoteOptions, connect};
use crate::location::Location;
use crate::runtime::wait;
use futures::StreamExt;
use object_store::path::Path as Key;
use object_store::{ObjectStoreExt, PutPayload, WriteMultipart};
use std::io::Read;
use std::path::{Path, PathBuf};

/// Files up to this size go up in one PUT; larger ones in parts of this size.
const PART_BYTES: usize = 8 << 20;
/// Parts in flight at once.
const PARALLEL_PARTS: usize = 4;
/// Deletes in flight when a failed upload is undone.
const PARALLEL_DELETES: usize = 8;

/// Uploads the local file `local` to the object `dest` (a URL naming the object), whole or
/// not at all; returns the bytes written.
pub fn upload_file(local: &Path, dest: &str, options: &RemoteOptions) -> Result<u64, StoreError> {
    let at = Location::parse(dest)?;
    let connection = connect(&at, options)?;
    put_file(local, &connection, Key::from(at.prefix.as_str()), dest)
}

/// The key of `rel` (a relative path with `/` separators) under `prefix`, byte for byte:
/// names like Hive's `run=a%2Fb` stay as written (neither decoded into `/` nor encoded again).
fn key_under(prefix: &str, rel: &str) -> Key {
    let raw = if prefix.is_empty() { rel.to_string() } else { format!("{prefix}/{rel}") };
    Key::parse(&raw).unwrap_or_else(|_| Key::from_iter(raw.split('/')))
}

/// Uploads `local` to `key` through `connection`; `dest` names it in messages.
fn put_file(local: &Path, connection: &Connection, key: Key, dest: &str) -> Result<u64, StoreError> {
    let fail = |e: object_store::Error| StoreError::from_object_store(dest, &connection.credentials, e);
    let local_error =
        |e: std::io::Error| StoreError::Other { url: dest.to_string(), cause: format!("{}: {e}", local.display()) };
    let mut file = std::fs::File::open(local).map_err(local_error)?;
    let size = file.metadata().map_err(local_error)?.len();
    let store = connection.store.clone();
    if size <= PART_BYTES as u64 {
        let mut bytes = Vec::with_capacity(size as usize);
        file.read_to_end(&mut bytes).map_err(local_error)?;
        let written = bytes.len() as u64;
        wait(async move { store.put(&key, PutPayload::from(bytes)).await }).map_err(fail)?;
        return Ok(written);
    }
    let (tx, mut rx) = tokio::sync::mpsc::channel::<std::io::Result<Vec<u8>>>(2);
    // The file is read on this thread and handed to the upload task part by part.
    let reader = std::thread::spawn(move || {
        loop {
            let mut part = vec![0u8; PART_BYTES];
            let mut filled = 0;
            while filled < PART_BYTES {
                match file.read(&mut part[filled..]) {
                    Ok(0) => break,
                    Ok(n) => filled += n,
                    Err(e) => {
                        let _ = tx.blocking_send(Err(e));
                        return;
                    }
                }
            }
            part.truncate(filled);
            if filled == 0 || tx.blocking_send(Ok(part)).is_err() {
                return;
            }
        }
    });
    let uploaded = wait(async move {
        let upload = store.put_multipart(&key).await.map_err(Upload::Store)?;
        let mut writer = WriteMultipart::new_with_chunk_size(upload, PART_BYTES);
        let mut written = 0u64;
        while let Some(part) = rx.recv().await {
            let part = match part {
                Ok(part) => part,
                Err(e) => {
                    let _ = writer.abort().await;
                    return Err(Upload::Local(e));
                }
            };
            if let Err(e) = writer.wait_for_capacity(PARALLEL_PARTS).await {
                let _ = writer.abort().await;
                return Err(Upload::Store(e));
            }
            written += part.len() as u64;
            writer.write(&part);
        }
        if written != size {
            let _ = writer.abort().await;
            return Err(Upload::Local(std::io::Error::other(format!(
                "changed while uploading ({size} → {written} bytes)"
            ))));
        }
        // `finish` aborts the upload itself when a part fails.
        writer.finish().await.map_err(Upload::Store)?;
        Ok(written)
    });
    let _ = reader.join();
    uploaded.map_err(|e| match e {
        Upload::Store(e) => fail(e),
        Upload::Local(e) => local_error(e),
    })
}

enum Upload {
    Store(object_store::Error),
    Local(std::io::Error),
}

/// Uploads every file under the local directory `local` to `dest`/`<relative path>`, in
/// path order; returns the files and bytes written. All or nothing: when a file fails, the
/// files already uploaded are deleted again, and the error says so with counts (or names
/// what could not be deleted). While the upload runs, a reader may see some of the files.
pub fn upload_dir(local: &Path, dest: &str, options: &RemoteOptions) -> Result<(usize, u64), StoreError> {
    let dest = dest.trim_end_matches('/');
    let at = Location::parse(dest)?;
    let connection = connect(&at, options)?;
    let files = local_files(local)
        .map_err(|(dir, e)| StoreError::Other { url: dest.to_string(), cause: format!("{}: {e}", dir.display()) })?;
    let mut written: Vec<Key> = Vec::with_capacity(files.len());
    let mut bytes = 0;
    for (done, (rel, path)) in files.iter().enumerate() {
        let key = key_under(&at.prefix, rel);
        match put_file(path, &connection, key.clone(), &format!("{dest}/{rel}")) {
            Ok(size) => {
                bytes += size;
                written.push(key);
            }
            Err(failed) => {
                // A PUT that ended in a network error or a 5xx may have landed even so; one
                // refused (403, 404) or never sent (a local error) did not.
                if matches!(failed, StoreError::Other { .. } | StoreError::Changed { .. }) {
                    written.push(key);
                }
                let undone = undo(&connection, &at, dest, written, done, files.len());
                return Err(StoreError::Upload { failed: Box::new(failed), undone });
            }
        }
    }
    Ok((files.len(), bytes))
}

/// The files under `local` as (relative path with `/` separators, path), sorted by the
/// former; a directory that cannot be read is an error naming it.
fn local_files(local: &Path) -> Result<Vec<(String, PathBuf)>, (PathBuf, std::io::Error)> {
    let mut files = Vec::new();
    let mut stack = vec![local.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).map_err(|e| (dir.clone(), e))? {
            let entry = entry.map_err(|e| (dir.clone(), e))?;
            let path = entry.path();
            // Not following symlinks to directories (no loops): the staged tree is real.
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(path);
            } else if let Ok(rel) = path.strip_prefix(local) {
                files.push((rel.to_string_lossy().replace('\\', "/"), path));
            }
        }
    }
    files.sort();
    Ok(files)
}

/// Deletes `written` (what an upload of `total` files wrote before it stopped at the file
/// after the first `before`) and says what became of them, in words that end the
/// upload's one-line error.
fn undo(connection: &Connection, at: &Location, dest: &str, written: Vec<Key>, before: usize, total: usize) -> String {
    let store = connection.store.clone();
    let left: Vec<(Key, object_store::Error)> = wait(async move {
        futures::stream::iter(written)
            .map(|key| {
                let store = store.clone();
                async move {
                    match store.delete(&key).await {
                        Ok(()) | Err(object_store::Error::NotFound { .. }) => None,
                        Err(e) => Some((key, e)),
                    }
                }
            })
            .buffer_unordered(PARALLEL_DELETES)
            .filter_map(std::future::ready)
            .collect()
            .await
    });
    let stopped = format!("the upload of {total} files to {dest} stopped at file {} of {total}", before + 1);
    let count = left.len();
    match left.into_iter().next() {
        None if before == 0 => format!("{stopped}; nothing was left there"),
        None => format!("{stopped}; the {before} uploaded before it were deleted again, so nothing was left there"),
        Some((key, e)) => {
            let e = StoreError::from_object_store(&at.name_of(key.as_ref()), &connection.credentials, e);
            format!(
                "{stopped}, and {count} of the objects it wrote could not be deleted again (first: {e}); delete what \
                 is under {dest} by hand"
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_keep_hive_names_as_written() {
        assert_eq!(
            key_under("exp", "slice/run=a%2Fb/host=vm/part-0.parquet").as_ref(),
            "exp/slice/run=a%2Fb/host=vm/part-0.parquet"
        );
        assert_eq!(key_under("", "x/y.pb").as_ref(), "x/y.pb");
    }
}
