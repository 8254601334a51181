//! CRC-32C (Castagnoli: polynomial 0x1EDC6F41, bit-reflected, initial and final value
//! inverted), the checksum of a file's footer, pages and chunks.
//!
//! The `crc32c` crate computes it with SSE4.2's `crc32` instruction: 8 bytes an
//! instruction, three streams side by side. Here inputs of 256 bytes and more are
//! instead folded by carry-less multiplies (x86_64): each 128-bit lane of a register is
//! multiplied forward by x^d and added (XOR) to the lane d bits on, so independent
//! registers advance side by side and no step waits for another register. With AVX-512F
//! and VPCLMULQDQ, four registers of four lanes take 256 bytes a step; with PCLMULQDQ
//! alone, four 128-bit registers take 64 (only where a timing at first use finds that
//! faster than the crate: it was on an Intel Xeon, not on an AMD Zen 4). The registers are
//! then folded onto the last one (and its lanes onto the last lane), and the 128 bits
//! left reduced to 32 by Barrett's reduction (Gopal et al., "Fast CRC computation for
//! generic polynomials using PCLMULQDQ", Intel, 2009). What is left under 64 bytes goes
//! on through the crate, from the CRC computed so far; so does everything on other CPUs.
//!
//! The fold constants are x^n mod P for the distances used, computed at compile time,
//! bit-reflected and shifted left by one, as the reflected multiply needs. The tests
//! derive the IEEE polynomial's constants with the same functions and compare them to
//! the published ones, compare [`crc32c`] to the crate at every length up to 4 KiB from
//! every alignment in a cache line, and each kernel alone at every length to 2 KiB.

// Only x86_64 has the folding kernels; elsewhere the constants serve the tests alone.
#![cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]

/// The CRC-32C polynomial without its x^32 term, in normal (not reflected) bit order.
const POLY: u32 = 0x1EDC_6F41;

/// x^n mod P(x) for `poly` (normal bit order, without its x^32 term).
const fn x_pow_mod(n: u32, poly: u32) -> u32 {
    let mut r: u32 = 1;
    let mut i = 0;
    while i < n {
        let carry = r & 0x8000_0000 != 0;
        r <<= 1;
        if carry {
            r ^= poly;
        }
        i += 1;
    }
    r
}

/// The fold constant for x^n: x^n mod P, reflected, times x (shifted left by one).
const fn fold_key(n: u32, poly: u32) -> u64 {
    (x_pow_mod(n, poly).reverse_bits() as u64) << 1
}

/// Barrett's mu, floor(x^64 / P(x)) (33 bits), reflected over its 33 bits.
const fn barrett_mu(poly: u32) -> u64 {
    // Long division of x^64 by P = x^32 + poly: the quotient's bit k is set when the
    // running remainder has its x^(32+k) term.
    let p: u128 = (1u128 << 32) | poly as u128;
    let mut rem: u128 = 1u128 << 64;
    let mut q: u64 = 0;
    let mut k: i32 = 32;
    while k >= 0 {
        if rem & (1u128 << (32 + k)) != 0 {
            rem ^= p << k;
            q |= 1u64 << k;
        }
        k -= 1;
    }
    q.reverse_bits() >> 31
}

/// P(x) with its x^32 term, reflected over its 33 bits.
const fn reflected_poly(poly: u32) -> u64 {
    ((poly.reverse_bits() as u64) << 1) | 1
}

/// The pair that folds a 128-bit lane forward by `bits`: its low 64 bits (the higher
/// powers, in reflected order) multiply by x^(bits + 32), its high 64 bits by
/// x^(bits - 32).
const fn fold_pair(bits: u32, poly: u32) -> [u64; 2] {
    [fold_key(bits + 32, poly), fold_key(bits - 32, poly)]
}

/// The constants of one polynomial.
#[derive(Debug, PartialEq, Eq)]
struct Keys {
    /// Folds by 2048 bits (one loop step), 1536, 1024 and 512.
    by_2048: [u64; 2],
    by_1536: [u64; 2],
    by_1024: [u64; 2],
    by_512: [u64; 2],
    /// Fold the lanes of the last 64 bytes onto the last lane: by 384, 256 and 128 bits.
    by_384: [u64; 2],
    by_256: [u64; 2],
    by_128: [u64; 2],
    /// x^64, for the reduction from 96 to 64 bits.
    x64: u64,
    /// Barrett's mu and P, reflected.
    mu: u64,
    poly: u64,
}

const fn keys(poly: u32) -> Keys {
    Keys {
        by_2048: fold_pair(2048, poly),
        by_1536: fold_pair(1536, poly),
        by_1024: fold_pair(1024, poly),
        by_512: fold_pair(512, poly),
        by_384: fold_pair(384, poly),
        by_256: fold_pair(256, poly),
        by_128: fold_pair(128, poly),
        x64: fold_key(64, poly),
        mu: barrett_mu(poly),
        poly: reflected_poly(poly),
    }
}

const KEYS: Keys = keys(POLY);

/// Inputs shorter than this go to the `crc32c` crate whole: the folding kernels need
/// four full registers to start (the 128-bit one then folds four at a time too).
const MIN_FOLD: usize = 256;

/// A folding kernel: the CRC-32C of the first `folded` bytes of its input (a multiple of
/// 64, every whole 64 bytes; none under [`MIN_FOLD`]) and `folded`.
#[cfg(target_arch = "x86_64")]
type Fold = fn(&[u8]) -> (u32, usize);

/// The folding kernels this CPU has, fastest first, by name.
#[cfg(target_arch = "x86_64")]
fn folds() -> Vec<(&'static str, Fold)> {
    use super::{allows, CpuLevel};
    let mut found: Vec<(&'static str, Fold)> = Vec::new();
    if allows(CpuLevel::Sse)
        && std::is_x86_feature_detected!("pclmulqdq")
        && std::is_x86_feature_detected!("sse4.1")
    {
        if allows(CpuLevel::Avx512)
            && std::is_x86_feature_detected!("avx512f")
            && std::is_x86_feature_detected!("vpclmulqdq")
        {
            // SAFETY: stored only after the kernel's features were detected.
            found.push(("avx512", |data| unsafe { fold_avx512(data) }));
        }
        // SAFETY: as above.
        found.push(("pclmulqdq", |data| unsafe { fold_sse(data) }));
    }
    found
}

/// The names of the folding kernels this CPU has (and the level allows).
#[cfg(all(test, target_arch = "x86_64"))]
pub(crate) fn fold_names() -> Vec<&'static str> {
    folds().into_iter().map(|(name, _)| name).collect()
}

/// The folding kernel of this CPU, chosen once: the AVX-512 one where the CPU has it;
/// else the 128-bit one only if it beats the `crc32c` crate here. How fast PCLMULQDQ
/// issues depends on the CPU: on an Intel Xeon the 128-bit fold ran 1.0-1.45x the crate's
/// `crc32` instructions, on an AMD Zen 4 (with AVX-512 turned off) 0.4-0.6x. The two give
/// the same value, so which runs is a matter of speed alone, measured once
/// ([`fold_beats_crate`]). Setting the environment variable `MINIBLOCK_CRC` to
/// `pclmulqdq` or `avx512` picks that kernel instead (when the CPU has it), and `crate`
/// the `crc32c` crate alone, for comparisons.
#[cfg(target_arch = "x86_64")]
fn fold() -> Option<Fold> {
    static FOLD: std::sync::OnceLock<Option<Fold>> = std::sync::OnceLock::new();
    *FOLD.get_or_init(|| {
        let folds = folds();
        match std::env::var("MINIBLOCK_CRC").ok().as_deref() {
            Some("crate") => None,
            Some(name) => folds
                .iter()
                .find(|f| f.0 == name)
                .or(folds.first())
                .map(|f| f.1),
            None => folds
                .first()
                .filter(|f| f.0 == "avx512" || fold_beats_crate(f.1))
                .map(|f| f.1),
        }
    })
}

/// Whether `fold` computes the CRC-32C of 16 KiB faster than the crate alone: the best of
/// five timings each, taken in turns (about 30 us in all, once a process).
#[cfg(target_arch = "x86_64")]
fn fold_beats_crate(fold: Fold) -> bool {
    use std::hint::black_box;
    use std::time::{Duration, Instant};
    let data: Vec<u8> = (0..16 << 10)
        .map(|i: u32| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    let time = |f: &dyn Fn() -> u32| {
        let start = Instant::now();
        black_box(f());
        start.elapsed()
    };
    let (mut folded, mut crate_only) = (Duration::MAX, Duration::MAX);
    for _ in 0..5 {
        folded = folded.min(time(&|| {
            let (crc, at) = fold(black_box(&data));
            crc32c::crc32c_append(crc, &data[at..])
        }));
        crate_only = crate_only.min(time(&|| crc32c::crc32c(black_box(&data))));
    }
    folded < crate_only
}

/// The CRC-32C of `data`: the checksum of a file's footer, pages and chunks (the same
/// value as the `crc32c` crate's).
#[inline]
pub fn crc32c(data: &[u8]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    if data.len() >= MIN_FOLD {
        if let Some(fold) = fold() {
            let (crc, folded) = fold(data);
            return crc32c::crc32c_append(crc, &data[folded..]);
        }
    }
    crc32c::crc32c(data)
}

/// Folds `data` 256 bytes a step in four 512-bit registers (sixteen 128-bit lanes).
///
/// # Safety
/// The CPU must have AVX-512F, VPCLMULQDQ, PCLMULQDQ and SSE4.1. Every load is of a
/// range checked against `data` first, so any length is sound.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,vpclmulqdq,pclmulqdq,sse4.1")]
unsafe fn fold_avx512(data: &[u8]) -> (u32, usize) {
    use core::arch::x86_64::{
        __m512i, _mm512_broadcast_i32x4, _mm512_castsi128_si512, _mm512_castsi512_si128,
        _mm512_clmulepi64_epi128, _mm512_extracti32x4_epi32, _mm512_loadu_si512,
        _mm512_maskz_mov_epi64, _mm512_set_epi64, _mm512_ternarylogic_epi64, _mm512_xor_si512,
        _mm_cvtsi32_si128, _mm_set_epi64x, _mm_xor_si128,
    };

    if data.len() < MIN_FOLD {
        return (0, 0);
    }
    let load = |at: usize| -> __m512i {
        let block: &[u8; 64] = data[at..at + 64].try_into().expect("64 bytes");
        // SAFETY: `block` is 64 readable bytes; the load needs no alignment.
        unsafe { _mm512_loadu_si512(block.as_ptr().cast()) }
    };
    let pair = |k: [u64; 2]| {
        _mm512_broadcast_i32x4(_mm_set_epi64x(k[1].cast_signed(), k[0].cast_signed()))
    };
    // Each 128-bit lane of `a` moved forward by the distance of `keys`, plus `b`.
    let fold = |a: __m512i, keys: __m512i, b: __m512i| {
        let low = _mm512_clmulepi64_epi128(a, keys, 0x00);
        let high = _mm512_clmulepi64_epi128(a, keys, 0x11);
        _mm512_ternarylogic_epi64(low, high, b, 0x96)
    };

    // The initial value ~0 enters as an XOR into the first 32 bits.
    let mut v0 = _mm512_xor_si512(load(0), _mm512_castsi128_si512(_mm_cvtsi32_si128(-1)));
    let mut v1 = load(64);
    let mut v2 = load(128);
    let mut v3 = load(192);
    let mut at = 256;
    let by_2048 = pair(KEYS.by_2048);
    while data.len() - at >= 256 {
        v0 = fold(v0, by_2048, load(at));
        v1 = fold(v1, by_2048, load(at + 64));
        v2 = fold(v2, by_2048, load(at + 128));
        v3 = fold(v3, by_2048, load(at + 192));
        at += 256;
    }
    let mut acc = fold(v0, pair(KEYS.by_1536), v3);
    acc = fold(v1, pair(KEYS.by_1024), acc);
    acc = fold(v2, pair(KEYS.by_512), acc);
    let by_512 = pair(KEYS.by_512);
    while data.len() - at >= 64 {
        acc = fold(acc, by_512, load(at));
        at += 64;
    }

    // Lanes 0, 1 and 2 onto lane 3 (48, 32 and 16 bytes on); lane 3 multiplies by zero.
    let [k416, k352] = KEYS.by_384.map(u64::cast_signed);
    let [k288, k224] = KEYS.by_256.map(u64::cast_signed);
    let [k160, k96] = KEYS.by_128.map(u64::cast_signed);
    let lanes = _mm512_set_epi64(0, 0, k96, k160, k224, k288, k352, k416);
    let last = _mm512_maskz_mov_epi64(0b1100_0000, acc);
    let folded = fold(acc, lanes, last);
    let rest = _mm_xor_si128(
        _mm_xor_si128(
            _mm512_castsi512_si128(folded),
            _mm512_extracti32x4_epi32(folded, 1),
        ),
        _mm_xor_si128(
            _mm512_extracti32x4_epi32(folded, 2),
            _mm512_extracti32x4_epi32(folded, 3),
        ),
    );
    (reduce(rest), at)
}

/// Folds `data` 64 bytes a step in four 128-bit registers.
///
/// # Safety
/// The CPU must have PCLMULQDQ and SSE4.1. Every load is of a range checked against
/// `data` first, so any length is sound.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "pclmulqdq,sse4.1")]
unsafe fn fold_sse(data: &[u8]) -> (u32, usize) {
    use core::arch::x86_64::{
        __m128i, _mm_clmulepi64_si128, _mm_cvtsi32_si128, _mm_loadu_si128, _mm_set_epi64x,
        _mm_xor_si128,
    };

    if data.len() < MIN_FOLD {
        return (0, 0);
    }
    let load = |at: usize| -> __m128i {
        let block: &[u8; 16] = data[at..at + 16].try_into().expect("16 bytes");
        // SAFETY: `block` is 16 readable bytes; the load needs no alignment.
        unsafe { _mm_loadu_si128(block.as_ptr().cast()) }
    };
    let pair = |k: [u64; 2]| _mm_set_epi64x(k[1].cast_signed(), k[0].cast_signed());
    let fold = |a: __m128i, keys: __m128i, b: __m128i| {
        let low = _mm_clmulepi64_si128(a, keys, 0x00);
        let high = _mm_clmulepi64_si128(a, keys, 0x11);
        _mm_xor_si128(_mm_xor_si128(low, high), b)
    };

    let mut v0 = _mm_xor_si128(load(0), _mm_cvtsi32_si128(-1));
    let mut v1 = load(16);
    let mut v2 = load(32);
    let mut v3 = load(48);
    let mut at = 64;
    let by_512 = pair(KEYS.by_512);
    while data.len() - at >= 64 {
        v0 = fold(v0, by_512, load(at));
        v1 = fold(v1, by_512, load(at + 16));
        v2 = fold(v2, by_512, load(at + 32));
        v3 = fold(v3, by_512, load(at + 48));
        at += 64;
    }
    let mut acc = fold(v0, pair(KEYS.by_384), v3);
    acc = fold(v1, pair(KEYS.by_256), acc);
    acc = fold(v2, pair(KEYS.by_128), acc);
    (reduce(acc), at)
}

/// The CRC-32C of 128 folded bits: to 96 (the low half times x^96, plus the high half),
/// to 64 (the low 32 bits times x^64, plus the rest), then Barrett's reduction to 32.
/// Callable only from code compiled for its features.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "pclmulqdq,sse4.1")]
fn reduce(rest: core::arch::x86_64::__m128i) -> u32 {
    use core::arch::x86_64::{
        _mm_and_si128, _mm_clmulepi64_si128, _mm_extract_epi32, _mm_set_epi32, _mm_set_epi64x,
        _mm_srli_si128, _mm_xor_si128,
    };
    let [k160, k96] = KEYS.by_128.map(u64::cast_signed);
    let by_96 = _mm_set_epi64x(k96, k160);
    let rest = _mm_xor_si128(
        _mm_clmulepi64_si128(rest, by_96, 0x10),
        _mm_srli_si128(rest, 8),
    );
    let low32 = _mm_set_epi32(0, 0, 0, -1);
    let rest = _mm_xor_si128(
        _mm_clmulepi64_si128(
            _mm_and_si128(rest, low32),
            _mm_set_epi64x(0, KEYS.x64.cast_signed()),
            0x00,
        ),
        _mm_srli_si128(rest, 4),
    );
    let mu_p = _mm_set_epi64x(KEYS.mu.cast_signed(), KEYS.poly.cast_signed());
    let t1 = _mm_clmulepi64_si128(_mm_and_si128(rest, low32), mu_p, 0x10);
    let t2 = _mm_clmulepi64_si128(_mm_and_si128(t1, low32), mu_p, 0x00);
    !(_mm_extract_epi32(_mm_xor_si128(rest, t2), 1).cast_unsigned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ieee_constants_match_the_published_ones() {
        // The same functions for CRC-32 (IEEE, 0x04C11DB7) give the constants of Intel's
        // paper and of crc32fast's PCLMULQDQ kernel.
        const IEEE: u32 = 0x04C1_1DB7;
        assert_eq!(fold_pair(512, IEEE), [0x1_5444_2bd4, 0x1_c6e4_1596]);
        assert_eq!(fold_pair(128, IEEE), [0x1_7519_97d0, 0x0_ccaa_009e]);
        assert_eq!(fold_pair(1024, IEEE), [0x1_e88e_f372, 0x1_4a7f_e880]);
        assert_eq!(fold_pair(2048, IEEE), [0x1_1542_778a, 0x1_322d_1430]);
        assert_eq!(fold_key(64, IEEE), 0x1_63cd_6124);
        assert_eq!(reflected_poly(IEEE), 0x1_DB71_0641);
        assert_eq!(barrett_mu(IEEE), 0x1_F701_1641);
    }

    /// Bytes that are not a pattern a wrong fold could still get right.
    fn noise(n: usize) -> Vec<u8> {
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        (0..n)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state >> 32) as u8
            })
            .collect()
    }

    #[test]
    fn every_length_and_alignment_matches_the_crate() {
        let bytes = noise(4096 + 64);
        for start in 0..64 {
            for len in 0..=4096 {
                let data = &bytes[start..start + len];
                assert_eq!(
                    crc32c(data),
                    crc32c::crc32c(data),
                    "start {start} len {len}"
                );
            }
        }
        for len in [65_536, 1 << 20, (1 << 20) + 77] {
            let data = noise(len);
            assert_eq!(crc32c(&data), crc32c::crc32c(&data), "len {len}");
        }
    }

    #[test]
    fn every_folding_kernel_matches_the_crate_and_detects_every_single_bit_flip() {
        #[cfg(target_arch = "x86_64")]
        {
            let kernels = folds();
            eprintln!(
                "crc kernels tested: {:?}",
                kernels.iter().map(|k| k.0).collect::<Vec<_>>()
            );
            let bytes = noise(2048 + 64);
            for &(name, fold) in &kernels {
                for start in [0, 1, 7, 63] {
                    for len in 0..=2048 {
                        let data = &bytes[start..start + len];
                        let (crc, folded) = fold(data);
                        let whole = len / 64 * 64;
                        let want = if len < MIN_FOLD { 0 } else { whole };
                        assert_eq!(folded, want, "{name} start {start} len {len}");
                        assert_eq!(crc, crc32c::crc32c(&data[..folded]), "{name} {len}");
                    }
                }
                let mut data = noise(1000);
                let whole = fold(&data).0;
                for bit in 0..960 * 8 {
                    data[bit / 8] ^= 1 << (bit % 8);
                    assert_ne!(fold(&data).0, whole, "{name} bit {bit}");
                    data[bit / 8] ^= 1 << (bit % 8);
                }
            }
            if !kernels.is_empty() {
                return;
            }
        }
        eprintln!("SKIPPED: this CPU has no PCLMULQDQ; the crate's CRC ran");
    }
}
