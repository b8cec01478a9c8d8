//! The embedded `chainsmith` Python package: written once per content version to a cache folder
//! (`$XDG_CACHE_HOME/chainsmith/py-<hash>`, else `~/.cache/chainsmith/py-<hash>`, else
//! `chainsmith-cache-<uid>` in the temp folder, used only while it is the user's own and no one
//! else may write it) and put on the program's `PYTHONPATH`.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

/// (path relative to the package root, content).
const FILES: &[(&str, &str)] = &[
    ("chainsmith_run.py", include_str!("python/chainsmith_run.py")),
    ("chainsmith/__init__.py", include_str!("python/chainsmith/__init__.py")),
    ("chainsmith/_host.py", include_str!("python/chainsmith/_host.py")),
    ("chainsmith/_http.py", include_str!("python/chainsmith/_http.py")),
    ("chainsmith/tools/__init__.py", include_str!("python/chainsmith/tools/__init__.py")),
];

/// The script the interpreter runs; it runs the program.
pub const BOOT_SCRIPT: &str = "chainsmith_run.py";

/// FNV-1a over every file's path and content: the cache folder's version.
fn content_hash() -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for (path, content) in FILES {
        for byte in path.bytes().chain([0]).chain(content.bytes()).chain([0]) {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    }
    hash
}

/// Where the package is written. Without a home folder, the temp folder (shared by every user):
/// there a folder someone else made first, or may write, could hold a boot script of theirs that
/// chainsmith would run with the run's door in hand, so it is refused.
fn cache_base() -> Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    if let Some(dir) = crate::files::user_cache_dir() {
        return Ok(dir);
    }
    let uid = crate::files::user_id();
    let dir = std::env::temp_dir().join(format!("chainsmith-cache-{uid}"));
    match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e).with_context(|| format!("cannot create the cache folder {}", dir.display())),
    }
    let meta = std::fs::symlink_metadata(&dir).with_context(|| format!("cannot read {}", dir.display()))?;
    // Judged as found, not through a link: a planted link is what someone else made.
    if !meta.is_dir() || !crate::files::is_private(&meta) {
        bail!(
            "refusing to use {} for chainsmith's Python package: it is not a folder of yours that only you may write (HOME is not set; setting HOME or XDG_CACHE_HOME puts it there instead)",
            dir.display()
        );
    }
    Ok(dir)
}

/// The folder holding the package (to put on `PYTHONPATH`), written on first use. A folder is
/// written under a temporary name and renamed into place, so a half-written one is never used.
pub fn ensure() -> Result<PathBuf> {
    let dir = cache_base()?.join(format!("py-{:016x}", content_hash()));
    if dir.join(BOOT_SCRIPT).is_file() {
        return Ok(dir);
    }
    let parent = dir.parent().expect("the cache folder has a parent");
    std::fs::create_dir_all(parent).with_context(|| format!("cannot create the cache folder {}", parent.display()))?;
    let staging = parent.join(format!(".py-{:016x}-{}-{}", content_hash(), std::process::id(), super::unique_number()));
    write_files(&staging)?;
    match std::fs::rename(&staging, &dir) {
        Ok(()) => Ok(dir),
        // Another run won the race: its copy is identical.
        Err(_) if dir.join(BOOT_SCRIPT).is_file() => {
            let _ = std::fs::remove_dir_all(&staging);
            Ok(dir)
        }
        Err(e) => {
            let _ = std::fs::remove_dir_all(&staging);
            Err(e).with_context(|| format!("cannot write the chainsmith Python package to {}", dir.display()))
        }
    }
}

fn write_files(root: &Path) -> Result<()> {
    for (rel, content) in FILES {
        let path = root.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).with_context(|| format!("cannot create {}", parent.display()))?;
        }
        std::fs::write(&path, content).with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_package_is_written_once_and_complete() {
        let dir = ensure().unwrap();
        for (rel, content) in FILES {
            assert_eq!(std::fs::read_to_string(dir.join(rel)).unwrap(), *content, "{rel}");
        }
        assert_eq!(ensure().unwrap(), dir);
    }
}
