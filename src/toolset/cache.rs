//! The catalog cache: what a large protocol file loaded to — its tools, named schemas and
//! diagnostics — kept in `.chainsmith/cache/`, so a workspace opens without parsing its specs again.
//!
//! One entry per file (its slot is named by the toolset and path), used only when it was written
//! for exactly this text, this chainsmith version and these settings, and when every file the
//! protocol pulled in (bundled `$ref`s) still reads the same. Entries are MessagePack (rmp-serde,
//! self-describing, so the JSON values inside keep their shape) sealed by a BLAKE3 keyed hash whose
//! key is the user's own (`catalog.key` in chainsmith's cache folder, made on first use): a
//! workspace cannot ship an entry that would be believed, and a corrupt, stale or foreign entry is
//! ignored and rewritten. Files below [`MIN_BYTES`] load faster than an entry is read, and texts
//! the editor holds unsaved are never written (they change with every keystroke).

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::{Loaded, SourceKind, Tool};

/// Smaller protocol files are parsed every time: reading an entry would cost about as much.
pub const MIN_BYTES: usize = 64 * 1024;

/// Starts every entry; a new layout changes it.
const MAGIC: &[u8; 8] = b"CSCATLG4";

/// The seal of an entry: a keyed hash over what it was written for and what it holds.
const SEAL_BYTES: usize = 32;

/// Turns the cache off for one process (benchmarks of a cold start, a suspected stale entry).
pub const DISABLE_ENV: &str = "CHAINSMITH_NO_CACHE";

/// What one file's load depends on besides the files it pulls in.
pub struct Identity<'a> {
    pub file: &'a Path,
    pub toolset: &'a str,
    /// The protocol kind the configuration imposes, if any (else it is detected from the text).
    pub kind: Option<SourceKind>,
    pub max_bytes: u64,
    pub text: &'a str,
}

/// A file's load as it is stored: the kind and toolset name it was loaded as (detected and, for
/// a discovered native file, declared inside it), and what it produced.
#[derive(serde::Serialize, serde::Deserialize)]
struct Entry<Tools> {
    kind: SourceKind,
    name: String,
    schemas: std::sync::Arc<super::schema::Schemas>,
    diagnostics: Vec<crate::diagnostic::Diagnostic>,
    base_url: Option<String>,
    auth: Option<super::Auth>,
    description: String,
    /// `Vec<Tool>` when read, borrowed when written (a spec's tools are not copied to be stored).
    tools: Tools,
    /// Files the protocol pulled in, each with what reading it gave.
    pulled_in: Vec<(PathBuf, PulledIn)>,
    /// What parsing the file and those it pulled in drew from the load's values
    /// ([`super::doc::ParseBudget::drawn`]): read back, the load draws it again.
    values: u64,
}

/// What reading a file a protocol pulls in gave: the BLAKE3 hash of its text, or `None` when it
/// could not be read (the load then says so, and stays true only while the file stays unreadable).
pub type PulledIn = Option<[u8; 32]>;

/// What reading `path` gives, as an entry records it.
pub fn pulled_in(read: &Result<String, String>) -> PulledIn {
    read.as_ref().ok().map(|text| *blake3::hash(text.as_bytes()).as_bytes())
}

/// A load read back from the cache.
pub struct Hit {
    pub kind: SourceKind,
    pub name: String,
    pub loaded: Loaded,
    /// What the load drew from the values its files may hold when it was parsed.
    pub values: u64,
}

/// The cache of one workspace.
pub struct Cache {
    root: PathBuf,
    dir: PathBuf,
    key: [u8; 32],
}

impl Cache {
    /// The cache of the workspace at `root`; `None` when it is turned off or the user's key can
    /// be neither read nor made (then every file is parsed, as without a cache).
    pub fn open(root: &Path) -> Option<Cache> {
        if std::env::var_os(DISABLE_ENV).is_some() {
            return None;
        }
        let key = user_key()?;
        Some(Cache { root: root.to_path_buf(), dir: root.join(".chainsmith").join("cache"), key })
    }

    /// The stored load of this file, when it was written for exactly this identity and what it
    /// pulled in is unchanged (`read` reads those files as the workspace's load does).
    pub fn get(&self, id: &Identity<'_>, read: &dyn Fn(&Path) -> Result<String, String>) -> Option<Hit> {
        if id.text.len() < MIN_BYTES {
            return None;
        }
        let slot = self.slot(id);
        let bytes = crate::files::read_bytes(&slot, largest_entry(id)).ok()?;
        let (seal, payload) = bytes.strip_prefix(MAGIC.as_slice())?.split_at_checked(SEAL_BYTES)?;
        let seal: [u8; SEAL_BYTES] = seal.try_into().ok()?;
        // `blake3::Hash` compares in constant time.
        if blake3::Hash::from_bytes(seal) != self.seal(id, payload) {
            tracing::debug!("catalog cache: {} is stale or not ours; loading {}", slot.display(), id.file.display());
            return None;
        }
        let entry: Entry<Vec<Tool>> = match rmp_serde::from_slice(payload) {
            Ok(entry) => entry,
            Err(e) => {
                tracing::debug!("catalog cache: {} does not decode ({e})", slot.display());
                return None;
            }
        };
        for (path, recorded) in &entry.pulled_in {
            if pulled_in(&read(path)) != *recorded {
                tracing::debug!("catalog cache: {} changed since {} was cached", path.display(), id.file.display());
                return None;
            }
        }
        let mut tools = entry.tools;
        for tool in &mut tools {
            tool.schemas = entry.schemas.clone();
        }
        let loaded = Loaded {
            tools,
            schemas: entry.schemas,
            diagnostics: entry.diagnostics,
            base_url: entry.base_url,
            auth: entry.auth,
            description: entry.description,
        };
        Some(Hit { kind: entry.kind, name: entry.name, loaded, values: entry.values })
    }

    /// Stores a file's load for next time; failures only cost the next load its speed.
    pub fn put(
        &self,
        id: &Identity<'_>,
        kind: SourceKind,
        name: &str,
        loaded: &Loaded,
        pulled_in: Vec<(PathBuf, PulledIn)>,
        values: u64,
    ) {
        if id.text.len() < MIN_BYTES {
            return;
        }
        let entry = Entry {
            kind,
            name: name.to_string(),
            schemas: loaded.schemas.clone(),
            diagnostics: loaded.diagnostics.clone(),
            base_url: loaded.base_url.clone(),
            auth: loaded.auth.clone(),
            description: loaded.description.clone(),
            tools: loaded.tools.as_slice(),
            pulled_in,
            values,
        };
        let payload = match rmp_serde::to_vec(&entry) {
            Ok(payload) => payload,
            Err(e) => {
                tracing::debug!("catalog cache: {} not stored ({e})", id.file.display());
                return;
            }
        };
        if (MAGIC.len() + SEAL_BYTES + payload.len()) as u64 > largest_entry(id) {
            tracing::debug!("catalog cache: {} not stored (its entry would be too large)", id.file.display());
            return;
        }
        let mut bytes = Vec::with_capacity(MAGIC.len() + SEAL_BYTES + payload.len());
        bytes.extend_from_slice(MAGIC);
        bytes.extend_from_slice(self.seal(id, &payload).as_bytes());
        bytes.extend_from_slice(&payload);
        // Inside the workspace only: a planted link at `.chainsmith/cache` is not followed out.
        match crate::files::write_inside(&self.root, &self.slot(id), &bytes) {
            Ok(()) => tracing::debug!("catalog cache: {} stored", id.file.display()),
            Err(e) => tracing::debug!("catalog cache: {} not stored ({e})", id.file.display()),
        }
    }

    /// The entry's file: one per toolset and protocol file, so a changed file replaces its entry.
    fn slot(&self, id: &Identity<'_>) -> PathBuf {
        let mut hasher = blake3::Hasher::new_keyed(&self.key);
        hasher.update(b"slot\0");
        hasher.update(id.toolset.as_bytes());
        hasher.update(b"\0");
        hasher.update(id.file.as_os_str().as_bytes());
        self.dir.join(format!("catalog-{}.bin", &hasher.finalize().to_hex()[..32]))
    }

    /// The seal binds the entry to chainsmith's version, the identity and the payload.
    fn seal(&self, id: &Identity<'_>, payload: &[u8]) -> blake3::Hash {
        let mut hasher = blake3::Hasher::new_keyed(&self.key);
        let kind = id.kind.map(SourceKind::as_str).unwrap_or("detected");
        // The version and the sources it was built from: a build whose loaders differ never
        // believes another's entries.
        let build = concat!(env!("CARGO_PKG_VERSION"), "+", env!("CHAINSMITH_SOURCE_HASH"));
        for part in [build.as_bytes(), id.toolset.as_bytes(), id.file.as_os_str().as_bytes(), kind.as_bytes()] {
            hasher.update(&(part.len() as u64).to_le_bytes());
            hasher.update(part);
        }
        hasher.update(&id.max_bytes.to_le_bytes());
        hasher.update(&(id.text.len() as u64).to_le_bytes());
        hasher.update(id.text.as_bytes());
        hasher.update(payload);
        hasher.finalize()
    }
}

/// The largest entry read or written for a file: an entry is seldom much larger than its text, and
/// the bound keeps a giant out of memory.
fn largest_entry(id: &Identity<'_>) -> u64 {
    (id.text.len() as u64).saturating_mul(16).max(64 << 20)
}

/// The user's cache key, made (32 random bytes, readable only by the user) on first use.
fn user_key() -> Option<[u8; 32]> {
    // Never a shared temporary folder: another user could have put their key there.
    let path = crate::files::user_cache_dir()?.join("catalog.key");
    if let Some(key) = read_key(&path) {
        return Some(key);
    }
    let dir = path.parent()?;
    std::fs::create_dir_all(dir).ok()?;
    let mut key = [0u8; 32];
    {
        use std::io::Read;
        std::fs::File::open("/dev/urandom").ok()?.read_exact(&mut key).ok()?;
    }
    let temp = dir.join(format!(".catalog.key.{}", crate::files::unique_suffix()));
    {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&temp).ok()?;
        file.write_all(&key).ok()?;
    }
    // Two processes making a key at once: the first link wins and both use the winner's key.
    let _ = std::fs::hard_link(&temp, &path);
    let _ = std::fs::remove_file(&temp);
    read_key(&path)
}

fn read_key(path: &Path) -> Option<[u8; 32]> {
    crate::files::read_bytes(path, 32).ok()?.try_into().ok()
}

/// A value that may still be in its stored encoding: decoded on first use and kept. Reads and
/// writes go through `Deref` to the `Option<Value>`; one that does not decode (which the seal
/// rules out) reads as `None`.
#[derive(Default)]
pub struct Deferred {
    value: std::sync::OnceLock<Option<serde_json::Value>>,
    encoded: Option<std::sync::Arc<[u8]>>,
}

impl Deferred {
    /// Whether there is a value, without decoding it (MessagePack writes `None` as one `nil` byte).
    pub fn is_some(&self) -> bool {
        match (self.value.get(), &self.encoded) {
            (Some(value), _) => value.is_some(),
            (None, Some(encoded)) => encoded.as_ref() != [0xc0],
            (None, None) => false,
        }
    }

    pub fn is_none(&self) -> bool {
        !self.is_some()
    }

    fn decoded(&self) -> &Option<serde_json::Value> {
        self.value.get_or_init(|| {
            let encoded = self.encoded.as_deref().unwrap_or_default();
            rmp_serde::from_slice(encoded).unwrap_or_else(|e| {
                tracing::debug!("catalog cache: a stored value does not decode ({e})");
                None
            })
        })
    }
}

impl From<Option<serde_json::Value>> for Deferred {
    fn from(value: Option<serde_json::Value>) -> Self {
        Deferred { value: std::sync::OnceLock::from(value), encoded: None }
    }
}

impl std::ops::Deref for Deferred {
    type Target = Option<serde_json::Value>;
    fn deref(&self) -> &Self::Target {
        self.decoded()
    }
}

impl std::ops::DerefMut for Deferred {
    fn deref_mut(&mut self) -> &mut Self::Target {
        self.decoded();
        self.encoded = None;
        self.value.get_mut().expect("decoded just above")
    }
}

impl Clone for Deferred {
    fn clone(&self) -> Self {
        match self.value.get() {
            Some(value) => Deferred::from(value.clone()),
            None => Deferred { value: std::sync::OnceLock::new(), encoded: self.encoded.clone() },
        }
    }
}

impl PartialEq<Option<serde_json::Value>> for Deferred {
    fn eq(&self, other: &Option<serde_json::Value>) -> bool {
        self.decoded() == other
    }
}

impl std::fmt::Debug for Deferred {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.decoded().fmt(f)
    }
}

/// Stored as MessagePack bytes of its own, so reading an entry copies them without decoding.
impl serde::Serialize for Deferred {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match (self.value.get(), &self.encoded) {
            (None, Some(encoded)) => serializer.serialize_bytes(encoded),
            _ => {
                let encoded = rmp_serde::to_vec(self.decoded()).map_err(serde::ser::Error::custom)?;
                serializer.serialize_bytes(&encoded)
            }
        }
    }
}

impl<'de> serde::Deserialize<'de> for Deferred {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Bytes;
        impl serde::de::Visitor<'_> for Bytes {
            type Value = Deferred;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("the bytes of an encoded value")
            }
            fn visit_bytes<E: serde::de::Error>(self, bytes: &[u8]) -> Result<Deferred, E> {
                Ok(Deferred { value: std::sync::OnceLock::new(), encoded: Some(bytes.into()) })
            }
        }
        deserializer.deserialize_bytes(Bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_deferred_value_reads_as_it_was_written_decoding_once() {
        let schema = Some(json!({"type": "object", "properties": {"id": {"type": "integer"}}}));
        let stored = rmp_serde::to_vec(&Deferred::from(schema.clone())).unwrap();
        let read: Deferred = rmp_serde::from_slice(&stored).unwrap();
        assert!(read.is_some() && read.value.get().is_none(), "known, and not decoded by reading the entry");
        let copy = read.clone();
        assert_eq!(*read, schema);
        assert_eq!(copy, schema, "a copy made before decoding decodes alike");
        assert_eq!(rmp_serde::to_vec(&copy).unwrap(), stored, "stored again without a round trip");
        let mut changed = copy;
        *changed = None;
        assert_eq!(*changed, None);
        let unknown: Deferred = rmp_serde::from_slice(&rmp_serde::to_vec(&changed).unwrap()).unwrap();
        assert!(unknown.is_none() && unknown.value.get().is_none());
        let garbage: Deferred = rmp_serde::from_slice(&rmp_serde::to_vec(&serde_bytes_of(b"\xc1")).unwrap()).unwrap();
        assert_eq!(*garbage, None, "what does not decode is unknown");
    }

    /// MessagePack `bin` holding `bytes`, as a `Deferred` is stored.
    fn serde_bytes_of(bytes: &[u8]) -> impl serde::Serialize + '_ {
        struct Bin<'a>(&'a [u8]);
        impl serde::Serialize for Bin<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_bytes(self.0)
            }
        }
        Bin(bytes)
    }
}
