//! Dense retrieval: a sentence-embedding model (a BERT-class encoder in the sentence-transformers
//! layout: `config.json`, `tokenizer.json`, `model.safetensors`, e.g. all-MiniLM-L6-v2) run in
//! process on the CPU with candle, and the catalog's vectors, cached by content.
//!
//! A text's embedding is the mean of its token states under the attention mask, L2-normalised, so
//! similarity is a dot product. The catalog's vectors are kept in `.chainsmith/cache/` keyed by a
//! hash of each tool's text and the model, so only new or changed tools are embedded again (the
//! first pass over 2,220 APIs takes about a minute of one core; a query, milliseconds).

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail};
use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config as BertConfig};
use tokenizers::{PaddingParams, PaddingStrategy, Tokenizer, TruncationParams};

/// Tokens of a text the model reads; a tool's name and the start of its description fit.
const MAX_TOKENS: usize = 128;

/// Texts encoded together (sorted by length first, so a batch pads little).
const BATCH: usize = 32;

/// The largest weights file read (a BERT-base model is ~440 MB).
const MAX_WEIGHTS: u64 = 2 << 30;

/// A loaded sentence-embedding model.
pub struct Embedder {
    model: BertModel,
    tokenizer: Tokenizer,
    device: Device,
    /// Identifies the model in cache keys: a hash of its configuration, tokenizer and weights.
    fingerprint: u64,
    /// The size of its vectors (`hidden_size`).
    dim: usize,
    /// The folder it was loaded from, for messages.
    pub dir: PathBuf,
}

impl std::fmt::Debug for Embedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embedder").field("dir", &self.dir).finish_non_exhaustive()
    }
}

impl Embedder {
    /// Loads the model in `dir`; a clear error names the file that is missing or broken.
    pub fn load(dir: &Path) -> Result<Embedder> {
        let read = |name: &str, limit: u64| {
            let path = dir.join(name);
            crate::files::read_bytes(&path, limit).with_context(|| format!("cannot read {}", path.display()))
        };
        let config_bytes = read("config.json", 1 << 20)?;
        let config: BertConfig = serde_json::from_slice(&config_bytes)
            .with_context(|| format!("{} is not a BERT configuration", dir.join("config.json").display()))?;
        // candle divides by the head count before it checks a shape: a nonsensical configuration
        // is an error here, not a crash there.
        if config.hidden_size == 0
            || config.num_attention_heads == 0
            || !config.hidden_size.is_multiple_of(config.num_attention_heads)
            || config.max_position_embeddings == 0
        {
            bail!(
                "{}: hidden_size {} must be a positive multiple of num_attention_heads {}, with positions",
                dir.join("config.json").display(),
                config.hidden_size,
                config.num_attention_heads
            );
        }
        let tokenizer_bytes = read("tokenizer.json", 64 << 20)?;
        let mut tokenizer = Tokenizer::from_bytes(&tokenizer_bytes)
            .map_err(|e| anyhow!("{} cannot be read as a tokenizer: {e}", dir.join("tokenizer.json").display()))?;
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: MAX_TOKENS.min(config.max_position_embeddings),
                ..Default::default()
            }))
            .map_err(|e| anyhow!("tokenizer: {e}"))?;
        tokenizer.with_padding(Some(PaddingParams { strategy: PaddingStrategy::BatchLongest, ..Default::default() }));
        let weights = read("model.safetensors", MAX_WEIGHTS)?;
        let mut hasher = std::hash::DefaultHasher::new();
        (&config_bytes, &tokenizer_bytes, &weights).hash(&mut hasher);
        let fingerprint = hasher.finish();
        let dim = config.hidden_size;
        let device = Device::Cpu;
        let vb = VarBuilder::from_buffered_safetensors(weights, DType::F32, &device)
            .with_context(|| format!("{} is not a safetensors file", dir.join("model.safetensors").display()))?;
        let model = BertModel::load(vb, &config)
            .with_context(|| format!("the weights in {} do not fit a BERT model", dir.display()))?;
        Ok(Embedder { model, tokenizer, device, fingerprint, dim, dir: dir.to_path_buf() })
    }

    /// The normalised embedding of each text, in order.
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| texts[i].len());
        let mut out: Vec<Vec<f32>> = vec![Vec::new(); texts.len()];
        for chunk in order.chunks(BATCH) {
            let batch: Vec<&str> = chunk.iter().map(|&i| texts[i]).collect();
            for (&i, vector) in chunk.iter().zip(self.embed_batch(&batch)?) {
                out[i] = vector;
            }
        }
        Ok(out)
    }

    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let encodings = self.tokenizer.encode_batch(texts.to_vec(), true).map_err(|e| anyhow!("tokenizer: {e}"))?;
        let Some(len) = encodings.first().map(|e| e.get_ids().len()) else { return Ok(Vec::new()) };
        let ids: Vec<u32> = encodings.iter().flat_map(|e| e.get_ids().iter().copied()).collect();
        let mask: Vec<u32> = encodings.iter().flat_map(|e| e.get_attention_mask().iter().copied()).collect();
        if ids.len() != texts.len() * len {
            bail!("the tokenizer padded a batch unevenly");
        }
        let ids = Tensor::from_vec(ids, (texts.len(), len), &self.device)?;
        let mask = Tensor::from_vec(mask, (texts.len(), len), &self.device)?;
        let types = ids.zeros_like()?;
        let states = self.model.forward(&ids, &types, Some(&mask))?;
        let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
        let mean = states.broadcast_mul(&mask)?.sum(1)?.broadcast_div(&mask.sum(1)?)?;
        let norm = mean.sqr()?.sum_keepdim(1)?.sqrt()?.clamp(1e-12, f64::MAX)?;
        Ok(mean.broadcast_div(&norm)?.to_vec2::<f32>()?)
    }
}

/// The vectors of a list of documents (a catalog's tools, in its order) and the model that made
/// them, to rank the documents for a query.
#[derive(Debug)]
pub struct DenseIndex {
    embedder: Embedder,
    dim: usize,
    /// Row `i` is document `i`'s vector.
    vectors: Vec<f32>,
    /// Groups of documents (a ToolBench tool's APIs): each group's normalised centroid, and each
    /// document's group. A document's score then adds a share of its group's, as BM25's does.
    groups: Option<(Vec<f32>, Vec<usize>)>,
    group_share: f32,
}

impl DenseIndex {
    /// Embeds `texts`, reusing the vectors cached in the workspace `root` (when given:
    /// `.chainsmith/cache/`) for texts seen before and saving the set for next time.
    pub fn build(embedder: Embedder, texts: &[String], root: Option<&Path>) -> Result<DenseIndex> {
        let keys: Vec<u128> = texts.iter().map(|t| text_key(embedder.fingerprint, t)).collect();
        let cache_file = root
            .map(|r| r.join(".chainsmith").join("cache").join(format!("embeddings-{:016x}.bin", embedder.fingerprint)));
        let mut cached = cache_file.as_deref().map(|f| read_cache(f, embedder.dim, texts.len())).unwrap_or_default();
        let missing: Vec<usize> = (0..texts.len()).filter(|&i| !cached.contains_key(&keys[i])).collect();
        if !missing.is_empty() {
            let batch: Vec<&str> = missing.iter().map(|&i| texts[i].as_str()).collect();
            for (&i, vector) in missing.iter().zip(embedder.embed(&batch)?) {
                cached.insert(keys[i], vector);
            }
        }
        let dim = embedder.dim;
        let mut vectors = Vec::with_capacity(texts.len() * dim);
        for key in &keys {
            match cached.get(key) {
                Some(v) if v.len() == dim => vectors.extend_from_slice(v),
                _ => bail!("the model gave vectors of another size than its hidden_size {dim}"),
            }
        }
        if let (Some(root), Some(file), false) = (root, &cache_file, missing.is_empty()) {
            // Only the current documents' vectors are kept: the cache does not grow with every edit.
            if let Err(e) = crate::files::write_inside(root, file, &cache_bytes(dim, &keys, &vectors)) {
                tracing::warn!("the embedding cache is not saved: {e}");
            }
        }
        Ok(DenseIndex { embedder, dim, vectors, groups: None, group_share: 0.0 })
    }

    /// Scores documents with a `share` of their group's similarity too (AnyTool's tool level): a
    /// group is the documents with the same number in `group_of` (one entry per document).
    pub fn with_groups(mut self, group_of: &[usize], share: f32) -> Self {
        if group_of.len() != self.len() || self.dim == 0 {
            return self;
        }
        let count = group_of.iter().max().map_or(0, |m| m + 1);
        let mut centroids = vec![0.0f32; count * self.dim];
        for (doc, &g) in group_of.iter().enumerate() {
            let v = &self.vectors[doc * self.dim..(doc + 1) * self.dim];
            for (c, x) in centroids[g * self.dim..(g + 1) * self.dim].iter_mut().zip(v) {
                *c += x;
            }
        }
        for c in centroids.chunks_exact_mut(self.dim) {
            let norm = c.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
            c.iter_mut().for_each(|x| *x /= norm);
        }
        self.groups = Some((centroids, group_of.to_vec()));
        self.group_share = share;
        self
    }

    pub fn len(&self) -> usize {
        self.vectors.len().checked_div(self.dim).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The `k` documents most similar to `query`, best first: (document number, score), the score
    /// being the cosine plus the group's share when the index has groups.
    pub fn search(&self, query: &str, k: usize) -> Result<Vec<(usize, f32)>> {
        self.rank(query, k, true)
    }

    /// [`DenseIndex::search`] by each document's own cosine alone.
    pub fn search_documents(&self, query: &str, k: usize) -> Result<Vec<(usize, f32)>> {
        self.rank(query, k, false)
    }

    fn rank(&self, query: &str, k: usize, with_groups: bool) -> Result<Vec<(usize, f32)>> {
        if self.is_empty() {
            return Ok(Vec::new());
        }
        // A task of several requests is embedded whole and request by request, and each document
        // keeps its best similarity: every need gets its own chance, as one vector blurs them.
        let mut parts = vec![query];
        let requests = crate::textsearch::requests_in(query);
        if requests.len() > 1 {
            parts.extend(requests.into_iter().filter(|r| !r.trim().is_empty()));
        }
        // One forward pass per part: batched, every part would be padded to the whole task's
        // length, and the model's cost grows with the padded tokens (about twice the time).
        let queries =
            parts.iter().map(|part| Ok(self.embedder.embed(&[part])?.remove(0))).collect::<Result<Vec<Vec<f32>>>>()?;
        if queries.iter().any(|q| q.len() != self.dim) {
            bail!("the query's embedding has another size than the catalog's ({})", self.dim);
        }
        let best = |v: &[f32]| {
            queries.iter().map(|q| v.iter().zip(q).map(|(a, b)| a * b).sum::<f32>()).fold(f32::MIN, f32::max)
        };
        let mut scored: Vec<(usize, f32)> = self.vectors.chunks_exact(self.dim).map(best).enumerate().collect();
        if let Some((centroids, group_of)) = self.groups.as_ref().filter(|_| with_groups) {
            let group_scores: Vec<f32> = centroids.chunks_exact(self.dim).map(|c| best(c).max(0.0)).collect();
            let top = group_scores.iter().cloned().fold(0.0, f32::max).max(1e-9);
            let doc_top = scored.iter().map(|s| s.1).fold(0.0, f32::max).max(1e-9);
            for (doc, score) in scored.iter_mut() {
                *score += self.group_share * doc_top * group_scores[group_of[*doc]] / top;
            }
        }
        let k = k.min(scored.len());
        if k == 0 {
            return Ok(Vec::new());
        }
        scored.select_nth_unstable_by(k - 1, |a, b| b.1.total_cmp(&a.1));
        scored.truncate(k);
        scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        Ok(scored)
    }
}

/// A cache key: 128 bits of two salted hashes of the model and the text. A hasher that changes
/// between builds only costs a re-embedding, never a wrong vector (the key covers the text).
fn text_key(model: u64, text: &str) -> u128 {
    let half = |salt: u8| {
        let mut h = std::hash::DefaultHasher::new();
        (salt, model, text).hash(&mut h);
        h.finish()
    };
    (u128::from(half(1)) << 64) | u128::from(half(2))
}

const CACHE_MAGIC: &[u8] = b"chainsmith-embeddings 1\n";

/// The cached vectors by key: a file of `dim`-sized vectors for at most about `documents` texts
/// (a cache written for the current catalog, with room for it to have grown); an unreadable,
/// foreign or oversized file is an empty cache, to be rewritten.
fn read_cache(path: &Path, dim: usize, documents: usize) -> HashMap<u128, Vec<f32>> {
    let mut out = HashMap::new();
    let entry = 16 + 4 * dim;
    let limit = (CACHE_MAGIC.len() + 4 + entry * (2 * documents + 1024)) as u64;
    let Ok(bytes) = crate::files::read_bytes(path, limit) else { return out };
    let Some(rest) = bytes.strip_prefix(CACHE_MAGIC) else { return out };
    let Some((stored, mut rest)) = rest.split_first_chunk::<4>().map(|(d, r)| (u32::from_le_bytes(*d) as usize, r))
    else {
        return out;
    };
    if stored != dim {
        return out;
    }
    while dim > 0 && rest.len() >= entry {
        let (head, tail) = rest.split_at(entry);
        let key = u128::from_le_bytes(head[..16].try_into().expect("16 bytes"));
        let vector = head[16..].chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().expect("4 bytes"))).collect();
        out.insert(key, vector);
        rest = tail;
    }
    out
}

fn cache_bytes(dim: usize, keys: &[u128], vectors: &[f32]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(CACHE_MAGIC.len() + 4 + keys.len() * (16 + 4 * dim));
    bytes.extend_from_slice(CACHE_MAGIC);
    bytes.extend_from_slice(&(dim as u32).to_le_bytes());
    for (key, vector) in keys.iter().zip(vectors.chunks_exact(dim.max(1))) {
        bytes.extend_from_slice(&key.to_le_bytes());
        for x in vector {
            bytes.extend_from_slice(&x.to_le_bytes());
        }
    }
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_round_trips_and_ignores_foreign_files() {
        let dir = std::env::temp_dir().join(format!("chainsmith-embcache-{}", std::process::id()));
        let file = dir.join("e.bin");
        let keys = [text_key(7, "a"), text_key(7, "b")];
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(&file, cache_bytes(2, &keys, &[1.0, 2.0, 3.0, 4.0])).unwrap();
        let read = read_cache(&file, 2, 2);
        assert_eq!(read[&keys[0]], [1.0, 2.0]);
        assert_eq!(read[&keys[1]], [3.0, 4.0]);
        assert!(read_cache(&file, 3, 2).is_empty(), "vectors of another size are not this model's");
        std::fs::write(&file, b"something else").unwrap();
        assert!(read_cache(&file, 2, 2).is_empty());
        assert_ne!(text_key(7, "a"), text_key(8, "a"), "the model is part of the key");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
