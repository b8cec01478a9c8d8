//! The LLM client against a real local HTTP server speaking the OpenAI chat-completions API.

use std::time::Duration;

use crate::support::openai::{Answer, Server};
use chainsmith::config::LlmConfig;
use chainsmith::llm::{Client, LlmError, Message, Options};

fn client(server_url: &str, key_env: &str) -> Client {
    let config = LlmConfig {
        base_url: server_url.to_string(),
        model: "test-model".into(),
        api_key_env: key_env.into(),
        timeout_s: 2,
        context_tokens: None,
    };
    let mut c = Client::new(&config, &chainsmith::trust::Trust::Session).unwrap();
    c.backoff = Duration::from_millis(10);
    c
}

#[tokio::test]
async fn a_reply_is_read_with_its_usage_and_the_key_sent_as_bearer() {
    let server = Server::start(|_, _| Answer::text("```python\nprint(1)\n```"));
    // SAFETY: each test uses its own variable name; nothing else reads it concurrently.
    unsafe { std::env::set_var("CHAINSMITH_TEST_KEY_A", "sk-secret-a") };
    let c = client(&server.base_url, "CHAINSMITH_TEST_KEY_A");
    let reply = c.chat(&[Message::system("s"), Message::user("task")], &Options::default()).await.unwrap();
    assert_eq!(reply.content, "```python\nprint(1)\n```");
    assert_eq!(reply.usage.prompt_tokens, 100);
    assert!(!reply.usage.estimated);
    let recorded = server.requests.lock().unwrap();
    assert_eq!(recorded[0].authorization.as_deref(), Some("Bearer sk-secret-a"));
    assert_eq!(recorded[0].body["model"], "test-model");
    assert_eq!(recorded[0].body["messages"][1]["content"], "task");
    assert!(!format!("{c:?}").contains("sk-secret"), "the key never appears in debug output");
}

#[tokio::test]
async fn server_errors_are_retried_then_succeed_and_usage_is_summed() {
    let server = Server::start(|_, i| match i {
        0 => Answer::Status { code: 500, body: "boom".into(), retry_after: None },
        1 => Answer::Status { code: 429, body: "slow down".into(), retry_after: Some(0) },
        _ => Answer::Content { text: "ok".into(), usage: false },
    });
    let c = client(&server.base_url, "CHAINSMITH_TEST_NO_KEY");
    let reply = c.chat(&[Message::user("four chars each")], &Options::default()).await.unwrap();
    assert_eq!(reply.content, "ok");
    assert_eq!(server.count(), 3);
    assert!(reply.usage.estimated, "no usage in the reply: estimated");
    assert_eq!(reply.usage.completion_tokens, 1);
    c.chat(&[Message::user("again")], &Options::default()).await.unwrap();
    assert_eq!(c.meter.requests(), 2);
    assert_eq!(server.requests.lock().unwrap()[0].authorization, None);
}

#[tokio::test]
async fn persistent_failures_and_nonsense_are_clear_errors() {
    let server =
        Server::start(|_, _| Answer::Status { code: 503, body: "down for maintenance".into(), retry_after: None });
    let c = client(&server.base_url, "X");
    let err = c.chat(&[Message::user("x")], &Options::default()).await.unwrap_err();
    assert!(matches!(err, LlmError::Status { status: 503, .. }), "{err}");
    assert!(err.to_string().contains("down for maintenance"));
    assert_eq!(server.count(), 4, "one try and three retries");

    let server = Server::start(|_, _| Answer::Status { code: 401, body: "bad key".into(), retry_after: None });
    let err = client(&server.base_url, "X").chat(&[Message::user("x")], &Options::default()).await.unwrap_err();
    assert!(err.to_string().contains("HTTP 401"), "{err}");
    assert_eq!(server.count(), 1, "client errors are not retried");

    let server = Server::start(|_, _| Answer::Raw("<html>not json</html>".into()));
    let err = client(&server.base_url, "X").chat(&[Message::user("x")], &Options::default()).await.unwrap_err();
    assert!(matches!(err, LlmError::Malformed(_)), "{err}");

    let server = Server::start(|_, _| Answer::Raw("{\"error\": \"no choices here\"}".into()));
    let err = client(&server.base_url, "X").chat(&[Message::user("x")], &Options::default()).await.unwrap_err();
    assert!(err.to_string().contains("no `choices`"), "{err}");
}

#[tokio::test]
async fn an_unreachable_server_is_named() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    drop(listener);
    let mut c = client(&url, "X");
    c.max_retries = 1;
    let err = c.chat(&[Message::user("x")], &Options::default()).await.unwrap_err();
    assert!(matches!(err, LlmError::Unreachable { .. }), "{err}");
    assert!(err.to_string().contains(&url), "{err}");
}

/// A raw HTTP server on 127.0.0.1 answering every connection with `respond` (on its own thread);
/// the URL and how many requests it received.
fn raw_server(respond: fn(&mut std::net::TcpStream)) -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::io::Read;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let count = std::sync::Arc::new(AtomicUsize::new(0));
    let counted = count.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(8) {
            let Ok(mut stream) = stream else { continue };
            counted.fetch_add(1, Ordering::SeqCst);
            std::thread::spawn(move || {
                let mut request = [0u8; 8192];
                let _ = stream.read(&mut request);
                respond(&mut stream);
            });
        }
    });
    (url, count)
}

#[tokio::test]
async fn an_endless_body_is_refused_not_buffered() {
    let (url, _) = raw_server(|stream| {
        use std::io::Write;
        let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{\"choices\": \"");
        let chunk = vec![b'x'; 1 << 20];
        // Bounded: 64 MiB at most, far past the client's cap.
        for _ in 0..64 {
            if stream.write_all(&chunk).is_err() {
                return;
            }
        }
    });
    let c = client(&url, "CHAINSMITH_TEST_UNSET");
    let err = c.chat(&[Message::user("task")], &Options::default()).await.unwrap_err();
    assert!(err.to_string().contains("larger than 8 MiB"), "{err}");
}

/// A server that began its answer and then closed the connection was reached: the message says it
/// broke off, not that it cannot be reached (which sends a user looking for a model that runs).
#[tokio::test]
async fn a_reply_broken_off_mid_body_is_named_as_such() {
    use std::sync::atomic::Ordering;
    let (url, asked) = raw_server(|stream| {
        use std::io::Write;
        let _ = stream
            .write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{\"choi");
    });
    let mut c = client(&url, "CHAINSMITH_TEST_UNSET");
    c.max_retries = 1;
    let err = c.chat(&[Message::user("task")], &Options::default()).await.unwrap_err();
    assert!(matches!(err, LlmError::BrokenOff { .. }), "{err:?}");
    assert!(
        err.to_string().starts_with(&format!("the LLM server at {url}/chat/completions broke off its reply (")),
        "{err}"
    );
    assert!(!err.to_string().contains("cannot be reached"), "{err}");
    assert_eq!(asked.load(Ordering::SeqCst), 2, "tried again once, as for any failure that may pass");
}

#[tokio::test]
async fn retries_stay_within_one_deadline_per_call() {
    use std::sync::atomic::Ordering;
    // A wait the deadline (2 s) cannot hold is not waited for: one request, the 429 answered.
    let (throttling, asked) = raw_server(|stream| {
        use std::io::Write;
        let _ = stream.write_all(b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 3600\r\nContent-Length: 0\r\n\r\n");
    });
    let err = client(&throttling, "CHAINSMITH_TEST_UNSET").chat(&[Message::user("t")], &Options::default()).await;
    assert!(matches!(err, Err(LlmError::Status { status: 429, .. })), "{err:?}");
    assert_eq!(asked.load(Ordering::SeqCst), 1);

    // A silent server uses the whole deadline on its first request: no second one.
    let (silent, asked) = raw_server(|_| std::thread::sleep(Duration::from_secs(20)));
    let err = client(&silent, "CHAINSMITH_TEST_UNSET").chat(&[Message::user("t")], &Options::default()).await;
    assert!(matches!(err, Err(LlmError::Timeout(2))), "{err:?}");
    assert_eq!(asked.load(Ordering::SeqCst), 1);
}

/// With `[llm] context_tokens`, a conversation longer than the model's context reaches the server
/// trimmed (the oldest exchange first), instead of being refused by it.
#[tokio::test]
async fn a_conversation_longer_than_the_context_is_trimmed_before_sending() {
    let server = Server::start(|_, _| Answer::text("```python\nprint(1)\n```"));
    let config = LlmConfig {
        base_url: server.base_url.clone(),
        model: "small".into(),
        api_key_env: "CHAINSMITH_TEST_NO_KEY".into(),
        timeout_s: 2,
        context_tokens: Some(2048),
    };
    let c = Client::new(&config, &chainsmith::trust::Trust::Session).unwrap();
    let long = "print(1)\n".repeat(400);
    let conversation = [
        Message::system("rules"),
        Message::user("task"),
        Message::assistant(long.clone()),
        Message::user("feedback"),
        Message::assistant(long),
        Message::user("last feedback"),
    ];
    let options = Options { max_tokens: Some(512), ..Default::default() };
    c.chat(&conversation, &options).await.unwrap();
    let recorded = server.requests.lock().unwrap();
    let sent: Vec<(String, usize)> = recorded[0].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["role"].as_str().unwrap().to_string(), m["content"].as_str().unwrap().len()))
        .collect();
    let roles: Vec<&str> = sent.iter().map(|(r, _)| r.as_str()).collect();
    assert_eq!(roles, ["system", "user", "assistant", "user"], "{sent:?}");
    assert_eq!(recorded[0].body["messages"][3]["content"], "last feedback");
    let characters: usize = sent.iter().map(|(_, n)| n).sum();
    assert!(characters / 3 < 2048 - 512, "{characters} characters");
}

/// A server that cannot decode to a schema (an OpenAI-compatible endpoint without constrained
/// decoding) answers 400 to `response_format`: the request goes again without it, and later
/// requests of the client leave it out instead of failing once each.
#[tokio::test]
async fn a_server_refusing_reply_schemas_is_asked_without_them() {
    let server = Server::start(|body, _| {
        if body.get("response_format").is_some() {
            Answer::Status { code: 400, body: "unknown field response_format".into(), retry_after: None }
        } else {
            Answer::text("2")
        }
    });
    let c = client(&server.base_url, "CHAINSMITH_TEST_NO_KEY");
    let options = Options {
        reply_schema: Some(serde_json::json!({"type": "integer", "enum": [0, 1, 2]})),
        ..Options::new(0.0, 4)
    };
    let reply = c.chat(&[Message::user("which chain?")], &options).await.unwrap();
    assert_eq!(reply.content, "2");
    let again = c.chat(&[Message::user("which chain?")], &options).await.unwrap();
    assert_eq!(again.content, "2");
    let bodies: Vec<serde_json::Value> = server.requests.lock().unwrap().iter().map(|r| r.body.clone()).collect();
    assert_eq!(bodies.len(), 3, "one refusal, then each request once");
    assert_eq!(
        bodies[0]["response_format"]["json_schema"]["schema"]["enum"],
        serde_json::json!([0, 1, 2]),
        "the schema is offered first"
    );
    assert!(bodies[1].get("response_format").is_none() && bodies[2].get("response_format").is_none());
    assert_eq!((bodies[0]["max_tokens"].as_u64(), bodies[2]["max_tokens"].as_u64()), (Some(4), Some(4)));
    assert_eq!(c.meter.requests(), 2, "the refused request is not counted as an answer");
}

/// What the server took from its prompt cache is counted apart from what it processed, from the
/// OpenAI field or llama.cpp's timings.
#[tokio::test]
async fn reused_prompt_tokens_are_read_from_the_reply() {
    let openai = r#"{"choices":[{"message":{"content":"a"}}],"usage":{"prompt_tokens":900,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":640}}}"#;
    let llama = r#"{"choices":[{"message":{"content":"a"}}],"usage":{"prompt_tokens":900,"completion_tokens":3},"timings":{"cache_n":512,"prompt_n":388}}"#;
    let reply = chainsmith::llm::parse_reply(openai, &[]).unwrap();
    assert_eq!((reply.usage.prompt_tokens, reply.usage.reused_tokens), (900, 640));
    assert_eq!(chainsmith::llm::parse_reply(llama, &[]).unwrap().usage.reused_tokens, 512);
    assert!(reply.usage.to_string().contains("900 prompt, 640 reused"), "{}", reply.usage);
}

/// A redirect from the model's server is followed within its origin only: reqwest's own policy
/// would resend the conversation to wherever it points, another service on this machine included.
#[tokio::test]
async fn the_conversation_does_not_follow_a_redirect_to_another_origin() {
    use crate::support::recorder::{Recorder, redirect};
    let elsewhere = Recorder::start(|_| crate::support::recorder::ok_json("{}"));
    let to = format!("{}/v1.43/containers/create", elsewhere.url());
    let model = Recorder::start(move |_| redirect(&to));
    let mut c = client(&format!("{}/v1", model.url()), "CHAINSMITH_TEST_UNSET");
    c.max_retries = 0;
    let failed = c.chat(&[Message::system("s"), Message::user("task")], &Options::default()).await;
    assert!(failed.is_err(), "{failed:?}");
    assert!(!model.received().is_empty());
    assert!(elsewhere.received().is_empty(), "{:?}", elsewhere.received());
}

/// A name recorded as resolving to this machine (`chainsmith trust` looked it up) is held to the
/// origin recorded with it: the model's server at another port of that name is another service.
#[test]
fn a_recorded_local_name_is_trusted_for_its_own_origin_only() {
    let recorded = chainsmith::trust::Trust::Recorded(["call <http://model.internal:8080>".to_string()].into());
    let config = |base_url: &str| LlmConfig {
        base_url: base_url.into(),
        model: "m".into(),
        api_key_env: "CHAINSMITH_TEST_UNSET".into(),
        timeout_s: 2,
        context_tokens: None,
    };
    assert!(Client::new(&config("http://model.internal:8080/v1"), &recorded).is_ok());
    let Err(LlmError::Config(why)) = Client::new(&config("http://model.internal:9090/v1"), &recorded) else {
        panic!("another port of a recorded name is not trusted")
    };
    assert!(why.starts_with("[llm] base_url would call http://model.internal:9090, on this machine"), "{why}");
}
