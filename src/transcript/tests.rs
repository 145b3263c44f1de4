//! Unit tests of the transcript model and its readers.

use super::*;

#[test]
fn glued_values_and_garbage_are_counted() {
    let text = b"{\"role\":\"user\",\"content\":\"a\"}{\"role\":\"assistant\",\"content\":\"b\"}\nnot json\n{\"role\":\"user\",\"content\":\"c\"}";
    let t = read_slice(Path::new("x.jsonl"), text, None, ReadFrom::default()).unwrap();
    assert_eq!(t.format, Format::Generic);
    assert_eq!(t.messages.len(), 3);
    assert_eq!(t.skipped.non_json, 1);
    assert_eq!(t.skipped.glued_values, 1);
    // The last line has no newline: it is read, but a resumed read starts before it.
    assert_eq!(t.end_offset as usize, text.len() - 29);
    assert_eq!(t.messages[2].turn_index, 1);
}

#[test]
fn a_first_line_still_being_written_is_read_again_from_the_start() {
    // `{` alone looks like the start of a pretty-printed JSON document; it
    // does not parse, so nothing of it counts as read (before, the next read
    // resumed after it and lost the line).
    let full = b"{\"role\":\"user\",\"content\":\"first\"}\n";
    for cut in [1, 10] {
        let t = read_slice(
            Path::new("x.jsonl"),
            &full[..cut],
            Some(Format::Generic),
            ReadFrom::default(),
        )
        .unwrap();
        assert_eq!((t.messages.len(), t.end_offset), (0, 0), "cut at {cut}");
    }
}

#[test]
fn invalid_utf8_inside_a_message_is_replaced_not_dropped() {
    let text = b"{\"role\":\"user\",\"content\":\"caf\xe9 \xff\xfe ok\"}\n";
    let t = read_slice(Path::new("x.jsonl"), text, None, ReadFrom::default()).unwrap();
    assert_eq!(t.messages.len(), 1);
    assert_eq!(t.messages[0].text(), "caf\u{fffd} \u{fffd}\u{fffd} ok");
    assert_eq!(t.skipped.non_json, 0);
    assert_eq!(t.skipped.invalid_utf8_bytes, 3);
}

#[test]
fn resuming_continues_turns() {
    let text = b"{\"role\":\"user\",\"content\":\"a\"}\n{\"role\":\"user\",\"content\":\"b\"}\n";
    let from = ReadFrom {
        offset: 30,
        prompts_before: 1,
        session_id: None,
    };
    let t = read_slice(Path::new("x.jsonl"), text, None, from).unwrap();
    assert_eq!(t.messages.len(), 1);
    assert_eq!(t.messages[0].line, 2);
    assert_eq!(t.messages[0].turn_index, 1);
}

/// Claude Code (2.1.328) writes `<session>/subagents/agent-<id>.meta.json`
/// beside each subagent's transcript; a folder walk must not take it for a
/// transcript (ingest of `~/.claude/projects` failed on it whole).
#[test]
fn a_folder_walk_leaves_out_claude_codes_subagent_meta_files() {
    let dir = tempfile::tempdir().unwrap();
    let subagents = dir.path().join("proj/abc/subagents");
    std::fs::create_dir_all(&subagents).unwrap();
    std::fs::write(dir.path().join("proj/abc.jsonl"), "{}\n").unwrap();
    std::fs::write(subagents.join("agent-a1.jsonl"), "{}\n").unwrap();
    std::fs::write(
        subagents.join("agent-a1.meta.json"),
        r#"{"agentType":"general-purpose","description":"Review","finished":true}"#,
    )
    .unwrap();
    std::fs::write(dir.path().join("whole.json"), "[]").unwrap();
    let found = find_files(&[dir.path().to_path_buf()]).unwrap();
    let mut names: Vec<String> = found
        .iter()
        .map(|p| p.strip_prefix(dir.path()).unwrap().display().to_string())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "proj/abc.jsonl",
            "proj/abc/subagents/agent-a1.jsonl",
            "whole.json"
        ]
    );
}
