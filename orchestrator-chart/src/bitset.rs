//! [`StateSet`]: a fixed-capacity bitset of [`StateId`]s.
//!
//! Charts with up to 256 states (every realistic chart) keep their bits inline, so a set is a
//! 40-byte value whose clone never allocates; larger charts spill to one boxed slice. The
//! interpreter keeps its scratch sets for the life of the machine, so no set is allocated on
//! the path of an ordinary transition either way.

use std::fmt;

use crate::model::StateId;

/// Number of 64-bit words stored inline (256 states).
const INLINE_WORDS: usize = 4;

#[derive(Clone, PartialEq, Eq, Hash)]
enum Repr {
    Inline([u64; INLINE_WORDS]),
    Heap(Box<[u64]>),
}

/// A set of states of one chart, as a bitset indexed by [`StateId`] (document order).
///
/// The capacity (the chart's state count) is fixed at creation. Iteration is in document order
/// ([`StateSet::iter`]) or reverse document order ([`StateSet::iter_rev`]).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct StateSet {
    capacity: u32,
    repr: Repr,
}

impl Default for StateSet {
    fn default() -> Self {
        Self::new(0)
    }
}

fn words_for(capacity: usize) -> usize {
    capacity.div_ceil(64)
}

impl StateSet {
    /// An empty set able to hold states `0..capacity`.
    pub fn new(capacity: usize) -> Self {
        let n = words_for(capacity);
        let repr =
            if n <= INLINE_WORDS { Repr::Inline([0; INLINE_WORDS]) } else { Repr::Heap(vec![0; n].into()) };
        Self { capacity: u32::try_from(capacity).unwrap_or(u32::MAX), repr }
    }

    /// How many states this set can hold (the chart's state count).
    pub fn capacity(&self) -> usize {
        self.capacity as usize
    }

    pub(crate) fn words(&self) -> &[u64] {
        match &self.repr {
            Repr::Inline(w) => &w[..words_for(self.capacity as usize)],
            Repr::Heap(b) => b,
        }
    }

    fn words_mut(&mut self) -> &mut [u64] {
        let n = words_for(self.capacity as usize);
        match &mut self.repr {
            Repr::Inline(w) => &mut w[..n],
            Repr::Heap(b) => b,
        }
    }

    /// Whether `id` is in the set (false when out of range).
    #[inline]
    pub fn contains(&self, id: StateId) -> bool {
        let i = id.index();
        i < self.capacity as usize && self.words()[i / 64] & (1 << (i % 64)) != 0
    }

    /// Adds `id`; returns whether it was newly added.
    ///
    /// # Panics
    /// If `id` is beyond the capacity (a state of another chart).
    #[inline]
    pub fn insert(&mut self, id: StateId) -> bool {
        let i = id.index();
        assert!(i < self.capacity as usize, "state {i} outside a set of capacity {}", self.capacity);
        let w = &mut self.words_mut()[i / 64];
        let bit = 1 << (i % 64);
        let added = *w & bit == 0;
        *w |= bit;
        added
    }

    /// Removes `id`; returns whether it was present.
    #[inline]
    pub fn remove(&mut self, id: StateId) -> bool {
        let i = id.index();
        if i >= self.capacity as usize {
            return false;
        }
        let w = &mut self.words_mut()[i / 64];
        let bit = 1 << (i % 64);
        let present = *w & bit != 0;
        *w &= !bit;
        present
    }

    /// Removes every state.
    pub fn clear(&mut self) {
        self.words_mut().fill(0);
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.words().iter().all(|w| *w == 0)
    }

    /// Number of states in the set.
    pub fn len(&self) -> usize {
        self.words().iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Makes `self` equal to `other` without reallocating when the capacities agree.
    pub fn copy_from(&mut self, other: &StateSet) {
        if self.capacity == other.capacity {
            self.words_mut().copy_from_slice(other.words());
        } else {
            *self = other.clone();
        }
    }

    /// Whether the two sets share a state.
    pub fn intersects(&self, other: &StateSet) -> bool {
        self.words().iter().zip(other.words()).any(|(a, b)| a & b != 0)
    }

    /// States in document order.
    pub fn iter(&self) -> Iter<'_> {
        Iter { words: self.words(), index: 0, current: self.words().first().copied().unwrap_or(0) }
    }

    /// States in reverse document order (descendants before their ancestors).
    pub fn iter_rev(&self) -> IterRev<'_> {
        let words = self.words();
        IterRev { words, index: words.len(), current: words.last().copied().unwrap_or(0) }
    }

    /// Whether any state with index in `lo..=hi` is in the set (`lo > hi` is the empty range).
    pub(crate) fn any_in_range(&self, lo: usize, hi: usize) -> bool {
        let mut any = false;
        let words = self.words();
        for_range(lo, hi, |w, mask| any |= words[w] & mask != 0);
        any
    }

    /// `self |= other ∩ (lo..=hi)`.
    pub(crate) fn union_range(&mut self, other: &StateSet, lo: usize, hi: usize) {
        let src = other.words();
        let dst = self.words_mut();
        for_range(lo, hi, |w, mask| dst[w] |= src[w] & mask);
    }

    /// `self = other ∩ mask ∩ (lo..=hi)`, clearing everything else.
    pub(crate) fn assign_masked_range(
        &mut self,
        other: &StateSet,
        mask_set: &StateSet,
        lo: usize,
        hi: usize,
    ) {
        self.clear();
        let src = other.words();
        let m = mask_set.words();
        let dst = self.words_mut();
        for_range(lo, hi, |w, mask| dst[w] = src[w] & m[w] & mask);
    }
}

/// Calls `f(word_index, mask)` for every word overlapping the inclusive bit range `lo..=hi`.
fn for_range(lo: usize, hi: usize, mut f: impl FnMut(usize, u64)) {
    if lo > hi {
        return;
    }
    let (wlo, whi) = (lo / 64, hi / 64);
    for w in wlo..=whi {
        let mut mask = !0u64;
        if w == wlo {
            mask &= !0u64 << (lo % 64);
        }
        if w == whi {
            let b = hi % 64;
            if b < 63 {
                mask &= (1u64 << (b + 1)) - 1;
            }
        }
        f(w, mask);
    }
}

impl fmt::Debug for StateSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter().map(|s| s.0)).finish()
    }
}

/// Ascending iterator over a [`StateSet`].
#[derive(Debug, Clone)]
pub struct Iter<'a> {
    words: &'a [u64],
    index: usize,
    current: u64,
}

impl Iterator for Iter<'_> {
    type Item = StateId;

    #[inline]
    fn next(&mut self) -> Option<StateId> {
        loop {
            if self.current != 0 {
                let bit = self.current.trailing_zeros() as usize;
                self.current &= self.current - 1;
                return Some(StateId::from_index(self.index * 64 + bit));
            }
            self.index += 1;
            self.current = *self.words.get(self.index)?;
        }
    }
}

/// Descending iterator over a [`StateSet`].
#[derive(Debug, Clone)]
pub struct IterRev<'a> {
    words: &'a [u64],
    /// One past the word held in `current`.
    index: usize,
    current: u64,
}

impl Iterator for IterRev<'_> {
    type Item = StateId;

    #[inline]
    fn next(&mut self) -> Option<StateId> {
        loop {
            if self.index == 0 {
                return None;
            }
            if self.current != 0 {
                let bit = 63 - self.current.leading_zeros() as usize;
                self.current &= !(1u64 << bit);
                return Some(StateId::from_index((self.index - 1) * 64 + bit));
            }
            self.index -= 1;
            if self.index == 0 {
                return None;
            }
            self.current = self.words[self.index - 1];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(v: &[usize]) -> Vec<StateId> {
        v.iter().map(|i| StateId::from_index(*i)).collect()
    }

    #[test]
    fn insert_iterate_both_ways() {
        for cap in [1, 63, 64, 65, 200, 256, 257, 1000] {
            let mut s = StateSet::new(cap);
            let members: Vec<usize> = (0..cap).filter(|i| i % 7 == 0 || i % 64 == 63).collect();
            for m in &members {
                assert!(s.insert(StateId::from_index(*m)));
            }
            assert_eq!(s.iter().collect::<Vec<_>>(), ids(&members));
            let mut rev = members.clone();
            rev.reverse();
            assert_eq!(s.iter_rev().collect::<Vec<_>>(), ids(&rev));
            assert_eq!(s.len(), members.len());
        }
    }

    #[test]
    fn ranges() {
        let mut s = StateSet::new(300);
        s.insert(StateId::from_index(70));
        assert!(s.any_in_range(0, 70));
        assert!(s.any_in_range(70, 299));
        assert!(!s.any_in_range(71, 299));
        assert!(!s.any_in_range(0, 69));
        assert!(!s.any_in_range(5, 4));
        let mut all = StateSet::new(300);
        for i in 0..300 {
            all.insert(StateId::from_index(i));
        }
        let mut t = StateSet::new(300);
        t.union_range(&all, 60, 130);
        assert_eq!(t.len(), 71);
        assert_eq!(t.iter().next(), Some(StateId::from_index(60)));
        assert_eq!(t.iter_rev().next(), Some(StateId::from_index(130)));
    }
}
