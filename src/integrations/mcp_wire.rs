//! The stdio line protocol in front of the MCP server: every line gets an
//! answer, no line is held longer than a limit, and no more requests are in
//! flight than a bound.
//!
//! rmcp's stdio transport skips a line it cannot decode, so a client that sent
//! garbage waits forever. JSON-RPC 2.0 wants an error instead. Each line read
//! from stdin is screened here first:
//! - longer than `limits.max_mcp_request_bytes`: read to its end without
//!   being kept, and answered with error -32600 naming the limit and the
//!   setting (with the request's id when it stands before the long part,
//!   else `null`);
//! - not JSON (or not UTF-8): error -32700 (parse error), id `null`;
//! - JSON but not a request object (a number, a batch array), or with an id
//!   that is neither a string nor a number: -32600 (invalid request); MCP
//!   dropped batches in 2025-06-18;
//! - a request whose method needs params and has none (`tools/call`,
//!   `initialize`): -32602 (invalid params) with the request's id (rmcp would
//!   answer -32601, method not found);
//! - anything else goes on to rmcp unchanged.
//!
//! rmcp runs each request as its own task, so a client that writes requests
//! faster than they are served would have every one of them parsed and held
//! at once. The pump counts the requests it forwarded and the answers the
//! server wrote ([`InFlight`]) and stops reading stdin while
//! [`MAX_IN_FLIGHT`] requests or [`MAX_IN_FLIGHT_BYTES`] of them wait: the
//! client's writes then block, which is how a pipe says "not so fast".
//!
//! Lines the guard answers and lines rmcp writes share one locked stdout, so
//! answers never interleave within a line.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{Mutex, Notify};

/// Most requests forwarded and not yet answered.
pub const MAX_IN_FLIGHT: usize = 16;

/// Most bytes of requests forwarded and not yet answered (a request larger
/// than this still goes alone).
pub const MAX_IN_FLIGHT_BYTES: usize = 32 * 1024 * 1024;

/// How long the pump waits for any answer while the bound is reached before
/// it takes the oldest request as lost (rmcp answers every request; this
/// only keeps a request it dropped from blocking the connection for good).
const STALE_AFTER: Duration = Duration::from_secs(120);

/// Methods whose requests must carry `params`.
const NEEDS_PARAMS: [&str; 2] = ["tools/call", "initialize"];

/// What to do with one line from the client.
#[derive(Debug, PartialEq)]
pub enum Screened {
    /// Pass it to the server.
    Forward,
    /// Answer it with this JSON-RPC error response.
    Answer(Value),
    /// An empty line: nothing to do.
    Skip,
}

/// The answer to a line over `max` bytes: -32600 naming the limit, with the
/// id found in `prefix` (the line's first bytes) if any.
pub fn too_long(prefix: &[u8], length: u64, max: usize) -> Value {
    error(
        top_level_id(prefix).unwrap_or(Value::Null),
        -32600,
        &format!(
            "Invalid Request: the request is {length} bytes, over the limit of {} \
             (`limits.max_mcp_request_bytes` in the store's config.toml); it was not read",
            crate::bounded::human_bytes(max as u64)
        ),
    )
}

/// The `id` of a JSON-RPC object whose text starts with `prefix`, when it
/// comes before the text is cut: a scan of the top-level keys that skips
/// nested values (a record's own `id` inside `params` is not the request's).
pub fn top_level_id(prefix: &[u8]) -> Option<Value> {
    let mut scan = Scan {
        text: prefix,
        at: 0,
    };
    scan.space();
    scan.expect(b'{')?;
    loop {
        scan.space();
        if scan.peek()? == b'}' {
            return None;
        }
        let is_id = scan.string()? == b"\"id\"";
        scan.space();
        scan.expect(b':')?;
        scan.space();
        let start = scan.at;
        scan.value()?;
        if is_id {
            let value: Value = serde_json::from_slice(&prefix[start..scan.at]).ok()?;
            return (value.is_string() || value.is_number()).then_some(value);
        }
        scan.space();
        if scan.peek()? == b',' {
            scan.at += 1;
        }
    }
}

/// A cursor over JSON text that may be cut anywhere (every step is `None`
/// past the end).
struct Scan<'a> {
    text: &'a [u8],
    at: usize,
}

impl<'a> Scan<'a> {
    fn peek(&self) -> Option<u8> {
        self.text.get(self.at).copied()
    }

    fn space(&mut self) {
        while self.peek().is_some_and(|b| b.is_ascii_whitespace()) {
            self.at += 1;
        }
    }

    fn expect(&mut self, byte: u8) -> Option<()> {
        (self.peek()? == byte).then(|| self.at += 1)
    }

    /// A string, returned with its quotes.
    fn string(&mut self) -> Option<&'a [u8]> {
        let start = self.at;
        self.expect(b'"')?;
        loop {
            match self.peek()? {
                b'\\' => self.at += 2,
                b'"' => {
                    self.at += 1;
                    return Some(&self.text[start..self.at]);
                }
                _ => self.at += 1,
            }
        }
    }

    /// Any value: strings and nested objects or arrays are skipped whole.
    fn value(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => self.string().map(|_| ()),
            b'{' | b'[' => {
                let mut depth = 0usize;
                loop {
                    match self.peek()? {
                        b'"' => {
                            self.string()?;
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                self.at += 1;
                                return Some(());
                            }
                        }
                        _ => {}
                    }
                    self.at += 1;
                }
            }
            _ => {
                // A number, true, false or null: up to the next delimiter,
                // which must be there (a cut number is not known whole).
                while !matches!(self.peek()?, b',' | b'}' | b']')
                    && !self.peek()?.is_ascii_whitespace()
                {
                    self.at += 1;
                }
                Some(())
            }
        }
    }
}

/// Screens one line (without its newline).
pub fn screen(line: &[u8]) -> Screened {
    let Ok(text) = std::str::from_utf8(line) else {
        return Screened::Answer(error(
            Value::Null,
            -32700,
            "Parse error: the line is not UTF-8",
        ));
    };
    let text = text.trim();
    if text.is_empty() {
        return Screened::Skip;
    }
    let message: Value = match serde_json::from_str(text) {
        Ok(message) => message,
        Err(e) => {
            return Screened::Answer(error(
                Value::Null,
                -32700,
                &format!("Parse error: the line is not JSON ({e})"),
            ))
        }
    };
    let Value::Object(object) = &message else {
        let what = if message.is_array() {
            "a batch (an array); batches are not part of MCP since 2025-06-18"
        } else {
            "not a JSON-RPC message object"
        };
        return Screened::Answer(error(
            Value::Null,
            -32600,
            &format!("Invalid Request: {what}"),
        ));
    };
    let method = object.get("method").and_then(Value::as_str);
    let id = object.get("id");
    if let Some(bad) = id.filter(|id| !(id.is_string() || id.is_number() || id.is_null())) {
        let what = if bad.is_object() {
            "an object"
        } else if bad.is_array() {
            "an array"
        } else {
            "a boolean"
        };
        return Screened::Answer(error(
            Value::Null,
            -32600,
            &format!("Invalid Request: `id` is {what}; JSON-RPC ids are strings or numbers"),
        ));
    }
    if let (Some(method), Some(id)) = (method, id) {
        let params_missing = !matches!(object.get("params"), Some(Value::Object(_)));
        if NEEDS_PARAMS.contains(&method) && params_missing {
            return Screened::Answer(error(
                id.clone(),
                -32602,
                &format!("Invalid params: `{method}` needs a `params` object"),
            ));
        }
    }
    Screened::Forward
}

fn error(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// Requests forwarded to the server and not yet answered, shared by the two
/// pumps: [`pump_client`] waits for room before it reads the next line,
/// [`pump_server`] makes room as answers pass.
#[derive(Debug)]
pub struct InFlight {
    waiting: std::sync::Mutex<Waiting>,
    changed: Notify,
    max_requests: usize,
    max_bytes: usize,
}

#[derive(Debug, Default)]
struct Waiting {
    /// Each request's id (as JSON text) and size, oldest first.
    requests: VecDeque<(String, usize)>,
    bytes: usize,
}

impl InFlight {
    /// At most `max_requests` requests and `max_bytes` of them in flight.
    pub fn new(max_requests: usize, max_bytes: usize) -> Arc<InFlight> {
        Arc::new(InFlight {
            waiting: std::sync::Mutex::new(Waiting::default()),
            changed: Notify::new(),
            max_requests: max_requests.max(1),
            max_bytes,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Waiting> {
        // A poisoned lock holds plain counts: still usable.
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Requests in flight now.
    pub fn requests(&self) -> usize {
        self.lock().requests.len()
    }

    fn has_room(&self) -> bool {
        let waiting = self.lock();
        waiting.requests.len() < self.max_requests && waiting.bytes < self.max_bytes
    }

    fn started(&self, id: &Value, bytes: usize) {
        let mut waiting = self.lock();
        waiting.requests.push_back((id.to_string(), bytes));
        waiting.bytes += bytes;
    }

    /// The answer to `id` passed (`null`: rmcp's answer to a line it could
    /// not read, which is the oldest one waiting).
    fn answered(&self, id: &Value) {
        let mut waiting = self.lock();
        let key = id.to_string();
        let found = if id.is_null() {
            (!waiting.requests.is_empty()).then_some(0)
        } else {
            waiting.requests.iter().position(|(k, _)| *k == key)
        };
        if let Some(i) = found {
            if let Some((_, bytes)) = waiting.requests.remove(i) {
                waiting.bytes -= bytes;
            }
        }
        drop(waiting);
        self.changed.notify_waiters();
    }

    fn forget_oldest(&self) {
        let mut waiting = self.lock();
        if let Some((id, bytes)) = waiting.requests.pop_front() {
            waiting.bytes -= bytes;
            eprintln!(
                "knowledge-db mcp: no answer to request {id} after {} s; reading on",
                STALE_AFTER.as_secs()
            );
        }
    }

    /// Waits until a request may be forwarded.
    async fn room(&self) {
        loop {
            let changed = self.changed.notified();
            if self.has_room() {
                return;
            }
            if tokio::time::timeout(STALE_AFTER, changed).await.is_err() {
                self.forget_oldest();
            }
        }
    }
}

/// One line read with [`read_line`].
#[derive(Debug, PartialEq, Eq)]
pub enum WireLine {
    /// A line (its newline removed) of at most the limit.
    Line,
    /// A line over the limit: its length; the buffer holds its first bytes.
    TooLong(u64),
    /// The end of the input.
    End,
}

/// Reads one line into `line` (cleared first) without holding more than
/// `max` bytes of it: the rest of a longer line is read and dropped (its
/// first `max` bytes stay in `line`).
pub async fn read_line<R: AsyncBufRead + Unpin>(
    input: &mut R,
    line: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<WireLine> {
    line.clear();
    let mut length: u64 = 0;
    loop {
        let buffer = input.fill_buf().await?;
        if buffer.is_empty() {
            return Ok(match length {
                0 => WireLine::End,
                // A last line without a newline: answered like any other.
                n if n > max as u64 => WireLine::TooLong(n),
                _ => WireLine::Line,
            });
        }
        let (chunk, used, ended) = match buffer.iter().position(|&b| b == b'\n') {
            Some(i) => (&buffer[..i], i + 1, true),
            None => (buffer, buffer.len(), false),
        };
        length += chunk.len() as u64;
        let room = max.saturating_sub(line.len());
        line.extend_from_slice(&chunk[..chunk.len().min(room)]);
        input.consume(used);
        if ended {
            return Ok(if length > max as u64 {
                WireLine::TooLong(length)
            } else {
                WireLine::Line
            });
        }
    }
}

/// Copies client lines from `input` to `server`, answering the ones [`screen`]
/// refuses and the ones over `max_line` bytes on `output`; waits for room in
/// `in_flight` before each line; returns at the end of `input` (closing
/// `server`).
pub async fn pump_client<I, S, O>(
    input: I,
    mut server: S,
    output: Arc<Mutex<O>>,
    max_line: usize,
    in_flight: Arc<InFlight>,
) -> std::io::Result<()>
where
    I: AsyncRead + Unpin,
    S: AsyncWrite + Unpin,
    O: AsyncWrite + Unpin,
{
    let mut input = BufReader::new(input);
    // Room for the longest line, reserved once: the pages are touched only as
    // a line fills them, and a long line never makes the buffer move (a copy
    // would hold it twice).
    let mut line = Vec::new();
    let _ = line.try_reserve_exact(max_line);
    loop {
        in_flight.room().await;
        let answer = match read_line(&mut input, &mut line, max_line).await? {
            WireLine::End => break,
            WireLine::TooLong(length) => Some(too_long(&line, length, max_line)),
            WireLine::Line => match screen(&line) {
                Screened::Forward => {
                    if let Some(id) = request_id(&line) {
                        in_flight.started(&id, line.len());
                    }
                    server.write_all(&line).await?;
                    server.write_all(b"\n").await?;
                    server.flush().await?;
                    None
                }
                Screened::Answer(answer) => Some(answer),
                Screened::Skip => None,
            },
        };
        if let Some(answer) = answer {
            let mut out = output.lock().await;
            out.write_all(format!("{answer}\n").as_bytes()).await?;
            out.flush().await?;
        }
    }
    server.shutdown().await
}

/// What a JSON-RPC line is, for the in-flight count: its `id`, and whether
/// it is a request (`method`) or an answer (`result` or `error`).
#[derive(serde::Deserialize)]
struct Envelope {
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    method: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    result: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    error: Option<serde::de::IgnoredAny>,
}

/// The id of a request line (one with a `method` and an `id`).
fn request_id(line: &[u8]) -> Option<Value> {
    let envelope: Envelope = serde_json::from_slice(line).ok()?;
    envelope.method.and(envelope.id)
}

/// The id of an answer line (one with a `result` or an `error`); `null` when
/// the answer names none.
fn answer_id(line: &[u8]) -> Option<Value> {
    let envelope: Envelope = serde_json::from_slice(line).ok()?;
    if envelope.method.is_some() || (envelope.result.is_none() && envelope.error.is_none()) {
        return None;
    }
    Some(envelope.id.unwrap_or(Value::Null))
}

/// Copies the server's lines to `output`, a whole line at a time, telling
/// `in_flight` of each answer.
pub async fn pump_server<S, O>(
    server: S,
    output: Arc<Mutex<O>>,
    in_flight: Arc<InFlight>,
) -> std::io::Result<()>
where
    S: AsyncRead + Unpin,
    O: AsyncWrite + Unpin,
{
    let mut server = BufReader::new(server);
    let mut line = Vec::new();
    loop {
        line.clear();
        if server.read_until(b'\n', &mut line).await? == 0 {
            return Ok(());
        }
        {
            let mut out = output.lock().await;
            out.write_all(&line).await?;
            out.flush().await?;
        }
        if let Some(id) = answer_id(&line) {
            in_flight.answered(&id);
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn code(screened: Screened) -> (i64, Value) {
        match screened {
            Screened::Answer(answer) => (
                answer["error"]["code"].as_i64().expect("code"),
                answer["id"].clone(),
            ),
            other => panic!("not answered: {other:?}"),
        }
    }

    #[test]
    fn garbage_gets_parse_or_request_errors() {
        assert_eq!(code(screen(b"not json")), (-32700, Value::Null));
        assert_eq!(code(screen(b"{\"jsonrpc\":")), (-32700, Value::Null));
        assert_eq!(code(screen(&[0xff, 0xfe])), (-32700, Value::Null));
        assert_eq!(code(screen(b"42")), (-32600, Value::Null));
        assert_eq!(
            code(screen(b"[{\"jsonrpc\":\"2.0\"}]")),
            (-32600, Value::Null)
        );
        assert_eq!(screen(b"   "), Screened::Skip);
    }

    #[test]
    fn calls_without_params_are_invalid_params() {
        let line = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call"}"#;
        assert_eq!(code(screen(line)), (-32602, json!(7)));
        let line = br#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":[]}"#;
        assert_eq!(code(screen(line)), (-32602, json!("a")));
        let fine = br#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"x"}}"#;
        assert_eq!(screen(fine), Screened::Forward);
        let list = br#"{"jsonrpc":"2.0","id":9,"method":"tools/list"}"#;
        assert_eq!(screen(list), Screened::Forward);
        let note = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        assert_eq!(screen(note), Screened::Forward);
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("runtime")
    }

    #[test]
    fn the_pumps_forward_and_answer() {
        runtime().block_on(pumps_forward_and_answer());
    }

    async fn pumps_forward_and_answer() {
        let long = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":41,\"method\":\"tools/call\",\"params\":{{\"x\":\"{}\"}}}}",
            "a".repeat(500)
        );
        let input = format!(
            "oops\n{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}}\n{long}\n{{\"jsonrpc\":\"2.0\",\"id\":{{}},\"method\":\"ping\"}}\n"
        );
        let (to_server, mut from_client) = tokio::io::duplex(1024);
        let output = Arc::new(Mutex::new(Vec::<u8>::new()));
        let in_flight = InFlight::new(4, 1 << 20);
        pump_client(
            input.as_bytes(),
            to_server,
            Arc::clone(&output),
            256,
            Arc::clone(&in_flight),
        )
        .await
        .expect("pump");
        let mut forwarded = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut from_client, &mut forwarded)
            .await
            .expect("read");
        assert_eq!(
            forwarded,
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n"
        );
        assert_eq!(in_flight.requests(), 1);
        let answered = String::from_utf8(output.lock().await.clone()).expect("utf-8");
        let answers: Vec<Value> = answered
            .lines()
            .map(|l| serde_json::from_str(l).expect("json"))
            .collect();
        assert_eq!(answers.len(), 3, "{answered}");
        assert_eq!(answers[0]["error"]["code"], -32700);
        // The over-long request is answered with its own id, naming the limit.
        assert_eq!(answers[1]["id"], 41);
        assert_eq!(answers[1]["error"]["code"], -32600);
        let message = answers[1]["error"]["message"].as_str().expect("message");
        assert!(
            message.contains(&format!("is {} bytes", long.len()))
                && message.contains("over the limit of 256 B")
                && message.contains("limits.max_mcp_request_bytes"),
            "{message}"
        );
        assert_eq!(answers[2]["error"]["code"], -32600);
    }

    #[test]
    fn ids_are_found_before_the_cut_and_only_at_the_top_level() {
        let cut = |text: &str, at: usize| top_level_id(&text.as_bytes()[..at.min(text.len())]);
        let call = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"arguments":{"records":[{"id":"x"}]}}}"#;
        assert_eq!(cut(call, 40), Some(json!(7)));
        assert_eq!(cut(call, 22), None, "7 may go on: not known whole");
        let late = r#"{"method":"tools/call","params":{"id":"inner","text":"long"},"id":"outer"}"#;
        assert_eq!(cut(late, 50), None);
        assert_eq!(cut(late, late.len()), Some(json!("outer")));
        let escaped = r#"{"a":"say \"id\": 3","id":"b\"c"}"#;
        assert_eq!(cut(escaped, escaped.len()), Some(json!("b\"c")));
        assert_eq!(top_level_id(b"[1,2]"), None);
        assert_eq!(top_level_id(br#"{"id":{"x":1}}"#), None);
    }

    #[test]
    fn requests_wait_while_too_many_are_unanswered() {
        runtime().block_on(async {
            let input: String = (1..=5)
                .map(|i| format!("{{\"jsonrpc\":\"2.0\",\"id\":{i},\"method\":\"ping\"}}\n"))
                .collect();
            let (to_server, from_client) = tokio::io::duplex(1 << 16);
            let output = Arc::new(Mutex::new(Vec::<u8>::new()));
            let in_flight = InFlight::new(2, 1 << 20);
            let pump = tokio::spawn(pump_client(
                std::io::Cursor::new(input.into_bytes()),
                to_server,
                output,
                1024,
                Arc::clone(&in_flight),
            ));
            let mut lines = BufReader::new(from_client).lines();
            async fn next(
                lines: &mut tokio::io::Lines<BufReader<tokio::io::DuplexStream>>,
            ) -> Result<std::io::Result<Option<String>>, tokio::time::error::Elapsed> {
                tokio::time::timeout(Duration::from_millis(300), lines.next_line()).await
            }
            assert!(next(&mut lines)
                .await
                .is_ok_and(|l| l.is_ok_and(|l| l.is_some())));
            assert!(next(&mut lines).await.is_ok());
            // Two unanswered: the third is not read.
            assert!(
                next(&mut lines).await.is_err(),
                "a third request was forwarded"
            );
            assert_eq!(in_flight.requests(), 2);
            in_flight.answered(&json!(1));
            let third = next(&mut lines)
                .await
                .expect("forwarded once answered")
                .expect("line");
            assert!(third.is_some_and(|l| l.contains("\"id\":3")));
            // Answered one at a time, as a server would: each answer lets the
            // next request through. (Answering an id before it is forwarded is
            // a no-op, and left the last two in flight until STALE_AFTER.)
            for (answered, next_id) in [(2, 4), (3, 5)] {
                in_flight.answered(&json!(answered));
                let line = next(&mut lines)
                    .await
                    .expect("forwarded once answered")
                    .expect("line");
                assert!(line.is_some_and(|l| l.contains(&format!("\"id\":{next_id}"))));
            }
            in_flight.answered(&json!(4));
            in_flight.answered(&json!(5));
            tokio::time::timeout(Duration::from_secs(5), pump)
                .await
                .expect("the pump ends once its input has and all are answered")
                .expect("join")
                .expect("pump");
        });
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// Whatever the bytes and however they arrive, every line comes out
        /// whole when it is at most the limit, or as its exact length when it
        /// is longer, without more than the limit ever held.
        #[test]
        fn lines_are_bounded_and_exact(
            lines in proptest::collection::vec(
                proptest::collection::vec(any::<u8>().prop_filter("no newline", |b| *b != b'\n'), 0..200),
                0..12,
            ),
            capacity in 1usize..64,
            max in 0usize..120,
            last_newline in any::<bool>(),
        ) {
            let mut input = Vec::new();
            for (i, line) in lines.iter().enumerate() {
                input.extend_from_slice(line);
                if i + 1 < lines.len() || last_newline {
                    input.push(b'\n');
                }
            }
            let got = runtime().block_on(async {
                let mut reader = BufReader::with_capacity(capacity, &input[..]);
                let mut out = Vec::new();
                let mut line = Vec::new();
                loop {
                    let read = read_line(&mut reader, &mut line, max).await.expect("read");
                    assert!(line.len() <= max, "held {} bytes", line.len());
                    match read {
                        WireLine::End => break,
                        WireLine::Line => out.push(Ok(line.clone())),
                        WireLine::TooLong(n) => out.push(Err(n)),
                    }
                }
                out
            });
            let expected: Vec<Result<Vec<u8>, u64>> = lines
                .iter()
                .enumerate()
                // An empty last line without a newline is no line at all.
                .filter(|(i, l)| !(l.is_empty() && *i + 1 == lines.len() && !last_newline))
                .map(|(_, l)| if l.len() > max { Err(l.len() as u64) } else { Ok(l.clone()) })
                .collect();
            prop_assert_eq!(got, expected);
        }
    }
}
