//! Running sums that undo `delta`'s zigzag differences (x86_64 AVX-512F or AVX2), for
//! values of 4 and 8 bytes.
//!
//! Residual `r` is the zigzag code of a difference `d = (r >> 1) ^ -(r & 1)`; order 1
//! sums the differences once (`value_i = value_{i-1} + d_i`), order 2 twice (the
//! differences of differences give the differences, which give the values), all wrapping
//! at the value's width. The scalar loop carries each sum through one addition a value;
//! here a vector of values takes its prefix sum in shift-and-add steps, and the only
//! dependency between vectors is the running total, to which each vector adds its last
//! prefix sum: one addition a vector.

/// A set of sums kernels, by the instructions they need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Level {
    /// AVX-512F: 16 4-byte or 8 8-byte values a vector.
    #[cfg(target_arch = "x86_64")]
    Avx512,
    /// AVX2: 8 4-byte or 4 8-byte values a vector.
    #[cfg(target_arch = "x86_64")]
    Avx2,
}

/// The kernel sets this CPU has, fastest first.
pub(crate) fn levels() -> Vec<Level> {
    #[allow(unused_mut)]
    let mut found = Vec::new();
    #[cfg(target_arch = "x86_64")]
    {
        use super::{allows, CpuLevel};
        if allows(CpuLevel::Avx512) && std::is_x86_feature_detected!("avx512f") {
            found.push(Level::Avx512);
        }
        if allows(CpuLevel::Avx2) && std::is_x86_feature_detected!("avx2") {
            found.push(Level::Avx2);
        }
    }
    found
}

/// The fastest kernel set of this CPU, chosen once.
fn level() -> Option<Level> {
    static LEVEL: std::sync::OnceLock<Option<Level>> = std::sync::OnceLock::new();
    *LEVEL.get_or_init(|| levels().first().copied())
}

/// Writes the values of the leading zigzag `residuals` into `out` (`width` bytes each,
/// little-endian), summed once, or twice with `order2`, on from `prev` (the last value)
/// and `delta` (the last difference), which it updates; returns how many it wrote: whole
/// vectors only, none without AVX2 or AVX-512F or for widths other than 4 and 8. The
/// differences (unzigzagged residuals) are taken modulo 2^(8 * width), as the scalar sums
/// do.
pub(crate) fn sums(
    residuals: &[u64],
    order2: bool,
    prev: &mut u64,
    delta: &mut u64,
    width: usize,
    out: &mut [u8],
) -> usize {
    match level() {
        Some(level) => sums_with(level, residuals, order2, prev, delta, width, out),
        None => 0,
    }
}

/// [`sums`] with the kernels of `level`.
pub(crate) fn sums_with(
    level: Level,
    residuals: &[u64],
    order2: bool,
    prev: &mut u64,
    delta: &mut u64,
    width: usize,
    out: &mut [u8],
) -> usize {
    let n = residuals.len().min(out.len() / width.max(1));
    let (residuals, out) = (&residuals[..n], &mut out[..n * width.max(1)]);
    let (from, to) = (residuals.as_ptr().cast::<u8>(), out.as_mut_ptr());
    // SAFETY: `run` checks the CPU's features for `level`; the kernels read and write
    // within `residuals` (`n` words) and `out` (`n` values of `width` bytes).
    unsafe { run::<true>(level, width, order2, from, n, prev, delta, to) }
}

/// [`sums`] where the residuals are the values themselves: `values` holds zigzag
/// residuals of `width` bytes each (little-endian), which it replaces with their running
/// sums, on from `prev` and `delta` (updated); returns how many it replaced, whole vectors
/// from the start (none without AVX2 or AVX-512F or for widths other than 4 and 8).
pub(crate) fn sums_in_place(
    values: &mut [u8],
    order2: bool,
    prev: &mut u64,
    delta: &mut u64,
    width: usize,
) -> usize {
    match level() {
        Some(level) => sums_in_place_with(level, values, order2, prev, delta, width),
        None => 0,
    }
}

/// [`sums_in_place`] with the kernels of `level`.
pub(crate) fn sums_in_place_with(
    level: Level,
    values: &mut [u8],
    order2: bool,
    prev: &mut u64,
    delta: &mut u64,
    width: usize,
) -> usize {
    let n = values.len() / width.max(1);
    let at = values.as_mut_ptr();
    // SAFETY: `run` checks the CPU's features for `level`. The kernels read and write
    // the `n` values of `values` only, each vector read before the same bytes are
    // written; the 8-byte kernels' residuals are those bytes read as words.
    unsafe { run::<false>(level, width, order2, at.cast_const(), n, prev, delta, at) }
}

/// Runs `level`'s kernel for `width` and `order2` over `n` residuals at `residuals`
/// (8-byte words when `WORDS`, else values of `width` bytes) into `n` values at `out`;
/// returns how many it summed (0 for widths other than 4 and 8). Panics where the CPU
/// lacks `level`'s features.
///
/// # Safety
/// `residuals` is valid for reads of `n` residuals and `out` for writes of `n` values of
/// `width` bytes; if the two overlap, they are the same bytes and not `WORDS` (or the
/// width is 8).
#[allow(clippy::too_many_arguments)]
// Elsewhere `Level` has no variant: the body after the empty match never runs.
#[cfg_attr(not(target_arch = "x86_64"), allow(unreachable_code, unused_variables))]
unsafe fn run<const WORDS: bool>(
    level: Level,
    width: usize,
    order2: bool,
    residuals: *const u8,
    n: usize,
    prev: &mut u64,
    delta: &mut u64,
    out: *mut u8,
) -> usize {
    let kernels: [Kernel; 4] = match level {
        #[cfg(target_arch = "x86_64")]
        Level::Avx512 => {
            // Checked for real: a safe caller may name a level this CPU lacks.
            assert!(std::is_x86_feature_detected!("avx512f"));
            [
                sums4_raw::<false, WORDS>,
                sums4_raw::<true, WORDS>,
                sums8_raw::<false>,
                sums8_raw::<true>,
            ]
        }
        #[cfg(target_arch = "x86_64")]
        Level::Avx2 => {
            assert!(std::is_x86_feature_detected!("avx2"));
            [
                sums4_avx2::<false, WORDS>,
                sums4_avx2::<true, WORDS>,
                sums8_avx2::<false>,
                sums8_avx2::<true>,
            ]
        }
    };
    let kernel = match width {
        4 => kernels[usize::from(order2)],
        8 => kernels[2 + usize::from(order2)],
        _ => return 0,
    };
    // SAFETY: the CPU has the kernel's features (asserted above); bounds are the
    // caller's.
    unsafe { kernel(residuals, n, prev, delta, out) }
}

/// A kernel of one width and order: `n` residuals at the first pointer summed into
/// values at the second, on from the running value and difference; returns how many.
type Kernel = unsafe fn(*const u8, usize, &mut u64, &mut u64, *mut u8) -> usize;

/// Inclusive prefix sum of 16 32-bit lanes.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
pub(super) fn prefix4(mut x: core::arch::x86_64::__m512i) -> core::arch::x86_64::__m512i {
    use core::arch::x86_64::{_mm512_add_epi32, _mm512_alignr_epi32, _mm512_setzero_si512};
    let zero = _mm512_setzero_si512();
    x = _mm512_add_epi32(x, _mm512_alignr_epi32::<15>(x, zero));
    x = _mm512_add_epi32(x, _mm512_alignr_epi32::<14>(x, zero));
    x = _mm512_add_epi32(x, _mm512_alignr_epi32::<12>(x, zero));
    _mm512_add_epi32(x, _mm512_alignr_epi32::<8>(x, zero))
}

/// Unzigzagged differences of 16 32-bit residuals.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
pub(super) fn unzigzag4(r: core::arch::x86_64::__m512i) -> core::arch::x86_64::__m512i {
    use core::arch::x86_64::{
        _mm512_and_si512, _mm512_set1_epi32, _mm512_setzero_si512, _mm512_srli_epi32,
        _mm512_sub_epi32, _mm512_xor_si512,
    };
    _mm512_xor_si512(
        _mm512_srli_epi32::<1>(r),
        _mm512_sub_epi32(
            _mm512_setzero_si512(),
            _mm512_and_si512(r, _mm512_set1_epi32(1)),
        ),
    )
}

/// The next 16 4-byte values from their differences `d`: summed once, or twice with
/// `ORDER2`, on from the running value and difference in every lane of `carry` and
/// `carry_delta`, which become those after the sixteenth.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
pub(super) fn sums16<const ORDER2: bool>(
    d: core::arch::x86_64::__m512i,
    carry: &mut core::arch::x86_64::__m512i,
    carry_delta: &mut core::arch::x86_64::__m512i,
) -> core::arch::x86_64::__m512i {
    use core::arch::x86_64::{
        _mm512_add_epi32, _mm512_mullo_epi32, _mm512_permutexvar_epi32, _mm512_set1_epi32,
        _mm512_setr_epi32,
    };
    let last = _mm512_set1_epi32(15);
    if ORDER2 {
        // Value i is carry + (i + 1) * carry_delta + the i-th sum of sums of `d`: both
        // prefix sums are taken apart from the carries, whose chain from one vector to
        // the next is then an add and a broadcast each, not a prefix sum.
        let once = prefix4(d);
        let twice = prefix4(once);
        let steps = _mm512_setr_epi32(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16);
        let values = _mm512_add_epi32(
            _mm512_add_epi32(twice, *carry),
            _mm512_mullo_epi32(steps, *carry_delta),
        );
        *carry_delta = _mm512_add_epi32(*carry_delta, _mm512_permutexvar_epi32(last, once));
        *carry = _mm512_permutexvar_epi32(last, values);
        return values;
    }
    let values = _mm512_add_epi32(prefix4(d), *carry);
    *carry = _mm512_permutexvar_epi32(last, values);
    values
}

/// The next 8 8-byte values from their differences `d`, as [`sums16`] does for 4-byte
/// values.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
pub(super) fn sums8<const ORDER2: bool>(
    d: core::arch::x86_64::__m512i,
    carry: &mut core::arch::x86_64::__m512i,
    carry_delta: &mut core::arch::x86_64::__m512i,
) -> core::arch::x86_64::__m512i {
    use core::arch::x86_64::{
        __m512i, _mm512_add_epi64, _mm512_alignr_epi64, _mm512_permutexvar_epi64,
        _mm512_set1_epi64, _mm512_setzero_si512,
    };
    // Inclusive prefix sum of 8 lanes.
    #[target_feature(enable = "avx512f")]
    #[inline]
    fn prefix(mut x: __m512i) -> __m512i {
        let zero = _mm512_setzero_si512();
        x = _mm512_add_epi64(x, _mm512_alignr_epi64::<7>(x, zero));
        x = _mm512_add_epi64(x, _mm512_alignr_epi64::<6>(x, zero));
        _mm512_add_epi64(x, _mm512_alignr_epi64::<4>(x, zero))
    }
    let last = _mm512_set1_epi64(7);
    let d = if ORDER2 {
        let deltas = _mm512_add_epi64(prefix(d), *carry_delta);
        *carry_delta = _mm512_permutexvar_epi64(last, deltas);
        deltas
    } else {
        d
    };
    let values = _mm512_add_epi64(prefix(d), *carry);
    *carry = _mm512_permutexvar_epi64(last, values);
    values
}

/// [`sums`] of 8-byte values into integers: writes the running sums of the leading
/// zigzag `residuals` into `out`, on from `prev` and `delta`, which it updates; returns
/// how many it wrote (whole vectors only, none without AVX2 or AVX-512F).
pub(crate) fn sums_words(
    residuals: &[u64],
    order2: bool,
    prev: &mut u64,
    delta: &mut u64,
    out: &mut [i64],
) -> usize {
    let len = out.len() * 8;
    // SAFETY: the bytes of `out`, which `out` borrows mutably for the call; every bit
    // pattern is an `i64` and a byte needs no alignment.
    let bytes = unsafe { std::slice::from_raw_parts_mut(out.as_mut_ptr().cast::<u8>(), len) };
    // Only x86_64 has the kernel, and it is little-endian: the bytes are the integers.
    sums(residuals, order2, prev, delta, 8, bytes)
}

/// 4-byte values, 16 at a time: the residuals at `residuals`, `n` little-endian 8-byte
/// words (`WORDS`; their differences taken modulo 2^32) or `n` 4-byte values, summed into
/// `n` values at `out`, which may be the same bytes as 4-byte residuals.
///
/// # Safety
/// The CPU must have AVX-512F; `residuals` is valid for reads of `8 * n` bytes
/// (`WORDS`) or `4 * n`, and `out` for writes of `4 * n`; if the two overlap, they are
/// the same bytes and not `WORDS`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[allow(
    clippy::cast_ptr_alignment,
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap
)]
unsafe fn sums4_raw<const ORDER2: bool, const WORDS: bool>(
    residuals: *const u8,
    n: usize,
    prev: &mut u64,
    delta: &mut u64,
    out: *mut u8,
) -> usize {
    use core::arch::x86_64::{
        __m512i, _mm512_and_si512, _mm512_castsi512_si128, _mm512_loadu_si512,
        _mm512_permutex2var_epi32, _mm512_set1_epi32, _mm512_set1_epi64, _mm512_set_epi32,
        _mm512_setzero_si512, _mm512_srli_epi64, _mm512_storeu_si512, _mm512_sub_epi64,
        _mm512_xor_si512, _mm_cvtsi128_si32,
    };

    // The unzigzagged differences of 8 8-byte residuals, in 64-bit lanes (of which the
    // low 32 bits are kept).
    #[target_feature(enable = "avx512f")]
    #[inline]
    fn differences(r: __m512i) -> __m512i {
        let sign = _mm512_sub_epi64(
            _mm512_setzero_si512(),
            _mm512_and_si512(r, _mm512_set1_epi64(1)),
        );
        _mm512_xor_si512(_mm512_srli_epi64::<1>(r), sign)
    }

    let n = n / 16 * 16;
    if n == 0 {
        return 0;
    }
    // The low halves of two vectors' 64-bit lanes: one two-source permutation where
    // narrowing each would take two.
    let low_halves = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    let mut carry = _mm512_set1_epi32(*prev as u32 as i32);
    let mut carry_delta = _mm512_set1_epi32(*delta as u32 as i32);
    for i in (0..n).step_by(16) {
        let d = if WORDS {
            // SAFETY: `8 * (i + 16) <= 8 * n` bytes (the caller's contract).
            let (a, b) = unsafe {
                let at = residuals.add(8 * i);
                (
                    _mm512_loadu_si512(at.cast::<__m512i>()),
                    _mm512_loadu_si512(at.add(64).cast::<__m512i>()),
                )
            };
            _mm512_permutex2var_epi32(differences(a), low_halves, differences(b))
        } else {
            // SAFETY: `4 * (i + 16) <= 4 * n` bytes (the caller's contract).
            unzigzag4(unsafe { _mm512_loadu_si512(residuals.add(4 * i).cast::<__m512i>()) })
        };
        let values = sums16::<ORDER2>(d, &mut carry, &mut carry_delta);
        // SAFETY: `4 * (i + 16) <= 4 * n` bytes of `out`; in place, the load from the
        // same bytes has been made.
        unsafe { _mm512_storeu_si512(out.add(4 * i).cast::<__m512i>(), values) };
    }
    *prev = u64::from(_mm_cvtsi128_si32(_mm512_castsi512_si128(carry)) as u32);
    *delta = u64::from(_mm_cvtsi128_si32(_mm512_castsi512_si128(carry_delta)) as u32);
    n
}

/// 8-byte values, 8 at a time: the residuals, `n` little-endian words at `residuals`,
/// summed into `n` values at `out`, which may be the same bytes.
///
/// # Safety
/// The CPU must have AVX-512F; `residuals` is valid for reads and `out` for writes of
/// `8 * n` bytes; if the two overlap, they are the same bytes.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[allow(
    clippy::cast_ptr_alignment,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss
)]
unsafe fn sums8_raw<const ORDER2: bool>(
    residuals: *const u8,
    n: usize,
    prev: &mut u64,
    delta: &mut u64,
    out: *mut u8,
) -> usize {
    use core::arch::x86_64::{
        __m512i, _mm512_and_si512, _mm512_castsi512_si128, _mm512_loadu_si512, _mm512_set1_epi64,
        _mm512_setzero_si512, _mm512_srli_epi64, _mm512_storeu_si512, _mm512_sub_epi64,
        _mm512_xor_si512, _mm_cvtsi128_si64,
    };

    let n = n / 8 * 8;
    if n == 0 {
        return 0;
    }
    let one = _mm512_set1_epi64(1);
    let zero = _mm512_setzero_si512();
    let mut carry = _mm512_set1_epi64(*prev as i64);
    let mut carry_delta = _mm512_set1_epi64(*delta as i64);
    for i in (0..n).step_by(8) {
        // SAFETY: `8 * (i + 8) <= 8 * n` bytes (the caller's contract).
        let r = unsafe { _mm512_loadu_si512(residuals.add(8 * i).cast::<__m512i>()) };
        let d = _mm512_xor_si512(
            _mm512_srli_epi64::<1>(r),
            _mm512_sub_epi64(zero, _mm512_and_si512(r, one)),
        );
        let values = sums8::<ORDER2>(d, &mut carry, &mut carry_delta);
        // SAFETY: as for the load, made before this store to the same bytes if they
        // are the same.
        unsafe { _mm512_storeu_si512(out.add(8 * i).cast::<__m512i>(), values) };
    }
    *prev = _mm_cvtsi128_si64(_mm512_castsi512_si128(carry)) as u64;
    *delta = _mm_cvtsi128_si64(_mm512_castsi512_si128(carry_delta)) as u64;
    n
}

/// Unzigzagged differences of 64-bit lanes.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
fn differences64(r: core::arch::x86_64::__m256i) -> core::arch::x86_64::__m256i {
    use core::arch::x86_64::{
        _mm256_and_si256, _mm256_set1_epi64x, _mm256_setzero_si256, _mm256_srli_epi64,
        _mm256_sub_epi64, _mm256_xor_si256,
    };
    let sign = _mm256_sub_epi64(
        _mm256_setzero_si256(),
        _mm256_and_si256(r, _mm256_set1_epi64x(1)),
    );
    _mm256_xor_si256(_mm256_srli_epi64::<1>(r), sign)
}

/// 4-byte values, 8 at a time (AVX2): as [`sums4_raw`].
///
/// # Safety
/// The CPU must have AVX2; the pointers as for [`sums4_raw`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[allow(
    clippy::cast_ptr_alignment,
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap
)]
unsafe fn sums4_avx2<const ORDER2: bool, const WORDS: bool>(
    residuals: *const u8,
    n: usize,
    prev: &mut u64,
    delta: &mut u64,
    out: *mut u8,
) -> usize {
    use core::arch::x86_64::{
        __m256i, _mm256_add_epi32, _mm256_and_si256, _mm256_castps_si256, _mm256_castsi256_ps,
        _mm256_castsi256_si128, _mm256_loadu_si256, _mm256_permute2x128_si256,
        _mm256_permute4x64_epi64, _mm256_permutevar8x32_epi32, _mm256_set1_epi32,
        _mm256_setzero_si256, _mm256_shuffle_epi32, _mm256_shuffle_ps, _mm256_slli_si256,
        _mm256_srli_epi32, _mm256_storeu_si256, _mm256_sub_epi32, _mm256_xor_si256,
        _mm_cvtsi128_si32,
    };

    // Inclusive prefix sum of 8 32-bit lanes: within each 128-bit half, then the low
    // half's total added to the high half.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn prefix(mut x: __m256i) -> __m256i {
        x = _mm256_add_epi32(x, _mm256_slli_si256::<4>(x));
        x = _mm256_add_epi32(x, _mm256_slli_si256::<8>(x));
        let low_total = _mm256_shuffle_epi32::<0xFF>(x);
        _mm256_add_epi32(x, _mm256_permute2x128_si256::<0x08>(low_total, low_total))
    }

    let n = n / 8 * 8;
    if n == 0 {
        return 0;
    }
    let last = _mm256_set1_epi32(7);
    let mut carry = _mm256_set1_epi32(*prev as u32 as i32);
    let mut carry_delta = _mm256_set1_epi32(*delta as u32 as i32);
    for i in (0..n).step_by(8) {
        let d = if WORDS {
            // SAFETY: `8 * (i + 8) <= 8 * n` bytes (the caller's contract).
            let (a, b) = unsafe {
                let at = residuals.add(8 * i);
                (
                    _mm256_loadu_si256(at.cast::<__m256i>()),
                    _mm256_loadu_si256(at.add(32).cast::<__m256i>()),
                )
            };
            // The low halves of the 64-bit lanes: a0 a1 b0 b1 | a2 a3 b2 b3, then the
            // middle quarters swapped.
            let halves = _mm256_castps_si256(_mm256_shuffle_ps::<0x88>(
                _mm256_castsi256_ps(differences64(a)),
                _mm256_castsi256_ps(differences64(b)),
            ));
            _mm256_permute4x64_epi64::<0xD8>(halves)
        } else {
            // SAFETY: `4 * (i + 8) <= 4 * n` bytes (the caller's contract).
            let r = unsafe { _mm256_loadu_si256(residuals.add(4 * i).cast::<__m256i>()) };
            let one = _mm256_set1_epi32(1);
            _mm256_xor_si256(
                _mm256_srli_epi32::<1>(r),
                _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_and_si256(r, one)),
            )
        };
        let d = if ORDER2 {
            let sums = prefix(d);
            let deltas = _mm256_add_epi32(sums, carry_delta);
            carry_delta = _mm256_add_epi32(carry_delta, _mm256_permutevar8x32_epi32(sums, last));
            deltas
        } else {
            d
        };
        let sums = prefix(d);
        let values = _mm256_add_epi32(sums, carry);
        carry = _mm256_add_epi32(carry, _mm256_permutevar8x32_epi32(sums, last));
        // SAFETY: `4 * (i + 8) <= 4 * n` bytes of `out`; in place, the load from the
        // same bytes has been made.
        unsafe { _mm256_storeu_si256(out.add(4 * i).cast::<__m256i>(), values) };
    }
    *prev = u64::from(_mm_cvtsi128_si32(_mm256_castsi256_si128(carry)) as u32);
    *delta = u64::from(_mm_cvtsi128_si32(_mm256_castsi256_si128(carry_delta)) as u32);
    n
}

/// 8-byte values, 4 at a time (AVX2): as [`sums8_raw`].
///
/// # Safety
/// The CPU must have AVX2; the pointers as for [`sums8_raw`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[allow(
    clippy::cast_ptr_alignment,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss
)]
unsafe fn sums8_avx2<const ORDER2: bool>(
    residuals: *const u8,
    n: usize,
    prev: &mut u64,
    delta: &mut u64,
    out: *mut u8,
) -> usize {
    use core::arch::x86_64::{
        __m256i, _mm256_add_epi64, _mm256_blend_epi32, _mm256_castsi256_si128, _mm256_loadu_si256,
        _mm256_permute4x64_epi64, _mm256_set1_epi64x, _mm256_setzero_si256, _mm256_slli_si256,
        _mm256_storeu_si256, _mm_cvtsi128_si64,
    };

    // Inclusive prefix sum of 4 64-bit lanes.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn prefix(mut x: __m256i) -> __m256i {
        x = _mm256_add_epi64(x, _mm256_slli_si256::<8>(x));
        let low_total = _mm256_permute4x64_epi64::<0x55>(x);
        _mm256_add_epi64(
            x,
            _mm256_blend_epi32::<0xF0>(_mm256_setzero_si256(), low_total),
        )
    }

    let n = n / 4 * 4;
    if n == 0 {
        return 0;
    }
    let mut carry = _mm256_set1_epi64x(*prev as i64);
    let mut carry_delta = _mm256_set1_epi64x(*delta as i64);
    for i in (0..n).step_by(4) {
        // SAFETY: `8 * (i + 4) <= 8 * n` bytes (the caller's contract).
        let r = unsafe { _mm256_loadu_si256(residuals.add(8 * i).cast::<__m256i>()) };
        let d = differences64(r);
        let d = if ORDER2 {
            let sums = prefix(d);
            let deltas = _mm256_add_epi64(sums, carry_delta);
            carry_delta = _mm256_add_epi64(carry_delta, _mm256_permute4x64_epi64::<0xFF>(sums));
            deltas
        } else {
            d
        };
        let sums = prefix(d);
        let values = _mm256_add_epi64(sums, carry);
        carry = _mm256_add_epi64(carry, _mm256_permute4x64_epi64::<0xFF>(sums));
        // SAFETY: as for the load, made before this store to the same bytes if they
        // are the same.
        unsafe { _mm256_storeu_si256(out.add(8 * i).cast::<__m256i>(), values) };
    }
    *prev = _mm_cvtsi128_si64(_mm256_castsi256_si128(carry)) as u64;
    *delta = _mm_cvtsi128_si64(_mm256_castsi256_si128(carry_delta)) as u64;
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_match_a_scalar_reference() {
        if levels().is_empty() {
            eprintln!("SKIPPED: this CPU has no sums kernel (AVX2, AVX-512F); nothing to compare");
            return;
        }
        eprintln!("sums kernels tested: {:?}", levels());
        for level in levels() {
            sums_of_level_match_a_scalar_reference(level);
        }
    }

    fn sums_of_level_match_a_scalar_reference(level: Level) {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for width in [4usize, 8] {
            let m = if width == 4 {
                u64::from(u32::MAX)
            } else {
                u64::MAX
            };
            for order2 in [false, true] {
                for len in 0..=70 {
                    // Small and full-width residuals.
                    let residuals: Vec<u64> = (0..len)
                        .map(|i| if i % 3 == 0 { next() & m } else { next() % 9 })
                        .collect();
                    let (p0, d0) = (next(), next());
                    let (mut prev, mut delta) = (p0, d0);
                    let mut out = vec![0u8; len * width];
                    let done = sums_with(
                        level, &residuals, order2, &mut prev, &mut delta, width, &mut out,
                    );
                    assert!(done <= len);
                    // Every whole vector: 8 or 16 4-byte values, 4 or 8 8-byte values.
                    assert!(len - done < 16, "{level:?} {width} {order2} {len}: {done}");
                    let (mut p, mut d) = (p0, d0);
                    for (i, &r) in residuals[..done].iter().enumerate() {
                        let diff = (r >> 1) ^ (r & 1).wrapping_neg();
                        if order2 {
                            d = d.wrapping_add(diff);
                            p = p.wrapping_add(d);
                        } else {
                            p = p.wrapping_add(diff);
                        }
                        let got = &out[i * width..(i + 1) * width];
                        assert_eq!(
                            got,
                            &p.to_le_bytes()[..width],
                            "{level:?} {width} {order2} {len} {i}"
                        );
                    }
                    if done > 0 {
                        assert_eq!(prev & m, p & m);
                        if order2 {
                            assert_eq!(delta & m, d & m);
                        }
                    }
                }
            }
        }
    }
    /// In place, the residuals read from the values' own bytes, the sums are those of
    /// [`sums`] (checked against a scalar reference above), for every length and both
    /// widths and orders.
    #[test]
    fn sums_in_place_match_sums() {
        if levels().is_empty() {
            eprintln!("SKIPPED: this CPU has no sums kernel (AVX2, AVX-512F); nothing to compare");
            return;
        }
        for level in levels() {
            sums_in_place_of_level_match_sums(level);
        }
    }

    fn sums_in_place_of_level_match_sums(level: Level) {
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        for width in [4usize, 8] {
            let m = u64::MAX >> (64 - 8 * width);
            for order2 in [false, true] {
                for len in 0..=70 {
                    let residuals: Vec<u64> = (0..len)
                        .map(|i| {
                            let r = crate::encodings::xorshift(&mut x);
                            if i % 3 == 0 {
                                r & m
                            } else {
                                r % 9
                            }
                        })
                        .collect();
                    let (p0, d0) = (
                        crate::encodings::xorshift(&mut x),
                        crate::encodings::xorshift(&mut x),
                    );
                    let mut expected = vec![0u8; len * width];
                    let (mut p1, mut d1) = (p0, d0);
                    let want = sums_with(
                        level,
                        &residuals,
                        order2,
                        &mut p1,
                        &mut d1,
                        width,
                        &mut expected,
                    );
                    let mut values: Vec<u8> = residuals
                        .iter()
                        .flat_map(|r| r.to_le_bytes()[..width].to_vec())
                        .collect();
                    let (mut p2, mut d2) = (p0, d0);
                    let done =
                        sums_in_place_with(level, &mut values, order2, &mut p2, &mut d2, width);
                    assert_eq!(done, want, "{level:?} {width} {order2} {len}");
                    assert_eq!(
                        values[..done * width],
                        expected[..done * width],
                        "{width} {order2} {len}"
                    );
                    // The values past the vectors are left as they were.
                    for (i, r) in residuals.iter().enumerate().skip(done) {
                        assert_eq!(values[i * width..(i + 1) * width], r.to_le_bytes()[..width]);
                    }
                    if done > 0 {
                        assert_eq!(p2 & m, p1 & m);
                        assert_eq!(d2 & m, d1 & m);
                    }
                }
            }
        }
    }
}
