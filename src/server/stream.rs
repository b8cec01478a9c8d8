//! The byte stream in front of the LSP framework: any client input is either a well-formed
//! JSON-RPC message handed on, or answered here with a JSON-RPC error — never the end of the
//! server.
//!
//! tower-lsp-server's codec stops serving at the first frame it cannot read (invalid JSON, `{}`,
//! a lower-case `content-length`, LF-only headers …). This layer reads frames leniently (header
//! names in any case, CRLF or LF line ends), checks each body, and passes the framework only
//! canonical frames of valid messages:
//! - a body that is not JSON → `-32700 Parse error` (id null);
//! - JSON that is not a JSON-RPC 2.0 request, notification or response (`{}`, `"jsonrpc"` missing
//!   or other than `"2.0"`, an id that is neither a string nor an integer the framework can hold —
//!   `1.5`, `18446744073709551616` — a non-string method) → `-32600 Invalid Request` (with the id
//!   when there is a usable one); such a notification or response is dropped instead, since
//!   nothing may answer it;
//! - a request for a `$/` method (`$/setTrace` sent with an id) → `-32601 Method not found`, which
//!   the framework would leave unanswered;
//! - a header block without a usable `Content-Length`, or one larger than [`MAX_BODY`] → a parse
//!   error; the oversized body is skipped.
//!
//! The framework's output and these answers share the output stream frame by frame. Both are
//! bounded for a client that sends but never reads: the framework holds back by itself (its
//! writes wait, then its reading does), and this layer's answers wait in a queue of
//! [`ANSWER_QUEUE`] frames, after which it stops reading the client's input until the client
//! reads again. A client that never reads thus costs a fixed amount of memory, not a growing one.

use serde_json::{Value, json};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

/// The largest message body accepted (64 MiB): a larger one is refused and skipped, not buffered.
pub const MAX_BODY: usize = 64 << 20;

/// The longest header line read (8 KiB): endless garbage without a newline is skipped, not buffered.
const MAX_HEADER_LINE: u64 = 8 << 10;

/// How many answers of this layer wait for a client that does not read before its input is no
/// longer read either.
pub const ANSWER_QUEUE: usize = 64;

/// What one frame of client input came to.
#[derive(Debug, PartialEq)]
pub enum Frame {
    /// A valid message, as canonical bytes for the framework.
    Message(Vec<u8>),
    /// An answer for the client instead (a JSON-RPC error response).
    Reject(Value),
    /// A notification or response that is not valid JSON-RPC 2.0: nothing answers it; why.
    Drop(&'static str),
    /// The input ended.
    End,
}

fn error(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

pub fn encode(body: &[u8]) -> Vec<u8> {
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(body);
    out
}

/// Whether `value` is a JSON-RPC 2.0 request, notification or response; if not, the error to
/// answer (`Err(Some)`), or `Err(None)` for a message nothing may answer (a notification or
/// response), which is dropped.
pub fn check_message(value: &Value) -> Result<(), Option<Value>> {
    let Value::Object(object) = value else {
        return Err(Some(error(Value::Null, -32600, "Invalid Request: a message is a JSON object")));
    };
    let id = object.get("id");
    // The framework holds a numeric id as an i64: `1.5` or 2^64 would end it.
    let usable_id = match id {
        None => None,
        Some(Value::Number(n)) if n.is_i64() => id.cloned(),
        Some(id @ Value::String(_)) => Some(id.clone()),
        Some(Value::Null) => Some(Value::Null),
        Some(_) => {
            return Err(Some(error(Value::Null, -32600, "Invalid Request: the id must be an integer or a string")));
        }
    };
    let method = object.get("method");
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        let notification = method.is_some() && id.is_none();
        let response =
            method.is_none() && id.is_some() && (object.contains_key("result") || object.contains_key("error"));
        if notification || response {
            return Err(None);
        }
        let id = usable_id.unwrap_or(Value::Null);
        return Err(Some(error(id, -32600, "Invalid Request: \"jsonrpc\" must be \"2.0\"")));
    }
    match method {
        // `$/` methods are notifications; one sent as a request is answered, never left hanging
        // (the framework drops them unanswered).
        Some(Value::String(method)) if method.starts_with("$/") && usable_id.is_some() => Err(Some(error(
            usable_id.unwrap_or(Value::Null),
            -32601,
            &format!("Method not found: {method} is a notification"),
        ))),
        Some(Value::String(_)) => Ok(()),
        Some(_) => {
            Err(Some(error(usable_id.unwrap_or(Value::Null), -32600, "Invalid Request: the method must be a string")))
        }
        // A response to one of the server's requests.
        None if usable_id.is_some() && (object.contains_key("result") || object.contains_key("error")) => Ok(()),
        None => Err(Some(error(usable_id.unwrap_or(Value::Null), -32600, "Invalid Request: no method"))),
    }
}

/// Reads the next frame from `input`.
pub async fn read_frame<R: AsyncBufRead + Unpin>(input: &mut R) -> std::io::Result<Frame> {
    let mut length: Option<Result<usize, ()>> = None;
    let mut saw_header = false;
    let mut line = Vec::new();
    loop {
        line.clear();
        if (&mut *input).take(MAX_HEADER_LINE).read_until(b'\n', &mut line).await? == 0 {
            return Ok(Frame::End);
        }
        if !line.ends_with(b"\n") && line.len() as u64 == MAX_HEADER_LINE {
            // Not a header: skip to the end of the line, and answer it once.
            loop {
                line.clear();
                let n = (&mut *input).take(MAX_HEADER_LINE).read_until(b'\n', &mut line).await?;
                if n == 0 || line.ends_with(b"\n") {
                    break;
                }
            }
            return Ok(Frame::Reject(error(Value::Null, -32700, "Parse error: a header line longer than 8 KiB")));
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches(['\r', '\n']);
        if text.is_empty() {
            if saw_header {
                break;
            }
            continue; // blank lines between frames
        }
        saw_header = true;
        if let Some((name, value)) = text.split_once(':')
            && name.trim().eq_ignore_ascii_case("content-length")
        {
            length = Some(value.trim().parse::<usize>().map_err(|_| ()));
        }
    }
    let length = match length {
        Some(Ok(n)) => n,
        _ => {
            return Ok(Frame::Reject(error(Value::Null, -32700, "Parse error: a frame needs a Content-Length header")));
        }
    };
    if length > MAX_BODY {
        tokio::io::copy(&mut input.take(length as u64), &mut tokio::io::sink()).await?;
        return Ok(Frame::Reject(error(Value::Null, -32700, "Parse error: the message is larger than 64 MiB")));
    }
    let mut body = vec![0; length];
    input.read_exact(&mut body).await?;
    let value: Value = match serde_json::from_slice(&body) {
        Ok(value) => value,
        Err(e) => return Ok(Frame::Reject(error(Value::Null, -32700, &format!("Parse error: {e}")))),
    };
    match check_message(&value) {
        Ok(()) => Ok(Frame::Message(encode(&body))),
        Err(Some(answer)) => Ok(Frame::Reject(answer)),
        Err(None) => Ok(Frame::Drop("a notification or response that is not JSON-RPC 2.0")),
    }
}

/// Copies client input to the framework's input, frame by frame; rejected frames are answered on
/// `answers` (a full queue holds the reading back). Ends when the input ends (or the framework
/// stops reading).
pub async fn filter_input<I, W>(input: I, mut framework: W, answers: mpsc::Sender<Vec<u8>>)
where
    I: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut input = BufReader::new(input);
    loop {
        match read_frame(&mut input).await {
            Ok(Frame::Message(bytes)) => {
                if framework.write_all(&bytes).await.is_err() || framework.flush().await.is_err() {
                    return;
                }
            }
            Ok(Frame::Reject(answer)) => {
                tracing::warn!("malformed client input answered: {answer}");
                if answers.send(encode(answer.to_string().as_bytes())).await.is_err() {
                    return;
                }
            }
            Ok(Frame::Drop(why)) => tracing::warn!("malformed client input dropped: {why}"),
            Ok(Frame::End) | Err(_) => return,
        }
    }
}

/// Writes the framework's frames and this layer's answers to the client, a whole frame at a time,
/// until the framework's output ends (after `exit`); answers already queued then still go out.
pub async fn merge_output<R, O>(framework: R, output: O, mut answers: mpsc::Receiver<Vec<u8>>)
where
    R: AsyncRead + Unpin,
    O: AsyncWrite,
{
    let mut framework = BufReader::new(framework);
    tokio::pin!(output);
    let mut answers_open = true;
    loop {
        let (frame, last) = tokio::select! {
            frame = read_frame(&mut framework) => match frame {
                Ok(Frame::Message(bytes)) => (bytes, false),
                Ok(Frame::Reject(_) | Frame::Drop(_)) => continue,
                Ok(Frame::End) | Err(_) => {
                    let mut pending = Vec::new();
                    while let Ok(bytes) = answers.try_recv() {
                        pending.extend(bytes);
                    }
                    (pending, true)
                }
            },
            answer = answers.recv(), if answers_open => match answer {
                Some(bytes) => (bytes, false),
                None => {
                    answers_open = false;
                    continue;
                }
            },
        };
        if output.write_all(&frame).await.is_err() || output.flush().await.is_err() || last {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn frames(input: &[u8]) -> Vec<Frame> {
        let mut reader = BufReader::new(input);
        let mut out = Vec::new();
        loop {
            let frame = read_frame(&mut reader).await.unwrap();
            let end = frame == Frame::End;
            out.push(frame);
            if end {
                return out;
            }
        }
    }

    fn code(frame: &Frame) -> i64 {
        match frame {
            Frame::Reject(answer) => answer["error"]["code"].as_i64().unwrap(),
            other => panic!("not rejected: {other:?}"),
        }
    }

    #[tokio::test]
    async fn lenient_headers_and_every_kind_of_bad_body() {
        let ping = br#"{"jsonrpc":"2.0","id":1,"method":"shutdown"}"#;
        let mut input = Vec::new();
        input.extend(format!("content-length: {}\n\n", ping.len()).bytes());
        input.extend(ping);
        input.extend(b"Content-Length: 5\r\n\r\n{oops");
        input.extend(b"Content-Length: 2\r\n\r\n{}");
        let bad_id = br#"{"jsonrpc":"2.0","id":[1],"method":"x/y"}"#;
        input.extend(format!("Content-Length: {}\r\n\r\n", bad_id.len()).bytes());
        input.extend(bad_id);
        input.extend(b"X-Nothing: here\r\n\r\n");
        let first = frames(&input).await;
        assert_eq!(first[0], Frame::Message(encode(ping)));
        assert_eq!(code(&first[1]), -32700);
        assert_eq!(code(&first[2]), -32600);
        assert_eq!(code(&first[3]), -32600);
        assert_eq!(code(&first[4]), -32700, "no Content-Length");
        assert_eq!(first[5], Frame::End);
        // A header line of a megabyte without a newline is answered once and skipped.
        let mut garbage = vec![b'x'; 1 << 20];
        garbage.extend(b"\n\n");
        garbage.extend(encode(ping));
        let after_garbage = frames(&garbage).await;
        assert_eq!(code(&after_garbage[0]), -32700);
        assert_eq!(after_garbage[1], Frame::Message(encode(ping)));
    }

    #[test]
    fn responses_to_the_servers_requests_are_messages() {
        assert!(check_message(&json!({"jsonrpc": "2.0", "id": 3, "result": null})).is_ok());
        assert!(check_message(&json!({"jsonrpc": "2.0", "method": "initialized", "params": {}})).is_ok());
        let answer = check_message(&json!({"jsonrpc": "2.0", "id": 7, "method": 5})).unwrap_err().unwrap();
        assert_eq!(answer["id"], 7);
        assert!(check_message(&json!([1, 2])).is_err());
        assert_eq!(
            check_message(&json!({"jsonrpc": "2.0", "id": 2, "method": "$/setTrace"})).unwrap_err().unwrap()["error"]["code"],
            -32601
        );
        assert!(check_message(&json!({"jsonrpc": "2.0", "method": "$/setTrace", "params": {"value": "off"}})).is_ok());
    }

    #[test]
    fn only_json_rpc_2_with_ids_the_framework_can_hold_passes() {
        let answered = |message: Value| check_message(&message).unwrap_err().expect("answered");
        let old = answered(json!({"jsonrpc": "1.0", "id": 4, "method": "shutdown"}));
        assert_eq!((old["id"].clone(), old["error"]["code"].clone()), (json!(4), json!(-32600)));
        assert_eq!(answered(json!({"id": 5, "method": "shutdown"}))["id"], 5, "no jsonrpc");
        for id in
            [json!(1.5), serde_json::from_str::<Value>("18446744073709551616").unwrap(), json!(9223372036854775808u64)]
        {
            let answer = answered(json!({"jsonrpc": "2.0", "id": id, "method": "shutdown"}));
            assert_eq!((answer["id"].clone(), answer["error"]["code"].clone()), (Value::Null, json!(-32600)), "{id}");
        }
        assert_eq!(check_message(&json!({"jsonrpc": "1.0", "method": "initialized"})), Err(None), "dropped");
        assert_eq!(check_message(&json!({"id": 3, "result": null})), Err(None), "a response without jsonrpc");
        assert!(check_message(&json!({"jsonrpc": "2.0", "id": -9223372036854775808i64, "method": "x"})).is_ok());
    }

    /// An endless source of frames that are answered here, counting how many were read.
    struct Rejects {
        frame: Vec<u8>,
        at: usize,
        read: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    }

    impl AsyncRead for Rejects {
        fn poll_read(
            mut self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
            buf: &mut tokio::io::ReadBuf<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            let this = &mut *self;
            if this.at == 0 {
                this.read.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
            let n = buf.remaining().min(this.frame.len() - this.at);
            buf.put_slice(&this.frame[this.at..this.at + n]);
            this.at = (this.at + n) % this.frame.len();
            std::task::Poll::Ready(Ok(()))
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_client_that_never_reads_is_no_longer_read_from() {
        let read = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let input = Rejects { frame: encode(br#"{"jsonrpc":"1.0","id":1,"method":"x"}"#), at: 0, read: read.clone() };
        let (answers, mut unread) = mpsc::channel(ANSWER_QUEUE);
        let filter = tokio::spawn(filter_input(input, tokio::io::sink(), answers));
        for _ in 0..10_000 {
            tokio::task::yield_now().await;
        }
        // The reader stops once the answers wait: the queue and the frame whose answer waits for
        // room (each read of this source holds at most one frame).
        let stopped_at = read.load(std::sync::atomic::Ordering::SeqCst);
        assert!(stopped_at <= ANSWER_QUEUE + 2, "{stopped_at} frames read");
        // Reading the answers lets it go on.
        for _ in 0..ANSWER_QUEUE {
            unread.recv().await.unwrap();
        }
        for _ in 0..10_000 {
            tokio::task::yield_now().await;
        }
        assert!(read.load(std::sync::atomic::Ordering::SeqCst) > stopped_at);
        filter.abort();
    }
}
