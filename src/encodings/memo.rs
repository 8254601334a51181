//! A memo of chunk analyses, kept while one page is encoded.
//!
//! `auto` encodes a page's sampled chunks with several candidates, builds page tables from
//! up to 64 of them, and then encodes the page: a chunk can go through the same analysis
//! five times. What an encoding derives from a chunk before storing it depends only on
//! the chunk's bytes and the kind of analysis (ALP's scale, integers and exceptions are
//! the same for `alp+zstd` and `alp+ans`), so within [`scoped`] the first analysis of a
//! chunk is kept and the later ones reuse it.
//!
//! Entries are found by the chunk's address and length, and then compared byte for byte
//! with a copy of the chunk: an entry is reused only for the very same values. Outside a
//! scope (a compressor called on its own) nothing is kept. The memo holds at most
//! [`MEMO_BYTES`] of chunks (oldest dropped first) and is freed when its scope ends.
//! What is reused equals what would have been computed, so the bytes written do not
//! depend on it.

use std::any::{Any, TypeId};
use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::rc::Rc;

/// Chunk bytes the memo holds at most: a default page's worth twice over.
const MEMO_BYTES: usize = 2 << 20;

/// What names an entry: the kind of analysis, and the chunk's address and length.
type Key = (TypeId, u8, usize, usize);

struct Entry {
    values: Box<[u8]>,
    analysis: Rc<dyn Any>,
}

struct Memo {
    entries: HashMap<Key, Entry>,
    /// The keys, oldest first.
    order: VecDeque<Key>,
    bytes: usize,
    /// Whether new analyses are kept (else only those kept are found).
    keeping: bool,
}

impl Default for Memo {
    fn default() -> Self {
        Self {
            entries: HashMap::new(),
            order: VecDeque::new(),
            bytes: 0,
            keeping: true,
        }
    }
}

thread_local! {
    static MEMO: RefCell<Option<Memo>> = const { RefCell::new(None) };
}

#[cfg(test)]
thread_local! {
    /// Analyses found kept, on this thread.
    static HITS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// How many analyses this thread found kept so far.
#[cfg(test)]
pub(crate) fn hits() -> usize {
    HITS.with(std::cell::Cell::get)
}

/// Runs `f` with a memo for this thread (the one already open, when scopes nest).
pub(crate) fn scoped<T>(f: impl FnOnce() -> T) -> T {
    /// Frees the memo it opened, even when `f` unwinds.
    struct Close(bool);
    impl Drop for Close {
        fn drop(&mut self) {
            if self.0 {
                MEMO.with(|m| *m.borrow_mut() = None);
            }
        }
    }
    let opened = MEMO.with(|m| {
        let mut memo = m.borrow_mut();
        let open = memo.is_none();
        if open {
            *memo = Some(Memo::default());
        }
        open
    });
    let _close = Close(opened);
    f()
}

/// The analysis of kind `tag` of chunk `values`: `analyse()` the first time within a
/// scope, the kept one after that (always `analyse()` outside a scope). `T` and `tag`
/// together name the kind: one kind's analysis must depend on nothing but the values.
pub(crate) fn analysis<T: 'static>(tag: u8, values: &[u8], analyse: impl FnOnce() -> T) -> Rc<T> {
    let key = (
        TypeId::of::<T>(),
        tag,
        values.as_ptr() as usize,
        values.len(),
    );
    let found = MEMO.with(|m| {
        let memo = m.borrow();
        let entry = memo.as_ref()?.entries.get(&key)?;
        (*entry.values == *values).then(|| Rc::clone(&entry.analysis))
    });
    // Analysed with the memo released: an analysis may itself look things up.
    if let Some(Ok(kept)) = found.map(Rc::downcast::<T>) {
        #[cfg(test)]
        HITS.with(|h| h.set(h.get() + 1));
        return kept;
    }
    let made = Rc::new(analyse());
    MEMO.with(|m| {
        if let Some(memo) = m.borrow_mut().as_mut() {
            memo.keep(
                key,
                Entry {
                    values: values.into(),
                    analysis: Rc::clone(&made) as Rc<dyn Any>,
                },
            );
        }
    });
    made
}

/// From now until the scope ends, analyses are found but no new ones kept: for a last
/// pass, whose new analyses nothing would reuse.
pub(crate) fn stop_keeping() {
    MEMO.with(|m| {
        if let Some(memo) = m.borrow_mut().as_mut() {
            memo.keeping = false;
        }
    });
}

impl Memo {
    fn keep(&mut self, key: Key, entry: Entry) {
        if !self.keeping || entry.values.len() > MEMO_BYTES {
            return;
        }
        self.bytes += entry.values.len();
        if let Some(old) = self.entries.insert(key, entry) {
            // The same chunk's bytes changed since (a caller's buffer reused).
            self.bytes -= old.values.len();
        } else {
            self.order.push_back(key);
        }
        while self.bytes > MEMO_BYTES {
            let oldest = self.order.pop_front().expect("bytes are held by entries");
            let entry = self
                .entries
                .remove(&oldest)
                .expect("every key has its entry");
            self.bytes -= entry.values.len();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;

    #[test]
    fn analyses_are_kept_only_within_a_scope_and_only_for_equal_values() {
        let calls = Cell::new(0);
        let sum = |values: &[u8]| {
            analysis(0, values, || {
                calls.set(calls.get() + 1);
                values.iter().map(|&b| u32::from(b)).sum::<u32>()
            })
        };
        let mut values = vec![1u8, 2, 3];
        assert_eq!(*sum(&values), 6);
        assert_eq!(*sum(&values), 6);
        assert_eq!(calls.get(), 2, "outside a scope nothing is kept");
        scoped(|| {
            assert_eq!(*sum(&values), 6);
            assert_eq!(*sum(&values), 6);
            assert_eq!(calls.get(), 3);
            // Another tag or type is another kind of analysis.
            assert_eq!(*analysis(1, &values, || 7u32), 7);
            assert_eq!(*analysis(0, &values, || 8u64), 8);
            // Same address and length, other bytes: analysed again.
            values[0] = 10;
            assert_eq!(*sum(&values), 15);
            assert_eq!(calls.get(), 4);
            // A nested scope shares the memo.
            scoped(|| assert_eq!(*sum(&values), 15));
            assert_eq!(calls.get(), 4);
        });
        assert_eq!(*sum(&values), 15);
        assert_eq!(calls.get(), 5, "the scope's end frees the memo");
    }

    #[test]
    fn the_memo_holds_a_bounded_number_of_bytes() {
        scoped(|| {
            let chunks: Vec<Vec<u8>> = (0..3).map(|i| vec![i; MEMO_BYTES / 2]).collect();
            for chunk in &chunks {
                analysis(0, chunk, || ());
            }
            let (count, bytes) = MEMO.with(|m| {
                let memo = m.borrow();
                let memo = memo.as_ref().unwrap();
                (memo.entries.len(), memo.bytes)
            });
            assert_eq!((count, bytes), (2, MEMO_BYTES));
            // Too large to keep at all.
            analysis(0, &vec![0u8; MEMO_BYTES + 1], || ());
            assert_eq!(MEMO.with(|m| m.borrow().as_ref().unwrap().entries.len()), 2);
            // After `stop_keeping`, kept analyses are found, new ones not kept.
            stop_keeping();
            let before = hits();
            analysis(0, &chunks[2], || ());
            analysis(0, &[1u8, 2], || ());
            assert_eq!(hits(), before + 1);
            assert_eq!(MEMO.with(|m| m.borrow().as_ref().unwrap().entries.len()), 2);
        });
    }
}
