#!/usr/bin/env python3
"""Writes the Claude Code transcripts the hook tests read (tests/hooks.rs).

The lines follow ../shared/reference/interop.md section 1: envelopes with uuid,
parentUuid, sessionId, requestId; one API response split over two lines
(thinking, then tool_use) sharing message.id and requestId; TaskCreate results
carrying toolUseResult.task; a TaskUpdate keyed `id` instead of `taskId`; a
failed TaskUpdate (is_error); usage figures growing with the context; a
summary line, a file-history-snapshot, a sidechain line and a non-JSON line.
Run it from this folder: python3 make_fixtures.py (writes gzipped .jsonl.gz files,
as the other transcript samples, so that `knowledge-db add data-samples/` skips them).
"""
import gzip
import json

CWD = "/home/dev/httpkit"


def write_gz(path, lines):
    """Gzipped (as the other transcript samples, so `add data-samples/` skips them), reproducibly."""
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as f:
        f.write(("\n".join(lines) + "\n").encode())


class Session:
    def __init__(self, session_id, context_start, context_step):
        self.sid = session_id
        self.lines = []
        self.n = 0
        self.parent = None
        self.context = context_start
        self.step = context_step
        self.minute = 0

    def stamp(self):
        self.minute += 1
        return "2026-07-06T%02d:%02d:00.000Z" % (9 + self.minute // 60, self.minute % 60)

    def envelope(self, kind, uuid, **extra):
        line = {"parentUuid": self.parent, "isSidechain": False, "userType": "external",
                "cwd": CWD, "sessionId": self.sid, "version": "2.1.202", "gitBranch": "main",
                "type": kind, "uuid": uuid, "timestamp": self.stamp()}
        line.update(extra)
        self.parent = uuid
        return line

    def usage(self):
        self.context += self.step
        return {"input_tokens": 4, "cache_creation_input_tokens": 600,
                "cache_read_input_tokens": self.context, "output_tokens": 80,
                "service_tier": "standard"}

    def raw(self, obj):
        self.lines.append(obj if isinstance(obj, str) else json.dumps(obj))

    def prompt(self, text):
        self.n += 1
        self.raw(self.envelope("user", "u%d" % self.n, message={"role": "user", "content": text},
                               permissionMode="default"))

    def assistant(self, blocks, split=False):
        """One API response; with split, its blocks go on separate lines."""
        self.n += 1
        mid, rid = "msg_%03d" % self.n, "req_%03d" % self.n
        usage = self.usage()
        parts = [[b] for b in blocks] if split else [blocks]
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            message = {"id": mid, "type": "message", "role": "assistant",
                       "model": "claude-sonnet-4-5-20250929", "content": part,
                       "stop_reason": ("tool_use" if any(b["type"] == "tool_use" for b in part) else "end_turn") if last else None,
                       "stop_sequence": None, "usage": usage}
            self.raw(self.envelope("assistant", "a%d.%d" % (self.n, i), message=message, requestId=rid))

    def say(self, text):
        self.assistant([{"type": "text", "text": text}])

    def tool(self, name, tool_input, result, is_error=False, tool_use_result=None, think=None):
        tid = "toolu_%03d" % (self.n + 1)
        blocks = [{"type": "tool_use", "id": tid, "name": name, "input": tool_input}]
        if think:
            blocks.insert(0, {"type": "thinking", "thinking": think, "signature": "EuYB"})
        self.assistant(blocks, split=bool(think))
        self.n += 1
        extra = {}
        if tool_use_result is not None:
            extra["toolUseResult"] = tool_use_result
        self.raw(self.envelope("user", "r%d" % self.n, message={"role": "user", "content": [
            {"tool_use_id": tid, "type": "tool_result", "content": result, "is_error": is_error}]}, **extra))

    def create(self, task_id, subject, description, think=None):
        self.tool("TaskCreate", {"subject": subject, "description": description,
                                 "activeForm": subject}, "Task #%s created successfully: %s" % (task_id, subject),
                  tool_use_result={"task": {"id": task_id, "subject": subject}}, think=think)

    def update(self, key, task_id, status):
        self.tool("TaskUpdate", {key: task_id, "status": status}, "Updated task #%s status" % task_id,
                  tool_use_result={"success": True, "taskId": task_id})

    def write(self, path, lines=None):
        write_gz(path, lines if lines is not None else self.lines)


def tasks_session():
    s = Session("5b1f0c2e-7a4d-4c3e-9d2b-1e8f6a7c9b01", 20000, 4200)
    s.raw({"type": "summary", "summary": "Retry logic and a timeout flag for httpkit", "leafUuid": "a1.0"})
    s.raw({"type": "file-history-snapshot", "messageId": "u1", "snapshot": {"messageId": "u1", "trackedFileBackups": {}, "timestamp": "2026-07-06T09:00:00.000Z"}, "isSnapshotUpdate": False})
    s.prompt("Add retry logic with exponential backoff to the HTTP client, then add a --timeout flag to the CLI")
    s.create("1", "Add retry with exponential backoff", "Wrap Client::get in an exponential backoff loop", think="Two tasks: retry first, then the timeout flag.")
    s.create("2", "Add a --timeout flag to the CLI", "Parse --timeout SECONDS in src/cli/args.rs and pass it to the client")
    s.update("taskId", "1", "in_progress")
    s.tool("Read", {"file_path": CWD + "/src/http/client.rs"}, "pub fn get(&self, url: &str) -> Result<Response> { ... }")
    s.tool("Edit", {"file_path": CWD + "/src/http/client.rs", "old_string": "self.inner.get(url)", "new_string": "retry(|| self.inner.get(url))"}, "The file has been updated.")
    s.tool("Bash", {"command": "cargo test http::client", "description": "Run the client tests"}, "error[E0425]: cannot find function `retry` in this scope", is_error=True)
    s.say("The root cause was a missing import of the backoff module. I'll use a jittered exponential backoff instead of a fixed delay, capped at 30 seconds.")
    s.tool("Edit", {"file_path": CWD + "/src/http/retry.rs", "old_string": "", "new_string": "pub fn retry<T>(f: impl Fn() -> T) -> T { ... }"}, "The file has been updated.")
    s.tool("Bash", {"command": "cargo test http::client", "description": "Run the client tests"}, "test result: ok. 12 passed; 0 failed")
    s.say("Retry with exponential backoff works: transient 503 responses are retried up to 5 times.")
    s.update("id", "1", "completed")
    s.tool("TaskUpdate", {"taskId": "9", "status": "completed"}, "Error: task 9 not found", is_error=True)
    first_part = len(s.lines)
    s.update("taskId", "2", "in_progress")
    s.raw("this line is not json and must be skipped")
    s.raw({"parentUuid": s.parent, "isSidechain": True, "agentId": "a1b2c3d4", "userType": "external", "cwd": CWD, "sessionId": s.sid, "version": "2.1.202", "type": "assistant", "message": {"id": "msg_side", "type": "message", "role": "assistant", "model": "claude-haiku-4-5-20251001", "content": [{"type": "text", "text": "sidechain output about retry backoff"}], "stop_reason": "end_turn", "usage": {"input_tokens": 10, "output_tokens": 5}}, "uuid": "side1", "timestamp": "2026-07-06T09:30:00.000Z"})
    for i in range(12):
        s.tool("Read", {"file_path": CWD + "/src/cli/args.rs"}, "struct Args { verbose: bool }")
        s.say("The timeout flag parser needs a Duration; step %d of wiring --timeout through clap." % i)
    s.tool("Edit", {"file_path": CWD + "/src/cli/args.rs", "old_string": "verbose: bool", "new_string": "verbose: bool, timeout: Option<u64>"}, "The file has been updated.")
    s.tool("Bash", {"command": "cargo test cli::args"}, "test result: ok. 4 passed")
    s.say("The --timeout flag now parses seconds and reaches the client builder.")
    s.write("tasks-session.jsonl.gz")
    # The prefix up to the completion of task 1: task 1 is done but not yet cold.
    s.write("tasks-session.part1.jsonl.gz", s.lines[:first_part])


def plain_session():
    s = Session("9e3d2c1b-0a4f-4b5e-8c7d-6f5e4d3c2b10", 60000, 4000)
    s.prompt("Users get logged out after one hour: the OAuth token refresh in src/auth/oauth2.py fails with invalid_grant")
    s.tool("Read", {"file_path": CWD + "/src/auth/oauth2.py"}, "def refresh(token): ...")
    s.say("The OAuth refresh sends the expired access token instead of the refresh token, so the provider answers invalid_grant.")
    s.tool("Bash", {"command": "pytest tests/test_oauth2.py -q"}, "FAILED tests/test_oauth2.py::test_refresh - invalid_grant", is_error=True)
    s.tool("Edit", {"file_path": CWD + "/src/auth/oauth2.py", "old_string": "token.access", "new_string": "token.refresh"}, "The file has been updated.")
    s.say("Decided to refresh 60 seconds before expiry to absorb clock skew in the OAuth token refresh.")
    s.tool("Bash", {"command": "pytest tests/test_oauth2.py -q"}, "5 passed in 0.41s")
    s.say("The OAuth token refresh now uses the refresh token; tests/test_oauth2.py passes.")
    s.prompt("Next, speed up the database migrations: batch the inserts in migrations/0042_backfill.sql")
    for i in range(20):
        s.tool("Read", {"file_path": CWD + "/migrations/0042_backfill.sql"}, "INSERT INTO invoices ...")
        # Timed runs: Bash calls, on which the installed PostToolUse matcher fires.
        s.tool("Bash", {"command": "psql -q -f migrations/0042_backfill.sql", "description": "Time the backfill"},
               "Time: %d ms" % (9000 - 300 * i))
        s.say("Batching the invoice backfill inserts, chunk size experiment %d for the migration." % i)
    s.write("plain-session.jsonl.gz")


if __name__ == "__main__":
    tasks_session()
    plain_session()
