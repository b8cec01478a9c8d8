//! The one naming rule for tools and parameters, used by stubs, prompts, traces, ToolNet and the CLI.

use std::collections::{HashMap, HashSet};

/// Names given out once each: a name already given gets the first free `{name}{separator}{n}`
/// (`n` from 2), counted on from the last number given for that name, so that thousands of names
/// falling together (`a-b`, `a.b`, `a b` are all `a_b`) cost a lookup each, not one for every
/// name before them.
#[derive(Default)]
pub struct Unique {
    given: HashSet<String>,
    next: HashMap<String, usize>,
}

impl Unique {
    /// Gives `name` as it is; `false` when it was given already.
    pub fn take(&mut self, name: &str) -> bool {
        self.given.insert(name.to_string())
    }

    /// `name`, or the first free `{name}{separator}{n}`; given from then on either way.
    pub fn claim(&mut self, name: &str, separator: &str) -> String {
        if self.take(name) {
            return name.to_string();
        }
        let n = self.next.entry(name.to_string()).or_insert(2);
        loop {
            let candidate = format!("{name}{separator}{n}");
            *n += 1;
            if self.given.insert(candidate.clone()) {
                return candidate;
            }
        }
    }
}

/// Python keywords and soft keywords a generated keyword argument must not shadow.
const PYTHON_KEYWORDS: &[&str] = &[
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue", "def", "del",
    "elif", "else", "except", "finally", "for", "from", "global", "if", "import", "in", "is", "lambda", "nonlocal",
    "not", "or", "pass", "raise", "return", "try", "while", "with", "yield",
];

pub fn is_python_keyword(word: &str) -> bool {
    PYTHON_KEYWORDS.contains(&word)
}

pub fn is_identifier(word: &str) -> bool {
    let mut chars = word.chars();
    matches!(chars.next(), Some(c) if c == '_' || c.is_alphabetic())
        && chars.all(|c| c == '_' || c.is_alphanumeric())
        && !is_python_keyword(word)
}

/// `movieCredits`, `movie-credits`, `Movie Credits` → `movie_credits`; a leading digit gets `_`.
pub fn snake_case(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 4);
    let chars: Vec<char> = text.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if c.is_alphanumeric() {
            if c.is_uppercase() {
                let prev = i.checked_sub(1).map(|j| chars[j]);
                let next = chars.get(i + 1);
                let boundary = match prev {
                    Some(p) if p.is_lowercase() || p.is_ascii_digit() => true,
                    Some(p) if p.is_uppercase() => next.is_some_and(|n| n.is_lowercase()),
                    _ => false,
                };
                if boundary && !out.ends_with('_') && !out.is_empty() {
                    out.push('_');
                }
                out.extend(c.to_lowercase());
            } else {
                out.push(c);
            }
        } else if !out.is_empty() && !out.ends_with('_') {
            out.push('_');
        }
    }
    while out.ends_with('_') {
        out.pop();
    }
    if out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, '_');
    }
    out
}

/// A keyword-argument name for a wire name: snake-cased, keywords get a trailing `_`.
pub fn python_param(wire: &str) -> String {
    let mut name = snake_case(wire);
    if name.is_empty() {
        name = "value".into();
    }
    if is_python_keyword(&name) {
        name.push('_');
    }
    name
}

/// OpenAPI rule: `GET /person/{person_id}/movie_credits` → `person_movie_credits`,
/// `PUT /me/tracks` → `put_me_tracks`. Collisions are resolved by [`openapi_disambiguated`].
pub fn openapi_tool(method: &str, path: &str) -> String {
    let mut parts: Vec<String> = Vec::new();
    let method = method.to_ascii_lowercase();
    if method != "get" {
        parts.push(method);
    }
    for segment in path.split('/') {
        if segment.is_empty() || (segment.starts_with('{') && segment.ends_with('}')) {
            continue;
        }
        let s = snake_case(segment);
        if !s.is_empty() {
            parts.push(s.trim_start_matches('_').to_string());
        }
    }
    let name = parts.join("_");
    if name.is_empty() {
        "root".into()
    } else if is_python_keyword(&name) {
        format!("{name}_")
    } else {
        name
    }
}

/// The collision form: the base name plus the dropped parameter names (`person_by_person_id`).
pub fn openapi_disambiguated(base: &str, path: &str) -> String {
    let params: Vec<String> =
        path.split('/').filter_map(|s| s.strip_prefix('{').and_then(|s| s.strip_suffix('}'))).map(snake_case).collect();
    if params.is_empty() { base.to_string() } else { format!("{base}_by_{}", params.join("_and_")) }
}

/// ToolBench's own `standardize`: anything but letters, digits and `_` becomes `_`, runs collapse,
/// lowercase, edges trimmed, a leading digit gets `get_`. Kept exactly so imported trajectories match.
pub fn toolbench_standardize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        let c = if c.is_ascii_alphanumeric() || c == '_' || ('\u{4e00}'..='\u{9fa5}').contains(&c) { c } else { '_' };
        if c == '_' && out.ends_with('_') {
            continue;
        }
        out.extend(c.to_lowercase());
    }
    let trimmed = out.trim_matches('_');
    if trimmed.starts_with(|c: char| c.is_ascii_digit()) { format!("get_{trimmed}") } else { trimmed.to_string() }
}

/// `<api_name>_for_<tool_name>`, without ToolBench's 64-character cut.
pub fn toolbench_tool(api_name: &str, tool_name: &str) -> String {
    let name = format!("{}_for_{}", toolbench_standardize(api_name), toolbench_standardize(tool_name));
    if is_identifier(&name) { name } else { format!("{name}_") }
}

/// ToolBench renames parameters that clash with Python words by prefixing `is_` (`id` → `is_id`);
/// chainsmith keeps that so generated programs and ToolBench trajectories agree.
pub fn toolbench_param(wire: &str) -> String {
    let base = toolbench_standardize(wire);
    let base = if base.is_empty() { "value".to_string() } else { base };
    if ["from", "class", "return", "false", "true", "id", "and"].contains(&base.as_str()) {
        format!("is_{base}")
    } else if is_python_keyword(&base) {
        format!("{base}_")
    } else {
        base
    }
}

/// A toolset (module) name from a file stem: `tmdb_oas` → `tmdb_oas`, `My-Tools` → `my_tools`.
pub fn toolset_from_stem(stem: &str) -> String {
    let stem = stem.trim_end_matches(".toolset");
    let name = snake_case(stem);
    if name.is_empty() { "tools".into() } else { name }
}

/// An MCP tool name: `get-sum` → `get_sum`.
pub fn mcp_tool(name: &str) -> String {
    python_param(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openapi_names_follow_the_design() {
        assert_eq!(openapi_tool("GET", "/search/person"), "search_person");
        assert_eq!(openapi_tool("get", "/person/{person_id}/movie_credits"), "person_movie_credits");
        assert_eq!(openapi_tool("GET", "/person/{person_id}"), "person");
        assert_eq!(openapi_tool("PUT", "/me/tracks"), "put_me_tracks");
        assert_eq!(openapi_tool("GET", "/movie/now_playing"), "movie_now_playing");
        assert_eq!(openapi_tool("delete", "/users/{id}/playlistItems"), "delete_users_playlist_items");
        assert_eq!(openapi_disambiguated("person", "/person/{person_id}"), "person_by_person_id");
    }

    #[test]
    fn toolbench_names_match_toolbench() {
        assert_eq!(toolbench_tool("Get Word by Start", "Random Word API"), "get_word_by_start_for_random_word_api");
        assert_eq!(
            toolbench_tool("/tracking/correo_argentino/result_task/:task_id", "Transportistas de Argentina"),
            "tracking_correo_argentino_result_task_task_id_for_transportistas_de_argentina"
        );
        assert_eq!(toolbench_standardize("3D Models"), "get_3d_models");
        assert_eq!(toolbench_param("id"), "is_id");
        assert_eq!(toolbench_param("page-size"), "page_size");
    }

    #[test]
    fn snake_and_params() {
        assert_eq!(snake_case("movieCredits"), "movie_credits");
        assert_eq!(snake_case("HTTPServer"), "http_server");
        assert_eq!(snake_case("get-sum"), "get_sum");
        assert_eq!(python_param("from"), "from_");
        assert_eq!(python_param("include_adult"), "include_adult");
        assert_eq!(toolset_from_stem("tmdb.toolset"), "tmdb");
    }
}
