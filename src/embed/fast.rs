//! The real embedder: fastembed over a dynamically loaded ONNX Runtime.

use std::path::Path;
use std::sync::OnceLock;

use fastembed::{
    InitOptionsUserDefined, Pooling, TextEmbedding, TokenizerFiles, UserDefinedEmbeddingModel,
};

use super::{normalize, EmbedError, Embedder, ModelLocation, BATCH, DIM, MAX_TOKENS, MODEL_ID};

/// all-MiniLM-L6-v2 on ONNX Runtime.
pub struct FastEmbedder {
    model: TextEmbedding,
}

/// ONNX Runtime can be loaded once per process; later loads reuse it.
static RUNTIME: OnceLock<Result<ort::environment::Environment, String>> = OnceLock::new();

fn runtime(path: &Path) -> Result<ort::environment::Environment, EmbedError> {
    let loaded = RUNTIME.get_or_init(|| {
        ort::init_from(path)
            .map_err(|e| e.to_string())
            .and_then(|builder| {
                builder
                    .with_name("knowledge-db")
                    .build()
                    .map_err(|e| e.to_string())
            })
    });
    loaded.clone().map_err(|message| EmbedError::Runtime {
        path: path.to_path_buf(),
        message,
    })
}

fn read(dir: &Path, name: &'static str) -> Result<Vec<u8>, EmbedError> {
    let path = dir.join(name);
    if !path.is_file() {
        return Err(EmbedError::NotInstalled { what: name, path });
    }
    std::fs::read(&path).map_err(|e| EmbedError::Model {
        path,
        message: e.to_string(),
    })
}

impl FastEmbedder {
    /// Loads the model and runtime found by [`ModelLocation::locate`].
    pub fn load_default() -> Result<FastEmbedder, EmbedError> {
        FastEmbedder::load(&ModelLocation::locate())
    }

    pub fn load(location: &ModelLocation) -> Result<FastEmbedder, EmbedError> {
        if !location.runtime.is_file() {
            return Err(EmbedError::NotInstalled {
                what: "the ONNX Runtime library",
                path: location.runtime.clone(),
            });
        }
        let dir = &location.model_dir;
        let onnx = read(dir, "model.onnx")?;
        let tokenizer_files = TokenizerFiles {
            tokenizer_file: read(dir, "tokenizer.json")?,
            config_file: read(dir, "config.json")?,
            special_tokens_map_file: read(dir, "special_tokens_map.json")?,
            tokenizer_config_file: read(dir, "tokenizer_config.json")?,
        };
        let environment = runtime(&location.runtime)?;
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        let options = InitOptionsUserDefined::new()
            .with_environment(environment)
            .with_max_length(MAX_TOKENS)
            .with_intra_threads(threads);
        let model =
            UserDefinedEmbeddingModel::new(onnx, tokenizer_files).with_pooling(Pooling::Mean);
        let model = TextEmbedding::try_new_from_user_defined(model, options).map_err(|e| {
            EmbedError::Model {
                path: dir.clone(),
                message: e.to_string(),
            }
        })?;
        Ok(FastEmbedder { model })
    }
}

impl Embedder for FastEmbedder {
    fn model_id(&self) -> &str {
        MODEL_ID
    }

    fn dim(&self) -> usize {
        DIM
    }

    fn embed(&mut self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut vectors = self
            .model
            .embed(texts, Some(BATCH))
            .map_err(|e| EmbedError::Inference(e.to_string()))?;
        for v in &mut vectors {
            if v.len() != DIM {
                return Err(EmbedError::Inference(format!(
                    "model returned {} dimensions, expected {DIM}",
                    v.len()
                )));
            }
            // fastembed normalises after mean pooling; normalising again is free insurance.
            normalize(v);
        }
        Ok(vectors)
    }
}
