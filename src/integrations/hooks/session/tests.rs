//! Unit tests of the session state's text rules: topic lines, harness
//! prompts, test commands.

use super::observe::is_test_command;
use super::segments::{is_harness_prompt, topic_line};

#[test]
fn topic_line_skips_harness_markup() {
    assert_eq!(
            topic_line("<task-notification>\n<task-id>b1</task-id>\n<summary>Agent finished the review</summary>"),
            "Agent finished the review"
        );
    assert_eq!(
        topic_line("\n  Fix the login bug\nmore"),
        "Fix the login bug"
    );
    assert_eq!(topic_line("<a>\n<b>x</b>"), "");
}

#[test]
fn plans_get_their_title_and_harness_prompts_are_not_topics() {
    assert_eq!(
        topic_line("Implement the following plan:\n\n# Remove transcript_path Storage\n\nmore"),
        "Implement the following plan: Remove transcript_path Storage"
    );
    assert!(is_harness_prompt(
        "<command-name>/exit</command-name>\n<command-message>exit</command-message>"
    ));
    assert!(is_harness_prompt(
        "[Request interrupted by user for tool use]"
    ));
    assert!(!is_harness_prompt("Fix the <b> tag in the header"));
    assert!(is_test_command("cd web && npm test -- --watch=false"));
    assert!(!is_test_command("ls -la"));
}
