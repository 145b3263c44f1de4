//! Unified diffs of small text files: what `hook install --dry-run` and
//! `hook uninstall --dry-run` show before they write anything.

use std::path::Path;

/// A unified diff of two texts (whole-file line LCS; config files are small),
/// with three lines of context around each change.
pub fn unified_diff(path: &Path, before: &str, after: &str) -> String {
    let a: Vec<&str> = before.lines().collect();
    let b: Vec<&str> = after.lines().collect();
    let ops = line_ops(&a, &b);
    let mut out = format!(
        "--- {}\n+++ {}\n",
        if before.is_empty() {
            "/dev/null".to_string()
        } else {
            path.display().to_string()
        },
        path.display()
    );
    const CONTEXT: usize = 3;
    let changed: Vec<usize> = (0..ops.len()).filter(|&i| ops[i].0 != ' ').collect();
    let mut i = 0;
    while i < changed.len() {
        let start = changed[i].saturating_sub(CONTEXT);
        let mut end = (changed[i] + CONTEXT + 1).min(ops.len());
        while i + 1 < changed.len() && changed[i + 1] < end + CONTEXT {
            i += 1;
            end = (changed[i] + CONTEXT + 1).min(ops.len());
        }
        let (old_start, new_start) = positions(&ops[..start]);
        let (old_len, new_len) = positions(&ops[start..end]);
        out.push_str(&format!(
            "@@ -{},{} +{},{} @@\n",
            old_start + usize::from(old_len > 0),
            old_len,
            new_start + usize::from(new_len > 0),
            new_len
        ));
        for (mark, line) in &ops[start..end] {
            out.push_str(&format!("{mark}{line}\n"));
        }
        i += 1;
    }
    out
}

/// Lines counted on the old and the new side of `ops`.
fn positions(ops: &[(char, &str)]) -> (usize, usize) {
    let old = ops.iter().filter(|(m, _)| *m != '+').count();
    let new = ops.iter().filter(|(m, _)| *m != '-').count();
    (old, new)
}

/// Edit script from `a` to `b`: (' ', kept), ('-', removed), ('+', added).
fn line_ops<'a>(a: &[&'a str], b: &[&'a str]) -> Vec<(char, &'a str)> {
    let (n, m) = (a.len(), b.len());
    let mut lcs = vec![vec![0u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    let mut ops = Vec::with_capacity(n + m);
    while i < n || j < m {
        if i < n && j < m && a[i] == b[j] {
            ops.push((' ', a[i]));
            i += 1;
            j += 1;
        } else if i < n && (j == m || lcs[i + 1][j] >= lcs[i][j + 1]) {
            ops.push(('-', a[i]));
            i += 1;
        } else {
            ops.push(('+', b[j]));
            j += 1;
        }
    }
    ops
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diff_marks_added_and_removed_lines() {
        let diff = unified_diff(Path::new("f"), "a\nb\nc\n", "a\nB\nc\nd\n");
        assert!(diff.contains("-b\n+B\n"), "{diff}");
        assert!(diff.contains("+d\n"), "{diff}");
        assert!(diff.contains("@@ -1,3 +1,4 @@"), "{diff}");
        let new_file = unified_diff(Path::new("f"), "", "x\n");
        assert!(
            new_file.starts_with("--- /dev/null\n+++ f\n@@ -0,0 +1,1 @@\n+x\n"),
            "{new_file}"
        );
    }
}
