//! Miniblock encodings: compressor/decompressor pairs that turn one chunk of fixed-width
//! values into bytes and back.
//!
//! A [`MiniBlockCompressor`] encodes a page's values chunk by chunk and says, with a
//! protobuf [`ArrayEncoding`], how to decode them; a [`MiniBlockDecompressor`], built from
//! that message by [`decompressor_for`], decodes one chunk given its bytes and value count.
//! The chunking itself (how many values each chunk holds) is decided in one place,
//! [`ChunkPlan`], so layered encodings can never disagree on it.
//!
//! | module | encoding | `ArrayEncoding` |
//! |---|---|---|
//! | `flat` | values as they are | `flat { bits_per_value }` |
//! | `byte_stream_split` | chunk-local byte stream split | `byte_stream_split { bits_per_value }` |
//! | `alp` | decimal floats as integers, bit-packed or in byte streams (entropy-coded with `entropy` and the page's tables, or under a general compressor), with exceptions | `alp { bits_per_value, entropy_coded, page_tables }` (ours: field 100) |
//! | `alp_rd` | floats that are not decimals: each value's front bits through a chunk dictionary of at most 8, the rest bit-packed, with exceptions | `alp_rd { bits_per_value }` (ours: field 102) |
//! | `bitpacked` | integers: each chunk's minimum and every value's offset from it, bit-packed | `bitpack { bits_per_value }` (ours: field 103) |
//! | `dictionary` | the page's distinct values in a page buffer, each chunk's indices bit-packed | Lance's `dictionary { indices, items, num_dictionary_items }` (field 7) |
//! | `delta` | values as integers, differenced, zigzag coded, byte-stream split (or, `delta+ans`, entropy-coded as byte streams or bins; or, `delta`, bit-packed with a frame of reference or in patched blocks, `patched`) | `delta { bits_per_value, entropy_coded, page_tables, bit_packed }` (ours: field 101) |
//! | `general` | LZ4 or Zstd over each chunk of an inner encoding | `general_mini_block { inner, compression }` |
//!
//! Values are any fixed width (1 to [`MAX_VALUE_WIDTH`] bytes): floats, integers, dates,
//! decimals and fixed-size binaries all go through the same code; `bits_per_value` in the
//! message says the width.

mod alp;
mod alp_rd;
pub(crate) mod auto;
mod bitpacked;
mod byte_stream_split;
mod delta;
mod dictionary;
mod fill;
// Public for the `entropy` fuzz target, which drives the coder on its own; not a way to
// encode a page.
#[doc(hidden)]
pub mod entropy;
mod flat;
pub(crate) mod general;
pub(crate) mod memo;
mod patched;
mod repeats;

use std::fmt;
use std::str::FromStr;

use arrow_buffer::MutableBuffer;

use crate::error::{Error, Result};
use crate::proto::encodings::{array_encoding, ArrayEncoding};

use alp::{AlpDecompressor, AlpEncoder, IntLayout};
use alp_rd::{AlpRdDecompressor, AlpRdEncoder};
pub use auto::{AutoChooser, AutoOptions, Choice, Strategy, DEFAULT_MIN_GAIN};
use bitpacked::{BitpackDecompressor, BitpackEncoder};
use byte_stream_split::{ByteStreamSplitDecompressor, ByteStreamSplitEncoder};
use delta::{DeltaDecompressor, DeltaEncoder};
use dictionary::{DictionaryDecompressor, DictionaryEncoder};
pub use fill::FillCompressor;
use fill::FillDecompressor;
use flat::{FlatDecompressor, FlatEncoder};
pub use general::CompressionScheme;
use general::{GeneralMiniBlockCompressor, GeneralMiniBlockDecompressor};

/// How many times its stored size a compressed chunk may claim to decode to before the
/// claim is verified instead of allocated (and how much a page decoder reserves up front
/// at most): typical data fits, and a lying chunk table cannot make a reader allocate much
/// more than the bytes it holds.
pub const TRUSTED_EXPANSION: usize = 32;

/// Largest decoded chunk, in bytes, that an encoder writes and a decoder accepts
/// (`chunk_values * value_width`): 1 GiB, so no chunk table can claim more than an encoder
/// would ever have written.
pub const MAX_CHUNK_BYTES: usize = 1 << 30;

/// Bytes in a default chunk: 1024 values of 32 bits, 512 of 64 bits.
pub const CHUNK_BYTES: usize = 4096;

/// Largest value count a single chunk may declare (`log_num_values` at most 16).
pub const MAX_CHUNK_VALUES: usize = 1 << MAX_LOG_NUM_VALUES;

/// Largest `log_num_values` a chunk may declare.
pub const MAX_LOG_NUM_VALUES: u8 = 16;

/// Smallest chunk size, in values, a caller may ask for.
pub const MIN_CHOSEN_CHUNK_VALUES: usize = 256;

/// Widest value, in bytes, an encoding accepts (a `FixedSizeBinary(65536)`).
pub const MAX_VALUE_WIDTH: usize = 1 << 16;

/// The default chunk size, in values, for values of `width` bytes: the largest power of
/// two whose chunk fits [`CHUNK_BYTES`] (1024 for 4-byte values, 512 for 8-byte ones),
/// at least 2.
pub fn default_chunk_values(width: usize) -> usize {
    let fit = (CHUNK_BYTES / width.max(1)).max(2);
    1 << fit.ilog2()
}

/// Checks a caller's chunk size: a power of two from 256 to 65536 values.
pub fn check_chunk_values(chunk_values: usize) -> Result<()> {
    if chunk_values.is_power_of_two()
        && (MIN_CHOSEN_CHUNK_VALUES..=MAX_CHUNK_VALUES).contains(&chunk_values)
    {
        Ok(())
    } else {
        Err(Error::invalid(format!(
            "chunk size must be a power of two from {MIN_CHOSEN_CHUNK_VALUES} to {MAX_CHUNK_VALUES} values, got {chunk_values}"
        )))
    }
}

/// How a chunk's value bytes are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChunkStorage {
    /// As the (innermost) encoding wrote them.
    Raw,
    /// Compressed by the page's general compression scheme.
    Compressed,
}

/// How a page of `num_values` values is cut into chunks: every chunk but the last holds
/// `chunk_values` (a power of two), the last holds the rest, and no chunk is empty.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkPlan {
    num_values: usize,
    chunk_values: usize,
}

impl ChunkPlan {
    /// A plan for `num_values` values in chunks of `chunk_values`.
    pub fn new(num_values: usize, chunk_values: usize) -> Result<Self> {
        if !chunk_values.is_power_of_two() || !(2..=MAX_CHUNK_VALUES).contains(&chunk_values) {
            return Err(Error::invalid(format!(
                "chunk size must be a power of two from 2 to {MAX_CHUNK_VALUES} values, got {chunk_values}"
            )));
        }
        Ok(Self {
            num_values,
            chunk_values,
        })
    }

    /// Number of chunks (zero for an empty page).
    pub fn num_chunks(&self) -> usize {
        self.num_values.div_ceil(self.chunk_values)
    }

    /// Rows of chunk `index`, and its `log_num_values` (0 for the last chunk).
    pub fn chunk(&self, index: usize) -> (std::ops::Range<usize>, u8) {
        let start = index * self.chunk_values;
        let end = (start + self.chunk_values).min(self.num_values);
        let log = if index + 1 == self.num_chunks() {
            0
        } else {
            self.chunk_values.trailing_zeros() as u8
        };
        (start..end, log)
    }
}

/// The chunks of a page of `values` that an encoding learns its page tables from: all of
/// them up to `max`, else `max` spread evenly; and how many chunks each stands for.
pub(crate) fn sample_chunks(
    values: &[u8],
    width: usize,
    chunk_values: usize,
    max: usize,
) -> Result<(Vec<&[u8]>, f64)> {
    let plan = ChunkPlan::new(values.len() / width, chunk_values)?;
    let chunks = plan.num_chunks();
    let sampled = chunks.min(max);
    let sample = (0..sampled)
        .map(|i| {
            let (rows, _) = plan.chunk(i * chunks / sampled);
            values
                .get(rows.start * width..rows.end * width)
                .ok_or_else(|| Error::invalid("page values shorter than their chunks"))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((sample, chunks as f64 / sampled.max(1) as f64))
}

/// How much of a page [`MiniBlockCompressor::for_page`] learns from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Learn {
    /// Up to 64 chunks spread over the page: enough to estimate what the encoding makes
    /// of the page, which is what `auto`'s trials need of it.
    Sample,
    /// Up to 256 chunks (every chunk of a 1 MiB page of 4 KiB chunks): the page's own
    /// tables, holding the rare symbols of chunks a sample would miss, which would
    /// otherwise carry tables of their own that each of their decoders builds. `auto`
    /// asks for them only when a sample's tables say they would differ
    /// ([`MiniBlockCompressor::would_learn_more`]): they cost a pass over four times
    /// the chunks.
    Page,
}

impl Learn {
    /// Most chunks learnt from.
    pub(crate) fn chunks(self) -> usize {
        match self {
            Learn::Sample => 64,
            Learn::Page => 256,
        }
    }
}

/// Encodes chunks of fixed-width values.
pub trait MiniBlockCompressor: Send + Sync + fmt::Debug {
    /// Bytes per value.
    fn value_width(&self) -> usize;

    /// Values in every chunk but the last.
    fn chunk_values(&self) -> usize;

    /// The message a reader needs to build the matching decompressor.
    fn array_encoding(&self) -> ArrayEncoding;

    /// Encodes one chunk (`values.len()` a multiple of [`value_width`](Self::value_width),
    /// at most [`chunk_values`](Self::chunk_values) values), appending its bytes to `out`.
    /// `scratch` is working space the caller keeps between calls.
    fn compress_chunk(
        &self,
        values: &[u8],
        out: &mut Vec<u8>,
        scratch: &mut Vec<u8>,
    ) -> Result<ChunkStorage>;

    /// Encodes `values`, whole chunks of exactly [`chunk_values`](Self::chunk_values)
    /// values without nulls, chunk after chunk onto `out`, if this encoding stores every
    /// such chunk uncompressed in exactly `chunk_values() * value_width()` bytes without
    /// having to try (plain, BSS), and returns whether it did. The default returns false
    /// and leaves `out` alone: the caller then goes chunk by chunk through
    /// [`compress_chunk`](Self::compress_chunk). Page encoders use it to run the kernel
    /// over many chunks at once.
    fn compress_uncompressed_chunks(&self, values: &[u8], out: &mut Vec<u8>) -> bool {
        let _ = (values, out);
        false
    }

    /// A compressor for one page of `values` that codes its chunks with what it learnt
    /// from the page (ALP's entropy tables, from as many of its chunks as `learn` says),
    /// its [`array_encoding`] carrying that for the decoder; `None` when this encoding has
    /// nothing to learn (the default). Its choice depends only on `values` and `learn`.
    ///
    /// [`array_encoding`]: Self::array_encoding
    fn for_page(
        &self,
        values: &[u8],
        learn: Learn,
    ) -> Result<Option<Box<dyn MiniBlockCompressor>>> {
        let _ = (values, learn);
        Ok(None)
    }

    /// The page buffers this compressor's chunks refer to (a dictionary's items), which
    /// the page stores beside its chunks, in order; none by default.
    fn page_buffers(&self) -> &[Vec<u8>] {
        &[]
    }

    /// Whether this compressor, made by [`for_page`](Self::for_page) from a sample of a
    /// page, would likely code the page smaller made again from the whole of it: its
    /// sample had streams no table of it serves, or symbols seen once (a sign of symbols
    /// it never saw, which the page's other chunks would code with tables of their own).
    /// False for one that learnt nothing (the default) or from every chunk of its page.
    fn would_learn_more(&self) -> bool {
        false
    }
}

/// Decodes chunks written by the matching [`MiniBlockCompressor`].
pub trait MiniBlockDecompressor: Send + Sync + fmt::Debug {
    /// Bytes per value.
    fn value_width(&self) -> usize;

    /// How many times its compressed size a compressed chunk can decode to: 1 for
    /// encodings without compression (which never mark a chunk compressed), the scheme's
    /// bound otherwise. Chunk tables claiming more are rejected before anything is
    /// allocated; a wrapper must forward its inner decompressor's bound.
    fn max_expansion(&self) -> usize;

    /// The smallest and largest size a raw ([`ChunkStorage::Raw`]) chunk of `num_values`
    /// values may take, for encodings whose raw chunks vary in size (ALP); `None`, the
    /// default, means exactly `num_values * value_width()` bytes (flat, BSS).
    fn raw_len_range(&self, num_values: usize) -> Option<(usize, usize)> {
        let _ = num_values;
        None
    }

    /// How many times its size a raw chunk can decode to: 1 (the default) for encodings
    /// that store values at their width, more for those that shrink them (ALP). A
    /// compressor around such an encoding expands by both factors.
    fn raw_expansion(&self) -> usize {
        1
    }

    /// How many page buffers this decoder reads (a dictionary's items: 1); 0, the
    /// default, for encodings whose chunks need nothing beyond the message.
    fn page_buffer_count(&self) -> usize {
        0
    }

    /// Hands the decoder the page's buffers, exactly
    /// [`page_buffer_count`](Self::page_buffer_count) of them, checked against the
    /// message before any chunk is decoded. [`decompressor_for`] calls it; the default
    /// accepts no buffers.
    fn bind_page_buffers(&mut self, buffers: &[&[u8]]) -> Result<()> {
        if buffers.is_empty() {
            Ok(())
        } else {
            Err(Error::corrupt(format!(
                "{} page buffers for an encoding that reads none",
                buffers.len()
            )))
        }
    }

    /// Whether a raw chunk's values are its bytes as they are (the flat encoding), so a
    /// wrapper may decompress straight into the output instead of through scratch space.
    /// Defaults to false, which is always correct.
    fn raw_chunks_are_values(&self) -> bool {
        false
    }

    /// Decodes one chunk of `num_values` values from `chunk` into `out`, which must hold
    /// exactly `num_values * value_width()` bytes. `scratch` is working space the caller
    /// keeps between calls, so decoding many chunks allocates at most once.
    fn decompress_into(
        &self,
        chunk: &[u8],
        num_values: usize,
        storage: ChunkStorage,
        out: &mut [u8],
        scratch: &mut Vec<u8>,
    ) -> Result<()>;

    /// Decodes whole chunks of `num_values` values each, stored back to back in `chunks`
    /// uncompressed ([`ChunkStorage::Raw`]) and without validity, into `out`, which must
    /// be exactly as long as `chunks`. The default decodes them one at a time with
    /// [`decompress_into`](Self::decompress_into); encodings without compression run their
    /// kernel over all of them at once.
    fn decompress_uncompressed_chunks_into(
        &self,
        chunks: &[u8],
        num_values: usize,
        out: &mut [u8],
        scratch: &mut Vec<u8>,
    ) -> Result<()> {
        let chunk_len = check_uncompressed_run(chunks, num_values, self.value_width(), out)?;
        for (chunk, out) in chunks
            .chunks_exact(chunk_len)
            .zip(out.chunks_exact_mut(chunk_len))
        {
            self.decompress_into(chunk, num_values, ChunkStorage::Raw, out, scratch)?;
        }
        Ok(())
    }

    /// Decodes one chunk like [`decompress_into`](Self::decompress_into) and appends its
    /// `num_values * value_width()` bytes to `out`. On error `out` keeps its length. The
    /// default zeroes the new bytes, then decodes into them; the crate's own encodings
    /// write straight into the buffer's spare capacity instead (no zeroing pass: this is
    /// how a page decodes into an Arrow array).
    fn decompress_append(
        &self,
        chunk: &[u8],
        num_values: usize,
        storage: ChunkStorage,
        out: &mut MutableBuffer,
        scratch: &mut Vec<u8>,
    ) -> Result<()> {
        let len = checked_len(num_values, self.value_width())?;
        append_zeroed(out, len, |dst| {
            self.decompress_into(chunk, num_values, storage, dst, scratch)
        })
    }

    /// Decodes rows `rows` of one chunk of `num_values` values into `out` (exactly their
    /// bytes). The default decodes the whole chunk into `partial` (appended to, so it is
    /// allocated only as the chunk's bytes prove it) and copies the rows; an encoding
    /// whose chunks can expand far beyond their bytes decodes only what the rows need.
    #[allow(clippy::too_many_arguments)]
    fn decompress_rows_into(
        &self,
        chunk: &[u8],
        num_values: usize,
        storage: ChunkStorage,
        rows: std::ops::Range<usize>,
        out: &mut [u8],
        scratch: &mut Vec<u8>,
        partial: &mut MutableBuffer,
    ) -> Result<()> {
        let w = self.value_width();
        partial.clear();
        self.decompress_append(chunk, num_values, storage, partial, scratch)?;
        let bytes = partial
            .as_slice()
            .get(rows.start * w..rows.end * w)
            .filter(|b| b.len() == out.len())
            .ok_or_else(|| {
                Error::invalid(format!(
                    "rows {rows:?} of a chunk of {num_values} values into {} bytes",
                    out.len()
                ))
            })?;
        out.copy_from_slice(bytes);
        Ok(())
    }

    /// Decodes a run of whole uncompressed chunks like
    /// [`decompress_uncompressed_chunks_into`](Self::decompress_uncompressed_chunks_into)
    /// and appends the `chunks.len()` bytes of values to `out`. On error `out` keeps its
    /// length. The default zeroes the new bytes, then decodes into them.
    fn decompress_uncompressed_chunks_append(
        &self,
        chunks: &[u8],
        num_values: usize,
        out: &mut MutableBuffer,
        scratch: &mut Vec<u8>,
    ) -> Result<()> {
        append_zeroed(out, chunks.len(), |dst| {
            self.decompress_uncompressed_chunks_into(chunks, num_values, dst, scratch)
        })
    }

    /// Decodes whole chunks of `num_values` values each, `chunks[i]` the stored bytes of
    /// chunk `i` ([`ChunkStorage::Raw`], without validity), into `out`, which must be
    /// exactly their values' bytes. The default decodes them one at a time with
    /// [`decompress_into`](Self::decompress_into); entropy-coded encodings decode the
    /// chunks' coded streams side by side.
    fn decompress_chunks_into(
        &self,
        chunks: &[&[u8]],
        num_values: usize,
        out: &mut [u8],
        scratch: &mut Vec<u8>,
    ) -> Result<()> {
        decompress_each(self, chunks, num_values, out, scratch)
    }

    /// Decodes chunks of different value counts, `chunks[k]` the stored bytes of a chunk
    /// of `counts[k]` values ([`ChunkStorage::Raw`], without validity), into `out`, which
    /// must be exactly their values' bytes, back to back: the inner chunks of a fill
    /// page. The default decodes them one at a time with
    /// [`decompress_into`](Self::decompress_into); entropy-coded encodings decode the
    /// chunks' coded streams side by side.
    fn decompress_counted_chunks_into(
        &self,
        chunks: &[&[u8]],
        counts: &[usize],
        out: &mut [u8],
        scratch: &mut Vec<u8>,
    ) -> Result<()> {
        check_counted_chunks_output(chunks.len(), counts, self.value_width(), out)?;
        decompress_each_counted(self, chunks, counts, out, scratch)
    }

    /// Decodes one chunk into a new buffer of `num_values * value_width()` bytes.
    fn decompress(
        &self,
        chunk: &[u8],
        num_values: usize,
        storage: ChunkStorage,
    ) -> Result<Vec<u8>> {
        let len = checked_len(num_values, self.value_width())?;
        if num_values > MAX_CHUNK_VALUES || len > MAX_CHUNK_BYTES {
            return Err(Error::invalid(format!(
                "a chunk holds at most {MAX_CHUNK_VALUES} values and {MAX_CHUNK_BYTES} bytes, asked for {num_values} values of {} bytes",
                self.value_width()
            )));
        }
        // Appended rather than allocated up front, so the crate's decompressors allocate
        // only once the chunk's bytes are checked to hold what it claims.
        let mut out = MutableBuffer::new(0);
        self.decompress_append(chunk, num_values, storage, &mut out, &mut Vec::new())?;
        Ok(out.as_slice().to_vec())
    }
}

/// Appends `len` zero bytes to `out` and lets `decode` fill them; takes them back off when
/// it fails.
pub(crate) fn append_zeroed(
    out: &mut MutableBuffer,
    len: usize,
    decode: impl FnOnce(&mut [u8]) -> Result<()>,
) -> Result<()> {
    let start = out.len();
    reserve(out, len)?;
    out.extend_zeros(len);
    let result = decode(&mut out.as_slice_mut()[start..]);
    if result.is_err() {
        out.truncate(start);
    }
    result
}

/// Growing a buffer by at least this much is first tried with a fallible allocation.
const PROBED_BYTES: usize = 64 << 20;

/// Makes room for `additional` more bytes in `out`, or returns [`Error::OutOfMemory`]
/// where `MutableBuffer` alone would abort the process: a large growth (what a small file
/// of long runs legitimately expands to) is first tried as a fallible allocation of the
/// size the buffer will take, which fails cleanly under a memory limit.
pub(crate) fn reserve(out: &mut MutableBuffer, additional: usize) -> Result<()> {
    if additional < PROBED_BYTES || out.capacity() - out.len() >= additional {
        return Ok(());
    }
    let oom = |bytes| Error::OutOfMemory {
        bytes,
        what: "decoded values".into(),
    };
    let needed = out
        .len()
        .checked_add(additional)
        .ok_or_else(|| oom(usize::MAX))?;
    // A MutableBuffer grows to at least twice its capacity.
    let size = needed.max(out.capacity().saturating_mul(2));
    let mut probe: Vec<u8> = Vec::new();
    probe.try_reserve_exact(size).map_err(|_| oom(size))?;
    drop(probe);
    out.reserve(additional);
    Ok(())
}

/// `num_values * width`, or an error when it overflows.
pub(crate) fn checked_len(num_values: usize, width: usize) -> Result<usize> {
    num_values
        .checked_mul(width)
        .ok_or_else(|| Error::invalid(format!("{num_values} values of {width} bytes overflow")))
}

/// Checks that `out` is the right size for `num_values` values of `width` bytes.
pub(crate) fn check_output(out: &[u8], num_values: usize, width: usize) -> Result<usize> {
    let len = checked_len(num_values, width)?;
    if out.len() != len {
        return Err(Error::invalid(format!(
            "output buffer holds {} bytes, {num_values} values of {width} bytes need {len}",
            out.len()
        )));
    }
    Ok(len)
}

/// Checks that `out` holds exactly `count` chunks of `num_values` values of `width` bytes
/// (for [`MiniBlockDecompressor::decompress_chunks_into`]); returns the bytes of one
/// chunk's values.
pub(crate) fn check_chunks_output(
    count: usize,
    num_values: usize,
    width: usize,
    out: &[u8],
) -> Result<usize> {
    let len = checked_len(num_values, width)?;
    if count.checked_mul(len) != Some(out.len()) {
        return Err(Error::invalid(format!(
            "output holds {} bytes, {count} chunks of {num_values} values of {width} bytes need {}",
            out.len(),
            count.saturating_mul(len)
        )));
    }
    Ok(len)
}

/// Checks that `counts` has one count per chunk (`count` of them) and that `out` holds
/// exactly their values of `width` bytes.
pub(crate) fn check_counted_chunks_output(
    count: usize,
    counts: &[usize],
    width: usize,
    out: &[u8],
) -> Result<()> {
    let values = counts
        .iter()
        .try_fold(0usize, |sum, &n| sum.checked_add(n))
        .and_then(|n| n.checked_mul(width));
    if counts.len() != count || values != Some(out.len()) {
        return Err(Error::invalid(format!(
            "output holds {} bytes for {count} chunks of {} counts and {width}-byte values",
            out.len(),
            counts.len()
        )));
    }
    Ok(())
}

/// [`MiniBlockDecompressor::decompress_counted_chunks_into`] one chunk at a time (its
/// output checked by the caller).
pub(crate) fn decompress_each_counted<D: MiniBlockDecompressor + ?Sized>(
    decoder: &D,
    chunks: &[&[u8]],
    counts: &[usize],
    out: &mut [u8],
    scratch: &mut Vec<u8>,
) -> Result<()> {
    let width = decoder.value_width();
    let mut out = out;
    for (k, (chunk, &n)) in chunks.iter().zip(counts).enumerate() {
        let (this, after) = std::mem::take(&mut out).split_at_mut(n * width);
        out = after;
        decoder
            .decompress_into(chunk, n, ChunkStorage::Raw, this, scratch)
            .map_err(|e| in_run_chunk(e, k))?;
    }
    Ok(())
}

/// [`MiniBlockDecompressor::decompress_chunks_into`] one chunk at a time: its default,
/// and what the encodings that override it do on CPUs without the side-by-side kernel.
pub(crate) fn decompress_each<D: MiniBlockDecompressor + ?Sized>(
    decoder: &D,
    chunks: &[&[u8]],
    num_values: usize,
    out: &mut [u8],
    scratch: &mut Vec<u8>,
) -> Result<()> {
    let len = check_chunks_output(chunks.len(), num_values, decoder.value_width(), out)?;
    for (k, (chunk, out)) in chunks.iter().zip(out.chunks_exact_mut(len)).enumerate() {
        decoder
            .decompress_into(chunk, num_values, ChunkStorage::Raw, out, scratch)
            .map_err(|e| in_run_chunk(e, k))?;
    }
    Ok(())
}

/// The chunks of a run (`counts[k]` values in chunk `k`) in groups whose coded streams
/// decode side by side, each with the index of its first chunk and its chunks' counts.
/// Chunks of one count go a kernel's worth at a time, their symbols decoded and used while
/// in cache; chunks of different counts (a fill page's inner chunks) eight times as many,
/// so that `entropy::decode_many` finds streams of near lengths to decode together.
pub(crate) fn stream_groups<'c, 'd>(
    chunks: &'c [&'d [u8]],
    counts: &'c [usize],
) -> impl Iterator<Item = (usize, &'c [&'d [u8]], &'c [usize])> {
    let streams = if counts.windows(2).all(|w| w[0] == w[1]) {
        crate::kernels::tans::streams()
    } else {
        8 * crate::kernels::tans::streams()
    };
    chunks
        .chunks(streams)
        .zip(counts.chunks(streams))
        .enumerate()
        .map(move |(g, (group, counts))| (g * streams, group, counts))
}

/// `buffer` cut into consecutive pieces of `lens` bytes each (their sum at most its
/// length), as the outputs of streams decoded side by side.
pub(crate) fn cut_mut(buffer: &mut [u8], lens: impl IntoIterator<Item = usize>) -> Vec<&mut [u8]> {
    let mut rest = buffer;
    lens.into_iter()
        .map(|len| {
            let (this, after) = std::mem::take(&mut rest).split_at_mut(len);
            rest = after;
            this
        })
        .collect()
}

/// Bytes of `v` as a LEB128 varint (7 bits a byte, low first).
pub(crate) fn varint_len(v: usize) -> usize {
    (usize::BITS - (v | 1).leading_zeros()).div_ceil(7) as usize
}

/// Appends `v` as a LEB128 varint (7 bits a byte, low first).
pub(crate) fn put_varint(out: &mut Vec<u8>, mut v: usize) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Names chunk `k` of a run of chunks in a corruption error.
pub(crate) fn in_run_chunk(e: Error, k: usize) -> Error {
    match e {
        Error::Corrupt { message } => Error::corrupt(format!("chunk {k} of the run: {message}")),
        other => other,
    }
}

/// Checks a run of uncompressed chunks of `num_values` values of `width` bytes and its
/// output: the output as long as the run, the run a whole number of chunks. Returns the
/// bytes per chunk.
pub(crate) fn check_uncompressed_run(
    chunks: &[u8],
    num_values: usize,
    width: usize,
    out: &[u8],
) -> Result<usize> {
    if out.len() != chunks.len() {
        return Err(Error::invalid(format!(
            "output buffer holds {} bytes, {} uncompressed chunk bytes decode to as many",
            out.len(),
            chunks.len()
        )));
    }
    uncompressed_run_chunk_len(chunks, num_values, width)
}

/// Checks that `chunks` is a whole number of uncompressed chunks of `num_values` values of
/// `width` bytes; returns the bytes per chunk.
pub(crate) fn uncompressed_run_chunk_len(
    chunks: &[u8],
    num_values: usize,
    width: usize,
) -> Result<usize> {
    let chunk_len = checked_len(num_values, width)?;
    if chunk_len == 0 || !chunks.len().is_multiple_of(chunk_len) {
        return Err(Error::corrupt(format!(
            "{} bytes are not a whole number of uncompressed chunks of {num_values} values of {width} bytes",
            chunks.len()
        )));
    }
    Ok(chunk_len)
}

/// Bytes per value for a `bits_per_value` that is a whole number of bytes, from 8 to
/// `8 * MAX_VALUE_WIDTH`.
pub(crate) fn width_from_bits(bits_per_value: u64) -> Result<usize> {
    if bits_per_value.is_multiple_of(8)
        && (8..=8 * MAX_VALUE_WIDTH as u64).contains(&bits_per_value)
    {
        Ok((bits_per_value / 8) as usize)
    } else {
        Err(Error::invalid(format!(
            "bits_per_value must be a multiple of 8 from 8 to {}, got {bits_per_value}",
            8 * MAX_VALUE_WIDTH
        )))
    }
}

/// The value width and chunk size of a fixed-width encoder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ChunkShape {
    pub(crate) width: usize,
    pub(crate) chunk_values: usize,
}

impl ChunkShape {
    /// Values of `bits_per_value` bits in default (4 KiB) chunks.
    pub(crate) fn from_bits(bits_per_value: u64) -> Result<Self> {
        let width = width_from_bits(bits_per_value)?;
        Ok(Self {
            width,
            chunk_values: default_chunk_values(width),
        })
    }

    /// Checks one chunk's input against this shape ([`check_chunk_input`]).
    pub(crate) fn check_chunk(&self, values: &[u8]) -> Result<()> {
        check_chunk_input(values, self.width, self.chunk_values)
    }

    /// The same width in chunks of `chunk_values` values.
    pub(crate) fn with_chunk_values(self, chunk_values: usize) -> Result<Self> {
        check_encoder_chunk(chunk_values, self.width)?;
        Ok(Self {
            chunk_values,
            ..self
        })
    }
}

/// Checks one chunk handed to a compressor: a whole number of `width`-byte values, and at
/// most `chunk_values` of them. Every `compress_chunk` of the crate checks this before its
/// kernel runs, so a caller's mistake is an error, never a partly written chunk.
pub(crate) fn check_chunk_input(values: &[u8], width: usize, chunk_values: usize) -> Result<()> {
    if width == 0 || !values.len().is_multiple_of(width) {
        return Err(Error::invalid(format!(
            "{} bytes are not a whole number of {width}-byte values",
            values.len()
        )));
    }
    if values.len() / width > chunk_values {
        return Err(Error::invalid(format!(
            "a chunk holds at most {chunk_values} values, got {}",
            values.len() / width
        )));
    }
    Ok(())
}

/// Checks a chunk size an encoder was given for values of `width` bytes: a power of two
/// from 2 to [`MAX_CHUNK_VALUES`], whose chunks fit the 4 GiB a chunk table entry holds.
pub(crate) fn check_encoder_chunk(chunk_values: usize, width: usize) -> Result<()> {
    ChunkPlan::new(0, chunk_values)?;
    if chunk_values.saturating_mul(width) > MAX_CHUNK_BYTES {
        return Err(Error::invalid(format!(
            "chunks of {chunk_values} values of {width} bytes are too large"
        )));
    }
    Ok(())
}

/// The encodings a page can be written with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Encoding {
    /// Values as they are.
    Plain,
    /// Values as they are, each chunk compressed with LZ4.
    Lz4,
    /// Values as they are, each chunk compressed with Zstd.
    Zstd,
    /// Chunk-local byte stream split.
    Bss,
    /// Byte stream split, each chunk compressed with LZ4.
    BssLz4,
    /// Byte stream split, each chunk compressed with Zstd.
    BssZstd,
    /// Byte stream split, each chunk compressed with Zstd and a dictionary the page
    /// stores once: the high byte streams of its chunks, so what repeats across the page
    /// but not within a chunk is matched.
    BssZstdDict,
    /// ALP, integers bit-packed (32- and 64-bit floats only).
    Alp,
    /// ALP, integers in byte streams, each chunk compressed with LZ4.
    AlpLz4,
    /// ALP, integers in byte streams, each chunk compressed with Zstd.
    AlpZstd,
    /// ALP, integers in byte streams each entropy-coded (tANS) with its own table, behind
    /// a compact header; no general compressor.
    AlpAns,
    /// ALP-RD: floats that are not decimals, each value's front bits through a chunk
    /// dictionary, the rest bit-packed (32- and 64-bit floats only).
    AlpRd,
    /// Delta (values as integers, differenced), the differences bit-packed with a frame
    /// of reference (1-, 2-, 4- and 8-byte values).
    Delta,
    /// Delta (values as integers, differenced, zigzag coded, byte-stream split), each
    /// chunk compressed with LZ4 (1-, 2-, 4- and 8-byte values).
    DeltaLz4,
    /// Delta, each chunk compressed with Zstd (1-, 2-, 4- and 8-byte values).
    DeltaZstd,
    /// Delta, the residual streams entropy-coded (tANS) with the page's tables; no
    /// general compressor (1-, 2-, 4- and 8-byte values).
    DeltaAns,
    /// Frame of reference and bit-packing, per chunk (1-, 2-, 4- and 8-byte integers).
    Bitpack,
    /// The page's distinct values (at most 65536) in a page buffer, each chunk's indices
    /// bit-packed (1- to 8-byte values).
    Dict,
    /// A dictionary, each chunk's indices bit-packed and compressed with Zstd.
    DictZstd,
}

impl Encoding {
    /// Every encoding, in the order reports list them: the order they were added in (the
    /// HDF5 filter's parameter codes follow it, so a new one goes at the end).
    pub const ALL: [Encoding; 19] = [
        Encoding::Plain,
        Encoding::Lz4,
        Encoding::Zstd,
        Encoding::Bss,
        Encoding::BssLz4,
        Encoding::BssZstd,
        Encoding::Alp,
        Encoding::AlpLz4,
        Encoding::AlpZstd,
        Encoding::AlpAns,
        Encoding::AlpRd,
        Encoding::Delta,
        Encoding::DeltaLz4,
        Encoding::DeltaZstd,
        Encoding::DeltaAns,
        Encoding::Bitpack,
        Encoding::Dict,
        Encoding::DictZstd,
        Encoding::BssZstdDict,
    ];

    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Encoding::Plain => "plain",
            Encoding::Lz4 => "lz4",
            Encoding::Zstd => "zstd",
            Encoding::Bss => "bss",
            Encoding::BssLz4 => "bss+lz4",
            Encoding::BssZstd => "bss+zstd",
            Encoding::BssZstdDict => "bss+zstd+dict",
            Encoding::Alp => "alp",
            Encoding::AlpLz4 => "alp+lz4",
            Encoding::AlpZstd => "alp+zstd",
            Encoding::AlpAns => "alp+ans",
            Encoding::AlpRd => "alp-rd",
            Encoding::Delta => "delta",
            Encoding::DeltaLz4 => "delta+lz4",
            Encoding::DeltaZstd => "delta+zstd",
            Encoding::DeltaAns => "delta+ans",
            Encoding::Bitpack => "bitpack",
            Encoding::Dict => "dict",
            Encoding::DictZstd => "dict+zstd",
        }
    }

    /// Whether the encoding takes values of `width` bytes: ALP and ALP-RD take 4- and
    /// 8-byte floats, delta and bitpack 1-, 2-, 4- and 8-byte values, dictionaries 1 to 8
    /// bytes, the others every width from 1 to [`MAX_VALUE_WIDTH`].
    pub fn supports_width(self, width: usize) -> bool {
        if self.is_alp() || self == Encoding::AlpRd {
            width == 4 || width == 8
        } else if self.is_delta() {
            delta::supports_width(width)
        } else if self == Encoding::Bitpack {
            bitpacked::supports_width(width)
        } else if self.is_dictionary() {
            dictionary::supports_width(width)
        } else {
            (1..=MAX_VALUE_WIDTH).contains(&width)
        }
    }

    /// Whether the values are ALP-encoded.
    pub fn is_alp(self) -> bool {
        matches!(
            self,
            Encoding::Alp | Encoding::AlpLz4 | Encoding::AlpZstd | Encoding::AlpAns
        )
    }

    /// Whether the values are delta coded.
    pub fn is_delta(self) -> bool {
        matches!(
            self,
            Encoding::Delta | Encoding::DeltaLz4 | Encoding::DeltaZstd | Encoding::DeltaAns
        )
    }

    /// Whether the page is a dictionary, its items in a page buffer.
    pub fn is_dictionary(self) -> bool {
        matches!(self, Encoding::Dict | Encoding::DictZstd)
    }

    /// Whether every chunk takes exactly its values' bytes (plain and BSS without
    /// compression).
    pub fn stores_values_at_width(self) -> bool {
        matches!(self, Encoding::Plain | Encoding::Bss)
    }

    /// Whether the values are byte-stream split.
    pub fn splits(self) -> bool {
        matches!(
            self,
            Encoding::Bss | Encoding::BssLz4 | Encoding::BssZstd | Encoding::BssZstdDict
        )
    }

    /// The general compression scheme applied to each chunk, if any.
    pub fn scheme(self) -> Option<CompressionScheme> {
        match self {
            Encoding::Plain
            | Encoding::Bss
            | Encoding::Alp
            | Encoding::AlpAns
            | Encoding::AlpRd
            | Encoding::Delta
            | Encoding::DeltaAns
            | Encoding::Bitpack
            | Encoding::Dict => None,
            Encoding::Lz4 | Encoding::BssLz4 | Encoding::AlpLz4 | Encoding::DeltaLz4 => {
                Some(CompressionScheme::Lz4)
            }
            Encoding::Zstd
            | Encoding::BssZstd
            | Encoding::BssZstdDict
            | Encoding::AlpZstd
            | Encoding::DeltaZstd
            | Encoding::DictZstd => Some(CompressionScheme::Zstd),
        }
    }

    /// A compressor for values of `bits_per_value` bits (any whole number of bytes) with
    /// the default options: 4 KiB chunks, Zstd level 3.
    pub fn compressor(self, bits_per_value: u64) -> Result<Box<dyn MiniBlockCompressor>> {
        self.compressor_with(width_from_bits(bits_per_value)?, &EncoderOptions::default())
    }

    /// A compressor for values of `width` bytes with `options`.
    pub fn compressor_with(
        self,
        width: usize,
        options: &EncoderOptions,
    ) -> Result<Box<dyn MiniBlockCompressor>> {
        let bits = width as u64 * 8;
        width_from_bits(bits)?;
        let chunk_values = options.chunk_values_for(width)?;
        if self.is_dictionary() {
            // The dictionary is the outer node: its indices, not its values, are compressed.
            let dict = DictionaryEncoder::try_new(bits)?.with_chunk_values(chunk_values)?;
            return Ok(Box::new(match self.scheme() {
                Some(scheme) => dict.with_compression(scheme, options.zstd_level),
                None => dict,
            }));
        }
        let inner: Box<dyn MiniBlockCompressor> = if self.is_alp() {
            let layout = if self == Encoding::AlpAns {
                IntLayout::Entropy
            } else if self.scheme().is_some() {
                IntLayout::Streams
            } else {
                IntLayout::Packed
            };
            Box::new(
                AlpEncoder::try_new(bits)?
                    .with_chunk_values(chunk_values)?
                    .with_layout(layout)
                    .with_bin_margin(options.bin_margin()),
            )
        } else if self == Encoding::AlpRd {
            Box::new(AlpRdEncoder::try_new(bits)?.with_chunk_values(chunk_values)?)
        } else if self.is_delta() {
            let delta = DeltaEncoder::try_new(bits)?
                .with_chunk_values(chunk_values)?
                .with_bin_margin(options.bin_margin());
            Box::new(match self {
                Encoding::DeltaAns => delta.entropy_coded(),
                Encoding::Delta => delta.bit_packed(),
                _ => delta,
            })
        } else if self == Encoding::Bitpack {
            Box::new(BitpackEncoder::try_new(bits)?.with_chunk_values(chunk_values)?)
        } else if self.splits() {
            Box::new(ByteStreamSplitEncoder::try_new(bits)?.with_chunk_values(chunk_values)?)
        } else {
            Box::new(FlatEncoder::try_new(bits)?.with_chunk_values(chunk_values)?)
        };
        Ok(match self.scheme() {
            None => inner,
            Some(CompressionScheme::Lz4) => Box::new(GeneralMiniBlockCompressor::try_new(
                inner,
                CompressionScheme::Lz4,
            )?),
            Some(CompressionScheme::Zstd) => {
                let general = GeneralMiniBlockCompressor::try_new(inner, CompressionScheme::Zstd)?
                    .with_level(options.zstd_level)?;
                Box::new(if self == Encoding::BssZstdDict {
                    general.with_page_dictionary()?
                } else {
                    general
                })
            }
        })
    }

    /// The encoding an `ArrayEncoding` message describes, if it is one of ours.
    pub fn of(encoding: &ArrayEncoding) -> Option<Encoding> {
        match encoding.array_encoding.as_ref()? {
            array_encoding::ArrayEncoding::Flat(_) => Some(Encoding::Plain),
            array_encoding::ArrayEncoding::ByteStreamSplit(_) => Some(Encoding::Bss),
            array_encoding::ArrayEncoding::Alp(alp) => Some(if alp.entropy_coded {
                Encoding::AlpAns
            } else {
                Encoding::Alp
            }),
            array_encoding::ArrayEncoding::AlpRd(_) => Some(Encoding::AlpRd),
            array_encoding::ArrayEncoding::Bitpack(_) => Some(Encoding::Bitpack),
            array_encoding::ArrayEncoding::Dictionary(dict) => {
                match dict.indices.as_deref()?.array_encoding.as_ref()? {
                    array_encoding::ArrayEncoding::Bitpack(_) => Some(Encoding::Dict),
                    array_encoding::ArrayEncoding::GeneralMiniBlock(general) => {
                        let packed = matches!(
                            general.inner.as_deref()?.array_encoding,
                            Some(array_encoding::ArrayEncoding::Bitpack(_))
                        );
                        let scheme = CompressionScheme::from_proto(general.compression.as_ref()?);
                        (packed && scheme.ok()? == CompressionScheme::Zstd)
                            .then_some(Encoding::DictZstd)
                    }
                    _ => None,
                }
            }
            // Delta alone is written entropy-coded or bit-packed: its byte streams only
            // ever shrink under a compressor.
            array_encoding::ArrayEncoding::Delta(delta) => {
                match (delta.entropy_coded, delta.bit_packed) {
                    (true, _) => Some(Encoding::DeltaAns),
                    (false, true) => Some(Encoding::Delta),
                    (false, false) => None,
                }
            }
            // A fill is a layer around an encoding, not one of them ([`short_name`]).
            array_encoding::ArrayEncoding::Fill(_)
            | array_encoding::ArrayEncoding::CodedFill(_) => None,
            array_encoding::ArrayEncoding::GeneralMiniBlock(general) => {
                let scheme = CompressionScheme::from_proto(general.compression.as_ref()?).ok()?;
                let inner = general.inner.as_deref()?;
                if let Some(array_encoding::ArrayEncoding::Delta(_)) = inner.array_encoding {
                    return Some(match scheme {
                        CompressionScheme::Lz4 => Encoding::DeltaLz4,
                        CompressionScheme::Zstd => Encoding::DeltaZstd,
                    });
                }
                let inner = Encoding::of(inner)?;
                Some(match (inner, scheme) {
                    (Encoding::Plain, CompressionScheme::Lz4) => Encoding::Lz4,
                    (Encoding::Plain, CompressionScheme::Zstd) => Encoding::Zstd,
                    (Encoding::Bss, CompressionScheme::Lz4) => Encoding::BssLz4,
                    (Encoding::Bss, CompressionScheme::Zstd) if general.dictionary.is_some() => {
                        Encoding::BssZstdDict
                    }
                    (Encoding::Bss, CompressionScheme::Zstd) => Encoding::BssZstd,
                    (Encoding::Alp, CompressionScheme::Lz4) => Encoding::AlpLz4,
                    (Encoding::Alp, CompressionScheme::Zstd) => Encoding::AlpZstd,
                    _ => return None,
                })
            }
        }
    }
}

impl fmt::Display for Encoding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Encoding {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        Encoding::ALL
            .into_iter()
            .find(|e| e.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| {
                let names: Vec<&str> = Encoding::ALL.iter().map(|e| e.name()).collect();
                Error::invalid(format!(
                    "unknown encoding {s:?}; expected one of {}",
                    names.join(", ")
                ))
            })
    }
}

/// Options every encoder shares: the chunk size and the Zstd level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EncoderOptions {
    chunk_values: Option<usize>,
    zstd_level: i32,
    /// In 1/1024ths: how much larger by estimate binned integers may be than byte
    /// streams and still be picked ([`entropy::BIN_MARGIN`] unless `auto` trades size
    /// for speed).
    bin_margin: u32,
}

impl Default for EncoderOptions {
    fn default() -> Self {
        Self {
            chunk_values: None,
            zstd_level: DEFAULT_ZSTD_LEVEL,
            bin_margin: entropy::BIN_MARGIN_1024,
        }
    }
}

/// Zstd level used unless a caller sets one.
pub const DEFAULT_ZSTD_LEVEL: i32 = 3;

impl EncoderOptions {
    /// Chunks of `chunk_values` values (a power of two from 256 to 65536); `None` means
    /// [`default_chunk_values`] (4 KiB chunks).
    pub fn with_chunk_values(mut self, chunk_values: Option<usize>) -> Result<Self> {
        if let Some(n) = chunk_values {
            check_chunk_values(n)?;
        }
        self.chunk_values = chunk_values;
        Ok(self)
    }

    /// Zstd level (1 to 22, or negative for the fast levels).
    pub fn with_zstd_level(mut self, level: i32) -> Result<Self> {
        CompressionScheme::check_zstd_level(level)?;
        self.zstd_level = level;
        Ok(self)
    }

    /// The chunk size asked for, if any.
    pub fn chunk_values(&self) -> Option<usize> {
        self.chunk_values
    }

    /// The Zstd level.
    pub fn zstd_level(&self) -> i32 {
        self.zstd_level
    }

    /// Binned integers picked up to `share` (a fraction) larger by estimate than byte
    /// streams, which decode slower, on top of [`entropy::BIN_MARGIN`]: what `auto` gives
    /// up for speed.
    #[must_use]
    pub(crate) fn with_bin_margin_above(mut self, share: f64) -> Self {
        // A fraction below 1 in 1/1024ths.
        self.bin_margin = entropy::BIN_MARGIN_1024 + (share.clamp(0.0, 1.0) * 1024.0) as u32;
        self
    }

    /// The margin of [`with_bin_margin_above`](Self::with_bin_margin_above), a fraction.
    pub(crate) fn bin_margin(&self) -> f32 {
        self.bin_margin as f32 / 1024.0
    }

    /// The chunk size, in values, for values of `width` bytes.
    pub fn chunk_values_for(&self, width: usize) -> Result<usize> {
        let n = self
            .chunk_values
            .unwrap_or_else(|| default_chunk_values(width));
        check_encoder_chunk(n, width)?;
        Ok(n)
    }
}

/// The encoding tree in words, e.g. `lz4 over byte_stream_split(32-bit)`.
pub fn describe(encoding: &ArrayEncoding) -> String {
    match &encoding.array_encoding {
        None => "(none)".to_owned(),
        Some(array_encoding::ArrayEncoding::Fill(fill)) => describe_fill(fill, ""),
        Some(array_encoding::ArrayEncoding::CodedFill(fill)) => describe_fill(fill, ", coded runs"),
        Some(array_encoding::ArrayEncoding::Flat(flat)) => {
            format!("flat({}-bit)", flat.bits_per_value)
        }
        Some(array_encoding::ArrayEncoding::ByteStreamSplit(bss)) => {
            format!("byte_stream_split({}-bit)", bss.bits_per_value)
        }
        Some(array_encoding::ArrayEncoding::Alp(alp)) => {
            let coded = if alp.entropy_coded {
                ", entropy-coded"
            } else {
                ""
            };
            format!("alp({}-bit{coded})", alp.bits_per_value)
        }
        Some(array_encoding::ArrayEncoding::AlpRd(alp_rd)) => {
            format!("alp_rd({}-bit)", alp_rd.bits_per_value)
        }
        Some(array_encoding::ArrayEncoding::Bitpack(bitpack)) => {
            format!("bitpack({}-bit)", bitpack.bits_per_value)
        }
        Some(array_encoding::ArrayEncoding::Dictionary(dict)) => {
            let indices = dict
                .indices
                .as_deref()
                .map_or_else(|| "(nothing)".to_owned(), describe);
            format!(
                "dictionary({} items, indices {indices})",
                dict.num_dictionary_items
            )
        }
        Some(array_encoding::ArrayEncoding::Delta(delta)) => {
            let coded = if delta.entropy_coded {
                ", entropy-coded"
            } else {
                ""
            };
            format!("delta({}-bit{coded})", delta.bits_per_value)
        }
        Some(array_encoding::ArrayEncoding::GeneralMiniBlock(general)) => {
            let scheme = general
                .compression
                .as_ref()
                .map_or("(no compression)", |c| c.scheme.as_str());
            let inner = general
                .inner
                .as_deref()
                .map_or_else(|| "(nothing)".to_owned(), describe);
            format!("{scheme} over {inner}")
        }
    }
}

/// A value's little-endian bytes as one hexadecimal number, most significant first.
fn hex_le(bytes: &[u8]) -> String {
    bytes.iter().rev().fold(String::new(), |mut hex, b| {
        use std::fmt::Write;
        let _ = write!(hex, "{b:02X}");
        hex
    })
}

fn describe_fill(fill: &crate::proto::encodings::Fill, coded: &str) -> String {
    let inner = fill
        .inner
        .as_deref()
        .map_or_else(|| "(nothing)".to_owned(), describe);
    format!("fill(0x{}{coded}) over {inner}", hex_le(&fill.value))
}

/// The fill layer of `encoding` (`fill` or `coded_fill`), if it is one.
fn fill_layer(encoding: &ArrayEncoding) -> Option<&crate::proto::encodings::Fill> {
    match &encoding.array_encoding {
        Some(
            array_encoding::ArrayEncoding::Fill(fill)
            | array_encoding::ArrayEncoding::CodedFill(fill),
        ) => Some(fill),
        _ => None,
    }
}

/// A short name for a page's encoding: its [`Encoding`]'s name, with `fill+` before it
/// when a fill layer is around it; otherwise its [`describe`] text.
pub fn short_name(encoding: &ArrayEncoding) -> String {
    if let Some(fill) = fill_layer(encoding) {
        if let Some(inner) = fill.inner.as_deref().and_then(Encoding::of) {
            return format!("fill+{}", inner.name());
        }
    }
    Encoding::of(encoding).map_or_else(|| describe(encoding), |e| e.name().to_owned())
}

/// Builds the decompressor an `ArrayEncoding` describes, given the page's buffers (what
/// its chunks share: a dictionary's items; none for most encodings), treating every field
/// and buffer as hostile: a missing oneof or inner message is corrupt data, an unknown
/// scheme, width or nesting is unsupported, buffers that do not match the message are
/// corrupt.
pub fn decompressor_for(
    encoding: &ArrayEncoding,
    page_buffers: &[&[u8]],
) -> Result<Box<dyn MiniBlockDecompressor>> {
    let mut decompressor = unbound_decompressor(encoding)?;
    decompressor.bind_page_buffers(page_buffers)?;
    Ok(decompressor)
}

/// The decompressor an `ArrayEncoding` describes, before the page's buffers are bound:
/// enough to validate a chunk table (value width, sizes, expansion), not to decode a
/// page that has buffers.
pub(crate) fn unbound_decompressor(
    encoding: &ArrayEncoding,
) -> Result<Box<dyn MiniBlockDecompressor>> {
    decompressor_within(encoding, Parent::Page)
}

/// What an encoding node sits in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Parent {
    Page,
    Fill,
    General,
    Dictionary,
}

/// The decoder of a fill layer (`coded`: a `coded_fill` page), which only a page holds.
fn fill_decompressor(
    fill: &crate::proto::encodings::Fill,
    coded: bool,
    parent: Parent,
) -> Result<Box<dyn MiniBlockDecompressor>> {
    if parent != Parent::Page {
        return Err(Error::unsupported(
            "fill inside another encoding (it is a page's outermost encoding)",
        ));
    }
    let inner = fill
        .inner
        .as_deref()
        .ok_or_else(|| Error::corrupt("fill has no inner encoding"))?;
    let inner = decompressor_within(inner, Parent::Fill)?;
    Ok(Box::new(FillDecompressor::new(fill, coded, inner)?))
}

fn decompressor_within(
    encoding: &ArrayEncoding,
    parent: Parent,
) -> Result<Box<dyn MiniBlockDecompressor>> {
    let bits = |bits_per_value: u64, what: &str| {
        width_from_bits(bits_per_value).map_err(|_| {
            Error::unsupported(format!(
                "{what} with bits_per_value {bits_per_value} (a multiple of 8 from 8 to {} is supported)",
                8 * MAX_VALUE_WIDTH
            ))
        })
    };
    match &encoding.array_encoding {
        None => Err(Error::corrupt("ArrayEncoding has no encoding set")),
        Some(array_encoding::ArrayEncoding::Flat(flat)) => {
            if flat.compression.is_some() {
                return Err(Error::unsupported(
                    "flat encoding with its own compression (use general_mini_block)",
                ));
            }
            let width = bits(flat.bits_per_value, "flat")?;
            Ok(Box::new(FlatDecompressor::with_width(width)))
        }
        Some(array_encoding::ArrayEncoding::ByteStreamSplit(bss)) => {
            let width = bits(bss.bits_per_value, "byte_stream_split")?;
            Ok(Box::new(ByteStreamSplitDecompressor::with_width(width)))
        }
        Some(array_encoding::ArrayEncoding::Alp(alp)) => Ok(Box::new(AlpDecompressor::new(alp)?)),
        Some(array_encoding::ArrayEncoding::AlpRd(alp_rd)) => {
            Ok(Box::new(AlpRdDecompressor::new(alp_rd.bits_per_value)?))
        }
        Some(array_encoding::ArrayEncoding::Delta(delta)) => {
            let width = bits(delta.bits_per_value, "delta")?;
            if !delta::supports_width(width) {
                return Err(Error::unsupported(format!(
                    "delta with bits_per_value {} (8, 16, 32 or 64 are supported)",
                    delta.bits_per_value
                )));
            }
            Ok(Box::new(DeltaDecompressor::new(delta)?))
        }
        Some(array_encoding::ArrayEncoding::Bitpack(bitpack)) => {
            Ok(Box::new(BitpackDecompressor::new(bitpack.bits_per_value)?))
        }
        Some(array_encoding::ArrayEncoding::Fill(fill)) => fill_decompressor(fill, false, parent),
        Some(array_encoding::ArrayEncoding::CodedFill(fill)) => {
            fill_decompressor(fill, true, parent)
        }
        Some(array_encoding::ArrayEncoding::Dictionary(dict)) => {
            if !matches!(parent, Parent::Page | Parent::Fill) {
                return Err(Error::unsupported(
                    "dictionary inside an encoding other than fill (only a fill may be around it)",
                ));
            }
            let indices = dict
                .indices
                .as_deref()
                .ok_or_else(|| Error::corrupt("dictionary has no indices encoding"))?;
            let indices = decompressor_within(indices, Parent::Dictionary)?;
            Ok(Box::new(DictionaryDecompressor::new(dict, indices)?))
        }
        Some(array_encoding::ArrayEncoding::GeneralMiniBlock(general)) => {
            if parent == Parent::General {
                return Err(Error::unsupported(
                    "general_mini_block nested inside general_mini_block",
                ));
            }
            let inner = general
                .inner
                .as_ref()
                .ok_or_else(|| Error::corrupt("general_mini_block has no inner encoding"))?;
            let compression = general
                .compression
                .as_ref()
                .ok_or_else(|| Error::corrupt("general_mini_block has no compression"))?;
            let scheme = CompressionScheme::from_proto(compression)?;
            let inner = decompressor_within(inner, Parent::General)?;
            let decompressor = GeneralMiniBlockDecompressor::new(inner, scheme);
            Ok(Box::new(match &general.dictionary {
                Some(dictionary) => decompressor.with_dictionary(*dictionary)?,
                None => decompressor,
            }))
        }
    }
}

/// The first `len` bytes of `scratch`, for a caller that overwrites all of them: grown
/// (zeroed) when short, never cleared, so that decoding a chunk does not zero its
/// buffer first.
pub(crate) fn overwritten(scratch: &mut Vec<u8>, len: usize) -> &mut [u8] {
    if scratch.len() < len {
        scratch.resize(len, 0);
    }
    &mut scratch[..len]
}

/// One xorshift64 step: the tests' pseudo-random numbers.
#[cfg(test)]
pub(crate) fn xorshift(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A chunk that is not a whole number of values, or holds more than a chunk, is an
    /// error through every compressor, and nothing is appended: the kernels used to leave
    /// the tail of `out` uninitialized behind a length that claimed it. Runs under Miri
    /// (the Zstd encodings call C, which Miri cannot run).
    #[test]
    fn compressors_refuse_chunks_that_are_not_whole_values() {
        let encodings: &[Encoding] = if cfg!(miri) {
            &[
                Encoding::Plain,
                Encoding::Bss,
                Encoding::Lz4,
                Encoding::BssLz4,
            ]
        } else {
            &Encoding::ALL
        };
        for &encoding in encodings {
            for bits in [16u64, 32, 64, 40] {
                if !encoding.supports_width(bits as usize / 8) {
                    assert!(encoding.compressor(bits).is_err(), "{encoding} {bits}-bit");
                    continue;
                }
                let compressor = encoding.compressor(bits).unwrap();
                let width = compressor.value_width();
                let too_many = vec![7u8; (compressor.chunk_values() + 1) * width];
                for values in [&[1u8, 2, 3, 4, 5][..], &[9; 13][..], &too_many[..]] {
                    if values.len().is_multiple_of(width) && values.len() != too_many.len() {
                        continue;
                    }
                    let mut out = vec![0xEE];
                    let mut scratch = Vec::new();
                    let result = compressor.compress_chunk(values, &mut out, &mut scratch);
                    assert!(
                        result.is_err(),
                        "{encoding} {bits}-bit accepted {} bytes",
                        values.len()
                    );
                    assert_eq!(out, [0xEE], "{encoding} {bits}-bit wrote into out");
                }
            }
        }
    }

    /// The LZ4 size scan agrees with the decoder on real blocks, and refuses cut blocks.
    #[test]
    fn lz4_decoded_len_reads_real_blocks() {
        let mut x = 0x1234_5678_u32;
        for len in (0..3000).step_by(if cfg!(miri) { 397 } else { 7 }) {
            let data: Vec<u8> = (0..len)
                .map(|i| {
                    x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                    if i % 5 == 0 {
                        (x >> 24) as u8
                    } else {
                        (i / 40) as u8
                    }
                })
                .collect();
            let block = lz4_flex::block::compress(&data);
            assert_eq!(general::lz4_decoded_len(&block, usize::MAX).unwrap(), len);
            if len > 0 {
                assert!(general::lz4_decoded_len(&block, len - 1).is_err());
                for cut in [1, block.len() / 2, block.len() - 1] {
                    let prefix = &block[..cut];
                    assert_ne!(
                        general::lz4_decoded_len(prefix, usize::MAX).ok(),
                        Some(len),
                        "a {cut}-byte prefix of a {len}-byte block"
                    );
                }
            }
        }
    }
}
