//! Files replaced whole: how every small file of a store is written.
//!
//! A reader must find the old file or the new one, never a mix, so a file is
//! written beside its final name and renamed over it (a rename within a folder
//! is atomic). Whether it must also survive a power cut decides the rest:
//!
//! - [`Durability::Durable`]: the temporary file is fsynced before the rename
//!   and the folder after it. For what the store cannot rebuild (its config,
//!   the embedding rules, ingest cursors, the hooks' queue, installed settings).
//! - [`Durability::Atomic`]: rename only. For caches and reports rebuilt or
//!   rewritten by the next call (a hook session's state, the upkeep's status,
//!   the retention schedule), where an fsync would cost every call a disk wait.
//!
//! Large files streamed to disk (vector files, graphs, archive files, exports)
//! follow the same steps with their own writers and [`sync_dir`].
//!
//! A file named after a session takes [`session_stem`]: the hooks write them,
//! `forget` finds them again by it.

use std::fs;
use std::io::Write;
use std::path::Path;

use crate::error::{Error, Result};

/// The file-name stem of a session's files (the hooks' state, queue, recall
/// and capture files): the id itself when it is a safe file name, else a hash
/// of it, so that no session id can name a path outside its folder.
pub fn session_stem(session_id: &str) -> String {
    let safe = !session_id.is_empty()
        && session_id.len() <= 128
        && session_id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && !session_id.starts_with('.');
    if safe {
        session_id.to_string()
    } else {
        format!(
            "session-{:016x}",
            xxhash_rust::xxh3::xxh3_64(session_id.as_bytes())
        )
    }
}

/// How far a replaced file is guaranteed once [`replace`] returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// Survives a crash and a power cut.
    Durable,
    /// Survives a crash of the process (old or new file, never a mix); a power
    /// cut may leave the old one, or an empty one.
    Atomic,
}

/// Replaces the file at `path` with `bytes` (creating its folder if needed):
/// temporary file in the same folder, fsync when durable, rename, fsync of
/// the folder when durable.
pub fn replace(path: &Path, bytes: &[u8], durability: Durability) -> Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| Error::io(dir, e))?;
    tmp.write_all(bytes).map_err(|e| Error::io(tmp.path(), e))?;
    if durability == Durability::Durable {
        tmp.as_file()
            .sync_all()
            .map_err(|e| Error::io(tmp.path(), e))?;
    }
    tmp.persist(path).map_err(|e| Error::io(path, e.error))?;
    if durability == Durability::Durable {
        sync_dir(dir)?;
    }
    Ok(())
}

/// fsyncs a folder so a rename inside it survives power loss.
pub fn sync_dir(dir: &Path) -> Result<()> {
    fs::File::open(dir)
        .and_then(|f| f.sync_all())
        .map_err(|e| Error::io(dir, e))
}

/// Permission bits of group and others: a store's files have none of them
/// (its transcripts hold whatever passed through a terminal).
const SHARED_BITS: u32 = 0o077;

/// Most paths [`loose_paths`] names; it counts the rest.
pub const MAX_LOOSE_LISTED: usize = 20;

/// The paths under `root` (itself included) that users other than the
/// owner may read, write or enter, at most [`MAX_LOOSE_LISTED`] of them, and
/// how many there are in all. Symbolic links are not followed.
pub fn loose_paths(root: &Path) -> (Vec<std::path::PathBuf>, usize) {
    let mut listed = Vec::new();
    let mut total = 0;
    walk(root, &mut |path, mode| {
        if mode & SHARED_BITS != 0 {
            total += 1;
            if listed.len() < MAX_LOOSE_LISTED {
                listed.push(path.to_path_buf());
            }
        }
    });
    (listed, total)
}

/// Takes every permission of group and others off `root` and everything
/// under it (symbolic links are not followed); returns how many paths
/// changed. A store made by an older release, or under a loose umask, is
/// owner-only after its next write.
pub fn make_private(root: &Path) -> Result<usize> {
    let mut loose = Vec::new();
    walk(root, &mut |path, mode| {
        if mode & SHARED_BITS != 0 {
            loose.push((path.to_path_buf(), mode & !SHARED_BITS & 0o7777));
        }
    });
    for (path, mode) in &loose {
        set_mode(path, *mode)?;
    }
    Ok(loose.len())
}

/// Takes the permissions of group and others off the folder `dir` itself
/// (not what is in it).
pub fn make_private_folder(dir: &Path) -> Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(dir)
            .map_err(|e| Error::io(dir, e))?
            .permissions()
            .mode();
        if mode & SHARED_BITS != 0 {
            set_mode(dir, mode & !SHARED_BITS & 0o7777)?;
        }
    }
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

/// Creates `dir` (and its missing parents) owner-only, whatever the umask.
pub fn create_private_dir(dir: &Path) -> Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| Error::io(dir, e))
    }
    #[cfg(not(unix))]
    {
        fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))
    }
}

#[cfg(unix)]
fn set_mode(path: &Path, mode: u32) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).map_err(|e| Error::io(path, e))
}

#[cfg(not(unix))]
fn set_mode(_: &Path, _: u32) -> Result<()> {
    Ok(())
}

/// Calls `each` with every path under `root` (itself first) and its mode;
/// symbolic links are neither followed nor reported. Unreadable folders are
/// skipped.
fn walk(root: &Path, each: &mut dyn FnMut(&Path, u32)) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let Ok(meta) = fs::symlink_metadata(root) else {
            return;
        };
        if meta.file_type().is_symlink() {
            return;
        }
        each(root, meta.permissions().mode());
        if !meta.is_dir() {
            return;
        }
        let Ok(entries) = fs::read_dir(root) else {
            return;
        };
        for entry in entries.flatten() {
            walk(&entry.path(), each);
        }
    }
    #[cfg(not(unix))]
    let _ = (root, each);
}

/// Bytes of the files under `dir`, recursively (0 if it cannot be read).
pub fn dir_size(dir: &Path) -> u64 {
    let Ok(entries) = fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|entry| match entry.metadata() {
            Ok(m) if m.is_dir() => dir_size(&entry.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_stem_is_the_id_when_safe_and_a_hash_otherwise() {
        assert_eq!(session_stem("a1-b_2.c"), "a1-b_2.c");
        for unsafe_id in ["../x", ".hidden", "", "a/b", &"x".repeat(129)] {
            let stem = session_stem(unsafe_id);
            assert!(stem.starts_with("session-") && stem.len() == 24, "{stem}");
        }
        assert_ne!(session_stem("a/b"), session_stem("a/c"));
    }

    #[test]
    fn replace_writes_whole_files_creates_folders_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/b/state.json");
        replace(&path, b"first", Durability::Durable).unwrap();
        replace(&path, b"second, longer", Durability::Atomic).unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"second, longer");
        let names: Vec<_> = fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["state.json"]);
        assert_eq!(dir_size(dir.path()), 14);
    }

    #[test]
    fn a_file_in_a_folder_that_cannot_be_made_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let blocker = dir.path().join("file");
        fs::write(&blocker, b"x").unwrap();
        let err = replace(&blocker.join("state.json"), b"y", Durability::Durable).unwrap_err();
        assert!(err.to_string().contains("file"), "{err}");
    }
}
