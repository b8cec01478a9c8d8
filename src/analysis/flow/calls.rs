//! Calls in the walk: which tool a call reaches (module dialect), its arguments checked against
//! the tool's parameters (names, required ones, literal and flowed values), and what it returns.

use serde_json::Value;
use tree_sitter::Node;

use super::*;

impl<'t, 'c> Walker<'t, 'c> {
    pub(super) fn call(&mut self, node: Node<'t>) -> Ty<'c> {
        let Some(function) = node.child_by_field_id(fields().function.get()) else { return Ty::Unknown };
        let arguments = node.child_by_field_id(fields().arguments.get());
        match function.kind() {
            "attribute" => {
                let object = function.child_by_field_id(fields().object.get());
                let attr = function.child_by_field_id(fields().attribute.get());
                let (Some(object), Some(attr)) = (object, attr) else { return self.call_fallback(node) };
                let attr_name = text_of(attr, self.text);
                let object_text = text_of(object, self.text);
                // Module dialect: `tmdb.search_person(…)` or `chainsmith.tools.tmdb.search_person(…)`.
                if let Some(toolset) = self.imports.toolsets.get(object_text).cloned() {
                    return self.module_call(node, &toolset, attr_name, range_of(attr), arguments);
                }
                // HTTP dialect: `requests.get(…)`, `httpx.post(…)`, `requests.Session()`.
                if object.kind() == "identifier"
                    && self.imports.http_modules.contains_key(object_text)
                    && self.lookup(object_text).is_unknown_or_module()
                {
                    return match attr_name {
                        "Session" | "Client" | "AsyncClient" | "session" => {
                            self.eval_args(arguments);
                            Ty::Session
                        }
                        "request" => self.http_call(node, None, arguments),
                        m if dialect::HTTP_METHODS.contains(&m) => self.http_call(node, Some(m), arguments),
                        _ => self.call_fallback(node),
                    };
                }
                let receiver = self.expr(object);
                match (receiver, attr_name) {
                    (Ty::Session, "request") => self.http_call(node, None, arguments),
                    (Ty::Session, m) if dialect::HTTP_METHODS.contains(&m) => self.http_call(node, Some(m), arguments),
                    (Ty::Response { call }, "json") => {
                        self.eval_args(arguments);
                        match self.out.calls.get(call).and_then(|c| c.tool).and_then(|t| t.response.as_ref()) {
                            Some(schema) => Ty::Json { schema, call },
                            None => Ty::Unknown,
                        }
                    }
                    (Ty::Json { .. }, "get") => {
                        let key = arguments.and_then(|a| a.named_child(0));
                        let ty = match key {
                            Some(k) if matches!(k.kind(), "string" | "integer") => self.access(receiver, node, k, true),
                            _ => Ty::Unknown,
                        };
                        if let Some(a) = arguments {
                            let mut cursor = a.walk();
                            let rest: Vec<Node<'t>> = a.named_children(&mut cursor).skip(1).collect();
                            for r in rest {
                                self.expr(r);
                            }
                        }
                        ty
                    }
                    (Ty::Json { schema: s, call }, "copy") => Ty::Json { schema: s, call },
                    (Ty::Json { schema: s, call }, "values") => match schema::property(s, "") {
                        KeyLookup::Open(Some(sub)) => Ty::Json { schema: self.array_of(sub), call },
                        _ => {
                            self.eval_args(arguments);
                            Ty::Unknown
                        }
                    },
                    _ => {
                        self.eval_args(arguments);
                        Ty::Unknown
                    }
                }
            }
            "identifier" => {
                let name = text_of(function, self.text);
                if let Some((toolset, tool)) = self.imports.tools.get(name).cloned() {
                    return self.module_call(node, &toolset, &tool, range_of(function), arguments);
                }
                if let Some(method) = self.imports.http_functions.get(name).cloned() {
                    return match method.as_str() {
                        "session" => {
                            self.eval_args(arguments);
                            Ty::Session
                        }
                        "request" => self.http_call(node, None, arguments),
                        m => self.http_call(node, Some(m), arguments),
                    };
                }
                let args = self.eval_args_collect(arguments);
                match (name, args.as_slice()) {
                    // `next(iter(xs))`, `list(xs)`, `sorted(xs)`, `reversed(xs)` keep the element type.
                    ("list" | "sorted" | "reversed" | "iter" | "tuple", [ty, ..]) => *ty,
                    ("next", [ty, ..]) => *ty,
                    ("dict", [ty, ..]) => *ty,
                    _ => Ty::Unknown,
                }
            }
            _ => self.call_fallback(node),
        }
    }

    /// Schemas borrowed from the catalog can't be built at analysis time, so `.values()` keeps the
    /// value schema and iteration treats it as the element.
    pub(super) fn array_of(&self, item: &'c Value) -> &'c Value {
        item
    }

    pub(super) fn call_fallback(&mut self, node: Node<'t>) -> Ty<'c> {
        let mut cursor = node.walk();
        let children: Vec<Node<'t>> = node.named_children(&mut cursor).collect();
        for child in children {
            self.expr(child);
        }
        Ty::Unknown
    }

    pub(super) fn eval_args(&mut self, arguments: Option<Node<'t>>) {
        self.eval_args_collect(arguments);
    }

    pub(super) fn eval_args_collect(&mut self, arguments: Option<Node<'t>>) -> Vec<Ty<'c>> {
        let Some(arguments) = arguments else { return Vec::new() };
        let mut cursor = arguments.walk();
        let children: Vec<Node<'t>> = arguments.named_children(&mut cursor).collect();
        children
            .into_iter()
            .map(|c| match c.kind() {
                "keyword_argument" => {
                    c.child_by_field_id(fields().value.get()).map(|v| self.expr(v));
                    Ty::Unknown
                }
                _ => self.expr(c),
            })
            .collect()
    }

    // ----- module dialect --------------------------------------------------------------------

    pub(super) fn module_call(
        &mut self,
        node: Node<'t>,
        toolset: &str,
        name: &str,
        name_range: ByteRange,
        arguments: Option<Node<'t>>,
    ) -> Ty<'c> {
        let target = self.target.take();
        let tool = self.check_tool_name(toolset, name, name_range);
        let mut sites = Vec::new();
        let mut complete = true;
        if let Some(arguments) = arguments {
            let mut cursor = arguments.walk();
            let children: Vec<Node<'t>> = arguments.named_children(&mut cursor).collect();
            for child in children {
                match child.kind() {
                    "keyword_argument" => {
                        let (Some(n), v) = (
                            child.child_by_field_id(fields().name.get()),
                            child.child_by_field_id(fields().value.get()),
                        ) else {
                            continue;
                        };
                        sites.push(ArgSite {
                            name: text_of(n, self.text).to_string(),
                            name_range: Some(range_of(n)),
                            value: v,
                            text_value: None,
                            value_range: v.map(range_of).unwrap_or(range_of(child)),
                            location: None,
                        });
                    }
                    "dictionary_splat" | "list_splat" => {
                        complete = false;
                        self.expr(child);
                    }
                    "comment" => {}
                    _ => {
                        self.expr(child);
                        if tool.is_some() {
                            let d = self.error(
                                range_of(child),
                                "positional-argument",
                                "tool calls take keyword arguments only (name=value)".into(),
                            );
                            self.diag(d);
                        }
                    }
                }
            }
        }
        let call_index = self.out.calls.len();
        let args_range = arguments.map(range_of).unwrap_or(range_of(node));
        self.out.calls.push(ToolCall {
            tool,
            toolset: toolset.to_string(),
            name: name.to_string(),
            dialect: Dialect::Module,
            range: range_of(node),
            name_range,
            args_range,
            args: Vec::new(),
            target,
            statement_range: self.statement,
            line: node.start_position().row,
        });
        self.check_args(call_index, tool, sites, complete, false, name_range, arguments);
        match tool.and_then(|t| t.response.as_ref()) {
            Some(schema) => Ty::Json { schema, call: call_index },
            None => Ty::Unknown,
        }
    }

    // ----- arguments -------------------------------------------------------------------------

    /// Checks a call's arguments against the tool's parameters and records them on the call.
    /// `wire` says whether names are wire names (HTTP dialect) or Python keywords.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn check_args(
        &mut self,
        call_index: usize,
        tool: Option<&'c Tool>,
        sites: Vec<ArgSite<'t>>,
        complete: bool,
        wire: bool,
        anchor: ByteRange,
        arguments: Option<Node<'t>>,
    ) {
        let mut recorded = Vec::new();
        let auth_param = tool
            .and_then(|t| self.catalog.toolset(&t.toolset))
            .and_then(|ts| ts.auth.as_ref())
            .and_then(|a| a.query.clone());
        for site in &sites {
            let ty = match site.value {
                Some(v) if literal_json(v, self.text).is_none() => self.expr(v),
                _ => Ty::Unknown,
            };
            let param = tool.and_then(|t| {
                t.params.iter().find(|p| if wire { p.wire_name == site.name } else { p.name == site.name })
            });
            recorded.push(CallArg {
                name: site.name.clone(),
                name_range: site.name_range,
                value_range: site.value_range,
                location: param.map(|p| p.location).or(site.location),
            });
            let Some(tool) = tool else { continue };
            let Some(param) = param else {
                if wire
                    && (auth_param.as_deref() == Some(site.name.as_str())
                        || site.location == Some(ParamLocation::Header))
                {
                    continue;
                }
                let range = site.name_range.unwrap_or(site.value_range);
                let names: Vec<&str> =
                    tool.params.iter().map(|p| if wire { p.wire_name.as_str() } else { p.name.as_str() }).collect();
                let mut d =
                    self.error(range, "unknown-argument", format!("`{}` has no parameter `{}`", tool.name, site.name));
                if let Some(best) = did_you_mean(&site.name, names.iter().copied()) {
                    d.message.push_str(&format!("; did you mean `{best}`?"));
                    if let Some(name_range) = site.name_range {
                        let replacement = if wire {
                            let quote = self.text.get(name_range.start..name_range.start + 1).unwrap_or("\"");
                            format!("{quote}{best}{quote}")
                        } else {
                            best.to_string()
                        };
                        d = d.with_suggestion(format!("Change to `{best}`"), name_range, replacement);
                    }
                } else if !names.is_empty() {
                    d.message.push_str(&format!(" (parameters: {})", names.join(", ")));
                }
                self.diag(d);
                continue;
            };
            if let Some(v) = site.value {
                if let Some(value) = literal_json(v, self.text) {
                    self.check_literal_value(param, &value, site.value_range, false);
                } else if let Ty::Json { schema: s, .. } = ty {
                    self.check_flowed_value(param, s, site.value_range);
                }
            } else if let Some((text, range)) = &site.text_value {
                let value = coerce_text(text, &param.schema);
                self.check_literal_value(param, &value, *range, true);
            }
        }
        if let Some(tool) = tool
            && complete
        {
            let given: Vec<&str> = recorded.iter().map(|a| a.name.as_str()).collect();
            let missing: Vec<&crate::toolset::Param> = tool
                .required()
                .filter(|p| {
                    let name = if wire { p.wire_name.as_str() } else { p.name.as_str() };
                    // The URL carries path parameters and the runtime adds headers and the auth key.
                    let supplied_elsewhere = wire && matches!(p.location, ParamLocation::Path | ParamLocation::Header);
                    !given.contains(&name) && !supplied_elsewhere && auth_param.as_deref() != Some(p.wire_name.as_str())
                })
                .collect();
            if !missing.is_empty() {
                let list: Vec<String> =
                    missing.iter().map(|p| format!("`{}`", if wire { &p.wire_name } else { &p.name })).collect();
                let plural = if missing.len() > 1 { "s" } else { "" };
                let mut d = self.error(
                    anchor,
                    "missing-argument",
                    format!("`{}` is missing required argument{plural} {}", tool.name, list.join(", ")),
                );
                if !wire && let Some(arguments) = arguments {
                    let close = arguments.end_byte().saturating_sub(1);
                    let has_args = arguments.named_child_count() > 0;
                    let additions: Vec<String> = missing.iter().map(|p| format!("{}=...", p.name)).collect();
                    let insert = format!("{}{}", if has_args { ", " } else { "" }, additions.join(", "));
                    d = d.with_suggestion(
                        format!("Add missing argument{plural} {}", list.join(", ")),
                        ByteRange::new(close, close),
                        insert,
                    );
                }
                self.diag(d);
            }
        }
        if let Some(call) = self.out.calls.get_mut(call_index) {
            call.args = recorded;
        }
    }

    pub(super) fn check_literal_value(
        &mut self,
        param: &crate::toolset::Param,
        value: &Value,
        range: ByteRange,
        from_text: bool,
    ) {
        let expected = schema::types(&param.schema);
        let actual = schema::json_type(value);
        if !schema::type_fits(actual, &expected) {
            // URL text is a string on the wire; only complain when it cannot be read as the type.
            if from_text && expected.contains(&"string") {
                return;
            }
            let d = self.error(
                range,
                "wrong-type",
                format!("`{}` expects {}, got {} {}", param.name, expected.join(" | "), actual, short_json(value)),
            );
            self.diag(d);
            return;
        }
        if let Err(message) = schema::check_literal(&param.schema, value) {
            let d = self.error(range, "not-in-enum", format!("`{}`: {message}", param.name));
            self.diag(d);
        }
    }

    pub(super) fn check_flowed_value(&mut self, param: &crate::toolset::Param, value_schema: &Value, range: ByteRange) {
        let expected = schema::types(&param.schema);
        let actual = schema::types(value_schema);
        if expected.is_empty() || actual.is_empty() {
            return;
        }
        let fits = actual.iter().filter(|t| **t != "null").any(|t| {
            schema::type_fits(t, &expected)
                // Numbers and booleans are sent as text in paths and query strings.
                || (expected.contains(&"string") && matches!(*t, "integer" | "number" | "boolean"))
        });
        if !fits && actual.iter().any(|t| *t != "null") {
            let d = self.warning(
                range,
                "argument-type-mismatch",
                format!(
                    "`{}` expects {}, but this response field is {}",
                    param.name,
                    expected.join(" | "),
                    schema::summary(value_schema)
                ),
            );
            self.diag(d);
        }
    }

    // ----- HTTP dialect ----------------------------------------------------------------------
}

/// The JSON value of a Python literal (strings, numbers, booleans, None, and lists/dicts of them).
pub fn literal_json(node: Node, text: &str) -> Option<Value> {
    match node.kind() {
        "string" | "concatenated_string" => string_value(node, text).map(Value::String),
        "integer" => {
            let raw = text_of(node, text).replace('_', "");
            raw.parse::<i64>().ok().map(Value::from)
        }
        "float" => text_of(node, text)
            .replace('_', "")
            .parse::<f64>()
            .ok()
            .and_then(|f| serde_json::Number::from_f64(f).map(Value::Number)),
        "true" => Some(Value::Bool(true)),
        "false" => Some(Value::Bool(false)),
        "none" => Some(Value::Null),
        "unary_operator" => {
            let operand = node.child_by_field_id(fields().argument.get())?;
            let v = literal_json(operand, text)?;
            let negative = text_of(node, text).trim_start().starts_with('-');
            match v {
                Value::Number(n) if negative => {
                    if let Some(i) = n.as_i64() {
                        Some(Value::from(-i))
                    } else {
                        n.as_f64().and_then(|f| serde_json::Number::from_f64(-f)).map(Value::Number)
                    }
                }
                Value::Number(n) => Some(Value::Number(n)),
                _ => None,
            }
        }
        "list" | "tuple" => {
            let mut cursor = node.walk();
            let items: Option<Vec<Value>> = node.named_children(&mut cursor).map(|c| literal_json(c, text)).collect();
            items.map(Value::Array)
        }
        "dictionary" => {
            let mut map = serde_json::Map::new();
            let mut cursor = node.walk();
            for pair in node.named_children(&mut cursor) {
                if pair.kind() != "pair" {
                    return None;
                }
                let key = string_value(pair.child_by_field_id(fields().key.get())?, text)?;
                map.insert(key, literal_json(pair.child_by_field_id(fields().value.get())?, text)?);
            }
            Some(Value::Object(map))
        }
        "parenthesized_expression" => literal_json(node.named_child(0)?, text),
        _ => None,
    }
}

/// The pairs of a dict literal or `dict(a=1)` call: (string key, key range, value). `None` when
/// the expression is not a literal dict.
pub(super) fn dict_pairs<'t>(node: Node<'t>, text: &str) -> Option<Vec<(Option<String>, ByteRange, Node<'t>)>> {
    match node.kind() {
        "dictionary" => {
            let mut out = Vec::new();
            let mut cursor = node.walk();
            for pair in node.named_children(&mut cursor) {
                match pair.kind() {
                    "pair" => {
                        let key = pair.child_by_field_id(fields().key.get())?;
                        let value = pair.child_by_field_id(fields().value.get())?;
                        out.push((string_value(key, text), range_of(key), value));
                    }
                    "dictionary_splat" => out.push((None, range_of(pair), pair)),
                    "comment" => {}
                    _ => return None,
                }
            }
            Some(out)
        }
        "call" if node.child_by_field_id(fields().function.get()).is_some_and(|f| text_of(f, text) == "dict") => {
            let args = node.child_by_field_id(fields().arguments.get())?;
            let mut out = Vec::new();
            let mut cursor = args.walk();
            for arg in args.named_children(&mut cursor) {
                match arg.kind() {
                    "keyword_argument" => {
                        let n = arg.child_by_field_id(fields().name.get())?;
                        out.push((
                            Some(text_of(n, text).to_string()),
                            range_of(n),
                            arg.child_by_field_id(fields().value.get())?,
                        ));
                    }
                    _ => out.push((None, range_of(arg), arg)),
                }
            }
            Some(out)
        }
        _ => None,
    }
}

/// A value written as URL text, read as the parameter's type when it parses as one.
pub(super) fn coerce_text(text: &str, param_schema: &Value) -> Value {
    let types = schema::types(param_schema);
    if types.contains(&"integer")
        && let Ok(i) = text.parse::<i64>()
    {
        return Value::from(i);
    }
    if types.contains(&"number")
        && let Ok(f) = text.parse::<f64>()
        && let Some(n) = serde_json::Number::from_f64(f)
    {
        return Value::Number(n);
    }
    if types.contains(&"boolean") && matches!(text, "true" | "false") {
        return Value::Bool(text == "true");
    }
    Value::String(text.to_string())
}

pub(super) fn short_json(value: &Value) -> String {
    let s = value.to_string();
    if s.chars().count() > 40 { format!("{}…", s.chars().take(40).collect::<String>()) } else { s }
}
