//! The stdio line protocol in front of the MCP server: every line gets an answer.
//!
//! rmcp's stdio transport skips a line it cannot decode, so a client that sent
//! garbage waits forever. JSON-RPC 2.0 wants an error instead. Each line read
//! from stdin is screened here first:
//! - not JSON (or not UTF-8): error -32700 (parse error), id `null`;
//! - JSON but not a request object (a number, a batch array): -32600 (invalid
//!   request); MCP dropped batches in 2025-06-18;
//! - a request whose method needs params and has none (`tools/call`,
//!   `initialize`): -32602 (invalid params) with the request's id (rmcp would
//!   answer -32601, method not found);
//! - anything else goes on to rmcp unchanged.
//!
//! Lines the guard answers and lines rmcp writes share one locked stdout, so
//! answers never interleave within a line.

use std::sync::Arc;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Mutex;

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

/// Copies client lines from `input` to `server`, answering the ones [`screen`]
/// refuses on `output`; returns at the end of `input` (closing `server`).
pub async fn pump_client<I, S, O>(
    input: I,
    mut server: S,
    output: Arc<Mutex<O>>,
) -> std::io::Result<()>
where
    I: AsyncRead + Unpin,
    S: AsyncWrite + Unpin,
    O: AsyncWrite + Unpin,
{
    let mut input = BufReader::new(input);
    let mut line = Vec::new();
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line).await? == 0 {
            break;
        }
        let body = line.strip_suffix(b"\n").unwrap_or(&line);
        match screen(body) {
            Screened::Forward => {
                server.write_all(body).await?;
                server.write_all(b"\n").await?;
                server.flush().await?;
            }
            Screened::Answer(answer) => {
                let mut out = output.lock().await;
                out.write_all(format!("{answer}\n").as_bytes()).await?;
                out.flush().await?;
            }
            Screened::Skip => {}
        }
    }
    server.shutdown().await
}

/// Copies the server's lines to `output`, a whole line at a time.
pub async fn pump_server<S, O>(server: S, output: Arc<Mutex<O>>) -> std::io::Result<()>
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
        let mut out = output.lock().await;
        out.write_all(&line).await?;
        out.flush().await?;
    }
}

#[cfg(test)]
mod tests {
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

    #[test]
    fn the_pumps_forward_and_answer() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        runtime.block_on(pumps_forward_and_answer());
    }

    async fn pumps_forward_and_answer() {
        let input: &[u8] = b"oops\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n";
        let (to_server, mut from_client) = tokio::io::duplex(1024);
        let output = Arc::new(Mutex::new(Vec::<u8>::new()));
        pump_client(input, to_server, Arc::clone(&output))
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
        let answered = String::from_utf8(output.lock().await.clone()).expect("utf-8");
        assert!(answered.contains("-32700"), "{answered}");
    }
}
