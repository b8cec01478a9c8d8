//! `chainsmith trust [--list | --revoke]`: what the workspace would run, trusted and recorded
//! ([`crate::trust`]); the trusted workspaces; forgetting the current one.

use std::io::Write;
use std::path::Path;

use anyhow::{Result, anyhow, bail};

use super::workspace_root;
use crate::config::Config;
use crate::text::printable;
use crate::toolset::loader;
use crate::trust::{self, Store};

/// `chainsmith trust`: prints every command the workspace names, every loosening of the sandbox
/// and every secret it would send where (and where each is declared), and records that it may —
/// exactly those: anything added or changed later is untrusted again.
pub fn trust(root: Option<&Path>, list: bool, revoke: bool) -> Result<u8> {
    let store = Store::open().map_err(|e| anyhow!("cannot find the trust file: {e}"))?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if list {
        let file = store.read().map_err(|e| anyhow!(e))?;
        if file.workspaces.is_empty() {
            writeln!(out, "no workspace is trusted ({})", store.path.display())?;
        }
        for (root, entry) in &file.workspaces {
            writeln!(out, "{root}")?;
            for command in &entry.commands {
                writeln!(out, "  {}: {}", printable(&command.from), printable(&command.command))?;
            }
        }
        return Ok(0);
    }
    let root = workspace_root(root, &[])?;
    if !root.is_dir() {
        bail!("workspace root {} is not a folder", root.display());
    }
    let canonical = trust::canonical_root(&root).map_err(|e| anyhow!(e))?;
    if revoke {
        let was = store.revoke(&canonical).map_err(|e| anyhow!(e))?;
        match was {
            true => writeln!(out, "{canonical} is no longer trusted")?,
            false => writeln!(out, "{canonical} was not trusted")?,
        }
        return Ok(0);
    }
    let commands = loader::commands(&Config::load(&root, None));
    store.trust(&canonical, &commands).map_err(|e| anyhow!(e))?;
    if commands.is_empty() {
        writeln!(
            out,
            "{canonical} names nothing to trust: no command, no loosened sandbox, no secret it sends, no toolset or model server on this machine or its private network"
        )?;
        return Ok(0);
    }
    writeln!(out, "trusted {canonical} with:")?;
    for command in &commands {
        writeln!(out, "  {}: {}", printable(&command.from), printable(&command.command))?;
    }
    writeln!(
        out,
        "recorded in {}; anything added or changed later is not trusted until `chainsmith trust` runs again",
        store.path.display()
    )?;
    Ok(0)
}
