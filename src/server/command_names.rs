//! The names of the commands the server carries out (`workspace/executeCommand`), written once:
//! the code lenses and code actions that carry them, the dispatch that reads them, the task layer
//! that titles its progress with them and the capabilities that advertise them must agree, and
//! the editors (`editors/`) send these exact strings (a test compares their lists with
//! [`COMMANDS`]). It sits at the bottom of `server/` so every part of the server can name them.

pub const RUN: &str = "chainsmith.run";
pub const GENERATE: &str = "chainsmith.generate";
pub const FIX: &str = "chainsmith.fix";
pub const PLAN: &str = "chainsmith.plan";
pub const PROBE: &str = "chainsmith.probe";
pub const PROBE_ALL: &str = "chainsmith.probeAll";
pub const GRAPH: &str = "chainsmith.graph";
pub const TRUST_WORKSPACE: &str = "chainsmith.trustWorkspace";
pub const ACCEPT_OBSERVED: &str = "chainsmith.acceptObserved";
pub const WRITE_STUBS: &str = "chainsmith.writeStubs";

/// Every command, as `initialize` advertises them.
pub const COMMANDS: [&str; 10] =
    [RUN, GENERATE, FIX, PLAN, PROBE, PROBE_ALL, GRAPH, TRUST_WORKSPACE, ACCEPT_OBSERVED, WRITE_STUBS];

#[cfg(test)]
mod tests {
    //! The editors (`editors/`) write the names in their own languages; these tests read their
    //! lists so a command added, renamed or dropped here cannot drift from what they send.

    use std::collections::BTreeSet;

    use super::COMMANDS;

    fn editor_file(path: &str) -> String {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("editors").join(path);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    /// Every quoted string that follows `key` (`id: "…"`, `id = "…"`) in `text`.
    fn quoted_after(text: &str, key: &str) -> BTreeSet<String> {
        text.match_indices(key)
            .filter_map(|(at, _)| {
                let rest = text[at + key.len()..].strip_prefix('"')?;
                Some(rest[..rest.find('"')?].to_string())
            })
            .collect()
    }

    fn ours() -> BTreeSet<String> {
        COMMANDS.iter().map(|c| c.to_string()).collect()
    }

    #[test]
    fn the_vscode_extension_knows_every_command() {
        let commands_ts = editor_file("vscode/src/commands.ts");
        let listed = quoted_after(&commands_ts, "{ id: ");
        assert_eq!(listed, ours(), "SERVER_COMMANDS in editors/vscode/src/commands.ts");
        // The extension's own commands (restart, show output) are its business, not the server's.
        let client: BTreeSet<&str> = commands_ts
            .lines()
            .find(|l| l.contains("export const CLIENT_COMMANDS"))
            .map(|l| l.split('"').skip(1).step_by(2).collect())
            .unwrap_or_default();
        let manifest: serde_json::Value = serde_json::from_str(&editor_file("vscode/package.json")).unwrap();
        let contributed: BTreeSet<String> = manifest["contributes"]["commands"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|c| c["command"].as_str())
            .filter(|c| !client.contains(c))
            .map(str::to_string)
            .collect();
        assert_eq!(contributed, ours(), "contributes.commands in editors/vscode/package.json");
    }

    #[test]
    fn the_neovim_plugin_sends_only_commands_the_server_has() {
        let listed = quoted_after(&editor_file("neovim/lua/chainsmith/init.lua"), "id = ");
        assert!(!listed.is_empty(), "M.commands in editors/neovim/lua/chainsmith/init.lua lists no command");
        let ours = ours();
        let unknown: Vec<&String> = listed.difference(&ours).collect();
        assert!(
            unknown.is_empty(),
            "editors/neovim/lua/chainsmith/init.lua names commands the server lacks: {unknown:?}"
        );
    }
}
