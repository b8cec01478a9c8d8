//! A test-local OpenAI-compatible server on 127.0.0.1: every request is recorded, and the reply is
//! chosen by a script function of the request (so tests can answer by task, by tool, by attempt).

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use chainsmith::config::LlmConfig;
use chainsmith::llm::Client;
use serde_json::{Value, json};

/// What the server answers to one request.
pub enum Answer {
    /// A chat completion with this content (usage included unless `usage` is false).
    Content { text: String, usage: bool },
    /// An HTTP status with a body and optional Retry-After seconds.
    Status { code: u16, body: String, retry_after: Option<u64> },
    /// This raw body with status 200 (malformed replies).
    Raw(String),
    /// Close the connection without answering.
    Hang,
    /// A chat completion with this content after `after`, unless the client closes the connection
    /// first (counted in [`Server::closed_while_waiting`]).
    Slow { after: Duration, text: String },
}

impl Answer {
    pub fn text(text: impl Into<String>) -> Self {
        Answer::Content { text: text.into(), usage: true }
    }
}

pub struct Recorded {
    pub body: Value,
    pub authorization: Option<String>,
}

pub struct Server {
    pub base_url: String,
    pub requests: Arc<Mutex<Vec<Recorded>>>,
    /// Slow answers whose client closed the connection before the answer was due.
    pub closed_while_waiting: Arc<AtomicUsize>,
}

type Script = dyn Fn(&Value, usize) -> Answer + Send + Sync;

impl Server {
    /// Starts a server answering each request with `script(request body, index of the request)`.
    pub fn start(script: impl Fn(&Value, usize) -> Answer + Send + Sync + 'static) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
        let requests: Arc<Mutex<Vec<Recorded>>> = Arc::default();
        let script: Arc<Script> = Arc::new(script);
        let recorded = requests.clone();
        let closed_while_waiting: Arc<AtomicUsize> = Arc::default();
        let closed = closed_while_waiting.clone();
        thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let script = script.clone();
                let recorded = recorded.clone();
                let closed = closed.clone();
                thread::spawn(move || serve(stream, &*script, &recorded, &closed));
            }
        });
        Server { base_url, requests, closed_while_waiting }
    }

    /// How many slow answers were abandoned by their client.
    pub fn abandoned(&self) -> usize {
        self.closed_while_waiting.load(Ordering::SeqCst)
    }

    pub fn count(&self) -> usize {
        self.requests.lock().unwrap().len()
    }

    pub fn bodies(&self) -> Vec<Value> {
        self.requests.lock().unwrap().iter().map(|r| r.body.clone()).collect()
    }
}

/// Waits `after` on a connection whose request was read; false when the client closed it first.
fn wait_unless_closed(stream: &TcpStream, after: Duration) -> bool {
    let due = Instant::now() + after;
    let _ = stream.set_read_timeout(Some(Duration::from_millis(50)));
    let mut byte = [0u8; 1];
    while Instant::now() < due {
        match stream.peek(&mut byte) {
            Ok(0) => return false,
            Ok(_) => thread::sleep(Duration::from_millis(50)),
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
            Err(_) => return false,
        }
    }
    let _ = stream.set_read_timeout(None);
    true
}

fn serve(stream: TcpStream, script: &Script, recorded: &Mutex<Vec<Recorded>>, closed: &AtomicUsize) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
            return;
        }
        let mut length = 0;
        let mut authorization = None;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            let (name, value) = line.split_once(':').unwrap_or((line, ""));
            match name.to_ascii_lowercase().as_str() {
                "content-length" => length = value.trim().parse().unwrap_or(0),
                "authorization" => authorization = Some(value.trim().to_string()),
                _ => {}
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let index = {
            let mut r = recorded.lock().unwrap();
            r.push(Recorded { body: body.clone(), authorization });
            r.len() - 1
        };
        let answer = match script(&body, index) {
            Answer::Slow { after, text } => {
                if !wait_unless_closed(&stream, after) {
                    closed.fetch_add(1, Ordering::SeqCst);
                    return;
                }
                Answer::text(text)
            }
            other => other,
        };
        let (code, extra, text) = match answer {
            Answer::Hang | Answer::Slow { .. } => return,
            Answer::Content { text, usage } => {
                let mut reply = json!({
                    "id": format!("chatcmpl-{index}"),
                    "object": "chat.completion",
                    "model": body["model"],
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                });
                if usage {
                    reply["usage"] =
                        json!({"prompt_tokens": 100 + index, "completion_tokens": 20, "total_tokens": 120 + index});
                }
                (200, String::new(), reply.to_string())
            }
            Answer::Status { code, body, retry_after } => {
                (code, retry_after.map(|s| format!("Retry-After: {s}\r\n")).unwrap_or_default(), body)
            }
            Answer::Raw(text) => (200, String::new(), text),
        };
        let mut out = stream.try_clone().unwrap();
        let _ = write!(
            out,
            "HTTP/1.1 {code} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{extra}\r\n{text}",
            text.len()
        );
        let _ = out.flush();
    }
}

fn client_of(base_url: String, timeout_s: u64) -> Client {
    Client::new(
        &LlmConfig {
            base_url,
            model: "m".into(),
            api_key_env: "CHAINSMITH_TEST_UNSET".into(),
            timeout_s,
            context_tokens: None,
        },
        &chainsmith::trust::Trust::Session,
    )
    .expect("a valid LLM configuration")
}

/// A client of the scripted server, backing off briefly between retries.
pub fn client(server: &Server) -> Client {
    let mut c = client_of(server.base_url.clone(), 5);
    c.backoff = std::time::Duration::from_millis(5);
    c
}

/// A client of a port nothing listens on, without retries: the model is down.
pub fn unreachable_client() -> Client {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    drop(listener);
    let mut c = client_of(url, 1);
    c.max_retries = 0;
    c
}
