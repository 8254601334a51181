//! CRC-32C (Castagnoli: polynomial 0x1EDC6F41, bit-reflected, initial and final value
//! inverted), the checksum of a file's footer, pages and chunks.
//!
//! The `crc32c` crate computes it with SSE4.2's `crc32` instruction: 8 bytes an
//! instruction, three streams side by side. Where the CPU has AVX-512F and VPCLMULQDQ,
//! [`crc32c`] instead folds 64 bytes a carry-less multiply pair: four registers of four
//! 128-bit lanes take 256 bytes a loop step, each register multiplied forward by
//! x^2048 and added (XOR) to the next 256 bytes, so no step waits for another register.
//! The registers are then folded onto the last one, its lanes onto the last lane, and
//! the 128 bits left reduced to 32 (Barrett reduction, as in Gopal et al., "Fast CRC
//! computation for generic polynomials using PCLMULQDQ", Intel, 2009). What is left
//! under 64 bytes goes on through the `crc32c` crate, from the CRC computed so far.
//!
//! The fold constants are x^n mod P for the distances used, computed here at compile
//! time, bit-reflected and shifted left by one, as the reflected multiply needs. The
//! tests derive the constants of the IEEE polynomial with the same function and compare
//! them to the published ones, and compare [`crc32c`] to the crate at every length up
//! to 4 KiB from every alignment in a cache line.

// Only x86_64 has the folding kernel; elsewhere the constants serve the tests alone.
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

/// Inputs shorter than this go to the `crc32c` crate whole: the folding kernel needs
/// four full registers to start.
const MIN_FOLD: usize = 256;

/// The CRC-32C of `data`: the checksum of a file's footer, pages and chunks (the same
/// value as the `crc32c` crate's).
#[inline]
pub fn crc32c(data: &[u8]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    if data.len() >= MIN_FOLD && has_vpclmulqdq() {
        // SAFETY: the CPU has the kernel's features (checked just above).
        let (crc, folded) = unsafe { fold_avx512(data) };
        return crc32c::crc32c_append(crc, &data[folded..]);
    }
    crc32c::crc32c(data)
}

/// Whether the CPU has what [`fold_avx512`] needs (asked once per process).
#[cfg(target_arch = "x86_64")]
fn has_vpclmulqdq() -> bool {
    static HAS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *HAS.get_or_init(|| {
        std::is_x86_feature_detected!("avx512f")
            && std::is_x86_feature_detected!("vpclmulqdq")
            && std::is_x86_feature_detected!("pclmulqdq")
            && std::is_x86_feature_detected!("sse4.1")
    })
}

/// The CRC-32C of the first `folded` bytes of `data` (a multiple of 64), and `folded`:
/// every whole 64 bytes.
///
/// # Safety
/// The CPU must have AVX-512F, VPCLMULQDQ, PCLMULQDQ and SSE4.1. Every load is of a
/// range checked against `data` first, so any length is sound; lengths under 256 are
/// left whole to the caller (`folded == 0`, `crc` the CRC of no bytes).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,vpclmulqdq,pclmulqdq,sse4.1")]
unsafe fn fold_avx512(data: &[u8]) -> (u32, usize) {
    use core::arch::x86_64::{
        __m512i, _mm512_broadcast_i32x4, _mm512_castsi128_si512, _mm512_castsi512_si128,
        _mm512_clmulepi64_epi128, _mm512_extracti32x4_epi32, _mm512_loadu_si512,
        _mm512_maskz_mov_epi64, _mm512_set_epi64, _mm512_ternarylogic_epi64, _mm512_xor_si512,
        _mm_and_si128, _mm_clmulepi64_si128, _mm_cvtsi32_si128, _mm_extract_epi32, _mm_set_epi32,
        _mm_set_epi64x, _mm_srli_si128, _mm_xor_si128,
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

    // 128 bits to 96 (the low half times x^96, plus the high half), 96 to 64 (the low 32
    // bits times x^64, plus the rest), then Barrett's reduction to 32.
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
    let crc = !(_mm_extract_epi32(_mm_xor_si128(rest, t2), 1).cast_unsigned());
    (crc, at)
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
    fn folding_kernel_runs_and_detects_every_single_bit_flip() {
        #[cfg(target_arch = "x86_64")]
        if has_vpclmulqdq() {
            let mut data = noise(1000);
            // SAFETY: the CPU has the kernel's features (checked above).
            let (crc, folded) = unsafe { fold_avx512(&data) };
            assert_eq!(folded, 960);
            assert_eq!(crc, crc32c::crc32c(&data[..960]));
            let whole = crc32c(&data);
            for bit in 0..data.len() * 8 {
                data[bit / 8] ^= 1 << (bit % 8);
                assert_ne!(crc32c(&data), whole, "bit {bit}");
                data[bit / 8] ^= 1 << (bit % 8);
            }
            // SAFETY: as above; a short input is left to the caller.
            assert_eq!(unsafe { fold_avx512(&data[..255]) }, (0, 0));
            return;
        }
        eprintln!("SKIPPED: this CPU has no AVX-512F with VPCLMULQDQ; the crate's CRC ran");
    }
}
