//! Shell commands read for the project files they write: in-place editors,
//! moves, removals, copies, redirections and the loops that hand files to them.

/// Files a shell command writes: the file arguments of in-place editors
/// (`sed -i`, `perl -pi`), of `tee`, `mv`, `git mv`, `rm`, `git rm`, `touch`,
/// `truncate`, the target of `cp`, output redirections (`> file`), and the
/// files a `for f in …` loop hands to one of them. Temporary and device files
/// are left out.
pub fn shell_written_files(command: &str) -> Vec<String> {
    let words = shell_words(command);
    let mut out: Vec<String> = Vec::new();
    let mut loop_var_written = false;
    for simple in words.split(|w| is_separator(w)) {
        let args = program_and_args(simple);
        let Some((program, rest)) = args.split_first() else {
            continue;
        };
        let files: Vec<&String> = rest.iter().filter(|w| looks_like_file(w)).collect();
        let writes = match program.as_str() {
            "sed" => rest
                .iter()
                .any(|w| w.starts_with("-i") || w == "--in-place"),
            "perl" => rest
                .iter()
                .any(|w| w.starts_with('-') && !w.starts_with("--") && w.contains('i')),
            "tee" | "mv" | "rm" | "touch" | "truncate" => true,
            "cp" => {
                out.extend(files.last().map(|f| f.to_string()));
                false
            }
            _ => false,
        };
        if writes {
            out.extend(files.iter().map(|f| f.to_string()));
            loop_var_written |= rest.iter().any(|w| w.starts_with('$'));
        }
    }
    if loop_var_written {
        // `for f in a.go b.go; do sed -i … "$f"; done`: the list is what is written.
        if let Some(at) = words.iter().position(|w| w == "for") {
            let list = words[at..]
                .iter()
                .skip_while(|w| *w != "in")
                .skip(1)
                .take_while(|w| !is_separator(w));
            out.extend(list.filter(|w| looks_like_file(w)).cloned());
        }
    }
    for (i, word) in words.iter().enumerate() {
        if matches!(word.as_str(), ">" | ">>" | "1>") {
            if let Some(target) = words.get(i + 1).filter(|t| looks_like_file(t)) {
                out.push(target.clone());
            }
        } else if let Some(target) = word
            .strip_prefix(">>")
            .or_else(|| word.strip_prefix('>'))
            .filter(|t| looks_like_file(t))
        {
            out.push(target.to_string());
        }
    }
    let mut unique = Vec::new();
    for file in out {
        if !unique.contains(&file) {
            unique.push(file);
        }
    }
    unique
}

fn is_separator(word: &str) -> bool {
    matches!(
        word,
        ";" | "&&" | "||" | "|" | "&" | "do" | "then" | "else" | "done" | "fi"
    )
}

/// A simple command from its program on: without leading `if`, `!`, `sudo`,
/// `xargs`, variable assignments, and with `git mv` / `git rm` as `mv` / `rm`.
fn program_and_args(words: &[String]) -> &[String] {
    let mut i = 0;
    while i < words.len()
        && (matches!(
            words[i].as_str(),
            "if" | "!" | "sudo" | "xargs" | "time" | "command" | "while"
        ) || (words[i].contains('=') && !words[i].starts_with('-')))
    {
        i += 1;
    }
    if words.get(i).is_some_and(|w| w == "git")
        && words.get(i + 1).is_some_and(|w| w == "mv" || w == "rm")
    {
        i += 1;
    }
    &words[i..]
}

/// A path to a project file: has an extension, is not a flag, a glob, a
/// variable, a URL, a pattern (backslashes) or a temporary or device file.
fn looks_like_file(word: &str) -> bool {
    let word = word.trim_end_matches(';');
    if word.is_empty()
        || word.starts_with('-')
        || word.starts_with('$')
        || word.contains([
            '*', '?', '\\', '$', '=', ':', '{', '}', '"', '\'', '<', '>', '|',
        ])
        || word.starts_with("/tmp/")
        || word.starts_with("/dev/")
        || word.starts_with("/var/folders/")
        || word.contains("://")
    {
        return false;
    }
    let name = word.rsplit('/').next().unwrap_or(word);
    match name.rsplit_once('.') {
        Some((stem, ext)) => {
            !stem.is_empty()
                && (1..=8).contains(&ext.len())
                && ext.chars().all(|c| c.is_ascii_alphanumeric())
                && ext.chars().any(|c| c.is_ascii_alphabetic())
        }
        None => false,
    }
}

/// A shell command split into words: quotes group (and are removed), `;`, `&&`,
/// `||` and `|` stand alone, newlines separate.
fn shell_words(command: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let mut chars = command.chars().peekable();
    let flush = |word: &mut String, words: &mut Vec<String>| {
        if !word.is_empty() {
            words.push(std::mem::take(word));
        }
    };
    while let Some(c) = chars.next() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => word.push(c),
            None => match c {
                // Quotes group; a quoted script such as 's/a\.b/c/' is still
                // never taken for a path (see `looks_like_file`).
                '\'' | '"' => quote = Some(c),
                ' ' | '\t' | '\r' => flush(&mut word, &mut words),
                '\n' => {
                    flush(&mut word, &mut words);
                    if word_before_newline_continues(&words) {
                        words.pop();
                    } else {
                        words.push(";".into());
                    }
                }
                ';' => {
                    flush(&mut word, &mut words);
                    words.push(";".into());
                }
                '|' | '&' => {
                    flush(&mut word, &mut words);
                    let mut op = c.to_string();
                    if chars.peek() == Some(&c) {
                        op.push(c);
                        chars.next();
                    }
                    words.push(op);
                }
                _ => word.push(c),
            },
        }
    }
    flush(&mut word, &mut words);
    words
}

/// A backslash before a newline continues the line: the `\\` word goes.
fn word_before_newline_continues(words: &[String]) -> bool {
    words.last().is_some_and(|w| w == "\\")
}
