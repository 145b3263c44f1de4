//! Conversation neighbours: the turn a high-ranking turn replies to.
//!
//! In a conversation the answer to a question often sits one turn before the
//! turn that matches it best: "Yes, I painted one last summer" is followed by
//! "Wow, a sunrise painting! Did you show it anywhere?", which repeats the
//! question's words and carries the first turn as its context. So when a
//! candidate that was linked to its predecessor at add time (see
//! `record::context`) ranks among the first [`FROM_TOP`], that predecessor, if
//! it is a candidate too, is raised toward it: its relevance logit becomes at
//! least its own plus [`RAISE`] times how far the follower stands above the
//! weakest candidate. Records without conversation links are untouched.
//!
//! Measured on LoCoMo (README, Evaluation); SciFact has no conversations and
//! does not change.

/// Share of a follower's lead (over the weakest candidate) its predecessor gets.
pub const RAISE: f32 = 0.3;

/// How many of the best candidates raise their predecessors.
pub const FROM_TOP: usize = 20;

/// Raises, in `logits`, the predecessor of each of the first [`FROM_TOP`]
/// candidates of `order` (best first); `predecessor(i)` is the pool index of
/// candidate `i`'s predecessor when it is in the pool.
pub fn raise_predecessors(
    logits: &mut [f32],
    order: &[usize],
    mut predecessor: impl FnMut(usize) -> Option<usize>,
) {
    let Some(weakest) = logits.iter().copied().reduce(f32::min) else {
        return;
    };
    let before = logits.to_vec();
    for &follower in order.iter().take(FROM_TOP) {
        if let Some(p) = predecessor(follower) {
            let raised = before[p] + RAISE * (before[follower] - weakest);
            logits[p] = logits[p].max(raised);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_strong_follower_lifts_its_predecessor_once() {
        // Candidate 0 follows candidate 2; candidate 1 follows nothing.
        let mut logits = vec![3.0, 2.0, 0.5, 0.0];
        let order = [0, 1, 2, 3];
        raise_predecessors(&mut logits, &order, |i| (i == 0).then_some(2));
        assert!((logits[2] - (0.5 + RAISE * 3.0)).abs() < 1e-6);
        assert_eq!(logits[0], 3.0, "followers keep their own score");
        assert_eq!(logits[1], 2.0);
    }

    #[test]
    fn a_predecessor_already_ahead_keeps_its_score() {
        let mut logits = vec![1.0, 4.0];
        raise_predecessors(&mut logits, &[1, 0], |i| (i == 0).then_some(1));
        assert_eq!(logits, [1.0, 4.0]);
    }
}
