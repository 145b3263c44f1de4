//! Projects: the piece of work a record belongs to.
//!
//! A coding agent works in a folder; what it learns there is mostly about
//! that folder's code. A record's project is named by a folder: the git root
//! of the session's working directory (the nearest folder, from the working
//! directory up, that holds a `.git` folder or a worktree's `.git` file), else
//! the working directory itself. So every session started anywhere inside one
//! repository shares one project, and a folder that is no repository is its
//! own project.
//!
//! Finding the root only looks at the file system (no `git` process runs, no
//! repository config is read): it costs a few `stat` calls and is safe in a
//! repository whose config would run programs. A working directory that no
//! longer exists (history copied from another machine) is its own project, as
//! written.
//!
//! Projects are not namespaces. A namespace is a boundary the caller chooses
//! (what a scoped MCP server may read and write, what a team shares); a
//! project is a fact about where the work happened, a default scope that a
//! search can widen. A record with no project (a note added by hand, a
//! benchmark corpus) belongs to every project's scope.

use std::path::{Component, Path, PathBuf};

/// Set to a folder, it is the current project whatever the working directory
/// (for scripts and tests); set to `*`, searches default to every project.
pub const PROJECT_ENV: &str = "KNOWLEDGE_DB_PROJECT";

/// How many folders up from the working directory a `.git` is looked for.
const MAX_DEPTH: usize = 64;

/// Working directories whose project this thread looked up lately: a
/// transcript names the same one on every line.
const REMEMBERED: usize = 64;

thread_local! {
    static LOOKED_UP: std::cell::RefCell<Vec<(PathBuf, String)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// The project of a session whose working directory is `cwd`: its git root,
/// else `cwd` itself (made absolute and without `.`/`..` parts).
pub fn project_of(cwd: &Path) -> String {
    let cwd = normalize(cwd);
    if let Some(project) = LOOKED_UP.with(|seen| {
        let seen = seen.borrow();
        seen.iter()
            .find(|(dir, _)| *dir == cwd)
            .map(|(_, p)| p.clone())
    }) {
        return project;
    }
    let project = git_root(&cwd)
        .unwrap_or_else(|| cwd.clone())
        .display()
        .to_string();
    LOOKED_UP.with(|seen| {
        let mut seen = seen.borrow_mut();
        if seen.len() >= REMEMBERED {
            seen.remove(0);
        }
        seen.push((cwd, project.clone()));
    });
    project
}

/// The project of this process: `$KNOWLEDGE_DB_PROJECT` when set (`None` when
/// it is `*`), else the project of the current directory.
pub fn current() -> Option<String> {
    match std::env::var(PROJECT_ENV) {
        Ok(value) if value.trim() == "*" => None,
        Ok(value) if !value.trim().is_empty() => Some(project_of(Path::new(value.trim()))),
        _ => std::env::current_dir().ok().map(|dir| project_of(&dir)),
    }
}

/// The nearest folder from `dir` up that holds `.git`; for a linked
/// worktree (a `.git` file naming `<main>/.git/worktrees/<name>`), the main
/// worktree's folder: every worktree of a repository is one project.
fn git_root(dir: &Path) -> Option<PathBuf> {
    let root = dir
        .ancestors()
        .take(MAX_DEPTH)
        .find(|folder| std::fs::symlink_metadata(folder.join(".git")).is_ok())?;
    Some(main_worktree(root).unwrap_or_else(|| root.to_path_buf()))
}

/// The main worktree of the linked worktree at `root`, if it is one.
fn main_worktree(root: &Path) -> Option<PathBuf> {
    use std::io::Read;
    let file = std::fs::File::open(root.join(".git")).ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut text = String::new();
    file.take(4096).read_to_string(&mut text).ok()?;
    let gitdir = text.lines().find_map(|l| l.strip_prefix("gitdir:"))?.trim();
    let gitdir = normalize(&root.join(gitdir));
    let shown = gitdir.to_string_lossy();
    let main = shown.rsplit_once("/.git/worktrees/")?.0;
    (!main.is_empty()).then(|| PathBuf::from(main))
}

/// `path` made absolute (against the current directory) with `.` and `..`
/// resolved lexically and no trailing separator; symlinks are not followed,
/// so the same folder written the same way is the same project.
fn normalize(path: &Path) -> PathBuf {
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|dir| dir.join(path))
            .unwrap_or_else(|_| path.to_path_buf())
    };
    let mut out = PathBuf::new();
    for part in absolute.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_inside_a_repository_belongs_to_its_root() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(repo.join("src/deep")).unwrap();
        let expected = repo.display().to_string();
        assert_eq!(project_of(&repo.join("src/deep")), expected);
        assert_eq!(project_of(&repo.join("src/deep/../deep/.")), expected);
        assert_eq!(project_of(&repo), expected);
    }

    #[test]
    fn a_worktree_belongs_to_its_main_repository() {
        let dir = tempfile::tempdir().unwrap();
        let main = dir.path().join("main");
        std::fs::create_dir_all(main.join(".git/worktrees/feature")).unwrap();
        let tree = dir.path().join("trees/feature");
        std::fs::create_dir_all(tree.join("src")).unwrap();
        let gitdir = main.join(".git/worktrees/feature");
        std::fs::write(tree.join(".git"), format!("gitdir: {}\n", gitdir.display())).unwrap();
        assert_eq!(project_of(&tree.join("src")), main.display().to_string());
        // A submodule (or any other gitdir) is a project of its own.
        let sub = dir.path().join("sub");
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(sub.join(".git"), "gitdir: ../main/.git/modules/sub\n").unwrap();
        assert_eq!(project_of(&sub), sub.display().to_string());
    }

    #[test]
    fn a_folder_outside_any_repository_or_gone_is_its_own_project() {
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("plain");
        std::fs::create_dir_all(&plain).unwrap();
        // The temp folder may sit inside a repository on some machines; only
        // check when it does not.
        if git_root(&plain).is_none() {
            assert_eq!(project_of(&plain), plain.display().to_string());
        }
        let gone = Path::new("/nonexistent-kdb-test/Users/me/proj/");
        assert_eq!(project_of(gone), "/nonexistent-kdb-test/Users/me/proj");
    }
}
