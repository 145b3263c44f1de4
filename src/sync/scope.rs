//! Shared scopes: which records this store pushes.
//!
//! Nothing is shared unless named (`[sync] share` or `--share`). A scope is a
//! namespace (`team`, or `namespace:team`), a project (`project:/home/me/api`,
//! matched against the record's `project`, the session's git root or working
//! folder), or `*` for every record. Pulling is not scoped: whatever others
//! shared comes in.

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
}
