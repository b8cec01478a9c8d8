//! The HTTP dialect: a `requests`/`httpx` request is a tool call when its URL starts with a
//! toolset's base URL. Its method and path pick the endpoint (the tool); path segments, the query
//! string, `params=` and `json=`/`data=` are the tool's arguments, checked by their wire names.

use tree_sitter::Node;

use super::args::{ArgSite, GivenArgs, literal_json};
use super::{Ty, Walker};
use crate::analysis::dialect::{self, FlatUrl};
use crate::analysis::parse::{fields, range_of, string_value, text_of};
use crate::analysis::{Dialect, ToolCall, UrlSite};
use crate::diagnostic::did_you_mean_within;
use crate::text::{ByteRange, quoted};
use crate::toolset::endpoint::{self, EndpointMatch, Matched, SplitUrl};
use crate::toolset::{ParamLocation, Toolset, Transport};

/// The longest protocol path an `unknown-endpoint` fix writes into the program.
const MAX_FIXED_PATH: usize = 2048;

impl<'t, 'c> Walker<'t, 'c> {
    /// A function of `requests`/`httpx`: `requests.get(…)`, or one imported from the library, which
    /// arrives as the name `Imports` gave it (a method, `"request"` or `"session"`).
    pub(super) fn http_library_call(&mut self, node: Node<'t>, function: &str, arguments: Option<Node<'t>>) -> Ty<'c> {
        match function {
            "Session" | "Client" | "AsyncClient" | "session" => {
                self.eval_args(arguments);
                Ty::Session
            }
            "request" => self.http_call(node, None, arguments),
            m if dialect::HTTP_METHODS.contains(&m) => self.http_call(node, Some(m), arguments),
            _ => self.opaque_call(node),
        }
    }

    /// A request: `get(url, …)` when `method` is known from the function, else `request(method,
    /// url, …)`. It is a tool call when its URL is a toolset's.
    pub(super) fn http_call(&mut self, node: Node<'t>, method: Option<&str>, arguments: Option<Node<'t>>) -> Ty<'c> {
        let target = self.target.take();
        let Some(arguments) = arguments else { return Ty::Unknown };
        let mut cursor = arguments.walk();
        let children: Vec<Node<'t>> = arguments.named_children(&mut cursor).collect();
        let Some((method, url_node)) = self.method_and_url(method, &children) else {
            self.eval_args(Some(arguments));
            return Ty::Unknown;
        };
        let flat = FlatUrl::new(self.url_parts(url_node, 0));
        let Some(split) = endpoint::split_url(&flat.flat, self.catalog) else {
            // Not a known tool's URL: an ordinary HTTP call.
            self.eval_args(Some(arguments));
            return Ty::Unknown;
        };
        let toolset = self.catalog.toolset(&split.toolset).expect("split_url returns catalog toolsets");
        let url_range = range_of(url_node);
        self.out.urls.push(UrlSite {
            toolset: toolset.name.clone(),
            range: url_range,
            path_start: exact_source_offset(&flat, split.path_start),
        });
        let (path_range, written_span) = path_range(&flat, &split, url_range);
        let endpoint = self.resolve_endpoint(toolset, &method, &split, path_range, written_span);
        let mut given = endpoint.as_ref().map(|e| url_arguments(e, &split, &flat)).unwrap_or_default();
        self.walk_request_arguments(&children, url_node, endpoint.is_some(), &mut given);
        let call_index = self.out.calls.len();
        let tool = endpoint.map(|e| e.tool);
        self.out.calls.push(ToolCall {
            tool,
            toolset: toolset.name.clone(),
            name: tool.map(|t| t.name.clone()).unwrap_or_else(|| endpoint::display_path(&split.segments)),
            dialect: Dialect::Http,
            range: range_of(node),
            name_range: url_range,
            args_range: range_of(arguments),
            args: Vec::new(),
            target,
            statement_range: self.statement,
            line: node.start_position().row,
        });
        self.check_args(call_index, tool, given, true, url_range, Some(arguments));
        Ty::Response { call: call_index }
    }

    /// A request's method (lower case) and URL expression, positional or by keyword (`method=`,
    /// `url=`).
    fn method_and_url(&self, method: Option<&str>, children: &[Node<'t>]) -> Option<(String, Node<'t>)> {
        let mut positional = children.iter().filter(|c| !matches!(c.kind(), "keyword_argument" | "comment")).copied();
        let keyword = |name: &str| {
            children
                .iter()
                .find(|c| {
                    c.kind() == "keyword_argument"
                        && c.child_by_field_id(fields().name.get()).is_some_and(|n| text_of(n, self.text) == name)
                })
                .and_then(|c| c.child_by_field_id(fields().value.get()))
        };
        let method = match method {
            Some(m) => Some(m.to_string()),
            None => positional
                .next()
                .or_else(|| keyword("method"))
                .and_then(|m| string_value(m, self.text))
                .map(|s| s.to_ascii_lowercase()),
        };
        let url = positional.next().or_else(|| keyword("url"));
        Some((method?, url?))
    }

    /// The tool a request reaches; reports a path the toolset lacks, or lacks for this method.
    fn resolve_endpoint(
        &mut self,
        toolset: &'c Toolset,
        method: &str,
        split: &SplitUrl,
        path_range: ByteRange,
        written_span: Option<ByteRange>,
    ) -> Option<EndpointMatch<'c>> {
        match endpoint::match_endpoint(toolset, method, &split.segments) {
            Matched::Tool(m) => Some(m),
            Matched::Unknowable => None,
            Matched::WrongMethod(methods) => {
                let written = endpoint::display_path(&split.segments);
                let d = self.error(
                    path_range,
                    "unknown-endpoint",
                    format!(
                        "{} {written} is not an endpoint of `{}`; that path has {}",
                        method.to_ascii_uppercase(),
                        toolset.name,
                        methods.join(", ")
                    ),
                );
                self.diag(d);
                None
            }
            Matched::NoPath => {
                let written = endpoint::display_path(&split.segments);
                let mut d = self.error(
                    path_range,
                    "unknown-endpoint",
                    format!("{} {written} is not an endpoint of `{}`", method.to_ascii_uppercase(), toolset.name),
                );
                if let Some(path) = closest_path(toolset, method, &written, &mut self.suggestion_work) {
                    d.message.push_str(&format!("; did you mean {}?", quoted(path)));
                    // Made for each call: a path longer than a user types gets no fix.
                    if path.len() <= MAX_FIXED_PATH
                        && let Some((span, respelt)) = written_span.and_then(|span| respelt_path(self.text, span, path))
                    {
                        d = d.with_suggestion(format!("Change to {}", quoted(path)), span, respelt);
                    }
                }
                self.diag(d);
                None
            }
        }
    }

    /// Walks a request's arguments other than its URL. With a known endpoint, the literal keys of
    /// `params=`, `json=` and `data=` become the tool's arguments.
    fn walk_request_arguments(
        &mut self,
        children: &[Node<'t>],
        url_node: Node<'t>,
        endpoint_known: bool,
        given: &mut GivenArgs<'t>,
    ) {
        for child in children {
            if child.kind() != "keyword_argument" {
                if child.id() != url_node.id() {
                    self.expr(*child);
                }
                if child.kind() == "dictionary_splat" {
                    given.incomplete = true;
                }
                continue;
            }
            let (Some(n), Some(v)) =
                (child.child_by_field_id(fields().name.get()), child.child_by_field_id(fields().value.get()))
            else {
                continue;
            };
            let location = match text_of(n, self.text) {
                "params" => ParamLocation::Query,
                "json" | "data" => ParamLocation::Body,
                "headers" => ParamLocation::Header,
                _ => {
                    if v.id() != url_node.id() {
                        self.expr(v);
                    }
                    continue;
                }
            };
            // Headers are not checked: the runtime adds the ones a tool needs.
            if !endpoint_known || location == ParamLocation::Header {
                self.expr(v);
                continue;
            }
            self.dict_arguments(v, location, given);
        }
    }

    /// `params={…}` or `json=dict(…)`: each string key is an argument; anything else (a variable,
    /// `**more`) hides arguments, so none can be reported missing.
    fn dict_arguments(&mut self, dict: Node<'t>, location: ParamLocation, given: &mut GivenArgs<'t>) {
        if dict.kind() == "identifier" {
            self.expr(dict);
            self.held_dict_arguments(dict, location, given);
            return;
        }
        let Some(pairs) = dict_pairs(dict, self.text) else {
            given.incomplete = true;
            self.expr(dict);
            return;
        };
        for (key, key_range, value) in pairs {
            match key {
                Some(key) => given.sites.push(ArgSite {
                    name: key,
                    name_range: Some(key_range),
                    value: Some(value),
                    text_value: None,
                    value_range: range_of(value),
                    location: Some(location),
                }),
                None => {
                    given.incomplete = true;
                    self.expr(value);
                }
            }
        }
    }
}

impl<'t, 'c> Walker<'t, 'c> {
    /// `params=query` where `query = {…}` was assigned before: its string keys are checked where
    /// the dict is written, with their literal values. The program may add keys later, so none is
    /// reported missing; values that are not literals were walked with their statement.
    fn held_dict_arguments(&mut self, name: Node<'t>, location: ParamLocation, given: &mut GivenArgs<'t>) {
        given.incomplete = true;
        let Some(value) = self.assigned_value(text_of(name, self.text), name.start_byte()) else { return };
        if value.start_byte() > name.start_byte() {
            return;
        }
        let Some(pairs) = dict_pairs(value, self.text) else { return };
        for (key, key_range, value) in pairs {
            let Some(key) = key else { continue };
            let literal = literal_json(value, self.text).is_some();
            given.sites.push(ArgSite {
                name: key,
                name_range: Some(key_range),
                value: literal.then_some(value),
                text_value: None,
                value_range: range_of(value),
                location: Some(location),
            });
        }
    }
}

/// The arguments a URL carries: the path parameters its endpoint's template names, and the query
/// string.
fn url_arguments<'t>(endpoint: &EndpointMatch, split: &SplitUrl, flat: &FlatUrl<'t>) -> GivenArgs<'t> {
    let mut given = GivenArgs::default();
    for (param_name, segment_index) in &endpoint.path_params {
        let segment = &split.segments[*segment_index];
        let range = flat.source_range(segment.start, segment.start + segment.text.len());
        let (value, text_value) = url_piece_value(flat, &segment.text, segment.start, range);
        given.sites.push(ArgSite {
            name: param_name.clone(),
            name_range: None,
            value,
            text_value,
            value_range: value.map(range_of).unwrap_or(range),
            location: Some(ParamLocation::Path),
        });
    }
    for (name, value, name_at, value_at) in &split.query {
        // A computed name could be any parameter.
        if name.contains(endpoint::HOLE) {
            given.incomplete = true;
            continue;
        }
        let name_range = flat.source_range(*name_at, name_at + name.len());
        let value_range = flat.source_range(*value_at, value_at + value.len());
        let (value, text_value) = url_piece_value(flat, value, *value_at, value_range);
        given.sites.push(ArgSite {
            name: name.clone(),
            name_range: Some(name_range),
            value,
            text_value,
            value_range,
            location: Some(ParamLocation::Query),
        });
    }
    given
}

/// A piece of a URL as an argument's value: the expression when the piece is one hole
/// (`/{movie_id}`), nothing when a hole is only part of it (`/tt{n}`: the value can't be known),
/// else its literal text.
fn url_piece_value<'t>(
    flat: &FlatUrl<'t>,
    text: &str,
    at: usize,
    range: ByteRange,
) -> (Option<Node<'t>>, Option<(String, ByteRange)>) {
    if text == endpoint::HOLE.to_string() {
        (flat.hole_at(at), None)
    } else if text.contains(endpoint::HOLE) {
        (None, None)
    } else {
        (None, Some((text.to_string(), range)))
    }
}

/// The source offset of `flat[at]`, when the URL's text there is the source's own (endpoint
/// completion inserts there).
fn exact_source_offset(flat: &FlatUrl, at: usize) -> Option<usize> {
    let r = flat.source_range(at, at);
    (r.start == r.end).then_some(r.start)
}

/// Where the URL's path is written, for the endpoint's diagnostics (the whole URL when the path
/// has no extent there), and the source text it spans from its first byte to its last, when it
/// starts in a literal there (a quick fix may respell it).
fn path_range(flat: &FlatUrl, split: &SplitUrl, url_range: ByteRange) -> (ByteRange, Option<ByteRange>) {
    let end = split.segments.last().map(|s| s.start + s.text.len()).unwrap_or(split.path_start);
    let r = flat.source_range(split.path_start, end);
    let shown = if r.end > r.start { r } else { url_range };
    (shown, flat.source_span(split.path_start, end))
}

/// The toolset's path for `method` closest to the path written, for did-you-mean.
fn closest_path<'c>(toolset: &'c Toolset, method: &str, written: &str, work_left: &mut usize) -> Option<&'c str> {
    let paths: Vec<&str> = toolset
        .tools
        .iter()
        .filter_map(|t| match &t.transport {
            Transport::Http { method: m, path } if m.eq_ignore_ascii_case(method) => Some(path.as_str()),
            _ => None,
        })
        .collect();
    // Respelling every path is part of the suggestion's cost.
    let respelling: usize = paths.iter().map(|p| p.len()).sum();
    *work_left = work_left.checked_sub(respelling)?;
    // Parameters compare by position, not by name: `/movie/{…}` is `/movie/{movie_id}`.
    let normalized = written.replace("{…}", "{}");
    let comparable: Vec<String> = paths.iter().map(|p| normalize_template(p)).collect();
    let best = did_you_mean_within(&normalized, comparable.iter().map(String::as_str), work_left)?;
    let i = comparable.iter().position(|c| c == best)?;
    Some(paths[i])
}

/// The path written at `span` of `text` (`/person/{pid}/movie_credit` in an f-string) respelt as
/// `template` (`/person/{person_id}/movie_credits`): its literal segments the template's, its
/// interpolations kept; with the span it replaces (widened over an interpolation's closing `}`).
/// `None` when the two do not line up segment by segment (a path built by `+`, an interpolation
/// where the template has a literal, or the other way round).
fn respelt_path(text: &str, mut span: ByteRange, template: &str) -> Option<(ByteRange, String)> {
    let mut source = text.get(span.start..span.end)?;
    // The span ends where an interpolation's expression does: `…/{pid`.
    let last = source.rsplit('/').next().unwrap_or("");
    if last.starts_with('{') && !last.contains('}') && text[span.end..].starts_with('}') {
        span.end += 1;
        source = &text[span.start..span.end];
    }
    let written: Vec<&str> = source.strip_prefix('/')?.split('/').collect();
    let wanted = endpoint::template_segments(template);
    if written.len() != wanted.len() {
        return None;
    }
    let mut out = String::new();
    for (written, wanted) in written.iter().zip(wanted) {
        let interpolated = written.starts_with('{') && written.ends_with('}') && !written.starts_with("{{");
        let literal = !written.contains(['{', '}', '"', '\'', '\\', '+', '\n']);
        out.push('/');
        match endpoint::template_param(wanted) {
            Some(_) if interpolated => out.push_str(written),
            None if literal => out.push_str(wanted),
            _ => return None,
        }
    }
    Some((span, out))
}

/// A path template with its parameters unnamed: `/movie/{movie_id}` → `/movie/{}`.
fn normalize_template(path: &str) -> String {
    let mut out = String::new();
    for segment in endpoint::template_segments(path) {
        out.push('/');
        out.push_str(if endpoint::template_param(segment).is_some() { "{}" } else { segment });
    }
    out
}

/// The pairs of a dict literal or `dict(a=1)` call: (string key, key range, value). `None` when
/// the expression is not a literal dict.
fn dict_pairs<'t>(node: Node<'t>, text: &str) -> Option<Vec<(Option<String>, ByteRange, Node<'t>)>> {
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
