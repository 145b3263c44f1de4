//! The archive's part of `verify` and `repair`.
//!
//! `verify` checks every frame of every archive file against its checksum, and
//! that every record id is in exactly one tier: each archived id once in the
//! archive files, not live in L2, and found by the L3 index at the frame that
//! holds it (and the index knows no other ids). `repair` finishes an interrupted
//! operation, cuts torn tails, drops archived copies that L2 shadows, and
//! rebuilds the L3 index from the files.

use std::collections::{HashMap, HashSet};

use tantivy::Searcher;

use super::ops::recover;
use crate::archive::l3::{locate, reindex_file, L3Index};
use crate::archive::Archive;
use crate::check::Check;
use crate::error::Result;
use crate::store::lock::WriterLock;
use crate::store::Store;

/// The archive checks, against the L2 `searcher`.
pub fn checks(store: &Store, searcher: &Searcher) -> Result<Vec<Check>> {
    let archive = Archive::new(store.root());
    if !archive.exists() {
        return Ok(Vec::new());
    }
    let mut frame_problems = Vec::new();
    let mut tier_problems = Vec::new();
    let (mut frames, mut records) = (0usize, 0usize);
    let mut where_archived: HashMap<String, (String, u64)> = HashMap::new();
    for file in archive.files()? {
        let read = match archive.read_file(&file) {
            Ok(read) => read,
            Err(e) => {
                frame_problems.push(format!("{file}: {e}"));
                continue;
            }
        };
        frames += read.scan.frames.len();
        for damage in &read.scan.damaged {
            frame_problems.push(format!(
                "{file}.jsonl.zst: frame at byte {}: {}",
                damage.offset, damage.message
            ));
        }
        if let crate::archive::frame::Tail::Torn { offset } = read.scan.tail {
            frame_problems.push(format!(
                "{file}.jsonl.zst: torn tail at byte {offset} (an interrupted write; `repair` cuts it)"
            ));
        }
        for (offset, entry) in read.entries {
            records += 1;
            let id = entry.record.id;
            if where_archived
                .insert(id.clone(), (file.clone(), offset))
                .is_some()
            {
                tier_problems.push(format!("{id} is archived more than once"));
            }
        }
    }
    let live = store.live_ids(searcher, where_archived.keys())?;
    for id in &live {
        tier_problems.push(format!("{id} is both in L2 and archived"));
    }
    if archive.read_journal()?.is_some() {
        tier_problems.push("an interrupted archive operation awaits recovery".into());
    }
    match L3Index::open_existing(&archive)? {
        None if !where_archived.is_empty() => {
            tier_problems.push("archived records but no L3 index".into())
        }
        None => {}
        Some(l3) => {
            let l3_searcher = l3.reader()?.searcher();
            for (id, (file, offset)) in &where_archived {
                match locate(&l3_searcher, l3.fields(), id)? {
                    Some(at) if at.file == *file && at.offset == *offset => {}
                    Some(at) => tier_problems.push(format!(
                        "the L3 index puts {id} at {}, but it is at {file}@{offset}",
                        at.encode()
                    )),
                    None => tier_problems.push(format!("{id} is archived but not in the L3 index")),
                }
            }
            let indexed = l3_searcher.num_docs() as usize;
            if indexed != where_archived.len() {
                tier_problems.push(format!(
                    "the L3 index has {indexed} records, the archive files {}",
                    where_archived.len()
                ));
            }
        }
    }
    Ok(vec![
        check(
            "archive frames",
            &frame_problems,
            format!("{frames} frames checked"),
        ),
        check(
            "one tier per record",
            &tier_problems,
            format!("{records} archived records, none also in L2, all indexed"),
        ),
    ])
}

fn check(name: &'static str, problems: &[String], fine: String) -> Check {
    let mut detail = problems
        .iter()
        .take(5)
        .cloned()
        .collect::<Vec<_>>()
        .join("; ");
    if problems.len() > 5 {
        detail.push_str(&format!("; … and {} more", problems.len() - 5));
    }
    Check {
        warning: false,
        name,
        ok: problems.is_empty(),
        detail: if problems.is_empty() { fine } else { detail },
        rebuildable: Vec::new(),
    }
}

/// Finishes an interrupted operation, rewrites files with torn tails, duplicate
/// ids or copies shadowed by L2, and rebuilds the L3 index from the files.
/// Never drops the only copy of a record.
pub fn repair(store: &Store, lock: &WriterLock) -> Result<()> {
    let archive = Archive::new(store.root());
    if !archive.exists() {
        return Ok(());
    }
    recover(store, lock)?;
    let searcher = store.reader()?.searcher();
    let l3 = L3Index::open_or_create(&archive)?;
    let mut writer = l3.writer()?;
    writer.delete_all_documents()?;
    for file in archive.files()? {
        let read = archive.read_file(&file)?;
        let ids: Vec<String> = read
            .entries
            .iter()
            .map(|(_, e)| e.record.id.clone())
            .collect();
        let live = store.live_ids(&searcher, &ids)?;
        let distinct: HashSet<&String> = ids.iter().collect();
        let torn =
            read.scan.tail != crate::archive::frame::Tail::Clean || !read.scan.damaged.is_empty();
        if torn || !live.is_empty() || distinct.len() != ids.len() {
            let kept = super::ops::last_copies(read.entries.into_iter().map(|(_, e)| e), &live);
            archive.rewrite(&file, &kept)?;
        }
        reindex_file(&archive, &l3, &writer, &file)?;
    }
    writer.commit()?;
    writer.wait_merging_threads()?;
    Ok(())
}
