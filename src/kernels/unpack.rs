//! Bit-packed offsets back to integers of 1 to 8 bytes, a vector at a time (x86_64
//! AVX-512 VBMI): the vector form of [`bitpack::unpack`](super::bitpack::unpack) with the
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
