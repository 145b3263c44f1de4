//! An opt-in cache of computed vectors on disk, so that embedding the same
//! texts with the same model again costs a lookup instead of inference.
//!
//! It is off unless `KNOWLEDGE_DB_EMBED_CACHE` names a folder (`./test.sh`
//! sets `~/.cache/knowledge-db/embed-cache`, outside the checkout like the
//! model): CI's real-model tests embed the same corpora on every run, and a
//! store on a user's machine never embeds a text twice anyway.
//!
//! **Layout.** `<root>/<model key>/` holds the vectors of one model, where the
//! key is the xxh3-128 of the model and tokenizer files' bytes and of the
//! pooling recipe ([`model_key`]): a changed model, tokenizer or recipe reads
//! from a new folder, never from the old one. Inside, each *pack* file holds
//! some (text hash, vector) pairs: the magic bytes, the dimension, the count,
//! the entries (xxh3-128 of the text, then the vector as little-endian f32),
//! and the xxh3-64 of all that.
//!
//! **Safety.** A pack is written to a temporary file in the same folder and
//! renamed into place, so readers only ever see whole packs, and every writer
//! writes packs of its own (unique names): processes embedding at the same
//! time never write the same file. A pack whose length, magic, dimension or
//! checksum is wrong, or that holds a value that is not finite, is ignored
//! (and removed), never trusted: its texts are embedded again.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use xxhash_rust::xxh3::{xxh3_128, xxh3_64, Xxh3};

/// The environment variable naming the cache's root folder; unset or empty is off.
pub const CACHE_ENV: &str = "KNOWLEDGE_DB_EMBED_CACHE";

const MAGIC: &[u8; 8] = b"KDBVEC1\0";
const HEADER: usize = 8 + 4 + 4;
const CHECKSUM: usize = 8;
const KEY: usize = 16;
const EXTENSION: &str = "pack";

/// New vectors are kept in memory until this many, then written as one pack
/// (and the rest when the cache is dropped).
const FLUSH_AT: usize = 1024;

/// Makes pack names unique among the caches of one process.
static PACKS_WRITTEN: AtomicU64 = AtomicU64::new(0);

/// The identity of a model's vectors: the xxh3-128 of each file's name and
/// bytes (missing files count as missing, so adding or removing one changes the
/// key) and of `recipe` (pooling, normalisation, truncation, dimension).
pub fn model_key<P: AsRef<Path>>(files: &[P], recipe: &str) -> std::io::Result<u128> {
    let mut hasher = Xxh3::new();
    for path in files {
        let path = path.as_ref();
        let name = path
            .file_name()
            .map(|n| n.as_encoded_bytes())
            .unwrap_or(b"");
        hasher.update(&(name.len() as u64).to_le_bytes());
        hasher.update(name);
        let mut file = match std::fs::File::open(path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                hasher.update(b"missing");
                continue;
            }
            Err(e) => return Err(e),
        };
        // In pieces: the model files are about 90 MB each.
        let mut buffer = vec![0u8; 1 << 20];
        let mut length = 0u64;
        loop {
            let read = file.read(&mut buffer)?;
            if read == 0 {
                break;
            }
            hasher.update(&buffer[..read]);
            length += read as u64;
        }
        hasher.update(&length.to_le_bytes());
    }
    hasher.update(recipe.as_bytes());
    Ok(hasher.digest128())
}

/// The vectors of one model found in the cache folder, and those computed since.
#[derive(Debug)]
pub struct EmbedCache {
    dir: PathBuf,
    dim: usize,
    known: HashMap<u128, Vec<f32>>,
    pending: Vec<(u128, Vec<f32>)>,
}

impl EmbedCache {
    /// The cache under `$KNOWLEDGE_DB_EMBED_CACHE` for the model `key`, or
    /// `None` when the variable is unset or the folder cannot be made.
    pub fn from_env(key: impl FnOnce() -> std::io::Result<u128>, dim: usize) -> Option<EmbedCache> {
        let root = std::env::var_os(CACHE_ENV).filter(|v| !v.is_empty())?;
        EmbedCache::open(Path::new(&root), key().ok()?, dim).ok()
    }

    /// Opens (creating it) the folder of model `key` under `root` and reads
    /// every whole, valid pack in it.
    pub fn open(root: &Path, key: u128, dim: usize) -> std::io::Result<EmbedCache> {
        let dir = root.join(format!("{key:032x}"));
        std::fs::create_dir_all(&dir)?;
        let mut cache = EmbedCache {
            dir,
            dim,
            known: HashMap::new(),
            pending: Vec::new(),
        };
        for entry in std::fs::read_dir(&cache.dir)? {
            let path = entry?.path();
            if path.extension().and_then(|e| e.to_str()) != Some(EXTENSION) {
                continue;
            }
            let bytes = match std::fs::read(&path) {
                Ok(bytes) => bytes,
                // Removed by another process since the listing: nothing lost.
                Err(_) => continue,
            };
            match parse_pack(&bytes, dim) {
                Some(entries) => cache.known.extend(entries),
                None => {
                    // Damaged: never trusted, and not read again.
                    let _ = std::fs::remove_file(&path);
                }
            }
        }
        Ok(cache)
    }

    /// The folder of this model's packs.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// How many texts' vectors the cache holds (read and computed).
    pub fn len(&self) -> usize {
        self.known.len()
    }

    /// Whether it holds no vector.
    pub fn is_empty(&self) -> bool {
        self.known.is_empty()
    }

    /// The vector cached for `text`, if any.
    pub fn get(&self, text: &str) -> Option<&[f32]> {
        self.known
            .get(&xxh3_128(text.as_bytes()))
            .map(Vec::as_slice)
    }

    /// Remembers `vector` for `text` (written with the next pack). A vector of
    /// another dimension or with a non-finite value is not kept.
    pub fn insert(&mut self, text: &str, vector: &[f32]) {
        if vector.len() != self.dim || !vector.iter().all(|x| x.is_finite()) {
            return;
        }
        let key = xxh3_128(text.as_bytes());
        if self.known.insert(key, vector.to_vec()).is_none() {
            self.pending.push((key, vector.to_vec()));
            if self.pending.len() >= FLUSH_AT {
                // A cache that cannot be written costs time, never vectors.
                let _ = self.flush();
            }
        }
    }

    /// Writes the vectors computed since the last pack as a new pack.
    pub fn flush(&mut self) -> std::io::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let mut bytes =
            Vec::with_capacity(HEADER + self.pending.len() * (KEY + 4 * self.dim) + CHECKSUM);
        bytes.extend_from_slice(MAGIC);
        bytes.extend_from_slice(&(self.dim as u32).to_le_bytes());
        bytes.extend_from_slice(&(self.pending.len() as u32).to_le_bytes());
        for (key, vector) in &self.pending {
            bytes.extend_from_slice(&key.to_le_bytes());
            vector
                .iter()
                .for_each(|x| bytes.extend_from_slice(&x.to_le_bytes()));
        }
        let checksum = xxh3_64(&bytes);
        bytes.extend_from_slice(&checksum.to_le_bytes());

        let mut file = tempfile::Builder::new()
            .prefix(".writing-")
            .tempfile_in(&self.dir)?;
        file.write_all(&bytes)?;
        file.as_file().sync_data()?;
        let name = format!(
            "{checksum:016x}-{}-{}.{EXTENSION}",
            std::process::id(),
            PACKS_WRITTEN.fetch_add(1, Ordering::Relaxed)
        );
        file.persist(self.dir.join(name)).map_err(|e| e.error)?;
        self.pending.clear();
        Ok(())
    }
}

impl Drop for EmbedCache {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

/// The entries of a whole, valid pack of `dim`-wide vectors, else `None`.
fn parse_pack(bytes: &[u8], dim: usize) -> Option<Vec<(u128, Vec<f32>)>> {
    let body_len = bytes.len().checked_sub(CHECKSUM)?;
    let (body, checksum) = bytes.split_at(body_len);
    if body.len() < HEADER || &body[..8] != MAGIC {
        return None;
    }
    let word = |at: usize| -> Option<u32> {
        Some(u32::from_le_bytes(body.get(at..at + 4)?.try_into().ok()?))
    };
    if word(8)? as usize != dim {
        return None;
    }
    let count = word(12)? as usize;
    let entry = KEY + 4 * dim;
    if body.len() != HEADER + count.checked_mul(entry)? {
        return None;
    }
    if xxh3_64(body) != u64::from_le_bytes(checksum.try_into().ok()?) {
        return None;
    }
    body[HEADER..]
        .chunks_exact(entry)
        .map(|chunk| {
            let (key, values) = chunk.split_at(KEY);
            let key = u128::from_le_bytes(key.try_into().ok()?);
            let vector: Vec<f32> = values
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect();
            vector
                .iter()
                .all(|x| x.is_finite())
                .then_some((key, vector))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIM: usize = 4;

    fn packs(dir: &Path) -> Vec<PathBuf> {
        let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().and_then(|e| e.to_str()) == Some(EXTENSION))
            .collect();
        found.sort();
        found
    }

    #[test]
    fn a_vector_written_is_read_back_by_a_later_cache() {
        let root = tempfile::tempdir().unwrap();
        let mut cache = EmbedCache::open(root.path(), 7, DIM).unwrap();
        assert!(
            cache.get("hello").is_none(),
            "a miss before anything is cached"
        );
        cache.insert("hello", &[0.5, 0.5, 0.5, 0.5]);
        assert_eq!(cache.get("hello"), Some(&[0.5, 0.5, 0.5, 0.5][..]));
        drop(cache);

        let cache = EmbedCache::open(root.path(), 7, DIM).unwrap();
        assert_eq!(cache.len(), 1);
        assert_eq!(cache.get("hello"), Some(&[0.5, 0.5, 0.5, 0.5][..]));
        assert!(cache.get("hello ").is_none(), "another text is a miss");
    }

    #[test]
    fn another_model_or_dimension_reads_nothing_of_the_first() {
        let root = tempfile::tempdir().unwrap();
        let mut cache = EmbedCache::open(root.path(), 1, DIM).unwrap();
        cache.insert("text", &[1.0, 0.0, 0.0, 0.0]);
        drop(cache);
        assert!(EmbedCache::open(root.path(), 2, DIM).unwrap().is_empty());

        // The same key with another width (never made by `model_key`, which
        // hashes the files): the packs do not parse, so nothing is trusted.
        let other = EmbedCache::open(root.path(), 1, DIM + 1).unwrap();
        assert!(other.get("text").is_none());
    }

    #[test]
    fn the_model_key_changes_with_any_file_or_the_recipe() {
        let dir = tempfile::tempdir().unwrap();
        let model = dir.path().join("model.onnx");
        let tokenizer = dir.path().join("tokenizer.json");
        std::fs::write(&model, b"weights").unwrap();
        std::fs::write(&tokenizer, b"vocab").unwrap();
        let files = [model.as_path(), tokenizer.as_path()];
        let first = model_key(&files, "mean,unit,256").unwrap();
        assert_eq!(first, model_key(&files, "mean,unit,256").unwrap());
        assert_ne!(first, model_key(&files, "cls,unit,256").unwrap());
        std::fs::write(&tokenizer, b"vocab2").unwrap();
        let second = model_key(&files, "mean,unit,256").unwrap();
        assert_ne!(first, second);
        std::fs::write(&model, b"weight2").unwrap();
        assert_ne!(second, model_key(&files, "mean,unit,256").unwrap());
        std::fs::remove_file(&model).unwrap();
        assert_ne!(second, model_key(&files, "mean,unit,256").unwrap());
    }

    #[test]
    fn a_damaged_pack_is_ignored_and_removed() {
        let root = tempfile::tempdir().unwrap();
        let mut cache = EmbedCache::open(root.path(), 3, DIM).unwrap();
        cache.insert("kept", &[0.0, 1.0, 0.0, 0.0]);
        cache.flush().unwrap();
        cache.insert("flipped", &[0.0, 0.0, 1.0, 0.0]);
        cache.flush().unwrap();
        cache.insert("cut", &[0.0, 0.0, 0.0, 1.0]);
        cache.flush().unwrap();
        let dir = cache.dir().to_path_buf();
        drop(cache);

        // One pack with a flipped bit in a vector, one cut short, and a stray
        // half-written temporary file.
        for path in packs(&dir) {
            let mut bytes = std::fs::read(&path).unwrap();
            let text = match parse_pack(&bytes, DIM).unwrap()[0].0 {
                k if k == xxh3_128(b"flipped") => "flipped",
                k if k == xxh3_128(b"cut") => "cut",
                _ => continue,
            };
            if text == "flipped" {
                bytes[HEADER + KEY + 2] ^= 0x10;
            } else {
                bytes.truncate(bytes.len() - 3);
            }
            std::fs::write(&path, &bytes).unwrap();
        }
        std::fs::write(dir.join(".writing-abc"), b"KDBVEC1\0partial").unwrap();

        let cache = EmbedCache::open(root.path(), 3, DIM).unwrap();
        assert_eq!(cache.get("kept"), Some(&[0.0, 1.0, 0.0, 0.0][..]));
        assert!(cache.get("flipped").is_none(), "a bit flip is detected");
        assert!(cache.get("cut").is_none(), "a short pack is detected");
        assert_eq!(packs(&dir).len(), 1, "damaged packs are removed");
    }

    #[test]
    fn non_finite_or_misshapen_vectors_are_not_kept() {
        let root = tempfile::tempdir().unwrap();
        let mut cache = EmbedCache::open(root.path(), 4, DIM).unwrap();
        cache.insert("nan", &[f32::NAN, 0.0, 0.0, 0.0]);
        cache.insert("short", &[1.0, 0.0]);
        assert!(cache.is_empty());
        cache.flush().unwrap();
        assert!(packs(cache.dir()).is_empty(), "nothing to write");
    }

    #[test]
    fn concurrent_writers_lose_nothing_and_damage_nothing() {
        let root = tempfile::tempdir().unwrap();
        let writers = 6;
        let per_writer = 700; // more than FLUSH_AT for some, flushed by drop for the rest
        std::thread::scope(|scope| {
            for w in 0..writers {
                let root = root.path();
                scope.spawn(move || {
                    let mut cache = EmbedCache::open(root, 5, DIM).unwrap();
                    // Half of each writer's texts are shared with the next writer.
                    for i in 0..per_writer {
                        let n = w * per_writer / 2 + i;
                        cache.insert(&format!("text {n}"), &[n as f32, 1.0, 2.0, 3.0]);
                    }
                    if w % 2 == 0 {
                        cache.flush().unwrap();
                    }
                });
            }
        });
        let cache = EmbedCache::open(root.path(), 5, DIM).unwrap();
        let distinct = (writers - 1) * per_writer / 2 + per_writer;
        assert_eq!(cache.len(), distinct);
        for n in 0..distinct {
            assert_eq!(
                cache.get(&format!("text {n}")),
                Some(&[n as f32, 1.0, 2.0, 3.0][..])
            );
        }
        let leftovers = std::fs::read_dir(cache.dir())
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .starts_with('.')
            })
            .count();
        assert_eq!(leftovers, 0, "no temporary file is left behind");
    }

    #[test]
    fn without_the_environment_variable_it_is_off() {
        // Setting the variable here would race the other tests of the process.
        if std::env::var_os(CACHE_ENV).is_none() {
            assert!(EmbedCache::from_env(|| Ok(1), DIM).is_none());
        }
    }
}
