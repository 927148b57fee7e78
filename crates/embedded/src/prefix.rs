//! Processed prompt prefixes kept for reuse: a multi-turn dialogue sends each
//! turn's whole conversation again, so without this every call processes the
//! same first thousands of tokens from scratch.
//!
//! What is kept is the model's state (its KV cache) after a prompt's first
//! `k × batch` tokens, captured at a batch boundary with at least one more
//! token after it. A later prompt that starts with the same `k × batch`
//! tokens restores that state and processes only the batches after it.
//!
//! This changes no output. The prompt is always processed in batches that
//! start at multiples of the batch size, whether or not a prefix was
//! restored, so every batch after the restored prefix is the same batch, at
//! the same positions, over the same keys and values, that a call without
//! the cache decodes; the restored state is byte for byte the state that
//! call would have computed. A state is only captured after a full batch
//! that is not the prompt's last (whose logits flags are those of any longer
//! prompt's). `generate`'s tests check the equality on real prompts.
//!
//! Memory is bounded: states are evicted least recently used first once
//! their bytes pass the capacity ([`crate::Options::prefix_cache_bytes`]).

use std::sync::Arc;

use llama_cpp_2::context::session::SeqState;
use llama_cpp_2::token::LlamaToken;

/// What a kept state costs.
pub(crate) trait StateBytes {
    fn byte_len(&self) -> usize;
}

impl StateBytes for SeqState {
    fn byte_len(&self) -> usize {
        SeqState::byte_len(self)
    }
}

/// Captured states, each with the token prefix it is the state of.
#[derive(Debug)]
pub(crate) struct PrefixCache<S = SeqState> {
    capacity: usize,
    used: usize,
    clock: u64,
    entries: Vec<Entry<S>>,
}

#[derive(Debug)]
struct Entry<S> {
    tokens: Vec<LlamaToken>,
    state: Arc<S>,
    last_used: u64,
}

impl<S: StateBytes> PrefixCache<S> {
    /// An empty cache holding at most `capacity` bytes of state.
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            capacity,
            used: 0,
            clock: 0,
            entries: Vec::new(),
        }
    }

    /// Whether states are kept at all.
    pub(crate) fn enabled(&self) -> bool {
        self.capacity > 0
    }

    /// The state of the longest kept prefix of `tokens` shorter than
    /// `tokens` itself, with its length.
    pub(crate) fn longest(&mut self, tokens: &[LlamaToken]) -> Option<(usize, Arc<S>)> {
        self.clock += 1;
        let clock = self.clock;
        let entry = self
            .entries
            .iter_mut()
            .filter(|entry| entry.tokens.len() < tokens.len() && tokens.starts_with(&entry.tokens))
            .max_by_key(|entry| entry.tokens.len())?;
        entry.last_used = clock;
        Some((entry.tokens.len(), Arc::clone(&entry.state)))
    }

    /// Whether the state of exactly `tokens` is kept.
    pub(crate) fn contains(&self, tokens: &[LlamaToken]) -> bool {
        self.entries.iter().any(|entry| entry.tokens == tokens)
    }

    /// Keeps `state` as the state after `tokens`, evicting the least recently
    /// used states until it fits; a state larger than the whole capacity is
    /// not kept.
    pub(crate) fn insert(&mut self, tokens: Vec<LlamaToken>, state: S) {
        let bytes = state.byte_len();
        if bytes > self.capacity || self.contains(&tokens) {
            return;
        }
        while self.used + bytes > self.capacity {
            let Some(oldest) = self
                .entries
                .iter()
                .enumerate()
                .min_by_key(|(_, entry)| entry.last_used)
                .map(|(index, _)| index)
            else {
                break;
            };
            let evicted = self.entries.swap_remove(oldest);
            self.used -= evicted.state.byte_len();
        }
        self.clock += 1;
        self.used += bytes;
        self.entries.push(Entry {
            tokens,
            state: Arc::new(state),
            last_used: self.clock,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fake(usize);

    impl StateBytes for Fake {
        fn byte_len(&self) -> usize {
            self.0
        }
    }

    fn tokens(ids: std::ops::Range<i32>) -> Vec<LlamaToken> {
        ids.map(LlamaToken).collect()
    }

    #[test]
    fn the_longest_kept_prefix_shorter_than_the_prompt_is_restored() {
        let mut cache = PrefixCache::new(1000);
        cache.insert(tokens(0..4), Fake(10));
        cache.insert(tokens(0..8), Fake(10));
        cache.insert(tokens(100..108), Fake(10));
        let (length, _) = cache.longest(&tokens(0..12)).unwrap();
        assert_eq!(length, 8);
        // A prefix as long as the prompt is never restored: its last logits are not kept.
        let (length, _) = cache.longest(&tokens(0..8)).unwrap();
        assert_eq!(length, 4);
        // A prompt that differs inside a kept prefix gets the shorter one.
        let mut diverging = tokens(0..12);
        diverging[6] = LlamaToken(999);
        assert_eq!(cache.longest(&diverging).unwrap().0, 4);
        assert!(cache.longest(&tokens(1..12)).is_none());
    }

    #[test]
    fn the_least_recently_used_state_goes_first_and_bytes_stay_under_the_capacity() {
        let mut cache = PrefixCache::new(25);
        cache.insert(tokens(0..4), Fake(10));
        cache.insert(tokens(10..14), Fake(10));
        // Using the first makes the second the oldest.
        assert_eq!(cache.longest(&tokens(0..5)).unwrap().0, 4);
        cache.insert(tokens(20..24), Fake(10));
        assert_eq!(cache.used, 20);
        assert!(cache.contains(&tokens(0..4)));
        assert!(!cache.contains(&tokens(10..14)));
        assert!(cache.contains(&tokens(20..24)));
        // Kept once: the same prefix again changes nothing.
        cache.insert(tokens(20..24), Fake(10));
        assert_eq!((cache.used, cache.entries.len()), (20, 2));
        // Larger than the whole capacity: not kept, nothing evicted.
        cache.insert(tokens(30..34), Fake(26));
        assert_eq!((cache.used, cache.entries.len()), (20, 2));
    }

    #[test]
    fn a_cache_of_no_bytes_keeps_nothing() {
        let mut cache = PrefixCache::new(0);
        assert!(!cache.enabled());
        cache.insert(tokens(0..4), Fake(1));
        assert!(cache.longest(&tokens(0..8)).is_none());
    }
}
