//! Response → JSON Schema: each sample is decomposed recursively into a [`Shape`]; shapes merge
//! commutatively and associatively (so the result does not depend on the order samples arrive in)
//! and render as a JSON Schema with stable, sorted keys: types, nested objects, arrays with merged
//! item schemas, keys required only when present in every sample, nullable, integer vs number, and
//! unions for heterogeneous values.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

/// What the samples seen so far look like. Counts make `required` exact under merging.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Shape {
    pub null: bool,
    pub boolean: bool,
    pub integer: bool,
    pub number: bool,
    pub string: bool,
    /// Merged item shape; `Some(None)` for arrays that were always empty.
    pub array: Option<Option<Box<Shape>>>,
    /// Objects seen, and for each key its merged shape and how many of those objects had it.
    pub object: Option<ObjectShape>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct ObjectShape {
    pub count: usize,
    pub keys: BTreeMap<String, (Shape, usize)>,
}

impl Shape {
    pub fn of(value: &Value) -> Shape {
        let mut s = Shape::default();
        match value {
            Value::Null => s.null = true,
            Value::Bool(_) => s.boolean = true,
            Value::Number(n) if n.is_i64() || n.is_u64() => s.integer = true,
            Value::Number(_) => s.number = true,
            Value::String(_) => s.string = true,
            Value::Array(items) => {
                let merged = items.iter().map(Shape::of).reduce(|a, b| a.merge(&b));
                s.array = Some(merged.map(Box::new));
            }
            Value::Object(map) => {
                let keys = map.iter().map(|(k, v)| (k.clone(), (Shape::of(v), 1))).collect();
                s.object = Some(ObjectShape { count: 1, keys });
            }
        }
        s
    }

    pub fn merge(&self, other: &Shape) -> Shape {
        Shape {
            null: self.null || other.null,
            boolean: self.boolean || other.boolean,
            integer: self.integer || other.integer,
            number: self.number || other.number,
            string: self.string || other.string,
            array: match (&self.array, &other.array) {
                (None, x) | (x, None) => x.clone(),
                (Some(a), Some(b)) => Some(match (a, b) {
                    (None, x) | (x, None) => x.clone(),
                    (Some(a), Some(b)) => Some(Box::new(a.merge(b))),
                }),
            },
            object: match (&self.object, &other.object) {
                (None, x) | (x, None) => x.clone(),
                (Some(a), Some(b)) => {
                    let mut keys = a.keys.clone();
                    for (k, (shape, n)) in &b.keys {
                        keys.entry(k.clone())
                            .and_modify(|(s, m)| {
                                *s = s.merge(shape);
                                *m += n;
                            })
                            .or_insert_with(|| (shape.clone(), *n));
                    }
                    Some(ObjectShape { count: a.count + b.count, keys })
                }
            },
        }
    }

    /// The JSON Schema of the shape.
    pub fn to_schema(&self) -> Value {
        let mut alternatives: Vec<Value> = Vec::new();
        if let Some(object) = &self.object {
            let mut properties = Map::new();
            let mut required = Vec::new();
            for (k, (shape, n)) in &object.keys {
                properties.insert(k.clone(), shape.to_schema());
                if *n == object.count {
                    required.push(Value::String(k.clone()));
                }
            }
            let mut o = json!({"type": "object", "properties": properties});
            if !required.is_empty() {
                o["required"] = Value::Array(required);
            }
            alternatives.push(o);
        }
        if let Some(items) = &self.array {
            alternatives.push(match items {
                Some(item) => json!({"type": "array", "items": item.to_schema()}),
                None => json!({"type": "array"}),
            });
        }
        if self.string {
            alternatives.push(json!({"type": "string"}));
        }
        if self.number {
            alternatives.push(json!({"type": "number"}));
        } else if self.integer {
            alternatives.push(json!({"type": "integer"}));
        }
        if self.boolean {
            alternatives.push(json!({"type": "boolean"}));
        }
        match (alternatives.len(), self.null) {
            (0, true) => json!({"type": "null"}),
            (0, false) => json!({}),
            (1, false) => alternatives.pop().expect("one alternative"),
            (1, true) => {
                let mut only = alternatives.pop().expect("one alternative");
                let t = only["type"].clone();
                only["type"] = json!([t, "null"]);
                only
            }
            (_, null) => {
                if null {
                    alternatives.push(json!({"type": "null"}));
                }
                json!({"anyOf": alternatives})
            }
        }
    }
}

/// The schema of one or many samples.
pub fn infer<'a>(samples: impl IntoIterator<Item = &'a Value>) -> Value {
    samples.into_iter().map(Shape::of).reduce(|a, b| a.merge(&b)).map(|s| s.to_schema()).unwrap_or_else(|| json!({}))
}

/// Whether `value` satisfies `schema` (an inferred schema holds no references).
pub fn validates(schema: &Value, value: &Value) -> bool {
    crate::toolset::schema::contradictions(&crate::toolset::schema::NoRefs, schema, value, 1).is_empty()
}

/// A response trimmed for keeping as an example: long strings cut, long arrays shortened, values
/// of secret-looking keys replaced.
pub fn example_of(value: &Value) -> Value {
    fn secretish(key: &str) -> bool {
        let k = key.to_ascii_lowercase();
        ["token", "secret", "password", "api_key", "apikey", "authorization", "cookie", "session"]
            .iter()
            .any(|s| k.contains(s))
    }
    match value {
        Value::String(s) if s.chars().count() > 200 => {
            Value::String(format!("{}…", s.chars().take(200).collect::<String>()))
        }
        Value::Array(items) => Value::Array(items.iter().take(3).map(example_of).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    (k.clone(), if secretish(k) && !v.is_null() { json!("<redacted>") } else { example_of(v) })
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_optional_nullable_and_unions() {
        let a = json!({"id": 1, "name": "x", "tags": ["a"], "owner": {"id": 2}, "score": 1});
        let b = json!({"id": 2, "tags": [], "owner": null, "score": 2.5, "extra": [1, "two"]});
        let schema = infer([&a, &b]);
        assert_eq!(
            schema,
            json!({"type": "object", "required": ["id", "owner", "score", "tags"], "properties": {
                "extra": {"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "integer"}]}},
                "id": {"type": "integer"},
                "name": {"type": "string"},
                "owner": {"type": ["object", "null"], "properties": {"id": {"type": "integer"}}, "required": ["id"]},
                "score": {"type": "number"},
                "tags": {"type": "array", "items": {"type": "string"}},
            }})
        );
        assert!(validates(&schema, &a) && validates(&schema, &b));
        assert!(!validates(&schema, &json!({"id": "1", "owner": null, "score": 1, "tags": []})));
    }

    #[test]
    fn array_items_merge_and_keys_missing_in_some_items_are_optional() {
        let schema = infer([&json!([{"a": 1, "b": true}, {"a": 2}])]);
        assert_eq!(
            schema,
            json!({"type": "array", "items": {"type": "object", "required": ["a"], "properties": {"a": {"type": "integer"}, "b": {"type": "boolean"}}}})
        );
    }

    /// Property test over generated values: every inferred schema validates every sample it came
    /// from, and merging is order-independent.
    #[test]
    fn inference_is_sound_and_order_independent() {
        let mut rng = 0x9e3779b97f4a7c15u64;
        let mut next = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        fn random_value(next: &mut dyn FnMut() -> u64, depth: u32) -> Value {
            let keys = ["id", "name", "items", "meta", "score"];
            match next() % if depth > 3 { 5 } else { 8 } {
                0 => Value::Null,
                1 => Value::Bool(next().is_multiple_of(2)),
                2 => json!(next() % 100),
                3 => json!((next() % 1000) as f64 / 7.0),
                4 => json!(format!("s{}", next() % 10)),
                5 | 6 => {
                    let n = next() % 4;
                    Value::Object(
                        (0..n)
                            .map(|_| (keys[(next() % 5) as usize].to_string(), random_value(next, depth + 1)))
                            .collect(),
                    )
                }
                _ => Value::Array((0..next() % 4).map(|_| random_value(next, depth + 1)).collect()),
            }
        }
        for _ in 0..300 {
            let samples: Vec<Value> = (0..1 + next() % 5).map(|_| random_value(&mut next, 0)).collect();
            let schema = infer(samples.iter());
            for s in &samples {
                assert!(validates(&schema, s), "schema {schema} rejects its sample {s}");
            }
            let reversed = infer(samples.iter().rev());
            assert_eq!(schema, reversed, "order changed the schema for {samples:?}");
            let rotated: Vec<&Value> = samples.iter().cycle().skip(1).take(samples.len()).collect();
            assert_eq!(schema, infer(rotated));
        }
    }

    #[test]
    fn examples_are_trimmed_and_redacted() {
        let v = json!({"token": "abc", "text": "x".repeat(500), "list": [1, 2, 3, 4, 5]});
        let e = example_of(&v);
        assert_eq!(e["token"], "<redacted>");
        assert_eq!(e["text"].as_str().unwrap().chars().count(), 201);
        assert_eq!(e["list"], json!([1, 2, 3]));
    }
}
