//! A call's arguments checked against its tool's parameters, for both dialects: names the tool
//! lacks (with did-you-mean), required parameters not given, literal values against a parameter's
//! type and enum, and values taken from a response against a parameter's type.

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use serde_json::Value;
use tree_sitter::Node;

use super::{Ty, Walker};
use crate::analysis::CallArg;
use crate::analysis::parse::{fields, string_value, text_of};
use crate::text::{ByteRange, quoted};
use crate::toolset::schema;
use crate::toolset::{Catalog, Param, ParamLocation, Tool};

/// The most text a "missing arguments" fix inserts (`a=..., b=...`): a tool declaring more
/// required parameters, or names longer, than a user types gets the message without the fix.
const MAX_ADDED: usize = 4096;

/// A tool's parameters as one dialect's calls are checked against them, made once per walk: a
/// program may call a tool of 60,000 parameters 25,000 times, and looking each argument up (and
/// each required parameter in the call's arguments) by scanning made that 25 s.
pub(super) struct ParamIndex<'c> {
    /// Each spelling → the first parameter spelt so.
    by_name: HashMap<&'c str, &'c Param>,
    /// The required parameters a call must give (not those the URL, the headers or the API key
    /// supply), in declaration order, and how many are spelt each way.
    required: Vec<&'c Param>,
    required_names: HashMap<&'c str, usize>,
}

impl<'c> ParamIndex<'c> {
    fn new(tool: &'c Tool, wire: bool, auth_param: Option<&str>) -> Self {
        let mut by_name = HashMap::new();
        for param in &tool.params {
            by_name.entry(spelling(param, wire)).or_insert(param);
        }
        let required = missing_params(tool, &[], wire, auth_param);
        let mut required_names = HashMap::new();
        for param in &required {
            *required_names.entry(spelling(param, wire)).or_insert(0) += 1;
        }
        ParamIndex { by_name, required, required_names }
    }
}

/// How many of a call's missing arguments are collected for its message and fix: past what a
/// fix may insert ([`MAX_ADDED`]), only the count and the first few are told.
const MISSING_COLLECTED: usize = MAX_ADDED / 6 + 1;

/// One argument of a call as the checks see it.
pub(super) struct ArgSite<'t> {
    pub name: String,
    pub name_range: Option<ByteRange>,
    pub value: Option<Node<'t>>,
    /// A literal value given as text (URL segments and query strings), checked leniently.
    pub text_value: Option<(String, ByteRange)>,
    pub value_range: ByteRange,
    pub location: Option<ParamLocation>,
}

/// The arguments a call gives.
#[derive(Default)]
pub(super) struct GivenArgs<'t> {
    pub sites: Vec<ArgSite<'t>>,
    /// False when some arguments can't be seen (`**kwargs`, a computed query name): a required
    /// parameter may be among them, so none is reported missing.
    pub incomplete: bool,
}

impl<'t, 'c> Walker<'t, 'c> {
    /// Checks a call's arguments against the tool's parameters and records them on the call.
    /// `wire` says whether names are wire names (HTTP dialect) or Python keywords.
    pub(super) fn check_args(
        &mut self,
        call_index: usize,
        tool: Option<&'c Tool>,
        given: GivenArgs<'t>,
        wire: bool,
        anchor: ByteRange,
        arguments: Option<Node<'t>>,
    ) {
        let mut recorded = Vec::new();
        let auth_param = tool.and_then(|t| auth_query_param(self.catalog, t));
        let index = tool.map(|t| self.param_index(t, wire, auth_param.as_deref()));
        for site in &given.sites {
            let ty = match site.value {
                Some(v) if literal_json(v, self.text).is_none() => self.expr(v),
                _ => Ty::Unknown,
            };
            let param = index.as_ref().and_then(|i| i.by_name.get(site.name.as_str()).copied());
            recorded.push(CallArg {
                name: site.name.clone(),
                name_range: site.name_range,
                value_range: site.value_range,
                location: param.map(|p| p.location).or(site.location),
            });
            let Some(tool) = tool else { continue };
            match param {
                Some(param) => self.check_arg_value(param, site, ty),
                // The runtime adds the API key and the headers an HTTP request needs.
                None if wire
                    && (auth_param.as_deref() == Some(site.name.as_str())
                        || site.location == Some(ParamLocation::Header)) => {}
                None => self.report_unknown_argument(call_index, tool, site, wire),
            }
        }
        if let (Some(tool), Some(index)) = (tool, index)
            && !given.incomplete
        {
            let given: HashSet<&str> = recorded.iter().map(|a| a.name.as_str()).collect();
            let given_required: usize = given.iter().filter_map(|g| index.required_names.get(g)).sum();
            let count = index.required.len() - given_required;
            if count > 0 {
                let missing: Vec<&Param> = index
                    .required
                    .iter()
                    .copied()
                    .filter(|p| !given.contains(spelling(p, wire)))
                    .take(MISSING_COLLECTED)
                    .collect();
                self.report_missing_args(call_index, tool, (&missing, count), wire, anchor, arguments);
            }
        }
        if let Some(call) = self.out.calls.get_mut(call_index) {
            call.args = recorded;
        }
    }

    /// The parameters of `tool` indexed for `wire` calls, made on first use in this walk.
    fn param_index(&mut self, tool: &'c Tool, wire: bool, auth_param: Option<&str>) -> Rc<ParamIndex<'c>> {
        let key = (std::ptr::from_ref(tool) as usize, wire);
        self.param_indexes.entry(key).or_insert_with(|| Rc::new(ParamIndex::new(tool, wire, auth_param))).clone()
    }

    /// The tool as the user wrote it at call `call_index` (an alias stays an alias); an HTTP call's
    /// URL is not a name, so it gets the tool's own.
    fn written_name(&self, call_index: usize, tool: &Tool, wire: bool) -> String {
        let written = self.out.calls.get(call_index).filter(|_| !wire);
        written.map_or_else(|| tool.name.clone(), |call| call.name.clone())
    }

    fn check_arg_value(&mut self, param: &Param, site: &ArgSite<'t>, ty: Ty<'c>) {
        if let Some(v) = site.value {
            if let Some(value) = literal_json(v, self.text) {
                self.check_literal_value(param, &value, site.value_range, false);
            } else if let Ty::Json { schema: s, .. } = ty {
                self.check_flowed_value(param, s, site.value_range);
            }
        } else if let Some((text, range)) = &site.text_value {
            let value = coerce_text(self.catalog, text, &param.schema);
            self.check_literal_value(param, &value, *range, true);
        }
    }

    fn report_unknown_argument(&mut self, call_index: usize, tool: &Tool, site: &ArgSite<'t>, wire: bool) {
        let range = site.name_range.unwrap_or(site.value_range);
        let shown = self.written_name(call_index, tool, wire);
        let names = || tool.params.iter().map(|p| spelling(p, wire));
        let mut d = self.error(
            range,
            "unknown-argument",
            format!("`{}` has no parameter `{}`", quoted(&shown), quoted(&site.name)),
        );
        if let Some(best) = self.did_you_mean(&site.name, names()) {
            d.message.push_str(&format!("; did you mean `{best}`?"));
            if let Some(name_range) = site.name_range {
                // A wire name is a string key (`params={"page": …}`): the replacement keeps its quotes.
                let replacement = if wire {
                    let quote = self.text.get(name_range.start..name_range.start + 1).unwrap_or("\"");
                    format!("{quote}{best}{quote}")
                } else {
                    best.to_string()
                };
                d = d.with_suggestion(format!("Change to `{best}`"), name_range, replacement);
            }
        } else if !tool.params.is_empty() {
            d.message.push_str(&format!(" (parameters: {})", crate::text::some_of(names(), 20)));
        }
        self.diag(d);
    }

    /// `missing`: the first missing parameters (all of them, when there are few) and how many.
    fn report_missing_args(
        &mut self,
        call_index: usize,
        tool: &Tool,
        (missing, count): (&[&Param], usize),
        wire: bool,
        anchor: ByteRange,
        arguments: Option<Node<'t>>,
    ) {
        let shown = self.written_name(call_index, tool, wire);
        // A message and its fix are made for each call: what they quote of the protocol is cut
        // short, and a fix that would insert more than a user would type is not offered.
        let list = crate::text::some_of(missing.iter().map(|p| format!("`{}`", quoted(spelling(p, wire)))), 20);
        let plural = if count > 1 { "s" } else { "" };
        let mut d = self.error(
            anchor,
            "missing-argument",
            format!("`{}` is missing required argument{plural} {list}", quoted(&shown)),
        );
        // Only keywords can be added for the user: HTTP arguments live in a URL or a dict.
        let added_len: usize = missing.iter().map(|p| p.name.len() + 6).sum();
        if !wire
            && count == missing.len()
            && added_len <= MAX_ADDED
            && let Some(arguments) = arguments
        {
            let close = arguments.end_byte().saturating_sub(1);
            let has_args = arguments.named_child_count() > 0;
            let additions: Vec<String> = missing.iter().map(|p| format!("{}=...", p.name)).collect();
            let insert = format!("{}{}", if has_args { ", " } else { "" }, additions.join(", "));
            d = d.with_suggestion(format!("Add missing argument{plural} {list}"), ByteRange::new(close, close), insert);
        }
        self.diag(d);
    }

    /// A literal's type and enum. A type mismatch is `wrong-type`, told apart from `not-in-enum`.
    fn check_literal_value(&mut self, param: &Param, value: &Value, range: ByteRange, from_text: bool) {
        let expected = schema::types(self.catalog, &param.schema);
        let actual = schema::json_type(value);
        if !schema::type_fits(actual, &expected) {
            // URL text is a string on the wire; only complain when it cannot be read as the type.
            if from_text && expected.contains(&"string") {
                return;
            }
            let d = self.error(
                range,
                "wrong-type",
                format!(
                    "`{}` expects {}, got {} {}",
                    quoted(&param.name),
                    expected.join(" | "),
                    actual,
                    crate::text::short_json(value, 41)
                ),
            );
            self.diag(d);
            return;
        }
        if let Err(message) = schema::check_literal(self.catalog, &param.schema, value) {
            let mut d = self.error(range, "not-in-enum", format!("`{}`: {message}", quoted(&param.name)));
            let allowed = schema::enum_values(self.catalog, &param.schema);
            if let (Some(written), Some(allowed)) = (value.as_str(), allowed)
                && let Some(best) = self.did_you_mean(written, allowed.iter().filter_map(Value::as_str))
            {
                d.message.push_str(&format!("; did you mean \"{best}\"?"));
                // Respelt only where the source spells the value plainly: `"movies"`, or `movies` in a URL.
                let source = self.text.get(range.start..range.end).unwrap_or("");
                let quote =
                    ["\"", "'"].into_iter().find(|q| source.len() > 1 && source.starts_with(q) && source.ends_with(q));
                let quote = quote.unwrap_or("");
                // Only a plain value: one with a quote, backslash or brace would need escaping.
                let plain = !best.contains(['"', '\'', '\\', '{', '}']);
                if plain && source == format!("{quote}{written}{quote}") {
                    d = d.with_suggestion(format!("Change to \"{best}\""), range, format!("{quote}{best}{quote}"));
                }
            }
            self.diag(d);
        }
    }

    /// A value taken from a response, checked by type only: what it holds is known at run time.
    fn check_flowed_value(&mut self, param: &Param, value_schema: &Value, range: ByteRange) {
        let expected = schema::types(self.catalog, &param.schema);
        let actual = schema::types(self.catalog, value_schema);
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
                    quoted(&param.name),
                    expected.join(" | "),
                    schema::summary(self.catalog, value_schema)
                ),
            );
            self.diag(d);
        }
    }
}

/// A parameter's name as a dialect spells it: the wire name in the HTTP dialect, else the Python
/// keyword.
/// The required parameters a call does not give. The URL carries an HTTP call's path parameters,
/// and the runtime adds headers and the API key.
/// The required parameters of a module-dialect call of `tool` that gives the keywords `given`, as
/// `missing-argument` reports them (the API key the runtime adds aside).
pub fn missing_keywords<'a>(catalog: &Catalog, tool: &'a Tool, given: &[&str]) -> Vec<&'a Param> {
    missing_params(tool, given, false, auth_query_param(catalog, tool).as_deref())
}

/// The query parameter the runtime fills with the toolset's key, if its auth is one.
fn auth_query_param(catalog: &Catalog, tool: &Tool) -> Option<String> {
    catalog.toolset(&tool.toolset).and_then(|ts| ts.auth.as_ref()).and_then(|a| a.query.clone())
}

fn missing_params<'a>(tool: &'a Tool, given: &[&str], wire: bool, auth_param: Option<&str>) -> Vec<&'a Param> {
    tool.required()
        .filter(|p| {
            let supplied_elsewhere = wire && matches!(p.location, ParamLocation::Path | ParamLocation::Header);
            !given.contains(&spelling(p, wire)) && !supplied_elsewhere && auth_param != Some(p.wire_name.as_str())
        })
        .collect()
}

fn spelling(param: &Param, wire: bool) -> &str {
    if wire { &param.wire_name } else { &param.name }
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

/// A value written as URL text, read as the parameter's type when it parses as one.
fn coerce_text(refs: &dyn schema::Refs, text: &str, param_schema: &Value) -> Value {
    let types = schema::types(refs, param_schema);
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
