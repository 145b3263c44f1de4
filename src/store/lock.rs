//! The writer lock: one writer at a time, readers never wait.
//!
//! `<store>/LOCK` is locked exclusively (an OS file lock, released by the kernel if
//! the process dies, so a `kill -9` never leaves a stale lock). A second writer
//! polls until the lock is free or its timeout passes, then fails with a message
//! that says what to do.

use std::fs::{File, OpenOptions, TryLockError};
use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};

/// Held while a process writes; dropping it releases the lock.
#[derive(Debug)]
pub struct WriterLock {
    file: File,
    path: PathBuf,
}

const POLL: Duration = Duration::from_millis(25);

impl WriterLock {
    /// Takes the lock at `path`, waiting up to `timeout`.
    pub fn acquire(path: &Path, timeout: Duration) -> Result<WriterLock> {
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(path)
            .map_err(|e| Error::io(path, e))?;
        let started = Instant::now();
        loop {
            match file.try_lock() {
                Ok(()) => {
                    return Ok(WriterLock {
                        file,
                        path: path.to_path_buf(),
                    })
                }
                Err(TryLockError::WouldBlock) => {}
                Err(TryLockError::Error(e)) => return Err(Error::io(path, e)),
            }
            if started.elapsed() >= timeout {
                return Err(Error::LockTimeout {
                    path: path.parent().unwrap_or(path).to_path_buf(),
                    timeout_secs: timeout.as_secs_f64(),
                });
            }
            thread::sleep(POLL);
        }
    }

    /// The lock file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Takes an exclusive lock on the file at `path` (created if missing) without
/// waiting: `None` when another process holds it. Dropping the file releases
/// the lock, as does the kernel when the process dies.
pub fn try_lock_file(path: &Path) -> Result<Option<File>> {
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map_err(|e| Error::io(path, e))?;
    match file.try_lock() {
        Ok(()) => Ok(Some(file)),
        Err(TryLockError::WouldBlock) => Ok(None),
        Err(TryLockError::Error(e)) => Err(Error::io(path, e)),
    }
}

impl Drop for WriterLock {
    fn drop(&mut self) {
        let _ = self.file.unlock();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_writer_times_out_then_succeeds_after_release() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("LOCK");
        let first = WriterLock::acquire(&path, Duration::ZERO).unwrap();
        let err = WriterLock::acquire(&path, Duration::from_millis(60)).unwrap_err();
        assert!(
            err.to_string().contains("another knowledge-db process"),
            "{err}"
        );
        drop(first);
        WriterLock::acquire(&path, Duration::ZERO).unwrap();
    }
}
