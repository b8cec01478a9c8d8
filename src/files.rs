//! Files a workspace may have booby-trapped: the one door chainsmith reads through and the one it
//! writes through. Reading: every file — protocol files, chainsmith.toml, `.chainsmith/` state,
//! files the user names, Python sources — is read only when it is a regular file of bounded size
//! ([`read_text`], [`read_bytes`], [`read_python`]): a path naming `/dev/zero` or a FIFO is an
//! error, not an endless read or a hang. Writing: stubs, probed schemas, overlays, traces and
//! ToolNet's store go only where they are meant to, whatever symbolic links the folder holds.
//!
//! [`write_inside`] creates the folders it needs, refuses a destination whose folder resolves
//! outside `boundary` (a planted `typings/chainsmith -> /home/me/.config` link), and replaces the
//! file by renaming a fresh temporary file over it — so a planted link at the file itself is
//! replaced, never followed, and a reader never sees half a file. [`append_line`] appends the
//! same way (eval results), never through a link at the file or to a file with other names. Both
//! write through the folder as opened by a walk from the boundary that follows no link, so a
//! folder swapped for a link between the check and the write is refused.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The largest protocol file read (256 MiB; Microsoft Graph's whole OpenAPI document is ~35 MiB).
pub const MAX_READ: u64 = 256 << 20;

/// The largest Python source read from disk (64 MiB).
pub const MAX_SOURCE: u64 = 64 << 20;

/// Why a file was not read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("not a regular file (a {0}); only files can be read")]
    NotAFile(&'static str),
    #[error("larger than the {} MiB limit ({size} bytes)", limit >> 20)]
    TooLarge { size: u64, limit: u64 },
    #[error("not UTF-8 text (invalid byte at offset {0})")]
    NotUtf8(usize),
    #[error("JSON of more than {limit} values ({count} at least); parsed, it would take gigabytes")]
    TooManyValues { count: usize, limit: usize },
}

impl ReadError {
    pub fn not_found(&self) -> bool {
        matches!(self, ReadError::Io(e) if e.kind() == std::io::ErrorKind::NotFound)
    }
}

/// The text of `path` when it is a regular file of at most `limit` bytes holding UTF-8 (see
/// [`read_bytes`]).
pub fn read_text(path: &Path, limit: u64) -> Result<String, ReadError> {
    let bytes = read_bytes(path, limit)?;
    String::from_utf8(bytes).map_err(|e| ReadError::NotUtf8(e.utf8_error().valid_up_to()))
}

/// The bytes of `path` when it is a regular file of at most `limit` bytes. Opening does not block
/// on a FIFO, and a file growing while it is read stops at the limit.
pub fn read_bytes(path: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
    read_opened(open_for_reading(path)?, limit)
}

/// `path` opened for reading as [`read_bytes`] opens it: never blocking on a FIFO.
fn open_for_reading(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path)
}

/// The bytes of an opened file when it is a regular file of at most `limit` bytes.
fn read_opened(file: std::fs::File, limit: u64) -> Result<Vec<u8>, ReadError> {
    use std::io::Read;
    use std::os::unix::fs::FileTypeExt;
    let metadata = file.metadata()?;
    let kind = metadata.file_type();
    if !kind.is_file() {
        let what = if kind.is_dir() {
            "folder"
        } else if kind.is_fifo() {
            "FIFO"
        } else if kind.is_socket() {
            "socket"
        } else if kind.is_char_device() || kind.is_block_device() {
            "device"
        } else {
            "special file"
        };
        return Err(ReadError::NotAFile(what));
    }
    if metadata.len() > limit {
        return Err(ReadError::TooLarge { size: metadata.len(), limit });
    }
    let mut bytes = Vec::with_capacity(metadata.len() as usize);
    file.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(ReadError::TooLarge { size: bytes.len() as u64, limit });
    }
    Ok(bytes)
}

/// `a/./b/../c` → `a/c`, without touching the file system (a link is not followed).
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            std::path::Component::CurDir => {}
            // `..` above the root is the root (as the kernel reads it); above the start of a
            // relative path, or after another such `..`, it stays.
            std::path::Component::ParentDir => match out.components().next_back() {
                Some(std::path::Component::Normal(_)) => {
                    out.pop();
                }
                Some(std::path::Component::RootDir | std::path::Component::Prefix(_)) => {}
                _ => out.push(".."),
            },
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// A workspace's root as paths judged by where they lead compare it: absolute, and real where it
/// exists.
pub fn real_root(root: &Path) -> Option<PathBuf> {
    let root = std::path::absolute(root).ok()?;
    Some(std::fs::canonicalize(&root).unwrap_or(root))
}

/// Where an opened file lies, as the kernel names it (`/proc/self/fd/N`): an error where it
/// cannot (`ENAMETOOLONG` past the length a path can have) or there is no `/proc` to ask.
pub fn real_path_of(file: &std::fs::File) -> std::io::Result<PathBuf> {
    std::fs::read_link(fd_path(file))
}

/// The path that reaches an opened file through its descriptor (`/proc/self/fd/N`).
pub fn fd_path(file: &std::fs::File) -> PathBuf {
    use std::os::fd::AsRawFd;
    PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()))
}

/// A workspace's program as chainsmith reads it to run or fix it: [`read_python`]'s text, read
/// through the file opened and judged. A program given inside the workspace `root` (its folder
/// lies there, however the paths are spelt) whose file leads outside it (`tool.py ->
/// ~/.ssh/id_ed25519`), or lies where the kernel cannot name it, is refused: the run, the fix or
/// the editor would hand another file's text to the workspace's code (a `traceback.py` it ships
/// reads the run's copy).
pub fn read_program(path: &Path, root: &Path) -> Result<String, String> {
    let file = open_for_reading(path).map_err(|e| e.to_string())?;
    judge_program(&file, path, root)?;
    decode_python(read_opened(file, MAX_SOURCE).map_err(|e| e.to_string())?)
}

/// Why the program at `path` may not run (see [`read_program`]): the editor's open document is
/// judged too, its text taken from the editor.
pub fn program_refusal(path: &Path, root: &Path) -> Option<String> {
    let file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_PATH).open(path).ok()?;
    judge_program(&file, path, root).err()
}

/// Whether the opened program may run: given inside the workspace `root` (as written — `sub/p.py`
/// with `sub` a link out of it — or as its folder resolves), it must lie inside it.
fn judge_program(file: &std::fs::File, path: &Path, root_given: &Path) -> Result<(), String> {
    let root = real_root(root_given).ok_or_else(|| format!("{}: no such workspace", root_given.display()))?;
    let absolute = std::path::absolute(path).map_err(|e| e.to_string())?;
    let written_inside =
        std::path::absolute(root_given).is_ok_and(|given| normalize(&absolute).starts_with(normalize(&given)));
    let folder = absolute.parent().and_then(|folder| folder.canonicalize().ok());
    if !written_inside && !folder.is_some_and(|folder| folder.starts_with(&root)) {
        return Ok(());
    }
    match real_path_of(file) {
        Ok(real) if real.starts_with(&root) => Ok(()),
        Ok(real) => Err(format!(
            "{} leads outside the workspace, to {}: a workspace's program runs only from inside it",
            path.display(),
            real.display()
        )),
        Err(e) => Err(format!(
            "where {} leads cannot be told ({e}): a workspace's program runs only from inside it",
            path.display()
        )),
    }
}

/// A Python source file's text: a regular file of at most [`MAX_SOURCE`] bytes, decoded as
/// [`decode_python`] does; the reason when it cannot be.
pub fn read_python(path: &Path) -> Result<String, String> {
    let bytes = read_bytes(path, MAX_SOURCE).map_err(|e| e.to_string())?;
    decode_python(bytes)
}

/// A Python source's text: UTF-8, else decoded by its PEP 263 coding line (`# -*- coding: latin-1
/// -*-` in its first two lines); the reason when neither works.
pub fn decode_python(bytes: Vec<u8>) -> Result<String, String> {
    let bytes = match String::from_utf8(bytes) {
        Ok(text) => return Ok(text),
        Err(e) => e.into_bytes(),
    };
    let declared = bytes.split(|&b| b == b'\n').take(2).find_map(|line| {
        let line = String::from_utf8_lossy(line);
        let comment = &line[line.find('#')?..];
        let at = comment.find("coding")? + "coding".len();
        let rest = comment[at..].strip_prefix([':', '='])?.trim_start();
        let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.')).collect();
        (!name.is_empty()).then_some(name)
    });
    let Some(name) = declared else {
        let at = std::str::from_utf8(&bytes).err().map_or(0, |e| e.valid_up_to());
        return Err(format!("not UTF-8 (invalid byte at offset {at}) and no coding line declares another encoding"));
    };
    // Python spells some encodings differently from the WHATWG labels (`latin-1`, `iso_8859_1`).
    let lower = name.to_ascii_lowercase();
    let encoding = [lower.clone(), lower.replace('_', "-"), lower.replace(['-', '_'], "")]
        .iter()
        .find_map(|label| encoding_rs::Encoding::for_label(label.as_bytes()))
        .ok_or_else(|| format!("its coding line names `{name}`, an encoding chainsmith does not know"))?;
    let (text, _, had_errors) = encoding.decode(&bytes);
    if had_errors {
        return Err(format!("not valid {name}"));
    }
    Ok(text.into_owned())
}

/// The most values a JSON document from a workspace or a tool is parsed with (1 million). Parsed,
/// a value takes up to ~330 bytes, so a file or answer well under the size limits made of tiny
/// values (`[{"a":[]},…]`, 3 bytes a value) would otherwise grow to many gigabytes.
pub const MAX_JSON_VALUES: usize = 1_000_000;

/// The most values chainsmith's own records are read with (4 million): traces (each answer in one
/// cut to 1 MiB) and the ToolNet store grow with use, past what a planted overlay may hold.
pub const MAX_RECORD_VALUES: usize = 4 * MAX_JSON_VALUES;

/// How many values the JSON `text` holds, counted without parsing (every array and object, and
/// one more for each `,` outside strings and comments: an estimate, high by one for each empty
/// array or object), up to `stop`. Comments (`//…`, `/*…*/`), which protocol files may hold,
/// are skipped: a quote in one would otherwise hide what follows from the count.
pub fn json_values(text: &[u8], stop: usize) -> usize {
    #[derive(PartialEq)]
    enum In {
        Code,
        String { escaped: bool },
        LineComment,
        BlockComment,
    }
    let (mut count, mut state) = (1, In::Code);
    let mut bytes = text.iter().copied().peekable();
    while let Some(b) = bytes.next() {
        state = match state {
            In::String { escaped: true } => In::String { escaped: false },
            In::String { escaped: false } => match b {
                b'\\' => In::String { escaped: true },
                b'"' => In::Code,
                _ => In::String { escaped: false },
            },
            // Ended by either line break, as the parser ends it: one ended only at `\n` hid a
            // document after `//\r` from the count.
            In::LineComment => {
                if matches!(b, b'\n' | b'\r') {
                    In::Code
                } else {
                    In::LineComment
                }
            }
            In::BlockComment => {
                if b == b'*' && bytes.peek() == Some(&b'/') {
                    bytes.next();
                    In::Code
                } else {
                    In::BlockComment
                }
            }
            In::Code => match (b, bytes.peek()) {
                (b'"', _) => In::String { escaped: false },
                (b'/', Some(b'/')) => In::LineComment,
                (b'/', Some(b'*')) => {
                    bytes.next();
                    In::BlockComment
                }
                (b'[' | b'{' | b',', _) => {
                    count += 1;
                    if count > stop {
                        break;
                    }
                    In::Code
                }
                _ => In::Code,
            },
        };
    }
    count
}

/// The text of the JSON file `path`, read as [`read_text`] reads, refused when it holds more than
/// `max_values` values.
pub fn read_json_text(path: &Path, limit: u64, max_values: usize) -> Result<String, ReadError> {
    within_values(read_text(path, limit)?, max_values)
}

/// `text` when it holds at most `max_values` JSON values.
fn within_values(text: String, max_values: usize) -> Result<String, ReadError> {
    let count = json_values(text.as_bytes(), max_values);
    if count > max_values {
        return Err(ReadError::TooManyValues { count, limit: max_values });
    }
    Ok(text)
}

/// [`read_json_text`] of a file chainsmith keeps in the workspace `root` itself (its
/// `.chainsmith/` state: the ToolNet store, run traces, evaluation results), judged by where the
/// opened file lies (opened `O_PATH` first, so a device outside is never opened): a link planted
/// in its place or in place of `.chainsmith` that leads out of the workspace would have another
/// file read as this workspace's own (another project's store, made-up results, a file of the
/// user's quoted in an error), and is refused. (Writes never go through such a link either:
/// [`write_inside`] replaces a link at the file and refuses a folder that leads outside.)
pub fn read_state(root: &Path, path: &Path, limit: u64, max_values: usize) -> Result<String, ReadError> {
    let judged = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_PATH).open(path)?;
    let real = real_path_of(&judged)?;
    let inside =
        real_root(root).ok_or_else(|| std::io::Error::other(format!("{}: no such workspace", root.display())))?;
    if !real.starts_with(&inside) {
        return Err(std::io::Error::other(format!(
            "it leads outside the workspace, to {}, where chainsmith keeps none of its files; not read",
            real.display()
        ))
        .into());
    }
    within_values(read_text(&fd_path(&judged), limit)?, max_values)
}

/// chainsmith's folder in the user's cache (`$XDG_CACHE_HOME/chainsmith`, else
/// `~/.cache/chainsmith`); `None` when neither variable names one.
pub fn user_cache_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir).join("chainsmith"));
    }
    let home = std::env::var_os("HOME").filter(|d| !d.is_empty())?;
    Some(PathBuf::from(home).join(".cache").join("chainsmith"))
}

/// The user chainsmith acts as: the effective user, who owns what it creates.
pub fn user_id() -> u32 {
    // SAFETY: geteuid cannot fail and touches no memory.
    unsafe { libc::geteuid() }
}

/// Whether what `meta` describes is the user's alone: theirs, and no one else may write it.
pub fn is_private(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    meta.uid() == user_id() && meta.mode() & 0o022 == 0
}

/// Why what `meta` describes is not the user's to take as their own — another user owns it, or
/// anyone may write it (so anyone could have put it there) — or `None` when it is theirs. Run as
/// root through `sudo`, the invoking user's files count as theirs too, as git judges a
/// repository's owner.
pub fn not_the_users(meta: &std::fs::Metadata) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let user = user_id();
    let sudo_user =
        || user == 0 && std::env::var("SUDO_UID").ok().and_then(|u| u.parse::<u32>().ok()) == Some(meta.uid());
    if meta.uid() != user && !sudo_user() {
        return Some(format!("it belongs to user {}, not to you (user {user})", meta.uid()));
    }
    if meta.mode() & 0o002 != 0 && !meta.file_type().is_symlink() {
        return Some("anyone may write it".into());
    }
    None
}

/// Why a write was refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("refusing to write {path}: its folder resolves to {resolved}, outside {boundary}")]
    Outside { path: PathBuf, resolved: PathBuf, boundary: PathBuf },
    /// (`why` is in the message and is not the error's source, so a chain of causes printed
    /// whole says it once.)
    #[error("cannot write {path}: {why}")]
    Io { path: PathBuf, why: std::io::Error },
}

/// A suffix for a temporary file's name that no other thread or process uses at the same time.
pub fn unique_suffix() -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    format!("{}.{}", std::process::id(), NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
}

/// Writes `contents` to `path`, which must resolve inside `boundary` (after following every link
/// in its folders); a link at `path` itself is replaced, not followed. Missing folders are made only
/// once the deepest existing one is known to resolve inside. The write goes through the folder as
/// opened by a walk from the boundary that follows no link ([`open_beneath`]), so a folder swapped
/// for a link after the check (by a program that may write in the workspace) is refused, not
/// written through.
pub fn write_inside(boundary: &Path, path: &Path, contents: &[u8]) -> Result<(), WriteError> {
    write_with_mode(boundary, path, contents, None)
}

/// [`write_inside`], the new file given `mode` (else 0644 less the umask).
fn write_with_mode(boundary: &Path, path: &Path, contents: &[u8], mode: Option<u32>) -> Result<(), WriteError> {
    let io = |why| WriteError::Io { path: path.to_path_buf(), why };
    let folder = open_folder_inside(boundary, path)?;
    let name = path.file_name().ok_or_else(|| io(std::io::Error::other("no file name")))?;
    let staging = std::ffi::OsString::from(format!(".{}.{}.tmp", name.to_string_lossy(), unique_suffix()));
    let mut file = open_at(&folder, &staging, libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL).map_err(io)?;
    let moded = match mode {
        Some(mode) => file.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(mode)),
        None => Ok(()),
    };
    let written = moded.and_then(|()| file.write_all(contents)).and_then(|()| file.sync_all());
    drop(file);
    if let Err(e) = written.and_then(|()| rename_at(&folder, &staging, name)) {
        let _ = unlink_at(&folder, &staging);
        return Err(io(e));
    }
    Ok(())
}

/// Writes a file the user named (a program to fix, `generate --out`) as [`write_inside`] writes —
/// inside `boundary` when the path lies beneath it (the workspace: a folder link planted there
/// leads nowhere outside), else within the file's own folder — keeping an existing file's
/// permissions, and refuses when the file is a symbolic link: a link planted in a repository
/// (`broken.py -> ~/.bashrc`) would otherwise have chainsmith overwrite what it points to.
pub fn write_named(boundary: &Path, path: &Path, contents: &[u8]) -> Result<(), WriteError> {
    use std::os::unix::fs::PermissionsExt;
    let existing = std::fs::symlink_metadata(path).ok();
    if existing.as_ref().is_some_and(|m| m.file_type().is_symlink()) {
        return Err(WriteError::Io { path: path.to_path_buf(), why: through_a_link() });
    }
    let absolute = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let folder = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let boundary = if absolute(path).starts_with(absolute(boundary)) { boundary } else { folder };
    write_with_mode(boundary, path, contents, existing.map(|m| m.permissions().mode() & 0o7777))
}

fn through_a_link() -> std::io::Error {
    std::io::Error::other("it is a symbolic link, which chainsmith does not write through")
}

/// `folder` (canonical, beneath the boundary's canonical path) opened by a walk from `boundary`
/// that follows no link: each component is opened as a directory with `O_NOFOLLOW`, so a component
/// that became a link since `folder` was resolved fails the walk (`ELOOP` or `ENOTDIR`) instead of
/// leading out of the boundary.
fn open_beneath(boundary: &Path, folder: &Path) -> std::io::Result<std::os::fd::OwnedFd> {
    let boundary = std::fs::canonicalize(boundary)?;
    let inside = folder
        .strip_prefix(&boundary)
        .map_err(|_| std::io::Error::other(format!("{} is not beneath {}", folder.display(), boundary.display())))?;
    let mut current: std::os::fd::OwnedFd =
        std::fs::OpenOptions::new().read(true).custom_flags(libc::O_DIRECTORY).open(&boundary)?.into();
    for component in inside.components() {
        let std::path::Component::Normal(name) = component else {
            return Err(std::io::Error::other(format!("{} is not a plain path", folder.display())));
        };
        current = open_at(&current, name, libc::O_RDONLY | libc::O_DIRECTORY)?.into();
    }
    Ok(current)
}

/// Makes a FIFO at `path`, readable and writable by the user alone.
pub fn make_fifo(path: &Path) -> std::io::Result<()> {
    let name = c_name(path.as_os_str())?;
    // SAFETY: mkfifo reads a NUL-terminated path.
    if unsafe { libc::mkfifo(name.as_ptr(), 0o600) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

fn c_name(name: &std::ffi::OsStr) -> std::io::Result<std::ffi::CString> {
    use std::os::unix::ffi::OsStrExt;
    std::ffi::CString::new(name.as_bytes()).map_err(std::io::Error::other)
}

/// `name` in the folder `dir`, opened with `flags` and never through a link.
fn open_at(dir: &std::os::fd::OwnedFd, name: &std::ffi::OsStr, flags: libc::c_int) -> std::io::Result<std::fs::File> {
    use std::os::fd::{AsRawFd, FromRawFd};
    let name = c_name(name)?;
    // SAFETY: openat on an open folder and a NUL-terminated name; the result is owned here.
    let fd = unsafe { libc::openat(dir.as_raw_fd(), name.as_ptr(), flags | libc::O_NOFOLLOW | libc::O_CLOEXEC, 0o644) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fd was just opened and is owned by nothing else.
    Ok(unsafe { std::fs::File::from_raw_fd(fd) })
}

fn rename_at(dir: &std::os::fd::OwnedFd, from: &std::ffi::OsStr, to: &std::ffi::OsStr) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let (from, to) = (c_name(from)?, c_name(to)?);
    // SAFETY: renameat within one open folder, on NUL-terminated names.
    if unsafe { libc::renameat(dir.as_raw_fd(), from.as_ptr(), dir.as_raw_fd(), to.as_ptr()) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

fn unlink_at(dir: &std::os::fd::OwnedFd, name: &std::ffi::OsStr) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let name = c_name(name)?;
    // SAFETY: unlinkat in an open folder, on a NUL-terminated name.
    if unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), 0) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// The folder of `path`, made when missing, opened: it must lie inside `boundary` after every link
/// is followed. The deepest existing folder is checked, then opened by a walk from the boundary
/// that follows no link ([`open_beneath`]), and the missing ones are made and opened one by one
/// beneath it (`mkdirat`, then `openat` with `O_NOFOLLOW`) — so a folder swapped for a link at any
/// moment is refused, and no folder is ever made through one.
fn open_folder_inside(boundary: &Path, path: &Path) -> Result<std::os::fd::OwnedFd, WriteError> {
    let io = |why| WriteError::Io { path: path.to_path_buf(), why };
    let folder = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let canonical_boundary = std::fs::canonicalize(boundary).map_err(io)?;
    let existing =
        folder.ancestors().find(|a| a.as_os_str().is_empty() || a.symlink_metadata().is_ok()).unwrap_or(folder);
    let missing = folder.strip_prefix(existing).unwrap_or(Path::new(""));
    let existing = if existing.as_os_str().is_empty() { Path::new(".") } else { existing };
    let resolved = std::fs::canonicalize(existing).map_err(io)?;
    if !resolved.starts_with(&canonical_boundary) {
        return Err(WriteError::Outside { path: path.to_path_buf(), resolved, boundary: canonical_boundary });
    }
    let mut current = open_beneath(boundary, &resolved).map_err(io)?;
    for component in missing.components() {
        let std::path::Component::Normal(name) = component else {
            return Err(io(std::io::Error::other(format!("{} is not a plain path", folder.display()))));
        };
        match make_folder_at(&current, name) {
            Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => return Err(io(e)),
            _ => {}
        }
        current = open_at(&current, name, libc::O_RDONLY | libc::O_DIRECTORY).map_err(io)?.into();
    }
    Ok(current)
}

fn make_folder_at(dir: &std::os::fd::OwnedFd, name: &std::ffi::OsStr) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let name = c_name(name)?;
    // SAFETY: mkdirat in an open folder, on a NUL-terminated name.
    if unsafe { libc::mkdirat(dir.as_raw_fd(), name.as_ptr(), 0o755) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Appends `line` and a newline to the regular file `path`, creating it when missing. A link at
/// `path` itself is not followed, and with a `boundary` the file's folder must resolve inside it
/// (a planted `.chainsmith/eval -> /home/me` link is refused, not written through); missing folders
/// are made.
pub fn append_line(boundary: Option<&Path>, path: &Path, line: &str) -> Result<(), WriteError> {
    let io = |why| WriteError::Io { path: path.to_path_buf(), why };
    let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_APPEND | libc::O_NONBLOCK;
    let opened = match boundary {
        Some(boundary) => {
            let folder = open_folder_inside(boundary, path)?;
            open_at(&folder, path.file_name().unwrap_or_default(), flags)
        }
        None => {
            if let Some(folder) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                std::fs::create_dir_all(folder).map_err(io)?;
            }
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
                .mode(0o644)
                .open(path)
        }
    };
    let mut file = opened.map_err(|e| match e.raw_os_error() {
        Some(libc::ELOOP) => io(through_a_link()),
        _ => io(e),
    })?;
    let meta = file.metadata().map_err(io)?;
    if !meta.is_file() {
        return Err(io(std::io::Error::other("not a regular file")));
    }
    // Another name of the same file (a hard link planted to a file of the user's elsewhere).
    if std::os::unix::fs::MetadataExt::nlink(&meta) > 1 {
        return Err(io(std::io::Error::other(
            "it has other names (a hard link), which chainsmith does not write through",
        )));
    }
    file.write_all(format!("{line}\n").as_bytes()).map_err(io)
}

/// The folders read by an allow list: the user's home folders and the temporary ones, which hold
/// other programs' private files (a Kerberos ticket cache, another run's folder, an editor's swap
/// files), as real paths.
pub fn private_folders() -> Vec<PathBuf> {
    let temporary = [Some(std::env::temp_dir()), Some(PathBuf::from("/tmp")), Some(PathBuf::from("/var/tmp"))];
    let mut folders = home_folders();
    folders.extend(temporary.into_iter().flatten().filter_map(|folder| folder.canonicalize().ok()));
    folders.sort();
    folders.dedup();
    folders
}

/// The user's home folders, as real paths: the one the environment names, and the account's own
/// where it names another (or none): a run's environment need not be the user's.
pub fn home_folders() -> Vec<PathBuf> {
    let mut homes: Vec<PathBuf> = [std::env::var_os("HOME").map(PathBuf::from), account_home()]
        .into_iter()
        .flatten()
        .filter_map(|home| home.canonicalize().ok())
        .collect();
    homes.dedup();
    homes
}

/// The home folder of the account chainsmith runs as (from the password database).
fn account_home() -> Option<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    // SAFETY: a plain C struct, all integers and pointers, for which zero is a valid value.
    let mut entry: libc::passwd = unsafe { std::mem::zeroed() };
    let mut buffer = vec![0 as libc::c_char; 16 << 10];
    let mut found: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: getpwuid_r writes the entry into `entry`, its strings into `buffer` (of the length
    // given), and `found` points at `entry` or is null.
    let rc = unsafe { libc::getpwuid_r(libc::getuid(), &mut entry, buffer.as_mut_ptr(), buffer.len(), &mut found) };
    if rc != 0 || found.is_null() || entry.pw_dir.is_null() {
        return None;
    }
    // SAFETY: pw_dir points at a NUL-terminated string inside `buffer`, alive here.
    let dir = unsafe { std::ffi::CStr::from_ptr(entry.pw_dir) };
    Some(PathBuf::from(std::ffi::OsStr::from_bytes(dir.to_bytes())))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lexical `..`: the folder above the one before it, the root above the root, and kept where
    /// a relative path climbs above its start.
    #[test]
    fn paths_are_normalized_without_the_file_system() {
        for (path, normal) in
            [("a/./b/../c", "a/c"), ("/../x", "/x"), ("/a/../../b", "/b"), ("../../a", "../../a"), ("a/../..", "..")]
        {
            assert_eq!(normalize(Path::new(path)), PathBuf::from(normal), "{path}");
        }
    }

    #[test]
    fn only_regular_files_of_bounded_size_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let c_path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
        assert!(matches!(read_text(&fifo, MAX_READ), Err(ReadError::NotAFile("FIFO"))));
        assert!(matches!(read_text(Path::new("/dev/zero"), MAX_READ), Err(ReadError::NotAFile("device"))));
        assert!(matches!(read_text(dir.path(), MAX_READ), Err(ReadError::NotAFile("folder"))));
        let big = dir.path().join("big.json");
        std::fs::write(&big, "x".repeat(100)).unwrap();
        assert!(matches!(read_text(&big, 99), Err(ReadError::TooLarge { size: 100, limit: 99 })));
        assert_eq!(read_text(&big, 100).unwrap().len(), 100);
        std::fs::write(&big, b"ok \xff").unwrap();
        assert!(matches!(read_text(&big, MAX_READ), Err(ReadError::NotUtf8(3))));
        assert!(read_text(&dir.path().join("missing"), MAX_READ).unwrap_err().not_found());
    }

    #[test]
    fn json_values_are_counted_outside_strings() {
        assert_eq!(json_values(b"1", 100), 1);
        assert_eq!(
            json_values(br#"[{"a":[]},{"a":[]}]"#, 100),
            7,
            "one more than the five, an estimate that errs high"
        );
        assert_eq!(json_values(br#"{"a,b": "[{,\"x,"}"#, 100), 2, "commas and brackets in strings do not count");
        assert_eq!(json_values(&b"[],".repeat(1000), 10), 11, "counting stops past the limit");
        // A quote in a comment hides nothing that follows.
        assert_eq!(json_values(b"// \"\n[0,0,0]", 100), 4);
        assert_eq!(json_values(b"/* \" */ [0,0,0] /* , */", 100), 4);
        assert_eq!(json_values(b"//\r[0,0,0]", 100), 4, "a carriage return ends a line comment");
        assert_eq!(json_values(br#"["a/*", 0, "//", 0]"#, 100), 5, "comment marks in strings are text");
        let dir = tempfile::tempdir().unwrap();
        let tiny = dir.path().join("tiny.json");
        std::fs::write(&tiny, format!("[{}[]]", "[],".repeat(MAX_JSON_VALUES))).unwrap();
        assert!(matches!(read_json_text(&tiny, MAX_READ, MAX_JSON_VALUES), Err(ReadError::TooManyValues { .. })));
        std::fs::write(&tiny, format!("[{}[]]", "[],".repeat(1000))).unwrap();
        assert!(read_json_text(&tiny, MAX_READ, MAX_JSON_VALUES).is_ok());
    }

    #[test]
    fn lines_are_appended_only_to_regular_files_inside() {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let results = root.path().join(".chainsmith/eval/full.jsonl");
        append_line(Some(root.path()), &results, "{\"index\": 0}").unwrap();
        append_line(Some(root.path()), &results, "{\"index\": 1}").unwrap();
        assert_eq!(std::fs::read_to_string(&results).unwrap(), "{\"index\": 0}\n{\"index\": 1}\n");

        // A link at the file itself, to a file of the user's: refused, the file untouched.
        let victim = outside.path().join("victim");
        std::fs::write(&victim, "mine\n").unwrap();
        let linked = root.path().join(".chainsmith/eval/linked.jsonl");
        std::os::unix::fs::symlink(&victim, &linked).unwrap();
        let refused = append_line(Some(root.path()), &linked, "x").unwrap_err().to_string();
        assert!(refused.contains("symbolic link"), "{refused}");
        // A folder linked out of the workspace: refused before anything is made there.
        std::os::unix::fs::symlink(outside.path(), root.path().join(".chainsmith/out")).unwrap();
        let through = root.path().join(".chainsmith/out/new/full.jsonl");
        assert!(matches!(append_line(Some(root.path()), &through, "x"), Err(WriteError::Outside { .. })));
        assert!(!outside.path().join("new").exists());
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "mine\n");
        // A FIFO is not a results file (and opening it does not wait for a reader).
        let fifo = root.path().join("fifo.jsonl");
        let c_path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
        assert!(append_line(None, &fifo, "x").is_err());
    }

    #[test]
    fn python_sources_are_decoded_by_their_coding_line() {
        assert_eq!(decode_python("café = 1\n".into()).unwrap(), "café = 1\n");
        let latin1 = b"# -*- coding: latin-1 -*-\nname = 'caf\xe9'\n".to_vec();
        assert_eq!(decode_python(latin1).unwrap(), "# -*- coding: latin-1 -*-\nname = 'café'\n");
        assert!(decode_python(b"x = '\xff'\n".to_vec()).unwrap_err().contains("no coding line"));
        assert!(decode_python(b"# coding: klingon\nx = '\xff'\n".to_vec()).unwrap_err().contains("klingon"));
    }

    /// A program that may write in the workspace swaps `.chainsmith/runs` with a link out of it,
    /// over and over, while chainsmith writes traces there: no write lands outside.
    #[test]
    fn a_folder_swapped_for_a_link_during_writes_is_never_written_through() {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let runs = root.path().join(".chainsmith/runs");
        std::fs::create_dir_all(&runs).unwrap();
        let link = root.path().join(".chainsmith/link");
        std::os::unix::fs::symlink(outside.path(), &link).unwrap();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let swapper = {
            let (stop, a, b) = (stop.clone(), c_name(runs.as_os_str()).unwrap(), c_name(link.as_os_str()).unwrap());
            std::thread::spawn(move || {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    // SAFETY: renameat2 on two NUL-terminated paths.
                    unsafe {
                        libc::renameat2(libc::AT_FDCWD, a.as_ptr(), libc::AT_FDCWD, b.as_ptr(), libc::RENAME_EXCHANGE)
                    };
                }
            })
        };
        let (mut written, mut refused) = (0, 0);
        for i in 0..400 {
            // Every other write also makes a folder, so making missing folders races too.
            let name = if i % 2 == 0 { format!("{i}.json") } else { format!("day-{i}/{i}.json") };
            match write_inside(root.path(), &runs.join(name), b"{}") {
                Ok(()) => written += 1,
                Err(_) => refused += 1,
            }
            append_line(Some(root.path()), &runs.join("log.jsonl"), "{}").ok();
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        swapper.join().unwrap();
        let landed: Vec<_> = std::fs::read_dir(outside.path()).unwrap().flatten().map(|e| e.file_name()).collect();
        assert_eq!(landed, Vec::<std::ffi::OsString>::new(), "{written} written, {refused} refused");
        // Whichever way the swapping left the two names, a write now goes to the real folder.
        let real = if std::fs::symlink_metadata(&runs).unwrap().is_dir() { &runs } else { &link };
        write_inside(root.path(), &real.join("last.json"), b"{}").unwrap();
        assert!(real.join("last.json").is_file());
    }

    #[test]
    fn a_hard_link_to_a_file_elsewhere_is_not_appended_to() {
        let root = tempfile::tempdir().unwrap();
        let victim = root.path().join("victim.txt");
        std::fs::write(&victim, "mine\n").unwrap();
        let results = root.path().join(".chainsmith/eval/full.jsonl");
        std::fs::create_dir_all(results.parent().unwrap()).unwrap();
        std::fs::hard_link(&victim, &results).unwrap();
        let refused = append_line(Some(root.path()), &results, "x").unwrap_err().to_string();
        assert!(refused.contains("hard link"), "{refused}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "mine\n");
    }

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
