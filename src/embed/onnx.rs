//! The real embedder: all-MiniLM-L6-v2 run by ONNX Runtime, loaded from local files.
//!
//! A text becomes WordPiece tokens (the model's own `tokenizer.json`, at most
//! [`MAX_TOKENS`]), the BERT graph turns them into one 384-wide state per token,
//! and the mean of the real tokens' states, scaled to unit length, is the vector.
//!
//! **Why not through fastembed:** a search run from a shell loads the model for
//! one query, so load time is search time. The setup script also writes the model
//! in ONNX Runtime's own format (`model.ort`, graph optimisations already
//! applied); mapped into memory and handed to the runtime without a copy, with
//! weight prepacking left to [`Workload::Batches`], a session starts in about
//! 15 ms instead of about 250 ms (fastembed can only hand the runtime a copied
//! `.onnx` buffer it optimises on every load). `model.onnx` is the fallback.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use memmap2::Mmap;
use ort::session::builder::GraphOptimizationLevel;
use ort::session::Session;
use ort::value::Tensor;

use super::cache::{model_key, EmbedCache};
use super::wordpiece::WordPiece;
use super::{normalize, EmbedError, Embedder, ModelLocation, BATCH, DIM, MAX_TOKENS, MODEL_ID};

/// What, besides the model and tokenizer files, decides a vector: the cache's
/// key includes it, so changing pooling, normalisation or truncation here (bump
/// the version) never reads vectors made the old way.
const RECIPE: &str =
    "all-MiniLM-L6-v2;mean-pool of real tokens;unit length;max 256 tokens;dim 384;v1";

/// The files whose bytes decide the vectors of `files`' model: both forms of
/// the graph (either may be loaded) and the tokenizer.
fn cache_inputs(dir: &Path, files: &ModelFiles) -> Vec<PathBuf> {
    [
        files.onnx,
        files.ort,
        "tokenizer.json",
        "tokenizer_config.json",
    ]
    .iter()
    .map(|name| dir.join(name))
    .collect()
}

/// What the loaded model will mostly do, which decides how its session is built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workload {
    /// A few short texts (search queries): start as fast as possible. Weights are
    /// used where they lie in the mapped model file.
    Queries,
    /// Many texts (adding, `embed`, evaluations) or a process that lives long (the
    /// MCP server): the runtime repacks weights for its matrix kernels once at
    /// load (about 40 ms and 75 MB more), then each text runs about twice as fast.
    Batches,
}

/// all-MiniLM-L6-v2 on ONNX Runtime.
pub struct OnnxEmbedder {
    // Declared before `_model` so that it is dropped first: with a `.ort` model the
    // session reads its weights straight from the mapped file.
    session: Session,
    _model: Option<Mmap>,
    tokenizer: WordPiece,
    /// The id rows are padded with to the longest text of a batch.
    pad_id: u32,
    wants_token_types: bool,
    draft: bool,
    /// Vectors computed before, when `KNOWLEDGE_DB_EMBED_CACHE` is set.
    cache: Option<EmbedCache>,
}

/// The files of one of the two models: the fp32 graph every stored vector
/// ends up from, or its int8 copy that drafts vectors about twice as fast.
struct ModelFiles {
    onnx: &'static str,
    ort: &'static str,
    draft: bool,
}

const FULL: ModelFiles = ModelFiles {
    onnx: "model.onnx",
    ort: "model.ort",
    draft: false,
};

const DRAFT: ModelFiles = ModelFiles {
    onnx: super::DRAFT_MODEL_ONNX,
    ort: super::DRAFT_MODEL_ORT,
    draft: true,
};

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

fn required(dir: &Path, name: &'static str) -> Result<PathBuf, EmbedError> {
    let path = dir.join(name);
    if path.is_file() {
        Ok(path)
    } else {
        Err(EmbedError::NotInstalled { what: name, path })
    }
}

fn model_error(path: &Path, message: impl ToString) -> EmbedError {
    EmbedError::Model {
        path: path.to_path_buf(),
        message: message.to_string(),
    }
}

impl OnnxEmbedder {
    /// Loads the model and runtime found by [`ModelLocation::locate`].
    pub fn load_default(workload: Workload) -> Result<OnnxEmbedder, EmbedError> {
        OnnxEmbedder::load(&ModelLocation::locate(), workload)
    }

    /// Loads the full (fp32) model and the runtime from `location`.
    pub fn load(location: &ModelLocation, workload: Workload) -> Result<OnnxEmbedder, EmbedError> {
        OnnxEmbedder::load_files(location, workload, &FULL)
    }

    /// Loads the int8 copy of the model (see [`super::Embedder::is_draft`]),
    /// for bulk embedding: it is not there on installs older than it.
    pub fn load_draft(location: &ModelLocation) -> Result<OnnxEmbedder, EmbedError> {
        OnnxEmbedder::load_files(location, Workload::Batches, &DRAFT)
    }

    fn load_files(
        location: &ModelLocation,
        workload: Workload,
        files: &ModelFiles,
    ) -> Result<OnnxEmbedder, EmbedError> {
        if !location.runtime.is_file() {
            return Err(EmbedError::NotInstalled {
                what: "the ONNX Runtime library",
                path: location.runtime.clone(),
            });
        }
        let dir = &location.model_dir;
        let onnx = required(dir, files.onnx)?;
        // The tokenizer is parsed while the runtime loads and builds the session.
        let loaded = std::thread::scope(|scope| {
            let tokenizer = scope.spawn(|| load_tokenizer(dir));
            let session = runtime(&location.runtime).and_then(|environment| {
                open_session(&environment, &dir.join(files.ort), &onnx, workload)
            });
            let tokenizer = tokenizer
                .join()
                .unwrap_or_else(|_| Err(model_error(dir, "the tokenizer loader panicked")));
            session.and_then(|session| Ok((session, tokenizer?)))
        });
        let ((session, model), (tokenizer, pad_id)) = loaded?;
        let wants_token_types = session
            .inputs()
            .iter()
            .any(|input| input.name() == "token_type_ids");
        let cache = EmbedCache::from_env(|| model_key(&cache_inputs(dir, files), RECIPE), DIM);
        Ok(OnnxEmbedder {
            session,
            _model: model,
            tokenizer,
            pad_id,
            wants_token_types,
            draft: files.draft,
            cache,
        })
    }

    /// The same embedder reading and writing the vector cache under `root`
    /// (see [`super::cache`]) instead of the one `KNOWLEDGE_DB_EMBED_CACHE` names.
    pub fn with_cache(
        mut self,
        location: &ModelLocation,
        root: &Path,
    ) -> Result<OnnxEmbedder, EmbedError> {
        let files = if self.draft { &DRAFT } else { &FULL };
        let dir = &location.model_dir;
        let cache = model_key(&cache_inputs(dir, files), RECIPE)
            .and_then(|key| EmbedCache::open(root, key, DIM))
            .map_err(|e| model_error(root, e))?;
        self.cache = Some(cache);
        Ok(self)
    }

    /// The same embedder without a vector cache: every vector comes from the
    /// model (tests of the model itself use it).
    pub fn without_cache(mut self) -> OnnxEmbedder {
        self.cache = None;
        self
    }

    /// The cache this embedder reads and writes, if any.
    pub fn cache(&self) -> Option<&EmbedCache> {
        self.cache.as_ref()
    }

    fn embed_batch(&mut self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let rows: Vec<Vec<u32>> = texts.iter().map(|t| self.tokenizer.encode(t)).collect();
        let width = rows.iter().map(Vec::len).max().unwrap_or(0);
        if width == 0 {
            // Never for this tokenizer (it adds [CLS] and [SEP] to every text).
            return Err(EmbedError::Inference(
                "the tokenizer produced no tokens".into(),
            ));
        }
        // Padded to the longest row; the mask tells the model which are real.
        let cells = texts.len() * width;
        let (mut ids, mut mask) = (Vec::with_capacity(cells), Vec::with_capacity(cells));
        for row in &rows {
            ids.extend(row.iter().map(|&x| i64::from(x)));
            ids.extend(std::iter::repeat_n(
                i64::from(self.pad_id),
                width - row.len(),
            ));
            mask.extend(std::iter::repeat_n(1i64, row.len()));
            mask.extend(std::iter::repeat_n(0i64, width - row.len()));
        }
        let shape = [texts.len(), width];
        let tensor = |data: Vec<i64>| {
            Tensor::from_array((shape, data)).map_err(|e| EmbedError::Inference(e.to_string()))
        };
        let mut inputs = ort::inputs! {
            "input_ids" => tensor(ids)?,
            "attention_mask" => tensor(mask.clone())?,
        };
        if self.wants_token_types {
            // One segment: every token type is 0.
            inputs.push(("token_type_ids".into(), tensor(vec![0; cells])?.into()));
        }
        let outputs = self
            .session
            .run(inputs)
            .map_err(|e| EmbedError::Inference(e.to_string()))?;
        let (out_shape, states) = outputs[0]
            .try_extract_tensor::<f32>()
            .map_err(|e| EmbedError::Inference(e.to_string()))?;
        if out_shape.len() != 3
            || out_shape[0] as usize != texts.len()
            || out_shape[1] as usize != width
            || out_shape[2] as usize != DIM
        {
            return Err(EmbedError::Inference(format!(
                "model returned shape {out_shape:?}, expected [{}, {width}, {DIM}]",
                texts.len()
            )));
        }
        Ok(mean_pool(states, &mask, width))
    }
}

/// The session over `model.ort` when it is there and loads, else over `model.onnx`.
fn open_session(
    environment: &ort::environment::Environment,
    ort_model: &Path,
    onnx_model: &Path,
    workload: Workload,
) -> Result<(Session, Option<Mmap>), EmbedError> {
    if ort_model.is_file() {
        match open_mapped(environment, ort_model, workload) {
            Ok(opened) => return Ok(opened),
            // A `.ort` file the runtime cannot read (another runtime version, a
            // damaged file) costs speed, not vectors: the `.onnx` model is the truth.
            Err(e) => eprintln!("warning: {e}; loading {} instead", onnx_model.display()),
        }
    }
    let session = builder(environment, workload, GraphOptimizationLevel::Level3)
        .and_then(|mut b| b.commit_from_file(onnx_model).map_err(|e| e.to_string()))
        .map_err(|e| model_error(onnx_model, e))?;
    Ok((session, None))
}

/// A session that reads the ORT-format model in place from a memory map.
fn open_mapped(
    environment: &ort::environment::Environment,
    path: &Path,
    workload: Workload,
) -> Result<(Session, Option<Mmap>), EmbedError> {
    let file = std::fs::File::open(path).map_err(|e| model_error(path, e))?;
    // SAFETY: the setup script replaces model files by renaming new ones into
    // place, never by writing into them, so the mapped bytes do not change.
    let map = unsafe { Mmap::map(&file) }.map_err(|e| model_error(path, e))?;
    // The model's optimisations were applied when the setup script wrote it.
    let session = builder(environment, workload, GraphOptimizationLevel::Disable)
        .and_then(|b| {
            let b = b
                .with_config_entry("session.use_ort_model_bytes_directly", "1")
                .map_err(|e| e.to_string())?;
            b.with_config_entry("session.use_ort_model_bytes_for_initializers", "1")
                .map_err(|e| e.to_string())
        })
        // The session keeps pointers into `map`; `OnnxEmbedder` owns both and drops
        // the session first.
        .and_then(|mut b| b.commit_from_memory(&map).map_err(|e| e.to_string()))
        .map_err(|e| model_error(path, e))?;
    Ok((session, Some(map)))
}

fn builder(
    environment: &ort::environment::Environment,
    workload: Workload,
    level: GraphOptimizationLevel,
) -> Result<ort::session::builder::SessionBuilder, String> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let batches = workload == Workload::Batches;
    let text = |e: ort::Error<_>| e.to_string();
    let builder = Session::builder(environment).map_err(|e| e.to_string())?;
    let builder = builder.with_optimization_level(level).map_err(text)?;
    let builder = builder.with_intra_threads(threads).map_err(text)?;
    // Spinning threads wait for the next operator without sleeping: worth it
    // between the operators of a long batch, only burnt CPU around one query.
    let builder = builder.with_intra_op_spinning(batches).map_err(text)?;
    builder.with_prepacking(batches).map_err(text)
}

/// The model's WordPiece tokenizer (its `tokenizer.json`), cutting texts at
/// [`MAX_TOKENS`] or the model's own limit, and the id of its padding token.
fn load_tokenizer(dir: &Path) -> Result<(WordPiece, u32), EmbedError> {
    let path = required(dir, "tokenizer.json")?;
    let config_path = required(dir, "tokenizer_config.json")?;
    let config: serde_json::Value = std::fs::read(&config_path)
        .map_err(|e| model_error(&config_path, e))
        .and_then(|bytes| {
            serde_json::from_slice(&bytes).map_err(|e| model_error(&config_path, e))
        })?;
    let pad_token = match &config["pad_token"] {
        serde_json::Value::String(s) => s.clone(),
        other => other["content"].as_str().unwrap_or("[PAD]").to_string(),
    };
    let max_length = config["model_max_length"]
        .as_f64()
        .map_or(MAX_TOKENS, |n| MAX_TOKENS.min(n as usize));
    let tokenizer = WordPiece::from_file(&path, max_length).map_err(|e| model_error(&path, e))?;
    let pad_id = tokenizer.token_to_id(&pad_token).ok_or_else(|| {
        model_error(
            &path,
            format!("padding token {pad_token:?} is not in the vocabulary"),
        )
    })?;
    Ok((tokenizer, pad_id))
}

/// The mean of each row's real-token states (`mask` 1), scaled to unit length.
fn mean_pool(states: &[f32], mask: &[i64], width: usize) -> Vec<Vec<f32>> {
    if width == 0 {
        return Vec::new();
    }
    mask.chunks(width)
        .zip(states.chunks(width * DIM))
        .map(|(row_mask, row_states)| {
            let mut sum = vec![0f32; DIM];
            let mut tokens = 0f32;
            for (&m, token) in row_mask.iter().zip(row_states.chunks(DIM)) {
                if m != 0 {
                    sum.iter_mut().zip(token).for_each(|(s, x)| *s += x);
                    tokens += 1.0;
                }
            }
            sum.iter_mut().for_each(|s| *s /= tokens.max(1.0));
            normalize(&mut sum);
            sum
        })
        .collect()
}

impl Embedder for OnnxEmbedder {
    fn model_id(&self) -> &str {
        MODEL_ID
    }

    fn dim(&self) -> usize {
        DIM
    }

    fn is_draft(&self) -> bool {
        self.draft
    }

    fn embed(&mut self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let Some(mut cache) = self.cache.take() else {
            return self.embed_uncached(texts);
        };
        let mut vectors = vec![Vec::new(); texts.len()];
        let mut missing = Vec::new();
        for (i, text) in texts.iter().enumerate() {
            match cache.get(text) {
                Some(vector) => vectors[i] = vector.to_vec(),
                None => missing.push(i),
            }
        }
        let missing_texts: Vec<&str> = missing.iter().map(|&i| texts[i]).collect();
        let computed = if missing_texts.is_empty() {
            Ok(Vec::new())
        } else {
            self.embed_uncached(&missing_texts)
        };
        let filled = computed.map(|computed| {
            for (&i, vector) in missing.iter().zip(computed) {
                cache.insert(texts[i], &vector);
                vectors[i] = vector;
            }
            vectors
        });
        self.cache = Some(cache);
        filled
    }
}

impl OnnxEmbedder {
    /// [`Embedder::embed`] by the model, without the cache.
    fn embed_uncached(&mut self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut vectors = vec![Vec::new(); texts.len()];
        for batch in batches_by_length(texts) {
            let batch_texts: Vec<&str> = batch.iter().map(|&i| texts[i]).collect();
            for (&i, vector) in batch.iter().zip(self.embed_batch(&batch_texts)?) {
                vectors[i] = vector;
            }
        }
        Ok(vectors)
    }
}

/// The texts' positions in batches of [`BATCH`] texts of similar length. A
/// batch is padded to its longest text, and the model's work grows with the
/// padded width: in arrival order, real transcript messages padded to 1.74×
/// their tokens; ordered by length, to 1.01×. Bytes stand in for tokens (the
/// texts are cut to the model's window before they get here).
fn batches_by_length(texts: &[&str]) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..texts.len()).collect();
    order.sort_by_key(|&i| texts[i].len());
    order.chunks(BATCH).map(<[usize]>::to_vec).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_group_similar_lengths_and_cover_every_text_once() {
        let texts: Vec<String> = (0..(2 * BATCH + 5))
            .map(|i| "x".repeat((i * 37) % 301))
            .collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let batches = batches_by_length(&refs);
        assert_eq!(batches.len(), refs.len().div_ceil(BATCH));
        let mut seen: Vec<usize> = batches.iter().flatten().copied().collect();
        seen.sort_unstable();
        assert_eq!(seen, (0..refs.len()).collect::<Vec<_>>());
        for pair in batches.windows(2) {
            let longest = pair[0].iter().map(|&i| refs[i].len()).max();
            let shortest = pair[1].iter().map(|&i| refs[i].len()).min();
            assert!(longest <= shortest);
        }
    }

    #[test]
    fn mean_pool_averages_only_real_tokens() {
        let width = 3;
        let mut states = vec![0f32; 2 * width * DIM];
        // Row 0: tokens [1,0,..], [3,0,..], padding [100,..]; row 1: one token [0,2,..].
        states[0] = 1.0;
        states[DIM] = 3.0;
        states[2 * DIM] = 100.0;
        states[width * DIM + 1] = 2.0;
        let mask = [1, 1, 0, 1, 0, 0];
        let vectors = mean_pool(&states, &mask, width);
        assert_eq!(vectors.len(), 2);
        assert!((vectors[0][0] - 1.0).abs() < 1e-6, "padding is ignored");
        assert!((vectors[1][1] - 1.0).abs() < 1e-6);
    }

    #[test]
    fn mean_pool_of_nothing_is_nothing() {
        assert!(mean_pool(&[], &[], 0).is_empty());
    }
}
