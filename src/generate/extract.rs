//! Getting the program out of a model's reply, as models really write them: prose around fences,
//! several blocks, a missing language tag, no fences at all, or a reply cut off mid-statement.

use crate::analysis::parse;

/// The program found in a reply and what had to be done to get it.
#[derive(Debug, Clone, PartialEq)]
pub struct Extracted {
    pub code: String,
    /// The reply ended inside the code (no closing fence, or a statement cut off); the incomplete
    /// tail was dropped.
    pub truncated: bool,
}

/// Extracts the program; `None` when the reply holds no code at all.
pub fn extract(reply: &str) -> Option<Extracted> {
    let blocks = fenced_blocks(reply);
    let (code, mut truncated) = if blocks.is_empty() {
        (unfenced_code(reply)?, false)
    } else {
        let best = choose(&blocks);
        (best.0.clone(), best.1)
    };
    let mut code = code.trim_matches('\n').to_string();
    if code.trim().is_empty() {
        return None;
    }
    // A reply cut off mid-statement: keep the complete statements before the cut.
    let tree = parse::parse(&code);
    if tree.root_node().has_error() && truncated_at_end(&code) {
        let root = tree.root_node();
        let mut keep_to = 0;
        let mut cursor = root.walk();
        for child in root.named_children(&mut cursor) {
            if child.has_error() || child.is_error() {
                break;
            }
            keep_to = child.end_byte();
        }
        if keep_to > 0 {
            code.truncate(keep_to);
            truncated = true;
        }
    }
    if !code.ends_with('\n') {
        code.push('\n');
    }
    Some(Extracted { code, truncated })
}

/// (code, unterminated) for each fenced block, in order.
fn fenced_blocks(reply: &str) -> Vec<(String, bool)> {
    let mut blocks = Vec::new();
    let mut lines = reply.lines();
    while let Some(line) = lines.next() {
        let trimmed = line.trim_start();
        let Some(tag) = trimmed.strip_prefix("```") else { continue };
        let tag = tag.trim().to_ascii_lowercase();
        if !(tag.is_empty() || tag == "python" || tag == "py" || tag == "python3") {
            // A block of another language (json, bash, text): skip to its end.
            for l in lines.by_ref() {
                if l.trim_start().starts_with("```") {
                    break;
                }
            }
            continue;
        }
        let mut body = String::new();
        let mut closed = false;
        for l in lines.by_ref() {
            if l.trim_start().starts_with("```") {
                closed = true;
                break;
            }
            body.push_str(l);
            body.push('\n');
        }
        blocks.push((body, !closed));
    }
    blocks
}

/// The block most likely to be the whole program: one that imports tools and calls them, else the
/// largest; several partial blocks that only make sense together are joined.
fn choose(blocks: &[(String, bool)]) -> (String, bool) {
    let score = |code: &str| {
        let mut s = code.lines().filter(|l| !l.trim().is_empty()).count();
        if code.contains("chainsmith.tools") || code.contains("import requests") || code.contains("import httpx") {
            s += 1000;
        }
        if code.contains("print(") {
            s += 100;
        }
        s
    };
    let only_imports = |code: &str| {
        let mut lines = code.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).peekable();
        lines.peek().is_some() && lines.all(|l| l.starts_with("import ") || l.starts_with("from "))
    };
    // The common "first the imports, then the code" split across blocks.
    if blocks.len() > 1 && only_imports(&blocks[0].0) {
        let joined: String = blocks.iter().map(|b| b.0.as_str()).collect::<Vec<_>>().join("\n");
        let truncated = blocks.last().is_some_and(|b| b.1);
        return (joined, truncated);
    }
    let best = blocks.iter().max_by_key(|b| score(&b.0)).expect("choose is called with blocks");
    best.clone()
}

/// Code written without fences: from the first line that looks like Python to the last one.
fn unfenced_code(reply: &str) -> Option<String> {
    let lines: Vec<&str> = reply.lines().collect();
    let looks_like_code = |l: &str| {
        let t = l.trim_start();
        t.starts_with("from ")
            || t.starts_with("import ")
            || t.starts_with("def ")
            || t.starts_with("print(")
            || t.starts_with("for ")
            || t.starts_with("if ")
            || t.starts_with('#')
            || t.split_once('=').is_some_and(|(lhs, rhs)| {
                let lhs = lhs.trim();
                !rhs.starts_with('=')
                    && !lhs.is_empty()
                    && lhs.chars().all(|c| c.is_alphanumeric() || "_[]\"', ".contains(c))
            })
    };
    let start = lines.iter().position(|l| looks_like_code(l))?;
    let end = lines.iter().rposition(|l| looks_like_code(l) || l.starts_with(' ') || l.trim().ends_with(')'))?;
    if end < start {
        return None;
    }
    Some(lines[start..=end].join("\n"))
}

/// Whether the syntax error is at the very end (a cut-off reply) rather than in the middle.
fn truncated_at_end(code: &str) -> bool {
    let tree = parse::parse(code);
    let root = tree.root_node();
    let mut cursor = root.walk();
    let children: Vec<_> = root.named_children(&mut cursor).collect();
    match children.iter().position(|c| c.has_error() || c.is_error()) {
        Some(i) => i == children.len() - 1,
        None => root.has_error(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prose_around_a_fence() {
        let reply = "Sure! Here is the program:\n\n```python\nfrom chainsmith.tools import tmdb\nprint(tmdb.search_person(query=\"x\"))\n```\n\nIt searches for the person.";
        let e = extract(reply).unwrap();
        assert_eq!(e.code, "from chainsmith.tools import tmdb\nprint(tmdb.search_person(query=\"x\"))\n");
        assert!(!e.truncated);
    }

    #[test]
    fn the_program_among_several_blocks() {
        let reply = "First install:\n```bash\npip install x\n```\nAn example response:\n```json\n{\"a\": 1}\n```\nThe chain:\n```py\nfrom chainsmith.tools import tmdb\nx = tmdb.search_person(query=\"a\")\nprint(x)\n```\nOr shorter:\n```python\nprint(1)\n```";
        assert_eq!(
            extract(reply).unwrap().code,
            "from chainsmith.tools import tmdb\nx = tmdb.search_person(query=\"a\")\nprint(x)\n"
        );
    }

    #[test]
    fn imports_and_code_in_two_blocks_are_joined() {
        let reply = "```python\nfrom chainsmith.tools import tmdb\n```\nthen\n```python\nprint(tmdb.person(person_id=1)[\"name\"])\n```";
        let code = extract(reply).unwrap().code;
        assert!(code.starts_with("from chainsmith.tools import tmdb\n"));
        assert!(code.contains("print(tmdb.person(person_id=1)[\"name\"])"));
    }

    #[test]
    fn unfenced_code_with_prose() {
        let reply = "Here you go.\nfrom chainsmith.tools import tmdb\nfound = tmdb.search_person(query=\"Sofia Coppola\")\nprint(found[\"results\"][0][\"id\"])\nHope this helps!";
        let code = extract(reply).unwrap().code;
        assert_eq!(
            code,
            "from chainsmith.tools import tmdb\nfound = tmdb.search_person(query=\"Sofia Coppola\")\nprint(found[\"results\"][0][\"id\"])\n"
        );
    }

    #[test]
    fn a_truncated_reply_keeps_its_complete_statements() {
        let reply = "```python\nfrom chainsmith.tools import tmdb\nfound = tmdb.search_person(query=\"a\")\ncredits = tmdb.person_movie_credits(person_id=found[\"resu";
        let e = extract(reply).unwrap();
        assert!(e.truncated);
        assert_eq!(e.code, "from chainsmith.tools import tmdb\nfound = tmdb.search_person(query=\"a\")\n");
    }

    #[test]
    fn no_code_at_all() {
        assert_eq!(extract("I cannot help with that, sorry."), None);
        assert_eq!(extract("```python\n\n```"), None);
    }
}
