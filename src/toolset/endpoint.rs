//! URL → endpoint matching: a URL (flattened to one string, unknown pieces as [`HOLE`]) is split
//! after the longest toolset base URL it starts with, and its path matched against the toolset's
//! HTTP path templates, preferring the most literal one (`/movie/top_rated` over
//! `/movie/{movie_id}`). Used by the analysis (checking the HTTP dialect) and by the runtime
//! (tracing a program's own HTTP requests under the tool they reach).

use super::{Catalog, Tool, Toolset, Transport};

/// Stands for a piece of a URL whose value is unknown (an expression in an f-string).
pub const HOLE: char = '\u{1}';

/// One segment of the URL's path: its text in `flat` and where it starts.
#[derive(Debug, Clone)]
pub struct Segment {
    pub text: String,
    pub start: usize,
}

/// A URL split after a toolset's base URL.
#[derive(Debug)]
pub struct SplitUrl {
    pub toolset: String,
    /// Offset in `flat` where the path starts.
    pub path_start: usize,
    pub segments: Vec<Segment>,
    /// (name, value, start of name in `flat`, start of value) from `?a=1&b=2`.
    pub query: Vec<(String, String, usize, usize)>,
}

fn strip_scheme(url: &str) -> &str {
    url.strip_prefix("https://").or_else(|| url.strip_prefix("http://")).unwrap_or(url)
}

/// Which toolset's base URL the flattened URL starts with (the longest base wins).
pub fn split_url(flat: &str, catalog: &Catalog) -> Option<SplitUrl> {
    let flat_no_scheme = strip_scheme(flat);
    let scheme_len = flat.len() - flat_no_scheme.len();
    let mut best: Option<(&Toolset, usize)> = None;
    for toolset in &catalog.toolsets {
        let Some(base) = toolset.base_url.as_deref() else { continue };
        let base = strip_scheme(base.trim_end_matches('/'));
        if base.is_empty() || !flat_no_scheme.starts_with(base) {
            continue;
        }
        let rest = &flat_no_scheme[base.len()..];
        if !(rest.is_empty() || rest.starts_with('/') || rest.starts_with('?')) {
            continue;
        }
        if best.is_none_or(|(_, len)| base.len() > len) {
            best = Some((toolset, base.len()));
        }
    }
    let (toolset, base_len) = best?;
    let path_start = scheme_len + base_len;
    let rest = &flat[path_start..];
    let path_end = rest.find(['?', '#']).map(|i| path_start + i).unwrap_or(flat.len());
    let mut segments = Vec::new();
    let mut at = path_start;
    for piece in flat[path_start..path_end].split('/') {
        if at != path_start || !piece.is_empty() {
            segments.push(Segment { text: piece.to_string(), start: at });
        }
        at += piece.len() + 1;
    }
    // `/movie/` and `/movie` name the same endpoint.
    if segments.last().is_some_and(|s| s.text.is_empty()) {
        segments.pop();
    }
    let mut query = Vec::new();
    if flat[path_end..].starts_with('?') {
        let mut at = path_end + 1;
        let query_end = flat[at..].find('#').map(|i| at + i).unwrap_or(flat.len());
        for pair in flat[at..query_end].split('&') {
            if !pair.is_empty() {
                let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
                query.push((name.to_string(), value.to_string(), at, at + name.len() + 1));
            }
            at += pair.len() + 1;
        }
    }
    Some(SplitUrl { toolset: toolset.name.clone(), path_start, segments, query })
}

/// How a URL's path matched a tool's path template.
#[derive(Debug)]
pub struct EndpointMatch<'c> {
    pub tool: &'c Tool,
    /// (template parameter name, index of the URL segment).
    pub path_params: Vec<(String, usize)>,
}

pub fn template_segments(path: &str) -> Vec<&str> {
    path.split('/').filter(|s| !s.is_empty()).collect()
}

pub fn template_param(segment: &str) -> Option<&str> {
    segment.strip_prefix('{').and_then(|s| s.strip_suffix('}'))
}

/// The result of matching a URL path against a toolset's HTTP tools.
pub enum Matched<'c> {
    Tool(EndpointMatch<'c>),
    /// The path exists, but not for this method: the methods it has.
    WrongMethod(Vec<String>),
    NoPath,
    /// A segment is computed in a way that can't be matched (a hole covering several segments).
    Unknowable,
}

pub fn match_endpoint<'c>(toolset: &'c Toolset, method: &str, segments: &[Segment]) -> Matched<'c> {
    let method = method.to_ascii_uppercase();
    let mut best: Option<(usize, EndpointMatch<'c>)> = None;
    let mut other_methods = Vec::new();
    let has_hole = segments.iter().any(|s| s.text.contains(HOLE));
    for tool in &toolset.tools {
        let Transport::Http { method: m, path } = &tool.transport else { continue };
        let tpl = template_segments(path);
        if tpl.len() != segments.len() {
            continue;
        }
        let mut score = 0;
        let mut params = Vec::new();
        let mut ok = true;
        for (i, (t, s)) in tpl.iter().zip(segments).enumerate() {
            if let Some(name) = template_param(t) {
                if s.text.is_empty() {
                    ok = false;
                    break;
                }
                params.push((name.to_string(), i));
            } else if *t == s.text {
                score += 1;
            } else {
                ok = false;
                break;
            }
        }
        if !ok {
            continue;
        }
        if !m.eq_ignore_ascii_case(&method) {
            other_methods.push(m.to_ascii_uppercase());
            continue;
        }
        if best.as_ref().is_none_or(|(s, _)| score > *s) {
            best = Some((score, EndpointMatch { tool, path_params: params }));
        }
    }
    match best {
        Some((_, m)) => Matched::Tool(m),
        None if !other_methods.is_empty() => {
            other_methods.sort();
            other_methods.dedup();
            Matched::WrongMethod(other_methods)
        }
        None if has_hole && segments.iter().any(|s| s.text.contains(HOLE) && s.text.len() > HOLE.len_utf8()) => {
            Matched::Unknowable
        }
        None => Matched::NoPath,
    }
}

/// The URL path written with `{…}` for holes, for messages and did-you-mean.
pub fn display_path(segments: &[Segment]) -> String {
    let mut out = String::new();
    for s in segments {
        out.push('/');
        out.push_str(&s.text.replace(HOLE, "{…}"));
    }
    if out.is_empty() { "/".into() } else { out }
}
