//! What is at a store's path before knowledge-db touches it.
//!
//! A store lives in a folder of its own. `init` creates that folder, or
//! takes an empty one; it never takes over a folder that holds anything
//! else (a project, a home folder, a file), and no command changes the
//! modes of files it did not create. Every open and init looks first at
//! what the path holds, and each answer has its own error: a missing or
//! empty folder suggests `init`, a foreign folder or a file says why
//! knowledge-db leaves it alone.

use std::fs;
use std::path::Path;

use crate::error::{Error, Result};

/// What a store's path holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Folder {
    /// Nothing: `init` creates the folder.
    Missing,
    /// An empty folder: `init` makes it the store's.
    Empty,
    /// A store (its `config.toml` is a store's), or one that `init` is
    /// creating at this moment (only a store's own names, `text/` among them).
    Store,
    /// Only files a store writes, but no store yet (the hooks' log or state,
    /// written before the first capture created the store): `init` creates
    /// the store among them.
    Leftovers,
    /// A folder holding files of something else, this many entries.
    Foreign(usize),
    /// A file, or anything else that is not a folder.
    File,
}

/// The names `init` writes, in the order it writes them; a folder holding
/// only these (and temporary files), with a text index begun in `text/`, is
/// a store being created.
const INIT_NAMES: [&str; 4] = ["text", "embedding-rules", "config.toml", "LOCK"];

/// Every name a store's folder holds (besides `config.toml.damaged-*`,
/// `text.*` of a rebuild and temporary files).
const STORE_NAMES: [&str; 13] = [
    "text",
    "vectors",
    "archive",
    "embedding-rules",
    "LOCK",
    "access.log",
    "hooks",
    "ingest",
    "upkeep",
    "sync",
    "tombstones.json",
    "qmd",
    "config.toml",
];

/// What the hooks may write in a store's folder before a store is there (a
/// log line, a session's state, the upkeep's status): a folder holding only
/// these is the store's, not yet created.
const EARLY_NAMES: [&str; 4] = ["hooks", "LOCK", "upkeep", "ingest"];

/// Whether `text/` holds a text index begun by `init` (empty, or tantivy's
/// own files), not a folder of someone's texts.
fn index_begun(text: &Path) -> bool {
    match fs::read_dir(text) {
        Ok(entries) => entries.flatten().all(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let segment_file = name.split_once('.').is_some_and(|(stem, _)| {
                stem.len() == 32 && stem.chars().all(|c| c.is_ascii_hexdigit())
            });
            name == "meta.json" || name.starts_with('.') || segment_file
        }),
        Err(_) => false,
    }
}

/// Looks at `root` without changing anything.
pub fn examine(root: &Path) -> Folder {
    let meta = match fs::metadata(root) {
        Ok(meta) => meta,
        Err(_) => {
            // A dangling symbolic link is not a place to create a store in.
            return if fs::symlink_metadata(root).is_ok() {
                Folder::File
            } else {
                Folder::Missing
            };
        }
    };
    if !meta.is_dir() {
        return Folder::File;
    }
    let names: Vec<String> = match fs::read_dir(root) {
        Ok(entries) => entries
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect(),
        // An unreadable folder: opening it will say why.
        Err(_) => return Folder::Store,
    };
    if names.is_empty() {
        return Folder::Empty;
    }
    let config = root.join("config.toml");
    if config.is_file() && holds_store_config(&config) {
        return Folder::Store;
    }
    let only = |allowed: &[&str]| {
        names
            .iter()
            .all(|n| allowed.contains(&n.as_str()) || n.starts_with(".tmp"))
    };
    let text = root.join("text");
    let store_names = |n: &String| {
        STORE_NAMES.contains(&n.as_str())
            || n.starts_with("config.toml.damaged")
            || n.starts_with("text.")
            || n.starts_with(".tmp")
    };
    if only(&INIT_NAMES) && text.is_dir() && index_begun(&text) {
        Folder::Store
    } else if text.join("meta.json").is_file()
        && index_begun(&text)
        && (root.join("embedding-rules").exists() || names.iter().all(store_names))
    {
        // A store whose config.toml is gone, or emptied (no store config
        // can be read from it): a text index and the rules `init` wrote
        // beside it (or only a store's own names); opening it says so, and
        // `repair` writes a new one.
        Folder::Store
    } else if only(&EARLY_NAMES) {
        Folder::Leftovers
    } else {
        Folder::Foreign(names.len())
    }
}

/// Whether a `config.toml` is a store's: it has a `format_version` number.
fn holds_store_config(path: &Path) -> bool {
    let Ok(text) = fs::read_to_string(path) else {
        // Unreadable: opening it will say why.
        return true;
    };
    match toml::from_str::<toml::Table>(&text) {
        Ok(table) => table.get("format_version").is_some_and(|v| v.is_integer()),
        // A damaged store config is still a store's if the text index is
        // beside it; opening it names the parse error.
        Err(_) => path.with_file_name("text").is_dir(),
    }
}

/// The error for a path that holds no store, or `None` when it does.
pub fn no_store_error(root: &Path) -> Option<Error> {
    let path = root.to_path_buf();
    match examine(root) {
        Folder::Store => None,
        Folder::Missing | Folder::Empty | Folder::Leftovers => Some(Error::NoStore { path }),
        Folder::Foreign(entries) => Some(Error::NotAStore { path, entries }),
        Folder::File => Some(Error::StoreIsFile { path }),
    }
}

/// Checks that `init` may create a store at `root`: the folder is missing
/// or empty. Returns whether the folder is to be created.
pub fn check_init(root: &Path) -> Result<bool> {
    let path = root.to_path_buf();
    match examine(root) {
        Folder::Missing => Ok(true),
        Folder::Empty | Folder::Leftovers => Ok(false),
        Folder::Store => Err(Error::StoreExists { path }),
        Folder::Foreign(entries) => Err(Error::NotAStore { path, entries }),
        Folder::File => Err(Error::StoreIsFile { path }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_of_path_is_told_apart() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        assert_eq!(examine(&root.join("new")), Folder::Missing);
        fs::create_dir(root.join("empty")).expect("mkdir");
        assert_eq!(examine(&root.join("empty")), Folder::Empty);
        fs::write(root.join("file"), "x").expect("write");
        assert_eq!(examine(&root.join("file")), Folder::File);
        fs::create_dir(root.join("project")).expect("mkdir");
        fs::write(root.join("project/README.md"), "x").expect("write");
        fs::write(root.join("project/config.toml"), "title = 'site'\n").expect("write");
        assert_eq!(examine(&root.join("project")), Folder::Foreign(2));
        // A project's own `text/` folder is not a store being created.
        fs::create_dir(root.join("project/text")).expect("mkdir");
        assert_eq!(examine(&root.join("project")), Folder::Foreign(3));
        fs::create_dir_all(root.join("creating/text")).expect("mkdir");
        assert_eq!(examine(&root.join("creating")), Folder::Store);
        // A user's lone `text/` folder of notes is not a store being made.
        fs::create_dir_all(root.join("notes/text")).expect("mkdir");
        fs::write(root.join("notes/text/todo.txt"), "x").expect("write");
        assert_eq!(examine(&root.join("notes")), Folder::Foreign(1));
        // The hooks' log written before the first capture made the store.
        fs::create_dir_all(root.join("early/hooks")).expect("mkdir");
        fs::write(root.join("early/hooks/hooks.log"), "x").expect("write");
        assert_eq!(examine(&root.join("early")), Folder::Leftovers);
        assert!(check_init(&root.join("early")).is_ok());
        fs::create_dir(root.join("store")).expect("mkdir");
        fs::write(root.join("store/config.toml"), "format_version = 3\n").expect("write");
        assert_eq!(examine(&root.join("store")), Folder::Store);
        // A store whose config.toml was deleted is still one (repair writes
        // a new config; found by tests/faults.rs).
        fs::create_dir_all(root.join("lost/text")).expect("mkdir");
        fs::create_dir_all(root.join("lost/vectors")).expect("mkdir");
        fs::write(root.join("lost/text/meta.json"), "{}").expect("write");
        fs::write(root.join("lost/access.log"), "").expect("write");
        assert_eq!(examine(&root.join("lost")), Folder::Store);
        // ... but not with someone else's file beside it,
        fs::write(root.join("lost/notes.md"), "x").expect("write");
        assert_eq!(examine(&root.join("lost")), Folder::Foreign(4));
        // unless the embedding rules `init` wrote are there too.
        fs::create_dir(root.join("lost/embedding-rules")).expect("mkdir");
        assert_eq!(examine(&root.join("lost")), Folder::Store);
        // An emptied config.toml is no store config either: the same store
        // (the fault campaign's `config empty` case).
        fs::write(root.join("lost/config.toml"), "").expect("write");
        assert_eq!(examine(&root.join("lost")), Folder::Store);
        // A project's own config.toml beside a `text/` folder stays foreign.
        fs::write(root.join("project/config.toml"), "").expect("write");
        assert_eq!(examine(&root.join("project")), Folder::Foreign(3));
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(root.join("nowhere"), root.join("dangling"))
                .expect("symlink");
            assert_eq!(examine(&root.join("dangling")), Folder::File);
        }
    }
}
