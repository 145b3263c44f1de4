//! Reading what the store does not own, within limits: transcripts, record
//! files, markdown, stdin, folders of them.
//!
//! A path given by a user or an agent may name anything: a FIFO that never
//! ends, `/dev/zero`, a sparse file of 2 GB, a gzip bomb, a folder whose
//! symlinks form a loop. Every reader of such input goes through here:
//! - [`open_regular`] refuses what is not a regular file (after following
//!   symlinks) *before* opening it for reading, and opens without blocking, so
//!   a FIFO swapped in meanwhile cannot hang the process either;
//! - [`read_whole`] decides from the file's size, before reading a byte,
//!   whether it is under its [`Limit`], and reads no more than the limit even
//!   if the file grows meanwhile;
//! - [`read_to_limit`] reads a stream (stdin, a decompressor) up to a limit and
//!   stops there, so a gzip bomb costs at most the limit in memory;
//! - [`LineReader`] yields lines no longer than a limit, skipping the rest of
//!   an over-long line without keeping it;
//! - [`walk`] lists a folder tree following symlinks, but enters every folder
//!   once: it keeps the (device, inode) of every folder entered, so a loop of
//!   links ends and two links to one folder list its files once.

use std::collections::HashSet;
use std::fs::{File, Metadata};
use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// A size limit and the setting that raises it, for messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit {
    /// Most bytes allowed.
    pub bytes: u64,
    /// Where the limit is set (`limits.max_file_bytes`), named in errors.
    pub setting: &'static str,
}

impl Limit {
    /// The error for `path`, whose `what` (e.g. "the file is 2.0 GiB") is over this limit.
    pub fn exceeded(&self, path: &Path, what: String) -> Error {
        Error::OverLimit {
            path: path.to_path_buf(),
            what,
            limit: human_bytes(self.bytes),
            setting: self.setting,
        }
    }
}

/// What kind of file `metadata` describes, in words (for refusals).
pub fn kind_of(metadata: &Metadata) -> &'static str {
    let kind = metadata.file_type();
    if kind.is_dir() {
        return "a folder";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if kind.is_char_device() {
            return "a character device";
        }
        if kind.is_block_device() {
            return "a block device";
        }
        if kind.is_socket() {
            return "a socket";
        }
    }
    if kind.is_file() {
        "a regular file"
    } else {
        "not a regular file"
    }
}

/// Opens `path` for reading if it is a regular file (symlinks followed), with
/// its length. Anything else (a FIFO, a device, a socket, a folder) is refused
/// with [`Error::NotRegularFile`] before it is opened for reading.
pub fn open_regular(path: &Path) -> Result<(File, u64)> {
    let metadata = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
    refuse_irregular(path, &metadata)?;
    let file = open_nonblocking(path)?;
    // The path may have been swapped between the stat and the open.
    let metadata = file.metadata().map_err(|e| Error::io(path, e))?;
    refuse_irregular(path, &metadata)?;
    Ok((file, metadata.len()))
}

fn refuse_irregular(path: &Path, metadata: &Metadata) -> Result<()> {
    if metadata.is_file() {
        Ok(())
    } else {
        Err(Error::NotRegularFile {
            path: path.to_path_buf(),
            kind: kind_of(metadata),
        })
    }
}

/// Opens without blocking on a FIFO (`O_NONBLOCK`; it changes nothing for the
/// regular file that is expected).
fn open_nonblocking(path: &Path) -> Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    options.open(path).map_err(|e| Error::io(path, e))
}

/// The bytes of the regular file at `path`, refused unless its size (from its
/// metadata, before reading) is within `limit`; gzip (by magic number) is
/// decompressed with the same limit on the decompressed size when `gunzip`.
pub fn read_whole(path: &Path, limit: Limit, gunzip: bool) -> Result<Vec<u8>> {
    let (file, len) = open_regular(path)?;
    if len > limit.bytes {
        return Err(limit.exceeded(path, format!("the file is {}", human_bytes(len))));
    }
    // The metadata's length sizes the buffer once (the file may still grow
    // or shrink: the limit is what holds).
    let raw = read_limited(file, path, limit, "the file grew to", Some(len))?;
    if gunzip && raw.starts_with(&[0x1f, 0x8b]) {
        let decoder = flate2::read::MultiGzDecoder::new(&raw[..]);
        return read_to_limit(decoder, path, limit, "it decompresses to");
    }
    Ok(raw)
}

/// Reads `reader` to its end, refusing it (without reading further) once it
/// gives more than `limit` bytes; `over` starts the message ("it decompresses
/// to", "stdin holds").
pub fn read_to_limit(reader: impl Read, path: &Path, limit: Limit, over: &str) -> Result<Vec<u8>> {
    read_limited(reader, path, limit, over, None)
}

/// The bytes of one read of unknown length are kept in pieces of this size
/// and joined once at the end.
const PIECE: usize = 8 << 20;

/// [`read_to_limit`], with the expected length when it is known. Without it
/// the bytes go into pieces joined once at the end, never into a buffer grown
/// by doubling: the allocator copies a doubled buffer (and keeps the old one
/// a while), so a gzip bomb stopped at 256 MiB cost 790 MB that way; in
/// pieces it costs the limit.
fn read_limited(
    reader: impl Read,
    path: &Path,
    limit: Limit,
    over: &str,
    expected: Option<u64>,
) -> Result<Vec<u8>> {
    // One byte past the limit says the input goes on.
    let cap = limit.bytes.saturating_add(1);
    let mut reader = reader.take(cap);
    let first = match expected {
        Some(len) => usize::try_from(len.saturating_add(1).min(cap)).unwrap_or(PIECE),
        None => PIECE.min(usize::try_from(cap).unwrap_or(PIECE)),
    };
    // Each piece is zeroed when made (fresh pages from the system: no cost
    // until written) and filled in place; `filled` counts the last one's bytes.
    let mut pieces: Vec<Vec<u8>> = vec![vec![0; first]];
    let mut filled = 0;
    let mut total: u64 = 0;
    loop {
        if pieces.last().is_some_and(|piece| filled == piece.len()) {
            pieces.push(vec![0; PIECE]);
            filled = 0;
        }
        let Some(piece) = pieces.last_mut() else {
            break;
        };
        let n = match reader.read(&mut piece[filled..]) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Error::io(path, e)),
        };
        filled += n;
        total += n as u64;
    }
    if total > limit.bytes {
        return Err(limit.exceeded(
            path,
            format!("{over} more than {}", human_bytes(limit.bytes)),
        ));
    }
    if let Some(last) = pieces.last_mut() {
        last.truncate(filled);
    }
    Ok(join(pieces, total))
}

/// The pieces as one buffer: the only piece as it is, several copied once.
fn join(mut pieces: Vec<Vec<u8>>, total: u64) -> Vec<u8> {
    if pieces.len() == 1 {
        return pieces.pop().unwrap_or_default();
    }
    let mut out = Vec::with_capacity(usize::try_from(total).unwrap_or(0));
    for piece in pieces {
        out.extend_from_slice(&piece);
    }
    out
}

/// One line from a [`LineReader`].
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    /// A line (without its `\n`), at most the limit long.
    Whole(Vec<u8>),
    /// A line longer than the limit: its length; its bytes were skipped.
    TooLong(u64),
}

/// Lines of a reader, none kept longer than a limit: an over-long line is
/// skipped to its end (read, not kept) and reported with its length, so a
/// file of one endless line costs a buffer, not the file, in memory.
pub struct LineReader<R> {
    reader: R,
    max: usize,
    /// Lines returned so far (the 1-based number of the last one).
    pub line: usize,
    /// Bytes read so far, newlines included.
    pub bytes: u64,
}

impl<R: BufRead> LineReader<R> {
    /// Lines of `reader`, each at most `max` bytes.
    pub fn new(reader: R, max: usize) -> LineReader<R> {
        LineReader {
            reader,
            max,
            line: 0,
            bytes: 0,
        }
    }

    /// The next line, `None` at the end.
    pub fn next_line(&mut self) -> std::io::Result<Option<Line>> {
        let mut kept = Vec::new();
        let mut length: u64 = 0;
        let mut too_long = false;
        loop {
            let buffer = self.reader.fill_buf()?;
            if buffer.is_empty() {
                if length == 0 {
                    return Ok(None);
                }
                break;
            }
            let (chunk, done) = match buffer.iter().position(|&b| b == b'\n') {
                Some(i) => (&buffer[..i], i + 1),
                None => (buffer, buffer.len()),
            };
            let ended = done > chunk.len();
            length += chunk.len() as u64;
            if !too_long && kept.len() + chunk.len() > self.max {
                too_long = true;
                kept = Vec::new();
            }
            if !too_long {
                kept.extend_from_slice(chunk);
            }
            self.reader.consume(done);
            self.bytes += done as u64;
            if ended {
                break;
            }
        }
        self.line += 1;
        Ok(Some(if too_long {
            Line::TooLong(length)
        } else {
            Line::Whole(kept)
        }))
    }
}

/// Files under the folder `root` (recursively), sorted by path, for which `keep` says yes. Symlinks are followed, but a
/// folder is entered once, known by its (device, inode): a loop of links ends,
/// and a folder reached by two links is listed once. With `skip_hidden`,
/// entries whose names start with `.` are left out.
pub fn walk(root: &Path, skip_hidden: bool, keep: &dyn Fn(&Path) -> bool) -> Result<Vec<PathBuf>> {
    let mut visited: HashSet<(u64, u64)> = HashSet::new();
    let mut files = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let metadata = std::fs::metadata(&dir).map_err(|e| Error::io(&dir, e))?;
        if !visited.insert(folder_id(&dir, &metadata)) {
            continue;
        }
        let entries = std::fs::read_dir(&dir).map_err(|e| Error::io(&dir, e))?;
        for entry in entries {
            let entry = entry.map_err(|e| Error::io(&dir, e))?;
            if skip_hidden && entry.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            let path = entry.path();
            // Follows a symlink; a dangling one is passed on as a file, so
            // reading it names the problem.
            match std::fs::metadata(&path) {
                Ok(target) if target.is_dir() => pending.push(path),
                _ if keep(&path) => files.push(path),
                _ => {}
            }
        }
    }
    files.sort();
    Ok(files)
}

/// What makes a folder the same folder however it is reached.
#[cfg(unix)]
fn folder_id(_dir: &Path, metadata: &Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (metadata.dev(), metadata.ino())
}

/// Without inode numbers: the folder's canonical path.
#[cfg(not(unix))]
fn folder_id(dir: &Path, _metadata: &Metadata) -> (u64, u64) {
    let canonical = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let text = canonical.to_string_lossy();
    (0, xxhash_rust::xxh3::xxh3_64(text.as_bytes()))
}

/// `1536` → `1.5 KiB`.
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMIT: Limit = Limit {
        bytes: 1000,
        setting: "limits.test",
    };

    #[test]
    fn a_fifo_and_a_device_are_refused_without_blocking() {
        let dir = tempfile::tempdir().expect("tmp");
        let fifo = dir.path().join("pipe.jsonl");
        let c_path = std::ffi::CString::new(fifo.to_str().expect("utf-8")).expect("c path");
        // SAFETY: a valid NUL-terminated path for the call's duration.
        assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
        let e = read_whole(&fifo, LIMIT, true).expect_err("fifo");
        assert!(e.to_string().contains("a FIFO (named pipe)"), "{e}");
        let zero = dir.path().join("zero.jsonl");
        std::os::unix::fs::symlink("/dev/zero", &zero).expect("symlink");
        let e = read_whole(&zero, LIMIT, true).expect_err("device");
        assert!(e.to_string().contains("a character device"), "{e}");
    }

    #[test]
    fn sizes_are_decided_before_reading_and_decompression_is_capped() {
        let dir = tempfile::tempdir().expect("tmp");
        let sparse = dir.path().join("sparse.jsonl");
        File::create(&sparse)
            .and_then(|f| f.set_len(1 << 40))
            .expect("sparse");
        let e = read_whole(&sparse, LIMIT, true).expect_err("too big");
        assert!(e.to_string().contains("the file is 1.0 TiB"), "{e}");
        assert!(e.to_string().contains("limits.test"), "{e}");
        let bomb = dir.path().join("bomb.jsonl.gz");
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        std::io::Write::write_all(&mut encoder, &vec![b'x'; 100_000]).expect("gzip");
        std::fs::write(&bomb, encoder.finish().expect("gzip")).expect("write");
        let e = read_whole(&bomb, LIMIT, true).expect_err("bomb");
        assert!(
            e.to_string().contains("decompresses to more than 1000 B"),
            "{e}"
        );
        assert!(read_whole(&bomb, LIMIT, false).expect("raw").len() < 1000);
    }

    #[test]
    fn a_read_of_many_pieces_is_exact_up_to_the_limit_and_refused_past_it() {
        // Three pieces and a bit, in reads of odd sizes.
        let data: Vec<u8> = (0..(3 * PIECE + 12_345)).map(|i| (i % 251) as u8).collect();
        let exact = Limit {
            bytes: data.len() as u64,
            setting: "limits.test",
        };
        let path = Path::new("input");
        let odd = std::io::BufReader::with_capacity(7_919, &data[..]);
        assert_eq!(
            read_to_limit(odd, path, exact, "it holds").expect("at the limit"),
            data
        );
        let short = Limit {
            bytes: data.len() as u64 - 1,
            ..exact
        };
        let refused = read_to_limit(&data[..], path, short, "it holds").expect_err("one byte over");
        assert!(refused.to_string().contains("limits.test"), "{refused}");
        // A wrong expected length (the file grew, or shrank) changes nothing.
        for expected in [0, 10, data.len() as u64, data.len() as u64 * 2] {
            let read = read_limited(&data[..], path, exact, "it holds", Some(expected));
            assert_eq!(read.expect("within the limit"), data, "expected {expected}");
        }
        assert!(read_to_limit(&b""[..], path, exact, "it holds")
            .expect("empty")
            .is_empty());
    }

    #[test]
    fn over_long_lines_are_skipped_not_kept() {
        let text = b"short\n0123456789abcdef\n\nlast";
        let mut lines = LineReader::new(std::io::BufReader::with_capacity(4, &text[..]), 8);
        let mut seen = Vec::new();
        while let Some(line) = lines.next_line().expect("read") {
            seen.push(line);
        }
        assert_eq!(
            seen,
            [
                Line::Whole(b"short".to_vec()),
                Line::TooLong(16),
                Line::Whole(Vec::new()),
                Line::Whole(b"last".to_vec()),
            ]
        );
        assert_eq!(lines.line, 4);
    }

    #[test]
    fn a_walk_through_symlink_loops_ends_and_lists_each_file_once() {
        let dir = tempfile::tempdir().expect("tmp");
        let a = dir.path().join("a");
        let b = a.join("b");
        std::fs::create_dir_all(&b).expect("mkdir");
        std::fs::write(a.join("one.jsonl"), "{}").expect("write");
        std::fs::write(b.join("two.jsonl"), "{}").expect("write");
        std::os::unix::fs::symlink(&a, b.join("up")).expect("loop 1");
        std::os::unix::fs::symlink(&b, a.join("again")).expect("loop 2");
        let files = walk(&a, false, &|_| true).expect("walk");
        let names: Vec<String> = files
            .iter()
            .map(|p| p.file_name().expect("name").to_string_lossy().into_owned())
            .collect();
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(sorted, ["one.jsonl", "two.jsonl"], "{files:?}");
    }
}
