//! Scopes: which records this store pushes, and which it pulls.
//!
//! Nothing is shared unless named (`[sync] share` or `--share`). A scope is a
//! namespace (`team`, or `namespace:team`), a project (`project:/home/me/api`,
//! matched against the record's `project`, the session's git root or working
//! folder), or `*` for every record.
//!
//! Pulling is scoped the same way (`[sync] pull`, default `["*"]`: every
//! record the server holds). Any list without `*` is a [`PullScope`]: the
//! projects this store has worked on (the projects of its own records, found
//! in the index's fast columns), plus the scopes named, plus whatever this
//! origin wrote itself. Deletes always come, whatever their scope: they are a
//! few bytes, and a record pulled before a scope narrowed must still go.

use crate::error::{Error, Result};
use crate::record::Record;

/// One shared scope.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Scope {
    /// Every record of this namespace.
    Namespace(String),
    /// Every record whose `project` is this folder.
    Project(String),
    /// Every record.
    All,
}

impl Scope {
    /// Reads one scope: `NAME`, `namespace:NAME`, `project:PATH` or `*`.
    pub fn parse(text: &str) -> Result<Scope> {
        let text = text.trim();
        let bad = |why: &str| {
            Error::Usage(format!(
                "share scope `{text}`: {why} (expected NAME, namespace:NAME, project:PATH or *)"
            ))
        };
        if text == "*" {
            return Ok(Scope::All);
        }
        let (kind, name) = match text.split_once(':') {
            Some(("namespace" | "ns", name)) => ("namespace", name),
            Some(("project", name)) => ("project", name),
            Some((other, _)) if !other.contains('/') => {
                return Err(bad(&format!("unknown kind `{other}`")))
            }
            _ => ("namespace", text),
        };
        let name = name.trim();
        if name.is_empty() {
            return Err(bad("empty name"));
        }
        Ok(match kind {
            "project" => Scope::Project(name.trim_end_matches('/').to_string()),
            _ => Scope::Namespace(name.to_string()),
        })
    }

    /// The scope as written in config and reports.
    pub fn describe(&self) -> String {
        match self {
            Scope::Namespace(name) => format!("namespace:{name}"),
            Scope::Project(path) => format!("project:{path}"),
            Scope::All => "*".to_string(),
        }
    }
}

/// The scopes in force.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scopes(Vec<Scope>);

impl Scopes {
    /// Reads every scope, sorted and without repeats.
    pub fn parse<S: AsRef<str>>(texts: &[S]) -> Result<Scopes> {
        let mut scopes = texts
            .iter()
            .map(|t| Scope::parse(t.as_ref()))
            .collect::<Result<Vec<_>>>()?;
        scopes.sort();
        scopes.dedup();
        Ok(Scopes(scopes))
    }

    /// Whether nothing is shared.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The scopes, one string (the manifest keeps it to notice a change).
    pub fn fingerprint(&self) -> String {
        self.0
            .iter()
            .map(Scope::describe)
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Every scope, as written.
    pub fn names(&self) -> Vec<String> {
        self.0.iter().map(Scope::describe).collect()
    }

    /// Whether a record of `namespace` is shared whatever its project: `Some`
    /// when the namespace alone decides, `None` when the project must be read.
    pub fn decides_by_namespace(&self, namespace: &str) -> Option<bool> {
        let mut project_scopes = false;
        for scope in &self.0 {
            match scope {
                Scope::All => return Some(true),
                Scope::Namespace(name) if name == namespace => return Some(true),
                Scope::Project(_) => project_scopes = true,
                Scope::Namespace(_) => {}
            }
        }
        (!project_scopes).then_some(false)
    }

    /// Whether `record` is shared.
    pub fn shares(&self, record: &Record) -> bool {
        if let Some(decided) = self.decides_by_namespace(&record.namespace) {
            return decided;
        }
        let project = record
            .source
            .get("project")
            .and_then(serde_json::Value::as_str)
            .map(|p| p.trim_end_matches('/'));
        self.0.iter().any(|scope| match scope {
            Scope::Project(path) => project == Some(path.as_str()),
            _ => false,
        })
    }
}

/// What this store pulls: every record, or those of some projects and
/// namespaces (and, always, this origin's own records and every delete).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PullScope {
    /// Every record (`*` in `[sync] pull`).
    pub all: bool,
    /// Projects named in `[sync] pull`.
    pub named_projects: std::collections::BTreeSet<String>,
    /// Projects of this store's own records.
    pub worked_projects: std::collections::BTreeSet<String>,
    /// Namespaces named in `[sync] pull`.
    pub namespaces: std::collections::BTreeSet<String>,
}

impl PullScope {
    /// `[sync] pull`, with the projects this store has worked on.
    pub fn new<S: AsRef<str>>(
        pull: &[S],
        worked: impl IntoIterator<Item = String>,
    ) -> Result<PullScope> {
        let mut scope = PullScope::default();
        for text in pull {
            match Scope::parse(text.as_ref()).map_err(|e| match e {
                Error::Usage(m) => Error::Usage(m.replace("share scope", "pull scope")),
                other => other,
            })? {
                Scope::All => scope.all = true,
                Scope::Project(path) => {
                    scope.named_projects.insert(path);
                }
                Scope::Namespace(name) => {
                    scope.namespaces.insert(name);
                }
            }
        }
        if !scope.all {
            scope.worked_projects = worked
                .into_iter()
                .map(|p| p.trim_end_matches('/').to_string())
                .filter(|p| !p.is_empty())
                .collect();
        }
        Ok(scope)
    }

    /// Every project pulled (named or worked on).
    pub fn projects(&self) -> Vec<String> {
        self.named_projects
            .iter()
            .chain(&self.worked_projects)
            .cloned()
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect()
    }

    /// The scope as items (`*`, `project:P`, `namespace:N`), sorted: the
    /// state keeps them to see what a later scope adds.
    pub fn items(&self) -> Vec<String> {
        if self.all {
            return vec!["*".to_string()];
        }
        let mut items: Vec<String> = self
            .projects()
            .into_iter()
            .map(|p| format!("project:{p}"))
            .chain(self.namespaces.iter().map(|n| format!("namespace:{n}")))
            .collect();
        items.sort();
        items
    }

    /// The scope of saved items (`None`: a state from before pull scopes,
    /// which pulled everything).
    pub fn from_items(items: Option<&[String]>) -> PullScope {
        let Some(items) = items else {
            return PullScope {
                all: true,
                ..PullScope::default()
            };
        };
        PullScope::new(items, std::iter::empty()).unwrap_or(PullScope {
            all: true,
            ..PullScope::default()
        })
    }

    /// Whether a record of `project` and `namespace` is pulled.
    pub fn covers(&self, project: Option<&str>, namespace: &str) -> bool {
        self.all
            || self.namespaces.contains(namespace)
            || project.is_some_and(|p| {
                let p = p.trim_end_matches('/');
                self.named_projects.contains(p) || self.worked_projects.contains(p)
            })
    }

    /// What `self` pulls that `before` did not: `None` when nothing (the
    /// rows `before` skipped need no second look).
    pub fn added_since(&self, before: &PullScope) -> Option<PullScope> {
        if before.all {
            return None;
        }
        if self.all {
            return Some(self.clone());
        }
        let before_projects: std::collections::BTreeSet<String> =
            before.projects().into_iter().collect();
        let added = PullScope {
            all: false,
            named_projects: self
                .projects()
                .into_iter()
                .filter(|p| !before_projects.contains(p))
                .collect(),
            worked_projects: Default::default(),
            namespaces: self
                .namespaces
                .difference(&before.namespaces)
                .cloned()
                .collect(),
        };
        (!added.named_projects.is_empty() || !added.namespaces.is_empty()).then_some(added)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(namespace: &str, project: Option<&str>) -> Record {
        let mut source = serde_json::json!({"id": "n", "text": "t"});
        if let Some(p) = project {
            source["project"] = p.into();
        }
        let options = crate::record::ParseOptions {
            namespace: Some(namespace.into()),
            ..Default::default()
        };
        crate::record::parse_record(source, &crate::error::Origin::file("t"), &options).unwrap()
    }

    #[test]
    fn reads_every_form() {
        let scopes = Scopes::parse(&["team", "namespace:team", "project:/src/api/", "*"]).unwrap();
        assert_eq!(scopes.fingerprint(), "namespace:team,project:/src/api,*");
        assert!(Scope::parse("colour:blue").is_err());
        assert!(Scope::parse("project:").is_err());
        assert!(Scopes::parse::<&str>(&[]).unwrap().is_empty());
    }

    #[test]
    fn shares_by_namespace_or_project() {
        let scopes = Scopes::parse(&["team", "project:/src/api"]).unwrap();
        assert!(scopes.shares(&record("team", None)));
        assert!(scopes.shares(&record("default", Some("/src/api/"))));
        assert!(!scopes.shares(&record("default", Some("/src/web"))));
        assert!(!scopes.shares(&record("private", None)));
        assert_eq!(scopes.decides_by_namespace("team"), Some(true));
        assert_eq!(scopes.decides_by_namespace("other"), None);
        let namespaces = Scopes::parse(&["team"]).unwrap();
        assert_eq!(namespaces.decides_by_namespace("other"), Some(false));
        assert!(!Scopes::default().shares(&record("team", None)));
    }

    #[test]
    fn a_pull_scope_is_the_named_and_the_worked_on() {
        let worked = vec!["/src/api/".to_string(), "/src/web".to_string()];
        let scope = PullScope::new(&["project:/src/docs", "handbook"], worked.clone()).unwrap();
        assert_eq!(
            scope.items(),
            vec![
                "namespace:handbook",
                "project:/src/api",
                "project:/src/docs",
                "project:/src/web"
            ]
        );
        assert!(scope.covers(Some("/src/api"), "team"));
        assert!(scope.covers(None, "handbook"));
        assert!(!scope.covers(Some("/src/payroll"), "team"));
        assert!(!scope.covers(None, "team"));
        let all = PullScope::new(&["*"], worked).unwrap();
        assert_eq!(all.items(), vec!["*"]);
        assert!(all.worked_projects.is_empty());
        assert!(all.covers(None, "x"));
        assert!(PullScope::new(&["colour:blue"], Vec::new())
            .unwrap_err()
            .to_string()
            .contains("pull scope"));
    }

    #[test]
    fn a_wider_scope_names_what_it_adds() {
        let before = PullScope::from_items(Some(&["project:/a".to_string()]));
        let after = PullScope::new(&["project:/a", "project:/b", "ns"], Vec::new()).unwrap();
        let added = after.added_since(&before).unwrap();
        assert_eq!(added.items(), vec!["namespace:ns", "project:/b"]);
        assert_eq!(before.added_since(&after), None);
        assert_eq!(after.added_since(&PullScope::from_items(None)), None);
        let all = PullScope::new(&["*"], Vec::new()).unwrap();
        assert_eq!(all.added_since(&before).unwrap().items(), vec!["*"]);
        assert_eq!(
            PullScope::from_items(Some(&after.items())).items(),
            after.items()
        );
    }
}
