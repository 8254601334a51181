//! Delta: each chunk's values as integers, differenced once or twice, zigzag coded and
//! byte-stream split.
//!
//! Smooth series and grids (a geoid, ocean temperatures, an ephemeris) change little from
//! one value to the next, and a float's bits, read as an integer of its width, change
//! little too while the exponent stays put. Differencing those integers leaves small
//! numbers; zigzag coding (`0, -1, 1, -2, ...` to `0, 1, 2, 3, ...`) makes the small
//! negative ones small too, so their high bytes are zero; byte stream split lines those
//! zero bytes up for the general compressor around this encoding (LZ4 or Zstd), which is
//! what turns them into a smaller chunk. All arithmetic wraps at the value's width, so
//! every bit pattern (NaN payloads, -0.0, infinities, integers at their limits) comes back
//! exactly. Each chunk picks order 1 (`x[i] - x[i-1]`) or order 2 (the difference of
//! consecutive differences), whichever leaves fewer significant bits in all (the packed
//! form, below, whichever packs smaller), and records it in its first byte, so every
//! chunk decodes alone.
//!
//! Values are integers of 1, 2, 4 or 8 bytes: floats of 16, 32 and 64 bits and every
//! integer, date, time and timestamp type.
//!
//! `delta+ans` entropy-codes the residuals instead ([`entropy`], with the page's tables,
//! which the `Delta` message carries), bit 7 of the order byte set, in whichever of two
//! forms is smaller for the chunk:
//!
//! ```text
//! streams  order | 0x80, then the W residual streams as entropy-coded streams of n
//!          bytes each, stream 0 first
//! binned   order | 0xC0, then one entropy-coded stream of n bin symbols, then the
//!          residuals' low bits, LSB first, value after value (ceil(total / 8) bytes)
//! ```
//!
//! A residual `r` of `b` significant bits with `b <= L + 1` is its own bin (symbol `r`,
//! no low bits); a larger one is in the bin of its bit length and the `L` bits after its
//! leading one, symbol `2^(L+1) + (b - L - 2) * 2^L + top`, followed by its `b - 1 - L`
//! low bits. `L` is 3 for values of up to 4 bytes, 2 for 8 bytes (so every symbol fits
//! a byte). Bins code noisy residuals as pcodec does: the leading bits entropy-coded
//! together, the noise below them as it is; byte streams code each byte on its own,
//! which suits residuals whose bytes repeat. A chunk whose coded form would not be
//! smaller than its residuals keeps them as they are (bit 7 clear).
//!
//! ```text
//! delta chunk of n values of W bytes (W = 1, 2, 4 or 8)
//!   byte 0           order: 1 or 2
//!   bytes 1..1+n*W   the residuals r[0..n], byte stream split (stream j = byte j of
//!                    each residual, little-endian), each the zigzag code of
//!                      order 1: r[0] = x[0], r[i] = x[i] - x[i-1]
//!                      order 2: r[0] = x[0], r[1] = x[1] - x[0],
//!                               r[i] = (x[i] - x[i-1]) - (x[i-1] - x[i-2])
//!                    where x[i] is value i read as a W-byte integer, differences wrap
//!                    and zigzag(d) = (d << 1) ^ (d >> (8W - 1)) on the signed integer
//! ```
//!
//! Worked example: the f32 values `[1.0, 1.5, 2.0, 2.5]` are the integers `0x3F800000,
//! 0x3FC00000, 0x40000000, 0x40200000`. Order 1 leaves `0x3F800000, 0x00400000, 0x00400000,
//! 0x00200000` (24 + 24 + 23 significant bits after zigzag, besides the first value), order
//! 2 leaves `0x3F800000, 0x00400000, 0, 0xFFE00000` (24 + 0 + 22 bits): order 2 is kept. Zigzag turns
//! them into `0x7F000000, 0x00800000, 0, 0x003FFFFF`, and the chunk is
//!
//! ```text
//! 02 | 00 00 00 FF | 00 00 00 FF | 00 80 00 3F | 7F 00 00 00
//! order  stream 0      stream 1      stream 2      stream 3
//! ```
//!
//! (the unit test `worked_example` checks these bytes).
//!
//! `delta` (alone) stores the differences bit-packed instead, with a frame of reference:
//! the first `order` residuals as they are, then the rest as wrapping differences (not
//! zigzag coded), frame-of-reference coded and bit-packed by [`bitpacked`](super::bitpacked)
//! (whose reference may be read signed, so a steady trend costs only its jitter):
//!
//! ```text
//! packed   order | 0x20, then min(order, n) zigzag residuals of W bytes, LE, then a
//!          bitpack chunk of the other n - min(order, n) differences (a header byte, a
//!          W-byte reference, the offsets bit-packed)
//! ```
//!
//! The packed form picks its order by its own size (the first residuals, then the
//! others' width), not by the zigzag costs: bit-packing pays for the range of the
//! differences, so a steady step (timestamps a second apart) packs its first differences
//! in fewer bits than its second. For the f32 example above, order 1 takes 32 bits for
//! `r[0] = 0x7F000000` and 3 x 22 for the differences `0x400000, 0x400000, 0x200000`
//! (reference `0x200000`, offsets `0x200000, 0x200000, 0`), 98 bits; order 2 would take
//! 64 + 2 x 22 = 108:
//!
//! ```text
//! 21 | 00 00 00 7F | 16 | 00 00 20 00 | 00 00 20 00 00 08 00 00 00
//! order, packed  r[0]  b   reference     offsets 0x200000, 0x200000, 0 at 22 bits
//! ```
//!
//! (`tests::packed_worked_example`).
//!
//! Or, when that is smaller, `delta` stores the zigzag residuals (all of them, the first
//! value's too) in [`patched`](super::patched) blocks: a width a block of 512 bits of
//! residuals, the few wider ones patched. A frame of reference over the whole chunk pays
//! for its widest difference on every value, and a smooth series' widest differences are
//! a few a chunk, where it crosses zero (the bits of a float jump between the signs):
//!
//! ```text
//! blocks   order | 0x10, then the patched blocks of the n zigzag residuals
//! ```
//!
//! The f32 example above takes 16 bytes so, to the packed form's 19: order 2, one block
//! of 24 bits (header `33 + 24`) whose first residual, `0x7F000000`, is patched.

use std::cell::OnceCell;
use std::rc::Rc;

use arrow_buffer::MutableBuffer;

use super::entropy::{self, KindHistogram, PageTables};
use super::memo;
use super::{
    append_zeroed, check_chunks_output, check_counted_chunks_output, check_output, checked_len,
    in_run_chunk, width_from_bits, ChunkShape, ChunkStorage, Learn, MiniBlockCompressor,
    MiniBlockDecompressor,
};
use crate::error::{Error, Result};
use crate::kernels;
use crate::proto::encodings::{array_encoding, ArrayEncoding, Delta};

/// Bytes before a chunk's residuals: the order.
pub const HEADER_BYTES: usize = 1;

/// Bit of the order byte: the residual streams are entropy-coded.
const ENTROPY_BIT: u8 = 0x80;

/// Bit of the order byte, with [`ENTROPY_BIT`]: the residuals are binned.
const BINNED_BIT: u8 = 0x40;

/// The page tables' kind of the bin symbol stream (the byte streams are kinds 0 to 7).
const BINNED_KIND: usize = 8;

/// Bit of the order byte, without [`ENTROPY_BIT`]: the differences are bit-packed.
const PACKED_BIT: u8 = 0x20;

/// Bit of the order byte, without [`ENTROPY_BIT`]: the residuals are in patched blocks.
const BLOCKS_BIT: u8 = 0x10;

/// Smallest entropy-coded chunk: the order byte and a constant bin stream.
const MIN_CODED_BYTES: usize = 3;

/// Whether the delta encoding takes values of `width` bytes.
pub fn supports_width(width: usize) -> bool {
    matches!(width, 1 | 2 | 4 | 8)
}

fn check_width(width: usize) -> Result<()> {
    if supports_width(width) {
        Ok(())
    } else {
        Err(Error::unsupported(format!(
            "delta takes values of 1, 2, 4 or 8 bytes, not {width}"
        )))
    }
}

/// The integer of a value's width, with the arithmetic the encoding needs. Everything
/// goes through `u64`, wrapping at the width, so one loop serves every width.
trait Word: Copy {
    const BYTES: usize;
    fn read(bytes: &[u8]) -> u64;
    fn write(value: u64, bytes: &mut [u8]);
}

macro_rules! word {
    ($t:ty) => {
        impl Word for $t {
            const BYTES: usize = std::mem::size_of::<$t>();
            #[inline]
            fn read(bytes: &[u8]) -> u64 {
                u64::from(<$t>::from_le_bytes(bytes.try_into().expect("one value")))
            }
            #[inline]
            fn write(value: u64, bytes: &mut [u8]) {
                bytes.copy_from_slice(&(value as $t).to_le_bytes());
            }
        }
    };
}
word!(u8);
word!(u16);
word!(u32);
word!(u64);

/// Zigzag code of the `bits`-bit two's complement integer in the low bits of `d`.
#[inline]
fn zigzag(d: u64, bits: u32) -> u64 {
    let shift = 64 - bits;
    let signed = ((d << shift).cast_signed()) >> shift;
    ((signed << 1) ^ (signed >> 63)).cast_unsigned() & mask(bits)
}

/// Inverse of [`zigzag`].
#[inline]
fn unzigzag(z: u64) -> u64 {
    (z >> 1) ^ (z & 1).wrapping_neg()
}

#[inline]
fn mask(bits: u32) -> u64 {
    u64::MAX >> (64 - bits)
}

/// Significant bits of the zigzag residuals of each order: the cost estimate that picks
/// the order.
fn order_costs<W: Word>(values: &[u8]) -> [u64; 2] {
    let bits = 8 * W::BYTES as u32;
    let m = mask(bits);
    let (mut prev, mut prev_delta) = (0u64, 0u64);
    let mut cost = [0u64; 2];
    for (i, value) in values.chunks_exact(W::BYTES).enumerate() {
        let x = W::read(value);
        let delta = x.wrapping_sub(prev) & m;
        let second = if i < 2 {
            delta
        } else {
            delta.wrapping_sub(prev_delta) & m
        };
        if i > 0 {
            cost[0] += u64::from(64 - zigzag(delta, bits).leading_zeros());
            cost[1] += u64::from(64 - zigzag(second, bits).leading_zeros());
        }
        prev = x;
        prev_delta = delta;
    }
    cost
}

/// The order whose packed form is smaller: bit-packing pays for the range of the
/// differences (their frame of reference), not for their distance from zero as the
/// zigzag costs of [`order_costs`] do, so a series with a steady step (timestamps a second
/// apart with jitter) packs its first differences in fewer bits than its second, whose
/// zigzag codes are the smaller. Each order's cost is its first residuals' bytes and the
/// others' width (read unsigned or signed, whichever is narrower, as
/// [`bitpacked::frame`](super::bitpacked::frame) does); a tie keeps `preferred`.
fn packed_order<W: Word>(values: &[u8], preferred: u8) -> u8 {
    let bits = 8 * W::BYTES as u32;
    let (m, flip) = (mask(bits), 1u64 << (bits - 1));
    // Per order: (min, max) read unsigned, then read signed.
    let mut range = [[(u64::MAX, 0u64); 2]; 2];
    let (mut prev, mut prev_delta) = (0u64, 0u64);
    for (i, value) in values.chunks_exact(W::BYTES).enumerate() {
        let x = W::read(value);
        let delta = x.wrapping_sub(prev) & m;
        for (order, d) in [(1usize, delta), (2, delta.wrapping_sub(prev_delta) & m)] {
            if i >= order {
                for (r, v) in range[order - 1].iter_mut().zip([d, d ^ flip]) {
                    *r = (r.0.min(v), r.1.max(v));
                }
            }
        }
        prev = x;
        prev_delta = delta;
    }
    let n = values.len() / W::BYTES;
    let cost = |order: usize| {
        let packed = range[order - 1]
            .iter()
            .map(|&(lo, hi)| u64::from(crate::kernels::bitpack::bit_width(hi.saturating_sub(lo))))
            .min()
            .unwrap_or(0);
        let rest = n.saturating_sub(order) as u64;
        (order.min(n) * W::BYTES * 8) as u64 + packed * rest
    };
    match cost(1).cmp(&cost(2)) {
        std::cmp::Ordering::Less => 1,
        std::cmp::Ordering::Greater => 2,
        std::cmp::Ordering::Equal => preferred,
    }
}

/// Decodes binned residuals from the start of `input` into `out`, value after value,
/// with `symbols` (one byte per value) as working space; returns the bytes taken.
fn unbin<W: Word>(
    input: &[u8],
    symbols: &mut [u8],
    tables: &PageTables,
    out: &mut [u8],
    order: u8,
) -> Result<usize> {
    let reader = entropy::Unbinner::new(input, symbols, 8 * W::BYTES as u32, tables)?;
    sum_unbinned::<W>(reader, out, order)
}

/// Writes the values of binned residuals, read from `reader`, into `out`, summing them
/// `order` times; returns the bytes of the input taken.
fn sum_unbinned<W: Word>(
    mut reader: entropy::Unbinner,
    out: &mut [u8],
    order: u8,
) -> Result<usize> {
    let mut sums = Sums::new(order);
    let mut at = 0;
    let mut block = [0u64; entropy::BIN_BLOCK];
    // 4-byte values go from bin symbols to values in one pass where the CPU has the
    // kernel, from the third on for order 2 (its first two start the sums); blocks read
    // the first values and the last few, which the kernel leaves.
    let fused = W::BYTES == 4 && crate::kernels::unbin::has_fused();
    loop {
        let started = !sums.order2 || sums.seen >= 2;
        if fused && started {
            let done =
                reader.sum_next4(sums.order2, &mut sums.prev, &mut sums.delta, &mut out[at..]);
            at += done * W::BYTES;
        }
        let most = if fused && !started {
            2
        } else {
            entropy::BIN_BLOCK
        };
        let len = reader.next_upto(&mut block, most);
        if len == 0 {
            return reader.finish();
        }
        let end = (at + len * W::BYTES).min(out.len());
        sums.write::<W>(&block[..len], &mut out[at..end]);
        at = end;
    }
}

/// Writes the zigzag residuals of `order` (1 or 2) of `values` into `out`, value by value.
fn residuals<W: Word>(values: &[u8], order: u8, out: &mut [u8]) {
    let bits = 8 * W::BYTES as u32;
    let m = mask(bits);
    let (mut prev, mut prev_delta) = (0u64, 0u64);
    for (i, (value, out)) in values
        .chunks_exact(W::BYTES)
        .zip(out.chunks_exact_mut(W::BYTES))
        .enumerate()
    {
        let x = W::read(value);
        let delta = x.wrapping_sub(prev) & m;
        let r = if order == 2 && i >= 2 {
            delta.wrapping_sub(prev_delta) & m
        } else {
            delta
        };
        W::write(zigzag(r, bits), out);
        prev = x;
        prev_delta = delta;
    }
}

/// Turns zigzag residuals of `order` back into values, in place.
fn undo<W: Word>(values: &mut [u8], order: u8) {
    let mut sums = Sums::new(order);
    // Order 2's first two residuals (a value and a difference) one at a time, then whole
    // vectors in place where the CPU has a kernel, then the rest a block at a time.
    let head = values.len().min(if order == 2 { 2 * W::BYTES } else { 0 });
    let (head, values) = values.split_at_mut(head);
    let mut firsts = [0u64; 2];
    for (first, value) in firsts.iter_mut().zip(head.chunks_exact(W::BYTES)) {
        *first = W::read(value);
    }
    sums.write::<W>(&firsts[..head.len() / W::BYTES], head);
    let done = crate::kernels::sums::sums_in_place(
        values,
        sums.order2,
        &mut sums.prev,
        &mut sums.delta,
        W::BYTES,
    );
    sums.seen += done;
    let values = &mut values[done * W::BYTES..];
    let mut block = [0u64; 256];
    for part in values.chunks_mut(256 * W::BYTES) {
        for (r, value) in block.iter_mut().zip(part.chunks_exact(W::BYTES)) {
            *r = W::read(value);
        }
        let len = part.len() / W::BYTES;
        sums.write::<W>(&block[..len], part);
    }
}

/// Writes the `n` values of a packed chunk's residuals (`rest`: the first
/// `min(order, n)` zigzag residuals, then a bitpack chunk of the other differences) into
/// `out`, summed `order` times.
fn unpack<W: Word>(rest: &[u8], order: u8, n: usize, out: &mut [u8]) -> Result<()> {
    let bits = 8 * W::BYTES as u32;
    let first = usize::from(order).min(n);
    let head = rest.get(..first * W::BYTES).ok_or_else(|| {
        Error::corrupt(format!(
            "delta chunk of {n} values: cut inside its first residuals"
        ))
    })?;
    let mut sums = Sums::new(order);
    let mut firsts = [0u64; 2];
    for (r, value) in firsts.iter_mut().zip(head.chunks_exact(W::BYTES)) {
        *r = W::read(value);
    }
    sums.write::<W>(&firsts[..first], &mut out[..first * W::BYTES]);
    let unpacker = super::bitpacked::BitpackDecompressor::new(u64::from(bits))?;
    let then = crate::kernels::unpack::Then::Sum {
        order2: sums.order2,
        prev: sums.prev,
        delta: sums.delta,
    };
    let (rest, out) = (&rest[first * W::BYTES..], &mut out[first * W::BYTES..]);
    if unpacker.unpack_into(rest, n - first, then, out)? {
        return Ok(());
    }
    let mut at = 0;
    let mut block = [0u64; crate::kernels::bitpack::BLOCK];
    unpacker.unpack(rest, n - first, |differences| {
        let residuals = &mut block[..differences.len()];
        for (r, &d) in residuals.iter_mut().zip(differences) {
            *r = zigzag(d, bits);
        }
        let end = at + residuals.len() * W::BYTES;
        sums.write::<W>(residuals, &mut out[at..end]);
        at = end;
    })
}

/// Running sums that undo zigzag differences of order 1 or 2, value after value.
#[derive(Clone, Copy)]
struct Sums {
    order2: bool,
    seen: usize,
    prev: u64,
    delta: u64,
}

impl Sums {
    fn new(order: u8) -> Self {
        Self {
            order2: order == 2,
            seen: 0,
            prev: 0,
            delta: 0,
        }
    }

    /// Writes the values of the zigzag `residuals` that come next into `out` (`W` bytes
    /// each, as many as both hold), keeping the running sums in locals, one loop per
    /// order. Residuals are unzigzagged a block at a time in a loop of their own, which
    /// vectorises, so that the summing loop only adds and stores.
    fn write<W: Word>(&mut self, residuals: &[u64], out: &mut [u8]) {
        const BLOCK: usize = 64;
        let n = residuals.len().min(out.len() / W::BYTES);
        let mut prev = self.prev;
        let mut delta = self.delta;
        let mut at = 0;
        if self.order2 {
            // The first two residuals are the first value and the first difference: taken
            // before the loops, which then have no branch.
            while self.seen < 2 && at < n {
                delta = unzigzag(residuals[at]);
                self.seen += 1;
                prev = prev.wrapping_add(delta);
                W::write(prev, &mut out[at * W::BYTES..(at + 1) * W::BYTES]);
                at += 1;
            }
        }
        // Whole vectors where the CPU has a kernel, the rest below.
        at += crate::kernels::sums::sums(
            &residuals[at..n],
            self.order2,
            &mut prev,
            &mut delta,
            W::BYTES,
            &mut out[at * W::BYTES..n * W::BYTES],
        );
        if at == n {
            // All in vectors: no block to zero.
            (self.prev, self.delta) = (prev, delta);
            return;
        }
        let mut block = [0u64; BLOCK];
        let rest = residuals[at..n]
            .chunks(BLOCK)
            .zip(out[at * W::BYTES..n * W::BYTES].chunks_mut(BLOCK * W::BYTES));
        for (residuals, out) in rest {
            let block = &mut block[..residuals.len()];
            for (d, &r) in block.iter_mut().zip(residuals) {
                *d = unzigzag(r);
            }
            let values = block.iter().zip(out.chunks_exact_mut(W::BYTES));
            if self.order2 {
                for (&d, value) in values {
                    delta = delta.wrapping_add(d);
                    prev = prev.wrapping_add(delta);
                    W::write(prev, value);
                }
            } else {
                for (&d, value) in values {
                    prev = prev.wrapping_add(d);
                    W::write(prev, value);
                }
            }
        }
        (self.prev, self.delta) = (prev, delta);
    }
}

/// Dispatches on the value width once per chunk.
macro_rules! by_width {
    ($width:expr, $f:ident($($arg:expr),*)) => {
        match $width {
            1 => $f::<u8>($($arg),*),
            2 => $f::<u16>($($arg),*),
            4 => $f::<u32>($($arg),*),
            8 => $f::<u64>($($arg),*),
            other => unreachable!("delta of {other}-byte values was refused up front"),
        }
    };
}

/// Encodes chunks as zigzag coded differences, byte-stream split.
#[derive(Debug, Clone)]
pub struct DeltaEncoder {
    shape: ChunkShape,
    /// Whether the residual streams are entropy-coded (`delta+ans`).
    entropy_coded: bool,
    /// Entropy-coded: the tables of the page being encoded (see
    /// [`MiniBlockCompressor::for_page`]); none until then.
    tables: PageTables,
    /// Whether the differences are bit-packed (`delta`).
    packed: bool,
    /// How much larger binned residuals may be than byte streams and still be picked.
    bin_margin: f32,
}

impl DeltaEncoder {
    /// An encoder for values of `bits_per_value` bits: 8, 16, 32 or 64.
    pub fn try_new(bits_per_value: u64) -> Result<Self> {
        let shape = ChunkShape::from_bits(bits_per_value)?;
        check_width(shape.width)?;
        Ok(Self {
            shape,
            entropy_coded: false,
            tables: PageTables::default(),
            packed: false,
            bin_margin: entropy::BIN_MARGIN,
        })
    }

    /// The same encoder picking binned residuals up to `margin` larger by estimate than
    /// byte streams (see [`EncoderOptions`](super::EncoderOptions)).
    #[must_use]
    pub(crate) fn with_bin_margin(self, margin: f32) -> Self {
        Self {
            bin_margin: margin,
            ..self
        }
    }

    /// The same encoder with chunks of `chunk_values` values (a power of two up to
    /// 65536) instead of the default 4 KiB.
    pub fn with_chunk_values(self, chunk_values: usize) -> Result<Self> {
        Ok(Self {
            shape: self.shape.with_chunk_values(chunk_values)?,
            ..self
        })
    }

    /// The same encoder, entropy-coding the residual streams (`delta+ans`).
    #[must_use]
    pub fn entropy_coded(self) -> Self {
        Self {
            entropy_coded: true,
            packed: false,
            ..self
        }
    }

    /// The same encoder, bit-packing the differences with a frame of reference (`delta`).
    #[must_use]
    pub fn bit_packed(self) -> Self {
        Self {
            packed: true,
            entropy_coded: false,
            ..self
        }
    }

    /// The order of a chunk and its zigzag residuals, kept in the page's memo: every
    /// delta encoding (and `auto`'s trials of them) derives them alike.
    fn analysis(&self, values: &[u8]) -> Rc<Analysis> {
        let width = self.shape.width;
        memo::analysis(width as u8, values, || {
            let [first, second] = by_width!(width, order_costs(values));
            let order = if second < first { 2 } else { 1 };
            let mut out = vec![0; values.len()];
            by_width!(width, residuals(values, order, &mut out));
            Analysis {
                order,
                residuals: out,
                forms: OnceCell::new(),
            }
        })
    }
}

/// A chunk's order and zigzag residuals (`W` bytes each, value after value).
struct Analysis {
    order: u8,
    residuals: Vec<u8>,
    /// Their symbol counts, once counted for entropy coding.
    forms: OnceCell<entropy::IntForms>,
}

impl Analysis {
    fn forms(&self, width: usize) -> &entropy::IntForms {
        self.forms.get_or_init(|| {
            let words = self
                .residuals
                .chunks_exact(width)
                .map(super::bitpacked::read);
            entropy::IntForms::count(words, 8 * width as u32)
        })
    }
}

impl MiniBlockCompressor for DeltaEncoder {
    fn value_width(&self) -> usize {
        self.shape.width
    }

    fn chunk_values(&self) -> usize {
        self.shape.chunk_values
    }

    fn array_encoding(&self) -> ArrayEncoding {
        ArrayEncoding {
            array_encoding: Some(array_encoding::ArrayEncoding::Delta(Delta {
                bits_per_value: self.shape.width as u64 * 8,
                entropy_coded: self.entropy_coded,
                page_tables: self.tables.to_bytes(),
                bit_packed: self.packed,
            })),
        }
    }

    fn compress_chunk(
        &self,
        values: &[u8],
        out: &mut Vec<u8>,
        scratch: &mut Vec<u8>,
    ) -> Result<ChunkStorage> {
        self.shape.check_chunk(values)?;
        let width = self.shape.width;
        let a = self.analysis(values);
        let start = out.len();
        if self.packed {
            write_packed(values, &a, width, out);
            // Patched blocks where they are smaller, in the order of the zigzag costs.
            let words: Vec<u64> = a
                .residuals
                .chunks_exact(width)
                .map(super::bitpacked::read)
                .collect();
            let (headers, bytes) = super::patched::plan(&words, width);
            if HEADER_BYTES + bytes < out.len() - start {
                out.truncate(start);
                out.push(a.order | BLOCKS_BIT);
                super::patched::write(&words, width, &headers, out);
            }
            return Ok(ChunkStorage::Raw);
        }
        let (order, residuals) = (a.order, &a.residuals[..]);
        if self.entropy_coded {
            // Byte streams or bins, whichever the estimates say is smaller: only it is
            // coded.
            let words = residuals.chunks_exact(width).map(super::bitpacked::read);
            let forms = a.forms(width);
            let plan = forms.plan(&self.tables, true, self.bin_margin);
            if plan.binned {
                out.push(order | ENTROPY_BIT | BINNED_BIT);
                forms.encode_binned(words, &plan, out)?;
            } else {
                out.push(order | ENTROPY_BIT);
                scratch.clear();
                kernels::split_append(residuals, scratch, width);
                for (j, stream) in scratch
                    .chunks_exact((values.len() / width).max(1))
                    .enumerate()
                {
                    forms.encode_stream(j, stream, &plan, out)?;
                }
            }
            if out.len() - start < HEADER_BYTES + values.len() {
                return Ok(ChunkStorage::Raw);
            }
            out.truncate(start);
        }
        out.push(order);
        kernels::split_append(residuals, out, width);
        Ok(ChunkStorage::Raw)
    }

    /// Entropy-coded: an encoder with tables built from the residual streams of
    /// chunks spread over the page, as many as `learn` says (stream j is kind j).
    fn for_page(
        &self,
        values: &[u8],
        learn: Learn,
    ) -> Result<Option<Box<dyn MiniBlockCompressor>>> {
        if !self.entropy_coded {
            return Ok(None);
        }
        let width = self.shape.width;
        let (sample, scale) =
            super::sample_chunks(values, width, self.shape.chunk_values, learn.chunks())?;
        let mut streams: Vec<KindHistogram> = Vec::new();
        for chunk in sample {
            self.analysis(chunk).forms(width).chosen_histograms(
                0,
                Some(BINNED_KIND),
                self.bin_margin,
                &mut streams,
            );
        }
        let tables = PageTables::from_streams(&streams, scale);
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

/// Appends the packed form of `values` (a chunk of `width`-byte values, analysed as `a`):
/// the order that packs smaller, its first residuals and a bitpack chunk of the other
/// differences.
fn write_packed(values: &[u8], a: &Analysis, width: usize, out: &mut Vec<u8>) {
    let order = by_width!(width, packed_order(values, a.order));
    let own;
    let residuals = if order == a.order {
        &a.residuals[..]
    } else {
        own = {
            let mut own = vec![0; values.len()];
            by_width!(width, residuals(values, order, &mut own));
            own
        };
        &own[..]
    };
    out.push(order | PACKED_BIT);
    let first = usize::from(order).min(values.len() / width);
    out.extend_from_slice(&residuals[..first * width]);
    let m = mask(8 * width as u32);
    let differences: Vec<u64> = residuals[first * width..]
        .chunks_exact(width)
        .map(|r| unzigzag(super::bitpacked::read(r)) & m)
        .collect();
    super::bitpacked::write_chunk(&differences, width, out);
}

/// Decodes delta chunks.
#[derive(Debug, Clone)]
pub struct DeltaDecompressor {
    width: usize,
    /// Whether chunks may carry entropy-coded streams, and the page's tables for them.
    entropy_coded: bool,
    tables: PageTables,
    /// Whether chunks carry bit-packed differences.
    packed: bool,
}

/// How a chunk's residuals are stored, as its order byte says; each holds the bytes
/// after the order byte.
#[derive(Clone, Copy)]
enum Residuals<'c> {
    /// Byte-stream split, as they are (exactly `n * W` bytes, checked).
    Split(&'c [u8]),
    /// Entropy-coded byte streams.
    Streams(&'c [u8]),
    /// Entropy-coded bins.
    Binned(&'c [u8]),
    /// The first residuals, then a bitpack chunk of the other differences.
    Packed(&'c [u8]),
    /// Patched blocks of all the residuals.
    Blocks(&'c [u8]),
}

impl DeltaDecompressor {
    /// A decompressor for the pages `delta` describes: values of `bits_per_value` bits
    /// (8, 16, 32 or 64; other widths are unsupported), with the page's entropy tables,
    /// parsed and validated here.
    pub fn new(delta: &Delta) -> Result<Self> {
        let width = width_from_bits(delta.bits_per_value)?;
        check_width(width)?;
        if !delta.entropy_coded && !delta.page_tables.is_empty() {
            return Err(Error::corrupt(
                "delta with page tables but without entropy coding",
            ));
        }
        if delta.entropy_coded && delta.bit_packed {
            return Err(Error::corrupt("delta both entropy-coded and bit-packed"));
        }
        Ok(Self {
            width,
            entropy_coded: delta.entropy_coded,
            tables: PageTables::parse(&delta.page_tables)?,
            packed: delta.bit_packed,
        })
    }

    /// The order of a raw chunk of `num_values` values and how its residuals are stored,
    /// checked as far as the order byte and (stored as they are) the length go.
    fn parse<'c>(
        &self,
        chunk: &'c [u8],
        num_values: usize,
        storage: ChunkStorage,
    ) -> Result<(u8, Residuals<'c>)> {
        if storage != ChunkStorage::Raw {
            return Err(Error::corrupt(
                "delta chunk is marked compressed but the encoding has no compression",
            ));
        }
        let len = checked_len(num_values, self.width)?;
        let Some((&byte, rest)) = chunk.split_first() else {
            return Err(Error::corrupt(format!(
                "delta chunk of {num_values} values is empty"
            )));
        };
        let coded = byte & ENTROPY_BIT != 0 && self.entropy_coded;
        let packed = byte & PACKED_BIT != 0 && self.packed;
        let blocks = byte & BLOCKS_BIT != 0 && self.packed;
        let order = if coded {
            byte & !(ENTROPY_BIT | BINNED_BIT)
        } else if packed {
            byte & !PACKED_BIT
        } else if blocks {
            byte & !BLOCKS_BIT
        } else {
            byte
        };
        if order != 1 && order != 2 {
            return Err(Error::corrupt(format!(
                "delta chunk of order {order} (1 or 2 expected)"
            )));
        }
        if packed {
            return Ok((order, Residuals::Packed(rest)));
        }
        if blocks {
            return Ok((order, Residuals::Blocks(rest)));
        }
        if coded {
            return Ok((
                order,
                if byte & BINNED_BIT != 0 {
                    Residuals::Binned(rest)
                } else {
                    Residuals::Streams(rest)
                },
            ));
        }
        if rest.len() != len {
            return Err(Error::corrupt(format!(
                "delta chunk of {num_values} values must hold {} bytes, found {}",
                HEADER_BYTES + len,
                chunk.len()
            )));
        }
        Ok((order, Residuals::Split(rest)))
    }

    /// Writes the values of a chunk of `num_values` values into `out` (exactly their
    /// bytes): its residuals, decoded through `scratch`, summed `order` times.
    fn values_into(
        &self,
        residuals: Residuals,
        order: u8,
        num_values: usize,
        scratch: &mut Vec<u8>,
        out: &mut [u8],
    ) -> Result<()> {
        let left = match residuals {
            Residuals::Split(split) => {
                kernels::unsplit(split, out, self.width);
                by_width!(self.width, undo(out, order));
                return Ok(());
            }
            Residuals::Streams(mut rest) => {
                // Every stream decodes to all of its bytes.
                let scratch = super::overwritten(scratch, out.len());
                for stream in scratch.chunks_exact_mut(num_values.max(1)) {
                    let used = entropy::decode(rest, stream, &self.tables)?;
                    rest = &rest[used..];
                }
                kernels::unsplit(scratch, out, self.width);
                by_width!(self.width, undo(out, order));
                rest.len()
            }
            Residuals::Packed(rest) => {
                by_width!(self.width, unpack(rest, order, num_values, out))?;
                return Ok(());
            }
            Residuals::Blocks(rest) => {
                if !super::patched::read_into(rest, num_values, self.width, Some(order == 2), out)?
                {
                    by_width!(self.width, undo(out, order));
                }
                return Ok(());
            }
            Residuals::Binned(rest) => {
                // The sums are taken as the residuals are unbinned.
                let symbols = super::overwritten(scratch, num_values);
                let used = by_width!(self.width, unbin(rest, symbols, &self.tables, out, order))?;
                rest.len() - used
            }
        };
        if left != 0 {
            return Err(Self::after_residuals(num_values, left));
        }
        Ok(())
    }

    /// The error of a chunk of `num_values` values with `left` bytes after its residuals.
    fn after_residuals(num_values: usize, left: usize) -> Error {
        Error::corrupt(format!(
            "delta chunk of {num_values} values: {left} bytes after its residuals"
        ))
    }
}

impl DeltaDecompressor {
    /// Decodes chunks `chunks[k]` of `counts[k]` values each into `out`, their values back
    /// to back (checked to fit by the caller), the coded streams of many chunks at a time
    /// side by side.
    fn coded_chunks_into(
        &self,
        chunks: &[&[u8]],
        counts: &[usize],
        out: &mut [u8],
        scratch: &mut Vec<u8>,
    ) -> Result<()> {
        let mut out = out;
        for (first, group, group_counts) in super::stream_groups(chunks, counts) {
            let named = |k: usize| move |e| in_run_chunk(e, first + k);
            // Chunks of coded residuals (one stream of bin symbols, or a coded stream per
            // byte of the values) wait for their streams to be decoded together; the
            // others decode now.
            let mut coded = Vec::with_capacity(group.len());
            let mut inputs: Vec<&[u8]> = Vec::new();
            // The length of each input's decoded stream.
            let mut lens: Vec<usize> = Vec::new();
            for (k, (chunk, &n)) in group.iter().zip(group_counts).enumerate() {
                let (this, after) = std::mem::take(&mut out).split_at_mut(n * self.width);
                out = after;
                let (order, residuals) =
                    self.parse(chunk, n, ChunkStorage::Raw).map_err(named(k))?;
                match residuals {
                    Residuals::Binned(rest) => {
                        coded.push((k, n, order, Some(rest), inputs.len(), this));
                        inputs.push(rest);
                        lens.push(n);
                    }
                    Residuals::Streams(mut rest) => {
                        coded.push((k, n, order, None, inputs.len(), this));
                        for _ in 0..self.width {
                            let used = entropy::coded_len(rest, n).map_err(named(k))?;
                            inputs.push(&rest[..used]);
                            lens.push(n);
                            rest = &rest[used..];
                        }
                        if !rest.is_empty() {
                            return Err(named(k)(Self::after_residuals(n, rest.len())));
                        }
                    }
                    other => self
                        .values_into(other, order, n, scratch, this)
                        .map_err(named(k))?,
                }
            }
            // Each input's decoded stream starts where the ones before it end.
            let starts: Vec<usize> = lens
                .iter()
                .scan(0, |at, &len| {
                    let start = *at;
                    *at += len;
                    Some(start)
                })
                .collect();
            let total: usize = lens.iter().sum();
            let decoded = super::overwritten(scratch, total);
            let used = {
                let mut outs = super::cut_mut(decoded, lens.iter().copied());
                entropy::decode_many(&inputs, &mut outs, &self.tables)?
            };
            // Streams `from..to`, decoded, back to back.
            let streams_of = |from: usize, to: usize| {
                &decoded[starts[from]..starts.get(to).copied().unwrap_or(total)]
            };
            for (k, n, order, binned, at, out) in coded {
                if let Some(rest) = binned {
                    let symbols = streams_of(at, at + 1);
                    let reader =
                        entropy::Unbinner::decoded(rest, symbols, used[at], 8 * self.width as u32);
                    let taken = by_width!(self.width, sum_unbinned(reader, out, order))
                        .map_err(named(k))?;
                    if taken != rest.len() {
                        return Err(named(k)(Self::after_residuals(n, rest.len() - taken)));
                    }
                    continue;
                }
                // Each stream was cut at the length its header gives, which decoding it
                // must have taken whole.
                let end = at + self.width;
                if let Some(i) = (at..end).find(|&i| used[i] != inputs[i].len()) {
                    return Err(named(k)(Error::corrupt(format!(
                        "delta chunk of {n} values: byte stream {} took {} of its {} bytes",
                        i - at,
                        used[i],
                        inputs[i].len()
                    ))));
                }
                kernels::unsplit(streams_of(at, end), out, self.width);
                by_width!(self.width, undo(out, order));
            }
        }
        Ok(())
    }
}

impl MiniBlockDecompressor for DeltaDecompressor {
    fn value_width(&self) -> usize {
        self.width
    }

    fn max_expansion(&self) -> usize {
        1
    }

    fn raw_len_range(&self, num_values: usize) -> Option<(usize, usize)> {
        let len = num_values
            .saturating_mul(self.width)
            .saturating_add(HEADER_BYTES);
        if self.entropy_coded {
            // From one constant bin stream (three bytes in all) to every byte stream raw
            // (one more byte each); the encoder stores larger chunks as residuals.
            Some((len.min(MIN_CODED_BYTES), len.saturating_add(self.width)))
        } else if self.packed {
            // From the order byte and one block header (patched blocks of zeros) to the
            // order byte, a bitpack header, up to two full residuals and a reference more
            // than the values; the encoder keeps the smaller form.
            Some((2, len.saturating_add(1 + 3 * self.width)))
        } else {
            Some((len, len))
        }
    }

    fn raw_expansion(&self) -> usize {
        if self.entropy_coded {
            super::MAX_CHUNK_VALUES * self.width / MIN_CODED_BYTES
        } else if self.packed {
            super::MAX_CHUNK_VALUES
        } else {
            1
        }
    }

    fn decompress_into(
        &self,
        chunk: &[u8],
        num_values: usize,
        storage: ChunkStorage,
        out: &mut [u8],
        scratch: &mut Vec<u8>,
    ) -> Result<()> {
        check_output(out, num_values, self.width)?;
        let (order, residuals) = self.parse(chunk, num_values, storage)?;
        self.values_into(residuals, order, num_values, scratch, out)
    }

    fn decompress_chunks_into(
        &self,
        chunks: &[&[u8]],
        num_values: usize,
        out: &mut [u8],
        scratch: &mut Vec<u8>,
    ) -> Result<()> {
        if !self.entropy_coded || !kernels::tans::has_kernel() || num_values == 0 {
            return super::decompress_each(self, chunks, num_values, out, scratch);
        }
        check_chunks_output(chunks.len(), num_values, self.width, out)?;
        self.coded_chunks_into(chunks, &vec![num_values; chunks.len()], out, scratch)
    }

    fn decompress_counted_chunks_into(
        &self,
        chunks: &[&[u8]],
        counts: &[usize],
        out: &mut [u8],
        scratch: &mut Vec<u8>,
    ) -> Result<()> {
        check_counted_chunks_output(chunks.len(), counts, self.width, out)?;
        if !self.entropy_coded || !kernels::tans::has_kernel() {
            return super::decompress_each_counted(self, chunks, counts, out, scratch);
        }
        self.coded_chunks_into(chunks, counts, out, scratch)
    }

    fn decompress_append(
        &self,
        chunk: &[u8],
        num_values: usize,
        storage: ChunkStorage,
        out: &mut MutableBuffer,
        scratch: &mut Vec<u8>,
    ) -> Result<()> {
        let (order, residuals) = self.parse(chunk, num_values, storage)?;
        let start = out.len();
        match residuals {
            Residuals::Split(split) => {
                kernels::unsplit_append(split, out, self.width);
                by_width!(self.width, undo(&mut out.as_slice_mut()[start..], order));
                Ok(())
            }
            // On an error `out` keeps its length, as the trait promises.
            coded => append_zeroed(out, checked_len(num_values, self.width)?, |out| {
                self.values_into(coded, order, num_values, scratch, out)
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encodings::xorshift;

    /// The packed form takes the order that packs smaller: first differences for a steady
    /// step with jitter (whose second differences have the smaller zigzag codes), second
    /// differences for a smooth curve.
    #[test]
    fn packed_order_follows_the_packed_size() {
        let mut x = 7u64;
        let mut t = 1_700_000_000_000i64;
        let steps: Vec<u8> = (0..512)
            .flat_map(|_| {
                t += 950 + (xorshift(&mut x) % 101).cast_signed();
                t.to_le_bytes()
            })
            .collect();
        let curve: Vec<u8> = (0..512i64)
            .flat_map(|i| {
                (1_000_000 + i * i * 3 + (xorshift(&mut x) % 4).cast_signed()).to_le_bytes()
            })
            .collect();
        let message = DeltaEncoder::try_new(64)
            .unwrap()
            .bit_packed()
            .array_encoding();
        let decoder = crate::encodings::decompressor_for(&message, &[]).unwrap();
        for (values, order, most_bits) in [(&steps, 1, 7), (&curve, 2, 4)] {
            let mut chunk = Vec::new();
            DeltaEncoder::try_new(64)
                .unwrap()
                .bit_packed()
                .compress_chunk(values, &mut chunk, &mut Vec::new())
                .unwrap();
            assert_eq!(chunk[0], order | PACKED_BIT);
            let first = usize::from(order);
            let bits = chunk[1 + 8 * first] & 0x7F;
            assert!(bits <= most_bits, "order {order}: {bits} bits");
            assert_eq!(
                decoder.decompress(&chunk, 512, ChunkStorage::Raw).unwrap(),
                *values
            );
        }
    }

    #[test]
    fn packed_worked_example() {
        let values: Vec<u8> = [1.0f32, 1.5, 2.0, 2.5]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let encoder = DeltaEncoder::try_new(32).unwrap().bit_packed();
        let mut chunk = Vec::new();
        write_packed(&values, &encoder.analysis(&values), 4, &mut chunk);
        assert_eq!(
            chunk,
            [0x21, 0, 0, 0, 0x7F, 0x16, 0, 0, 0x20, 0, 0, 0, 0x20, 0, 0, 0x08, 0, 0, 0]
        );
        // The encoder keeps the smaller patched blocks: order 2 (the zigzag costs'), one
        // block of 24 bits with the first value patched.
        let mut blocks = Vec::new();
        encoder
            .compress_chunk(&values, &mut blocks, &mut Vec::new())
            .unwrap();
        assert_eq!(blocks[..2], [2 | BLOCKS_BIT, 33 + 24]);
        assert!(blocks.len() < chunk.len(), "{blocks:?}");
        let message = DeltaEncoder::try_new(32)
            .unwrap()
            .bit_packed()
            .array_encoding();
        let decoder = crate::encodings::decompressor_for(&message, &[]).unwrap();
        assert_eq!(
            decoder.decompress(&chunk, 4, ChunkStorage::Raw).unwrap(),
            values
        );
        // Every prefix and a byte more are refused.
        for cut in 0..chunk.len() {
            assert!(decoder
                .decompress(&chunk[..cut], 4, ChunkStorage::Raw)
                .is_err());
        }
        let mut long = chunk.clone();
        long.push(0);
        assert!(decoder.decompress(&long, 4, ChunkStorage::Raw).is_err());
    }

    #[test]
    fn worked_example() {
        let values: Vec<u8> = [1.0f32, 1.5, 2.0, 2.5]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let mut chunk = Vec::new();
        DeltaEncoder::try_new(32)
            .unwrap()
            .compress_chunk(&values, &mut chunk, &mut Vec::new())
            .unwrap();
        assert_eq!(
            chunk,
            [2, 0, 0, 0, 0xFF, 0, 0, 0, 0xFF, 0, 0x80, 0, 0x3F, 0x7F, 0, 0, 0]
        );
    }

    fn decompressor(bits_per_value: u64) -> Result<DeltaDecompressor> {
        DeltaDecompressor::new(&Delta {
            bits_per_value,
            ..Delta::default()
        })
    }

    /// `chunk` of `n` values decodes to `values` through `decoder`, has a length its
    /// range allows, and every prefix of it is an error, never a panic (appending, a
    /// failed chunk leaves the buffer as it was).
    fn decodes_and_refuses_prefixes(
        decoder: &DeltaDecompressor,
        chunk: &[u8],
        n: usize,
        values: &[u8],
    ) {
        let (min, max) = decoder.raw_len_range(n).unwrap();
        assert!((min..=max).contains(&chunk.len()));
        let mut out = vec![0; values.len()];
        decoder
            .decompress_into(chunk, n, ChunkStorage::Raw, &mut out, &mut Vec::new())
            .unwrap();
        assert_eq!(out, values);
        // Every prefix is an error, never a panic.
        for len in 0..chunk.len() {
            assert!(decoder
                .decompress_into(
                    &chunk[..len],
                    n,
                    ChunkStorage::Raw,
                    &mut out,
                    &mut Vec::new()
                )
                .is_err());
            // Appending, a failed chunk leaves the buffer as it was.
            let mut appended = MutableBuffer::new(0);
            appended.extend_from_slice(&[7u8, 8, 9]);
            assert!(decoder
                .decompress_append(
                    &chunk[..len],
                    n,
                    ChunkStorage::Raw,
                    &mut appended,
                    &mut Vec::new()
                )
                .is_err());
            assert_eq!(appended.as_slice(), [7, 8, 9]);
        }
    }

    /// The chunk `delta+ans` writes for `values` with tables made for them, decoded back
    /// through its message.
    fn round_trip_coded(values: &[u8], width: usize) -> Vec<u8> {
        let encoder = DeltaEncoder::try_new(width as u64 * 8)
            .and_then(|e| e.with_chunk_values(4096))
            .unwrap()
            .entropy_coded();
        let page = encoder.for_page(values, Learn::Page).unwrap();
        let encoder: &dyn MiniBlockCompressor = page.as_deref().unwrap_or(&encoder);
        let Some(array_encoding::ArrayEncoding::Delta(message)) =
            encoder.array_encoding().array_encoding
        else {
            panic!("not delta")
        };
        assert!(message.entropy_coded);
        let decoder = DeltaDecompressor::new(&message).unwrap();
        let mut chunk = Vec::new();
        encoder
            .compress_chunk(values, &mut chunk, &mut Vec::new())
            .unwrap();
        assert!(chunk.len() <= HEADER_BYTES + values.len());
        decodes_and_refuses_prefixes(&decoder, &chunk, values.len() / width, values);
        chunk
    }

    fn round_trip(values: &[u8], width: usize) -> Vec<u8> {
        round_trip_coded(values, width);
        let encoder = DeltaEncoder::try_new(width as u64 * 8)
            .and_then(|e| e.with_chunk_values(4096))
            .unwrap();
        let decoder = decompressor(width as u64 * 8).unwrap();
        let mut chunk = Vec::new();
        encoder
            .compress_chunk(values, &mut chunk, &mut Vec::new())
            .unwrap();
        assert_eq!(chunk.len(), HEADER_BYTES + values.len());
        let n = values.len() / width;
        let mut out = vec![0; values.len()];
        decoder
            .decompress_into(&chunk, n, ChunkStorage::Raw, &mut out, &mut Vec::new())
            .unwrap();
        let mut appended = MutableBuffer::new(0);
        appended.extend_from_slice(&[9u8]);
        decoder
            .decompress_append(&chunk, n, ChunkStorage::Raw, &mut appended, &mut Vec::new())
            .unwrap();
        assert_eq!(&appended.as_slice()[1..], &out[..]);
        chunk
    }

    /// Every width, both orders, extreme integers and float bit patterns come back.
    #[test]
    fn sums_carry_over_calls_of_every_length() {
        // Residuals around block boundaries, summed in one call and in calls cut at
        // every length up to 70, against the running sums computed directly.
        let mut x = 0x2545_F491_4F6C_DD1D_u64;
        let residuals: Vec<u64> = (0..300)
            .map(|_| {
                let x = crate::encodings::xorshift(&mut x);
                x >> (x % 64)
            })
            .collect();
        for order in [1u8, 2] {
            let (mut prev, mut delta) = (0u64, 0u64);
            let want: Vec<u8> = residuals
                .iter()
                .enumerate()
                .flat_map(|(i, &r)| {
                    let d = unzigzag(r);
                    if order == 1 || i < 2 {
                        delta = d;
                        prev = prev.wrapping_add(d);
                    } else {
                        delta = delta.wrapping_add(d);
                        prev = prev.wrapping_add(delta);
                    }
                    (prev as u32).to_le_bytes()
                })
                .collect();
            for cut in 1..=70 {
                let mut sums = Sums::new(order);
                let mut got = vec![0u8; want.len()];
                for (r, out) in residuals.chunks(cut).zip(got.chunks_mut(cut * 4)) {
                    sums.write::<u32>(r, out);
                }
                assert_eq!(got, want, "order {order}, calls of {cut}");
            }
        }
    }

    #[test]
    fn every_width_and_order_round_trips() {
        let mut x = 0x9E37_79B9_7F4A_7C15_u64;
        for width in [1, 2, 4, 8] {
            for n in [0, 1, 2, 3, 17, 1024] {
                // Smooth (order 2 wins), steps (order 1 wins), random and extremes.
                let series: [Box<dyn Fn(usize) -> u64>; 4] = [
                    Box::new(|i| (i * i) as u64),
                    Box::new(|i| (i / 3) as u64),
                    Box::new(|i| {
                        (i as u64 ^ 0x5555).wrapping_mul(0x2545_F491_4F6C_DD1D) >> (i % 7)
                    }),
                    Box::new(|i| if i % 2 == 0 { u64::MAX } else { 1 << 63 }),
                ];
                for f in &series {
                    let values: Vec<u8> = (0..n)
                        .flat_map(|i| f(i).to_le_bytes()[..width].to_vec())
                        .collect();
                    round_trip(&values, width);
                }
                let random: Vec<u8> = (0..n * width)
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        x as u8
                    })
                    .collect();
                round_trip(&random, width);
            }
        }
    }

    #[test]
    fn smooth_values_take_order_two_and_steps_order_one() {
        let smooth: Vec<u8> = (0..512u64)
            .flat_map(|i| (1_000_000 + i * i).to_le_bytes())
            .collect();
        assert_eq!(round_trip(&smooth, 8)[0], 2);
        let steps: Vec<u8> = (0..512u64)
            .flat_map(|i| (1_000_000 + (i / 5) * 1000).to_le_bytes())
            .collect();
        assert_eq!(round_trip(&steps, 8)[0], 1);
        // Entropy-coded: the order's bit 7 set, and smaller than the residuals.
        let coded = round_trip_coded(&smooth, 8);
        assert_eq!(coded[0] & !BINNED_BIT, 2 | ENTROPY_BIT);
        assert!(coded.len() < smooth.len() / 4, "{}", coded.len());
    }

    /// Noise of varying magnitude on a slow trend takes the binned form and comes back; a
    /// bin symbol no residual of the width has, and low bits one byte too few or too
    /// many, are corrupt.
    #[test]
    fn noisy_residuals_are_binned() {
        let mut x = 0x2545_F491_4F6C_DD1D_u64;
        // Narrower values have one or two streams, which code them about as well as bins.
        for width in [4usize, 8] {
            let values: Vec<u8> = (0..1024u64)
                .flat_map(|i| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    // Magnitudes spread over 4 to 20 bits, as measurement noise is.
                    let noise = (x % (1 << 20)) >> ((x >> 40) % 16);
                    (i * 3 + noise).to_le_bytes()[..width].to_vec()
                })
                .collect();
            let coded = round_trip_coded(&values, width);
            assert_eq!(
                coded[0] & (ENTROPY_BIT | BINNED_BIT),
                ENTROPY_BIT | BINNED_BIT,
                "{width}"
            );
        }
        let decoder = DeltaDecompressor::new(&Delta {
            bits_per_value: 8,
            entropy_coded: true,
            page_tables: Vec::new(),
            bit_packed: false,
        })
        .unwrap();
        let mut out = vec![0; 4];
        let decode = |chunk: &[u8], out: &mut [u8]| {
            decoder.decompress_into(chunk, 4, ChunkStorage::Raw, out, &mut Vec::new())
        };
        // A raw symbol stream: four values in bins 1, 2, 17 (9 << 1, one low bit) and 47
        // (15 << 4, four low bits), the low bits 1 and 1111.
        let raw_symbols = [0, 1, 2, 17, 47];
        let good: Vec<u8> = [&[1 | ENTROPY_BIT | BINNED_BIT][..], &raw_symbols, &[0x1F]].concat();
        decode(&good, &mut out).unwrap();
        // Residuals 1, 2, (9 << 1) | 1 = 19 and (15 << 4) | 15 = 255, zigzag coded:
        // -1, 1, -10, -128, summed from 0 wrapping at 8 bits.
        assert_eq!(out, [255, 0, 246, 118]);
        for bad in [
            [
                &[1 | ENTROPY_BIT | BINNED_BIT][..],
                &[0, 1, 2, 17, 48],
                &[0x1F],
            ]
            .concat(),
            [&[1 | ENTROPY_BIT | BINNED_BIT][..], &raw_symbols].concat(),
            [
                &[1 | ENTROPY_BIT | BINNED_BIT][..],
                &raw_symbols,
                &[0x1F, 0],
            ]
            .concat(),
            [&[3 | ENTROPY_BIT | BINNED_BIT][..], &raw_symbols, &[0x1F]].concat(),
        ] {
            let err = decode(&bad, &mut out).unwrap_err();
            assert_eq!(err.kind(), crate::error::ErrorKind::Corrupt, "{bad:?}");
        }
    }

    /// A run of chunks of every form `delta+ans` writes (bins, coded byte streams, split
    /// residuals) decodes through `decompress_chunks_into` as chunk after chunk does, and
    /// damaged runs fail there exactly when a chunk of them fails alone.
    #[test]
    fn runs_of_mixed_chunks_decode_as_one_at_a_time() {
        let mut x = 0x2545_F491_4F6C_DD1D_u64;
        for (width, n) in [(4usize, 1024usize), (8, 512)] {
            let mut values = Vec::new();
            let mut v = 1_000_000u64;
            for c in 0..24 {
                for _ in 0..n {
                    let r = xorshift(&mut x);
                    v = v.wrapping_add(match c % 3 {
                        // Noise of many magnitudes: bins.
                        0 => (r % (1 << 20)) >> ((r >> 40) % 16),
                        // Steps from a few values, whose bytes repeat: byte streams.
                        1 => [3, 77, 200, 1000, 40_000, 77, 3, 3][(r % 8) as usize],
                        // Noise over every bit: split residuals, stored as they are.
                        _ => r,
                    });
                    values.extend_from_slice(&v.to_le_bytes()[..width]);
                }
            }
            let encoder = DeltaEncoder::try_new(width as u64 * 8)
                .and_then(|e| e.with_chunk_values(n))
                .unwrap()
                .entropy_coded();
            let page = encoder.for_page(&values, Learn::Page).unwrap();
            let encoder: &dyn MiniBlockCompressor = page.as_deref().unwrap_or(&encoder);
            let Some(array_encoding::ArrayEncoding::Delta(message)) =
                encoder.array_encoding().array_encoding
            else {
                panic!("not delta")
            };
            let decoder = DeltaDecompressor::new(&message).unwrap();
            let chunks: Vec<Vec<u8>> = values
                .chunks(n * width)
                .map(|v| {
                    let mut chunk = Vec::new();
                    encoder
                        .compress_chunk(v, &mut chunk, &mut Vec::new())
                        .unwrap();
                    chunk
                })
                .collect();
            let forms: Vec<u8> = chunks
                .iter()
                .map(|c| c[0] & (ENTROPY_BIT | BINNED_BIT))
                .collect();
            for form in [ENTROPY_BIT | BINNED_BIT, ENTROPY_BIT, 0] {
                assert!(
                    forms.contains(&form),
                    "width {width}: no form {form} in {forms:?}"
                );
            }
            let each = |chunks: &[Vec<u8>]| -> Vec<Result<Vec<u8>>> {
                chunks
                    .iter()
                    .map(|c| {
                        let mut out = vec![0; n * width];
                        decoder
                            .decompress_into(c, n, ChunkStorage::Raw, &mut out, &mut Vec::new())
                            .map(|()| out)
                    })
                    .collect()
            };
            let run = |chunks: &[Vec<u8>]| -> Result<Vec<u8>> {
                let slices: Vec<&[u8]> = chunks.iter().map(Vec::as_slice).collect();
                let mut out = vec![0; n * width * chunks.len()];
                let mut scratch = vec![0xEE; 3];
                decoder
                    .decompress_chunks_into(&slices, n, &mut out, &mut scratch)
                    .map(|()| out)
            };
            assert_eq!(run(&chunks).unwrap(), values, "width {width}");
            let mut failed = 0;
            for _ in 0..300 {
                let mut damaged = chunks.clone();
                let k = (xorshift(&mut x) % damaged.len() as u64) as usize;
                let r = xorshift(&mut x);
                let chunk = &mut damaged[k];
                match r % 3 {
                    0 => chunk.truncate((r >> 8) as usize % chunk.len()),
                    1 => chunk.push((r >> 8) as u8),
                    _ => {
                        let at = (r >> 8) as usize % chunk.len();
                        chunk[at] ^= 1 << ((r >> 40) % 8);
                    }
                }
                let alone: Result<Vec<Vec<u8>>> = each(&damaged).into_iter().collect();
                match (run(&damaged), alone) {
                    (Ok(whole), Ok(parts)) => assert_eq!(whole, parts.concat()),
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

    /// A smooth series that crosses zero (a geoid's heights) packs in patched blocks: the
    /// order byte says so, it is smaller than the frame of reference would be, and it
    /// round-trips by bits in both orders and every width of float, through the kernel
    /// where the CPU has one; every prefix is an error, never a panic.
    #[test]
    fn zero_crossing_series_take_patched_blocks() {
        let mut x = 11u64;
        let curve = |i: usize, x: &mut u64| {
            (i as f64 / 40.0).sin() * 3.0 + (xorshift(x) % 1000) as f64 * 1e-7
        };
        for (bits, values) in [
            (
                32u64,
                (0..1024)
                    .flat_map(|i| (curve(i, &mut x) as f32).to_le_bytes())
                    .collect::<Vec<u8>>(),
            ),
            (
                64,
                (0..512)
                    .flat_map(|i| curve(i, &mut x).to_le_bytes())
                    .collect::<Vec<u8>>(),
            ),
        ] {
            let width = (bits / 8) as usize;
            let n = values.len() / width;
            let encoder = DeltaEncoder::try_new(bits).unwrap().bit_packed();
            let Some(array_encoding::ArrayEncoding::Delta(message)) =
                encoder.array_encoding().array_encoding
            else {
                panic!("not delta")
            };
            let decoder = DeltaDecompressor::new(&message).unwrap();
            for order in [1u8, 2] {
                let mut chunk = Vec::new();
                let analysis = encoder.analysis(&values);
                // The chunk of this order: the analysis's own, or the same values' other
                // residuals written by hand the way the encoder writes them.
                if analysis.order == order {
                    encoder
                        .compress_chunk(&values, &mut chunk, &mut Vec::new())
                        .unwrap();
                } else {
                    let mut own = vec![0; values.len()];
                    by_width!(width, residuals(&values, order, &mut own));
                    let words: Vec<u64> = own
                        .chunks_exact(width)
                        .map(super::super::bitpacked::read)
                        .collect();
                    let (headers, _) = super::super::patched::plan(&words, width);
                    chunk.push(order | BLOCKS_BIT);
                    super::super::patched::write(&words, width, &headers, &mut chunk);
                }
                assert_eq!(chunk[0], order | BLOCKS_BIT, "{bits}-bit order {order}");
                assert!(chunk.len() < values.len(), "{} bytes", chunk.len());
                decodes_and_refuses_prefixes(&decoder, &chunk, n, &values);
            }
        }
        // Patched blocks on a page that is not bit-packed are an unknown order.
        let decoder = decompressor(32).unwrap();
        let err = decoder
            .decompress_into(
                &[0x11, 0, 0, 0],
                1,
                ChunkStorage::Raw,
                &mut [0; 4],
                &mut Vec::new(),
            )
            .unwrap_err();
        assert_eq!(err.kind(), crate::error::ErrorKind::Corrupt);
    }

    #[test]
    fn hostile_chunks_are_corrupt() {
        let decoder = decompressor(32).unwrap();
        let mut out = vec![0; 8];
        for chunk in [
            &[][..],
            &[1, 0, 0, 0, 0, 0, 0, 0][..],
            &[3, 0, 0, 0, 0, 0, 0, 0, 0][..],
            &[0, 0, 0, 0, 0, 0, 0, 0, 0][..],
            &[2, 0, 0, 0, 0, 0, 0, 0, 0, 0][..],
        ] {
            let err = decoder
                .decompress_into(chunk, 2, ChunkStorage::Raw, &mut out, &mut Vec::new())
                .unwrap_err();
            assert_eq!(err.kind(), crate::error::ErrorKind::Corrupt, "{chunk:?}");
        }
        let ok = [1, 0, 0, 0, 0, 0, 0, 0, 0];
        assert!(decoder
            .decompress_into(&ok, 2, ChunkStorage::Compressed, &mut out, &mut Vec::new())
            .is_err());
        assert!(decompressor(40).is_err());
        // Bit 7 on a page that is not entropy-coded is an unknown order.
        let coded = [0x81, 1, 0, 1, 0, 1, 0, 1, 0];
        let err = decoder
            .decompress_into(&coded, 2, ChunkStorage::Raw, &mut out, &mut Vec::new())
            .unwrap_err();
        assert_eq!(err.kind(), crate::error::ErrorKind::Corrupt);
        assert!(DeltaEncoder::try_new(24).is_err());
    }
}
