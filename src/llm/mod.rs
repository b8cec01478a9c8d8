//! An OpenAI-compatible chat-completions client (OpenAI, vLLM, Ollama, llama.cpp server, LM Studio).
//!
//! Retries with backoff on 429, 5xx, timeouts and refused connections; any other failure is a clear
//! error. Token usage comes from the reply's `usage`, else an estimate, and is summed per operation
//! by a [`UsageMeter`]. A client given the job's [`Cancel`] drops its request when the job is
//! cancelled: the connection closes, which also stops a local server (llama.cpp) generating, and
//! the caller hears [`LlmError::Cancelled`] at once instead of after the reply. The API key is read from the environment variable the configuration names
//! and is never written to files or logs.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::cancel::Cancel;
use crate::config::LlmConfig;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    pub role: String,
    pub content: String,
}

impl Message {
    pub fn system(content: impl Into<String>) -> Self {
        Message { role: "system".into(), content: content.into() }
    }
    pub fn user(content: impl Into<String>) -> Self {
        Message { role: "user".into(), content: content.into() }
    }
    pub fn assistant(content: impl Into<String>) -> Self {
        Message { role: "assistant".into(), content: content.into() }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Of the prompt tokens, those the server took from its prompt cache instead of processing
    /// them again (`usage.prompt_tokens_details.cached_tokens`, llama.cpp's `timings.cache_n`).
    pub reused_tokens: u64,
    /// Whether any part of this count is an estimate (the server sent no `usage`).
    pub estimated: bool,
}

impl Usage {
    pub fn total(&self) -> u64 {
        self.prompt_tokens + self.completion_tokens
    }
    fn add(&mut self, other: Usage) {
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
        self.reused_tokens += other.reused_tokens;
        self.estimated |= other.estimated;
    }
}

impl std::fmt::Display for Usage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let reused = if self.reused_tokens > 0 { format!(", {} reused", self.reused_tokens) } else { String::new() };
        write!(
            f,
            "{} tokens ({} prompt{reused} + {} completion{})",
            self.total(),
            self.prompt_tokens,
            self.completion_tokens,
            if self.estimated { ", partly estimated" } else { "" }
        )
    }
}

/// Usage summed over the requests of one operation (a generation, a fix, a probe).
#[derive(Debug, Clone, Default)]
pub struct UsageMeter {
    inner: Arc<Mutex<(Usage, u32)>>,
}

impl UsageMeter {
    pub fn record(&self, usage: Usage) {
        let mut guard = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        guard.0.add(usage);
        guard.1 += 1;
    }
    pub fn usage(&self) -> Usage {
        self.inner.lock().unwrap_or_else(|p| p.into_inner()).0
    }
    pub fn requests(&self) -> u32 {
        self.inner.lock().unwrap_or_else(|p| p.into_inner()).1
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    pub content: String,
    pub finish_reason: Option<String>,
    pub usage: Usage,
}

#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    #[error(
        "the LLM server at {url} cannot be reached ({reason}): is a model running there? (`[llm] base_url` in chainsmith.toml sets the address)"
    )]
    Unreachable { url: String, reason: String },
    #[error("the LLM server at {url} broke off its reply ({reason})")]
    BrokenOff { url: String, reason: String },
    #[error("the LLM server did not answer within {0} s")]
    Timeout(u64),
    #[error("the LLM server answered HTTP {status}: {body}")]
    Status { status: u16, body: String },
    #[error("the LLM server's reply is not a chat completion: {0}")]
    Malformed(String),
    #[error("{0}")]
    Config(String),
    #[error("cancelled")]
    Cancelled,
}

impl LlmError {
    /// Whether trying again later may succeed.
    fn is_transient(&self) -> bool {
        match self {
            LlmError::Unreachable { .. } | LlmError::BrokenOff { .. } | LlmError::Timeout(_) => true,
            LlmError::Status { status, .. } => *status == 429 || *status >= 500,
            _ => false,
        }
    }
}

/// Options of one request.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub temperature: Option<f64>,
    pub max_tokens: Option<u32>,
    /// A JSON schema the reply must follow (`response_format`), which servers that constrain
    /// decoding (llama.cpp, vLLM, OpenAI) enforce token by token. A server that refuses the field
    /// is asked again without it, and not sent it again: the caller reads the reply either way.
    pub reply_schema: Option<Value>,
}

impl Options {
    /// Options for a reply of at most `max_tokens` tokens, at `temperature`.
    pub fn new(temperature: f64, max_tokens: u32) -> Options {
        Options { temperature: Some(temperature), max_tokens: Some(max_tokens), reply_schema: None }
    }
}

#[derive(Clone)]
pub struct Client {
    http: reqwest::Client,
    endpoint: String,
    model: String,
    api_key: Option<String>,
    timeout_s: u64,
    context_tokens: Option<u32>,
    /// Retries after the first attempt for transient failures.
    pub max_retries: u32,
    /// First backoff; doubles each retry.
    pub backoff: Duration,
    pub meter: UsageMeter,
    /// The job's cancel flag: a request in flight is dropped when it is set.
    pub cancel: Option<Cancel>,
    /// Set once the server refused a `response_format`: later requests go without one.
    schemas_refused: Arc<std::sync::atomic::AtomicBool>,
}

/// Tokens kept free for the reply when a request names no `max_tokens`.
const DEFAULT_REPLY_TOKENS: u32 = 1024;

/// A conservative token estimate for prompts mixing English and code: tokenizers of code models
/// average 3.5–4 characters a token on such text; 3 leaves a margin.
fn estimated_tokens(messages: &[Message]) -> usize {
    messages.iter().map(|m| m.content.chars().count() / 3 + 8).sum()
}

/// The conversation cut to fit `context` tokens with `reply` left for the answer. First the turns
/// between the opening (system and first request) and the last two messages go, oldest first;
/// then the longest message keeps its beginning and end, its middle replaced by a note. A
/// conversation that fits is sent as it is.
pub fn fit_to_context(messages: &[Message], context: u32, reply: u32) -> Vec<Message> {
    let budget = (context.saturating_sub(reply) as usize).max(256);
    let mut out = messages.to_vec();
    let opening = out.iter().take_while(|m| m.role == "system").count() + 1;
    while estimated_tokens(&out) > budget && out.len() > opening + 2 {
        // An assistant turn goes with the feedback that answered it, so roles keep alternating.
        let removed = out.remove(opening);
        if removed.role == "assistant" && out.len() > opening + 2 && out[opening].role == "user" {
            out.remove(opening);
        }
    }
    // Messages are cut, longest first, down to a few hundred characters each at most.
    const KEPT: usize = 600;
    while estimated_tokens(&out) > budget {
        let Some(longest) = (0..out.len())
            .filter(|&i| out[i].content.chars().count() > KEPT + 100)
            .max_by_key(|&i| out[i].content.chars().count())
        else {
            break; // nothing sensible left to cut
        };
        let chars: Vec<char> = out[longest].content.chars().collect();
        let excess = (estimated_tokens(&out) - budget) * 3 + 200;
        let keep = (chars.len().saturating_sub(excess)).max(KEPT) / 2;
        let head: String = chars[..keep].iter().collect();
        let tail: String = chars[chars.len() - keep..].iter().collect();
        out[longest].content =
            format!("{head}\n[… {} characters left out to fit the model's context …]\n{tail}", chars.len() - 2 * keep);
    }
    out
}

/// The largest chat-completion body read (a reply is a few kilobytes; an endless body is refused).
pub const MAX_REPLY_BYTES: usize = 8 << 20;

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key is deliberately absent.
        f.debug_struct("Client").field("endpoint", &self.endpoint).field("model", &self.model).finish()
    }
}

impl Client {
    /// A client of `config`'s server. The key goes only where `trust` allows: a workspace that
    /// chose the server or the key's variable must be trusted with that first, and so must one
    /// that chose a server on this machine or its private network, key or not.
    pub fn new(config: &LlmConfig, trust: &crate::trust::Trust) -> Result<Self, LlmError> {
        let base = config.base_url.trim_end_matches('/');
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            let shown = crate::trust::redact_url(base);
            return Err(LlmError::Config(format!("[llm] base_url `{shown}` must start with http:// or https://")));
        }
        let lines = crate::trust::Command::llm(config).into_iter().chain(crate::trust::Command::llm_reach(config));
        if let Some(line) = lines.into_iter().find(|line| !trust.allows(&line.command)) {
            return Err(LlmError::Config(trust.refusal(&line)));
        }
        // A name that resolves here: held to its recorded origin, and judged here behind a proxy.
        if config.base_url != LlmConfig::default().base_url
            && let Ok(url) = reqwest::Url::parse(base)
            && let Some(why) = crate::trust::name_refusal(trust, trust.local_names().as_ref(), &url, "[llm] base_url")
        {
            return Err(LlmError::Config(why));
        }
        let api_key = std::env::var(&config.api_key_env).ok().filter(|k| !k.is_empty());
        // A redirect is followed within the server's origin only: reqwest would resend the
        // conversation (and every header but Authorization) to wherever it points, this machine's
        // other services included.
        let same_origin = reqwest::redirect::Policy::custom(|attempt| {
            let within = attempt.previous().first().is_some_and(|first| first.origin() == attempt.url().origin());
            if within && attempt.previous().len() < 10 { attempt.follow() } else { attempt.stop() }
        });
        let http = reqwest::Client::builder()
            .timeout(crate::config::timeout(config.timeout_s))
            .redirect(same_origin)
            .dns_resolver(std::sync::Arc::new(crate::trust::Resolver::for_trust(trust)))
            .build()
            .map_err(|e| LlmError::Config(format!("cannot build the HTTP client: {e}")))?;
        Ok(Client {
            http,
            endpoint: format!("{base}/chat/completions"),
            model: config.model.clone(),
            api_key,
            timeout_s: config.timeout_s,
            context_tokens: config.context_tokens,
            max_retries: 3,
            backoff: Duration::from_millis(500),
            meter: UsageMeter::default(),
            cancel: None,
            schemas_refused: Arc::default(),
        })
    }

    /// One chat completion, retried on transient failures within one overall deadline of
    /// `timeout_s` (a silent or throttling server costs at most that, retries included); usage is
    /// recorded on the meter. With a cancel flag, cancelling drops the request (retries and
    /// backoff included) and answers [`LlmError::Cancelled`].
    pub async fn chat(&self, messages: &[Message], options: &Options) -> Result<Reply, LlmError> {
        let Some(cancel) = &self.cancel else { return self.chat_until_done(messages, options).await };
        if cancel.is_cancelled() {
            return Err(LlmError::Cancelled);
        }
        tokio::select! {
            reply = self.chat_until_done(messages, options) => reply,
            () = cancel.cancelled() => Err(LlmError::Cancelled),
        }
    }

    async fn chat_until_done(&self, messages: &[Message], options: &Options) -> Result<Reply, LlmError> {
        let fitted;
        let messages = match self.context_tokens {
            Some(context) => {
                fitted = fit_to_context(messages, context, options.max_tokens.unwrap_or(DEFAULT_REPLY_TOKENS));
                fitted.as_slice()
            }
            None => messages,
        };
        let mut body = json!({"model": self.model, "messages": messages, "stream": false});
        if let Some(t) = options.temperature {
            body["temperature"] = json!(t);
        }
        if let Some(m) = options.max_tokens {
            body["max_tokens"] = json!(m);
        }
        let refused = || self.schemas_refused.load(std::sync::atomic::Ordering::Relaxed);
        if let Some(schema) = options.reply_schema.as_ref().filter(|_| !refused()) {
            body["response_format"] =
                json!({"type": "json_schema", "json_schema": {"name": "reply", "schema": schema}});
        }
        let deadline = tokio::time::Instant::now() + crate::config::timeout(self.timeout_s);
        let mut attempt = 0;
        loop {
            let sent = tokio::time::timeout_at(deadline, self.send(&body, messages)).await;
            match sent.unwrap_or(Err((LlmError::Timeout(self.timeout_s), None))) {
                Ok(reply) => {
                    self.meter.record(reply.usage);
                    return Ok(reply);
                }
                Err((e, retry_after)) if e.is_transient() && attempt < self.max_retries => {
                    let wait = retry_after.unwrap_or(self.backoff * 2u32.pow(attempt)).min(Duration::from_secs(30));
                    if tokio::time::Instant::now() + wait >= deadline {
                        return Err(e);
                    }
                    tracing::warn!("LLM request failed ({e}); retrying in {} ms", wait.as_millis());
                    tokio::time::sleep(wait).await;
                    attempt += 1;
                }
                // A server without constrained decoding (or one that rejects this schema) says so
                // with a 4xx: the same request without the schema is what it can answer.
                Err((LlmError::Status { status: 400 | 415 | 422 | 501, body: why }, _))
                    if body.get("response_format").is_some() =>
                {
                    tracing::info!("the LLM server refused a reply schema ({why}); asking without one");
                    self.schemas_refused.store(true, std::sync::atomic::Ordering::Relaxed);
                    if let Some(fields) = body.as_object_mut() {
                        fields.remove("response_format");
                    }
                }
                Err((e, _)) => return Err(e),
            }
        }
    }

    async fn send(&self, body: &Value, messages: &[Message]) -> Result<Reply, (LlmError, Option<Duration>)> {
        let mut request = self.http.post(&self.endpoint).json(body);
        if let Some(key) = &self.api_key {
            request = request.bearer_auth(key);
        }
        let response = request.send().await.map_err(|e| (self.transport_error(e, false), None))?;
        let status = response.status();
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        let text = self.read_body(response).await?;
        if !status.is_success() {
            let excerpt: String = text.chars().take(300).collect();
            return Err((LlmError::Status { status: status.as_u16(), body: excerpt }, retry_after));
        }
        parse_reply(&text, messages).map_err(|e| (e, None))
    }

    /// The response body, refused past [`MAX_REPLY_BYTES`] instead of buffered without bound.
    async fn read_body(&self, mut response: reqwest::Response) -> Result<String, (LlmError, Option<Duration>)> {
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| (self.transport_error(e, true), None))? {
            if body.len() + chunk.len() > MAX_REPLY_BYTES {
                let limit = MAX_REPLY_BYTES >> 20;
                return Err((LlmError::Malformed(format!("the reply is larger than {limit} MiB")), None));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(String::from_utf8_lossy(&body).into_owned())
    }

    /// A transport failure: before the server's answer began (no connection, or none that
    /// answered), or once it had begun (`answering`) — then it was reached, and "cannot be
    /// reached" would send the user looking for a model that is running.
    fn transport_error(&self, e: reqwest::Error, answering: bool) -> LlmError {
        if e.is_timeout() {
            return LlmError::Timeout(self.timeout_s);
        }
        let url = crate::trust::redact_url(&self.endpoint);
        match answering {
            false => LlmError::Unreachable {
                url,
                reason: crate::logging::root_cause(&e).unwrap_or_else(|| "the request failed".into()),
            },
            true => LlmError::BrokenOff {
                url,
                reason: crate::logging::root_cause(&e).unwrap_or_else(|| "the connection ended".into()),
            },
        }
    }
}

/// Reads a chat-completion body; usage missing or partial is estimated at four characters a token.
pub fn parse_reply(text: &str, messages: &[Message]) -> Result<Reply, LlmError> {
    let value: Value = serde_json::from_str(text).map_err(|e| LlmError::Malformed(format!("not JSON ({e})")))?;
    let choice = value
        .get("choices")
        .and_then(Value::as_array)
        .and_then(|c| c.first())
        .ok_or_else(|| LlmError::Malformed("no `choices`".into()))?;
    let message = choice.get("message").ok_or_else(|| LlmError::Malformed("the choice has no `message`".into()))?;
    let content = match message.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(Value::Array(parts)) => {
            parts.iter().filter_map(|p| p.get("text").and_then(Value::as_str)).collect::<Vec<_>>().join("")
        }
        Some(other) => return Err(LlmError::Malformed(format!("`content` is {other}"))),
    };
    let estimate = |s: &str| (s.chars().count() as u64).div_ceil(4);
    let reported = value.get("usage");
    let prompt = reported.and_then(|u| u.get("prompt_tokens")).and_then(Value::as_u64);
    let completion = reported.and_then(|u| u.get("completion_tokens")).and_then(Value::as_u64);
    let reused = reported
        .and_then(|u| u.pointer("/prompt_tokens_details/cached_tokens"))
        .or_else(|| value.pointer("/timings/cache_n"))
        .and_then(Value::as_u64)
        .unwrap_or(0);
    let usage = Usage {
        prompt_tokens: prompt.unwrap_or_else(|| messages.iter().map(|m| estimate(&m.content) + 4).sum()),
        completion_tokens: completion.unwrap_or_else(|| estimate(&content)),
        reused_tokens: reused,
        estimated: prompt.is_none() || completion.is_none(),
    };
    Ok(Reply { content, finish_reason: choice.get("finish_reason").and_then(Value::as_str).map(str::to_string), usage })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_conversation_is_fitted_to_the_model_context() {
        let long = |n: usize| "x".repeat(n);
        let conversation = vec![
            Message::system("rules"),
            Message::user(format!("task and tools {}", long(6000))),
            Message::assistant(long(3000)),
            Message::user(format!("feedback 1 {}", long(3000))),
            Message::assistant(long(3000)),
            Message::user("feedback 2"),
        ];
        assert_eq!(fit_to_context(&conversation, 100_000, 1024), conversation, "what fits is sent unchanged");
        let fitted = fit_to_context(&conversation, 4096, 1024);
        assert!(estimated_tokens(&fitted) <= 4096 - 1024, "{}", estimated_tokens(&fitted));
        let roles: Vec<&str> = fitted.iter().map(|m| m.role.as_str()).collect();
        assert_eq!(roles, ["system", "user", "assistant", "user"], "the oldest exchange went, as a pair");
        assert!(fitted[1].content.starts_with("task and tools") && fitted[3].content == "feedback 2");
        // Still too long: the longest message loses its middle, with a note.
        let fitted = fit_to_context(&conversation, 2048, 1024);
        assert!(estimated_tokens(&fitted) <= 2048 - 1024, "{}", estimated_tokens(&fitted));
        assert!(fitted[1].content.starts_with("task and tools"), "the beginning is kept");
        assert!(fitted[1].content.contains("characters left out to fit the model's context"));
    }
}
