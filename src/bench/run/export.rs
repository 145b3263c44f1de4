//! The data the peers (`benches/peers.py`) need to index and query the same
//! records the same way: documents and queries as JSON lines, their vectors as
//! row-major little-endian f32.

use std::fs;
use std::io::{BufWriter, Write};
use std::path::Path;

use knowledge_db::embed::text::embedding_text;
use knowledge_db::embed::{Embedder, DIM};
use knowledge_db::error::{Error, Result};
use knowledge_db::record::Record;

use super::embedder::BenchEmbedder;

/// Writes what the peers need to index and query the same data the same way.
pub(super) fn export(
    dir: &Path,
    records: &[Record],
    queries: &[knowledge_db::search::batch::BatchQuery],
    targets: &[String],
    embedder: &mut BenchEmbedder,
) -> Result<()> {
    fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let create = |name: &str| -> Result<BufWriter<fs::File>> {
        let path = dir.join(name);
        fs::File::create(&path)
            .map(BufWriter::new)
            .map_err(|e| Error::io(&path, e))
    };
    let io = |e| Error::io(dir, e);
    let (mut docs, mut doc_vectors) = (create("docs.jsonl")?, create("doc_vectors.f32")?);
    for record in records {
        let text = format!("{}\n{}", record.fields.title, record.display_text());
        let line = serde_json::json!({"id": record.id, "text": text.trim()});
        writeln!(docs, "{line}").map_err(io)?;
        let vector = embedder
            .embed(&[embedding_text(record).as_str()])
            .map_err(|e| Error::Usage(e.to_string()))?;
        let row = vector.first().map_or_else(
            || vec![0u8; DIM * 4],
            |v| knowledge_db::index::embedding_bytes(v),
        );
        doc_vectors.write_all(&row).map_err(io)?;
    }
    let (mut out, mut query_vectors) = (create("queries.jsonl")?, create("query_vectors.f32")?);
    let texts: Vec<&str> = queries.iter().map(|q| q.text.as_str()).collect();
    let model = embedder.model().map_err(|e| Error::Usage(e.to_string()))?;
    for (chunk, chunk_targets) in texts
        .chunks(knowledge_db::embed::BATCH)
        .zip(targets.chunks(knowledge_db::embed::BATCH))
    {
        let vectors = model
            .embed(chunk)
            .map_err(|e| Error::Usage(e.to_string()))?;
        for ((text, target), v) in chunk.iter().zip(chunk_targets).zip(vectors) {
            let line = serde_json::json!({"text": text, "target": target});
            writeln!(out, "{line}").map_err(io)?;
            query_vectors
                .write_all(&knowledge_db::index::embedding_bytes(&v))
                .map_err(io)?;
        }
    }
    for mut file in [docs, doc_vectors, out, query_vectors] {
        file.flush().map_err(io)?;
    }
    Ok(())
}
