//! Turning a tool's raw output into JSON before its schema is inferred: JSON text, Python-literal
//! text (as `mcp-server-sqlite` and ToolBench's recorded responses write it), `key: value` lines,
//! and otherwise the text itself.

use serde_json::{Map, Number, Value};

/// How the text was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decoding {
    Json,
    PythonLiteral,
    KeyValueLines,
    Text,
}

pub fn decode(text: &str) -> (Value, Decoding) {
    let trimmed = text.trim();
    if let Ok(v) = serde_json::from_str::<Value>(trimmed)
        && (v.is_object() || v.is_array() || !trimmed.is_empty())
    {
        return (v, Decoding::Json);
    }
    if trimmed.starts_with(['{', '[', '('])
        && let Some(v) = python_literal(trimmed)
    {
        return (v, Decoding::PythonLiteral);
    }
    if let Some(v) = key_value_lines(trimmed) {
        return (v, Decoding::KeyValueLines);
    }
    (Value::String(text.to_string()), Decoding::Text)
}

/// `name: Ada\nage: 36` → `{"name": "Ada", "age": 36}`; at least two lines, every one `key: value`.
fn key_value_lines(text: &str) -> Option<Value> {
    let lines: Vec<&str> = text.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    if lines.len() < 2 {
        return None;
    }
    let mut map = Map::new();
    for line in lines {
        let (key, value) = line.split_once(':')?;
        let key = key.trim();
        if key.is_empty() || key.len() > 60 || key.contains(['{', '[', '"']) {
            return None;
        }
        let value = value.trim();
        let parsed = match serde_json::from_str::<Value>(value) {
            Ok(v) if !v.is_object() && !v.is_array() => v,
            _ => Value::String(value.to_string()),
        };
        map.insert(key.to_string(), parsed);
    }
    Some(Value::Object(map))
}

/// A Python literal (`{'a': [1, 2.5, None, True], 'b': ('x',)}`) as JSON; `None` if it is not one.
pub fn python_literal(text: &str) -> Option<Value> {
    let mut p = PyParser { s: text.as_bytes(), i: 0, text };
    let v = p.value(0)?;
    p.ws();
    (p.i == p.s.len()).then_some(v)
}

struct PyParser<'a> {
    s: &'a [u8],
    i: usize,
    text: &'a str,
}

impl PyParser<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        self.ws();
        if self.s.get(self.i) == Some(&c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn value(&mut self, depth: usize) -> Option<Value> {
        if depth > 200 {
            return None;
        }
        self.ws();
        match *self.s.get(self.i)? {
            b'{' => {
                self.i += 1;
                let mut map = Map::new();
                if self.eat(b'}') {
                    return Some(Value::Object(map));
                }
                loop {
                    let key = match self.value(depth + 1)? {
                        Value::String(s) => s,
                        Value::Number(n) => n.to_string(),
                        Value::Bool(b) => if b { "True" } else { "False" }.to_string(),
                        Value::Null => "None".to_string(),
                        _ => return None,
                    };
                    if !self.eat(b':') {
                        return None;
                    }
                    let v = self.value(depth + 1)?;
                    map.insert(key, v);
                    if self.eat(b',') {
                        if self.eat(b'}') {
                            return Some(Value::Object(map));
                        }
                        continue;
                    }
                    return self.eat(b'}').then_some(Value::Object(map));
                }
            }
            open @ (b'[' | b'(') => {
                self.i += 1;
                let close = if open == b'[' { b']' } else { b')' };
                let mut items = Vec::new();
                if self.eat(close) {
                    return Some(Value::Array(items));
                }
                loop {
                    items.push(self.value(depth + 1)?);
                    if self.eat(b',') {
                        if self.eat(close) {
                            return Some(Value::Array(items));
                        }
                        continue;
                    }
                    return self.eat(close).then_some(Value::Array(items));
                }
            }
            b'\'' | b'"' => self.string(),
            b'b' | b'u' | b'r' if matches!(self.s.get(self.i + 1), Some(b'\'') | Some(b'"')) => {
                let raw = self.s[self.i] == b'r';
                self.i += 1;
                if raw { self.raw_string() } else { self.string() }
            }
            _ => self.atom(),
        }
    }

    fn string(&mut self) -> Option<Value> {
        let quote = self.s[self.i];
        self.i += 1;
        let mut out = String::new();
        let start = self.i;
        let mut chunk_start = start;
        while self.i < self.s.len() {
            let c = self.s[self.i];
            if c == quote {
                out.push_str(self.text.get(chunk_start..self.i)?);
                self.i += 1;
                return Some(Value::String(out));
            }
            if c == b'\\' {
                out.push_str(self.text.get(chunk_start..self.i)?);
                let e = *self.s.get(self.i + 1)?;
                self.i += 2;
                match e {
                    b'n' => out.push('\n'),
                    b't' => out.push('\t'),
                    b'r' => out.push('\r'),
                    b'0' => out.push('\0'),
                    b'x' => {
                        let hex = self.text.get(self.i..self.i + 2)?;
                        out.push(char::from_u32(u32::from_str_radix(hex, 16).ok()?)?);
                        self.i += 2;
                    }
                    b'u' => {
                        let hex = self.text.get(self.i..self.i + 4)?;
                        out.push(char::from_u32(u32::from_str_radix(hex, 16).ok()?).unwrap_or('\u{fffd}'));
                        self.i += 4;
                    }
                    b'\n' => {}
                    other => out.push(other as char),
                }
                chunk_start = self.i;
                continue;
            }
            self.i += 1;
        }
        None
    }

    fn raw_string(&mut self) -> Option<Value> {
        let quote = self.s[self.i];
        self.i += 1;
        let start = self.i;
        while self.i < self.s.len() && self.s[self.i] != quote {
            self.i += 1;
        }
        let s = self.text.get(start..self.i)?.to_string();
        self.i += 1;
        Some(Value::String(s))
    }

    fn atom(&mut self) -> Option<Value> {
        let start = self.i;
        while self.i < self.s.len() && (self.s[self.i].is_ascii_alphanumeric() || b"+-._".contains(&self.s[self.i])) {
            self.i += 1;
        }
        let word = self.text.get(start..self.i)?;
        match word {
            "None" => Some(Value::Null),
            "True" => Some(Value::Bool(true)),
            "False" => Some(Value::Bool(false)),
            "nan" | "inf" | "-inf" => Some(Value::Null),
            _ => {
                if let Ok(i) = word.parse::<i64>() {
                    Some(Value::Number(i.into()))
                } else {
                    word.parse::<f64>().ok().and_then(Number::from_f64).map(Value::Number)
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_forms_tools_answer_in() {
        assert_eq!(decode("{\"a\": 1}"), (json!({"a": 1}), Decoding::Json));
        assert_eq!(
            decode("{'ads': [], 'total': None, 'ts': 4.09, 'ok': True, 'name': 'O\\'Hara', 'pair': (1, 'x')}"),
            (
                json!({"ads": [], "total": null, "ts": 4.09, "ok": true, "name": "O'Hara", "pair": [1, "x"]}),
                Decoding::PythonLiteral
            )
        );
        assert_eq!(decode("[(1, 'a'), (2, 'b')]").0, json!([[1, "a"], [2, "b"]]));
        assert_eq!(decode("name: Ada\nage: 36\n"), (json!({"name": "Ada", "age": 36}), Decoding::KeyValueLines));
        assert_eq!(decode("Just some words: here"), (json!("Just some words: here"), Decoding::Text));
        assert_eq!(decode("{'unclosed': 1").1, Decoding::Text);
        assert_eq!(decode("42").0, json!(42));
    }
}
