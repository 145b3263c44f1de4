//! The embedder of a benchmark: the real model behind a vector cache by text
//! hash that survives runs, and for sampled runs perturbed copies of the sample's
//! vectors for every other text.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use knowledge_db::embed::text::{embedding_text, text_hash};
use knowledge_db::embed::{normalize, EmbedError, Embedder, OnnxEmbedder, Workload, DIM, MODEL_ID};
use knowledge_db::error::{Error, Result};
use knowledge_db::record::Record;

use super::{RunOptions, VectorPlan};

/// The embedder of a benchmark: the real model behind a persistent cache by text
/// hash, and with `Sampled`, perturbed copies for texts outside the sample.
pub(super) struct BenchEmbedder {
    model: Option<OnnxEmbedder>,
    cache: HashMap<u64, Vec<f32>>,
    cache_path: PathBuf,
    new_in_cache: Vec<u64>,
    /// Text hashes embedded for real (sampled runs); empty otherwise.
    pub(super) sampled: HashSet<u64>,
    sampled_order: Vec<u64>,
    /// The sample's texts, embedded first so perturbations have their bases.
    sample_texts: Vec<String>,
    pub(super) embedded: usize,
    pub(super) from_cache: usize,
    pub(super) perturbed: usize,
    pub(super) embed_seconds: f64,
}

/// New vectors written to the cache file at least this often.
const CACHE_SAVE_EVERY: usize = 2048;
const CACHE_MAGIC: &[u8; 8] = b"KDBVC384";
/// One cache entry: the text hash (u64, little-endian), then the vector.
const CACHE_ENTRY_BYTES: usize = 8 + DIM * 4;

impl BenchEmbedder {
    pub(super) fn new(options: &RunOptions, records: &[Record]) -> Result<BenchEmbedder> {
        let cache = load_cache(&options.cache)?;
        let mut sampled = HashSet::new();
        let mut sampled_order = Vec::new();
        let mut sample_texts = Vec::new();
        if options.vectors == VectorPlan::Sampled {
            // Every k-th distinct text, so the sample spreads over the corpus.
            let mut distinct: Vec<(u64, String)> = Vec::new();
            let mut seen = HashSet::new();
            for r in records {
                let text = embedding_text(r);
                let h = text_hash(&text);
                if seen.insert(h) {
                    distinct.push((h, text));
                }
            }
            let step = (distinct.len() / options.sample.max(1)).max(1);
            for (h, text) in distinct.into_iter().step_by(step).take(options.sample) {
                sampled.insert(h);
                sampled_order.push(h);
                sample_texts.push(text);
            }
        }
        Ok(BenchEmbedder {
            model: None,
            cache,
            cache_path: options.cache.clone(),
            new_in_cache: Vec::new(),
            sampled,
            sampled_order,
            sample_texts,
            embedded: 0,
            from_cache: 0,
            perturbed: 0,
            embed_seconds: 0.0,
        })
    }

    /// Embeds the sample (sampled runs), in batches, before the store asks for
    /// any vector.
    pub(super) fn prepare(&mut self) -> std::result::Result<(), EmbedError> {
        let texts = std::mem::take(&mut self.sample_texts);
        for chunk in texts.chunks(knowledge_db::embed::GROUP) {
            let batch: Vec<&str> = chunk.iter().map(String::as_str).collect();
            self.embed(&batch)?;
        }
        self.from_cache = 0;
        self.perturbed = 0;
        Ok(())
    }

    pub(super) fn model(&mut self) -> std::result::Result<&mut OnnxEmbedder, EmbedError> {
        if self.model.is_none() {
            self.model = Some(OnnxEmbedder::load_default(Workload::Batches)?);
        }
        self.model
            .as_mut()
            .ok_or_else(|| EmbedError::Inference("model not loaded".into()))
    }

    /// A unit vector near a sampled text's vector, chosen and perturbed by `hash`.
    fn perturbed_vector(&self, hash: u64) -> Option<Vec<f32>> {
        let base_hash = self
            .sampled_order
            .get(hash as usize % self.sampled_order.len().max(1))?;
        let mut v = self.cache.get(base_hash)?.clone();
        let mut state = hash | 1;
        for x in v.iter_mut() {
            // xorshift noise in [-0.5, 0.5) scaled to a small angle.
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            *x += ((state >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 0.02;
        }
        normalize(&mut v);
        Some(v)
    }

    pub(super) fn save_cache(&mut self) -> Result<()> {
        let entries = self
            .new_in_cache
            .iter()
            .filter_map(|hash| Some((*hash, self.cache.get(hash)?.as_slice())));
        append_to_cache(&self.cache_path, entries)?;
        self.new_in_cache.clear();
        Ok(())
    }
}

/// Appends `(text hash, vector)` entries to the cache file, creating it if needed.
pub(super) fn append_to_cache<'v>(
    path: &Path,
    entries: impl Iterator<Item = (u64, &'v [f32])>,
) -> Result<()> {
    let mut entries = entries.peekable();
    if entries.peek().is_none() {
        return Ok(());
    }
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    }
    let io = |e| Error::io(path, e);
    let file = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(io)?;
    // A run killed while saving leaves a torn last entry; appending after it
    // would shift every later entry, so it is cut off first.
    let len = file.metadata().map_err(io)?.len();
    let entry = CACHE_ENTRY_BYTES as u64;
    let magic = CACHE_MAGIC.len() as u64;
    if len > magic && !(len - magic).is_multiple_of(entry) {
        file.set_len(len - (len - magic) % entry).map_err(io)?;
    }
    let mut out = BufWriter::new(file);
    if len == 0 {
        out.write_all(CACHE_MAGIC).map_err(io)?;
    }
    for (hash, v) in entries {
        out.write_all(&hash.to_le_bytes()).map_err(io)?;
        out.write_all(&knowledge_db::index::embedding_bytes(v))
            .map_err(io)?;
    }
    out.flush().map_err(io)
}

impl Embedder for BenchEmbedder {
    fn model_id(&self) -> &str {
        MODEL_ID
    }

    fn dim(&self) -> usize {
        DIM
    }

    fn embed(&mut self, texts: &[&str]) -> std::result::Result<Vec<Vec<f32>>, EmbedError> {
        let hashes: Vec<u64> = texts.iter().map(|t| text_hash(t)).collect();
        let sampling = !self.sampled.is_empty();
        // Texts the model must embed: not cached, and (when sampling) in the sample.
        let todo: Vec<usize> = (0..texts.len())
            .filter(|&i| !self.cache.contains_key(&hashes[i]))
            .filter(|&i| !sampling || self.sampled.contains(&hashes[i]))
            .collect();
        if !todo.is_empty() {
            let batch: Vec<&str> = todo.iter().map(|&i| texts[i]).collect();
            let started = Instant::now();
            let vectors = self.model()?.embed(&batch)?;
            self.embed_seconds += started.elapsed().as_secs_f64();
            self.embedded += todo.len();
            for (&i, v) in todo.iter().zip(vectors) {
                self.cache.insert(hashes[i], v);
                self.new_in_cache.push(hashes[i]);
            }
            // A long run that dies keeps what it embedded (an hour at 100k).
            if self.new_in_cache.len() >= CACHE_SAVE_EVERY {
                self.save_cache()
                    .map_err(|e| EmbedError::Inference(format!("saving the vector cache: {e}")))?;
            }
        }
        let mut out = Vec::with_capacity(texts.len());
        for &h in &hashes {
            match self.cache.get(&h) {
                Some(v) if !sampling || self.sampled.contains(&h) => {
                    if !todo.iter().any(|&i| hashes[i] == h) {
                        self.from_cache += 1;
                    }
                    out.push(v.clone());
                }
                _ => {
                    self.perturbed += 1;
                    let v = self.perturbed_vector(h).ok_or_else(|| {
                        EmbedError::Inference("no sampled vector to perturb".into())
                    })?;
                    out.push(v);
                }
            }
        }
        Ok(out)
    }
}

pub(super) fn load_cache(path: &Path) -> Result<HashMap<u64, Vec<f32>>> {
    let mut cache = HashMap::new();
    let Ok(file) = fs::File::open(path) else {
        return Ok(cache);
    };
    let mut input = BufReader::new(file);
    let mut magic = [0u8; 8];
    if input.read_exact(&mut magic).is_err() || &magic != CACHE_MAGIC {
        return Err(Error::Usage(format!(
            "{} is not a knowledge-db vector cache; remove it or pass another --cache",
            path.display()
        )));
    }
    let mut entry = vec![0u8; CACHE_ENTRY_BYTES];
    // A torn last entry (a run killed while saving) is ignored.
    while input.read_exact(&mut entry).is_ok() {
        let hash = u64::from_le_bytes(entry[..8].try_into().unwrap_or_default());
        if let Some(v) = knowledge_db::index::embedding_from_bytes(&entry[8..], DIM) {
            cache.insert(hash, v);
        }
    }
    Ok(cache)
}
