//! Writing files a workspace may have booby-trapped: stubs, probed schemas and overlays go only
//! where they are meant to, whatever symbolic links the folder holds.
//!
//! [`write_inside`] creates the folders it needs, refuses a destination whose folder resolves
//! outside `boundary` (a planted `typings/chainsmith -> /home/me/.config` link), and replaces the
//! file by renaming a fresh temporary file over it — so a planted link at the file itself is
//! replaced, never followed, and a reader never sees half a file.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Why a write was refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("refusing to write {path}: its folder resolves to {resolved}, outside {boundary}")]
    Outside { path: PathBuf, resolved: PathBuf, boundary: PathBuf },
    #[error("cannot write {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
}

/// Writes `contents` to `path`, which must resolve inside `boundary` (after following every link
/// in its folders); a link at `path` itself is replaced, not followed.
pub fn write_inside(boundary: &Path, path: &Path, contents: &[u8]) -> Result<(), WriteError> {
    let io = |source| WriteError::Io { path: path.to_path_buf(), source };
    let folder = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(folder).map_err(io)?;
    let boundary = std::fs::canonicalize(boundary).map_err(io)?;
    let resolved = std::fs::canonicalize(folder).map_err(io)?;
    if !resolved.starts_with(&boundary) {
        return Err(WriteError::Outside { path: path.to_path_buf(), resolved, boundary });
    }
    let name = path.file_name().ok_or_else(|| io(std::io::Error::other("no file name")))?;
    let staging = resolved.join(format!(".{}.{}.tmp", name.to_string_lossy(), std::process::id()));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&staging)
        .map_err(io)?;
    let written = file.write_all(contents).and_then(|()| file.sync_all());
    drop(file);
    if let Err(e) = written.and_then(|()| std::fs::rename(&staging, resolved.join(name))) {
        let _ = std::fs::remove_file(&staging);
        return Err(io(e));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_out_of_the_boundary_are_refused_and_links_at_the_file_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let (inside, outside) = (dir.path().join("ws"), dir.path().join("elsewhere"));
        std::fs::create_dir_all(&inside).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("precious"), "keep").unwrap();

        write_inside(&inside, &inside.join("typings/a.pyi"), b"stub").unwrap();
        assert_eq!(std::fs::read_to_string(inside.join("typings/a.pyi")).unwrap(), "stub");

        std::os::unix::fs::symlink(&outside, inside.join("planted")).unwrap();
        let refused = write_inside(&inside, &inside.join("planted/precious"), b"pwned").unwrap_err();
        assert!(matches!(refused, WriteError::Outside { .. }), "{refused}");

        std::os::unix::fs::symlink(outside.join("precious"), inside.join("typings/b.pyi")).unwrap();
        write_inside(&inside, &inside.join("typings/b.pyi"), b"stub").unwrap();
        assert_eq!(std::fs::read_to_string(outside.join("precious")).unwrap(), "keep");
        assert!(!std::fs::symlink_metadata(inside.join("typings/b.pyi")).unwrap().file_type().is_symlink());
    }
}
