use std::fs;

use knowledge_db::embed::DIM;

use super::embedder::{append_to_cache, load_cache};

fn vector(seed: f32) -> Vec<f32> {
    (0..DIM).map(|i| seed + i as f32).collect()
}

#[test]
fn the_vector_cache_survives_a_run_killed_while_saving() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cache.bin");
    let (a, b, c) = (vector(1.0), vector(2.0), vector(3.0));
    append_to_cache(&path, [(1, a.as_slice()), (2, b.as_slice())].into_iter()).unwrap();
    // Killed halfway through writing entry 2.
    let len = fs::metadata(&path).unwrap().len();
    let file = fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.set_len(len - 100).unwrap();
    append_to_cache(&path, [(3, c.as_slice())].into_iter()).unwrap();
    let cache = load_cache(&path).unwrap();
    assert_eq!(
        cache.len(),
        2,
        "the torn entry is dropped, the next one is whole"
    );
    assert_eq!(cache[&1], a);
    assert_eq!(cache[&3], c);
}
