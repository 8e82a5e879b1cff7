//! Files the CLI writes where the user says (`convert`'s OUTPUT, `summary --out`): never
//! over an existing file unless `--force`, never through a symbolic link, never half
//! written. The bytes go to a temporary file in the same directory (created new, so never
//! through a link), which is then renamed into place: without `--force` by a rename that
//! does not replace (`renameat2(RENAME_NOREPLACE)`, or `link` + `unlink`); with `--force`
//! by a plain rename, which replaces a symbolic link itself, never the file it points to.
//! On any failure the temporary file is removed and nothing else is touched.

use anyhow::{Context, Result, bail};
use std::io::{BufWriter, ErrorKind, Write};
use std::path::Path;

/// Refuses `path` before any work is done: a directory always, anything else unless
/// `force` (the final rename checks again).
pub fn check_target(path: &Path, force: bool) -> Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => bail!("{}: is a directory; name the file to write", path.display()),
        Ok(_) if !force => bail!(exists(path)),
        Ok(_) => Ok(()),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e).with_context(|| format!("{}: cannot write", path.display())),
    }
}

fn exists(path: &Path) -> String {
    format!("{}: exists; oxprof does not overwrite files (--force replaces it)", path.display())
}

/// Writes what `write` writes as the file `path` (see the module docs).
pub fn write_file(path: &Path, force: bool, write: impl FnOnce(&mut dyn Write) -> Result<()>) -> Result<()> {
    check_target(path, force)?;
    let cannot = || format!("{}: cannot write", path.display());
    let name = path.file_name().with_context(|| format!("{}: not a file name", path.display()))?;
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let prefix = format!(".{}.", name.to_string_lossy());
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(".part");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        // As a plain create would (the umask applies); tempfile's default is owner-only.
        builder.permissions(std::fs::Permissions::from_mode(0o666));
    }
    // Dropped on any early return, which deletes it.
    let temp = builder.tempfile_in(dir).with_context(cannot)?;
    let mut out = BufWriter::new(temp.as_file());
    write(&mut out)?;
    out.flush().with_context(cannot)?;
    drop(out);
    temp.as_file().sync_all().with_context(cannot)?;
    let placed = if force { temp.persist(path) } else { temp.persist_noclobber(path) };
    match placed {
        Ok(_) => Ok(()),
        Err(e) if e.error.kind() == ErrorKind::AlreadyExists => bail!(exists(path)),
        Err(e) => Err(e.error).with_context(cannot),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, force: bool, text: &str) -> Result<()> {
        write_file(path, force, |out| Ok(out.write_all(text.as_bytes())?))
    }

    #[test]
    fn existing_files_are_kept_unless_forced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.json");
        write(&path, false, "first").unwrap();
        let error = write(&path, false, "second").unwrap_err().to_string();
        assert!(error.ends_with("exists; oxprof does not overwrite files (--force replaces it)"), "{error}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "first");
        write(&path, true, "third").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "third");
        // A failed write leaves the old file and no temporary file.
        let failed = write_file(&path, true, |out| {
            out.write_all(b"half")?;
            bail!("gave up")
        });
        assert!(failed.is_err());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "third");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "no temporary file left");
        assert!(write(dir.path(), true, "x").unwrap_err().to_string().contains("is a directory"));
    }

    #[cfg(unix)]
    #[test]
    fn symbolic_links_are_never_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("precious.txt");
        std::fs::write(&target, "keep me").unwrap();
        let link = dir.path().join("out.json");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(write(&link, false, "new").is_err());
        // Forced: the link itself is replaced, its target untouched.
        write(&link, true, "new").unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep me");
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_file());
        assert_eq!(std::fs::read_to_string(&link).unwrap(), "new");
        // A dangling link is something there too.
        let dangling = dir.path().join("dangling.json");
        std::os::unix::fs::symlink(dir.path().join("nowhere"), &dangling).unwrap();
        assert!(write(&dangling, false, "new").is_err());
        assert!(!dir.path().join("nowhere").exists());
    }
}
