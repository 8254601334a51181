//! tANS streams decoded side by side, one per lane of a 512-bit vector (x86_64 AVX-512):
//! the vector form of the entropy coder's four-lane decoder (`encodings::entropy`, modes
//! 4 and 5).
//!
//! One stream alone is bound by a chain of dependent steps: a state selects a table
//! entry, the entry says how many bits to read, and the bits make the next state, while
//! the next bit position waits on the entry too. Within a stream that chain cannot be
//! cut without a new format, but the chunks of a page are independent streams: in a
//! vector they make chains that advance together, one gather of table entries a step for
//! all of them, and a second vector overlaps its gathers' waits with the first's.
//!
//! A step of the four-lane format reads lane `i % 4`'s state, so a group of four steps
//! uses each lane's state once: the four entry gathers of a group are independent of one
//! another. The group's bits (at most 48: four reads of at most 12) come from one 64-bit
//! word a stream, gathered at the stream's byte position; each read starts at the stream's
//! bit offset plus the counts before it in the group.
//!
//! Two forms ([`Kernel`]): sixteen streams a vector in 32-bit lanes where the CPU has
//! AVX-512 VBMI2 (the default), else eight in 64-bit lanes (AVX-512F). Every state, count
//! and bit position fits 32 bits, so the narrow form does a step's arithmetic for twice
//! the streams an instruction; only the words are 64-bit, gathered as two vectors of
//! eight, split into their low and high halves, and read across the two with a funnel
//! shift (`vpshrdvd`) whose count stays under 32: after two reads (at most 7 + 24 bits
//! in) both halves move on.
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

/// Most streams [`decode4`] takes with the kernel `kernel`: two vectors.
const fn max_streams(kernel: Kernel) -> usize {
    2 * per_vector_of(kernel)
}

/// Streams a vector of `kernel` holds: one per 64-bit lane ([`Kernel::Wide`]) or per
/// 32-bit lane ([`Kernel::Narrow`]).
const fn per_vector_of(kernel: Kernel) -> usize {
    match kernel {
        Kernel::Wide => 8,
        Kernel::Narrow => 16,
    }
}

/// Fewest streams worth a vector of their own: a vector's step costs about as much with
/// one stream as with a full vector, and the scalar decoder takes about a third of a
/// vector's time for one stream.
pub(crate) const MIN_PER_VECTOR: usize = 4;

/// The two forms of the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kernel {
    /// Eight streams a vector in 64-bit lanes (AVX-512F): each stream's bits are read a
    /// 64-bit word a group of four steps, and every address is a 64-bit offset.
    Wide,
    /// Sixteen streams a vector in 32-bit lanes (AVX-512F and VBMI2): half the
    /// instructions a symbol. A group's 64-bit words are split into their 32-bit halves
    /// and each step's bits taken across the two with a funnel shift (`vpshrdvd`); table
    /// and bit-stream addresses are 32-bit offsets from the first stream's, so streams
    /// whose tables or bits lie further apart go to the wide form.
    Narrow,
}

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

/// The kernels this CPU has, the default first; found once.
fn kernels() -> &'static [Kernel] {
    static FOUND: std::sync::OnceLock<Vec<Kernel>> = std::sync::OnceLock::new();
    FOUND.get_or_init(|| {
        let mut found = Vec::new();
        #[cfg(target_arch = "x86_64")]
        {
            if super::allows(super::CpuLevel::Avx512) && std::is_x86_feature_detected!("avx512f") {
                if std::is_x86_feature_detected!("avx512vbmi2") {
                    found.push(Kernel::Narrow);
                }
                found.push(Kernel::Wide);
            }
        }
        found
    })
}

/// The kernel decoding uses: the first of [`kernels`], unless the environment variable
/// `MINIBLOCK_TANS` is `scalar` (none: streams then decode one at a time) or `wide` (the
/// wide form), for comparisons.
fn kernel() -> Option<Kernel> {
    static KERNEL: std::sync::OnceLock<Option<Kernel>> = std::sync::OnceLock::new();
    *KERNEL.get_or_init(|| {
        let found = kernels();
        match std::env::var("MINIBLOCK_TANS").as_deref() {
            Ok("scalar") => None,
            Ok("wide") => found.iter().copied().find(|&k| k == Kernel::Wide),
            _ => found.first().copied(),
        }
    })
}

/// Whether [`decode4`] decodes anything on this CPU.
pub(crate) fn has_kernel() -> bool {
    kernel().is_some()
}

/// Most streams [`decode4`] takes at once.
pub(crate) fn streams() -> usize {
    kernel().map_or(max_streams(Kernel::Wide), max_streams)
}

/// Streams a vector of [`decode4`]'s kernel holds.
pub(crate) fn per_vector() -> usize {
    kernel().map_or(per_vector_of(Kernel::Wide), per_vector_of)
}

/// Whether [`decode4`]'s kernel decodes streams whose bits lie at `bits` where they are:
/// the narrow kernel addresses them by 32-bit offsets from the first, so they must lie
/// within 2 GiB of one another (as the chunks of one page do).
pub(crate) fn takes_in_place<'a>(bits: impl IntoIterator<Item = &'a [u8]>) -> bool {
    let mut span: Option<(usize, usize)> = None;
    for b in bits {
        let (start, end) = (b.as_ptr() as usize, b.as_ptr() as usize + b.len());
        span = Some(span.map_or((start, end), |(lo, hi)| (lo.min(start), hi.max(end))));
    }
    span.is_none_or(|(lo, hi)| hi - lo < 1 << 31)
}

/// Runs steps `from..to` of every cursor (2 to [`streams`] of them, each with `to` bytes
/// of output at least), four steps at a time, while every stream's next word lies within
/// its bits; returns the step reached, the same for all, with each cursor's states and
/// position advanced to it. `from` must be a multiple of four (steps of a group are in
/// lanes 0 to 3). Without a kernel, or with arguments outside these bounds, it decodes
/// nothing and returns `from`.
pub(crate) fn decode4(cursors: &mut [Cursor], from: usize, to: usize) -> usize {
    match kernel() {
        Some(kernel) => decode4_with(kernel, cursors, from, to),
        None => from,
    }
}

/// [`decode4`] with `kernel`, which the CPU must have.
fn decode4_with(kernel: Kernel, cursors: &mut [Cursor], from: usize, to: usize) -> usize {
    decode4_copying(kernel, cursors, from, to, false)
}

/// [`decode4_with`], the narrow kernel's tables copied side by side even where they need
/// not be with `copy_tables` (for tests).
fn decode4_copying(
    kernel: Kernel,
    cursors: &mut [Cursor],
    from: usize,
    to: usize,
    copy_tables: bool,
) -> usize {
    let fits = (2..=max_streams(kernel)).contains(&cursors.len())
        && from.is_multiple_of(4)
        && cursors
            .iter()
            .all(|c| c.out.len() >= to && c.bits.len() >= 8 && c.table.len().is_power_of_two());
    if !fits || from + 4 > to {
        return from;
    }
    #[cfg(target_arch = "x86_64")]
    {
        // Checked for real: the kernels are unsound without their features.
        assert!(kernels().contains(&kernel), "a kernel this CPU lacks");
        if kernel == Kernel::Narrow {
            if let Some(offsets) = NarrowOffsets::new(cursors, copy_tables) {
                // SAFETY: the CPU has AVX-512F and VBMI2 (asserted above); the bounds the
                // kernel relies on (cursor count, output lengths, at least 8 bytes of
                // bits, tables of a power of two of entries) were checked just above, and
                // the 32-bit offsets by `NarrowOffsets::new`.
                return unsafe {
                    if cursors.len() > per_vector_of(Kernel::Narrow) {
                        decode4_narrow::<2>(cursors, &offsets, from, to)
                    } else {
                        decode4_narrow::<1>(cursors, &offsets, from, to)
                    }
                };
            }
            if cursors.len() > max_streams(Kernel::Wide) {
                return from;
            }
        }
        // SAFETY: the CPU has AVX-512F (asserted above), and the bounds the kernel relies
        // on (cursor count, output lengths, at least 8 bytes of bits, tables of a power
        // of two of entries) were checked just above.
        unsafe {
            if cursors.len() > per_vector_of(Kernel::Wide) {
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

/// Where the narrow kernel finds each stream's table and bits: as 32-bit offsets, in
/// entries from `table_base` and in bytes from the first stream's bits; and each stream's
/// bit position in 32 bits. Tables that lie too far apart for such offsets (allocated by
/// different threads, say) are copied side by side into `arena`, each once; streams whose
/// bits lie too far apart are not taken (`None`): `entropy::decode_many` gives them all
/// in one buffer.
struct NarrowOffsets {
    /// The first stream's table, the base where tables were not copied.
    first: *const DecodeEntry,
    /// The copies, if tables were copied.
    arena: Vec<DecodeEntry>,
    table_at: Vec<i32>,
    bits_at: Vec<i32>,
    pos: Vec<u32>,
}

impl NarrowOffsets {
    /// The offsets of `cursors`, their tables copied if they are too far apart or if
    /// `copy_tables`.
    fn new(cursors: &[Cursor], copy_tables: bool) -> Option<Self> {
        let fits = |v: i64| i32::try_from(v).is_ok();
        let bits_base = cursors.first()?.bits.as_ptr() as i64;
        let mut bits_at = Vec::with_capacity(cursors.len());
        let mut pos = Vec::with_capacity(cursors.len());
        for c in cursors {
            let bits = (c.bits.as_ptr() as i64).wrapping_sub(bits_base);
            let bits_end = bits.checked_add(i64::try_from(c.bits.len()).ok()?)?;
            // Every byte the kernel reads lies between an offset and its end, at a bit
            // position of at most 8 times the bits' length (in 32 bits).
            if !(fits(bits) && fits(bits_end))
                || c.bits.len() >= 1 << 28
                || c.pos > 8 * c.bits.len()
            {
                return None;
            }
            bits_at.push(bits as i32);
            pos.push(c.pos as u32);
        }
        // Entries are 4 bytes and 4-aligned: a difference of addresses is a whole number
        // of them.
        let table_base = cursors[0].table.as_ptr();
        let direct: Option<Vec<i32>> = (!copy_tables).then_some(()).and_then(|()| {
            cursors
                .iter()
                .map(|c| {
                    let at = (c.table.as_ptr() as i64).wrapping_sub(table_base as i64) / 4;
                    let end = at.checked_add(i64::try_from(c.table.len()).ok()?)?;
                    (fits(at) && fits(end)).then_some(at as i32)
                })
                .collect()
        });
        if let Some(table_at) = direct {
            return Some(Self {
                first: table_base,
                arena: Vec::new(),
                table_at,
                bits_at,
                pos,
            });
        }
        let mut arena: Vec<DecodeEntry> = Vec::new();
        let mut copied: Vec<(*const DecodeEntry, usize, i32)> = Vec::new();
        let mut table_at = Vec::with_capacity(cursors.len());
        for c in cursors {
            let key = (c.table.as_ptr(), c.table.len());
            let at = if let Some(&(_, _, at)) = copied.iter().find(|&&(p, n, _)| (p, n) == key) {
                at
            } else {
                let at = i32::try_from(arena.len()).ok()?;
                arena.extend_from_slice(c.table);
                i32::try_from(arena.len()).ok()?;
                copied.push((key.0, key.1, at));
                at
            };
            table_at.push(at);
        }
        Some(Self {
            first: table_base,
            arena,
            table_at,
            bits_at,
            pos,
        })
    }

    /// Where `table_at` counts from: the arena, or the first stream's table.
    fn table_base(&self) -> *const DecodeEntry {
        if self.arena.is_empty() {
            self.first
        } else {
            self.arena.as_ptr()
        }
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

/// Streams a vector of the wide kernel holds.
const PER_VECTOR: usize = per_vector_of(Kernel::Wide);

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
        _mm512_mask_i64scatter_epi64, _mm512_set1_epi64, _mm512_sllv_epi64, _mm512_srli_epi64,
        _mm512_srlv_epi64, _mm512_sub_epi64, _mm512_ternarylogic_epi64,
    };

    let count = cursors.len();
    let pick = |s: usize, k: usize| lane_stream(count, PER_VECTOR, s, k);
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
    // In entries: every table is an array of 4-byte entries, 4-aligned.
    let table_at = per(&|c| (c.table.as_ptr() as i64).wrapping_sub(table_base as i64) / 4);
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
                    let index = _mm512_and_si512(state[s][j], masks[s]);
                    // SAFETY: a state masked to its table's size (a power of two) is an
                    // entry of that table; 4 bytes are read at 4 times it.
                    _mm512_cvtepu32_epi64(unsafe {
                        _mm512_i64gather_epi32::<4>(
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
                    // packed | (entry << 8k & 0xFF << 8k): the symbol to byte k.
                    let k = 8 * (4 * half + j) as u32;
                    packed[s] = _mm512_ternarylogic_epi64::<0xF8>(
                        packed[s],
                        _mm512_sllv_epi64(*entry, _mm512_set1_epi64(i64::from(k))),
                        _mm512_set1_epi64(0xFF << k),
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
    write_back::<PER_VECTOR>(cursors, &pos, &state);
    i
}

/// The stream of lane `k` of vector `s`, of `count` streams `per` a vector: stream
/// `per * s + k`; lanes past the last stream repeat stream 0 (they read only its memory,
/// and their symbols are not stored).
fn lane_stream(count: usize, per: usize, s: usize, k: usize) -> usize {
    let index = per * s + k;
    if index < count {
        index
    } else {
        0
    }
}

/// Writes each vector's bit positions `pos` and states `state` back to its streams'
/// cursors, `PER` streams a vector: 8 in 64-bit lanes or 16 in 32-bit lanes.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
fn write_back<const PER: usize>(
    cursors: &mut [Cursor],
    pos: &[core::arch::x86_64::__m512i],
    state: &[[core::arch::x86_64::__m512i; 4]],
) {
    use core::arch::x86_64::{__m512i, _mm512_store_si512};
    let count = cursors.len();
    let mut out = Lanes([0; PER_VECTOR]);
    let mut store = |v: &__m512i| -> [usize; 16] {
        // SAFETY: `out` holds 64 bytes, aligned to 64.
        unsafe { _mm512_store_si512(out.0.as_mut_ptr().cast(), *v) };
        // Lane k: a whole i64, or (little-endian) half k % 2 of i64 k / 2.
        std::array::from_fn(|k| {
            if PER == PER_VECTOR {
                out.0[k % PER_VECTOR] as usize
            } else {
                (out.0[k / 2] as u64 >> (32 * (k % 2))) as u32 as usize
            }
        })
    };
    for (s, (p, states)) in pos.iter().zip(state).enumerate() {
        let own = count.saturating_sub(PER * s).min(PER);
        let streams = &mut cursors[PER * s..PER * s + own];
        let lanes = store(p);
        for (cursor, &p) in streams.iter_mut().zip(&lanes) {
            cursor.pos = p;
        }
        for (j, lane_states) in states.iter().enumerate() {
            let lanes = store(lane_states);
            for (cursor, &v) in streams.iter_mut().zip(&lanes) {
                cursor.states[j] = v;
            }
        }
    }
}

/// Sixteen 32-bit lanes, aligned as a vector is (see [`Lanes`]).
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Lanes32([u32; 16]);

/// [`decode4`]'s loop in 32-bit lanes over `SETS` vectors of sixteen streams.
///
/// # Safety
/// The CPU must have AVX-512F and AVX-512 VBMI2; `cursors` holds 2 to `16 * SETS`
/// cursors, each with at least `to` bytes of output, at least 8 bytes of bits and a table
/// of a power of two of entries; `from` is a multiple of four; `offsets` are those of
/// `cursors` (`NarrowOffsets::new`).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vbmi2")]
#[allow(
    clippy::cast_possible_wrap,
    clippy::cast_ptr_alignment,
    clippy::cast_possible_truncation,
    clippy::too_many_lines
)]
unsafe fn decode4_narrow<const SETS: usize>(
    cursors: &mut [Cursor],
    offsets: &NarrowOffsets,
    from: usize,
    to: usize,
) -> usize {
    use core::arch::x86_64::{
        __m512i, _mm512_add_epi32, _mm512_and_si512, _mm512_andnot_si512, _mm512_castsi512_si256,
        _mm512_cmpgt_epu32_mask, _mm512_extracti64x4_epi64, _mm512_i32gather_epi32,
        _mm512_i32gather_epi64, _mm512_load_si512, _mm512_permutex2var_epi32, _mm512_set1_epi32,
        _mm512_setr_epi32, _mm512_setzero_si512, _mm512_shrdv_epi32, _mm512_sllv_epi32,
        _mm512_srli_epi32, _mm512_srlv_epi32, _mm512_store_si512, _mm512_ternarylogic_epi32,
        _mm512_unpackhi_epi32, _mm512_unpacklo_epi32,
    };
    const PER: usize = 16;
    let count = cursors.len();
    let pick = |s: usize, k: usize| lane_stream(count, PER, s, k);
    let per = |f: &dyn Fn(usize) -> u32| -> [Lanes32; SETS] {
        std::array::from_fn(|s| Lanes32(std::array::from_fn(|k| f(pick(s, k)))))
    };
    // The arena, if tables were copied, is `offsets`'s and outlives this call.
    let table_base = offsets.table_base().cast::<u8>();
    let bits_base = cursors[0].bits.as_ptr();
    let table_at = per(&|c| offsets.table_at[c] as u32);
    let bits_at = per(&|c| offsets.bits_at[c] as u32);
    let masks = per(&|c| (cursors[c].table.len() - 1) as u32);
    // The last byte a word may start at.
    let limits = per(&|c| (cursors[c].bits.len() - 8) as u32);
    let positions = per(&|c| offsets.pos[c]);
    // States masked to their table, as the kernel masks each before using it.
    let states: [[Lanes32; SETS]; 4] = std::array::from_fn(|j| {
        per(&|c| (cursors[c].states[j] & (cursors[c].table.len() - 1)) as u32)
    });
    let load = |a: &Lanes32| {
        // SAFETY: `a` holds 16 u32, 64 bytes, aligned to 64.
        unsafe { _mm512_load_si512(a.0.as_ptr().cast()) }
    };
    let loads = |a: &[Lanes32; SETS]| -> [__m512i; SETS] { std::array::from_fn(|s| load(&a[s])) };
    let (table_at, bits_at, masks, limits) = (
        loads(&table_at),
        loads(&bits_at),
        loads(&masks),
        loads(&limits),
    );
    let mut pos = loads(&positions);
    let mut state: [[__m512i; 4]; SETS] =
        std::array::from_fn(|s| std::array::from_fn(|j| load(&states[j][s])));
    let (seven, byte, ones) = (
        _mm512_set1_epi32(7),
        _mm512_set1_epi32(0xFF),
        _mm512_set1_epi32(-1),
    );
    // The low and the high halves of two vectors of eight 64-bit words, in word order.
    let halves = [
        _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30),
        _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31),
    ];
    // Where each stream's output starts; only streams of their own are stored.
    let outs: Vec<*mut u8> = cursors.iter_mut().map(|c| c.out.as_mut_ptr()).collect();
    let mut i = from;
    // Two groups an iteration: each lane's eight symbols go out in one 64-bit store.
    while i + 8 <= to {
        // Each group's symbols, four bytes a stream.
        let mut packed = [[_mm512_setzero_si512(); SETS]; 2];
        let mut groups = 0;
        for symbols_of in &mut packed {
            let mut over = 0;
            for (p, limit) in pos.iter().zip(&limits) {
                over |= _mm512_cmpgt_epu32_mask(_mm512_srli_epi32::<3>(*p), *limit);
            }
            if over != 0 {
                break;
            }
            for s in 0..SETS {
                let at = _mm512_add_epi32(bits_at[s], _mm512_srli_epi32::<3>(pos[s]));
                // SAFETY: each lane's byte offset from the first stream's bits is its
                // stream's offset plus at most its bit length less 8 (checked above), so
                // the 8 bytes read lie within that stream's bits.
                let (first, second) = unsafe {
                    (
                        _mm512_i32gather_epi64::<1>(_mm512_castsi512_si256(at), bits_base.cast()),
                        _mm512_i32gather_epi64::<1>(
                            _mm512_extracti64x4_epi64::<1>(at),
                            bits_base.cast(),
                        ),
                    )
                };
                let mut low_half = _mm512_permutex2var_epi32(first, halves[0], second);
                let mut high_half = _mm512_permutex2var_epi32(first, halves[1], second);
                let entries: [__m512i; 4] = std::array::from_fn(|j| {
                    let index =
                        _mm512_add_epi32(table_at[s], _mm512_and_si512(state[s][j], masks[s]));
                    // SAFETY: a state masked to its table's size (a power of two) is an
                    // entry of that table, found at its offset in entries from the base
                    // (the first stream's table, or the arena of copies).
                    unsafe { _mm512_i32gather_epi32::<4>(index, table_base.cast()) }
                });
                // The bit of the word each step starts at (a group takes at most 48 bits
                // from bit 7 at most: within the word's 64), and the bits taken before
                // the window was moved on.
                let mut offset = _mm512_and_si512(pos[s], seven);
                let mut moved = _mm512_setzero_si512();
                let mut symbols = _mm512_setzero_si512();
                for (j, entry) in entries.iter().enumerate() {
                    if j == 2 {
                        // At most 7 + 24 bits in: move the window on, so the funnel
                        // shifts below stay under 32.
                        low_half = _mm512_shrdv_epi32(low_half, high_half, offset);
                        high_half = _mm512_srlv_epi32(high_half, offset);
                        moved = offset;
                        offset = _mm512_setzero_si512();
                    }
                    let bits = _mm512_and_si512(_mm512_srli_epi32::<8>(*entry), byte);
                    // The word's low `bits` bits: those under a mask of ones shifted up.
                    let low = _mm512_andnot_si512(
                        _mm512_sllv_epi32(ones, bits),
                        _mm512_shrdv_epi32(low_half, high_half, offset),
                    );
                    state[s][j] = _mm512_add_epi32(_mm512_srli_epi32::<16>(*entry), low);
                    offset = _mm512_add_epi32(offset, bits);
                    // symbols | (entry << 8j & 0xFF << 8j): the symbol to byte j.
                    let k = 8 * j as u32;
                    symbols = _mm512_ternarylogic_epi32::<0xF8>(
                        symbols,
                        _mm512_sllv_epi32(*entry, _mm512_set1_epi32(k as i32)),
                        _mm512_set1_epi32((0xFFu32 << k) as i32),
                    );
                }
                pos[s] = _mm512_add_epi32(
                    _mm512_andnot_si512(seven, pos[s]),
                    _mm512_add_epi32(moved, offset),
                );
                symbols_of[s] = symbols;
            }
            groups += 1;
        }
        for s in 0..SETS {
            let own = count.saturating_sub(PER * s).min(PER);
            if groups == 2 {
                // Each stream's eight symbols as one 64-bit word: within each 128-bit
                // lane, streams 4m, 4m + 1 in the low unpack and 4m + 2, 4m + 3 in the high.
                let mut words = [Lanes32([0; 16]); 2];
                // SAFETY: each holds 64 bytes, aligned to 64.
                unsafe {
                    _mm512_store_si512(
                        words[0].0.as_mut_ptr().cast(),
                        _mm512_unpacklo_epi32(packed[0][s], packed[1][s]),
                    );
                    _mm512_store_si512(
                        words[1].0.as_mut_ptr().cast(),
                        _mm512_unpackhi_epi32(packed[0][s], packed[1][s]),
                    );
                }
                for k in 0..own {
                    let (m, at) = (k / 4, 2 * (k % 2));
                    let w = &words[(k % 4) / 2].0[4 * m + at..4 * m + at + 2];
                    let word = u64::from(w[0]) | u64::from(w[1]) << 32;
                    // SAFETY: `i + 8 <= to <= out.len()` for every stream.
                    unsafe {
                        outs[PER * s + k]
                            .add(i)
                            .cast::<u64>()
                            .write_unaligned(word.to_le());
                    }
                }
            } else if groups == 1 {
                let mut words = Lanes32([0; 16]);
                // SAFETY: `words` holds 64 bytes, aligned to 64.
                unsafe { _mm512_store_si512(words.0.as_mut_ptr().cast(), packed[0][s]) };
                for k in 0..own {
                    // SAFETY: `i + 4 <= to <= out.len()` for every stream.
                    unsafe {
                        outs[PER * s + k]
                            .add(i)
                            .cast::<u32>()
                            .write_unaligned(words.0[k].to_le());
                    }
                }
            }
        }
        i += 4 * groups;
        if groups < 2 {
            break;
        }
    }
    write_back::<PER>(cursors, &pos, &state);
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
        let found = kernels();
        if !found.contains(&Kernel::Narrow) {
            eprintln!("SKIPPED: no AVX-512 VBMI2 on this CPU; the narrow tANS kernel is not run");
        }
        if found.is_empty() {
            eprintln!("SKIPPED: no AVX-512F on this CPU; the tANS kernels are not run");
        }
        for &kernel in found {
            decodes_as_the_reference_with(kernel);
        }
    }

    fn decodes_as_the_reference_with(kernel: Kernel) {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for round in 0..600 {
            let count = 2 + round % (max_streams(kernel) - 1);
            let to = [0, 4, 8, 12, 16, 40, 100, 1020][round % 8];
            let from = 4 * (next(&mut x) as usize % (to / 4 + 1));
            let tables: Vec<Vec<DecodeEntry>> = (0..count)
                .map(|k| table(1 + (k + round) as u32 % 12, &mut x))
                .collect();
            // The bit streams lie in one buffer, as `entropy::decode_many` gives them.
            let lens: Vec<usize> = (0..count)
                .map(|_| 8 + next(&mut x) as usize % (to * 2 + 8))
                .collect();
            let buffer: Vec<u8> = (0..lens.iter().sum::<usize>())
                .map(|_| next(&mut x) as u8)
                .collect();
            let mut rest = &buffer[..];
            let bits: Vec<&[u8]> = lens
                .iter()
                .map(|&len| {
                    let (this, after) = rest.split_at(len);
                    rest = after;
                    this
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
                    bits: bits[k],
                    out,
                    states: starts[k].0,
                    pos: starts[k].1,
                })
                .collect();
            let reached = decode4_copying(kernel, &mut cursors, from, to, round % 2 == 1);
            assert!(
                reached.is_multiple_of(4) && (from..=to).contains(&reached),
                "{kernel:?} {round}"
            );
            let got: Vec<([usize; 4], usize)> = cursors.iter().map(|c| (c.states, c.pos)).collect();
            drop(cursors);
            for k in 0..count {
                let mut c = Cursor {
                    table: &tables[k],
                    bits: bits[k],
                    out: &mut expected[k],
                    states: starts[k].0,
                    pos: starts[k].1,
                };
                reference(&mut c, from, reached);
                assert_eq!(
                    (c.states, c.pos),
                    got[k],
                    "{kernel:?} round {round}, stream {k}"
                );
                assert_eq!(
                    outs[k][from..reached],
                    expected[k][from..reached],
                    "{kernel:?} {round} {k}"
                );
                // The kernel stops only where a stream's next word would pass its end.
                if reached + 4 <= to && reached + 8 <= to {
                    assert!(
                        got.iter().zip(&bits).any(|(g, b)| g.1 / 8 + 8 > b.len()),
                        "{kernel:?} round {round} stopped at {reached} of {to} with words left: {:?}", got.iter().zip(&bits).map(|(g, b)| (g.1, b.len())).collect::<Vec<_>>()
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
        let mut outs = vec![vec![0u8; 32]; streams() + 1];
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
        assert_eq!(make(streams() + 1, &bits, 16, 32), 0);
        assert_eq!(make(4, &short, 16, 32), 0);
        assert_eq!(make(4, &bits, 12, 32), 0);
        assert_eq!(make(4, &bits, 16, 31), 0);
        if has_kernel() {
            assert_eq!(make(4, &bits, 16, 32), 32);
        }
    }
}
