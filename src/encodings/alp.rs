//! ALP (Afroozeh, Kuffo, Boncz, SIGMOD 2023) over each miniblock chunk of 32- or 64-bit
//! floats.
//!
//! Decimal-like floats (prices, sensor readings, anything parsed from text with a few
//! decimals) are integers in disguise: `21.7` is `217 / 10`. Each chunk picks an exponent
//! `e` and a factor `f` (`f <= e`) from a sample of its values, turns every value `x` into
//! `n = round(x * 10^(e - f))`, and keeps `n` when `(n * 10^f) / 10^e`, computed in f64
//! and rounded to the value's width, gives back exactly the bits of `x`. The integers are
//! then frame-of-reference coded (`n - min`) or, when that is narrower, delta coded
//! (`n_i - n_(i-1) - min_delta`), and stored bit-packed (for decoding without a general
//! compressor); or as byte streams (under LZ4/Zstd, which find repeats in whole bytes),
//! frame-of-reference coded or as zigzag coded differences of order 1 or 2, whichever
//! leaves fewer significant bits (the zero high bytes of small differences cost the
//! compressor next to nothing, so a fill value among measurements costs only where its
//! runs start and end).
//! Dyadic fractions (a grid in 1/16 m, values computed as `i * 0.25`) take a binary
//! exponent `k` instead: `n = x * 2^k`, exact. Values that do not round-trip (NaN,
//! infinities, -0.0, values with more digits than the chunk's exponent) are exceptions, stored with their positions as they are. A chunk
//! where ALP would not be smaller than the values stores them plain. Every chunk decodes
//! alone: its exponent, factor and reference live in its own header.
//!
//! ```text
//! ALP chunk of n values of W bytes (little-endian)
//!   byte 0       e: decimal exponent (0..=18 for f64, 0..=10 for f32), or binary k (0..=62)
//!   byte 1       f: factor exponent (0..=e; 0 when binary)
//!   byte 2       b: bits per stored integer (0..=64)
//!   byte 3       flags: bit 0 delta, bit 1 byte streams, bit 2 plain, bit 3 binary
//!                (value = n * 2^-k), bit 4 corrections, bit 5 zigzag (with delta and
//!                byte streams: the stored integers are zigzag coded differences,
//!                reference 0), bit 6 order 2 (with zigzag: differences of consecutive
//!                differences), bit 7 zero
//!   byte 4..8    x: exception count, u32 (at most n)
//!   byte 8..16   reference, i64: the minimum integer (or, delta coded, minimum delta)
//!   [byte 16..24 first integer, i64]                       delta coded only
//!   integers     bit-packed: ceil(n * b / 8) bytes (LSB first, see kernels::bitpack);
//!                byte streams: ceil(b / 8) streams of n bytes, stream j = byte j of each
//!   positions    x u16, strictly increasing, each below n
//!   exceptions   x values of W bytes, as they are
//! plain chunk: the 16-byte header (flags = 4, everything else zero), then n values of W
//! bytes as they are.
//! ```
//!
//! Worked example: f64 `[21.5, 21.7, 22.0, NaN]` with bit-packing. The sample picks
//! `e = 1, f = 0`; the integers are `215, 217, 220` and the NaN is an exception (its slot
//! takes the previous integer, 220). Frame of reference: min 215, offsets `0, 2, 5, 5`,
//! 3 bits each; deltas would be `0, 2, 3, 0` (also 3 bits), so the frame of reference is
//! kept. The chunk is
//!
//! ```text
//! 01 00 03 00 | 01 00 00 00 | D7 00 00 00 00 00 00 00 | 50 0B | 03 00 | 00 00 00 00 00 00 F8 7F
//! e  f  b  fl   x = 1         reference 215             0,2,5,5  pos 3   the NaN's bits
//! ```

use super::entropy::{self, KindHistogram, PageTables};
use super::memo;
use super::{
    checked_len, ChunkShape, ChunkStorage, Learn, MiniBlockCompressor, MiniBlockDecompressor,
};
use crate::error::{Error, Result};
use crate::kernels::{self, bitpack};
use crate::proto::encodings::{array_encoding, Alp, ArrayEncoding};
use std::cell::OnceCell;

/// Bytes of a chunk header.
pub const HEADER_BYTES: usize = 16;

const FLAG_DELTA: u8 = 1;
const FLAG_SPLIT: u8 = 2;
const FLAG_PLAIN: u8 = 4;
const FLAG_BINARY: u8 = 8;
const FLAG_CORRECTED: u8 = 16;
/// With delta and byte streams: the stored integers are zigzag coded differences
/// (reference 0), so small steps down cost as little as small steps up.
const FLAG_ZIGZAG: u8 = 32;
/// With zigzag: second differences (of consecutive deltas), for smooth series.
const FLAG_ORDER2: u8 = 64;
/// With byte streams: each stream entropy-coded on its own (`entropy`), and a compact
/// header (varints after the first four bytes).
const FLAG_ENTROPY: u8 = 128;

/// A value whose bits are within this many units (in the last place) of its integer's
/// decoded bits is a near hit: with corrections on, it costs a correction, not an
/// exception.
const MAX_CORRECTION: u64 = 127;

/// Largest binary exponent: values down to 2^-62 steps.
const MAX_BINARY_EXPONENT: u8 = 62;

/// Integers are kept below this magnitude: the fast rounding below is exact there, and no
/// frame-of-reference difference or delta can overflow.
const MAX_INT: f64 = (1u64 << 51) as f64;

/// Adding and subtracting this rounds an f64 below 2^51 in magnitude to the nearest
/// integer (ties to even), without a libm call.
const ROUND: f64 = 6_755_399_441_055_744.0; // 1.5 * 2^52

/// Sampled values per chunk when choosing the exponents.
const SAMPLE: usize = 32;

/// Most values a chunk holds, so positions fit a u16.
const MAX_VALUES: usize = 1 << 16;

/// Smallest ALP chunk: an entropy-coded one of equal integers is its four header bytes
/// and two one-byte varints.
pub const MIN_CHUNK_BYTES: usize = 4;

/// How many times its stored size an ALP chunk may decode to: a few header bytes can
/// stand for 65,536 values of 8 bytes.
pub const MAX_EXPANSION: usize = MAX_VALUES * 8 / MIN_CHUNK_BYTES;

static P10: [f64; 19] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18,
];

/// How integers and values relate: `value = (n * mul) / div` in f64, rounded to the
/// value's width; `n = round(value * up)`. Decimal: `mul = 10^f`, `div = 10^e`,
/// `up = 10^(e - f)`. Binary: `mul = 2^-k`, `div = 1`, `up = 2^k`, exact for every
/// dyadic fraction (grids in 1/16 m, values computed as `i * 0.25`).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Scale {
    /// Header bytes 0 and 1, and whether the binary flag is set.
    e: u8,
    f: u8,
    binary: bool,
    mul: f64,
    div: f64,
    up: f64,
}

impl Scale {
    fn decimal(e: u8, f: u8) -> Self {
        Self {
            e,
            f,
            binary: false,
            mul: P10[usize::from(f)],
            div: P10[usize::from(e)],
            up: P10[usize::from(e - f)],
        }
    }

    fn binary(k: u8) -> Self {
        let k = i32::from(k);
        Self {
            e: k as u8,
            f: 0,
            binary: true,
            mul: 2f64.powi(-k),
            div: 1.0,
            up: 2f64.powi(k),
        }
    }
}

/// The binary exponent that makes `x` an integer (`x = m * 2^-k`, `m` odd), 0 for
/// integers, zero and non-finite values.
fn binary_exponent(x: f64) -> u32 {
    if !x.is_finite() || x == 0.0 {
        return 0;
    }
    let bits = x.to_bits();
    let exponent = ((bits >> 52) & 0x7FF).cast_signed();
    let fraction = bits & ((1 << 52) - 1);
    let (mantissa, shift) = if exponent == 0 {
        (fraction, -1074)
    } else {
        (fraction | 1 << 52, exponent - 1075)
    };
    let lowest = shift + i64::from(mantissa.trailing_zeros());
    (-lowest).max(0) as u32
}

/// The range of integers to keep when some lie far from the others (a fill value among
/// measurements): for each width `b` of 8, 12, ..., 24 bits, the window of `2^b`
/// integers holding the most of them, priced at `b` bits for every value plus an
/// exception for each integer outside; `None` when all of them are within 24 bits of
/// each other (no sort, no search: the common case stays cheap), or when no narrower
/// window is cheaper.
// Inlined into `analyse`, to be compiled for its build there.
#[allow(clippy::inline_always)]
#[inline(always)]
fn outlier_window(
    near: &[Option<(i64, i64)>],
    corrected: bool,
    width: usize,
) -> Option<(i64, i64)> {
    let kept = || {
        near.iter().filter_map(|hit| {
            hit.filter(|&(_, c)| corrected || c == 0)
                .map(|(int, _)| int)
        })
    };
    let (first, last) = kept().fold((i64::MAX, i64::MIN), |(lo, hi), v| (lo.min(v), hi.max(v)));
    if first > last || bitpack::bit_width(last.abs_diff(first)) <= 24 {
        return None;
    }
    let full = bitpack::bit_width(last.abs_diff(first));
    let mut kept: Vec<i64> = kept().collect();
    kept.sort_unstable();
    let exception_bits = (2 + width) * 8;
    let mut best = (near.len() * usize::from(full), first, last);
    for b in (8..=24u8).step_by(4) {
        let span = (1u64 << b) - 1;
        // The window starting at each kept integer: how many fit (two pointers).
        let (mut end, mut most, mut low) = (0, 0, first);
        for (start, &v) in kept.iter().enumerate() {
            end = end.max(start);
            while end < kept.len() && kept[end].abs_diff(v) <= span {
                end += 1;
            }
            if end - start > most {
                most = end - start;
                low = v;
            }
        }
        let cost = near.len() * usize::from(b) + (kept.len() - most) * exception_bits;
        if cost < best.0 {
            best = (cost, low, low.saturating_add_unsigned(span));
        }
    }
    (best.1 != first || best.2 != last).then_some((best.1, best.2))
}

/// Whether `hits` (each value's integer and correction, `None` for an exception) keep
/// their corrections: when the corrections of every value take fewer bytes than storing
/// the values that need one as exceptions. Bit-packed, every value pays the widest
/// correction's bits; in byte streams under a compressor, only the significant bytes of
/// the non-zero ones count (zero bytes compress to next to nothing).
// Inlined into `analyse`, to be compiled for its build there.
#[allow(clippy::inline_always)]
#[inline(always)]
fn use_corrections(hits: &[Option<(i64, i64)>], width: usize, layout: IntLayout) -> (bool, u8) {
    let (mut close, mut max, mut bytes) = (0usize, 0u64, 0usize);
    for &(_, c) in hits.iter().flatten() {
        if c != 0 {
            close += 1;
            max = max.max(zigzag(c));
            bytes += significant_bits(zigzag(c)).div_ceil(8);
        }
    }
    let bits = bitpack::bit_width(max);
    let stored = match layout {
        IntLayout::Packed => bitpack::packed_len(hits.len(), bits),
        IntLayout::Streams | IntLayout::Entropy => bytes,
    };
    (close > 0 && 1 + stored < close * (2 + width), bits)
}

/// The bits a chunk of `hits` takes, as the encoder would store it: corrections when
/// they pay, the outliers' window, frame of reference; every exception at its size.
fn plan_bits(hits: &[Option<(i64, i64)>], width: usize) -> usize {
    let n = hits.len();
    let (corrected, correction_bits) = use_corrections(hits, width, IntLayout::Packed);
    let kept = || {
        hits.iter().filter_map(move |hit| {
            hit.filter(|&(_, c)| corrected || c == 0)
                .map(|(int, _)| int)
        })
    };
    let (lo, hi) = outlier_window(hits, corrected, width)
        .unwrap_or_else(|| kept().fold((i64::MAX, i64::MIN), |(lo, hi), v| (lo.min(v), hi.max(v))));
    let inside = kept().filter(|&v| v >= lo && v <= hi).count();
    let int_bits = if inside == 0 {
        0
    } else {
        usize::from(bitpack::bit_width(hi.abs_diff(lo)))
    };
    let corrections = if corrected {
        usize::from(correction_bits) * n
    } else {
        0
    };
    n * int_bits + corrections + (n - inside) * (2 + width) * 8
}

/// The bits a sample of `hits` (in order) takes as zigzag coded differences between
/// consecutive integers, in byte streams under a compressor: what counts there is how
/// many significant bits each difference has, not the widest one, so a fill value among
/// measurements costs only where a run of it starts or ends.
fn delta_plan_bits(hits: &[Option<(i64, i64)>], width: usize) -> usize {
    let (corrected, correction_bits) = use_corrections(hits, width, IntLayout::Streams);
    let mut previous = None;
    let mut bits = 0;
    for hit in hits {
        match hit.filter(|&(_, c)| corrected || c == 0) {
            Some((int, _)) => {
                if let Some(p) = previous {
                    // Sampled values lie far apart, so a jump between them (into or out
                    // of a run of fill values) stands for a single jump among many
                    // small steps: capped, it cannot outweigh an exception.
                    bits +=
                        significant_bits(zigzag(int.wrapping_sub(p))).min(MAX_SAMPLED_STEP_BITS);
                }
                previous = Some(int);
            }
            None => bits += (2 + width) * 8,
        }
    }
    if corrected {
        bits += usize::from(correction_bits) * hits.len();
    }
    bits
}

/// Most bits one difference between sampled values adds to the byte-streams estimate.
const MAX_SAMPLED_STEP_BITS: usize = 16;

fn significant_bits(v: u64) -> usize {
    (64 - v.leading_zeros()) as usize
}

/// Appends `v` as a LEB128 varint (7 bits a byte, low first).
fn write_varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Reads a LEB128 varint at `*pos`, at most 10 bytes and 64 bits; `None` when cut short
/// or too long.
fn read_varint(bytes: &[u8], pos: &mut usize) -> Option<u64> {
    let mut value = 0u64;
    for i in 0..10 {
        let b = *bytes.get(*pos)?;
        *pos += 1;
        let part = u64::from(b & 0x7F);
        if i == 9 && part > 1 {
            return None;
        }
        value |= part << (7 * i);
        if b & 0x80 == 0 {
            return Some(value);
        }
    }
    None
}

/// Zigzag: 0, -1, 1, -2, ... become 0, 1, 2, 3, ...
fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)).cast_unsigned()
}

fn unzigzag(v: u64) -> i64 {
    (v >> 1).cast_signed() ^ -((v & 1).cast_signed())
}

/// How a chunk's integers are coded before they are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum IntCoding {
    /// Offsets from the smallest integer.
    Frame,
    /// Differences from the previous integer, offset from the smallest difference.
    Delta,
    /// Zigzag coded differences (byte streams only), of order 2 when `order2`.
    Zigzag { order2: bool },
}

/// The coding of `ints` (whose minimum is `min`) in byte streams: frame of reference or
/// zigzag coded differences of order 1 or 2, whichever leaves the fewest significant
/// bits in all (what a compressor over the streams pays for); the first on ties.
// Inlined into `analyse`, to be compiled for its build there.
#[allow(clippy::inline_always)]
#[inline(always)]
fn streams_coding(ints: &[i64], min: i64) -> IntCoding {
    let frame: usize = ints
        .iter()
        .map(|&v| significant_bits(v.abs_diff(min)))
        .sum();
    let (mut first, mut second) = (0usize, 0usize);
    let mut previous_delta = 0i64;
    for (i, pair) in ints.windows(2).enumerate() {
        // |n| < 2^51, so neither difference overflows.
        let d = pair[1] - pair[0];
        first += significant_bits(zigzag(d));
        second += significant_bits(zigzag(if i == 0 { d } else { d - previous_delta }));
        previous_delta = d;
    }
    // Frame of reference unless the differences need a fifth fewer bits: repeated values
    // (a daily cycle, a fill value) repeat as whole byte patterns that the compressor
    // matches at least as well as their differences.
    if frame * 4 <= first.min(second) * 5 {
        IntCoding::Frame
    } else if first <= second {
        IntCoding::Zigzag { order2: false }
    } else {
        IntCoding::Zigzag { order2: true }
    }
}

/// The zigzag coded differences of `ints` (the first one 0): of consecutive integers, or
/// with `order2` of consecutive differences (the difference before the first being 0).
// Inlined into `analyse`, to be compiled for its build there.
#[allow(clippy::inline_always)]
#[inline(always)]
fn zigzag_residuals(ints: &[i64], order2: bool) -> Vec<u64> {
    let mut previous = ints.first().copied().unwrap_or(0);
    let mut previous_delta = 0i64;
    ints.iter()
        .map(|&v| {
            let d = v - previous;
            previous = v;
            let r = if order2 { d - previous_delta } else { d };
            previous_delta = d;
            zigzag(r)
        })
        .collect()
}

/// How a chunk's integers are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntLayout {
    /// Bit-packed at the width they need: the smallest, decoded without a compressor.
    Packed,
    /// Whole-byte streams (byte 0 of every integer, then byte 1, ...): larger, but what
    /// a general compressor on top compresses best.
    Streams,
    /// Whole-byte streams, each entropy-coded on its own ([`super::entropy`]),
    /// behind a compact header: no general compressor, and no per-chunk frame or table
    /// of one.
    Entropy,
}

/// The float type of a chunk's values: 4 or 8 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Float {
    width: usize,
}

impl Float {
    fn try_new(width: usize) -> Result<Self> {
        if width == 4 || width == 8 {
            Ok(Self { width })
        } else {
            Err(Error::invalid(format!(
                "alp encodes 32- and 64-bit floats, not {}-bit values",
                width * 8
            )))
        }
    }

    fn max_exponent(self) -> u8 {
        if self.width == 8 {
            18
        } else {
            10
        }
    }

    /// Value `i`'s bits and its value as an f64.
    #[inline]
    fn read(self, values: &[u8], i: usize) -> (u64, f64) {
        if self.width == 8 {
            let bits = u64::from_le_bytes(values[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
            (bits, f64::from_bits(bits))
        } else {
            let bits = u32::from_le_bytes(values[i * 4..i * 4 + 4].try_into().expect("4 bytes"));
            (u64::from(bits), f64::from(f32::from_bits(bits)))
        }
    }

    /// The bits the decoder produces for integer `n` under `scale`.
    #[inline]
    fn decode(self, n: i64, scale: &Scale) -> u64 {
        let x = (n as f64) * scale.mul / scale.div;
        if self.width == 8 {
            x.to_bits()
        } else {
            u64::from((x as f32).to_bits())
        }
    }

    /// The integer for `value` under `scale` and the correction `bits - decoded bits`
    /// (wrapping, in the value's bit width) that makes it round-trip; `None` when the
    /// value has no integer (NaN, infinities, out of range).
    #[inline]
    fn encode_near(self, bits: u64, value: f64, scale: &Scale) -> Option<(i64, i64)> {
        let scaled = value * scale.up;
        if scaled.abs() >= MAX_INT || scaled.is_nan() {
            return None;
        }
        let int = ((scaled + ROUND) - ROUND) as i64;
        let decoded = self.decode(int, scale);
        let correction = if self.width == 8 {
            bits.wrapping_sub(decoded).cast_signed()
        } else {
            i64::from((bits as u32).wrapping_sub(decoded as u32).cast_signed())
        };
        Some((int, correction))
    }

    /// The bits of `decoded` moved by `correction` units in the last place (wrapping in
    /// the value's bit width).
    #[inline]
    fn correct(self, decoded: u64, correction: i64) -> u64 {
        if self.width == 8 {
            decoded.wrapping_add(correction.cast_unsigned())
        } else {
            u64::from((decoded as u32).wrapping_add(correction as u32))
        }
    }
}

/// [`Float::encode_near`] of every value of `values` (of `W` bytes), `None` also where
/// the correction is over [`MAX_CORRECTION`]: the same integers and corrections, worked
/// out a block at a time in loops without a branch, which vectorise (the division
/// above all), and only then made options.
// Inlined into `analyse`, to be compiled for its build there.
#[allow(clippy::inline_always)]
#[inline(always)]
fn near_hits<const W: usize>(values: &[u8], scale: &Scale) -> Vec<Option<(i64, i64)>> {
    const BLOCK: usize = 64;
    let (up, mul, div) = (scale.up, scale.mul, scale.div);
    let mut hits = Vec::with_capacity(values.len() / W);
    let mut ints = [0i64; BLOCK];
    let mut corrections = [0i64; BLOCK];
    let mut kept = [false; BLOCK];
    for block in values.chunks(BLOCK * W) {
        let len = block.len() / W;
        let slots = ints.iter_mut().zip(&mut corrections).zip(&mut kept);
        for (v, ((int, correction), keep)) in block.chunks_exact(W).zip(slots) {
            let (bits, x) = if W == 8 {
                let bits = u64::from_le_bytes(v.try_into().expect("8 bytes"));
                (bits, f64::from_bits(bits))
            } else {
                let bits = u32::from_le_bytes(v.try_into().expect("4 bytes"));
                (u64::from(bits), f64::from(f32::from_bits(bits)))
            };
            let scaled = x * up;
            // `(scaled + ROUND) - ROUND` as an integer, exact below 2^51 (elsewhere, not
            // kept, any integer); then `Float::decode` of it.
            let i = (scaled + ROUND)
                .to_bits()
                .wrapping_sub(ROUND.to_bits())
                .cast_signed();
            let decoded = small_int_to_f64(i) * mul / div;
            let c = if W == 8 {
                bits.wrapping_sub(decoded.to_bits()).cast_signed()
            } else {
                i64::from(
                    (bits as u32)
                        .wrapping_sub((decoded as f32).to_bits())
                        .cast_signed(),
                )
            };
            *int = i;
            *correction = c;
            // False for NaN too.
            *keep = scaled.abs() < MAX_INT && c.unsigned_abs() <= MAX_CORRECTION;
        }
        hits.extend((0..len).map(|k| kept[k].then_some((ints[k], corrections[k]))));
    }
    hits
}

/// Whether ALP is worth trying on `values` (floats of `width` bytes, 4 or 8): the scale
/// that 32 values spread over them choose stores them in fewer bits than they have, by
/// the bit-packed estimate (under a compressor, delta-coded integers may still shrink
/// much further). Data without decimal or dyadic structure fails at once.
pub(crate) fn worth_trying(values: &[u8], width: usize) -> bool {
    // The byte-streams estimate is the more permissive one (it also counts delta
    // coding), so neither layout is ruled out by the other's estimate.
    let Ok(encoder) =
        AlpEncoder::try_new(width as u64 * 8).map(|e| e.with_layout(IntLayout::Streams))
    else {
        return false;
    };
    let n = values.len() / width;
    if n == 0 {
        return false;
    }
    let (_, bits, sampled) = encoder.choose_scale(values, n);
    bits < sampled * width * 8
}

/// Encodes each chunk with ALP.
#[derive(Debug, Clone)]
pub struct AlpEncoder {
    shape: ChunkShape,
    float: Float,
    layout: IntLayout,
    /// Entropy-coded layout: the tables of the page being encoded (see
    /// [`MiniBlockCompressor::for_page`]); none until then.
    tables: PageTables,
    /// How much larger binned integers may be than byte streams and still be picked.
    bin_margin: f32,
}

/// With entropy coding, bit 7 of header byte 2 (the bits per integer): the integers are
/// binned ([`entropy::IntForms::encode_binned`]): one entropy-coded stream of bin symbols, then
/// their low bits.
const BINNED: u8 = 0x80;

/// The page tables' kind of the integers' bin symbols (byte streams of the integers are
/// kinds 0 to 7, of the corrections 8 to 15).
const BIN_KIND: usize = 16;

/// Where an entropy-coded chunk's streams go: coded into the chunk, or counted, a
/// histogram per stream with its kind (byte j of the integers is kind j, byte j of the
/// corrections kind 8 + j), while a page's tables are built.
enum Sink<'a> {
    Write,
    Count(&'a mut Vec<KindHistogram>),
}

impl AlpEncoder {
    /// An encoder for floats of `bits_per_value` bits (32 or 64), bit-packing the
    /// integers.
    pub fn try_new(bits_per_value: u64) -> Result<Self> {
        let shape = ChunkShape::from_bits(bits_per_value)?;
        Ok(Self {
            float: Float::try_new(shape.width)?,
            shape,
            layout: IntLayout::Packed,
            tables: PageTables::default(),
            bin_margin: entropy::BIN_MARGIN,
        })
    }

    /// The same encoder with chunks of `chunk_values` values.
    pub fn with_chunk_values(self, chunk_values: usize) -> Result<Self> {
        Ok(Self {
            shape: self.shape.with_chunk_values(chunk_values)?,
            ..self
        })
    }

    /// The same encoder storing integers in `layout`.
    #[must_use]
    pub fn with_layout(self, layout: IntLayout) -> Self {
        Self { layout, ..self }
    }

    /// The same encoder picking binned integers up to `margin` larger by estimate than
    /// byte streams (see [`EncoderOptions`](super::EncoderOptions)).
    #[must_use]
    pub(crate) fn with_bin_margin(self, margin: f32) -> Self {
        Self {
            bin_margin: margin,
            ..self
        }
    }

    /// Appends `values` of `bits` bits in this encoder's layout: bit-packed, in byte
    /// streams, or entropy-coded ([`store_coded`](Self::store_coded), with their symbol
    /// counts kept in `forms`). Returns whether they were binned.
    fn store(
        &self,
        values: &[u64],
        bits: u8,
        forms: &OnceCell<entropy::IntForms>,
        out: &mut Vec<u8>,
        sink: &mut Sink,
        coded: (usize, bool),
    ) -> bool {
        match self.layout {
            IntLayout::Packed => bitpack::pack(values, bits, out),
            IntLayout::Streams => {
                for j in 0..usize::from(bits).div_ceil(8) {
                    out.extend(values.iter().map(|v| (v >> (8 * j)) as u8));
                }
            }
            IntLayout::Entropy => return self.store_coded(values, bits, forms, out, sink, coded),
        }
        false
    }

    /// The entropy-coded layout: byte j of the values is a stream of kind `kind + j`,
    /// coded or, with [`Sink::Count`], counted. With `may_bin` the values are binned
    /// instead when that is smaller by estimate (their bin symbols are kind
    /// [`BIN_KIND`]); returns whether they were.
    fn store_coded(
        &self,
        values: &[u64],
        bits: u8,
        forms: &OnceCell<entropy::IntForms>,
        out: &mut Vec<u8>,
        sink: &mut Sink,
        (kind, may_bin): (usize, bool),
    ) -> bool {
        const FITS: &str = "a chunk of at most 65536 values makes streams the coder takes";
        let bits = u32::from(bits);
        let forms = forms.get_or_init(|| entropy::IntForms::count(values.iter().copied(), bits));
        if let Sink::Count(histograms) = sink {
            forms.chosen_histograms(
                kind,
                may_bin.then_some(BIN_KIND),
                self.bin_margin,
                histograms,
            );
            return false;
        }
        let plan = forms.plan(&self.tables, may_bin, self.bin_margin);
        if plan.binned {
            forms
                .encode_binned(values.iter().copied(), &plan, out)
                .expect(FITS);
            return true;
        }
        let mut stream = Vec::with_capacity(values.len());
        for j in 0..bits.div_ceil(8) as usize {
            stream.clear();
            stream.extend(values.iter().map(|v| (v >> (8 * j)) as u8));
            forms.encode_stream(j, &stream, &plan, out).expect(FITS);
        }
        false
    }

    /// Picks the scale from a sample of the chunk: the decimal `(e, f)` or binary `k` with
    /// the smallest estimated size (integer bits plus exceptions), the smaller exponent
    /// on ties; binary only when strictly smaller. Returns the scale, its estimated bits
    /// for the sample and the number of values sampled.
    // Inlined into `analyse`, to be compiled for its build there.
    #[allow(clippy::inline_always)]
    #[inline(always)]
    fn choose_scale(&self, values: &[u8], n: usize) -> (Scale, usize, usize) {
        let float = self.float;
        // One value in each of SAMPLE equal slices, at an offset that moves from slice to
        // slice, so a period that divides the slice (every 16th value an integer) does not
        // alias with the sample.
        let step = (n / SAMPLE).max(1);
        let sample: Vec<(u64, f64)> = (0..n.min(SAMPLE))
            .map(|j| float.read(values, j * step + (j * 5) % step))
            .collect();
        // Bits for the sample as the encoder would store it (integers within a
        // correction, corrections when they pay; bit-packed, outliers as exceptions; in
        // byte streams, as zigzag differences, which the frame of reference beats only
        // where both are cheap).
        let estimate = |scale: &Scale| -> usize {
            let mut hits = [None; SAMPLE];
            for (hit, &(bits, x)) in hits.iter_mut().zip(&sample) {
                *hit = float
                    .encode_near(bits, x, scale)
                    .filter(|&(_, c)| c.unsigned_abs() <= MAX_CORRECTION);
            }
            let hits = &hits[..sample.len()];
            match self.layout {
                IntLayout::Packed => plan_bits(hits, float.width),
                IntLayout::Streams | IntLayout::Entropy => delta_plan_bits(hits, float.width),
            }
        };
        let mut best = (usize::MAX, Scale::decimal(0, 0));
        // Past the digits the values have, each exponent only adds bits: once the best
        // so far stores most values as integers (under half the bits of all exceptions),
        // three exponents in a row that do not improve on it end the search.
        let mut worse = 0;
        for e in 0..=float.max_exponent() {
            let scale = Scale::decimal(e, 0);
            let size = estimate(&scale);
            if size < best.0 {
                best = (size, scale);
                worse = 0;
            } else if best.0 < sample.len() * (2 + float.width) * 4 {
                worse += 1;
                if worse == 3 {
                    break;
                }
            }
        }
        let e = best.1.e;
        for f in 1..=e {
            let scale = Scale::decimal(e, f);
            let size = estimate(&scale);
            if size < best.0 {
                best = (size, scale);
            }
        }
        // The binary exponent that makes every sampled value an integer.
        let k = sample
            .iter()
            .map(|&(_, x)| binary_exponent(x))
            .max()
            .unwrap_or(0);
        if k > 0 && k <= u32::from(MAX_BINARY_EXPONENT) {
            let scale = Scale::binary(k as u8);
            let size = estimate(&scale);
            if size < best.0 {
                best = (size, scale);
            }
        }
        (best.1, best.0, sample.len())
    }
}

impl MiniBlockCompressor for AlpEncoder {
    fn value_width(&self) -> usize {
        self.shape.width
    }

    fn chunk_values(&self) -> usize {
        self.shape.chunk_values
    }

    fn array_encoding(&self) -> ArrayEncoding {
        ArrayEncoding {
            array_encoding: Some(array_encoding::ArrayEncoding::Alp(Alp {
                bits_per_value: self.shape.width as u64 * 8,
                entropy_coded: self.layout == IntLayout::Entropy,
                page_tables: self.tables.to_bytes(),
            })),
        }
    }

    fn compress_chunk(
        &self,
        values: &[u8],
        out: &mut Vec<u8>,
        _scratch: &mut Vec<u8>,
    ) -> Result<ChunkStorage> {
        self.encode_chunk(values, out, &mut Sink::Write)
    }

    /// Entropy-coded layout: an encoder with tables built from the integer and
    /// correction streams of chunks spread over the page, as many as `learn` says.
    fn for_page(
        &self,
        values: &[u8],
        learn: Learn,
    ) -> Result<Option<Box<dyn MiniBlockCompressor>>> {
        if self.layout != IntLayout::Entropy {
            return Ok(None);
        }
        let (sample, scale) = super::sample_chunks(
            values,
            self.shape.width,
            self.shape.chunk_values,
            learn.chunks(),
        )?;
        let mut histograms = Vec::new();
        let mut out = Vec::new();
        for chunk in sample {
            self.encode_chunk(chunk, &mut out, &mut Sink::Count(&mut histograms))?;
            out.clear();
        }
        let tables = PageTables::from_streams(&histograms, scale);
        if tables.is_empty() {
            return Ok(None);
        }
        Ok(Some(Box::new(Self {
            tables,
            ..self.clone()
        })))
    }

    fn would_learn_more(&self) -> bool {
        self.tables.sample_missed()
    }
}

impl AlpEncoder {
    /// Encodes one chunk onto `out`, or with [`Sink::Count`] only counts its streams.
    fn encode_chunk(
        &self,
        values: &[u8],
        out: &mut Vec<u8>,
        sink: &mut Sink,
    ) -> Result<ChunkStorage> {
        self.shape.check_chunk(values)?;
        let n = values.len() / self.float.width;
        if n > MAX_VALUES {
            return Err(Error::invalid(format!(
                "an alp chunk holds at most {MAX_VALUES} values, got {n}"
            )));
        }
        // The byte-stream layouts analyse a chunk alike; bit-packing differs (outliers).
        let kind = u8::from(self.layout == IntLayout::Packed) | (self.float.width as u8) << 1;
        let analysis = memo::analysis(kind, values, || self.analyse(values, n));
        let Some(a) = analysis.as_ref() else {
            write_plain(values, out);
            return Ok(ChunkStorage::Raw);
        };
        let mut flags = 0;
        if a.scale.binary {
            flags |= FLAG_BINARY;
        }
        let delta = a.coding != IntCoding::Frame;
        if delta {
            flags |= FLAG_DELTA;
        }
        match self.layout {
            IntLayout::Packed => {}
            IntLayout::Streams => flags |= FLAG_SPLIT,
            IntLayout::Entropy => flags |= FLAG_SPLIT | FLAG_ENTROPY,
        }
        if a.corrected {
            flags |= FLAG_CORRECTED;
        }
        if let IntCoding::Zigzag { order2 } = a.coding {
            flags |= FLAG_ZIGZAG;
            if order2 {
                flags |= FLAG_ORDER2;
            }
        }
        out.reserve(a.size);
        let start = out.len();
        out.extend_from_slice(&[a.scale.e, a.scale.f, a.bits, flags]);
        if self.layout == IntLayout::Entropy {
            write_varint(a.positions.len() as u64, out);
            write_varint(zigzag(a.reference), out);
            if delta {
                write_varint(zigzag(a.first), out);
            }
        } else {
            out.extend_from_slice(&(a.positions.len() as u32).to_le_bytes());
            out.extend_from_slice(&a.reference.to_le_bytes());
            if delta {
                out.extend_from_slice(&a.first.to_le_bytes());
            }
        }
        if a.corrected {
            out.push(a.correction_bits);
        }
        if self.store(&a.stored, a.bits, &a.forms[0], out, sink, (0, true)) {
            out[start + 2] |= BINNED;
        }
        if a.corrected {
            self.store(
                &a.corrections,
                a.correction_bits,
                &a.forms[1],
                out,
                sink,
                (8, false),
            );
        }
        for &p in &a.positions {
            out.extend_from_slice(&p.to_le_bytes());
        }
        let width = self.float.width;
        for &p in &a.positions {
            let p = usize::from(p);
            out.extend_from_slice(&values[p * width..(p + 1) * width]);
        }
        // Entropy-coded streams were estimated, not measured: a chunk they did not
        // shrink is written plain after all.
        if self.layout == IntLayout::Entropy && out.len() - start >= HEADER_BYTES + values.len() {
            out.truncate(start);
            write_plain(values, out);
        }
        Ok(ChunkStorage::Raw)
    }

    /// What a chunk of `n` values becomes in this encoder's layout before it is stored;
    /// `None` when it is stored plain.
    fn analyse(&self, values: &[u8], n: usize) -> Option<Analysis> {
        kernels::with_wide_vectors(
            #[inline(always)]
            || self.analyse_here(values, n),
        )
    }

    /// [`analyse`](Self::analyse), inlined into the build it runs.
    #[allow(clippy::inline_always)]
    #[inline(always)]
    fn analyse_here(&self, values: &[u8], n: usize) -> Option<Analysis> {
        let float = self.float;
        let width = float.width;
        let (scale, _, _) = self.choose_scale(values, n);
        // Every value's integer and correction; near hits (small corrections) are kept
        // either as corrections or as exceptions, whichever is smaller.
        let near = if width == 8 {
            near_hits::<8>(&values[..8 * n], &scale)
        } else {
            near_hits::<4>(&values[..4 * n], &scale)
        };
        let (corrected, correction_bits) = use_corrections(&near, width, self.layout);
        let mut near = near;
        // Integers far from the others (a fill value among measurements) would widen
        // every integer: past 16 bits, those outside the best window become exceptions.
        // Bit-packed only: in byte streams under a compressor, a wide integer's constant
        // high bytes cost less than an exception.
        let window = match self.layout {
            IntLayout::Packed => outlier_window(&near, corrected, width),
            IntLayout::Streams | IntLayout::Entropy => None,
        };
        if let Some((lo, hi)) = window {
            for hit in &mut near {
                if hit.is_some_and(|(int, _)| int < lo || int > hi) {
                    *hit = None;
                }
            }
        }
        let mut ints = Vec::with_capacity(n);
        let mut corrections: Vec<u64> = Vec::new();
        let mut positions: Vec<u16> = Vec::new();
        let mut previous = None;
        for (i, hit) in near.iter().enumerate() {
            if let Some((int, c)) = hit.filter(|&(_, c)| corrected || c == 0) {
                if previous.is_none() {
                    // Leading exceptions take the first integer.
                    ints.fill(int);
                }
                previous = Some(int);
                ints.push(int);
                if corrected {
                    corrections.push(zigzag(c));
                }
            } else {
                positions.push(i as u16);
                ints.push(previous.unwrap_or(0));
                if corrected {
                    corrections.push(0);
                }
            }
        }
        let (min, max) = ints
            .iter()
            .fold((i64::MAX, i64::MIN), |(lo, hi), &v| (lo.min(v), hi.max(v)));
        let for_bits = if n == 0 {
            0
        } else {
            bitpack::bit_width(max.abs_diff(min))
        };
        // Deltas, the first one 0; |n| < 2^51, so none overflows.
        let (mut dmin, mut dmax) = (0i64, 0i64);
        for pair in ints.windows(2) {
            let d = pair[1] - pair[0];
            dmin = dmin.min(d);
            dmax = dmax.max(d);
        }
        let delta_bits = bitpack::bit_width(dmax.abs_diff(dmin));
        let int_len = |bits: u8| match self.layout {
            IntLayout::Packed => bitpack::packed_len(n, bits),
            IntLayout::Streams | IntLayout::Entropy => n * usize::from(bits).div_ceil(8),
        };
        let coding = match self.layout {
            // Delta coding costs the first integer (8 bytes) more in the header.
            IntLayout::Packed if 8 + int_len(delta_bits) < int_len(for_bits) => IntCoding::Delta,
            IntLayout::Packed => IntCoding::Frame,
            IntLayout::Streams | IntLayout::Entropy => streams_coding(&ints, min),
        };
        let delta = coding != IntCoding::Frame;
        let (stored, bits, reference): (Vec<u64>, u8, i64) = match coding {
            IntCoding::Frame => {
                let reference = if n == 0 { 0 } else { min };
                let stored = ints.iter().map(|&v| v.abs_diff(reference)).collect();
                (stored, for_bits, reference)
            }
            IntCoding::Delta => {
                let mut prev = ints.first().copied().unwrap_or(0);
                let stored = ints
                    .iter()
                    .map(|&v| {
                        let d = v - prev;
                        prev = v;
                        d.abs_diff(dmin)
                    })
                    .collect();
                (stored, delta_bits, dmin)
            }
            IntCoding::Zigzag { order2 } => {
                let stored = zigzag_residuals(&ints, order2);
                let max = stored.iter().copied().max().unwrap_or(0);
                (stored, bitpack::bit_width(max), 0)
            }
        };
        // In byte streams under a compressor, a byte that is zero in every integer costs
        // next to nothing: the size that decides for plain values counts significant
        // bytes, not streams.
        let stream_bytes = |stored: &[u64]| -> usize {
            stored
                .iter()
                .map(|&v| significant_bits(v).div_ceil(8))
                .sum()
        };
        let (int_bytes, correction_bytes) = match self.layout {
            IntLayout::Packed => (
                int_len(bits),
                if corrected {
                    1 + int_len(correction_bits)
                } else {
                    0
                },
            ),
            IntLayout::Streams | IntLayout::Entropy => (
                stream_bytes(&stored),
                if corrected {
                    1 + stream_bytes(&corrections)
                } else {
                    0
                },
            ),
        };
        let size = HEADER_BYTES
            + if delta { 8 } else { 0 }
            + int_bytes
            + correction_bytes
            + positions.len() * (2 + width);
        (size < HEADER_BYTES + values.len()).then(|| Analysis {
            scale,
            coding,
            corrected,
            correction_bits,
            bits,
            reference,
            first: ints.first().copied().unwrap_or(0),
            stored,
            corrections,
            positions,
            size,
            forms: Default::default(),
        })
    }
}

/// A chunk as [`AlpEncoder::analyse`] leaves it for storing.
struct Analysis {
    scale: Scale,
    coding: IntCoding,
    corrected: bool,
    correction_bits: u8,
    /// Bits of the stored integers.
    bits: u8,
    reference: i64,
    first: i64,
    stored: Vec<u64>,
    /// Zigzag coded, one per value when `corrected`.
    corrections: Vec<u64>,
    /// Of the exceptions.
    positions: Vec<u16>,
    /// Estimated bytes of the chunk.
    size: usize,
    /// Entropy-coded: the symbol counts of the stored integers and of the corrections,
    /// once counted.
    forms: [OnceCell<entropy::IntForms>; 2],
}

/// A chunk stored plain: the plain flag, then the values as they are.
fn write_plain(values: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(&[0, 0, 0, FLAG_PLAIN]);
    out.extend_from_slice(&[0; HEADER_BYTES - 4]);
    out.extend_from_slice(values);
}

/// Decodes ALP chunks.
#[derive(Debug, Clone)]
pub struct AlpDecompressor {
    float: Float,
    tables: PageTables,
}

impl AlpDecompressor {
    /// A decompressor for the pages `alp` describes: floats of `bits_per_value` bits
    /// (32 or 64), with the page's entropy tables, parsed and validated here.
    pub fn new(alp: &Alp) -> Result<Self> {
        let bits_per_value = alp.bits_per_value;
        let width = super::width_from_bits(bits_per_value)?;
        Ok(Self {
            float: Float::try_new(width).map_err(|_| {
                Error::unsupported(format!(
                    "alp with bits_per_value {bits_per_value} (32 or 64 is supported)"
                ))
            })?,
            tables: PageTables::parse(&alp.page_tables)?,
        })
    }
}

/// How a chunk's stored integers turn back into its integers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Deltas {
    /// `reference + stored`.
    None,
    /// Running sum of `reference + stored` from the first integer.
    Offset,
    /// Running sum of the zigzag decoded values from the first integer.
    Zigzag,
    /// Running sum of the running sum of the zigzag decoded values.
    Zigzag2,
}

/// Where a chunk's integers and corrections are.
enum Stored<'a> {
    /// Bit-packed or in byte streams (`split`), in the chunk or decoded from its
    /// entropy-coded streams into the caller's scratch; the correction stream and its
    /// bits per value when the chunk has one.
    Bytes {
        ints: &'a [u8],
        corrections: Option<(&'a [u8], u8)>,
    },
    /// Binned integers, then the correction streams of `correction_bits`, entropy-coded
    /// in `coded` (which ends where the exceptions start). They are decoded as the
    /// values are written, the symbols and corrections in `scratch`: a block of
    /// integers goes from the bins straight to floats.
    Binned {
        coded: &'a [u8],
        correction_bits: Option<u8>,
        tables: &'a PageTables,
        scratch: &'a mut Vec<u8>,
        /// The bin symbols and the bytes of `coded` they took, where they were decoded
        /// already (with other chunks' streams, by `entropy::decode_many`).
        symbols: Option<(&'a [u8], usize)>,
        /// The correction streams, where they were decoded already: where in `coded`
        /// they start, the bytes they took and their bytes. Used only when the low bits
        /// end where they start.
        corrections: Option<(usize, usize, &'a [u8])>,
    },
}

/// A parsed, validated chunk header and where its parts are.
struct Chunk<'a> {
    scale: Scale,
    bits: u8,
    delta: Deltas,
    split: bool,
    reference: i64,
    first: i64,
    stored: Stored<'a>,
    positions: &'a [u8],
    exceptions: &'a [u8],
}

impl<'a> Chunk<'a> {
    /// Parses `chunk` as an ALP chunk of `n` values of `float`: every field in range, the
    /// length exactly what the header implies, the positions increasing and in range.
    /// Returns `None` for a plain chunk (whose values follow the header).
    /// Entropy-coded streams are decoded into `scratch`, which the result borrows.
    fn parse(
        chunk: &'a [u8],
        n: usize,
        float: Float,
        tables: &'a PageTables,
        scratch: &'a mut Vec<u8>,
    ) -> Result<Option<Self>> {
        let corrupt = |what: String| Error::corrupt(format!("alp chunk of {n} values: {what}"));
        let entropy = chunk.get(3).is_some_and(|&flags| flags & FLAG_ENTROPY != 0);
        let min_len = if entropy { 4 } else { HEADER_BYTES };
        if chunk.len() < min_len {
            return Err(corrupt(format!(
                "{} bytes, shorter than its header",
                chunk.len()
            )));
        }
        if n > MAX_VALUES {
            return Err(corrupt(format!("more than {MAX_VALUES} values")));
        }
        let (e, f, bits, flags) = (chunk[0], chunk[1], chunk[2], chunk[3]);
        // Entropy-coded, bit 7 of the bit count says the integers are binned.
        let binned = entropy && bits & BINNED != 0;
        let bits = if entropy { bits & !BINNED } else { bits };
        let mut pos;
        let (count, reference) = if entropy {
            pos = 4;
            let count = read_varint(chunk, &mut pos)
                .ok_or_else(|| corrupt("a bad exception count".to_owned()))?;
            let reference = read_varint(chunk, &mut pos)
                .ok_or_else(|| corrupt("a bad reference".to_owned()))?;
            (
                usize::try_from(count).unwrap_or(usize::MAX),
                unzigzag(reference),
            )
        } else {
            pos = HEADER_BYTES;
            (
                u32::from_le_bytes(chunk[4..8].try_into().expect("4 bytes")) as usize,
                i64::from_le_bytes(chunk[8..16].try_into().expect("8 bytes")),
            )
        };
        if flags == FLAG_PLAIN {
            if chunk[..HEADER_BYTES]
                .iter()
                .enumerate()
                .any(|(i, &b)| i != 3 && b != 0)
            {
                return Err(corrupt("a plain chunk with a non-zero header".to_owned()));
            }
            let len = checked_len(n, float.width)?;
            if chunk.len() != HEADER_BYTES + len {
                return Err(corrupt(format!(
                    "a plain chunk of {} bytes, expected {}",
                    chunk.len(),
                    HEADER_BYTES + len
                )));
            }
            return Ok(None);
        }
        if flags & FLAG_PLAIN != 0 {
            return Err(corrupt(format!("unknown flags {flags:#04x}")));
        }
        if entropy && flags & FLAG_SPLIT == 0 {
            return Err(corrupt(format!(
                "flags {flags:#04x}: entropy coding needs byte streams"
            )));
        }
        let zigzag = flags & FLAG_ZIGZAG != 0;
        if zigzag
            && (flags & (FLAG_DELTA | FLAG_SPLIT) != FLAG_DELTA | FLAG_SPLIT || reference != 0)
            || (flags & FLAG_ORDER2 != 0 && !zigzag)
        {
            return Err(corrupt(format!(
                "flags {flags:#04x} with reference {reference}: zigzag needs delta, byte streams and reference 0, order 2 needs zigzag"
            )));
        }
        let scale = if flags & FLAG_BINARY != 0 {
            if e > MAX_BINARY_EXPONENT || f != 0 {
                return Err(corrupt(format!(
                    "binary exponent {e} and factor {f} (at most {MAX_BINARY_EXPONENT} and 0)"
                )));
            }
            Scale::binary(e)
        } else {
            if e > float.max_exponent() || f > e {
                return Err(corrupt(format!(
                    "exponent {e} and factor {f} (at most {} and the exponent)",
                    float.max_exponent()
                )));
            }
            Scale::decimal(e, f)
        };
        if bits > 64 {
            return Err(corrupt(format!("{bits} bits per integer")));
        }
        if count > n {
            return Err(corrupt(format!("{count} exceptions")));
        }
        let delta = flags & FLAG_DELTA != 0;
        let split = flags & FLAG_SPLIT != 0;
        let mut first = 0;
        if delta && entropy {
            first = read_varint(chunk, &mut pos)
                .map(unzigzag)
                .ok_or_else(|| corrupt("a bad first integer".to_owned()))?;
        } else if delta {
            let bytes = chunk
                .get(pos..pos + 8)
                .ok_or_else(|| corrupt("it ends inside its first integer".to_owned()))?;
            first = i64::from_le_bytes(bytes.try_into().expect("8 bytes"));
            pos += 8;
        }
        let mut correction_bits = None;
        if flags & FLAG_CORRECTED != 0 {
            let cbits = *chunk
                .get(pos)
                .ok_or_else(|| corrupt("it ends before its correction width".to_owned()))?;
            if cbits > 64 {
                return Err(corrupt(format!("{cbits} bits per correction")));
            }
            correction_bits = Some(cbits);
            pos += 1;
        }
        let stream_len = |bits: u8| {
            if split {
                n * usize::from(bits).div_ceil(8)
            } else {
                bitpack::packed_len(n, bits)
            }
        };
        let int_bytes = stream_len(bits);
        let correction_bytes = correction_bits.map_or(0, stream_len);
        let exception_bytes = count * (2 + float.width);
        let stored = if entropy {
            // Integer streams, then correction streams, each decoding to n bytes, laid
            // out as the byte-streams layout has them; the exceptions end the chunk.
            let end = chunk
                .len()
                .checked_sub(exception_bytes)
                .filter(|&end| end >= pos)
                .ok_or_else(|| {
                    corrupt(format!(
                        "{} bytes after its header for {count} exceptions",
                        chunk.len() - pos
                    ))
                })?;
            let coded = &chunk[pos..end];
            pos = end;
            if binned {
                // Read as the values are written: see `decode`.
                Stored::Binned {
                    coded,
                    correction_bits,
                    tables,
                    scratch,
                    symbols: None,
                    corrections: None,
                }
            } else {
                let decoded = super::overwritten(scratch, int_bytes + correction_bytes);
                let mut used = 0;
                for stream in decoded.chunks_exact_mut(n.max(1)) {
                    used += entropy::decode(&coded[used..], stream, tables)?;
                }
                if used != coded.len() {
                    return Err(corrupt(format!(
                        "{} bytes after its streams for {count} exceptions",
                        chunk.len() - (end - coded.len() + used)
                    )));
                }
                let decoded: &'a [u8] = decoded;
                let (ints, corrections) = decoded.split_at(int_bytes);
                Stored::Bytes {
                    ints,
                    corrections: correction_bits.map(|cbits| (corrections, cbits)),
                }
            }
        } else {
            let expected = pos + int_bytes + correction_bytes + exception_bytes;
            if chunk.len() != expected {
                return Err(corrupt(format!(
                    "{} bytes, its header says {expected}",
                    chunk.len()
                )));
            }
            let ints = &chunk[pos..pos + int_bytes];
            pos += int_bytes;
            let corrections =
                correction_bits.map(|cbits| (&chunk[pos..pos + correction_bytes], cbits));
            pos += correction_bytes;
            Stored::Bytes { ints, corrections }
        };
        let positions = &chunk[pos..pos + 2 * count];
        let exceptions = &chunk[pos + 2 * count..];
        let mut next = 0usize;
        for p in positions.chunks_exact(2) {
            let p = usize::from(u16::from_le_bytes([p[0], p[1]]));
            if p < next || p >= n {
                return Err(corrupt(format!(
                    "exception position {p} out of order or past the chunk"
                )));
            }
            next = p + 1;
        }
        let delta = match (delta, zigzag, flags & FLAG_ORDER2 != 0) {
            (false, ..) => Deltas::None,
            (true, false, _) => Deltas::Offset,
            (true, true, false) => Deltas::Zigzag,
            (true, true, true) => Deltas::Zigzag2,
        };
        Ok(Some(Self {
            scale,
            bits,
            delta,
            split,
            reference,
            first,
            stored,
            positions,
            exceptions,
        }))
    }

    /// Writes the `n` decoded values into `out` (`n * width` bytes). Binned chunks are
    /// decoded here, and may turn out corrupt here (with `out` partly written).
    fn decode(self, n: usize, float: Float, out: &mut [u8]) -> Result<()> {
        // A binary scale divides by 1.0, which changes no value: skipping it is exact.
        kernels::with_wide_vectors(
            #[inline(always)]
            || match (float.width, self.scale.binary) {
                (8, false) => self.decode_width::<8, false>(n, out),
                (8, true) => self.decode_width::<8, true>(n, out),
                (_, false) => self.decode_width::<4, false>(n, out),
                (_, true) => self.decode_width::<4, true>(n, out),
            },
        )
    }

    /// [`decode`](Self::decode) for values of `W` bytes: one loop per coding, so the
    /// compiler sees fixed-size stores and no per-value branch.
    #[allow(clippy::inline_always)]
    #[inline(always)]
    fn decode_width<const W: usize, const BINARY: bool>(
        self,
        n: usize,
        out: &mut [u8],
    ) -> Result<()> {
        let mut ints = Ints {
            mul: self.scale.mul,
            div: self.scale.div,
            reference: self.reference,
            delta: self.delta,
            sum: self.first,
            slope: 0,
            at: 0,
            block: [0; SCALE_BLOCK],
        };
        // Closures marked to inline, and the bins read in this loop rather than through a
        // sink, so that the loops compile under the caller's target features
        // (`kernels::with_wide_vectors`), not as baseline functions of their own.
        let corrections = match self.stored {
            Stored::Bytes {
                ints: bytes,
                corrections,
            } => {
                if self.bits == 0 && n > 0 && !(self.delta == Deltas::Offset && self.reference != 0)
                {
                    // Every stored integer is 0 and moves no running sum (only an offset
                    // would): one value, repeated. A constant chunk (a Zarr chunk's
                    // padding of zeros) is then laid out at a fill's speed, not
                    // converted value by value.
                    let (first, rest) = out[..n * W].split_at_mut(W);
                    ints.emit::<W, BINARY>(&[0], first);
                    for slot in rest.chunks_exact_mut(W) {
                        slot.copy_from_slice(first);
                    }
                } else {
                    read_stream(
                        bytes,
                        n,
                        self.bits,
                        self.split,
                        #[inline(always)]
                        |block| ints.emit::<W, BINARY>(block, out),
                    );
                }
                corrections
            }
            Stored::Binned {
                coded,
                correction_bits,
                tables,
                scratch,
                symbols: decoded,
                corrections: predecoded,
            } => {
                let correction_bytes =
                    correction_bits.map_or(0, |bits| n * usize::from(bits).div_ceil(8));
                let (symbols, streams) =
                    super::overwritten(scratch, n + correction_bytes).split_at_mut(n);
                let bits = u32::from(self.bits);
                let mut bins = match decoded {
                    Some((symbols, used)) => entropy::Unbinner::decoded(coded, symbols, used, bits),
                    None => entropy::Unbinner::new(coded, symbols, bits, tables)?,
                };
                let mut block = [0u64; entropy::BIN_BLOCK];
                loop {
                    let len = bins.next_block(&mut block);
                    if len == 0 {
                        break;
                    }
                    ints.emit::<W, BINARY>(&block[..len], out);
                }
                let mut used = bins.finish()?;
                let streams: &[u8] = match predecoded {
                    Some((start, taken, decoded)) if start == used => {
                        used += taken;
                        decoded
                    }
                    _ => {
                        for stream in streams.chunks_exact_mut(n.max(1)) {
                            used += entropy::decode(&coded[used..], stream, tables)?;
                        }
                        streams
                    }
                };
                if used != coded.len() {
                    return Err(Error::corrupt(format!(
                        "alp chunk of {n} values: {} bytes after its streams for {} exceptions",
                        coded.len() - used + self.positions.len() + self.exceptions.len(),
                        self.positions.len() / 2
                    )));
                }
                correction_bits.map(|bits| (streams, bits))
            }
        };
        if let Some((bytes, bits)) = corrections {
            let float = Float { width: W };
            let mut at = 0usize;
            read_stream(
                bytes,
                n,
                bits,
                self.split,
                #[inline(always)]
                |block| {
                    let dst = &mut out[at * W..(at + block.len()) * W];
                    for (slot, &z) in dst.chunks_exact_mut(W).zip(block) {
                        let mut le = [0u8; 8];
                        le[..W].copy_from_slice(slot);
                        let fixed = float.correct(u64::from_le_bytes(le), unzigzag(z));
                        slot.copy_from_slice(&fixed.to_le_bytes()[..W]);
                    }
                    at += block.len();
                },
            );
        }
        for (p, value) in self
            .positions
            .chunks_exact(2)
            .zip(self.exceptions.chunks_exact(W))
        {
            let p = usize::from(u16::from_le_bytes([p[0], p[1]]));
            out[p * W..(p + 1) * W].copy_from_slice(value);
        }
        Ok(())
    }
}

/// A chunk's stored integers on their way to floats, a block at a time: the integers
/// first (a running sum for deltas), then their floats in a loop of its own, which with
/// no carried sum in it converts and scales several values per instruction. Wrapping
/// throughout: a hostile chunk may hold any integers; it then decodes to wrong values,
/// never to a panic.
struct Ints {
    mul: f64,
    div: f64,
    reference: i64,
    delta: Deltas,
    /// The last integer and, for order 2, the last difference.
    sum: i64,
    slope: i64,
    /// Values written so far.
    at: usize,
    block: [i64; SCALE_BLOCK],
}

impl Ints {
    /// Writes the floats of the stored integers `stored` (the next ones of the chunk) to
    /// `out`, after those already written.
    #[allow(clippy::inline_always)]
    #[inline(always)]
    fn emit<const W: usize, const BINARY: bool>(&mut self, stored: &[u64], out: &mut [u8]) {
        let reference = self.reference;
        for part in stored.chunks(SCALE_BLOCK) {
            let ints = &mut self.block[..part.len()];
            // The running sums in locals: a sum kept in `self` is stored and reloaded
            // every value, a chain through memory.
            let (mut sum, mut slope) = (self.sum, self.slope);
            let mut done = 0;
            if matches!(self.delta, Deltas::Zigzag | Deltas::Zigzag2) {
                let (mut prev, mut step) = (sum.cast_unsigned(), slope.cast_unsigned());
                done = kernels::sums::sums_words(
                    part,
                    self.delta == Deltas::Zigzag2,
                    &mut prev,
                    &mut step,
                    ints,
                );
                (sum, slope) = (prev.cast_signed(), step.cast_signed());
            }
            let pairs = ints[done..].iter_mut().zip(&part[done..]);
            match self.delta {
                Deltas::None => {
                    for (int, &u) in pairs {
                        *int = reference.wrapping_add(u.cast_signed());
                    }
                }
                Deltas::Offset => {
                    for (int, &u) in pairs {
                        sum = sum.wrapping_add(reference.wrapping_add(u.cast_signed()));
                        *int = sum;
                    }
                }
                Deltas::Zigzag => {
                    for (int, &u) in pairs {
                        sum = sum.wrapping_add(unzigzag(u));
                        *int = sum;
                    }
                }
                Deltas::Zigzag2 => {
                    for (int, &u) in pairs {
                        slope = slope.wrapping_add(unzigzag(u));
                        sum = sum.wrapping_add(slope);
                        *int = sum;
                    }
                }
            }
            (self.sum, self.slope) = (sum, slope);
            let dst = &mut out[self.at * W..(self.at + part.len()) * W];
            scale_ints::<W, BINARY>(ints, self.mul, self.div, dst);
            self.at += part.len();
        }
    }
}

/// Integers scaled to floats a block at a time.
const SCALE_BLOCK: usize = 256;

/// `int as f64` for integers below 2^51 in magnitude (every integer a valid chunk holds),
/// in integer and float additions that vectorise where the conversion does not: `int`
/// plus the bits of 1.5 * 2^52 are the bits of 1.5 * 2^52 + int. Other integers (only in
/// a hostile chunk) give some other float.
#[inline]
fn small_int_to_f64(int: i64) -> f64 {
    f64::from_bits(ROUND.to_bits().wrapping_add(int.cast_unsigned())) - ROUND
}

/// Stores the floats of `ints` under the scale (`mul`, and `div` unless `BINARY`) as
/// values of `W` bytes in `dst`, exactly as `Float::decode` computes them.
#[inline]
fn scale_ints<const W: usize, const BINARY: bool>(
    ints: &[i64],
    mul: f64,
    div: f64,
    dst: &mut [u8],
) {
    for (slot, &int) in dst.chunks_exact_mut(W).zip(ints) {
        let x = small_int_to_f64(int) * mul;
        let x = if BINARY { x } else { x / div };
        if W == 8 {
            slot.copy_from_slice(&x.to_bits().to_le_bytes());
        } else {
            slot.copy_from_slice(&(x as f32).to_bits().to_le_bytes());
        }
    }
}

/// Hands the `n` values of `bits` bits stored in `bytes` (bit-packed, or `split` into
/// byte streams; the length checked by the parser) to `sink`, 64 at a time.
#[allow(clippy::inline_always)]
#[inline(always)]
fn read_stream(bytes: &[u8], n: usize, bits: u8, split: bool, mut sink: impl FnMut(&[u64])) {
    if !split {
        bitpack::unpack(bytes, n, bits, sink);
        return;
    }
    let streams = usize::from(bits).div_ceil(8);
    let mut block = [0u64; bitpack::BLOCK];
    let mut start = 0;
    while start < n {
        let len = (n - start).min(bitpack::BLOCK);
        block[..len].fill(0);
        for j in 0..streams {
            let stream = &bytes[j * n + start..j * n + start + len];
            for (v, &byte) in block.iter_mut().zip(stream) {
                *v |= u64::from(byte) << (8 * j);
            }
        }
        sink(&block[..len]);
        start += len;
    }
}

impl MiniBlockDecompressor for AlpDecompressor {
    fn value_width(&self) -> usize {
        self.float.width
    }

    fn max_expansion(&self) -> usize {
        1
    }

    fn raw_len_range(&self, num_values: usize) -> Option<(usize, usize)> {
        let w = self.float.width;
        Some((
            MIN_CHUNK_BYTES,
            HEADER_BYTES + 8 + 1 + num_values.saturating_mul(8 + 8 + 2 + w),
        ))
    }

    fn raw_expansion(&self) -> usize {
        MAX_EXPANSION
    }

    fn decompress_into(
        &self,
        chunk: &[u8],
        num_values: usize,
        storage: ChunkStorage,
        out: &mut [u8],
        scratch: &mut Vec<u8>,
    ) -> Result<()> {
        super::check_output(out, num_values, self.float.width)?;
        if storage != ChunkStorage::Raw {
            return Err(Error::corrupt(
                "an alp chunk is marked compressed, but alp has no compression",
            ));
        }
        match Chunk::parse(chunk, num_values, self.float, &self.tables, scratch)? {
            None => out.copy_from_slice(&chunk[HEADER_BYTES..]),
            Some(parsed) => parsed.decode(num_values, self.float, out)?,
        }
        Ok(())
    }

    fn decompress_chunks_into(
        &self,
        chunks: &[&[u8]],
        num_values: usize,
        out: &mut [u8],
        scratch: &mut Vec<u8>,
    ) -> Result<()> {
        if !kernels::tans::has_kernel() {
            return super::decompress_each(self, chunks, num_values, out, scratch);
        }
        super::check_chunks_output(chunks.len(), num_values, self.float.width, out)?;
        self.coded_chunks_into(chunks, &vec![num_values; chunks.len()], out, scratch)
    }

    fn decompress_counted_chunks_into(
        &self,
        chunks: &[&[u8]],
        counts: &[usize],
        out: &mut [u8],
        scratch: &mut Vec<u8>,
    ) -> Result<()> {
        super::check_counted_chunks_output(chunks.len(), counts, self.float.width, out)?;
        if !kernels::tans::has_kernel() {
            return super::decompress_each_counted(self, chunks, counts, out, scratch);
        }
        self.coded_chunks_into(chunks, counts, out, scratch)
    }
}

impl AlpDecompressor {
    /// Decodes chunks `chunks[k]` of `counts[k]` values each into `out`, their values back
    /// to back (checked to fit by the caller), the bin symbols and correction streams of
    /// many chunks at a time side by side.
    fn coded_chunks_into(
        &self,
        chunks: &[&[u8]],
        counts: &[usize],
        out: &mut [u8],
        scratch: &mut Vec<u8>,
    ) -> Result<()> {
        let width = self.float.width;
        let (mut symbols, mut corrections) = (Vec::new(), Vec::new());
        let mut out = out;
        for (first, group, group_counts) in super::stream_groups(chunks, counts) {
            let named = |k: usize| move |e| super::in_run_chunk(e, first + k);
            // Chunks of binned integers wait for their bin symbols to be decoded together
            // (their headers are read again then); the others decode now.
            let mut binned = Vec::with_capacity(group.len());
            for (k, (chunk, &n)) in group.iter().zip(group_counts).enumerate() {
                let (out_k, after) = std::mem::take(&mut out).split_at_mut(n * width);
                out = after;
                match Chunk::parse(chunk, n, self.float, &self.tables, scratch).map_err(named(k))? {
                    None => out_k.copy_from_slice(&chunk[HEADER_BYTES..]),
                    Some(Chunk {
                        bits,
                        stored:
                            Stored::Binned {
                                coded,
                                correction_bits,
                                ..
                            },
                        ..
                    }) => {
                        // `coded` is the end of `chunk` (the exceptions come after
                        // it); kept as its range there, free of the parse's borrow of
                        // `scratch`.
                        let at = (coded.as_ptr() as usize)
                            .checked_sub(chunk.as_ptr() as usize)
                            .filter(|&at| at + coded.len() <= chunk.len())
                            .ok_or_else(|| named(k)(Error::corrupt("coded streams outside")))?;
                        let streams = correction_bits.map_or(0, |b| usize::from(b).div_ceil(8));
                        binned.push(BinnedChunk {
                            index: k,
                            chunk,
                            n,
                            coded: at..at + coded.len(),
                            out: out_k,
                            bits,
                            streams,
                        });
                    }
                    Some(parsed) => parsed.decode(n, self.float, out_k).map_err(named(k))?,
                }
            }
            symbols.resize(binned.iter().map(|b| b.n).sum(), 0);
            let mut outs = super::cut_mut(&mut symbols, binned.iter().map(|b| b.n));
            let inputs: Vec<&[u8]> = binned.iter().map(|b| &b.chunk[b.coded.clone()]).collect();
            let used = entropy::decode_many(&inputs, &mut outs, &self.tables)?;
            let decoded: Vec<(&[u8], usize)> = outs.into_iter().map(|o| &*o).zip(used).collect();
            let ahead = corrections_ahead(&binned, &decoded, &self.tables, &mut corrections);
            for ((binned, (symbols, used)), ahead) in binned.into_iter().zip(decoded).zip(ahead) {
                let BinnedChunk {
                    index: k,
                    chunk,
                    n,
                    out,
                    ..
                } = binned;
                // Parsing is deterministic: the chunk is binned again.
                let mut parsed = Chunk::parse(chunk, n, self.float, &self.tables, scratch)
                    .map_err(named(k))?
                    .ok_or_else(|| named(k)(Error::corrupt("parsed twice, differently")))?;
                if let Stored::Binned {
                    symbols: s,
                    corrections: c,
                    ..
                } = &mut parsed.stored
                {
                    *s = Some((symbols, used));
                    *c = ahead;
                }
                parsed.decode(n, self.float, out).map_err(named(k))?;
            }
        }
        Ok(())
    }
}

/// A binned chunk of a run, waiting for its bin symbols.
struct BinnedChunk<'c, 'o> {
    /// Its index in its group of chunks.
    index: usize,
    /// Its bytes.
    chunk: &'c [u8],
    /// Its values.
    n: usize,
    /// Where its coded streams lie in `chunk`.
    coded: std::ops::Range<usize>,
    /// Its output.
    out: &'o mut [u8],
    /// Its integers' bits.
    bits: u8,
    /// Its number of correction streams.
    streams: usize,
}

/// The correction streams of the binned chunks `binned`, whose bin symbols are decoded
/// (`decoded`: each chunk's symbols and the bytes they took), decoded side by side into
/// `buffer`: per chunk, where they start in its coded streams, the bytes they took and
/// their bytes. They follow the low bits, whose length the symbols give. A chunk whose
/// streams cannot be cut apart or decoded here gets none (and every chunk does, when
/// one stream fails): it decodes them one at a time, where its damage is reported as
/// for a chunk read alone.
fn corrections_ahead<'b>(
    binned: &[BinnedChunk],
    decoded: &[(&[u8], usize)],
    tables: &PageTables,
    buffer: &'b mut Vec<u8>,
) -> Vec<Option<(usize, usize, &'b [u8])>> {
    let mut inputs: Vec<&[u8]> = Vec::new();
    // Each input's decoded length: its chunk's count of values.
    let mut lens: Vec<usize> = Vec::new();
    // Per chunk: where its streams start and end in its coded bytes, when they were cut.
    let mut spans: Vec<Option<(usize, usize)>> = Vec::with_capacity(binned.len());
    for (chunk, &(symbols, used)) in binned.iter().zip(decoded) {
        let (coded, streams, n) = (&chunk.chunk[chunk.coded.clone()], &chunk.streams, chunk.n);
        let start = used.saturating_add(entropy::low_bytes(symbols, u32::from(chunk.bits)));
        let (mut at, before) = (start, inputs.len());
        for _ in 0..*streams {
            let Some(len) = coded
                .get(at..)
                .and_then(|rest| entropy::coded_len(rest, n).ok())
            else {
                break;
            };
            inputs.push(&coded[at..at + len]);
            lens.push(n);
            at += len;
        }
        if *streams > 0 && inputs.len() == before + streams {
            spans.push(Some((start, at)));
        } else {
            inputs.truncate(before);
            lens.truncate(before);
            spans.push(None);
        }
    }
    buffer.clear();
    buffer.resize(lens.iter().sum(), 0);
    let mut outs = super::cut_mut(buffer, lens.iter().copied());
    let Ok(used) = entropy::decode_many(&inputs, &mut outs, tables) else {
        return vec![None; binned.len()];
    };
    let buffer: &'b Vec<u8> = buffer;
    // A chunk's streams are side by side in `buffer`, as its own decoding lays them out.
    let (mut index, mut offset) = (0, 0);
    let mut ahead = Vec::with_capacity(binned.len());
    for (BinnedChunk { streams, n, .. }, span) in binned.iter().zip(spans) {
        let Some((start, end)) = span else {
            ahead.push(None);
            continue;
        };
        let mine = index..index + streams;
        let whole = used[mine.clone()]
            .iter()
            .zip(&inputs[mine.clone()])
            .all(|(&u, input)| u == input.len());
        let bytes = &buffer[offset..offset + streams * n];
        offset += streams * n;
        index = mine.end;
        ahead.push(whole.then_some((start, end - start, bytes)));
    }
    ahead
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decompressor(bits_per_value: u64) -> Result<AlpDecompressor> {
        AlpDecompressor::new(&Alp {
            bits_per_value,
            ..Alp::default()
        })
    }

    fn bytes64(values: &[f64]) -> Vec<u8> {
        values.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    #[test]
    fn small_integers_convert_exactly() {
        let limit = 1i64 << 51;
        let mut x = 0x9E37_79B9_7F4A_7C15_u64;
        let mut ints = vec![
            0,
            1,
            -1,
            limit,
            -limit,
            limit - 1,
            1 - limit,
            1 << 30,
            -(1 << 40),
        ];
        ints.extend((0..10_000).map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x.cast_signed() >> 12).clamp(-limit, limit)
        }));
        for int in ints {
            assert_eq!(
                small_int_to_f64(int).to_bits(),
                (int as f64).to_bits(),
                "{int}"
            );
        }
    }

    #[test]
    fn worked_example() {
        let encoder = AlpEncoder::try_new(64).unwrap();
        let values = bytes64(&[21.5, 21.7, 22.0, f64::NAN]);
        let mut out = Vec::new();
        encoder
            .compress_chunk(&values, &mut out, &mut Vec::new())
            .unwrap();
        let mut expected = vec![
            1, 0, 3, 0, 1, 0, 0, 0, 0xD7, 0, 0, 0, 0, 0, 0, 0, 0x50, 0x0B,
        ];
        expected.extend_from_slice(&[3, 0]);
        expected.extend_from_slice(&f64::NAN.to_le_bytes());
        assert_eq!(out, expected);
        let mut back = vec![0; 32];
        decompressor(64)
            .unwrap()
            .decompress_into(&out, 4, ChunkStorage::Raw, &mut back, &mut Vec::new())
            .unwrap();
        assert_eq!(back, values);
    }

    fn encode(encoder: &AlpEncoder, values: &[u8]) -> Vec<u8> {
        encode_dyn(encoder, values)
    }

    fn encode_dyn(encoder: &dyn MiniBlockCompressor, values: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        encoder
            .compress_chunk(values, &mut out, &mut Vec::new())
            .unwrap();
        out
    }

    /// `analyse` and `Chunk::decode` run compiled for AVX-512 where the CPU has it
    /// (`kernels::with_wide_vectors`); the same code built for the baseline (`analyse_here` and
    /// `decode_width` called directly) must agree with them field for field and bit for
    /// bit, on chunks of every file of the bundled sample, bit-packed and in byte streams.
    #[test]
    fn vector_builds_agree_with_the_baseline_build() {
        #[cfg(target_arch = "x86_64")]
        if !kernels::has_avx512() {
            println!("this CPU has no AVX-512: both builds are the baseline one");
        }
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/data");
        let mut chunks = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let width = match path.extension().and_then(|e| e.to_str()) {
                Some("f64") => 8,
                Some("f32") => 4,
                _ => continue,
            };
            let bytes = std::fs::read(&path).unwrap();
            let float = Float { width };
            for layout in [IntLayout::Packed, IntLayout::Streams] {
                let encoder = AlpEncoder::try_new(width as u64 * 8)
                    .unwrap()
                    .with_layout(layout);
                // Every fifth chunk of 4 KiB, and a short one.
                for values in bytes.chunks(4096).step_by(5).chain([&bytes[..width * 37]]) {
                    let n = values.len() / width;
                    let what = format!("{} {layout:?} chunk of {n}", path.display());
                    let (a, b) = (encoder.analyse(values, n), encoder.analyse_here(values, n));
                    assert_eq!(a.is_some(), b.is_some(), "{what}");
                    if let (Some(a), Some(b)) = (a, b) {
                        assert_eq!(a.scale, b.scale, "{what}");
                        assert_eq!(a.coding, b.coding, "{what}");
                        assert_eq!(
                            (a.corrected, a.correction_bits, a.bits, a.reference, a.first),
                            (b.corrected, b.correction_bits, b.bits, b.reference, b.first),
                            "{what}"
                        );
                        assert_eq!(a.stored, b.stored, "{what}");
                        assert_eq!(a.corrections, b.corrections, "{what}");
                        assert_eq!(a.positions, b.positions, "{what}");
                        assert_eq!(a.size, b.size, "{what}");
                    }
                    let chunk = encode(&encoder, values);
                    let tables = entropy::PageTables::default();
                    let (mut scratch, mut again) = (Vec::new(), Vec::new());
                    let Some(parsed) =
                        Chunk::parse(&chunk, n, float, &tables, &mut scratch).unwrap()
                    else {
                        continue;
                    };
                    let mut direct = vec![0u8; values.len()];
                    match (width, parsed.scale.binary) {
                        (8, false) => parsed.decode_width::<8, false>(n, &mut direct),
                        (8, true) => parsed.decode_width::<8, true>(n, &mut direct),
                        (_, false) => parsed.decode_width::<4, false>(n, &mut direct),
                        (_, true) => parsed.decode_width::<4, true>(n, &mut direct),
                    }
                    .unwrap();
                    let mut built = vec![0u8; values.len()];
                    let parsed = Chunk::parse(&chunk, n, float, &tables, &mut again)
                        .unwrap()
                        .expect("parsed once");
                    parsed.decode(n, float, &mut built).unwrap();
                    assert_eq!(built, direct, "{what}");
                    assert_eq!(built, values, "{what}");
                    chunks += 1;
                }
            }
        }
        assert!(chunks > 100, "{chunks} chunks decoded");
    }

    /// `near_hits` (blocks without a branch) gives what `Float::encode_near` gives value
    /// by value, corrections over `MAX_CORRECTION` dropped: for special bit patterns
    /// (NaN payloads, infinities, -0.0, subnormals, the edges of the integer range),
    /// random bit patterns and decimals, under decimal and binary scales, and for every
    /// block remainder.
    #[test]
    fn near_hits_match_encode_near() {
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move || crate::encodings::xorshift(&mut x);
        for width in [8usize, 4] {
            let float = Float { width };
            let scales = [
                Scale::decimal(0, 0),
                Scale::decimal(2, 0),
                Scale::decimal(5, 2),
                Scale::decimal(10, 3),
                Scale::binary(4),
                Scale::binary(30),
            ];
            for scale in scales {
                let edge = MAX_INT / scale.up;
                let mut values: Vec<f64> = vec![
                    0.0,
                    -0.0,
                    f64::NAN,
                    f64::from_bits(0x7FF0_0000_0000_0001),
                    f64::from_bits(0xFFF8_0000_DEAD_BEEF),
                    f64::INFINITY,
                    f64::NEG_INFINITY,
                    f64::from_bits(1),
                    -f64::from_bits(0x000F_FFFF_FFFF_FFFF),
                    f64::MIN_POSITIVE,
                    f64::MAX,
                    f64::MIN,
                    edge,
                    -edge,
                    edge * (1.0 - f64::EPSILON),
                    -edge * (1.0 - f64::EPSILON),
                    1e300,
                    0.1,
                ];
                values.extend((0..300).map(|_| f64::from_bits(next())));
                values.extend((0..300).map(|i| f64::from(i - 150) / 100.0));
                values.extend((0..300).map(|_| (next() % 2_000_000) as f64 / 1000.0 - 1000.0));
                let bytes: Vec<u8> = if width == 8 {
                    values.iter().flat_map(|v| v.to_le_bytes()).collect()
                } else {
                    values
                        .iter()
                        .flat_map(|&v| (v as f32).to_le_bytes())
                        .collect()
                };
                for n in [0, 1, 63, 64, 65, 130, bytes.len() / width] {
                    let part = &bytes[..n * width];
                    let got = if width == 8 {
                        near_hits::<8>(part, &scale)
                    } else {
                        near_hits::<4>(part, &scale)
                    };
                    let expected: Vec<Option<(i64, i64)>> = (0..n)
                        .map(|i| {
                            let (bits, v) = float.read(part, i);
                            float
                                .encode_near(bits, v, &scale)
                                .filter(|&(_, c)| c.unsigned_abs() <= MAX_CORRECTION)
                        })
                        .collect();
                    assert_eq!(got, expected, "width {width}, {scale:?}, {n} values");
                }
            }
        }
    }

    fn decode(width: usize, chunk: &[u8], n: usize) -> Result<Vec<u8>> {
        let mut out = vec![0; n * width];
        decompressor(width as u64 * 8)?.decompress_into(
            chunk,
            n,
            ChunkStorage::Raw,
            &mut out,
            &mut Vec::new(),
        )?;
        Ok(out)
    }

    /// Decimal series of every exponent, both widths, both layouts, frame of reference and
    /// delta: smaller than the values, and back bit for bit.
    #[test]
    fn decimal_chunks_shrink_and_round_trip() {
        for layout in [IntLayout::Packed, IntLayout::Streams] {
            for digits in 0..=18 {
                for walk in [false, true] {
                    let ints = (0..512i64).map(|i| {
                        if walk {
                            1_000 + i * 3 - i % 7
                        } else {
                            (i * 7919) % 1000
                        }
                    });
                    let values: Vec<f64> = ints.map(|i| i as f64 / 10f64.powi(digits)).collect();
                    let bytes = bytes64(&values);
                    let encoder = AlpEncoder::try_new(64).unwrap().with_layout(layout);
                    let chunk = encode(&encoder, &bytes);
                    let what = format!("{layout:?} {digits} digits, walk {walk}");
                    assert!(chunk.len() < bytes.len() / 3, "{what}: {}", chunk.len());
                    // In byte streams, the second differences of `i * 7919 % 1000` are
                    // mostly zero: delta is right there too.
                    if walk || layout == IntLayout::Packed {
                        assert_eq!(chunk[3] & FLAG_DELTA != 0, walk, "{what}");
                    }
                    assert_eq!(decode(8, &chunk, 512).unwrap(), bytes, "{what}");
                }
            }
            for digits in 0..=6 {
                let values: Vec<u8> = (0..1024)
                    .flat_map(|i| ((f64::from(i % 300) / 10f64.powi(digits)) as f32).to_le_bytes())
                    .collect();
                let encoder = AlpEncoder::try_new(32).unwrap().with_layout(layout);
                let chunk = encode(&encoder, &values);
                // At most 17 bits (2 bytes in streams) of every 32.
                assert!(
                    chunk.len() < values.len() * 5 / 8,
                    "f32 {digits}: {}",
                    chunk.len()
                );
                assert_eq!(decode(4, &chunk, 1024).unwrap(), values);
            }
        }
    }

    /// Dyadic fractions take a binary exponent: exact, and narrower than any decimal one.
    #[test]
    fn dyadic_values_take_a_binary_exponent() {
        let values: Vec<f64> = (0..512)
            .map(|i| f64::from(i * 37 % 4000 - 2000) / 16.0)
            .collect();
        let bytes = bytes64(&values);
        let chunk = encode(&AlpEncoder::try_new(64).unwrap(), &bytes);
        assert_eq!(
            (chunk[0], chunk[1], chunk[3] & FLAG_BINARY),
            (4, 0, FLAG_BINARY)
        );
        assert_eq!(chunk[2], 12, "4000 sixteenths need 12 bits");
        assert_eq!(decode(8, &chunk, 512).unwrap(), bytes);
        assert_eq!(binary_exponent(0.75), 2);
        assert_eq!(binary_exponent(-3.0), 0);
        assert_eq!(binary_exponent(f64::from_bits(1)), 1074);
        assert_eq!(binary_exponent(f64::NAN), 0);
    }

    /// Decimals computed in f32 arithmetic (`i * 0.001f32`) land a few units in the last
    /// place off the decimal: they keep their integer plus a correction, not an exception,
    /// and a fill value far from them becomes an exception instead of widening every
    /// integer.
    #[test]
    fn near_decimals_take_corrections_and_outliers_are_exceptions() {
        let mut floats: Vec<f32> = (0..1024).map(|i| (i % 700) as f32 * 0.001 + 1.5).collect();
        floats[100] = -1e10;
        floats[900] = -1e10;
        let values: Vec<u8> = floats.iter().flat_map(|v| v.to_le_bytes()).collect();
        let chunk = encode(&AlpEncoder::try_new(32).unwrap(), &values);
        assert_eq!(
            chunk[3] & FLAG_CORRECTED,
            FLAG_CORRECTED,
            "header {:?}",
            &chunk[..16]
        );
        assert_eq!((chunk[0], chunk[1]), (3, 0));
        assert_eq!(
            u32::from_le_bytes(chunk[4..8].try_into().unwrap()),
            2,
            "two exceptions"
        );
        assert!(chunk.len() < values.len() * 3 / 4, "{} bytes", chunk.len());
        assert_eq!(decode(4, &chunk, 1024).unwrap(), values);
        let streams = AlpEncoder::try_new(32)
            .unwrap()
            .with_layout(IntLayout::Streams);
        assert_eq!(decode(4, &encode(&streams, &values), 1024).unwrap(), values);
        // A correction width past 64 bits, and a chunk cut inside its corrections.
        let at = HEADER_BYTES + usize::from(chunk[3] & FLAG_DELTA) * 8;
        let mut bad = chunk.clone();
        bad[at] = 65;
        assert!(matches!(decode(4, &bad, 1024), Err(Error::Corrupt { .. })));
        assert!(matches!(
            decode(4, &chunk[..chunk.len() - 1], 1024),
            Err(Error::Corrupt { .. })
        ));
        assert_eq!(zigzag(-3), 5);
        assert_eq!(unzigzag(zigzag(i64::MIN)), i64::MIN);
    }

    /// In byte streams, a smooth series of f32-computed decimals among runs of a fill
    /// value (an ocean grid with land) takes zigzag coded differences of order 2: the
    /// fill costs only where its runs start and end, the last digits go to corrections.
    /// Hostile flag combinations of that coding are corrupt, and no changed byte panics.
    #[test]
    fn byte_streams_take_zigzag_differences() {
        let floats: Vec<f32> = (0..1024)
            .map(|i| {
                if (300..500).contains(&i) || i >= 900 {
                    -1e10
                } else {
                    12.0 + (i as f32 * 0.01).sin() * 3.0
                }
            })
            .map(|x| (x * 1000.0).round() * 0.001f32)
            .collect();
        let values: Vec<u8> = floats.iter().flat_map(|v| v.to_le_bytes()).collect();
        let streams = AlpEncoder::try_new(32)
            .unwrap()
            .with_layout(IntLayout::Streams);
        let chunk = encode(&streams, &values);
        let flags = chunk[3];
        assert_eq!(
            flags & (FLAG_ZIGZAG | FLAG_ORDER2 | FLAG_DELTA | FLAG_SPLIT),
            FLAG_ZIGZAG | FLAG_ORDER2 | FLAG_DELTA | FLAG_SPLIT,
            "header {:?}",
            &chunk[..16]
        );
        assert_eq!((chunk[0], chunk[8..16].to_vec()), (3, vec![0; 8]));
        assert_eq!(decode(4, &chunk, 1024).unwrap(), values);
        // Under Zstd, far smaller than the values' byte streams under Zstd.
        let alp = zstd::bulk::compress(&chunk, 3).unwrap().len();
        let bss = zstd::bulk::compress(&crate::kernels::split_reference(&values, 4), 3)
            .unwrap()
            .len();
        assert!(alp * 3 < bss * 2, "alp {alp} bytes, bss {bss}");
        let corrupt = |chunk: &[u8], what: &str| {
            let err = decode(4, chunk, 1024).expect_err(what);
            assert!(matches!(err, Error::Corrupt { .. }), "{what}: {err:?}");
        };
        let with_flags = |flags: u8| {
            let mut bad = chunk.clone();
            bad[3] = flags;
            bad
        };
        corrupt(&with_flags(flags & !FLAG_ZIGZAG), "order 2 without zigzag");
        corrupt(&with_flags(flags & !FLAG_DELTA), "zigzag without delta");
        corrupt(&with_flags(flags & !FLAG_SPLIT), "zigzag bit-packed");
        corrupt(&with_flags(flags | 128), "an unknown flag");
        let mut reference = chunk.clone();
        reference[8] = 1;
        corrupt(&reference, "zigzag with a reference");
        for at in 0..chunk.len().min(64) {
            for byte in [0, 1, 0x7F, 0x80, 0xFF] {
                let mut bad = chunk.clone();
                bad[at] = byte;
                let _ = decode(4, &bad, 1024);
            }
        }
    }

    /// Entropy-coded byte streams behind the compact header: hourly pressure in whole
    /// millibars (steps of -2..2) takes little more than the steps' entropy;
    /// every prefix is corrupt, flags that contradict the layout too, and no changed
    /// byte panics.
    #[test]
    fn noisy_integers_are_binned() {
        let mut x = 0x9E37_79B9_7F4A_7C15_u64;
        for width in [4usize, 8] {
            // Three decimals of noise on a slow trend: integers of 12 to 13 bits whose low
            // bits are noise.
            let values: Vec<f64> = (0..1024)
                .map(|i| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    (f64::from(i) * 7.0 + (x % 5000) as f64) / 1000.0
                })
                .collect();
            let bytes: Vec<u8> = if width == 8 {
                bytes64(&values)
            } else {
                values
                    .iter()
                    .flat_map(|&v| (v as f32).to_le_bytes())
                    .collect()
            };
            let encoder = AlpEncoder::try_new(width as u64 * 8)
                .unwrap()
                .with_layout(IntLayout::Entropy)
                .with_chunk_values(1024)
                .unwrap();
            let chunk = encode(&encoder, &bytes);
            assert_ne!(chunk[3], FLAG_PLAIN, "{width}");
            assert_eq!(chunk[2] & BINNED, BINNED, "{width}");
            assert_eq!(decode(width, &chunk, 1024).unwrap(), bytes, "{width}");
            for len in 0..chunk.len() {
                assert!(
                    decode(width, &chunk[..len], 1024).is_err(),
                    "{width}: {len}"
                );
            }
            // Bit 7 of the bit count without entropy coding is 128 + b bits: corrupt.
            let plain = encode(&encoder.clone().with_layout(IntLayout::Streams), &bytes);
            let mut bad = plain.clone();
            bad[2] |= BINNED;
            assert!(matches!(
                decode(width, &bad, 1024),
                Err(Error::Corrupt { .. })
            ));
        }
        // A bin symbol no integer of 8 bits has; low bits cut short (raw symbol streams).
        let none = PageTables::default();
        assert!(entropy::decode_binned(&[0, 255], &mut [0], 8, &none, |_| {}).is_err());
        assert!(entropy::decode_binned(&[0, 200], &mut [0], 64, &none, |_| {}).is_err());
    }

    /// A run of chunks of every form (binned with and without correction streams, byte
    /// streams, plain), with the page's tables, decodes as its chunks one at a time; and
    /// damaged runs fail as the damaged chunk fails alone, or not at all.
    #[test]
    fn runs_of_mixed_chunks_decode_as_one_at_a_time() {
        let mut x = 0x2545_F491_4F6C_DD1D_u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for (width, n) in [(4usize, 1024usize), (8, 512)] {
            let mut values = Vec::new();
            for c in 0..24u32 {
                for i in 0..n {
                    let r = next();
                    let v = match c % 4 {
                        // Three decimals of noise: bins (and corrections, below).
                        0 | 1 => (f64::from(i as u32) * 7.0 + (r % 5000) as f64) / 1000.0,
                        // Few decimals: byte streams.
                        2 => [1.5, 2.25, 3.0, 1.5][(r % 4) as usize],
                        // Noise over every bit: plain.
                        _ => f64::from_bits(r >> 2),
                    };
                    // A unit in the last place off the decimal, for most values of
                    // every fourth chunk: corrections.
                    let off = if c % 4 == 0 { (r >> 50) % 3 } else { 1 };
                    if width == 8 {
                        values.extend_from_slice(&(v.to_bits() + off - 1).to_le_bytes());
                    } else {
                        let v = if c % 4 == 3 {
                            f32::from_bits(r as u32 >> 2)
                        } else {
                            v as f32
                        };
                        values.extend_from_slice(&(v.to_bits() + off as u32 - 1).to_le_bytes());
                    }
                }
            }
            let encoder = AlpEncoder::try_new(width as u64 * 8)
                .unwrap()
                .with_layout(IntLayout::Entropy)
                .with_chunk_values(n)
                .unwrap();
            let page = encoder.for_page(&values, Learn::Page).unwrap();
            let encoder: &dyn MiniBlockCompressor = page.as_deref().unwrap_or(&encoder);
            let Some(array_encoding::ArrayEncoding::Alp(message)) =
                encoder.array_encoding().array_encoding
            else {
                panic!("not alp")
            };
            let decoder = AlpDecompressor::new(&message).unwrap();
            let chunks: Vec<Vec<u8>> = values
                .chunks(n * width)
                .map(|v| encode_dyn(encoder, v))
                .collect();
            let mut scratch = Vec::new();
            let forms: Vec<&str> = chunks
                .iter()
                .map(|c| {
                    match Chunk::parse(c, n, Float { width }, &decoder.tables, &mut scratch)
                        .unwrap()
                    {
                        None => "plain",
                        Some(Chunk {
                            stored:
                                Stored::Binned {
                                    correction_bits: Some(_),
                                    ..
                                },
                            ..
                        }) => "corrected",
                        Some(Chunk {
                            stored: Stored::Binned { .. },
                            ..
                        }) => "binned",
                        Some(_) => "streams",
                    }
                })
                .collect();
            for form in ["corrected", "binned", "streams", "plain"] {
                assert!(
                    forms.contains(&form),
                    "width {width}: no {form} chunk in {forms:?}"
                );
            }
            // The same values cut into chunks of different counts (a fill page's inner
            // chunks), which decode through the counted call.
            let counts: Vec<usize> = (0..chunks.len()).map(|k| n - (k * 37) % (n / 2)).collect();
            let (mut counted, mut kept) = (Vec::new(), Vec::new());
            for (k, &c) in counts.iter().enumerate() {
                let v = &values[k * n * width..(k * n + c) * width];
                counted.push(encode_dyn(encoder, v));
                kept.extend_from_slice(v);
            }
            let each = |chunks: &[Vec<u8>], counts: &[usize]| -> Result<Vec<u8>> {
                let mut all = Vec::new();
                for (c, &n) in chunks.iter().zip(counts) {
                    let mut out = vec![0; n * width];
                    decoder.decompress_into(c, n, ChunkStorage::Raw, &mut out, &mut Vec::new())?;
                    all.extend(out);
                }
                Ok(all)
            };
            let run = |chunks: &[Vec<u8>], counts: &[usize]| -> Result<Vec<u8>> {
                let slices: Vec<&[u8]> = chunks.iter().map(Vec::as_slice).collect();
                let mut out = vec![0; counts.iter().sum::<usize>() * width];
                let scratch = &mut vec![0xEE; 3];
                if counts.iter().all(|&c| c == n) {
                    decoder.decompress_chunks_into(&slices, n, &mut out, scratch)
                } else {
                    decoder.decompress_counted_chunks_into(&slices, counts, &mut out, scratch)
                }
                .map(|()| out)
            };
            let equal = vec![n; chunks.len()];
            assert!(run(&chunks, &equal).unwrap() == values, "width {width}");
            assert!(run(&counted, &counts).unwrap() == kept, "width {width}");
            for (chunks, counts) in [(&chunks, &equal), (&counted, &counts)] {
                let mut failed = 0;
                for _ in 0..300 {
                    let mut damaged = chunks.clone();
                    // Damage falls on chunks with correction streams, half the time.
                    let k = (next() % damaged.len() as u64) as usize;
                    let k = if next() % 2 == 0 { k - k % 4 } else { k };
                    let r = next();
                    let chunk = &mut damaged[k];
                    match r % 3 {
                        0 => chunk.truncate((r >> 8) as usize % chunk.len()),
                        1 => chunk.push((r >> 8) as u8),
                        _ => {
                            // Mostly in the last third, where correction streams lie.
                            let len = chunk.len();
                            let at = len - 1 - (r >> 8) as usize % (len / 3).max(1);
                            chunk[at] ^= 1 << ((r >> 40) % 8);
                        }
                    }
                    match (run(&damaged, counts), each(&damaged, counts)) {
                        (Ok(whole), Ok(parts)) => {
                            assert!(whole == parts, "width {width}, chunk {k}");
                        }
                        (Err(_), Err(_)) => failed += 1,
                        (whole, alone) => panic!(
                            "width {width}, chunk {k}: run {:?}, alone {:?}",
                            whole.err(),
                            alone.err()
                        ),
                    }
                }
                assert!(
                    failed > 100,
                    "width {width}: only {failed} damaged runs failed"
                );
            }
        }
    }

    #[test]
    fn chunks_encode_alike_with_and_without_the_memo() {
        // Decimals with a few outliers and NaNs, so that every layout has exceptions,
        // corrections or both; chunks of 256.
        let mut x = 0x9E37_79B9_7F4A_7C15_u64;
        let values: Vec<f64> = (0..2000)
            .map(|i| {
                let x = crate::encodings::xorshift(&mut x);
                match x % 97 {
                    0 => f64::NAN,
                    1 => 1e300,
                    _ => (x % 20_000) as f64 / 100.0 + f64::from(i % 7) * 0.1,
                }
            })
            .collect();
        let bytes = bytes64(&values);
        let layouts = [IntLayout::Packed, IntLayout::Streams, IntLayout::Entropy];
        let encoders: Vec<AlpEncoder> = layouts
            .iter()
            .map(|&l| {
                AlpEncoder::try_new(64)
                    .unwrap()
                    .with_chunk_values(256)
                    .unwrap()
                    .with_layout(l)
            })
            .collect();
        let page_of = |e: &AlpEncoder| e.for_page(&bytes, Learn::Page).unwrap();
        let encode_all = |e: &dyn MiniBlockCompressor| -> Vec<Vec<u8>> {
            bytes.chunks(256 * 8).map(|c| encode_dyn(e, c)).collect()
        };
        let alone: Vec<Vec<Vec<u8>>> = encoders
            .iter()
            .map(|e| encode_all(e))
            .chain(page_of(&encoders[2]).iter().map(|p| encode_all(p.as_ref())))
            .collect();
        assert_eq!(
            alone.len(),
            4,
            "the entropy layout learns tables from the page"
        );
        // Within a scope, every layout after the first finds the chunks analysed (the
        // byte-stream layouts share their analyses), the page's tables too.
        let hits = memo::hits();
        let memo: Vec<Vec<Vec<u8>>> = memo::scoped(|| {
            encoders
                .iter()
                .map(|e| encode_all(e))
                .chain(page_of(&encoders[2]).iter().map(|p| encode_all(p.as_ref())))
                .collect()
        });
        assert_eq!(memo, alone);
        // 8 chunks, analysed four times in byte streams (for the page's tables, which
        // sample every chunk, then the streams, entropy and tables layouts): three hits
        // each.
        assert_eq!(memo::hits() - hits, 8 * 3);
        // (Chunks coded with the page's tables decode only with them: the page tests.)
        for (chunks, layout) in alone.iter().zip(["packed", "streams", "entropy"]) {
            for (chunk, values) in chunks.iter().zip(bytes.chunks(256 * 8)) {
                assert_eq!(
                    decode(8, chunk, values.len() / 8).unwrap(),
                    values,
                    "{layout}"
                );
            }
        }
    }

    #[test]
    fn entropy_coded_streams_take_the_information_content() {
        let mut x = 0x2545_F491_4F6C_DD1D_u64;
        let mut level = 1013i64;
        let values: Vec<f64> = (0..512)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                level += [0, 0, 0, 0, 1, -1, 1, -1, 2, -2][(x % 10) as usize];
                level as f64
            })
            .collect();
        let bytes = bytes64(&values);
        let encoder = AlpEncoder::try_new(64)
            .unwrap()
            .with_layout(IntLayout::Entropy);
        let chunk = encode(&encoder, &bytes);
        assert_eq!(
            chunk[3] & (FLAG_ENTROPY | FLAG_SPLIT),
            FLAG_ENTROPY | FLAG_SPLIT
        );
        // The steps' entropy is 2.12 bits: 136 bytes for 512, then 5% and the headers.
        assert!(chunk.len() <= 136 * 105 / 100 + 24, "{} bytes", chunk.len());
        assert_eq!(decode(8, &chunk, 512).unwrap(), bytes);
        for len in 0..chunk.len() {
            assert!(
                matches!(decode(8, &chunk[..len], 512), Err(Error::Corrupt { .. })),
                "{len}-byte prefix"
            );
        }
        let mut longer = chunk.clone();
        longer.push(0);
        assert!(matches!(
            decode(8, &longer, 512),
            Err(Error::Corrupt { .. })
        ));
        let mut packed = chunk.clone();
        packed[3] &= !FLAG_SPLIT;
        assert!(matches!(
            decode(8, &packed, 512),
            Err(Error::Corrupt { .. })
        ));
        for at in 0..chunk.len() {
            for byte in [0, 1, 2, 0x7F, 0x80, 0xFF] {
                let mut bad = chunk.clone();
                bad[at] = byte;
                let _ = decode(8, &bad, 512);
            }
        }
        // Values with nothing to entropy-code are stored plain, not larger.
        let noise: Vec<u8> = (0..4096)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        let plain = encode(&encoder, &noise);
        assert_eq!(plain.len(), HEADER_BYTES + noise.len());
        assert_eq!(decode(8, &plain, 512).unwrap(), noise);
        assert_eq!(varint_round_trip(u64::MAX), Some(u64::MAX));
        assert_eq!(read_varint(&[0xFF; 10], &mut 0), None);
        assert_eq!(read_varint(&[0x80], &mut 0), None);
    }

    fn varint_round_trip(v: u64) -> Option<u64> {
        let mut out = Vec::new();
        write_varint(v, &mut out);
        read_varint(&out, &mut 0)
    }

    /// Order 1 and order 2 zigzag residuals give the integers back through the decoder.
    #[test]
    fn zigzag_orders_round_trip_through_the_decoder() {
        for order2 in [false, true] {
            let values: Vec<f64> = (0..512)
                .map(|i| f64::from((i * i) % 977 - 400) / 100.0)
                .collect();
            let ints: Vec<i64> = (0..512).map(|i| i64::from((i * i) % 977 - 400)).collect();
            let stored = zigzag_residuals(&ints, order2);
            let bits = bitpack::bit_width(stored.iter().copied().max().unwrap());
            let mut chunk = vec![2, 0, bits, FLAG_DELTA | FLAG_SPLIT | FLAG_ZIGZAG];
            if order2 {
                chunk[3] |= FLAG_ORDER2;
            }
            chunk.extend_from_slice(&[0; 12]);
            chunk.extend_from_slice(&ints[0].to_le_bytes());
            for j in 0..usize::from(bits).div_ceil(8) {
                chunk.extend(stored.iter().map(|v| (v >> (8 * j)) as u8));
            }
            assert_eq!(
                decode(8, &chunk, 512).unwrap(),
                bytes64(&values),
                "{order2}"
            );
        }
    }

    /// A chunk whose stored integers are all 0 (0 bits) decodes, in every mode, as the
    /// step-by-step reference does: one value repeated where no running sum moves (the
    /// decoder's shortcut), a progression where an offset moves it; its exceptions land.
    #[test]
    fn chunks_of_zero_bits_decode_in_every_mode() {
        let n = 512usize;
        let scale = Scale::decimal(2, 0);
        for width in [4usize, 8] {
            for (name, flags, reference, first) in [
                ("packed", 0, 1234i64, None),
                ("streams", FLAG_SPLIT, -56, None),
                ("offset 0", FLAG_DELTA, 0, Some(777i64)),
                ("offset 5", FLAG_DELTA, 5, Some(777)),
                (
                    "zigzag",
                    FLAG_DELTA | FLAG_SPLIT | FLAG_ZIGZAG,
                    0,
                    Some(-300),
                ),
                (
                    "zigzag 2",
                    FLAG_DELTA | FLAG_SPLIT | FLAG_ZIGZAG | FLAG_ORDER2,
                    0,
                    Some(42),
                ),
            ] {
                let exceptions: [(u16, u64); 2] = [(3, 0x8000_0000), (100, 0x7FC0_BEEF)];
                let mut chunk = vec![2, 0, 0, flags];
                chunk.extend_from_slice(&2u32.to_le_bytes());
                chunk.extend_from_slice(&reference.to_le_bytes());
                if let Some(first) = first {
                    chunk.extend_from_slice(&first.to_le_bytes());
                }
                for (p, _) in exceptions {
                    chunk.extend_from_slice(&p.to_le_bytes());
                }
                for (_, bits) in exceptions {
                    chunk.extend_from_slice(&bits.to_le_bytes()[..width]);
                }
                let mut expected: Vec<u8> = (0..512i64)
                    .flat_map(|i| {
                        let int = first.map_or(reference, |f| f + (i + 1) * reference);
                        let bits = Float { width }.decode(int, &scale);
                        bits.to_le_bytes()[..width].to_vec()
                    })
                    .collect();
                for (p, bits) in exceptions {
                    let at = usize::from(p) * width;
                    expected[at..at + width].copy_from_slice(&bits.to_le_bytes()[..width]);
                }
                assert_eq!(
                    decode(width, &chunk, n).unwrap(),
                    expected,
                    "{name}, {width}-byte values"
                );
            }
        }
    }

    /// Values ALP cannot take are stored plain, at the values' size plus the header.
    #[test]
    fn random_bits_are_stored_plain() {
        let mut x = 0x1234_5678_9ABC_DEF0_u64;
        let bytes: Vec<u8> = (0..512)
            .flat_map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x.to_le_bytes()
            })
            .collect();
        let chunk = encode(&AlpEncoder::try_new(64).unwrap(), &bytes);
        assert_eq!(chunk.len(), HEADER_BYTES + bytes.len());
        assert_eq!(chunk[3], FLAG_PLAIN);
        assert_eq!(decode(8, &chunk, 512).unwrap(), bytes);
    }

    /// Every header field out of range, exception positions out of order or past the
    /// chunk, and every prefix and length change: typed errors, no panic.
    #[test]
    fn hostile_chunks_are_corrupt() {
        let mut values: Vec<f64> = (0..300).map(|i| f64::from(i) / 100.0).collect();
        values[7] = f64::NAN;
        values[200] = -0.0;
        let bytes = bytes64(&values);
        let good = encode(&AlpEncoder::try_new(64).unwrap(), &bytes);
        assert_eq!(u32::from_le_bytes(good[4..8].try_into().unwrap()), 2);
        assert_eq!(decode(8, &good, 300).unwrap(), bytes);
        let corrupt = |chunk: &[u8], what: &str| {
            let err = decode(8, chunk, 300).expect_err(what);
            assert!(
                matches!(err, Error::Corrupt { .. }),
                "{what}: {err:?} is not Corrupt"
            );
        };
        let with = |at: usize, byte: u8| {
            let mut chunk = good.clone();
            chunk[at] = byte;
            chunk
        };
        let with_u16 = |at: usize, value: u16| {
            let mut chunk = good.clone();
            chunk[at..at + 2].copy_from_slice(&value.to_le_bytes());
            chunk
        };
        corrupt(&with(0, 19), "exponent 19");
        corrupt(&with(1, 3), "factor over the exponent");
        corrupt(&with(2, 65), "65 bits");
        corrupt(&with(2, good[2] + 1), "one bit more than the bytes hold");
        corrupt(&with(3, 16), "unknown flag");
        let mut binary = with(3, FLAG_BINARY);
        binary[0] = MAX_BINARY_EXPONENT + 1;
        corrupt(&binary, "binary exponent 63");
        binary[0] = 2;
        binary[1] = 1;
        corrupt(&binary, "binary with a factor");
        corrupt(&with(3, FLAG_PLAIN), "plain with a header");
        corrupt(&with(4, 3), "an exception more than stored");
        corrupt(&with(4, 0xFF), "more exceptions than values");
        let positions = good.len() - 2 * (2 + 8);
        corrupt(&with_u16(positions, 300), "position 300, past the chunk");
        corrupt(&with_u16(positions + 2, 7), "positions not increasing");
        for len in 0..good.len() {
            corrupt(&good[..len], &format!("{len}-byte prefix"));
        }
        let mut longer = good.clone();
        longer.push(0);
        corrupt(&longer, "a byte too many");
        // Any single byte changed: an error or other values, never a panic.
        for at in 0..good.len() {
            for byte in [0, 1, 0x7F, 0x80, 0xFF] {
                let _ = decode(8, &with(at, byte), 300);
            }
        }
        // A chunk claiming more values than a chunk holds.
        assert!(decode(8, &good, MAX_VALUES + 1).is_err());
        // Marked compressed.
        let mut out = vec![0; 300 * 8];
        let err = decompressor(64)
            .unwrap()
            .decompress_into(
                &good,
                300,
                ChunkStorage::Compressed,
                &mut out,
                &mut Vec::new(),
            )
            .unwrap_err();
        assert!(matches!(err, Error::Corrupt { .. }));
        // Widths ALP does not take.
        assert!(decompressor(16).is_err());
        assert!(AlpEncoder::try_new(16).is_err());
    }
}
