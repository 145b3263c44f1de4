//! Relevance judgements: the graded records of each query (BEIR qrels), and
//! for agent questions the sessions that answer them.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use knowledge_db::error::{Error, Result};

/// Relevance judgements: per query, the graded records, and for agent
/// questions the answer sessions.
pub(super) struct Judgements {
    pub(super) records: HashMap<String, HashMap<String, f64>>,
    pub(super) sessions: Option<HashMap<String, std::collections::HashSet<String>>>,
}

impl Judgements {
    /// `qrels/records.tsv` and `qrels/sessions.tsv` when both exist (agent
    /// questions), else every `qrels/*.tsv` as record judgements.
    pub(super) fn read(dir: &Path) -> Result<Judgements> {
        let (records, sessions) = (dir.join("records.tsv"), dir.join("sessions.tsv"));
        if records.is_file() && sessions.is_file() {
            let sessions = read_qrels_files(&[sessions])?
                .into_iter()
                .map(|(q, s)| (q, s.into_keys().collect()))
                .collect();
            return Ok(Judgements {
                records: read_qrels_files(&[records])?,
                sessions: Some(sessions),
            });
        }
        Ok(Judgements {
            records: read_qrels(dir)?,
            sessions: None,
        })
    }
}

/// Relevance judgements: query id → document id → grade, from every `*.tsv`.
pub fn read_qrels(dir: &Path) -> Result<HashMap<String, HashMap<String, f64>>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| Error::io(dir, e))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "tsv"))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(Error::Usage(format!(
            "no qrels/*.tsv files in {}",
            dir.display()
        )));
    }
    read_qrels_files(&files)
}

/// Judgements from the given TSV files (query id, document id, grade).
fn read_qrels_files(files: &[PathBuf]) -> Result<HashMap<String, HashMap<String, f64>>> {
    let mut qrels: HashMap<String, HashMap<String, f64>> = HashMap::new();
    for file in files {
        let text = std::fs::read_to_string(file).map_err(|e| Error::io(file, e))?;
        for (i, line) in text.lines().enumerate() {
            let cols: Vec<&str> = line.split('\t').collect();
            if cols.len() < 3 || line.trim().is_empty() {
                continue;
            }
            let Ok(grade) = cols[2].trim().parse::<f64>() else {
                if i == 0 {
                    continue; // header
                }
                return Err(Error::Usage(format!(
                    "{}:{}: relevance `{}` is not a number",
                    file.display(),
                    i + 1,
                    cols[2]
                )));
            };
            qrels
                .entry(cols[0].to_string())
                .or_default()
                .insert(cols[1].to_string(), grade);
        }
    }
    Ok(qrels)
}
