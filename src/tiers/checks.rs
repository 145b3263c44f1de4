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

/// The archive checks, against the L2 `searcher`, and the one pending item
/// an interrupted (or running) tier operation makes: what such an operation
/// leaves half done (its ids in both tiers or in neither index, a torn tail
/// of a file it appended to) is that item, not a list of failures.
pub fn checks(store: &Store, searcher: &Searcher) -> Result<(Vec<Check>, Option<String>)> {
    let archive = Archive::new(store.root());
    if !archive.exists() {
        return Ok((Vec::new(), None));
    }
    let journal = archive.read_journal()?;
    let pending = match &journal {
        Some(journal) => Some(pending_operation(store, &archive, journal)?),
        None => None,
    };
    let journal_ids: HashSet<&str> = journal
        .iter()
        .flat_map(|j| j.ids.iter().map(String::as_str))
        .collect();
    let journal_files: HashSet<&str> = journal
        .iter()
        .flat_map(|j| j.files.iter().map(String::as_str))
        .collect();
    // Problems an unfinished operation explains are left to it.
    let explained = |id: Option<&str>| match id {
        Some(id) => journal_ids.contains(id),
        None => journal.is_some(),
    };
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
            if !journal_files.contains(file.as_str()) {
                frame_problems.push(format!(
                    "{file}.jsonl.zst: torn tail at byte {offset} (an interrupted write; `repair` cuts it)"
                ));
            }
        }
        for (offset, entry) in read.entries {
            records += 1;
            let id = entry.record.id;
            if where_archived
                .insert(id.clone(), (file.clone(), offset))
                .is_some()
                && !explained(Some(&id))
            {
                tier_problems.push(format!("{id} is archived more than once"));
            }
        }
    }
    let live = store.live_ids(searcher, where_archived.keys())?;
    for id in live.iter().filter(|id| !explained(Some(id.as_str()))) {
        tier_problems.push(format!("{id} is both in L2 and archived"));
    }
    // A damaged L3 index is a problem found, not an error: `repair` builds
    // it again from the archive files.
    let l3_dir = archive.dir().join("index");
    if l3_dir.join("meta.json").exists() {
        for problem in crate::index::damage::index_problems(&l3_dir, "archive/index") {
            tier_problems.push(format!(
                "{problem}; `knowledge-db repair` builds the archive's index again from the archive files"
            ));
        }
    }
    let opened = L3Index::open_existing(&archive).and_then(|l3| match l3 {
        Some(l3) => Ok(Some((l3.reader()?.searcher(), l3))),
        None => Ok(None),
    });
    let opened = match opened {
        Ok(opened) => opened,
        Err(e) => {
            tier_problems.push(format!(
                "the archive's index cannot be read ({e}); `knowledge-db repair` builds it again from the archive files"
            ));
            None
        }
    };
    match opened {
        None if !where_archived.is_empty() && !explained(None) && tier_problems.is_empty() => {
            tier_problems.push("archived records but no L3 index".into())
        }
        None => {}
        Some((l3_searcher, l3)) => {
            let compared = compare_l3(&l3_searcher, &l3, &where_archived, &explained);
            match compared {
                Ok(found) => tier_problems.extend(found),
                Err(e) => tier_problems.push(format!(
                    "the archive's index cannot be read ({}); `knowledge-db repair` builds it again from the archive files",
                    crate::index::damage::explain(store.root(), e)
                )),
            }
        }
    }
    let checks = vec![
        check(
            "archive frames",
            &frame_problems,
            format!("{frames} frames checked"),
        ),
        check(
            "one tier per record",
            &tier_problems,
            if pending.is_some() {
                format!("{records} archived records; those of the pending operation aside, none also in L2, all indexed")
            } else {
                format!("{records} archived records, none also in L2, all indexed")
            },
        ),
    ];
    Ok((checks, pending))
}

/// What the L3 index says against what the archive files hold
/// (`where_archived`: id -> (file, offset)); ids `explained` by a pending
/// operation are left to it. An error when the index cannot be read.
fn compare_l3(
    l3_searcher: &Searcher,
    l3: &L3Index,
    where_archived: &HashMap<String, (String, u64)>,
    explained: &dyn Fn(Option<&str>) -> bool,
) -> Result<Vec<String>> {
    let mut problems = Vec::new();
    // Records the index knows that no archive file holds any more: their
    // file was damaged or cut short.
    for (id, at) in crate::archive::l3::indexed(l3_searcher, l3.fields())? {
        if !where_archived.contains_key(&id) && !explained(Some(&id)) {
            problems.push(format!(
                "{id} is indexed at {}, but {}.jsonl.zst no longer holds it (damaged or cut short): `repair` names it as lost",
                at.encode(),
                at.file
            ));
        }
    }
    for (id, (file, offset)) in where_archived {
        if explained(Some(id)) {
            continue;
        }
        match locate(l3_searcher, l3.fields(), id)? {
            Some(at) if at.file == *file && at.offset == *offset => {}
            Some(at) => problems.push(format!(
                "the L3 index puts {id} at {}, but it is at {file}@{offset}",
                at.encode()
            )),
            None => problems.push(format!("{id} is archived but not in the L3 index")),
        }
    }
    let indexed = l3_searcher.num_docs() as usize;
    if indexed != where_archived.len() && !explained(None) {
        problems.push(format!(
            "the L3 index has {indexed} records, the archive files {}",
            where_archived.len()
        ));
    }
    Ok(problems)
}

/// The pending item of a journalled tier operation: interrupted (the next
/// writer finishes it) or running (another process holds the writer lock).
fn pending_operation(
    store: &Store,
    archive: &Archive,
    journal: &crate::archive::Journal,
) -> Result<String> {
    let records = journal.ids.len();
    let what = format!(
        "{} {} of {records} record{}",
        if journal.op.starts_with(['a', 'e', 'i', 'o', 'u']) {
            "an"
        } else {
            "a"
        },
        journal.op,
        if records == 1 { "" } else { "s" }
    );
    let running = crate::store::lock::try_lock_file(&store.root().join("LOCK"))?.is_none();
    if running {
        return Ok(format!(
            "{what} is running (another process holds the writer lock); verify again once it is done"
        ));
    }
    let since = archive
        .journal_modified()
        .map(|secs| format!(" at {}", crate::record::parse::format_time(secs)))
        .unwrap_or_default();
    Ok(format!(
        "{what} was interrupted{since}; the next write to the store finishes it, or run `knowledge-db upkeep` now"
    ))
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
///
/// Returns the records that are lost: indexed as archived in a file that no
/// longer holds them (a damaged frame, a file cut short or emptied), and not
/// in L2 either, each with the file it was in. A damaged L3 index is moved
/// aside (`archive/index.damaged-<time>/`, kept) and built again.
pub fn repair(store: &Store, lock: &WriterLock) -> Result<Vec<String>> {
    let archive = Archive::new(store.root());
    if !archive.exists() {
        return Ok(Vec::new());
    }
    recover(store, lock)?;
    let searcher = store.reader()?.searcher();
    // What the index knew before the files are read again; a damaged index
    // is not trusted (its ids could be damaged too).
    let l3_dir = archive.dir().join("index");
    let l3_damaged = l3_dir.join("meta.json").exists()
        && !crate::index::damage::index_problems(&l3_dir, "archive/index").is_empty();
    let known_ids = if l3_damaged {
        Err(crate::Error::Usage("damaged".into()))
    } else {
        L3Index::open_existing(&archive).and_then(|l3| match l3 {
            Some(l3) => crate::archive::l3::indexed(&l3.reader()?.searcher(), l3.fields()),
            None => Ok(Vec::new()),
        })
    };
    let known: Vec<(String, crate::archive::Location)> = match known_ids {
        Ok(known) => known,
        Err(_) => {
            let index = archive.dir().join("index");
            let aside = archive.dir().join(format!(
                "index.damaged-{}",
                crate::now_rfc3339().replace(':', "")
            ));
            std::fs::rename(&index, &aside).map_err(|e| crate::Error::io(&index, e))?;
            Vec::new()
        }
    };
    let l3 = L3Index::open_or_create(&archive)?;
    let mut writer = l3.writer()?;
    writer.delete_all_documents()?;
    for file in archive.files()? {
        let read = match archive.read_file(&file) {
            Ok(read) => read,
            Err(_) => {
                // Unreadable as a whole: kept aside, its records named below.
                let path = archive.dir().join(format!("{file}.jsonl.zst"));
                let aside = archive.dir().join(format!(
                    "{file}.jsonl.zst.damaged-{}",
                    crate::now_rfc3339().replace(':', "")
                ));
                std::fs::rename(&path, &aside).map_err(|e| crate::Error::io(&path, e))?;
                continue;
            }
        };
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
            if !read.scan.damaged.is_empty() {
                // The damaged frames' bytes are kept beside the archive.
                let path = archive.dir().join(format!("{file}.jsonl.zst"));
                let aside = archive.dir().join(format!(
                    "{file}.jsonl.zst.damaged-{}",
                    crate::now_rfc3339().replace(':', "")
                ));
                std::fs::copy(&path, &aside).map_err(|e| crate::Error::io(&aside, e))?;
            }
            let kept = super::ops::last_copies(read.entries.into_iter().map(|(_, e)| e), &live);
            archive.rewrite(&file, &kept)?;
        }
        reindex_file(&archive, &l3, &writer, &file)?;
    }
    writer.commit()?;
    writer.wait_merging_threads()?;
    let mut held: HashSet<String> = HashSet::new();
    for file in archive.files()? {
        held.extend(
            archive
                .read_file(&file)?
                .entries
                .into_iter()
                .map(|(_, e)| e.record.id),
        );
    }
    let gone: Vec<&(String, crate::archive::Location)> =
        known.iter().filter(|(id, _)| !held.contains(id)).collect();
    let live = store.live_ids(&searcher, gone.iter().map(|(id, _)| id))?;
    let mut lost: Vec<String> = gone
        .into_iter()
        .filter(|(id, _)| !live.contains(id))
        .map(|(id, at)| {
            format!(
                "id {id} (archived in {}.jsonl.zst at byte {}): that file no longer holds it (damaged or cut short)",
                at.file, at.offset
            )
        })
        .collect();
    lost.sort();
    Ok(lost)
}
