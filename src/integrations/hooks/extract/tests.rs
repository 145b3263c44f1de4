use super::*;

#[test]
fn short_and_pronoun_decisions_are_noise() {
    assert!(decisions("I'll use that.").is_empty());
    assert!(decisions("OK, I'll use this instead.").is_empty());
    assert_eq!(
        decisions("I'll use a jittered backoff instead of a fixed delay, capped at 30 seconds."),
        ["I'll use a jittered backoff instead of a fixed delay, capped at 30 seconds."]
    );
}

#[test]
fn quoted_examples_are_not_decisions() {
    let text = r#"The summary has sections (e.g., "Files Summary", "Key Decisions") and a header line for each."#;
    assert!(decisions(text).is_empty(), "{:?}", decisions(text));
    assert!(decisions("Rename `decision_cues` to `cues` in the module file.").is_empty());
}

#[test]
fn table_rows_code_and_headings_are_not_decisions() {
    let text = "| Option | Decision |\n|---|---|\n| A | use PKCE instead of implicit flow |\n\
                ```rust\n// decided: use a TTL instead of flushing\nlet x = 1;\n```\n\
                ## Decision: rather than that\n    instead of indented code here";
    assert!(decisions(text).is_empty(), "{:?}", decisions(text));
}

#[test]
fn questions_and_options_are_not_decisions() {
    let text = "Should we use a mutex instead of a channel here? \
                If we move it to paths, we would import strategy instead of the other way round. \
                Option 2 is cleanest long-term but bigger refactor rather than a quick fix.";
    assert!(decisions(text).is_empty(), "{:?}", decisions(text));
}

#[test]
fn causes_and_choices_are_decisions() {
    let text = "The root cause was a missing import of the backoff module. \
                Since it is exported, I'll leave it in place for now and note it.";
    assert_eq!(decisions(text).len(), 2);
}

#[test]
fn outcomes_report_results_not_plans() {
    let text = "Now let me run the tests.\nRemove from manual_commit_session.go initialization:\n\
                All tests pass, including the new wingman tests. Lint passes clean (0 issues).";
    assert_eq!(
        outcomes(text),
        [
            "All tests pass, including the new wingman tests.",
            "Lint passes clean (0 issues)."
        ]
    );
    assert!(outcomes("Task 3: Remove TranscriptPath from session.State**").is_empty());
}

#[test]
fn rejections_and_bare_exit_codes_are_not_errors() {
    let rejected = "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, the new_string was NOT written to the file).";
    assert!(errors(rejected, true, false).is_empty());
    assert!(errors("Exit code 1", true, true).is_empty());
    assert!(errors(
        "<tool_use_error>File has not been read yet. Read it first before writing to it.</tool_use_error>",
        true,
        false
    )
    .is_empty());
    assert!(errors(
        "Exit code 1\n(eval):cd:1: no such file or directory: cmd/x",
        true,
        true
    )
    .is_empty());
}

#[test]
fn errors_are_the_telling_lines() {
    let lint = "Exit code 1\n[lint:gofmt] $ ~/cli/mise-tasks/lint/gofmt\n[lint:gomod] go: downloading x v1\n\
                [lint:go] cmd/cli/review.go:248:10: G204: Subprocess launched with variable (gosec)\n\
                [lint:go] \t\tcmd := exec.CommandContext(ctx)\n\
                [lint:go] cmd/cli/review.go:346:3: error is not nil (line 344) but it returns nil (nilerr)\n\
                [lint:go] 2 issues:\n[lint:go] ERROR task failed";
    assert_eq!(
        errors(lint, true, true),
        [
            "cmd/cli/review.go:248:10: G204: Subprocess launched with variable (gosec)",
            "cmd/cli/review.go:346:3: error is not nil (line 344) but it returns nil (nilerr)"
        ]
    );
    // Piped output (no error flag): only strong lines count.
    let piped = "ok  \tpkg/a\t0.1s\n--- FAIL: TestList (0.01s)\npanic: invalid checkpoint ID \"multi1\": must be 12 hex [recovered]\nFAIL\tpkg/b\t0.2s";
    assert_eq!(
        errors(piped, false, true),
        ["panic: invalid checkpoint ID \"multi1\": must be 12 hex [recovered]"]
    );
    assert!(errors("grep found: error handling in a.go", false, true).is_empty());
    // A test's log lines look like diagnostics; only the failing one counts.
    let go_test = "=== RUN   TestAttribution\n    commit_test.go:1972: checkpoint 1: expected 0 user lines added, got 4\n    commit_test.go:2015: Checkpoint 2 PromptAttribution: user_added=6, agent_added=4\n--- FAIL: TestAttribution (0.02s)";
    assert_eq!(
        errors(go_test, true, true),
        ["commit_test.go:1972: checkpoint 1: expected 0 user lines added, got 4"]
    );
    assert!(errors("test result: ok. 12 passed; 0 failed", false, true).is_empty());
}

#[test]
fn shell_commands_that_write_files() {
    let loop_ = "for file in cmd/a/hooks.go \\\n  cmd/a/b_test.go; do\n  if ! grep -q \"paths\\.\" \"$file\"; then\n    sed -i '' '/paths\"/d' \"$file\"\n  fi\ndone";
    assert_eq!(
        shell_written_files(loop_),
        ["cmd/a/hooks.go", "cmd/a/b_test.go"]
    );
    assert_eq!(
        shell_written_files("sed -i 's/a\\.b/c/g' src/x.rs"),
        ["src/x.rs"]
    );
    assert_eq!(
        shell_written_files("git mv src/old.rs src/new.rs"),
        ["src/old.rs", "src/new.rs"]
    );
    assert_eq!(
        shell_written_files("cat > notes/plan.md <<'EOF'\nx\nEOF"),
        ["notes/plan.md"]
    );
    assert_eq!(
        shell_written_files("cp a/template.toml config.toml"),
        ["config.toml"]
    );
    assert!(shell_written_files("grep -rn 'x' src/lib.rs > /tmp/out.txt").is_empty());
    assert!(shell_written_files("cargo test 2>&1 | tail -30").is_empty());
    assert!(shell_written_files("grep -n foo src/main.rs").is_empty());
}

#[test]
fn paths_are_shown_relative_to_the_project() {
    assert_eq!(
        project_path("/home/u/p/src/a.rs", Some("/home/u/p")),
        "src/a.rs"
    );
    assert_eq!(project_path("/etc/hosts", Some("/home/u/p")), "/etc/hosts");
    assert_eq!(project_path("./src/a.rs", None), "src/a.rs");
}
