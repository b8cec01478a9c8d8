//! The probing tests' common ground: a native toolset over the runtime test server's undocumented
//! vault endpoints (one needs the ID another hands out, one writes), and the scripted LLM that
//! probes them as a model would, answering by request content.

#![allow(dead_code)]

use std::time::Duration;

use serde_json::Value;

use super::openai::{Answer, Server};

pub const VAULT_TOOLSET: &str = r#"{
  // Written by hand; probing must keep this comment and the layout.
  "chainsmith": "toolset/1",
  "name": "vault",
  "tools": [
    {
      "name": "search_vaults",
      "description": "Searches vaults by title.",
      "http": {"method": "GET", "path": "/undocumented/vaults/search"},
      "parameters": {"query": {"type": "string", "required": true}}
    },
    {
      "name": "vault_details",
      "description": "One vault, by the ID a search gives.",
      "http": {"method": "GET", "path": "/undocumented/vaults/{vault_id}"},
      "parameters": {"vault_id": {"type": "string", "required": true}}
    },
    {
      "name": "lock_vault",
      "description": "Locks a vault.",
      "http": {"method": "POST", "path": "/undocumented/vaults/{vault_id}/lock"},
      "parameters": {"vault_id": {"type": "string", "required": true}}
    }
  ]
}
"#;

/// The probe request's target (`Probe target: toolset.name`) and whether it offers prerequisites;
/// `None` for a prerequisite-selection request.
pub fn target_of(body: &Value) -> Option<(String, bool)> {
    let first = body["messages"][1]["content"].as_str().unwrap_or("");
    let target = first.strip_prefix("Probe target: ")?.lines().next()?.trim().to_string();
    Some((target, first.contains("Prerequisite tools")))
}

pub fn is_selection(body: &Value) -> bool {
    body["messages"][1]["content"].as_str().unwrap_or("").starts_with("Prerequisite selection for")
}

pub fn program(question: &str, code: &str) -> Answer {
    Answer::text(format!("Question: {question}\n```python\n{code}\n```"))
}

/// The probing LLM: search first, details with the searched ID (a guessed ID without
/// prerequisites). `delay` slows every answer; with a delay the search is never probed usefully, so
/// a probe stays under way long enough to be cancelled.
pub fn vault_llm(delay: Duration) -> Server {
    Server::start(move |body, _| {
        std::thread::sleep(delay);
        if is_selection(body) {
            return Answer::text("The vault ID comes from the search: [\"vault.search_vaults\"]");
        }
        match target_of(body) {
            Some((t, _)) if t == "vault.search_vaults" && delay.is_zero() => program(
                "Which vaults are titled Archive?",
                "from chainsmith.tools import vault\nprint(vault.search_vaults(query=\"Archive\"))",
            ),
            Some((t, true)) if t == "vault.vault_details" => program(
                "What is in the Archive vault?",
                "from chainsmith.tools import vault\nfound = vault.search_vaults(query=\"Archive\")\nprint(vault.vault_details(vault_id=found[\"results\"][0][\"vault_id\"]))",
            ),
            Some((t, false)) if t == "vault.vault_details" => program(
                "What is in vault 1?",
                "from chainsmith.tools import vault\nprint(vault.vault_details(vault_id=\"1\"))",
            ),
            _ => Answer::text("I cannot help with that."),
        }
    })
}
