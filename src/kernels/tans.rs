//! tANS streams decoded side by side, one per 64-bit lane of a 512-bit vector (x86_64
//! AVX-512F): the vector form of the entropy coder's four-lane decoder
//! (`encodings::entropy`, modes 4 and 5).
//!
//! One stream alone is bound by a chain of dependent steps: a state selects a table
//! entry, the entry says how many bits to read, and the bits make the next state, while
//! the next bit position waits on the entry too. Within a stream that chain cannot be
//! cut without a new format, but the chunks of a page are independent streams: eight of
//! them in a vector make eight chains that advance together, one gather of table entries
//! a step for all eight, and a second vector of eight overlaps its gathers' waits with
//! the first's.
//!
//! A step of the four-lane format reads lane `i % 4`'s state, so a group of four steps
//! uses each lane's state once: the four entry gathers of a group are independent of one
//! another. The group's bits (at most 48: four reads of at most 12) come from one 64-bit
//! word a stream, gathered at the stream's byte position and shifted by its bit offset;
//! each lane's bits start at the sum of the counts before it in the group.
//!
//! Bounds: a table index is a state masked to its table's size, and a group starts only
//! when every stream's 8-byte word at its position lies within its bit stream. Whatever is
//! left goes back to the caller's scalar decoder, which also checks each stream's end.

/// One decoding state of a tANS table: the symbol it yields, how many bits to read and
/// the base of the next state. Four bytes, in this order, so a vector gather reads one as
/// a 32-bit integer: `symbol | bits << 8 | base << 16`.
#[derive(Debug, Clone, Copy, Default)]
#[repr(C, align(4))]
pub(crate) struct DecodeEntry {
    pub(crate) symbol: u8,
    pub(crate) bits: u8,
    pub(crate) base: u16,
}

/// Most streams decoded side by side: two vectors of eight, whose chains of gathers
/// overlap.
pub(crate) const STREAMS: usize = 16;

/// Streams a vector holds, one per 64-bit lane.
pub(crate) const PER_VECTOR: usize = 8;

/// Fewest streams worth a vector of their own: a vector's step costs about as much with
/// one stream as with eight, and the scalar decoder takes about a third of a vector's
/// time for one stream.
pub(crate) const MIN_PER_VECTOR: usize = 4;

/// A stream of the four-lane format in the middle of its decoding.
#[derive(Debug)]
pub(crate) struct Cursor<'a> {
    /// The decoding table: a power of two of entries, every state below its size.
    pub(crate) table: &'a [DecodeEntry],
    /// The bit stream, LSB first, and whatever follows it (peeks past the stream's end
    /// are the caller's to reject).
    pub(crate) bits: &'a [u8],
    /// The decoded symbols: step `i` writes byte `i`.
    pub(crate) out: &'a mut [u8],
    /// The four lanes' states.
    pub(crate) states: [usize; 4],
    /// The bit position of the next step.
    pub(crate) pos: usize,
}

/// The vector kernel, where this CPU has AVX-512F, unless the environment variable
/// `MINIBLOCK_TANS` is `scalar` (for comparisons: streams then decode one at a time).
fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        static HAS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *HAS.get_or_init(|| {
            std::is_x86_feature_detected!("avx512f")
                && std::env::var("MINIBLOCK_TANS").as_deref() != Ok("scalar")
        })
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether [`decode4`] decodes anything on this CPU.
pub(crate) fn has_kernel() -> bool {
    available()
}

/// Runs steps `from..to` of every cursor (2 to [`STREAMS`] of them, each with `to` bytes
/// of output at least), four steps at a time, while every stream's next word lies within
/// its bits; returns the step reached, the same for all, with each cursor's states and
/// position advanced to it. `from` must be a multiple of four (steps of a group are in
/// lanes 0 to 3). Without a kernel, or with arguments outside these bounds, it decodes
/// nothing and returns `from`.
pub(crate) fn decode4(cursors: &mut [Cursor], from: usize, to: usize) -> usize {
    let fits = (2..=STREAMS).contains(&cursors.len())
        && from.is_multiple_of(4)
        && cursors
            .iter()
            .all(|c| c.out.len() >= to && c.bits.len() >= 8 && c.table.len().is_power_of_two());
    if !available() || !fits || from + 4 > to {
        return from;
    }
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: the CPU has AVX-512F (`available`), and the bounds the kernel relies on
        // (cursor count, output lengths, at least 8 bytes of bits, tables of a power of
        // two of entries) were checked just above.
        unsafe {
            if cursors.len() > PER_VECTOR {
                decode4_avx512::<2>(cursors, from, to)
            } else {
                decode4_avx512::<1>(cursors, from, to)
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        from
    }
}

/// One vector's worth of 64-bit lanes, aligned as a vector is: the kernel's per-stream
/// values (offsets, masks, positions, states) go between memory and registers through
/// these. The compiler may turn a load of a stack array into an aligned vector load
/// (`vmovdqa64`), which faults unless the array is 64-aligned; with the alignment in the
/// type, it realigns the frame to match.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Lanes([i64; PER_VECTOR]);

/// [`decode4`]'s loop over `SETS` vectors of eight streams.
///
/// # Safety
/// The CPU must have AVX-512F; `cursors` holds 2 to `8 * SETS` cursors, each with at
/// least `to` bytes of output, at least 8 bytes of bits and a table of a power of two of
/// entries; `from` is a multiple of four.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[allow(clippy::cast_possible_wrap, clippy::cast_ptr_alignment)]
unsafe fn decode4_avx512<const SETS: usize>(
    cursors: &mut [Cursor],
    from: usize,
    to: usize,
) -> usize {
    use core::arch::x86_64::{
        __m512i, _mm512_add_epi64, _mm512_and_si512, _mm512_cmpgt_epu64_mask,
        _mm512_cvtepi64_epi32, _mm512_cvtepu32_epi64, _mm512_i64gather_epi32,
        _mm512_i64gather_epi64, _mm512_load_si512, _mm512_mask_i64scatter_epi32,
        _mm512_mask_i64scatter_epi64, _mm512_or_si512, _mm512_set1_epi64, _mm512_slli_epi64,
        _mm512_sllv_epi64, _mm512_srli_epi64, _mm512_srlv_epi64, _mm512_store_si512,
        _mm512_sub_epi64,
    };

    let count = cursors.len();
    // Lane k of vector s holds stream 8s + k; lanes past `count` repeat stream 0: they
    // read only its memory, and their symbols are not stored.
    let pick = |s: usize, k: usize| {
        let index = PER_VECTOR * s + k;
        if index < count {
            index
        } else {
            0
        }
    };
    // Byte offsets from stream 0's output, table and bits: each gather and scatter
    // addresses its streams from one base.
    let out_base = cursors[0].out.as_mut_ptr();
    let out_at: [Lanes; SETS] = std::array::from_fn(|s| {
        Lanes(std::array::from_fn(|k| {
            (cursors[pick(s, k)].out.as_mut_ptr() as i64).wrapping_sub(out_base as i64)
        }))
    });
    let table_base = cursors[0].table.as_ptr().cast::<u8>();
    let bits_base = cursors[0].bits.as_ptr();
    let per = |f: &dyn Fn(&Cursor) -> i64| -> [Lanes; SETS] {
        std::array::from_fn(|s| Lanes(std::array::from_fn(|k| f(&cursors[pick(s, k)]))))
    };
    let table_at = per(&|c| (c.table.as_ptr() as i64).wrapping_sub(table_base as i64));
    let bits_at = per(&|c| (c.bits.as_ptr() as i64).wrapping_sub(bits_base as i64));
    let masks = per(&|c| c.table.len() as i64 - 1);
    // The last byte a word may start at.
    let limits = per(&|c| c.bits.len() as i64 - 8);
    let positions = per(&|c| c.pos as i64);
    let states: [[Lanes; SETS]; 4] = std::array::from_fn(|j| per(&|c| c.states[j] as i64));
    let load = |a: &Lanes| {
        // SAFETY: `a` holds 8 i64, 64 bytes, aligned to 64.
        unsafe { _mm512_load_si512(a.0.as_ptr().cast()) }
    };
    let loads = |a: &[Lanes; SETS]| -> [__m512i; SETS] { std::array::from_fn(|s| load(&a[s])) };
    let (out_at, table_at, bits_at, masks, limits) = (
        loads(&out_at),
        loads(&table_at),
        loads(&bits_at),
        loads(&masks),
        loads(&limits),
    );
    let mut pos = loads(&positions);
    let mut state: [[__m512i; 4]; SETS] =
        std::array::from_fn(|s| std::array::from_fn(|j| load(&states[j][s])));
    // The lanes of each vector that hold a stream of their own.
    let own: [u8; SETS] = std::array::from_fn(|s| {
        let lanes = count.saturating_sub(PER_VECTOR * s).min(PER_VECTOR);
        ((1u16 << lanes) - 1) as u8
    });
    let (seven, byte, one) = (
        _mm512_set1_epi64(7),
        _mm512_set1_epi64(0xFF),
        _mm512_set1_epi64(1),
    );
    let mut i = from;
    // Two groups an iteration: each lane's eight symbols go out in one 64-bit store.
    while i + 8 <= to {
        let mut packed = [_mm512_set1_epi64(0); SETS];
        let mut groups = 0;
        for half in 0..2 {
            let mut over = 0;
            for (p, limit) in pos.iter().zip(&limits) {
                over |= _mm512_cmpgt_epu64_mask(_mm512_srli_epi64::<3>(*p), *limit);
            }
            if over != 0 {
                break;
            }
            for s in 0..SETS {
                let at = _mm512_srli_epi64::<3>(pos[s]);
                // SAFETY: each lane's `at` is at most its stream's bit length less 8
                // (checked above), so the 8 bytes read lie within that stream's bits.
                let word = unsafe {
                    _mm512_i64gather_epi64::<1>(_mm512_add_epi64(bits_at[s], at), bits_base.cast())
                };
                let word = _mm512_srlv_epi64(word, _mm512_and_si512(pos[s], seven));
                let entries: [__m512i; 4] = std::array::from_fn(|j| {
                    let index = _mm512_slli_epi64::<2>(_mm512_and_si512(state[s][j], masks[s]));
                    // SAFETY: a state masked to its table's size (a power of two) is an
                    // entry of that table; 4 bytes are read at 4 times it.
                    _mm512_cvtepu32_epi64(unsafe {
                        _mm512_i64gather_epi32::<1>(
                            _mm512_add_epi64(table_at[s], index),
                            table_base.cast(),
                        )
                    })
                });
                let mut offset = _mm512_set1_epi64(0);
                for (j, entry) in entries.iter().enumerate() {
                    let bits = _mm512_and_si512(_mm512_srli_epi64::<8>(*entry), byte);
                    let low = _mm512_and_si512(
                        _mm512_srlv_epi64(word, offset),
                        _mm512_sub_epi64(_mm512_sllv_epi64(one, bits), one),
                    );
                    state[s][j] = _mm512_add_epi64(_mm512_srli_epi64::<16>(*entry), low);
                    offset = _mm512_add_epi64(offset, bits);
                    let symbol = _mm512_and_si512(*entry, byte);
                    packed[s] = _mm512_or_si512(
                        packed[s],
                        _mm512_sllv_epi64(symbol, _mm512_set1_epi64(8 * (4 * half + j) as i64)),
                    );
                }
                pos[s] = _mm512_add_epi64(pos[s], offset);
            }
            groups += 1;
        }
        for s in 0..SETS {
            let at = _mm512_add_epi64(out_at[s], _mm512_set1_epi64(i as i64));
            if groups == 2 {
                // SAFETY: `i + 8 <= to <= out.len()` for every stream; only lanes of a
                // stream of their own store, 8 bytes at its output's byte `i`.
                unsafe {
                    _mm512_mask_i64scatter_epi64::<1>(out_base.cast(), own[s], at, packed[s]);
                };
            } else if groups == 1 {
                // SAFETY: `i + 4 <= to <= out.len()` for every stream; only lanes of a
                // stream of their own store, 4 bytes at its output's byte `i`.
                unsafe {
                    _mm512_mask_i64scatter_epi32::<1>(
                        out_base.cast(),
                        own[s],
                        at,
                        _mm512_cvtepi64_epi32(packed[s]),
                    );
                }
            }
        }
        i += 4 * groups;
        if groups < 2 {
            break;
        }
    }
    let mut out = Lanes([0; PER_VECTOR]);
    for s in 0..SETS {
        let own = count.saturating_sub(PER_VECTOR * s).min(PER_VECTOR);
        let streams = &mut cursors[PER_VECTOR * s..PER_VECTOR * s + own];
        // SAFETY: `out` holds 8 i64, 64 bytes, aligned to 64.
        unsafe { _mm512_store_si512(out.0.as_mut_ptr().cast(), pos[s]) };
        for (cursor, &p) in streams.iter_mut().zip(&out.0) {
            cursor.pos = p as usize;
        }
        for (j, lane_states) in state[s].iter().enumerate() {
            // SAFETY: as above.
            unsafe { _mm512_store_si512(out.0.as_mut_ptr().cast(), *lane_states) };
            for (cursor, &v) in streams.iter_mut().zip(&out.0) {
                cursor.states[j] = v as usize;
            }
        }
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    fn next(x: &mut u64) -> u64 {
        *x ^= *x << 13;
        *x ^= *x >> 7;
        *x ^= *x << 17;
        *x
    }

    /// A table of `2^log` entries of random symbols, bit counts up to `log` and bases
    /// that keep every next state below `2^log`, as a real table's are.
    fn table(log: u32, x: &mut u64) -> Vec<DecodeEntry> {
        (0..1usize << log)
            .map(|_| {
                let bits = (next(x) % u64::from(log + 1)) as u32;
                let base = next(x) % ((1u64 << log) - (1u64 << bits) + 1);
                DecodeEntry {
                    symbol: next(x) as u8,
                    bits: bits as u8,
                    base: base as u16,
                }
            })
            .collect()
    }

    /// Steps `from..to` one at a time, each reading its bits at its own position.
    fn reference(c: &mut Cursor, from: usize, to: usize) {
        for i in from..to {
            let entry = c.table[c.states[i % 4] & (c.table.len() - 1)];
            c.out[i] = entry.symbol;
            let b = u32::from(entry.bits);
            let mut word = 0u64;
            for (k, byte) in c.bits.iter().skip(c.pos / 8).take(8).enumerate() {
                word |= u64::from(*byte) << (8 * k);
            }
            let low = (word >> (c.pos % 8)) & ((1u64 << b) - 1);
            c.states[i % 4] = usize::from(entry.base) + low as usize;
            c.pos += b as usize;
        }
    }

    /// Every count of streams, tables of every size, bit streams that end at every
    /// point (so that the kernel stops early, or not at all), every start and end: the
    /// symbols, states and positions are those of the step-by-step reference.
    #[test]
    fn decodes_as_a_step_by_step_reference() {
        if !has_kernel() {
            eprintln!("SKIPPED: no AVX-512F on this CPU; the tANS kernel is not run");
            return;
        }
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for round in 0..400 {
            let count = 2 + round % (STREAMS - 1);
            let to = [0, 4, 8, 12, 16, 40, 100, 1020][round % 8];
            let from = 4 * (next(&mut x) as usize % (to / 4 + 1));
            let tables: Vec<Vec<DecodeEntry>> = (0..count)
                .map(|k| table(1 + (k + round) as u32 % 12, &mut x))
                .collect();
            let bits: Vec<Vec<u8>> = (0..count)
                .map(|_| {
                    let len = 8 + next(&mut x) as usize % (to * 2 + 8);
                    (0..len).map(|_| next(&mut x) as u8).collect()
                })
                .collect();
            let starts: Vec<([usize; 4], usize)> = (0..count)
                .map(|k| {
                    let states = std::array::from_fn(|_| next(&mut x) as usize % tables[k].len());
                    (states, next(&mut x) as usize % 64)
                })
                .collect();
            let mut outs = vec![vec![0u8; to]; count];
            let mut expected = vec![vec![0u8; to]; count];
            let mut cursors: Vec<Cursor> = outs
                .iter_mut()
                .enumerate()
                .map(|(k, out)| Cursor {
                    table: &tables[k],
                    bits: &bits[k],
                    out,
                    states: starts[k].0,
                    pos: starts[k].1,
                })
                .collect();
            let reached = decode4(&mut cursors, from, to);
            assert!(
                reached.is_multiple_of(4) && (from..=to).contains(&reached),
                "{round}"
            );
            let got: Vec<([usize; 4], usize)> = cursors.iter().map(|c| (c.states, c.pos)).collect();
            drop(cursors);
            for k in 0..count {
                let mut c = Cursor {
                    table: &tables[k],
                    bits: &bits[k],
                    out: &mut expected[k],
                    states: starts[k].0,
                    pos: starts[k].1,
                };
                reference(&mut c, from, reached);
                assert_eq!((c.states, c.pos), got[k], "round {round}, stream {k}");
                assert_eq!(
                    outs[k][from..reached],
                    expected[k][from..reached],
                    "{round} {k}"
                );
                // The kernel stops only where a stream's next word would pass its end.
                if reached + 4 <= to && reached + 8 <= to {
                    assert!(
                        got.iter().zip(&bits).any(|(g, b)| g.1 / 8 + 8 > b.len()),
                        "round {round} stopped at {reached} of {to} with words left"
                    );
                }
            }
        }
    }

    /// Bounds the kernel cannot take decode nothing.
    #[test]
    fn refuses_what_it_cannot_take() {
        let table = [DecodeEntry::default(); 16];
        let bits = vec![0u8; 64];
        let short = vec![0u8; 7];
        let mut outs = vec![vec![0u8; 32]; STREAMS + 1];
        let mut make = |n: usize, bits: &[u8], table_len: usize, out_len: usize| -> usize {
            let mut cursors: Vec<Cursor> = outs
                .iter_mut()
                .take(n)
                .map(|out| Cursor {
                    table: &table[..table_len],
                    bits,
                    out: &mut out[..out_len],
                    states: [0; 4],
                    pos: 0,
                })
                .collect();
            decode4(&mut cursors, 0, 32)
        };
        assert_eq!(make(1, &bits, 16, 32), 0);
        assert_eq!(make(STREAMS + 1, &bits, 16, 32), 0);
        assert_eq!(make(4, &short, 16, 32), 0);
        assert_eq!(make(4, &bits, 12, 32), 0);
        assert_eq!(make(4, &bits, 16, 31), 0);
        if has_kernel() {
            assert_eq!(make(4, &bits, 16, 32), 32);
        }
    }
}
