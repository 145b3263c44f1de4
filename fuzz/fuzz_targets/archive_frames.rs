//! Any bytes read as an archive file (`archive/<month>.jsonl.zst`): the frame scan,
//! checksums, decompression and archived-line parsing must report damage, never
//! panic or allocate without bound.
#![no_main]

use knowledge_db::archive::frame::{decode_in, scan_bytes};
use knowledge_db::archive::Entry;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let scan = scan_bytes(data);
    for info in &scan.frames {
        let Ok(jsonl) = decode_in(data, info) else {
            continue;
        };
        for line in jsonl.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            if let Ok(entry) = Entry::parse_line(line) {
                let _ = entry.vector();
            }
        }
    }
});
