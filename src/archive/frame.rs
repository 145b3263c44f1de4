//! The archive's frame format: append-only, checksummed, readable by `zstd -d`.
//!
//! An archive file is a sequence of frames. Each frame is a zstd *skippable* frame
//! holding our header, followed by one ordinary zstd frame holding a batch of
//! records as JSON lines:
//!
//! ```text
//! 0x184D2A5B (u32 LE)  skippable-frame magic (zstd ignores the frame)
//! 28         (u32 LE)  header length
//! "KDB3"               format tag
//! 1, 0, 0, 0           format version, reserved
//! records    (u32 LE)  JSON lines in the frame
//! length     (u32 LE)  bytes of the zstd frame that follows
//! raw        (u32 LE)  bytes of the JSON lines (for `stats`, without decompressing)
//! checksum   (u64 LE)  xxh3-64 of the zstd frame's bytes
//! <zstd frame>         the JSON lines, compressed
//! ```
//!
//! So `zstd -dc 2026-01.jsonl.zst` prints the records. A frame whose bytes are
//! shorter than its header says, or whose checksum fails, at the end of a file is a
//! *torn tail* (a write cut by a crash) and is ignored; the same damage in the
//! middle of a file is corruption, which `verify` reports and readers skip.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use crate::error::{Error, Result};

const SKIPPABLE_MAGIC: u32 = 0x184D_2A5B;
const TAG: &[u8; 4] = b"KDB3";
const VERSION: u8 = 1;
/// Bytes of the header after the 8-byte skippable-frame prefix.
const HEADER_BODY: u32 = 28;
/// Total header bytes before the compressed payload.
pub const HEADER_LEN: usize = 8 + HEADER_BODY as usize;

/// One frame found in a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameInfo {
    /// Byte offset of the frame's header in the file.
    pub offset: u64,
    /// Header plus payload bytes.
    pub len: u64,
    /// Records (JSON lines) in the frame.
    pub records: u32,
    /// Bytes of JSON lines before compression.
    pub raw_len: u32,
}

/// How a file's sequence of frames ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tail {
    /// Every byte belongs to a sound frame.
    Clean,
    /// The last frame is incomplete or fails its checksum: a write cut short.
    Torn {
        /// Byte offset where the torn frame (or the unreadable bytes) starts.
        offset: u64,
    },
}

/// A damaged frame in the middle of a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damage {
    /// Byte offset of the damaged frame's header.
    pub offset: u64,
    /// What is wrong with it, e.g. `checksum mismatch`.
    pub message: String,
}

/// The frames of a file, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scan {
    /// The sound frames, in file order.
    pub frames: Vec<FrameInfo>,
    /// How the file ended.
    pub tail: Tail,
    /// Frames in the middle of the file that fail their checks.
    pub damaged: Vec<Damage>,
    /// Bytes up to the end of the last sound frame (where an append may start).
    pub valid_len: u64,
}

/// Compresses JSON lines into one frame.
pub fn encode(jsonl: &[u8], records: u32, level: i32) -> Result<Vec<u8>> {
    let payload = zstd::bulk::compress(jsonl, level)
        .map_err(|e| Error::io("archive frame (compressing)", e))?;
    let length = u32::try_from(payload.len()).map_err(|_| {
        Error::Usage(format!(
            "an archive frame of {} bytes is over 4 GiB",
            payload.len()
        ))
    })?;
    let mut out = Vec::with_capacity(HEADER_LEN + payload.len());
    out.extend_from_slice(&SKIPPABLE_MAGIC.to_le_bytes());
    out.extend_from_slice(&HEADER_BODY.to_le_bytes());
    out.extend_from_slice(TAG);
    out.extend_from_slice(&[VERSION, 0, 0, 0]);
    out.extend_from_slice(&records.to_le_bytes());
    out.extend_from_slice(&length.to_le_bytes());
    out.extend_from_slice(&(jsonl.len().min(u32::MAX as usize) as u32).to_le_bytes());
    out.extend_from_slice(&xxhash_rust::xxh3::xxh3_64(&payload).to_le_bytes());
    out.extend_from_slice(&payload);
    Ok(out)
}

/// A frame header's fields.
struct Header {
    records: u32,
    length: u32,
    raw_len: u32,
    checksum: u64,
}

/// The header's fields; `None` if `header` is not a frame header.
fn parse_header(header: &[u8]) -> Option<Header> {
    let word = |at: usize| {
        u32::from_le_bytes([header[at], header[at + 1], header[at + 2], header[at + 3]])
    };
    if header.len() < HEADER_LEN
        || word(0) != SKIPPABLE_MAGIC
        || word(4) != HEADER_BODY
        || &header[8..12] != TAG
        || header[12] != VERSION
    {
        return None;
    }
    let mut sum = [0u8; 8];
    sum.copy_from_slice(&header[28..36]);
    Some(Header {
        records: word(16),
        length: word(20),
        raw_len: word(24),
        checksum: u64::from_le_bytes(sum),
    })
}

/// Checks every frame of a file held in memory.
pub fn scan_bytes(bytes: &[u8]) -> Scan {
    let mut frames = Vec::new();
    let mut damaged = Vec::new();
    let mut at = 0usize;
    let mut valid_len = 0u64;
    let tail = loop {
        if at == bytes.len() {
            break Tail::Clean;
        }
        let Some(Header {
            records,
            length,
            raw_len,
            checksum,
        }) = bytes.get(at..at + HEADER_LEN).and_then(parse_header)
        else {
            // No frame starts here: a torn header at the end, or garbage in the
            // middle that we cannot step over (frame lengths live in headers).
            break Tail::Torn { offset: at as u64 };
        };
        let end = at + HEADER_LEN + length as usize;
        let Some(payload) = bytes.get(at + HEADER_LEN..end) else {
            break Tail::Torn { offset: at as u64 };
        };
        if xxhash_rust::xxh3::xxh3_64(payload) != checksum {
            if end == bytes.len() {
                break Tail::Torn { offset: at as u64 };
            }
            damaged.push(Damage {
                offset: at as u64,
                message: "checksum mismatch".into(),
            });
        } else {
            frames.push(FrameInfo {
                offset: at as u64,
                len: (end - at) as u64,
                records,
                raw_len,
            });
            valid_len = end as u64;
        }
        at = end;
    };
    Scan {
        frames,
        tail,
        damaged,
        valid_len,
    }
}

/// The decompressed JSON lines of the frame at `info.offset` in `bytes`.
pub fn decode_in(bytes: &[u8], info: &FrameInfo) -> Result<Vec<u8>> {
    let start = info.offset as usize + HEADER_LEN;
    let end = (info.offset + info.len) as usize;
    let payload = bytes.get(start..end).ok_or_else(|| Error::Archive {
        path: "archive".into(),
        message: format!(
            "frame at byte {} runs past the end of the file",
            info.offset
        ),
    })?;
    decompress(payload)
}

fn decompress(payload: &[u8]) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    zstd::stream::copy_decode(payload, &mut out)
        .map_err(|e| Error::io("archive frame (decompressing)", e))?;
    Ok(out)
}

/// Reads and checks the one frame at `offset` of a file, without reading the rest.
pub fn read_at(path: &Path, offset: u64) -> Result<Vec<u8>> {
    let mut file = File::open(path).map_err(|e| Error::io(path, e))?;
    file.seek(SeekFrom::Start(offset))
        .map_err(|e| Error::io(path, e))?;
    let mut header = [0u8; HEADER_LEN];
    file.read_exact(&mut header)
        .map_err(|e| Error::io(path, e))?;
    let Header {
        length, checksum, ..
    } = parse_header(&header).ok_or_else(|| Error::Archive {
        path: path.to_path_buf(),
        message: format!("no archive frame starts at byte {offset}"),
    })?;
    let mut payload = vec![0u8; length as usize];
    file.read_exact(&mut payload)
        .map_err(|e| Error::io(path, e))?;
    if xxhash_rust::xxh3::xxh3_64(&payload) != checksum {
        return Err(Error::Archive {
            path: path.to_path_buf(),
            message: format!("the frame at byte {offset} fails its checksum"),
        });
    }
    decompress(&payload)
}

/// Totals from the frame headers of a file, read by seeking from header to header
/// (no decompression, no checksums): records, JSON bytes, file bytes.
pub fn header_totals(path: &Path) -> Result<(u64, u64, u64)> {
    let mut file = File::open(path).map_err(|e| Error::io(path, e))?;
    let size = file.metadata().map_err(|e| Error::io(path, e))?.len();
    let (mut records, mut raw, mut at) = (0u64, 0u64, 0u64);
    let mut header = [0u8; HEADER_LEN];
    while at + HEADER_LEN as u64 <= size {
        file.seek(SeekFrom::Start(at))
            .map_err(|e| Error::io(path, e))?;
        file.read_exact(&mut header)
            .map_err(|e| Error::io(path, e))?;
        let Some(h) = parse_header(&header) else {
            break;
        };
        let end = at + HEADER_LEN as u64 + u64::from(h.length);
        if end > size {
            break;
        }
        records += u64::from(h.records);
        raw += u64::from(h.raw_len);
        at = end;
    }
    Ok((records, raw, size))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two_frames() -> Vec<u8> {
        let mut bytes = encode(b"{\"a\":1}\n", 1, 3).unwrap();
        bytes.extend(encode(b"{\"b\":2}\n{\"c\":3}\n", 2, 3).unwrap());
        bytes
    }

    #[test]
    fn frames_round_trip_and_zstd_reads_the_file() {
        let bytes = two_frames();
        let scan = scan_bytes(&bytes);
        assert_eq!(scan.tail, Tail::Clean);
        assert_eq!(scan.frames.len(), 2);
        assert_eq!(scan.frames[1].records, 2);
        assert_eq!(scan.valid_len, bytes.len() as u64);
        assert_eq!(
            decode_in(&bytes, &scan.frames[1]).unwrap(),
            b"{\"b\":2}\n{\"c\":3}\n"
        );
        // The whole file is a valid zstd stream of the JSON lines (skippable headers).
        let mut all = Vec::new();
        zstd::stream::copy_decode(&bytes[..], &mut all).unwrap();
        assert_eq!(all, b"{\"a\":1}\n{\"b\":2}\n{\"c\":3}\n");
    }

    #[test]
    fn every_cut_of_the_last_frame_is_a_torn_tail() {
        let bytes = two_frames();
        let first_len = scan_bytes(&bytes).frames[0].len as usize;
        for cut in first_len..bytes.len() {
            let scan = scan_bytes(&bytes[..cut]);
            assert_eq!(scan.frames.len(), 1, "cut at {cut}");
            assert_eq!(scan.valid_len, first_len as u64);
            let expected = if cut == first_len {
                Tail::Clean
            } else {
                Tail::Torn {
                    offset: first_len as u64,
                }
            };
            assert_eq!(scan.tail, expected, "cut at {cut}");
        }
    }

    #[test]
    fn a_flipped_byte_is_caught_by_the_checksum() {
        let mut bytes = two_frames();
        bytes[HEADER_LEN + 2] ^= 0x40;
        let scan = scan_bytes(&bytes);
        assert_eq!(scan.damaged.len(), 1);
        assert_eq!(scan.frames.len(), 1);
        let last = bytes.len() - 1;
        bytes[last] ^= 0x01;
        let scan = scan_bytes(&bytes);
        assert!(matches!(scan.tail, Tail::Torn { .. }));
    }
}
