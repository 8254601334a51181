//! Bit-packed offsets back to integers of 1 to 8 bytes, a vector at a time (x86_64
//! AVX-512 VBMI; for `delta`'s patched blocks of 4-byte integers also AVX2,
//! [`blocks4_avx2`]): the vector form of [`bitpack::unpack`](super::bitpack::unpack) with the
//! frame of reference of `encodings::bitpacked` applied in the same registers, and for
//! `delta` the running sums of the differences too.
//!
//! Offsets of `b` bits lie end to end, LSB first. Sixteen of them take exactly `2b`
//! bytes and eight take `b`, so every group of sixteen (or eight) starts on a byte
//! boundary with the same bit phase: one byte permutation (`vpermb`), the same for every
//! group of a chunk, moves each offset's bytes into its lane, and one variable shift, also
//! the same for every group, drops the bits of the offset before it. Lanes are 32 bits
//! where an offset and its phase fit (`b <= 25`), 64 bits otherwise; a 64-bit lane holds
//! 57 bits after its phase, and the widest offsets (58 to 63 bits) take their last bits
//! from a second permutation one byte further on.
//!
//! A value is `(reference + offset) ^ flip`, wrapping at its width; with sums, these are
//! differences, summed once or twice on from the caller's running value and difference.
//! The kernel also returns the widest offset of the chunk, which the caller checks
//! against its reference (an offset may not wrap).
//!
//! Bounds: every load is a masked load of the bytes of `packed` from the group's start
//! (masked-off bytes are not read and cannot fault), and every store a masked store of
//! the group's values within `out`, so nothing is read or written past either slice.

use super::bitpack::packed_len;

/// Whether this CPU has the kernel (AVX-512F, BW and VBMI), checked for real once.
pub(crate) fn has_kernel() -> bool {
    super::unbin::has_fused()
}

/// What the kernel does with each value after the frame of reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Then {
    /// Stores it.
    Store,
    /// Takes it as a difference: stores the running sum, of order 1 (`order2` false) or
    /// 2, on from `prev` (the value before the first) and `delta` (the difference before
    /// the first, order 2 only).
    Sum { order2: bool, prev: u64, delta: u64 },
}

/// Writes `n` values of `width` bytes (1, 2, 4 or 8, little-endian) into `out`, value `i` being
/// `(reference + offset_i) ^ flip` (then summed, per `then`), where `offset_i` is the
/// `i`-th of the `bits`-bit offsets packed in `packed` (exactly
/// [`packed_len`](super::bitpack::packed_len) bytes); returns the widest offset, or `None`
/// (writing nothing) without a kernel or when the arguments are outside these bounds
/// (`bits` over `8 * width`, `packed` of another length, `out` shorter than `n` values).
#[allow(clippy::too_many_arguments)]
pub(crate) fn unpack(
    packed: &[u8],
    n: usize,
    bits: u8,
    width: usize,
    reference: u64,
    flip: u64,
    then: Then,
    out: &mut [u8],
) -> Option<u64> {
    let fits = matches!(width, 1 | 2 | 4 | 8)
        && usize::from(bits) <= 8 * width
        && packed.len() == packed_len(n, bits)
        && n.checked_mul(width).is_some_and(|len| len <= out.len());
    if !has_kernel() || !fits {
        return None;
    }
    #[cfg(target_arch = "x86_64")]
    {
        let (order, prev, delta) = match then {
            Then::Store => (0, 0, 0),
            Then::Sum {
                order2,
                prev,
                delta,
            } => (1 + u8::from(order2), prev, delta),
        };
        let frame = Frame {
            bits: u32::from(bits),
            reference,
            flip,
            prev,
            delta,
        };
        // SAFETY: the CPU has AVX-512F, BW and VBMI (`has_kernel`); `packed` holds the
        // offsets of `n` values at `bits` bits, `bits` is at most the width's and `out`
        // holds `n` values, all checked just above.
        unsafe {
            Some(match (width, order) {
                (1, 0) => unpack32::<0, 1>(packed, n, &frame, out),
                (1, 1) => unpack32::<1, 1>(packed, n, &frame, out),
                (1, _) => unpack32::<2, 1>(packed, n, &frame, out),
                (2, 0) => unpack32::<0, 2>(packed, n, &frame, out),
                (2, 1) => unpack32::<1, 2>(packed, n, &frame, out),
                (2, _) => unpack32::<2, 2>(packed, n, &frame, out),
                (4, 0) => unpack32::<0, 4>(packed, n, &frame, out),
                (4, 1) => unpack32::<1, 4>(packed, n, &frame, out),
                (4, _) => unpack32::<2, 4>(packed, n, &frame, out),
                (_, 0) => unpack8::<0>(packed, n, &frame, out),
                (_, 1) => unpack8::<1>(packed, n, &frame, out),
                _ => unpack8::<2>(packed, n, &frame, out),
            })
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (reference, flip, then);
        None
    }
}

/// A chunk's frame of reference and the sums' starting point.
#[cfg(target_arch = "x86_64")]
struct Frame {
    bits: u32,
    reference: u64,
    flip: u64,
    prev: u64,
    delta: u64,
}

/// The byte permutation and shifts that bring offset `i` of a group (whose bits start at
/// `i * bits` from the group's first byte) into lane `i` of `lanes` lanes of `lane_bytes`
/// bytes, the bytes `step` further on for each lane when `step` is 1 (the widest
/// offsets' last bits).
#[cfg(target_arch = "x86_64")]
fn layout(
    bits: u32,
    lanes: usize,
    lane_bytes: usize,
    step: usize,
) -> ([u8; 64], [u64; 8], [u32; 16]) {
    let mut index = [0u8; 64];
    let (mut shifts64, mut shifts32) = ([0u64; 8], [0u32; 16]);
    for lane in 0..lanes {
        let bit = lane * bits as usize;
        for byte in 0..lane_bytes {
            // At most 7 * 64 / 8 + 8 = 64 for a 64-bit lane one byte on, which only
            // offsets of under 64 bits take (at most 62): in range.
            index[lane * lane_bytes + byte] = (bit / 8 + byte + step).min(63) as u8;
        }
        if lanes == 8 {
            shifts64[lane] = (bit % 8) as u64;
        } else {
            shifts32[lane] = (bit % 8) as u32;
        }
    }
    (index, shifts64, shifts32)
}

/// The mask of the `count` (at most 64) bytes or lanes from the first.
#[cfg(target_arch = "x86_64")]
fn first(count: usize) -> u64 {
    if count >= 64 {
        u64::MAX
    } else {
        (1u64 << count) - 1
    }
}

/// [`unpack`] of values of `W` (1, 2 or 4) bytes: groups of sixteen, in 32-bit lanes for
/// offsets of up to 25 bits, else as two groups of eight in 64-bit lanes cut to 32 bits;
/// 1- and 2-byte values are the lanes cut to their width as they are stored (wrapping
/// sums cut to a width are the sums at that width). `ORDER` 0 stores the values, 1 and
/// 2 their running sums.
///
/// # Safety
/// The CPU must have AVX-512F, BW and VBMI; `packed` holds exactly the offsets of `n`
/// values at `frame.bits` (at most `8 * W`) bits, and `out` at least `W * n` bytes.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
#[allow(
    clippy::cast_ptr_alignment,
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap
)]
unsafe fn unpack32<const ORDER: u8, const W: usize>(
    packed: &[u8],
    n: usize,
    frame: &Frame,
    out: &mut [u8],
) -> u64 {
    use super::sums::sums16;
    use core::arch::x86_64::{
        __m512i, _mm512_add_epi32, _mm512_and_si512, _mm512_loadu_si512,
        _mm512_mask_cvtepi32_storeu_epi16, _mm512_mask_cvtepi32_storeu_epi8, _mm512_mask_max_epu32,
        _mm512_mask_storeu_epi32, _mm512_maskz_loadu_epi8, _mm512_permutex2var_epi32,
        _mm512_permutexvar_epi8, _mm512_reduce_max_epu32, _mm512_set1_epi32, _mm512_set1_epi64,
        _mm512_set_epi32, _mm512_setzero_si512, _mm512_srlv_epi32, _mm512_srlv_epi64,
        _mm512_xor_si512,
    };
    let bits = frame.bits;
    let wide = bits > 25;
    let (index, shifts64, shifts32) = if wide {
        layout(bits, 8, 8, 0)
    } else {
        layout(bits, 16, 4, 0)
    };
    // SAFETY: the arrays hold 64 bytes each.
    let (index, shifts64, shifts32) = unsafe {
        (
            _mm512_loadu_si512(index.as_ptr().cast::<__m512i>()),
            _mm512_loadu_si512(shifts64.as_ptr().cast::<__m512i>()),
            _mm512_loadu_si512(shifts32.as_ptr().cast::<__m512i>()),
        )
    };
    let mask32 = _mm512_set1_epi32(first(bits as usize) as u32 as i32);
    let mask64 = _mm512_set1_epi64(first(bits as usize) as i64);
    let reference = _mm512_set1_epi32(frame.reference as u32 as i32);
    let flip = _mm512_set1_epi32(frame.flip as u32 as i32);
    let low_halves = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    let mut carry = _mm512_set1_epi32(frame.prev as u32 as i32);
    let mut carry_delta = _mm512_set1_epi32(frame.delta as u32 as i32);
    let mut widest = _mm512_setzero_si512();
    // The masked load of the bytes of `packed` from `at` on, at most 64.
    let window = |at: usize| {
        let mask = first(packed.len().saturating_sub(at));
        // SAFETY: only the mask's bytes are read, all within `packed`; `at` is at most
        // `packed.len()` (a group starts within the bits of its first offset, or at the
        // end when offsets take no bits), so the pointer stays within the slice or one
        // past it.
        unsafe { _mm512_maskz_loadu_epi8(mask, packed.as_ptr().add(at.min(packed.len())).cast()) }
    };
    let bytes = 2 * bits as usize;
    let mut i = 0;
    while i < n {
        let count = (n - i).min(16);
        let lanes = first(count) as u16;
        let start = (i / 16) * bytes;
        let offsets = if wide {
            let half = |at: usize| {
                _mm512_and_si512(
                    _mm512_srlv_epi64(_mm512_permutexvar_epi8(index, window(at)), shifts64),
                    mask64,
                )
            };
            _mm512_permutex2var_epi32(half(start), low_halves, half(start + bytes / 2))
        } else {
            _mm512_and_si512(
                _mm512_srlv_epi32(_mm512_permutexvar_epi8(index, window(start)), shifts32),
                mask32,
            )
        };
        widest = _mm512_mask_max_epu32(widest, lanes, widest, offsets);
        let values = _mm512_xor_si512(_mm512_add_epi32(offsets, reference), flip);
        let values = match ORDER {
            0 => values,
            1 => sums16::<false>(values, &mut carry, &mut carry_delta),
            _ => sums16::<true>(values, &mut carry, &mut carry_delta),
        };
        // SAFETY: the mask's lanes are values `i..i + count`, `W * (i + count) <= W * n
        // <= out.len()` bytes.
        unsafe {
            let at = out.as_mut_ptr().add(W * i);
            match W {
                1 => _mm512_mask_cvtepi32_storeu_epi8(at.cast(), lanes, values),
                2 => _mm512_mask_cvtepi32_storeu_epi16(at.cast(), lanes, values),
                _ => _mm512_mask_storeu_epi32(at.cast(), lanes, values),
            }
        }
        i += count;
    }
    u64::from(_mm512_reduce_max_epu32(widest))
}

/// [`unpack`] of 8-byte values: groups of eight in 64-bit lanes. `ORDER` as for
/// [`unpack32`].
///
/// # Safety
/// The CPU must have AVX-512F, BW and VBMI; `packed` holds exactly the offsets of `n`
/// values at `frame.bits` (at most 64) bits, and `out` at least `8 * n` bytes.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
#[allow(
    clippy::cast_ptr_alignment,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss
)]
unsafe fn unpack8<const ORDER: u8>(packed: &[u8], n: usize, frame: &Frame, out: &mut [u8]) -> u64 {
    use super::sums::sums8;
    use core::arch::x86_64::{
        __m512i, _mm512_add_epi64, _mm512_and_si512, _mm512_loadu_si512, _mm512_mask_max_epu64,
        _mm512_mask_storeu_epi64, _mm512_maskz_loadu_epi8, _mm512_or_si512,
        _mm512_permutexvar_epi8, _mm512_reduce_max_epu64, _mm512_set1_epi64, _mm512_setzero_si512,
        _mm512_sllv_epi64, _mm512_srlv_epi64, _mm512_sub_epi64, _mm512_xor_si512,
    };
    let bits = frame.bits;
    // Offsets of 58 to 63 bits may pass the 8 bytes from their first; 64-bit ones start
    // on a byte.
    let split = bits > 57 && bits < 64;
    let (low, shifts, _) = layout(bits, 8, 8, 0);
    let (high, _, _) = layout(bits, 8, 8, usize::from(split));
    // SAFETY: the arrays hold 64 bytes each.
    let (low, high, shifts) = unsafe {
        (
            _mm512_loadu_si512(low.as_ptr().cast::<__m512i>()),
            _mm512_loadu_si512(high.as_ptr().cast::<__m512i>()),
            _mm512_loadu_si512(shifts.as_ptr().cast::<__m512i>()),
        )
    };
    let back = _mm512_sub_epi64(_mm512_set1_epi64(8), shifts);
    let mask = _mm512_set1_epi64(first(bits as usize) as i64);
    let reference = _mm512_set1_epi64(frame.reference as i64);
    let flip = _mm512_set1_epi64(frame.flip as i64);
    let mut carry = _mm512_set1_epi64(frame.prev as i64);
    let mut carry_delta = _mm512_set1_epi64(frame.delta as i64);
    let mut widest = _mm512_setzero_si512();
    let bytes = bits as usize;
    let mut i = 0;
    while i < n {
        let count = (n - i).min(8);
        let lanes = first(count) as u8;
        let start = (i / 8) * bytes;
        let load = first(packed.len().saturating_sub(start));
        // SAFETY: only the mask's bytes are read, all within `packed`; the pointer is
        // within the slice or one past it (as in `unpack32`).
        let window = unsafe {
            _mm512_maskz_loadu_epi8(load, packed.as_ptr().add(start.min(packed.len())).cast())
        };
        let mut offsets = _mm512_srlv_epi64(_mm512_permutexvar_epi8(low, window), shifts);
        if split {
            // The bytes one further on, shifted up past the bits the first read kept:
            // where both hold a bit, it is the same bit of the stream.
            offsets = _mm512_or_si512(
                offsets,
                _mm512_sllv_epi64(_mm512_permutexvar_epi8(high, window), back),
            );
        }
        let offsets = _mm512_and_si512(offsets, mask);
        widest = _mm512_mask_max_epu64(widest, lanes, widest, offsets);
        let values = _mm512_xor_si512(_mm512_add_epi64(offsets, reference), flip);
        let values = match ORDER {
            0 => values,
            1 => sums8::<false>(values, &mut carry, &mut carry_delta),
            _ => sums8::<true>(values, &mut carry, &mut carry_delta),
        };
        // SAFETY: the mask's lanes are values `i..i + count`, `8 * (i + count) <= 8 * n
        // <= out.len()` bytes.
        unsafe {
            _mm512_mask_storeu_epi64(out.as_mut_ptr().add(8 * i).cast(), lanes, values);
        }
        i += count;
    }
    _mm512_reduce_max_epu64(widest)
}

/// Writes the `n` integers of `width` bytes of patched blocks (`encodings::patched`)
/// into `out`: block `k`'s header `headers[k]` is `c * 33 + b` for 4-byte integers, the
/// block holds its integers' low `b` bits packed in
/// [`packed_len`](super::bitpack::packed_len) bytes, the blocks back to back in
/// `packed`, and its `c` patches follow those of the blocks before it in the bit stream
/// `patches`, each a 4-bit lane and the `32 - b` bits to set above the lane's low bits.
/// With `sums` (`Some(order2)`), the integers are zigzag residuals of order 1 or 2 (the
/// first value, and for order 2 the first difference, among them) and the values they
/// sum to are written instead. Returns `None`, writing nothing, without a kernel, for
/// widths other than 4 bytes, or when the arguments do not fit (`headers` not one a
/// block, `packed` of another length, `out` shorter than `n` integers); else whether
/// every patch's lane came after the one before it in its block and within the `n`
/// integers (one that did not is left out).
pub(crate) fn unpack_blocks(
    headers: &[u8],
    packed: &[u8],
    patches: &[u8],
    n: usize,
    width: usize,
    sums: Option<bool>,
    out: &mut [u8],
) -> Option<bool> {
    if width != 4 || !has_kernel() || headers.len() != n.div_ceil(16) || out.len() < 4 * n {
        return None;
    }
    if blocks_len(headers, n) != packed.len() {
        return None;
    }
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: the CPU has AVX-512F, BW and VBMI (`has_kernel`); every header's width
        // is at most 32 bits, `packed` holds exactly the blocks and `out` at least `n`
        // integers, all checked just above.
        Some(unsafe {
            match sums {
                None => unpack_blocks4::<0>(headers, packed, patches, n, out),
                Some(false) => unpack_blocks4::<1>(headers, packed, patches, n, out),
                Some(true) => unpack_blocks4::<2>(headers, packed, patches, n, out),
            }
        })
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (patches, sums);
        None
    }
}

/// A block's width from its header (`count * 33 + width` for 4-byte integers): at most
/// 32.
fn header_width(h: u8) -> u8 {
    h % 33
}

/// Bytes of the blocks of `n` 4-byte integers under `headers`: sixteen of `b` bits take
/// `2b`.
fn blocks_len(headers: &[u8], n: usize) -> usize {
    let Some((&last, whole)) = headers.split_last() else {
        return 0;
    };
    let bits: usize = whole.iter().map(|&h| usize::from(header_width(h))).sum();
    2 * bits + packed_len(n - 16 * whole.len(), header_width(last))
}

/// A block's byte permutation and shifts at each width (0 to 32 bits): in sixteen 32-bit
/// lanes for up to 25 bits, else in two halves of eight 64-bit lanes.
#[cfg(target_arch = "x86_64")]
struct BlockLayout {
    index: [u8; 64],
    shifts32: [u32; 16],
    shifts64: [u64; 8],
}

/// [`BlockLayout`] of every width, made once.
#[cfg(target_arch = "x86_64")]
fn block_layouts() -> &'static [BlockLayout] {
    static LAYOUTS: std::sync::OnceLock<Vec<BlockLayout>> = std::sync::OnceLock::new();
    LAYOUTS.get_or_init(|| {
        (0..=32)
            .map(|bits| {
                if bits > 25 {
                    let (index, shifts64, _) = layout(bits, 8, 8, 0);
                    BlockLayout {
                        index,
                        shifts32: [0; 16],
                        shifts64,
                    }
                } else {
                    let (index, _, shifts32) = layout(bits, 16, 4, 0);
                    BlockLayout {
                        index,
                        shifts32,
                        shifts64: [0; 8],
                    }
                }
            })
            .collect()
    })
}

/// [`unpack_blocks`] of 4-byte integers: a block of sixteen a vector, as [`unpack32`]
/// does a group at its one width, its patches OR-ed in from [`patch_lanes`]; `ORDER` 0
/// stores the integers, 1 and 2 their running sums. Returns whether every patch's lane
/// was in place.
///
/// # Safety
/// The CPU must have AVX-512F, BW and VBMI; `headers` holds one header for each block of
/// sixteen of the `n` integers, `packed` exactly their blocks, and `out` at least `4 * n`
/// bytes.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
#[allow(
    clippy::cast_ptr_alignment,
    clippy::cast_possible_wrap,
    clippy::cast_possible_truncation,
    clippy::many_single_char_names
)]
unsafe fn unpack_blocks4<const ORDER: u8>(
    headers: &[u8],
    packed: &[u8],
    patches: &[u8],
    n: usize,
    out: &mut [u8],
) -> bool {
    use super::sums::{sums16, unzigzag4};
    use core::arch::x86_64::{
        __m512i, _mm512_alignr_epi32, _mm512_and_si512, _mm512_loadu_si512,
        _mm512_mask_storeu_epi32, _mm512_mask_sub_epi32, _mm512_maskz_loadu_epi8, _mm512_or_si512,
        _mm512_permutex2var_epi32, _mm512_permutexvar_epi8, _mm512_set1_epi32, _mm512_set1_epi64,
        _mm512_set_epi32, _mm512_setzero_si512, _mm512_srlv_epi32, _mm512_srlv_epi64,
        _mm512_storeu_si512,
    };
    let layouts = block_layouts();
    let low_halves = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    // The masked load of the bytes of `packed` from `at` on, at most 64 and none past
    // `end`.
    let window = |at: usize, end: usize| {
        if at + 64 <= packed.len() {
            // SAFETY: the 64 bytes from `at` lie within `packed`; those past `end` are
            // masked off by the block's shifts and masks.
            return unsafe { _mm512_loadu_si512(packed.as_ptr().add(at).cast()) };
        }
        let mask = first(end.saturating_sub(at));
        // SAFETY: only the mask's bytes are read, all before `end <= packed.len()`; `at`
        // is at most `end`, so the pointer stays within the slice or one past it.
        unsafe { _mm512_maskz_loadu_epi8(mask, packed.as_ptr().add(at.min(end)).cast()) }
    };
    // The bit position in `patches`, and whether every patch's lane was in place.
    let (mut from, mut placed) = (0usize, true);
    // Blocks unpacked wait here to be summed a batch at a time: each block's sums wait
    // on the block before, and apart from the unpacking, more blocks' unpacking is in
    // flight at once (as in `unbin::unbin_sums4`).
    let mut pending = [_mm512_setzero_si512(); 8];
    let mut held = 0;
    let mut carry = _mm512_setzero_si512();
    let mut carry_delta = _mm512_setzero_si512();
    let mut at = 0;
    for (k, &h) in headers.iter().enumerate() {
        let b = header_width(h);
        let i = 16 * k;
        // Sixteen integers of `b` bits take `2b` bytes.
        let end = if n - i >= 16 {
            at + 2 * usize::from(b)
        } else {
            at + packed_len(n - i, b)
        };
        let l = &layouts[usize::from(b)];
        // SAFETY: each array holds 64 bytes.
        let index = unsafe { _mm512_loadu_si512(l.index.as_ptr().cast::<__m512i>()) };
        let mut values = if b > 25 {
            // SAFETY: as above.
            let shifts = unsafe { _mm512_loadu_si512(l.shifts64.as_ptr().cast::<__m512i>()) };
            let mask = _mm512_set1_epi64(first(usize::from(b)) as i64);
            let half = |from: usize| {
                _mm512_and_si512(
                    _mm512_srlv_epi64(_mm512_permutexvar_epi8(index, window(from, end)), shifts),
                    mask,
                )
            };
            // Eight integers of `b` bits take `b` bytes.
            _mm512_permutex2var_epi32(half(at), low_halves, half(at + usize::from(b)))
        } else {
            // SAFETY: as above.
            let shifts = unsafe { _mm512_loadu_si512(l.shifts32.as_ptr().cast::<__m512i>()) };
            let mask = _mm512_set1_epi32(first(usize::from(b)) as u32 as i32);
            _mm512_and_si512(
                _mm512_srlv_epi32(_mm512_permutexvar_epi8(index, window(at, end)), shifts),
                mask,
            )
        };
        let count = usize::from(h / 33);
        if count > 0 {
            let (lanes, ok) = patch_lanes(patches, from, count, b, n - i);
            values = _mm512_or_si512(values, lanes);
            placed &= ok;
            from += count * (36 - usize::from(b));
        }
        pending[held] = values;
        held += 1;
        if held == pending.len() || k + 1 == headers.len() {
            // The blocks from `k + 1 - held` on, summed and stored.
            let first_held = k + 1 - held;
            for (j, &values) in pending[..held].iter().enumerate() {
                let block = first_held + j;
                let values = if ORDER > 0 {
                    let mut d = unzigzag4(values);
                    if ORDER == 2 && block == 0 {
                        // The first value and the first difference, summed twice from
                        // zero: the difference less the value gives the second value.
                        d = _mm512_mask_sub_epi32(
                            d,
                            0b10,
                            d,
                            _mm512_alignr_epi32::<15>(d, _mm512_setzero_si512()),
                        );
                    }
                    if ORDER == 2 {
                        sums16::<true>(d, &mut carry, &mut carry_delta)
                    } else {
                        sums16::<false>(d, &mut carry, &mut carry_delta)
                    }
                } else {
                    values
                };
                let i = 16 * block;
                // SAFETY: the mask's lanes are integers `i..i + count` (at most `n`),
                // `4 * n <= out.len()` bytes.
                unsafe {
                    let to = out.as_mut_ptr().add(4 * i);
                    if n - i >= 16 {
                        _mm512_storeu_si512(to.cast(), values);
                    } else {
                        _mm512_mask_storeu_epi32(to.cast(), first(n - i) as u16, values);
                    }
                }
            }
            held = 0;
        }
        at = end;
    }
    placed
}

/// The `count` (1 to 7) patches of a block of 4-byte integers of `b` bits (at most 32)
/// from bit `from` of the stream `patches` (each a 4-bit lane, then `32 - b` bits), as
/// a vector with each patch's bits (shifted up by `b`) in its lane and zeros elsewhere,
/// read side by side in eight 64-bit lanes; and whether the lanes were in place: each
/// after the one before and under `len`. When they were not, the vector is not a block's.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
#[inline]
#[allow(clippy::cast_possible_truncation, clippy::cast_possible_wrap)]
fn patch_lanes(
    patches: &[u8],
    from: usize,
    count: usize,
    b: u8,
    len: usize,
) -> (core::arch::x86_64::__m512i, bool) {
    use core::arch::x86_64::{
        _mm512_add_epi64, _mm512_alignr_epi64, _mm512_and_si512, _mm512_castsi256_si512,
        _mm512_cvtepi64_epi32, _mm512_mask_cmplt_epu64_mask, _mm512_mask_reduce_or_epi64,
        _mm512_maskz_expand_epi32, _mm512_maskz_loadu_epi8, _mm512_mul_epu32,
        _mm512_permutexvar_epi8, _mm512_set1_epi64, _mm512_set_epi64, _mm512_setzero_si512,
        _mm512_shuffle_epi8, _mm512_sllv_epi64, _mm512_srli_epi64, _mm512_srlv_epi64,
    };
    let entry = 36 - u64::from(b);
    let base = (from / 8).min(patches.len());
    // The stream's bytes from the first patch's on: seven patches take at most
    // 7 + 6 * 36 bits before the last one's 8 bytes, 35 bytes in all.
    let mask = first(patches.len() - base);
    // SAFETY: only the mask's bytes are read, all within `patches`; `base` is at most its
    // length, so the pointer stays within the slice or one past it.
    let window = unsafe { _mm512_maskz_loadu_epi8(mask, patches.as_ptr().add(base).cast()) };
    let starts = _mm512_add_epi64(
        _mm512_set1_epi64((from % 8) as i64),
        _mm512_mul_epu32(
            _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0),
            _mm512_set1_epi64(entry as i64),
        ),
    );
    // Each lane's first byte to all eight of its bytes, then 0..8 added.
    let index = _mm512_add_epi64(
        _mm512_shuffle_epi8(
            _mm512_srli_epi64::<3>(starts),
            _mm512_set_epi64(
                0x0808_0808_0808_0808,
                0,
                0x0808_0808_0808_0808,
                0,
                0x0808_0808_0808_0808,
                0,
                0x0808_0808_0808_0808,
                0,
            ),
        ),
        _mm512_set1_epi64(0x0706_0504_0302_0100),
    );
    let entries = _mm512_srlv_epi64(
        _mm512_permutexvar_epi8(index, window),
        _mm512_and_si512(starts, _mm512_set1_epi64(7)),
    );
    let lanes = _mm512_and_si512(entries, _mm512_set1_epi64(15));
    let highs = _mm512_sllv_epi64(
        _mm512_and_si512(
            _mm512_srli_epi64::<4>(entries),
            _mm512_set1_epi64(first(32 - usize::from(b)) as i64),
        ),
        _mm512_set1_epi64(i64::from(b)),
    );
    let valid = first(count) as u8;
    let set =
        _mm512_mask_reduce_or_epi64(valid, _mm512_sllv_epi64(_mm512_set1_epi64(1), lanes)) as u64;
    // Each lane under the next (the next patch's lane in the lane before).
    let next = _mm512_alignr_epi64::<1>(_mm512_setzero_si512(), lanes);
    let rising = _mm512_mask_cmplt_epu64_mask(valid >> 1, lanes, next);
    let ok = rising == valid >> 1 && set < 1 << len.min(16);
    // The patches' bits, in order, to the lanes they name (in rising order, as `set`'s
    // bits are).
    let spread = _mm512_maskz_expand_epi32(
        set as u16,
        _mm512_castsi256_si512(_mm512_cvtepi64_epi32(highs)),
    );
    (spread, ok)
}

/// Whether the CPU has AVX2 (x86_64 only).
fn has_avx2_here() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        super::has_avx2()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether [`blocks4_avx2`] writes block `k` (of `len` integers of `b` bits, starting at
/// byte `at` of `packed_len` bytes of blocks): whole, at most 25 bits wide (an integer
/// and its bit phase fit a 32-bit lane) and followed by 64 bytes (both loads in bounds).
pub(crate) fn avx2_takes_block(len: usize, b: usize, at: usize, packed_len: usize) -> bool {
    len == 16 && b <= 25 && at + 64 <= packed_len
}

/// Writes the low bits of every block of sixteen 4-byte integers of patched blocks
/// (`encodings::patched`; `headers`, `packed` as for [`unpack_blocks`]) into `out`, eight
/// integers a vector (AVX2), for the blocks [`avx2_takes_block`] says; the other blocks
/// and the patches are the caller's. Returns false, writing nothing, without AVX2 or
/// when the arguments do not fit (`headers` not one a block, `packed` of another length,
/// `out` shorter than `n` integers).
///
/// Eight integers of `b` bits take exactly `b` bytes, so each half of a block starts on
/// a byte: one 16-byte load from the half's start (integers 0 to 3) and one from its
/// byte `4b / 8` (integers 4 to 7) make a vector whose byte shuffle (the same for every
/// block of that width) brings each integer's 4 bytes into its lane, and one variable
/// shift drops the bits before it.
pub(crate) fn blocks4_avx2(headers: &[u8], packed: &[u8], n: usize, out: &mut [u8]) -> bool {
    if !has_avx2_here() || headers.len() != n.div_ceil(16) || out.len() < 4 * n {
        return false;
    }
    if blocks_len(headers, n) != packed.len() {
        return false;
    }
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: the CPU has AVX2 (`has_avx2`); `packed` holds exactly the blocks
        // and `out` at least `n` integers, checked just above.
        unsafe { blocks4_avx2_loop(headers, packed, n, out) };
        true
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Each width's byte shuffle and shifts for [`blocks4_avx2_loop`] (0 to 25 bits): lane
/// `j` of 128-bit half `h` holds integer `4h + j`, the upper half loaded from byte
/// `4b / 8` of the group.
#[cfg(target_arch = "x86_64")]
fn avx2_block_layouts() -> &'static [([u8; 32], [u32; 8])] {
    static LAYOUTS: std::sync::OnceLock<Vec<([u8; 32], [u32; 8])>> = std::sync::OnceLock::new();
    LAYOUTS.get_or_init(|| {
        (0..=25usize)
            .map(|b| {
                let (mut index, mut shifts) = ([0u8; 32], [0u32; 8]);
                for i in 0..8 {
                    let half = i / 4;
                    let start = i * b - half * 8 * (4 * b / 8);
                    for k in 0..4 {
                        // At most (3 * 25 + 4) / 8 + 3 = 12: within the half's 16 bytes.
                        index[16 * half + 4 * (i % 4) + k] = (start / 8 + k) as u8;
                    }
                    shifts[i] = (start % 8) as u32;
                }
                (index, shifts)
            })
            .collect()
    })
}

/// [`blocks4_avx2`]'s loop.
///
/// # Safety
/// The CPU must have AVX2; `headers` holds one header for each block of sixteen of the
/// `n` integers, `packed` exactly their blocks, and `out` at least `4 * n` bytes.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[allow(
    clippy::cast_possible_wrap,
    clippy::cast_possible_truncation,
    clippy::cast_ptr_alignment
)]
unsafe fn blocks4_avx2_loop(headers: &[u8], packed: &[u8], n: usize, out: &mut [u8]) {
    use core::arch::x86_64::{
        __m128i, __m256i, _mm256_and_si256, _mm256_loadu2_m128i, _mm256_loadu_si256,
        _mm256_set1_epi32, _mm256_shuffle_epi8, _mm256_srlv_epi32, _mm256_storeu_si256,
    };
    let layouts = avx2_block_layouts();
    let mut at = 0;
    for (k, &h) in headers.iter().enumerate() {
        let b = usize::from(header_width(h));
        let len = 16.min(n - 16 * k);
        let bytes = packed_len(len, b as u8);
        if avx2_takes_block(len, b, at, packed.len()) {
            let out = &mut out[64 * k..64 * k + 64];
            let (index, shifts) = &layouts[b];
            // SAFETY: `index` and `shifts` hold 32 bytes each.
            let (index, shifts) = unsafe {
                (
                    _mm256_loadu_si256(index.as_ptr().cast::<__m256i>()),
                    _mm256_loadu_si256(shifts.as_ptr().cast::<__m256i>()),
                )
            };
            let mask = _mm256_set1_epi32(((1u64 << b) - 1) as i32);
            for group in 0..2 {
                let from = at + group * b;
                // SAFETY: the loads end by `from + 4b / 8 + 16 <= at + 2b + 16`, under
                // `at + 64`, within `packed` (checked); the store writes 32 of the
                // block's 64 bytes of `out`.
                unsafe {
                    let low = packed.as_ptr().add(from).cast::<__m128i>();
                    let high = packed.as_ptr().add(from + 4 * b / 8).cast::<__m128i>();
                    let v = _mm256_shuffle_epi8(_mm256_loadu2_m128i(high, low), index);
                    let v = _mm256_and_si256(_mm256_srlv_epi32(v, shifts), mask);
                    _mm256_storeu_si256(out.as_mut_ptr().add(32 * group).cast::<__m256i>(), v);
                }
            }
        }
        at += bytes;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::bitpack;

    fn next(x: &mut u64) -> u64 {
        *x ^= *x << 13;
        *x ^= *x >> 7;
        *x ^= *x << 17;
        *x
    }

    /// The values the kernel must write: the scalar unpacking, the frame, the sums.
    fn scalar(
        packed: &[u8],
        n: usize,
        bits: u8,
        width: usize,
        (reference, flip): (u64, u64),
        then: Then,
    ) -> (Vec<u8>, u64) {
        let mask = u64::MAX >> (64 - 8 * width);
        let mut offsets = Vec::new();
        bitpack::unpack(packed, n, bits, |block| offsets.extend_from_slice(block));
        let widest = offsets.iter().copied().max().unwrap_or(0);
        let mut out = Vec::new();
        let (mut prev, mut delta) = match then {
            Then::Store => (0, 0),
            Then::Sum { prev, delta, .. } => (prev, delta),
        };
        for o in offsets {
            let v = (reference.wrapping_add(o) ^ flip) & mask;
            let v = match then {
                Then::Store => v,
                Then::Sum { order2, .. } => {
                    if order2 {
                        delta = delta.wrapping_add(v) & mask;
                        prev = prev.wrapping_add(delta) & mask;
                    } else {
                        prev = prev.wrapping_add(v) & mask;
                    }
                    prev
                }
            };
            out.extend_from_slice(&v.to_le_bytes()[..width]);
        }
        (out, widest)
    }

    /// Every width of offset, both value widths, every length to 70 and some longer,
    /// random frames, every way of summing: the bytes and the widest offset are the
    /// scalar reference's, and nothing past the values is written.
    #[test]
    fn matches_the_scalar_unpacking() {
        if !has_kernel() {
            eprintln!("SKIPPED: no AVX-512 VBMI on this CPU; the unpack kernel is not run");
            return;
        }
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        for width in [1usize, 2, 4, 8] {
            for bits in 0..=(8 * width) as u8 {
                let mask = if bits == 64 {
                    u64::MAX
                } else {
                    (1u64 << bits) - 1
                };
                for n in (0..=70).chain([127, 128, 129, 1000, 1024]) {
                    let offsets: Vec<u64> = (0..n).map(|_| next(&mut x) & mask).collect();
                    let mut packed = Vec::new();
                    bitpack::pack(&offsets, bits, &mut packed);
                    let value_mask = u64::MAX >> (64 - 8 * width);
                    let frame = (next(&mut x) & value_mask, next(&mut x) & value_mask);
                    for then in [
                        Then::Store,
                        Then::Sum {
                            order2: false,
                            prev: next(&mut x) & value_mask,
                            delta: 0,
                        },
                        Then::Sum {
                            order2: true,
                            prev: next(&mut x) & value_mask,
                            delta: next(&mut x) & value_mask,
                        },
                    ] {
                        let (want, widest) = scalar(&packed, n, bits, width, frame, then);
                        let mut out = vec![0xA5u8; n * width + 70];
                        let got = unpack(&packed, n, bits, width, frame.0, frame.1, then, &mut out);
                        assert_eq!(got, Some(widest), "{width} {bits} {n} {then:?}");
                        assert_eq!(out[..n * width], want, "{width} {bits} {n} {then:?}");
                        assert!(
                            out[n * width..].iter().all(|&b| b == 0xA5),
                            "{width} {bits} {n}: wrote past the values"
                        );
                    }
                }
            }
        }
    }

    /// Block `k` of `n` integers for a test of blocks: of width `pattern + k` (mod 33),
    /// or random widths for `pattern` 33; random integers of that width.
    fn random_block(x: &mut u64, pattern: u64, k: usize, n: usize) -> (u8, Vec<u64>) {
        let b = if pattern == 33 {
            (next(x) % 33) as u8
        } else {
            ((pattern + k as u64) % 33) as u8
        };
        let mask = if b == 0 { 0 } else { u64::MAX >> (64 - b) };
        let block = (0..(n - 16 * k).min(16)).map(|_| next(x) & mask).collect();
        (b, block)
    }

    /// The AVX2 block kernel writes the low bits of the blocks it takes as the scalar
    /// unpacking does and leaves the others alone: every width (0 to 32, past the vector
    /// path's 25), blocks whole and short, near the end of the blocks and far from it,
    /// headers with patch counts; nothing past the integers is written.
    #[test]
    fn avx2_blocks_match_the_scalar_unpacking() {
        if !has_avx2_here() {
            eprintln!("SKIPPED: no AVX2 on this CPU; the AVX2 block kernel is not run");
            return;
        }
        let mut x = 0x0DDB_1A5E_5BAD_5EEDu64;
        for n in (0..=70usize).chain([127, 1000, 1024]) {
            for pattern in 0..=33u64 {
                let (mut headers, mut packed, mut blocks) = (Vec::new(), Vec::new(), Vec::new());
                for k in 0..n.div_ceil(16) {
                    let (b, block) = random_block(&mut x, pattern, k, n);
                    bitpack::pack(&block, b, &mut packed);
                    let patches = if b < 32 { (k % 3) as u8 } else { 0 };
                    headers.push(b + 33 * patches);
                    blocks.push((b, block));
                }
                // The blocks it takes as packed; the others left alone.
                let (mut want, mut at) = (Vec::new(), 0);
                for (b, block) in &blocks {
                    let b = usize::from(*b);
                    if avx2_takes_block(block.len(), b, at, packed.len()) {
                        want.extend(block.iter().flat_map(|&v| (v as u32).to_le_bytes()));
                    } else {
                        want.extend(std::iter::repeat_n(0xA5u8, 4 * block.len()));
                    }
                    at += packed_len(block.len(), b as u8);
                }
                let mut out = vec![0xA5u8; 4 * n + 70];
                assert!(
                    blocks4_avx2(&headers, &packed, n, &mut out),
                    "{n} {pattern}"
                );
                assert_eq!(out[..4 * n], want, "{n} {pattern}");
                assert!(out[4 * n..].iter().all(|&b| b == 0xA5), "{n}: wrote past");
            }
        }
        let mut out = [0u8; 64];
        assert!(!blocks4_avx2(&[1], &[0; 3], 16, &mut out));
        assert!(!blocks4_avx2(&[1, 1], &[0; 4], 16, &mut out));
        assert!(!blocks4_avx2(&[1], &[0; 2], 16, &mut out[..63]));
        assert!(out.iter().all(|&b| b == 0));
    }

    /// Blocks of every width and mixed widths, with patches in some lanes, every length
    /// to 70 and some longer, stored and summed in both orders: the scalar unpacking,
    /// patching and summing of each block, nothing written past the integers; patch lanes
    /// out of order or past the end are reported.
    #[test]
    fn blocks_match_the_scalar_unpacking() {
        if !has_kernel() {
            eprintln!("SKIPPED: no AVX-512 VBMI on this CPU; the block kernel is not run");
            return;
        }
        let mut x = 0x1234_5678_9ABC_DEF1u64;
        for n in (0..=70usize).chain([127, 1000, 1024]) {
            for pattern in 0..=33u64 {
                let mut headers = Vec::new();
                let mut packed = Vec::new();
                let (mut stream, mut acc, mut fill) = (Vec::new(), 0u128, 0u32);
                let mut put = |v: u64, bits: u32, stream: &mut Vec<u8>| {
                    acc |= u128::from(v) << fill;
                    fill += bits;
                    while fill >= 8 {
                        stream.push(acc as u8);
                        acc >>= 8;
                        fill -= 8;
                    }
                };
                let mut ints = Vec::new();
                for k in 0..n.div_ceil(16) {
                    let (b, block) = random_block(&mut x, pattern, k, n);
                    let len = block.len();
                    bitpack::pack(&block, b, &mut packed);
                    let mut ints_of: Vec<u32> = block.iter().map(|&v| v as u32).collect();
                    // Up to three patches in increasing lanes, when the width leaves room.
                    let lanes: Vec<usize> = if b < 32 {
                        (0..len).filter(|l| (l + k) % 6 == 1).take(3).collect()
                    } else {
                        Vec::new()
                    };
                    for &lane in &lanes {
                        let high = next(&mut x) & ((1u64 << (32 - b)) - 1);
                        put(lane as u64, 4, &mut stream);
                        put(high, 32 - u32::from(b), &mut stream);
                        ints_of[lane] |= (high << b) as u32;
                    }
                    headers.push(b + 33 * lanes.len() as u8);
                    ints.extend(ints_of);
                }
                if fill > 0 {
                    stream.push(acc as u8);
                }
                for sums in [None, Some(false), Some(true)] {
                    let (mut prev, mut delta) = (0u32, 0u32);
                    let want: Vec<u8> = ints
                        .iter()
                        .enumerate()
                        .flat_map(|(i, &r)| {
                            let v = match sums {
                                None => r,
                                Some(order2) => {
                                    let d = (r >> 1) ^ (r & 1).wrapping_neg();
                                    if i == 0 {
                                        prev = d;
                                    } else if order2 && i >= 2 {
                                        delta = delta.wrapping_add(d);
                                        prev = prev.wrapping_add(delta);
                                    } else {
                                        delta = d;
                                        prev = prev.wrapping_add(d);
                                    }
                                    prev
                                }
                            };
                            v.to_le_bytes()
                        })
                        .collect();
                    let mut out = vec![0xA5u8; 4 * n + 70];
                    let done = unpack_blocks(&headers, &packed, &stream, n, 4, sums, &mut out);
                    assert_eq!(done, Some(true), "{n} {pattern} {sums:?}");
                    assert_eq!(out[..4 * n], want, "{n} {pattern} {sums:?}");
                    assert!(out[4 * n..].iter().all(|&b| b == 0xA5), "{n}: wrote past");
                }
            }
        }
        // Lanes 1 then 0, and a lane past a block of two integers, are reported.
        let mut out = vec![0u8; 64];
        let two = [1u8 | 4 << 4, 0, 0, 0, 0];
        assert_eq!(
            unpack_blocks(&[66], &[], &two, 2, 4, None, &mut out),
            Some(false)
        );
        assert_eq!(
            unpack_blocks(&[33], &[], &[3, 0, 0, 0, 0], 2, 4, None, &mut out),
            Some(false)
        );
        // What does not fit is refused, nothing written.
        let mut out = [0u8; 64];
        for (headers, packed, n, width, len) in [
            (&[1u8][..], 3, 16, 4, 64),
            (&[1, 1][..], 4, 16, 4, 64),
            (&[1][..], 2, 16, 4, 63),
            (&[1][..], 2, 8, 8, 64),
        ] {
            let packed = vec![0u8; packed];
            assert_eq!(
                unpack_blocks(headers, &packed, &[], n, width, None, &mut out[..len]),
                None
            );
        }
        assert!(out.iter().all(|&b| b == 0));
    }

    /// Arguments outside the bounds write nothing.
    #[test]
    fn refuses_what_it_cannot_take() {
        let packed = vec![0xFFu8; bitpack::packed_len(100, 7)];
        let mut out = vec![0u8; 800];
        let run = |packed: &[u8], n, bits, width, out: &mut [u8]| {
            unpack(packed, n, bits, width, 0, 0, Then::Store, out)
        };
        assert_eq!(run(&packed, 100, 7, 3, &mut out), None);
        assert_eq!(run(&packed, 100, 33, 4, &mut out), None);
        assert_eq!(run(&packed[1..], 100, 7, 4, &mut out), None);
        assert_eq!(run(&packed, 100, 7, 4, &mut out[..399]), None);
        assert!(out.iter().all(|&b| b == 0));
        if has_kernel() {
            assert_eq!(run(&packed, 100, 7, 4, &mut out), Some(127));
        }
    }
}
