//! Processed prompt prefixes kept for reuse: a multi-turn dialogue sends each
//! turn's whole conversation again, so without this every call processes the
//! same first thousands of tokens from scratch.
//!
//! What is kept is the model's state (its KV cache) after a prompt's first
//! `k × batch` tokens, captured at a batch boundary with at least one more
//! token after it. A later prompt that shares its first `j ≤ k` batches
//! with a kept state restores it, drops the positions after those `j`
//! batches, and processes only the batches after them. A state whose tokens
//! a newer state extends (the same conversation a turn later) serves no
//! prompt the newer one cannot, so it is dropped: one state per
//! conversation, not one per turn.
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

    /// The kept state sharing the most whole batches (of `batch` tokens)
    /// with `tokens`, short of `tokens`' last token: how many tokens they
    /// share, how many the state holds, and the state.
    pub(crate) fn longest(&mut self, tokens: &[LlamaToken], batch: usize) -> Option<(usize, usize, Arc<S>)> {
        self.clock += 1;
        let clock = self.clock;
        let limit = tokens.len().saturating_sub(1) / batch * batch;
        let shared = |entry: &Entry<S>| {
            let common = entry
                .tokens
                .iter()
                .zip(tokens)
                .take_while(|(a, b)| a == b)
                .count();
            common.min(limit) / batch * batch
        };
        let entry = self
            .entries
            .iter_mut()
            .map(|entry| (shared(entry), entry))
            .filter(|(shared, _)| *shared > 0)
            .max_by_key(|(shared, entry)| (*shared, std::cmp::Reverse(entry.tokens.len())))?;
        let (shared, entry) = entry;
        entry.last_used = clock;
        Some((shared, entry.tokens.len(), Arc::clone(&entry.state)))
    }

    /// Whether a kept state holds `tokens` (they are its tokens or a prefix
    /// of them).
    pub(crate) fn covers(&self, tokens: &[LlamaToken]) -> bool {
        self.entries.iter().any(|entry| entry.tokens.starts_with(tokens))
    }

    /// Keeps `state` as the state after `tokens`, dropping the states it
    /// extends and evicting the least recently used until it fits; a state
    /// already covered, or larger than the whole capacity, is not kept.
    pub(crate) fn insert(&mut self, tokens: Vec<LlamaToken>, state: S) {
        let bytes = state.byte_len();
        if bytes > self.capacity || self.covers(&tokens) {
            return;
        }
        let mut index = 0;
        while index < self.entries.len() {
            if tokens.starts_with(&self.entries[index].tokens) {
                let extended = self.entries.swap_remove(index);
                self.used -= extended.state.byte_len();
            } else {
                index += 1;
            }
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
    fn the_most_shared_whole_batches_short_of_the_last_token_are_restored() {
        let mut cache = PrefixCache::new(1000);
        cache.insert(tokens(0..8), Fake(10));
        cache.insert(tokens(100..108), Fake(10));
        let shared = |cache: &mut PrefixCache<Fake>, prompt: &[LlamaToken]| {
            cache.longest(prompt, 4).map(|(shared, held, _)| (shared, held))
        };
        assert_eq!(shared(&mut cache, &tokens(0..12)), Some((8, 8)));
        // Never the prompt's last token: its logits are not kept.
        assert_eq!(shared(&mut cache, &tokens(0..8)), Some((4, 8)));
        // A prompt that parts from a state inside its second batch shares the first.
        let mut parting = tokens(0..12);
        parting[6] = LlamaToken(999);
        assert_eq!(shared(&mut cache, &parting), Some((4, 8)));
        // Less than a batch shared is nothing.
        let mut early = tokens(0..12);
        early[2] = LlamaToken(999);
        assert_eq!(shared(&mut cache, &early), None);
        assert_eq!(shared(&mut cache, &tokens(1..12)), None);
    }

    #[test]
    fn a_state_its_extension_covers_is_dropped() {
        let mut cache = PrefixCache::new(1000);
        cache.insert(tokens(0..4), Fake(10));
        cache.insert(tokens(0..8), Fake(20));
        assert_eq!((cache.used, cache.entries.len()), (20, 1));
        // A prefix of a kept state is covered: not kept again.
        cache.insert(tokens(0..4), Fake(10));
        assert_eq!((cache.used, cache.entries.len()), (20, 1));
        assert!(cache.covers(&tokens(0..4)) && !cache.covers(&tokens(0..9)));
    }

    #[test]
    fn the_least_recently_used_state_goes_first_and_bytes_stay_under_the_capacity() {
        let mut cache = PrefixCache::new(25);
        cache.insert(tokens(0..4), Fake(10));
        cache.insert(tokens(10..14), Fake(10));
        // Using the first makes the second the oldest.
        assert_eq!(cache.longest(&tokens(0..5), 4).unwrap().0, 4);
        cache.insert(tokens(20..24), Fake(10));
        assert_eq!(cache.used, 20);
        assert!(cache.covers(&tokens(0..4)));
        assert!(!cache.covers(&tokens(10..14)));
        assert!(cache.covers(&tokens(20..24)));
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
        assert!(cache.longest(&tokens(0..8), 4).is_none());
    }
}
