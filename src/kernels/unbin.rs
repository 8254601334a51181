//! Binned integers rebuilt eight or sixteen at a time (x86_64 AVX2, AVX-512 VBMI): the
//! vector form of the entropy coder's bins (`encodings::entropy`), where an integer is a
//! bin symbol plus low bits.
//!
//! With `lead` (2 or 3) bits after the leading one, symbol `s` below `2^lead` is the
//! integer itself with no low bits; any other `s` has `t = s >> lead` (at least 1),
//! `t - 1` low bits, and the integer `((2^lead | (s & (2^lead - 1))) << (t - 1)) | low`.
//! The low bits of consecutive integers lie end to end, LSB first, in one bit string.
//!
//! Per group of eight symbols the kernel computes every low-bit count and high part with
//! 32-bit lane arithmetic, the eight bit positions with an in-register prefix sum, reads
//! each integer's low bits with a 64-bit load at its byte and a variable shift, and
//! stores eight integers. The AVX2 kernel puts four loads in a vector rather than gather:
//! AMD's cores microcode gathers, and the loads took a fifth off the kernel's time on
//! Zen 4. The only dependency from one group to the next is the bit position, one scalar
//! addition, where the scalar reader's loop carries a table load, a load at the position
//! and its shift for every integer.
//!
//! The AVX-512 kernel takes sixteen integers a group in 32-bit lanes where all sixteen
//! have few enough low bits, eight in 64-bit lanes where not.
//!
//! Bounds: a group starts only when eight whole 64-bit words past its position lie
//! within the bit string (64 low bits an integer at most), checked in the loop, so no
//! load reads past the slice; whatever is left goes back to the caller's scalar reader.
//! One read holds 57 low bits at least, so the kernel is for integers of up to 57 bits;
//! symbols of wider integers give garbage integers but no out-of-bounds read, and the
//! caller rejects them by their symbol.

/// A kernel: groups of eight while each group's reads lie within `low`; same arguments
/// and result as [`unbin`].
type Kernel = fn(u32, &[u8], &[u8], usize, &mut [u64]) -> (usize, usize);

/// The kernels this CPU has, fastest first.
fn kernels() -> Vec<(&'static str, Kernel)> {
    let mut found: Vec<(&'static str, Kernel)> = Vec::new();
    #[cfg(target_arch = "x86_64")]
    {
        use super::{allows, CpuLevel};
        if allows(CpuLevel::Avx512)
            && std::is_x86_feature_detected!("avx512f")
            && std::is_x86_feature_detected!("avx512bw")
            && std::is_x86_feature_detected!("avx512vbmi")
        {
            found.push(("avx512vbmi", x86_avx512vbmi));
        }
        if allows(CpuLevel::Avx2) && std::is_x86_feature_detected!("avx2") {
            found.push(("avx2", x86_avx2));
        }
    }
    found
}

/// The fastest kernel of this CPU, chosen once.
fn kernel() -> Option<Kernel> {
    static KERNEL: std::sync::OnceLock<Option<Kernel>> = std::sync::OnceLock::new();
    *KERNEL.get_or_init(|| kernels().first().map(|&(_, k)| k))
}

/// Rebuilds the integers of the leading bin symbols of `symbols` (at most `out.len()`),
/// their low bits read from bit `pos` of `low` on (zeros past its end), into `out`,
/// eight at a time; returns how many it rebuilt and the bit position after them. It
/// stops before the last `len % 8`, and early only where the bits read past the end of
/// `low` reach beyond a 64-byte pad (corrupt input). Without a kernel (x86_64 AVX2 or
/// AVX-512 VBMI), or with a `lead` other than 2 or 3, it rebuilds none.
pub(crate) fn unbin(
    lead: u32,
    symbols: &[u8],
    low: &[u8],
    pos: usize,
    out: &mut [u64],
) -> (usize, usize) {
    match kernel() {
        Some(kernel) => unbin_with(kernel, lead, symbols, low, pos, out),
        None => (0, pos),
    }
}

/// [`unbin`] with `kernel`.
fn unbin_with(
    kernel: Kernel,
    lead: u32,
    symbols: &[u8],
    low: &[u8],
    pos: usize,
    out: &mut [u64],
) -> (usize, usize) {
    let n = symbols.len().min(out.len());
    let (done, pos) = kernel(lead, symbols, low, pos, out);
    if done + 8 > n {
        return (done, pos);
    }
    // Stopped where a group's reads could pass the end of `low` (under 64 bytes left).
    on_pad(low, pos, |pad, at| {
        let (more, at) = kernel(lead, &symbols[done..n], pad, at, &mut out[done..n]);
        (done + more, at)
    })
    .unwrap_or((done, pos))
}

/// Runs `kernel` on what is left of `low` from bit `pos` on (at most 256 bytes), copied
/// into a zeroed pad, where reads past its end see the zeros that reads past the end of
/// `low` see; `kernel` gets the pad and the bit to start at, and returns a count and a
/// bit position in the pad, which comes back in `low`'s terms. `None` where more is left.
fn on_pad(
    low: &[u8],
    pos: usize,
    kernel: impl FnOnce(&[u8], usize) -> (usize, usize),
) -> Option<(usize, usize)> {
    let from = (pos / 8).min(low.len());
    let rest = &low[from..];
    let mut pad = [0u8; 256];
    pad.get_mut(..rest.len())?.copy_from_slice(rest);
    let (count, at) = kernel(&pad, pos - 8 * from);
    Some((count, 8 * from + at))
}

/// A safe kernel over `$kernel`, for leads 2 and 3, where the CPU has `$feature`s.
macro_rules! safe_kernel {
    ($name:ident, $kernel:ident, $($feature:tt),+) => {
        #[cfg(target_arch = "x86_64")]
        fn $name(
            lead: u32,
            symbols: &[u8],
            low: &[u8],
            pos: usize,
            out: &mut [u64],
        ) -> (usize, usize) {
            // Checked for real: this safe function is only listed where the CPU has them,
            // but the kernel's contract is what keeps it sound.
            assert!($(std::is_x86_feature_detected!($feature))&&+);
            // SAFETY: the CPU has the features (asserted above); the kernel bounds every
            // read and write by the slices it is given.
            unsafe {
                match lead {
                    2 => $kernel::<2>(symbols, low, pos, out),
                    3 => $kernel::<3>(symbols, low, pos, out),
                    _ => (0, pos),
                }
            }
        }
    };
}
safe_kernel!(
    x86_avx512vbmi,
    unbin_avx512vbmi,
    "avx512f",
    "avx512bw",
    "avx512vbmi"
);
safe_kernel!(x86_avx2, unbin_avx2, "avx2");

/// Whole groups of eight, while each group's 64-bit reads lie within `low`.
///
/// # Safety
/// The CPU must have AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[allow(clippy::cast_ptr_alignment, clippy::cast_possible_wrap)]
unsafe fn unbin_avx2<const LEAD: u32>(
    symbols: &[u8],
    low: &[u8],
    mut pos: usize,
    out: &mut [u64],
) -> (usize, usize) {
    use core::arch::x86_64::{
        __m128i, __m256i, _mm256_add_epi32, _mm256_add_epi64, _mm256_and_si256,
        _mm256_andnot_si256, _mm256_blend_epi32, _mm256_castsi256_si128, _mm256_cvtepu32_epi64,
        _mm256_cvtepu8_epi32, _mm256_extract_epi32, _mm256_extracti128_si256, _mm256_max_epu32,
        _mm256_min_epu32, _mm256_or_si256, _mm256_permutevar8x32_epi32, _mm256_set1_epi32,
        _mm256_set1_epi64x, _mm256_setr_epi32, _mm256_setr_epi64x, _mm256_setzero_si256,
        _mm256_sll_epi32, _mm256_slli_si256, _mm256_sllv_epi64, _mm256_srl_epi32,
        _mm256_srli_epi64, _mm256_srlv_epi64, _mm256_storeu_si256, _mm256_sub_epi32,
        _mm_cvtsi32_si128, _mm_loadl_epi64,
    };

    let n = symbols.len().min(out.len());
    let lead = _mm_cvtsi32_si128(LEAD as i32);
    let one = _mm256_set1_epi32(1);
    let top_mask = _mm256_set1_epi32((1 << LEAD) - 1);
    let lane3 = _mm256_setr_epi32(0, 0, 0, 0, 3, 3, 3, 3);
    let seven = _mm256_set1_epi64x(7);
    let ones = _mm256_set1_epi64x(-1);
    let mut i = 0;
    // A group's last integer starts under 7 * 64 bits past `pos` and reads 8 bytes from
    // its byte: all within `pos / 8 + 65` bytes.
    while i + 8 <= n && pos / 8 + 65 <= low.len() {
        // SAFETY: `i + 8 <= symbols.len()`, checked by the loop.
        let s = _mm256_cvtepu8_epi32(unsafe {
            _mm_loadl_epi64(symbols.as_ptr().add(i).cast::<__m128i>())
        });
        let t = _mm256_srl_epi32(s, lead);
        let bits = _mm256_sub_epi32(_mm256_max_epu32(t, one), one);
        let high = _mm256_or_si256(
            _mm256_sll_epi32(_mm256_min_epu32(t, one), lead),
            _mm256_and_si256(s, top_mask),
        );
        // Inclusive prefix sum of the bit counts: within each 128-bit half, then lane 3
        // carried into the upper half.
        let mut sum = _mm256_add_epi32(bits, _mm256_slli_si256::<4>(bits));
        sum = _mm256_add_epi32(sum, _mm256_slli_si256::<8>(sum));
        let carry = _mm256_blend_epi32::<0b1111_0000>(
            _mm256_setzero_si256(),
            _mm256_permutevar8x32_epi32(sum, lane3),
        );
        sum = _mm256_add_epi32(sum, carry);
        let starts = _mm256_sub_epi32(sum, bits);
        let total = _mm256_extract_epi32::<7>(sum) as u32 as usize;
        let base = _mm256_set1_epi64x(pos as i64);
        for (half, starts, bits, high) in [
            (
                0,
                _mm256_castsi256_si128(starts),
                _mm256_castsi256_si128(bits),
                _mm256_castsi256_si128(high),
            ),
            (
                4,
                _mm256_extracti128_si256::<1>(starts),
                _mm256_extracti128_si256::<1>(bits),
                _mm256_extracti128_si256::<1>(high),
            ),
        ] {
            let at = _mm256_add_epi64(base, _mm256_cvtepu32_epi64(starts));
            let bits = _mm256_cvtepu32_epi64(bits);
            // Four loads, not a gather: gathers are microcoded and slow on AMD's cores,
            // and a load at an address in a register is fast everywhere.
            let mut bytes = [0u64; 4];
            // SAFETY: `bytes` holds 32 bytes.
            unsafe {
                _mm256_storeu_si256(bytes.as_mut_ptr().cast(), _mm256_srli_epi64::<3>(at));
            }
            // SAFETY: every index is under `pos / 8 + 57` and 8 bytes are read from it,
            // within `low` by the loop's check.
            let words: __m256i = unsafe {
                let word =
                    |b: u64| low.as_ptr().add(b as usize).cast::<u64>().read_unaligned() as i64;
                _mm256_setr_epi64x(
                    word(bytes[0]),
                    word(bytes[1]),
                    word(bytes[2]),
                    word(bytes[3]),
                )
            };
            let words = _mm256_srlv_epi64(words, _mm256_and_si256(at, seven));
            let words = _mm256_andnot_si256(_mm256_sllv_epi64(ones, bits), words);
            let values =
                _mm256_or_si256(words, _mm256_sllv_epi64(_mm256_cvtepu32_epi64(high), bits));
            // SAFETY: `i + half + 4 <= i + 8 <= out.len()`, checked by the loop.
            unsafe {
                _mm256_storeu_si256(out.as_mut_ptr().add(i + half).cast::<__m256i>(), values);
            }
        }
        pos += total;
        i += 8;
    }
    (i, pos)
}

/// Whole groups of eight, while each group's 64-byte window lies within `low`: the
/// group's low bits (at most 8 * 61 bits past `pos % 8`) are in the 64 bytes from byte
/// `pos / 8`, and one byte permutation gives each integer the 8 bytes from its first.
/// Where the next sixteen integers all have at most [`NARROW_BITS`] low bits (the usual
/// case: every integer below 2^28 has so few), they go as one group of sixteen in 32-bit
/// lanes, half the instructions an integer, widened to 64 bits only to be stored.
///
/// # Safety
/// The CPU must have AVX-512F, AVX-512BW and AVX-512 VBMI.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
#[allow(clippy::cast_ptr_alignment, clippy::cast_possible_wrap)]
unsafe fn unbin_avx512vbmi<const LEAD: u32>(
    symbols: &[u8],
    low: &[u8],
    mut pos: usize,
    out: &mut [u64],
) -> (usize, usize) {
    use core::arch::x86_64::{
        __m128i, __m512i, _mm512_castsi512_si256, _mm512_cmpgt_epu32_mask, _mm512_cvtepu32_epi64,
        _mm512_cvtepu8_epi32, _mm512_cvtepu8_epi64, _mm512_extracti64x4_epi64, _mm512_loadu_si512,
        _mm512_set1_epi32, _mm512_srli_epi32, _mm512_storeu_si512, _mm_loadl_epi64,
        _mm_loadu_si128,
    };

    let n = symbols.len().min(out.len());
    let narrow = _mm512_set1_epi32(NARROW_BITS as i32 + 1);
    let mut i = 0;
    while i + 8 <= n && pos / 8 + 64 <= low.len() {
        if i + 16 <= n {
            // SAFETY: `i + 16 <= symbols.len()`, checked just above.
            let s = _mm512_cvtepu8_epi32(unsafe {
                _mm_loadu_si128(symbols.as_ptr().add(i).cast::<__m128i>())
            });
            let t = _mm512_srli_epi32::<LEAD>(s);
            // Low bits `t - 1` of at most NARROW_BITS for all sixteen.
            if _mm512_cmpgt_epu32_mask(t, narrow) == 0 {
                // SAFETY: `pos / 8 + 64 <= low.len()`, checked by the loop.
                let window =
                    unsafe { _mm512_loadu_si512(low.as_ptr().add(pos / 8).cast::<__m512i>()) };
                let (values, total) = narrow16::<LEAD>(s, t, pos % 8, window);
                // SAFETY: `i + 16 <= out.len()`, checked above.
                unsafe {
                    let at = out.as_mut_ptr().add(i);
                    _mm512_storeu_si512(
                        at.cast::<__m512i>(),
                        _mm512_cvtepu32_epi64(_mm512_castsi512_si256(values)),
                    );
                    _mm512_storeu_si512(
                        at.add(8).cast::<__m512i>(),
                        _mm512_cvtepu32_epi64(_mm512_extracti64x4_epi64::<1>(values)),
                    );
                }
                pos += total;
                i += 16;
                continue;
            }
        }
        // Groups of eight: two of them where sixteen would not do (wide integers come
        // in runs), so such runs do not test every group of sixteen.
        for _ in 0..2 {
            if i + 8 > n || pos / 8 + 64 > low.len() {
                break;
            }
            // SAFETY: `i + 8 <= symbols.len()`, checked just above.
            let s = _mm512_cvtepu8_epi64(unsafe {
                _mm_loadl_epi64(symbols.as_ptr().add(i).cast::<__m128i>())
            });
            // SAFETY: `pos / 8 + 64 <= low.len()`, checked just above.
            let window = unsafe { _mm512_loadu_si512(low.as_ptr().add(pos / 8).cast::<__m512i>()) };
            let (values, total) = wide8::<LEAD>(s, pos % 8, window);
            // SAFETY: `i + 8 <= out.len()`, checked just above.
            unsafe { _mm512_storeu_si512(out.as_mut_ptr().add(i).cast::<__m512i>(), values) };
            pos += total;
            i += 8;
        }
    }
    (i, pos)
}

/// One group of eight integers in 64-bit lanes, of up to 57 bits: their symbols `s` (one
/// a lane), the bit `bit` (under 8) of the 64-byte `window` where their low bits start
/// (at most 8 * 61 bits, the last one's 8 bytes within the window); returns the integers
/// and the low bits they took.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
#[inline]
#[allow(clippy::cast_possible_wrap)]
fn wide8<const LEAD: u32>(
    s: core::arch::x86_64::__m512i,
    bit: usize,
    window: core::arch::x86_64::__m512i,
) -> (core::arch::x86_64::__m512i, usize) {
    use core::arch::x86_64::{
        _mm256_extract_epi64, _mm512_add_epi64, _mm512_alignr_epi64, _mm512_and_si512,
        _mm512_andnot_si512, _mm512_extracti64x4_epi64, _mm512_max_epu64, _mm512_min_epu64,
        _mm512_or_si512, _mm512_permutexvar_epi8, _mm512_set1_epi64, _mm512_set_epi64,
        _mm512_setzero_si512, _mm512_shuffle_epi8, _mm512_slli_epi64, _mm512_sllv_epi64,
        _mm512_srli_epi64, _mm512_srlv_epi64, _mm512_sub_epi64,
    };
    let one = _mm512_set1_epi64(1);
    let zero = _mm512_setzero_si512();
    let t = _mm512_srli_epi64::<LEAD>(s);
    let bits = _mm512_sub_epi64(_mm512_max_epu64(t, one), one);
    let high = _mm512_sllv_epi64(
        _mm512_or_si512(
            _mm512_slli_epi64::<LEAD>(_mm512_min_epu64(t, one)),
            _mm512_and_si512(s, _mm512_set1_epi64((1 << LEAD) - 1)),
        ),
        bits,
    );
    // Inclusive prefix sum of the bit counts across the eight lanes.
    let mut sum = _mm512_add_epi64(bits, _mm512_alignr_epi64::<7>(bits, zero));
    sum = _mm512_add_epi64(sum, _mm512_alignr_epi64::<6>(sum, zero));
    sum = _mm512_add_epi64(sum, _mm512_alignr_epi64::<4>(sum, zero));
    // Each integer's first bit, counted from the window's first byte.
    let starts = _mm512_add_epi64(_mm512_sub_epi64(sum, bits), _mm512_set1_epi64(bit as i64));
    // Byte 0 of each 64-bit lane to all eight of its bytes (within 128-bit lanes, as
    // `vpshufb` works), then 0..8 added: the byte indices of each integer's window.
    let spread = _mm512_set_epi64(
        0x0808_0808_0808_0808,
        0,
        0x0808_0808_0808_0808,
        0,
        0x0808_0808_0808_0808,
        0,
        0x0808_0808_0808_0808,
        0,
    );
    let index = _mm512_add_epi64(
        _mm512_shuffle_epi8(_mm512_srli_epi64::<3>(starts), spread),
        _mm512_set1_epi64(0x0706_0504_0302_0100),
    );
    let words = _mm512_srlv_epi64(
        _mm512_permutexvar_epi8(index, window),
        _mm512_and_si512(starts, _mm512_set1_epi64(7)),
    );
    let words = _mm512_andnot_si512(_mm512_sllv_epi64(_mm512_set1_epi64(-1), bits), words);
    let total = _mm256_extract_epi64::<3>(_mm512_extracti64x4_epi64::<1>(sum)) as usize;
    (_mm512_or_si512(words, high), total)
}

/// One group of sixteen integers in 32-bit lanes, all with at most [`NARROW_BITS`] low
/// bits: their symbols `s` (one a lane) and `t = s >> LEAD`, the bit `bit` (under 8) of
/// the 64-byte `window` where their low bits start; returns the integers and the low bits
/// they took. Each integer's four bytes from its first (byte 47 + 4 at most) lie in the
/// window, and the integer (under 2^29) in its lane.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
#[inline]
#[allow(clippy::cast_possible_wrap)]
fn narrow16<const LEAD: u32>(
    s: core::arch::x86_64::__m512i,
    t: core::arch::x86_64::__m512i,
    bit: usize,
    window: core::arch::x86_64::__m512i,
) -> (core::arch::x86_64::__m512i, usize) {
    use core::arch::x86_64::{
        _mm512_add_epi32, _mm512_alignr_epi32, _mm512_and_si512, _mm512_andnot_si512,
        _mm512_extracti32x4_epi32, _mm512_max_epu32, _mm512_min_epu32, _mm512_or_si512,
        _mm512_permutexvar_epi8, _mm512_set1_epi32, _mm512_set4_epi32, _mm512_setzero_si512,
        _mm512_shuffle_epi8, _mm512_slli_epi32, _mm512_sllv_epi32, _mm512_srli_epi32,
        _mm512_srlv_epi32, _mm512_sub_epi32, _mm_extract_epi32,
    };
    let one = _mm512_set1_epi32(1);
    let zero = _mm512_setzero_si512();
    let bits = _mm512_sub_epi32(_mm512_max_epu32(t, one), one);
    let high = _mm512_sllv_epi32(
        _mm512_or_si512(
            _mm512_slli_epi32::<LEAD>(_mm512_min_epu32(t, one)),
            _mm512_and_si512(s, _mm512_set1_epi32((1 << LEAD) - 1)),
        ),
        bits,
    );
    let mut sum = _mm512_add_epi32(bits, _mm512_alignr_epi32::<15>(bits, zero));
    sum = _mm512_add_epi32(sum, _mm512_alignr_epi32::<14>(sum, zero));
    sum = _mm512_add_epi32(sum, _mm512_alignr_epi32::<12>(sum, zero));
    sum = _mm512_add_epi32(sum, _mm512_alignr_epi32::<8>(sum, zero));
    let starts = _mm512_add_epi32(_mm512_sub_epi32(sum, bits), _mm512_set1_epi32(bit as i32));
    // Each lane's first byte to all four of its bytes (within 128-bit lanes, as
    // `vpshufb` works), then 0..4 added: the byte indices of its window.
    let index = _mm512_add_epi32(
        _mm512_shuffle_epi8(
            _mm512_srli_epi32::<3>(starts),
            _mm512_set4_epi32(0x0c0c_0c0c, 0x0808_0808, 0x0404_0404, 0),
        ),
        _mm512_set1_epi32(0x0302_0100),
    );
    let words = _mm512_srlv_epi32(
        _mm512_permutexvar_epi8(index, window),
        _mm512_and_si512(starts, _mm512_set1_epi32(7)),
    );
    let words = _mm512_andnot_si512(_mm512_sllv_epi32(_mm512_set1_epi32(-1), bits), words);
    let total = _mm_extract_epi32::<3>(_mm512_extracti32x4_epi32::<3>(sum)) as u32 as usize;
    (_mm512_or_si512(words, high), total)
}

/// Rebuilds binned zigzag residuals of 4-byte values, as [`unbin`] does, and writes
/// their running sums (order 1, or 2 with `order2`) straight into `out` (little-endian
/// 4-byte values), on from `prev` and `delta`, which it updates: the two passes of a
/// delta chunk's binned residuals in one, without the 64-bit integers between them.
/// Returns how many it wrote and the bit position after them. It takes groups of sixteen,
/// in 32-bit lanes where all have at most [`NARROW_BITS`] low bits, else as two groups of
/// eight in 64-bit lanes cut to 32 bits (an integer of a 4-byte value's residual has no
/// more; wider symbols give garbage values, which the caller rejects by their symbol),
/// while the group's windows lie within `low`, then the last whole groups from a zeroed
/// copy of what is left of `low` (reads past its end see zeros, as a scalar reader's
/// do); the caller goes on with the last `n % 16`. Without AVX-512 VBMI, or with a `lead`
/// other than 2 or 3, it writes none.
#[allow(clippy::too_many_arguments)]
pub(crate) fn unbin_sums4(
    lead: u32,
    symbols: &[u8],
    low: &[u8],
    pos: usize,
    order2: bool,
    prev: &mut u64,
    delta: &mut u64,
    out: &mut [u8],
) -> (usize, usize) {
    if !has_fused() {
        return (0, pos);
    }
    let n = symbols.len().min(out.len() / 4);
    let (done, pos) = unbin_sums4_in(lead, symbols, low, pos, order2, prev, delta, out);
    if done + 16 > n {
        return (done, pos);
    }
    // Stopped where a group's windows could pass the end of `low` (under 126 bytes left).
    on_pad(low, pos, |pad, at| {
        let (more, at) = unbin_sums4_in(
            lead,
            &symbols[done..n],
            pad,
            at,
            order2,
            prev,
            delta,
            &mut out[4 * done..4 * n],
        );
        (done + more, at)
    })
    .unwrap_or((done, pos))
}

/// [`unbin_sums4`] without the pad: groups while their windows lie within `low`.
#[allow(clippy::too_many_arguments)]
fn unbin_sums4_in(
    lead: u32,
    symbols: &[u8],
    low: &[u8],
    pos: usize,
    order2: bool,
    prev: &mut u64,
    delta: &mut u64,
    out: &mut [u8],
) -> (usize, usize) {
    #[cfg(target_arch = "x86_64")]
    {
        // Checked for real: the kernel is unsound without its features.
        assert!(has_fused(), "a kernel this CPU lacks");
        // SAFETY: the CPU has the features (asserted above); the kernel bounds every read
        // and write by the slices it is given.
        unsafe {
            match (lead, order2) {
                (2, false) => {
                    unbin_sums4_avx512vbmi::<2, false>(symbols, low, pos, prev, delta, out)
                }
                (2, true) => unbin_sums4_avx512vbmi::<2, true>(symbols, low, pos, prev, delta, out),
                (3, false) => {
                    unbin_sums4_avx512vbmi::<3, false>(symbols, low, pos, prev, delta, out)
                }
                (3, true) => unbin_sums4_avx512vbmi::<3, true>(symbols, low, pos, prev, delta, out),
                _ => (0, pos),
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (lead, symbols, low, order2, prev, delta, out);
        (0, pos)
    }
}

/// Whether [`unbin_sums4`] has a kernel on this CPU (AVX-512F, BW and VBMI), checked for
/// real once.
pub(crate) fn has_fused() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        static HAS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *HAS.get_or_init(|| {
            super::allows(super::CpuLevel::Avx512)
                && std::is_x86_feature_detected!("avx512f")
                && std::is_x86_feature_detected!("avx512bw")
                && std::is_x86_feature_detected!("avx512vbmi")
        })
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// [`unbin_sums4`]'s kernel.
///
/// # Safety
/// The CPU must have AVX-512F, AVX-512BW and AVX-512 VBMI.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
#[allow(
    clippy::cast_ptr_alignment,
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap
)]
unsafe fn unbin_sums4_avx512vbmi<const LEAD: u32, const ORDER2: bool>(
    symbols: &[u8],
    low: &[u8],
    mut pos: usize,
    prev: &mut u64,
    delta: &mut u64,
    out: &mut [u8],
) -> (usize, usize) {
    use core::arch::x86_64::{
        __m128i, __m512i, _mm512_castsi512_si128, _mm512_cmpgt_epu32_mask, _mm512_cvtepu8_epi32,
        _mm512_cvtepu8_epi64, _mm512_loadu_si512, _mm512_permutex2var_epi32, _mm512_set1_epi32,
        _mm512_set_epi32, _mm512_setzero_si512, _mm512_srli_epi32, _mm_cvtsi128_si32,
        _mm_loadl_epi64, _mm_loadu_si128,
    };
    let n = symbols.len().min(out.len() / 4);
    let narrow = _mm512_set1_epi32(NARROW_BITS as i32 + 1);
    // The low halves of two vectors' 64-bit lanes, in order.
    let low_halves = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    let mut carry = _mm512_set1_epi32(*prev as u32 as i32);
    let mut carry_delta = _mm512_set1_epi32(*delta as u32 as i32);
    let mut i = 0;
    // Groups' residuals wait here to be summed by the batch: each group's chain of steps
    // (its bit offsets' prefix sum, the window's permute, two more prefix sums) is long,
    // and a loop doing all of it holds too few groups in flight to hide it; apart, the
    // unbinning steps of different groups overlap, and so do the summing ones.
    let mut pending = [_mm512_setzero_si512(); PENDING];
    let mut held = 0;
    while i + 16 <= n && pos / 8 + 64 <= low.len() {
        // SAFETY: `i + 16 <= symbols.len()`, checked by the loop.
        let s = _mm512_cvtepu8_epi32(unsafe {
            _mm_loadu_si128(symbols.as_ptr().add(i).cast::<__m128i>())
        });
        let t = _mm512_srli_epi32::<LEAD>(s);
        let (residuals, total) = if _mm512_cmpgt_epu32_mask(t, narrow) == 0 {
            // SAFETY: `pos / 8 + 64 <= low.len()`, checked by the loop.
            let window = unsafe { _mm512_loadu_si512(low.as_ptr().add(pos / 8).cast::<__m512i>()) };
            narrow16::<LEAD>(s, t, pos % 8, window)
        } else {
            // Two groups of eight in 64-bit lanes, each integer cut to its low 32 bits
            // (a valid one has no more). Any symbol has at most 62 low bits, so the
            // second window starts at most 62 bytes after the first, even for a hostile
            // symbol: both within `pos / 8 + 126` bytes.
            if pos / 8 + 126 > low.len() {
                break;
            }
            // SAFETY: `i + 16 <= symbols.len()`, checked by the loop; the windows lie
            // within `low`, checked just above.
            let (first, used) = unsafe {
                let s = _mm512_cvtepu8_epi64(_mm_loadl_epi64(
                    symbols.as_ptr().add(i).cast::<__m128i>(),
                ));
                wide8::<LEAD>(
                    s,
                    pos % 8,
                    _mm512_loadu_si512(low.as_ptr().add(pos / 8).cast::<__m512i>()),
                )
            };
            let at = pos + used;
            // SAFETY: as above.
            let (second, more) = unsafe {
                let s = _mm512_cvtepu8_epi64(_mm_loadl_epi64(
                    symbols.as_ptr().add(i + 8).cast::<__m128i>(),
                ));
                wide8::<LEAD>(
                    s,
                    at % 8,
                    _mm512_loadu_si512(low.as_ptr().add(at / 8).cast::<__m512i>()),
                )
            };
            (
                _mm512_permutex2var_epi32(first, low_halves, second),
                used + more,
            )
        };
        pending[held] = residuals;
        held += 1;
        pos += total;
        i += 16;
        if held == PENDING {
            let at = 4 * (i - 16 * held);
            store_sums::<ORDER2>(&pending, &mut carry, &mut carry_delta, &mut out[at..4 * i]);
            held = 0;
        }
    }
    let at = 4 * (i - 16 * held);
    store_sums::<ORDER2>(
        &pending[..held],
        &mut carry,
        &mut carry_delta,
        &mut out[at..4 * i],
    );
    *prev = u64::from(_mm_cvtsi128_si32(_mm512_castsi512_si128(carry)) as u32);
    *delta = u64::from(_mm_cvtsi128_si32(_mm512_castsi512_si128(carry_delta)) as u32);
    (i, pos)
}

/// Most low bits an integer may have for [`unbin_avx512vbmi`]'s groups of sixteen: with
/// the 7 bits of its first byte before them, they fit the 32 bits read from that byte.
#[cfg(target_arch = "x86_64")]
const NARROW_BITS: u32 = 25;

/// Groups of sixteen [`unbin_sums4_avx512vbmi`] unbins before it sums them.
#[cfg(target_arch = "x86_64")]
const PENDING: usize = 8;

/// Sums the groups of residuals `pending`, in order, on from `carry` and `carry_delta`
/// (as [`sums16`](super::sums::sums16) does), into `out`, 64 bytes a group; `out` must
/// hold exactly that many.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
#[allow(clippy::cast_ptr_alignment)] // an unaligned store
fn store_sums<const ORDER2: bool>(
    pending: &[core::arch::x86_64::__m512i],
    carry: &mut core::arch::x86_64::__m512i,
    carry_delta: &mut core::arch::x86_64::__m512i,
    out: &mut [u8],
) {
    use super::sums::{sums16, unzigzag4};
    use core::arch::x86_64::{__m512i, _mm512_storeu_si512};
    assert_eq!(
        out.len(),
        64 * pending.len(),
        "a group of sums has 64 bytes"
    );
    for (&r, to) in pending.iter().zip(out.chunks_exact_mut(64)) {
        let values = sums16::<ORDER2>(unzigzag4(r), carry, carry_delta);
        // SAFETY: `to` has 64 bytes (`chunks_exact_mut`).
        unsafe { _mm512_storeu_si512(to.as_mut_ptr().cast::<__m512i>(), values) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The integer of symbol `s` and its low-bit count, by the rule of the module docs.
    fn bin(lead: u32, s: u8) -> (u64, u32) {
        let s = u32::from(s);
        let t = s >> lead;
        if t == 0 {
            return (u64::from(s), 0);
        }
        let low = t - 1;
        (u64::from((1 << lead) | (s & ((1 << lead) - 1))) << low, low)
    }

    /// Bit `p` of `bytes` is bit `p % 8` of byte `p / 8`; zero past the end.
    fn bits_at(bytes: &[u8], pos: usize, n: u32) -> u64 {
        (0..n).fold(0, |v, i| {
            let p = pos + i as usize;
            v | u64::from(bytes.get(p / 8).map_or(0, |b| b >> (p % 8) & 1)) << i
        })
    }

    #[test]
    fn every_group_matches_a_bit_by_bit_reference() {
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let kernels = kernels();
        eprintln!(
            "unbin kernels tested: {:?}",
            kernels.iter().map(|k| k.0).collect::<Vec<_>>()
        );
        for (lead, &(name, kernel)) in [2, 3]
            .into_iter()
            .flat_map(|l| kernels.iter().map(move |k| (l, k)))
        {
            // Every symbol of an integer of up to 57 bits.
            let valid = (0..=255u8)
                .filter(|&s| u32::from(s >> lead) + lead <= 57)
                .count();
            // Symbols of integers with at most 25 low bits (the groups of sixteen).
            let narrow = (0..=255u8).filter(|&s| u32::from(s >> lead) <= 26).count();
            for (len, start, kind) in (0..=80)
                .flat_map(|len| [0, 1, 7, 13].map(|start| (len, start)))
                .flat_map(|(len, start)| [0, 1, 2].map(|kind| (len, start, kind)))
            {
                {
                    // Any symbol; narrow ones only; narrow ones and one in 24 wide.
                    let symbols: Vec<u8> = (0..len)
                        .map(|_| {
                            let wide = kind == 0 || (kind == 2 && next() % 24 == 0);
                            (next() % if wide { valid } else { narrow } as u64) as u8
                        })
                        .collect();
                    let low: Vec<u8> = (0..len * 8 + 80).map(|_| next() as u8).collect();
                    // Also a bit string too short for some groups.
                    for (whole, low) in [(true, &low[..]), (false, &low[..len * 3])] {
                        let mut out = vec![0u64; len];
                        let (done, end) = unbin_with(kernel, lead, &symbols, low, start, &mut out);
                        assert_eq!(done % 8, 0);
                        let mut pos = start;
                        assert!(done <= len);
                        for (k, &s) in symbols[..done].iter().enumerate() {
                            let (high, bits) = bin(lead, s);
                            let want = high | bits_at(low, pos, bits);
                            assert_eq!(
                                out[k], want,
                                "{name} lead {lead} len {len} kind {kind} value {k}"
                            );
                            pos += bits as usize;
                        }
                        assert_eq!(end, pos);
                        if whole {
                            assert_eq!(done, len / 8 * 8, "{name} gives up early");
                        }
                    }
                }
            }
            // Symbols of wider integers are read within bounds too.
            let symbols = vec![255u8; 64];
            let low = vec![0xA5u8; 600];
            let mut out = vec![0u64; 64];
            let (done, _) = unbin_with(kernel, lead, &symbols, &low, 0, &mut out);
            assert!(done <= 64);
        }
    }

    /// The fused kernel's values are the running sums of the integers the bit-by-bit
    /// reference rebuilds, wrapping at 32 bits, for both orders and leads, every start
    /// bit and length, groups with wide integers among them; it stops only at a group
    /// whose windows would pass the end of the low bits.
    #[test]
    fn fused_sums_match_a_reference() {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        eprintln!("fused kernel tested: {}", has_fused());
        let mut fused = 0;
        for (lead, order2) in [(2, false), (2, true), (3, false), (3, true)] {
            let narrow = (0..=255u8).filter(|&s| u32::from(s >> lead) <= 26).count();
            let wide = (0..=255u8)
                .filter(|&s| u32::from(s >> lead) + lead <= 32)
                .count();
            for (len, start, kind) in (0..=70)
                .flat_map(|len| [0, 3, 7].map(|start| (len, start)))
                .flat_map(|(len, start)| [0, 1].map(|kind| (len, start, kind)))
            {
                let symbols: Vec<u8> = (0..len)
                    .map(|_| {
                        let w = kind == 1 && next() % 40 == 0;
                        (next() % if w { wide } else { narrow } as u64) as u8
                    })
                    .collect();
                let low: Vec<u8> = (0..len * 4 + 70).map(|_| next() as u8).collect();
                for low in [&low[..], &low[..len * 2]] {
                    let (mut prev, mut delta) = (next(), next());
                    let (prev0, delta0) = (prev, delta);
                    let mut out = vec![0xAAu8; len * 4 + 3];
                    let (done, end) = unbin_sums4(
                        lead, &symbols, low, start, order2, &mut prev, &mut delta, &mut out,
                    );
                    assert_eq!(done % 16, 0);
                    fused += done;
                    if !has_fused() {
                        assert_eq!((done, end), (0, start));
                        continue;
                    }
                    // Reference: integers bit by bit, then sums wrapping at 32 bits.
                    let (mut p, mut d, mut pos) = (prev0 as u32, delta0 as u32, start);
                    for (k, &s) in symbols[..done].iter().enumerate() {
                        let (high, bits) = bin(lead, s);
                        let r = (high | bits_at(low, pos, bits)) as u32;
                        pos += bits as usize;
                        let diff = (r >> 1) ^ (r & 1).wrapping_neg();
                        if order2 {
                            d = d.wrapping_add(diff);
                            p = p.wrapping_add(d);
                        } else {
                            p = p.wrapping_add(diff);
                        }
                        let got = u32::from_le_bytes(out[4 * k..4 * k + 4].try_into().unwrap());
                        assert_eq!(got, p, "lead {lead} order2 {order2} len {len} value {k}");
                    }
                    assert_eq!(end, pos);
                    assert!(out[4 * done..].iter().all(|&b| b == 0xAA), "wrote past");
                    if done > 0 {
                        assert_eq!(prev as u32, p);
                        if order2 {
                            assert_eq!(delta as u32, d);
                        }
                    }
                    // Stopped only where it had to: fewer than sixteen left, or (past
                    // the zeroed pad's reach) a position past the end of the low bits.
                    if done + 16 <= len {
                        assert!(
                            pos / 8 > low.len(),
                            "lead {lead} len {len} stopped at {done}"
                        );
                    }
                }
            }
        }
        assert!(
            fused > 10_000 || !has_fused(),
            "{fused} values through the kernel"
        );
        // Hostile symbols (62 low bits each) read past the end of short low bits into
        // the zeroed pad, never past it: whole groups, each symbol's 62 bits counted
        // (the caller rejects a position past the end), and a stop once the pad's
        // windows run out.
        for len in 0..140 {
            let low = vec![0xA5u8; len];
            let (mut prev, mut delta) = (0, 0);
            let mut out = vec![0u8; 4 * 64];
            let (done, end) = unbin_sums4(
                2, &[255; 64], &low, 3, true, &mut prev, &mut delta, &mut out,
            );
            if has_fused() {
                assert!(done.is_multiple_of(16) && done > 0, "{len}: {done}");
                assert_eq!(end, 3 + 62 * done, "{len}");
                if done < 64 {
                    assert!(end / 8 > len, "{len}: stopped at {done}");
                }
            }
        }
    }
}
