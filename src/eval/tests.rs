use std::collections::HashMap;

use knowledge_db::search::batch::RankedId;

use super::run::credited;

#[test]
fn a_hit_is_credited_with_a_relevant_copy_folded_into_it() {
    let rels = HashMap::from([("b".to_string(), 1.0), ("c".to_string(), 0.0)]);
    let hit = |id: &str, duplicates: &[&str]| RankedId {
        id: id.into(),
        score: 0.5,
        duplicates: duplicates.iter().map(|d| d.to_string()).collect(),
    };
    assert_eq!(credited(&hit("a", &["c", "b"]), &rels), "b");
    assert_eq!(credited(&hit("b", &["a"]), &rels), "b");
    assert_eq!(
        credited(&hit("a", &["c"]), &rels),
        "a",
        "grade 0 is not relevant"
    );
}
