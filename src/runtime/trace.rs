//! Run traces in the design's shape, secret redaction, response capping, and replay.
//!
//! A trace is `{program, started, ok, calls: [{id, tool, arguments, ok, status, response, error,
//! duration_ms, line}], error?: {type, message, line, attributed_call}}`. Call ids count from 1 in
//! call order; `line` is the program's 1-based line (Python's numbering, as in tracebacks) or `null`
//! when the call did not come from the program file itself.

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::config::{Config, HeaderValueConfig, ToolsetSource};
use crate::text::shorten;
use crate::toolset::Catalog;

use super::escapes;

/// Where runs are recorded, under the workspace root.
pub const RUNS_DIR: &str = ".chainsmith/runs";
/// What replaces a secret in traces and logs.
pub const REDACTED: &str = "[redacted]";

/// A response larger than this (serialized) is shortened in the trace.
pub const RESPONSE_CAP_BYTES: usize = 1024 * 1024;
/// Marks the place where a capped response lost items; such a response is not replayed.
pub const CUT_MARK: &str = "…chainsmith cut ";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trace {
    pub program: String,
    pub started: String,
    pub ok: bool,
    pub calls: Vec<TraceCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<TraceError>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceCall {
    pub id: u32,
    /// `toolset.name`.
    pub tool: String,
    pub arguments: Value,
    pub ok: bool,
    /// The HTTP status, when there was an HTTP answer.
    pub status: Option<u16>,
    /// The decoded response (JSON, else text), capped; also kept for error statuses.
    pub response: Value,
    pub error: Option<String>,
    pub duration_ms: u64,
    pub line: Option<u32>,
    /// Answered from the replayed trace (not part of the file's shape).
    #[serde(skip)]
    pub replayed: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceError {
    #[serde(rename = "type")]
    pub kind: String,
    pub message: String,
    pub line: Option<u32>,
    pub attributed_call: Option<u32>,
}

impl TraceCall {
    /// `✓ 200`, `✗ 404`, `✗ error`: the call's outcome in a few characters.
    pub fn outcome(&self) -> String {
        let mark = if self.ok { "✓" } else { "✗" };
        match self.status {
            Some(status) => format!("{mark} {status}"),
            None if self.ok => mark.to_string(),
            None => format!("{mark} error"),
        }
    }

    /// One line: `#1 tmdb.search_person(query="Sofia Coppola")  ✓ 200  84 ms  line 8`.
    pub fn summary(&self) -> String {
        let line = self.line.map(|l| format!("  line {l}")).unwrap_or_default();
        let replayed = if self.replayed { "  (replayed)" } else { "" };
        let error = match (&self.error, self.ok) {
            (Some(e), false) if self.status.is_none() => format!("  {}", shorten(e, 120)),
            _ => String::new(),
        };
        format!(
            "#{} {}({})  {}  {} ms{line}{replayed}{error}",
            self.id,
            self.tool,
            self.key_arguments(3),
            self.outcome(),
            self.duration_ms
        )
    }

    /// The arguments in a short `name=value` form for one-line summaries.
    pub fn key_arguments(&self, max: usize) -> String {
        let Some(map) = self.arguments.as_object() else { return String::new() };
        let mut parts: Vec<String> = map
            .iter()
            .take(max)
            .map(|(k, v)| {
                let value = match v {
                    Value::String(s) => format!("{s:?}"),
                    other => other.to_string(),
                };
                format!("{k}={}", shorten(&value, 40))
            })
            .collect();
        if map.len() > max {
            parts.push("…".into());
        }
        parts.join(", ")
    }
}

/// `2025-11-21T08:45:12.345Z` and `20251121T084512345Z` (for file names) for a moment.
pub fn timestamps(at: SystemTime) -> (String, String) {
    let since = at.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs() as i64;
    let millis = since.subsec_millis();
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (hour, minute, second) = (rem / 3600, rem % 3600 / 60, rem % 60);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (
        format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}.{millis:03}Z"),
        format!("{year:04}{month:02}{day:02}T{hour:02}{minute:02}{second:02}{millis:03}Z"),
    )
}

/// The auth values of a workspace (from the environment variables its toolsets name) and the
/// names of the parameters / headers that carry them. Nothing holding one reaches a trace or a log.
#[derive(Debug, Clone, Default)]
pub struct Secrets {
    /// The secrets as given, found in text however much of it is escaped ([`escapes`]).
    plain: Vec<String>,
    /// The forms of each that no escape scheme decodes back (see [`Secrets::add`]), longest first.
    values: Vec<String>,
    /// Lower-cased auth parameter and header names.
    names: Vec<String>,
}

impl Secrets {
    /// The toolsets' auth values, and the headers chainsmith.toml sends remote MCP servers.
    pub fn of(catalog: &Catalog, config: &Config) -> Secrets {
        let mut secrets = Secrets::default();
        for toolset in &catalog.toolsets {
            // Credentials written into a base URL are sent as `Authorization: Basic`: an answer
            // echoing them is redacted like any other key.
            if let Some(url) = toolset.base_url.as_deref().and_then(|u| reqwest::Url::parse(u).ok())
                && url.password().is_some()
                && let Some((user, password)) = super::escapes::url_credentials(&url)
            {
                secrets.add(format!("{user}:{password}"));
                secrets.add(password);
            }
            let Some(auth) = &toolset.auth else { continue };
            secrets.names.extend(auth.query.iter().chain(auth.header.iter()).map(|n| n.to_ascii_lowercase()));
            if let Some(value) = auth.value_env.as_deref().and_then(|var| std::env::var(var).ok()) {
                secrets.add(value);
            }
        }
        for toolset in &config.toolsets {
            let ToolsetSource::Mcp(mcp) = &toolset.source else { continue };
            for value in mcp.headers.values() {
                if let HeaderValueConfig::FromEnv(from) = value
                    && let Ok(value) = std::env::var(&from.value_env)
                {
                    secrets.add(value);
                }
            }
        }
        secrets.names.sort();
        secrets.names.dedup();
        secrets
    }

    /// A secret. Beside the secret itself, text is searched for the forms no escape scheme
    /// decodes back to it: its UTF-16 (either byte order) and the hex (lower- and upper-case
    /// digits) of it and of its UTF-16, base32 and base32hex (either case, with and without
    /// padding), and base64 of its bytes and of its UTF-16 (PowerShell's `-EncodedCommand`,
    /// Java's `UTF-16BE`): standard and URL-safe, with and without padding — a Basic `user:pass`
    /// credential — and, in base32 and base64, the secret inside a longer encoded text, see
    /// [`encoded_cores`]. Each form is also found wrapped in lines ([`escapes::spans_of_forms`]),
    /// in an answer as in a line of output. Escaped forms, whole or in part — percent, form
    /// (`+`), quoted-printable, HTML character references, JSON and other backslash escapes — are
    /// found by decoding the text ([`escapes::spans_holding`]).
    pub fn add(&mut self, value: String) {
        use data_encoding::{
            BASE32, BASE32_NOPAD, BASE32HEX, BASE32HEX_NOPAD, BASE64, BASE64_NOPAD, BASE64URL, BASE64URL_NOPAD,
        };
        let value = value.trim().to_string();
        if value.is_empty() {
            return;
        }
        let utf16_le: Vec<u8> = value.encode_utf16().flat_map(u16::to_le_bytes).collect();
        let utf16_be: Vec<u8> = value.encode_utf16().flat_map(u16::to_be_bytes).collect();
        let mut forms = vec![value.clone()];
        // UTF-16 itself, as a body of `charset=utf-16` reaches the program (an ASCII key's UTF-16
        // is UTF-8 too, NULs between its bytes).
        forms.extend([&utf16_le, &utf16_be].into_iter().filter_map(|bytes| String::from_utf8(bytes.clone()).ok()));
        for bytes in [value.as_bytes(), &utf16_le, &utf16_be] {
            let hex = data_encoding::HEXLOWER.encode(bytes);
            forms.extend([hex.to_ascii_uppercase(), hex]);
        }
        for engine in [BASE32, BASE32_NOPAD, BASE32HEX, BASE32HEX_NOPAD] {
            let base32 = engine.encode(value.as_bytes());
            forms.extend([base32.to_ascii_lowercase(), base32]);
        }
        let base32_cores = encoded_cores(value.as_bytes(), &[&BASE32, &BASE32HEX], 5, 8);
        forms.extend(base32_cores.iter().map(|core| core.to_ascii_lowercase()));
        forms.extend(base32_cores);
        for bytes in [value.as_bytes(), &utf16_le, &utf16_be] {
            for engine in [&BASE64, &BASE64_NOPAD, &BASE64URL, &BASE64URL_NOPAD] {
                forms.push(engine.encode(bytes));
            }
            forms.extend(encoded_cores(bytes, &[&BASE64, &BASE64URL], 3, 4));
        }
        for form in forms {
            if !self.values.contains(&form) {
                self.values.push(form);
            }
        }
        // Longest first, so a secret containing another is replaced whole.
        self.values.sort_by_key(|v| std::cmp::Reverse(v.len()));
        if !self.plain.contains(&value) {
            self.plain.push(value);
        }
    }

    /// The most bytes one secret may take in text (its longest form escaped twice, see
    /// [`escapes::MAX_TWICE_ESCAPED_LEN`]): output is held back by one less than this across
    /// pieces so no secret is cut in two and printed.
    pub fn longest(&self) -> usize {
        let escaped = self.plain.iter().map(|p| p.len() * escapes::MAX_TWICE_ESCAPED_LEN).max().unwrap_or(0);
        self.values.first().map_or(0, String::len).max(escaped)
    }

    pub fn is_auth_name(&self, name: &str) -> bool {
        self.names.binary_search(&name.to_ascii_lowercase()).is_ok()
    }

    pub fn text(&self, text: &str) -> String {
        if self.values.is_empty() {
            return text.to_string();
        }
        match String::from_utf8(self.bytes(text.as_bytes())) {
            Ok(text) => text,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        }
    }

    /// `bytes` with every form of a secret replaced, whether or not they are text.
    pub fn bytes(&self, bytes: &[u8]) -> Vec<u8> {
        let mut out = bytes.to_vec();
        if self.plain.is_empty() {
            return out;
        }
        let forms = escapes::spans_of_forms(&out, &self.values);
        if !forms.is_empty() {
            out = escapes::replace_spans(&out, &forms, REDACTED.as_bytes());
        }
        let escaped = escapes::spans_holding(&out, &self.plain);
        if escaped.is_empty() { out } else { escapes::replace_spans(&out, &escaped, REDACTED.as_bytes()) }
    }

    /// `value` with every form of a secret replaced, in keys as in values; the value of an auth
    /// parameter or header name whatever it holds.
    pub fn value(&self, value: &Value) -> Value {
        let mut redacted = value.clone();
        self.redact(&mut redacted);
        redacted
    }

    /// [`Secrets::value`] in place: an answer of many megabytes is not copied to be redacted.
    pub fn redact(&self, value: &mut Value) {
        match value {
            Value::String(s) if self.values.iter().any(|v| v == s) => *s = REDACTED.into(),
            Value::String(s) if !self.values.is_empty() => *s = self.text(s),
            // Bytes as a list of numbers (Node's `Buffer` as JSON, a byte array serialised):
            // holding a secret, the list goes whole.
            Value::Array(items)
                if !self.values.is_empty() && byte_list(items).is_some_and(|bytes| self.bytes(&bytes) != bytes) =>
            {
                *value = Value::String(REDACTED.into());
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.redact(v)),
            Value::Object(map) => {
                for (k, v) in map.iter_mut() {
                    if self.is_auth_name(k) {
                        *v = Value::String(REDACTED.into());
                    } else {
                        self.redact(v);
                    }
                }
                // Keys rarely hold a secret: the map is rebuilt only when one does.
                if !self.values.is_empty() && map.keys().any(|k| self.text(k) != *k) {
                    *map = std::mem::take(map).into_iter().map(|(k, v)| (self.text(&k), v)).collect();
                }
            }
            _ => {}
        }
    }
}

/// `items` as bytes, when there are enough of them to hold a secret and each is a number from 0
/// to 255.
fn byte_list(items: &[Value]) -> Option<Vec<u8>> {
    if items.len() < 4 {
        return None;
    }
    items.iter().map(|item| item.as_u64().and_then(|n| u8::try_from(n).ok())).collect()
}

/// The response as the trace keeps it: unchanged when small, else with arrays shortened and long
/// strings cut (each cut marked with [`CUT_MARK`]), else a note of its size.
pub fn cap_response(value: &Value) -> Value {
    let size = serde_json::to_vec(value).map(|v| v.len()).unwrap_or(0);
    if size <= RESPONSE_CAP_BYTES {
        return value.clone();
    }
    for (items, chars) in [(50, 2000), (20, 500), (10, 200), (5, 100), (2, 60), (1, 40)] {
        let cut = cut(value, items, chars);
        if serde_json::to_vec(&cut).map(|v| v.len()).unwrap_or(usize::MAX) <= RESPONSE_CAP_BYTES {
            return cut;
        }
    }
    Value::String(format!("{CUT_MARK}a response of {size} bytes"))
}

fn cut(value: &Value, items: usize, chars: usize) -> Value {
    match value {
        Value::Array(list) => {
            let mut out: Vec<Value> = list.iter().take(items).map(|v| cut(v, items, chars)).collect();
            if list.len() > items {
                out.push(Value::String(format!("{CUT_MARK}{} more items", list.len() - items)));
            }
            Value::Array(out)
        }
        Value::Object(map) => Value::Object(map.iter().map(|(k, v)| (k.clone(), cut(v, items, chars))).collect()),
        Value::String(s) if s.chars().count() > chars => {
            let kept: String = s.chars().take(chars).collect();
            Value::String(format!("{kept}{CUT_MARK}{} more characters", s.chars().count() - chars))
        }
        other => other.clone(),
    }
}

fn is_cut(value: &Value) -> bool {
    match value {
        Value::String(s) => s.contains(CUT_MARK),
        Value::Array(items) => items.iter().any(is_cut),
        Value::Object(map) => map.values().any(is_cut),
        _ => false,
    }
}

/// JSON with object keys sorted at every level: the identity of a call's arguments.
pub fn canonical(value: &Value) -> String {
    fn sorted(value: &Value) -> Value {
        match value {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                let mut out = Map::new();
                for k in keys {
                    out.insert(k.clone(), sorted(&map[k]));
                }
                Value::Object(out)
            }
            Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    sorted(value).to_string()
}

/// The recorded answers of a trace, by (tool, arguments). Identical calls are answered in the
/// order they were recorded; once those run out the last answer repeats.
#[derive(Debug, Default)]
pub struct Replay {
    answers: Mutex<HashMap<(String, String), Answers>>,
    /// How many answers it may still give (`None`: any number): a re-run "from a call" answers the
    /// calls before it and no later one, even one identical to an earlier call.
    left: Mutex<Option<usize>>,
}

/// The recorded answers of one (tool, arguments) still to give, and the last one given.
type Answers = (VecDeque<TraceCall>, Option<TraceCall>);

impl Replay {
    pub fn new(trace: &Trace) -> Replay {
        let mut answers: HashMap<(String, String), Answers> = HashMap::new();
        for call in &trace.calls {
            // Calls without an answer (refused connections, interrupted runs) and cut responses are
            // executed again.
            let answered = call.ok || call.status.is_some();
            if !answered || is_cut(&call.response) {
                continue;
            }
            answers.entry((call.tool.clone(), canonical(&call.arguments))).or_default().0.push_back(call.clone());
        }
        Replay { answers: Mutex::new(answers), left: Mutex::new(None) }
    }

    /// Answers only the trace's calls before the one with id `first_live`, and only that many.
    pub fn before(trace: &Trace, first_live: u32) -> Replay {
        let mut earlier = trace.clone();
        earlier.calls.retain(|call| call.id < first_live);
        let replay = Replay::new(&earlier);
        *replay.left.lock().unwrap_or_else(|e| e.into_inner()) = Some(first_live.saturating_sub(1) as usize);
        replay
    }

    /// The recorded answer for a call (its arguments already redacted as a trace keeps them).
    pub fn answer(&self, tool: &str, arguments: &Value) -> Option<TraceCall> {
        let mut left = self.left.lock().unwrap_or_else(|e| e.into_inner());
        match left.as_mut() {
            Some(0) => return None,
            Some(n) => *n -= 1,
            None => {}
        }
        drop(left);
        let mut answers = self.answers.lock().unwrap_or_else(|e| e.into_inner());
        let (queue, last) = answers.get_mut(&(tool.to_string(), canonical(arguments)))?;
        match queue.pop_front() {
            Some(call) => {
                *last = Some(call.clone());
                Some(call)
            }
            None => last.clone(),
        }
    }
}

pub fn load(path: &Path) -> Result<Trace> {
    let text = crate::files::read_json_text(path, crate::files::MAX_READ, crate::files::MAX_RECORD_VALUES)
        .with_context(|| format!("cannot read the trace {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("{} is not a chainsmith trace", path.display()))
}

/// Writes the trace to a file the user named (a link there is replaced, not followed).
pub fn write(path: &Path, trace: &Trace) -> Result<()> {
    let folder = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(folder).with_context(|| format!("cannot create {}", folder.display()))?;
    write_inside(folder, path, trace)
}

fn write_inside(boundary: &Path, path: &Path, trace: &Trace) -> Result<()> {
    let text = serde_json::to_string_pretty(trace)? + "\n";
    crate::files::write_inside(boundary, path, text.as_bytes())?;
    Ok(())
}

/// Writes the trace to `<root>/.chainsmith/runs/<time>-<file stem>.json`, which must lie inside
/// `root` (a planted `.chainsmith/runs` link to elsewhere is refused).
pub fn save(root: &Path, program: &Path, file_stamp: &str, trace: &Trace) -> Result<PathBuf> {
    let stem = program.file_stem().and_then(|s| s.to_str()).unwrap_or("program");
    let dir = root.join(RUNS_DIR);
    let mut path = dir.join(format!("{file_stamp}-{stem}.json"));
    let mut n = 2;
    while path.exists() {
        path = dir.join(format!("{file_stamp}-{stem}-{n}.json"));
        n += 1;
    }
    write_inside(root, &path, trace)?;
    Ok(path)
}

/// The characters of an encoding in groups (base64: 3 bytes to 4 characters; base32: 5 to 8) that
/// depend on `secret` alone wherever it starts in a longer text (`user:` + key, a JSON body): for
/// each offset the secret can take within a group and each of `engines`, the whole groups it
/// fills. The bytes at each edge that share a group with other bytes (up to two in base64, four in
/// base32) stay visible — too few to use the key. Cores of fewer than six of the secret's bytes
/// (secrets under about nine bytes in base64, fifteen in base32) are left out: they would match
/// ordinary text.
fn encoded_cores(
    secret: &[u8],
    engines: &[&data_encoding::Encoding],
    bytes_per_group: usize,
    chars_per_group: usize,
) -> Vec<String> {
    let mut cores = Vec::new();
    for shift in 0..bytes_per_group {
        let mut shifted = vec![0u8; shift];
        shifted.extend_from_slice(secret);
        // Groups wholly made of the secret's bytes: from the first group boundary at or after
        // `shift`, to the last one at or before the secret's end.
        let first = shift.div_ceil(bytes_per_group);
        let last = shifted.len() / bytes_per_group;
        if last <= first || (last - first) * bytes_per_group < 6 {
            continue;
        }
        for engine in engines {
            let encoded = engine.encode(&shifted);
            cores.push(encoded[first * chars_per_group..last * chars_per_group].to_string());
        }
    }
    cores
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_redacted_in_every_encoding_a_server_may_echo() {
        let mut secrets = Secrets::default();
        secrets.add("K3y+Secr/et=&x y".into());
        secrets.add("alice:s3cr3t".into());
        for echoed in [
            "K3y+Secr/et=&x y",
            "K3y%2BSecr%2Fet%3D%26x%20y",
            "K3y%2bSecr%2fet%3d%26x%20y",
            "K3y%2BSecr%2Fet%3D%26x+y",
            "YWxpY2U6czNjcjN0",
            "616c6963653a733363723374",
            "616C6963653A733363723374",
            // Base32, UTF-16 hex (both byte orders), UTF-16LE base64 and quoted-printable.
            "MFWGSY3FHJZTGY3SGN2A====",
            "mfwgsy3fhjztgy3sgn2a",
            "61006c006900630065003a00730033006300720033007400",
            "0061006C006900630065003A007300330063007200330074",
            "YQBsAGkAYwBlADoAcwAzAGMAcgAzAHQA",
            "AGEAbABpAGMAZQA6AHMAMwBjAHIAMwB0",
            "=61=6C=69=63=65=3A=73=33=63=72=33=74",
            "=61=6c=69=63=65=3A=\r\n=73=33=63=72=33=74",
        ] {
            let text = secrets.text(&format!("GET /x?api_key={echoed}&q=1 failed"));
            assert_eq!(text, "GET /x?api_key=[redacted]&q=1 failed", "{echoed}");
        }
        // As UTF-16 (a `charset=utf-16` body), and in base64 inside a longer UTF-16 text
        // (PowerShell's `-EncodedCommand`).
        let utf16: Vec<u8> = "alice:s3cr3t".encode_utf16().flat_map(u16::to_be_bytes).collect();
        let mut body = b"\0k\0=".to_vec();
        body.extend(&utf16);
        assert_eq!(secrets.bytes(&body), b"\0k\0=[redacted]", "UTF-16BE");
        let command: Vec<u8> = "curl -H 'k: alice:s3cr3t'".encode_utf16().flat_map(u16::to_le_bytes).collect();
        let encoded = data_encoding::BASE64.encode(&command);
        assert!(secrets.text(&encoded).contains(REDACTED), "{encoded}");
        assert_eq!(
            secrets.longest(),
            14 * 14 * "K3y+Secr/et=&x y".len(),
            "fourteen bytes a byte, as `&#x000000004b;`, each escaped again"
        );
    }

    /// A key an API echoes inside a longer encoded text (a Basic credential `user:` + key, a JSON
    /// body in base64), byte by byte in escapes, or as HTML: no form gives the program the key.
    #[test]
    fn a_secret_inside_longer_encoded_text_is_redacted() {
        use data_encoding::{BASE64 as STANDARD, BASE64URL_NOPAD as URL_SAFE_NO_PAD};
        let key = "SuperSecretKey12345";
        let mut secrets = Secrets::default();
        secrets.add(key.into());
        for prefix in ["", "a", "ab", "user:", "{\"token\": \""] {
            for suffix in ["", "\"}", "x"] {
                let plain = format!("{prefix}{key}{suffix}");
                for encoded in [STANDARD.encode(plain.as_bytes()), URL_SAFE_NO_PAD.encode(plain.as_bytes())] {
                    let text = secrets.text(&encoded);
                    assert!(text.contains(REDACTED), "{plain:?} as {encoded}: {text}");
                    // What is left cannot be decoded back to the key.
                    let left = text.replace(REDACTED, "");
                    assert!(!left.contains(&STANDARD.encode(key.as_bytes())[..8]), "{plain:?}: {text}");
                }
            }
        }
        let every_byte: String = key.bytes().map(|b| format!("%{b:02x}")).collect();
        let html: String = key.chars().map(|c| format!("&#{};", c as u32)).collect();
        let json: String = key.chars().map(|c| format!("\\u{:04x}", c as u32)).collect();
        for echoed in [every_byte.to_uppercase(), every_byte, html, json] {
            assert_eq!(secrets.text(&format!("<p>{echoed}</p>")), "<p>[redacted]</p>", "{echoed}");
        }
        // Escaped in part: the forms a server writes when it escapes only some characters.
        let mut secrets = Secrets::default();
        secrets.add("K3y&Secret<1>".into());
        for echoed in [
            "K3y&amp;Secret&lt;1&gt;",
            "K3y&amp;Secret<1>",
            "K3y\\u0026Secret\\u003c1\\u003e",
            "K3y%26Secret<1>",
            "&#75;3y&Secret<1&#x3e;",
        ] {
            assert_eq!(secrets.text(&format!("a {echoed} b")), "a [redacted] b", "{echoed}");
        }
        // Not text at all (a binary body): still found.
        let mut body = b"\xff\x00".to_vec();
        body.extend_from_slice(b"K3y&amp;Secret&lt;1>\xff");
        assert!(!String::from_utf8_lossy(&secrets.bytes(&body)).contains("Secret"));
    }

    /// Forms an ordinary API writes that hide a key from a search of whole forms (round 21's
    /// echoes of `sk_live_R21xQ9pLmN4vB7kT2wZ8`): base64 and hex wrapped in lines (MIME,
    /// `base64.encodebytes`, `xxd -p`), base32 of a longer text, base32hex, UTF-16BE in base64,
    /// octal and `\u{…}` escapes (and round 22's bytes as a list of numbers).
    #[test]
    fn forms_wrapped_in_lines_or_inside_longer_base32_are_redacted() {
        let mut secrets = Secrets::default();
        secrets.add("sk_live_R21xQ9pLmN4vB7kT2wZ8".into());
        for echoed in [
            "eyJhY2NvdW50IjoiYWxpY2VAZXhhbXBsZS5jb20iLCJ0b2tlbiI6InNrX2xpdmVfUjIxeFE5cExt\nTjR2QjdrVDJ3WjgifQ==\n",
            "eyJhY2NvdW50IjoiYWxpY2VAZXhhbXBsZS5jb20iLCJ0b2tlbiI6InNrX2xpdmVfUjIxeFE5cExt\r\nTjR2QjdrVDJ3WjgifQ==\r\n",
            "OVZWWX3MNF3GKX2SGIYXQUJZOBGG2TRUOZBDO22UGJ3VUOA=",
            "OVZXG227NRUXMZK7KIZDC6CRHFYEY3KOGR3EEN3LKQZHOWRY",
            "OVZWK43LL5WGS5TFL5JDEMLYKE4XATDNJY2HMQRXNNKDE522HA======",
            "OVZWK4TTNNPWY2LWMVPVEMRRPBITS4CMNVHDI5SCG5VVIMTXLI4A====",
            "EDLLUR39EPILUKHI65S52EBG9HMKSD3M88RMML1IETD3G===",
            "AHMAawBfAGwAaQB2AGUAXwBSADIAMQB4AFEAOQBwAEwAbQBOADQAdgBCADcAawBUADIAdwBaADg=",
            "736b5f6c6976655f5232317851397\n04c6d4e347642376b5432775a38",
            // JavaScript's and Rust's code point escapes.
            r"\u{73}\u{6b}_live_R21xQ9pLmN4vB7kT2wZ8",
            // PostgreSQL's `bytea` escape format, C's octal escapes.
            r"\163\153\137\154\151\166\145\137\122\062\061\170\121\071\160\114\155\116\064\166\102\067\153\124\062\167\132\070",
        ] {
            let mut answer = json!({ "v": echoed });
            secrets.redact(&mut answer);
            let left = answer["v"].as_str().unwrap();
            assert!(left.contains(REDACTED), "{echoed:?} reached the program as {left:?}");
            // Printed by the program (a string's repr: the line breaks written `\n`).
            let printed = secrets.text(&format!("{{'v': {:?}}}", echoed));
            assert!(printed.contains(REDACTED), "{echoed:?} printed as {printed}");
        }
        // Node's `Buffer` as JSON: its bytes as a list of numbers.
        let mut buffer =
            json!({"type": "Buffer", "data": "xsk_live_R21xQ9pLmN4vB7kT2wZ8".bytes().collect::<Vec<u8>>()});
        secrets.redact(&mut buffer);
        assert_eq!(buffer, json!({"type": "Buffer", "data": REDACTED}));
        let mut numbers = json!([115, 107, 95, 108, 105]);
        secrets.redact(&mut numbers);
        assert_eq!(numbers, json!([115, 107, 95, 108, 105]), "bytes holding no secret stay");
    }

    use serde_json::json;

    #[test]
    fn timestamps_are_utc_civil_dates() {
        let at = UNIX_EPOCH + std::time::Duration::from_millis(1_763_714_712_345);
        let (iso, file) = timestamps(at);
        assert_eq!(iso, "2025-11-21T08:45:12.345Z");
        assert_eq!(file, "20251121T084512345Z");
        assert_eq!(timestamps(UNIX_EPOCH).0, "1970-01-01T00:00:00.000Z");
        let leap = UNIX_EPOCH + std::time::Duration::from_secs(951_782_400); // 2000-02-29
        assert!(timestamps(leap).0.starts_with("2000-02-29T"));
    }

    #[test]
    fn secrets_are_redacted_by_value_and_by_name() {
        let mut secrets = Secrets { names: vec!["api_key".into()], ..Default::default() };
        secrets.add("s3cr3t-value".into());
        let redacted = secrets.value(&json!({
            "query": "x",
            "api_key": "anything",
            "nested": ["s3cr3t-value", "Bearer s3cr3t-value"],
        }));
        assert_eq!(
            redacted,
            json!({"query": "x", "api_key": REDACTED, "nested": [REDACTED, format!("Bearer {REDACTED}")]})
        );
        assert_eq!(secrets.text("url?api_key=s3cr3t-value&q=1"), format!("url?api_key={REDACTED}&q=1"));
    }

    #[test]
    fn large_responses_are_cut_and_not_replayed() {
        let big = json!({"results": (0..40_000).map(|i| json!({"id": i, "name": "x".repeat(30)})).collect::<Vec<_>>()});
        let capped = cap_response(&big);
        assert!(serde_json::to_vec(&capped).unwrap().len() <= RESPONSE_CAP_BYTES);
        assert_eq!(capped["results"][0], json!({"id": 0, "name": "x".repeat(30)}));
        assert!(is_cut(&capped));
        let small = json!({"a": 1});
        assert_eq!(cap_response(&small), small);

        let call = |id, response: Value| TraceCall {
            id,
            tool: "t.a".into(),
            arguments: json!({"b": 1, "a": [1, {"y": 2, "x": 1}]}),
            ok: true,
            status: Some(200),
            response,
            error: None,
            duration_ms: 1,
            line: Some(1),
            replayed: false,
        };
        let trace = Trace {
            program: "p.py".into(),
            started: String::new(),
            ok: true,
            calls: vec![call(1, json!(1)), call(2, json!(2)), call(3, capped)],
            error: None,
        };
        let replay = Replay::new(&trace);
        let same = json!({"a": [1, {"x": 1, "y": 2}], "b": 1});
        assert_eq!(replay.answer("t.a", &same).unwrap().response, json!(1));
        assert_eq!(replay.answer("t.a", &same).unwrap().response, json!(2));
        assert_eq!(replay.answer("t.a", &same).unwrap().response, json!(2), "the last answer repeats");
        assert!(replay.answer("t.a", &json!({"b": 2})).is_none());
        assert!(replay.answer("t.b", &same).is_none());

        // Re-run from call 2 (a poll of the same call): call 1 is answered, call 2 and every
        // call after it go live, identical or not.
        let from_two = Replay::before(&trace, 2);
        assert_eq!(from_two.answer("t.a", &same).unwrap().response, json!(1));
        assert!(from_two.answer("t.a", &same).is_none(), "the chosen call is live");
        assert!(from_two.answer("t.a", &same).is_none(), "and so is every later one");
    }

    #[test]
    fn the_trace_shape_round_trips() {
        let trace = Trace {
            program: "p.py".into(),
            started: "2025-11-21T08:45:12.345Z".into(),
            ok: false,
            calls: vec![TraceCall {
                id: 1,
                tool: "tmdb.person".into(),
                arguments: json!({"person_id": 1}),
                ok: false,
                status: Some(404),
                response: json!({"status_message": "nope"}),
                error: Some("404 Not Found: nope".into()),
                duration_ms: 3,
                line: Some(4),
                replayed: false,
            }],
            error: Some(TraceError {
                kind: "ToolError".into(),
                message: "nope".into(),
                line: Some(4),
                attributed_call: Some(1),
            }),
        };
        let value = serde_json::to_value(&trace).unwrap();
        let keys: Vec<&String> = value["calls"][0].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["id", "tool", "arguments", "ok", "status", "response", "error", "duration_ms", "line"]);
        assert_eq!(value["error"]["type"], "ToolError");
        assert_eq!(serde_json::from_value::<Trace>(value).unwrap(), trace);
    }
}
