//! General compression over each chunk of an inner miniblock encoding.
//!
//! `ArrayEncoding { general_mini_block: { inner: <inner>, compression: { scheme: "lz4" } } }`,
//! or `{ scheme: "zstd", level: 3 }`.
//! Every chunk the inner encoding writes is compressed on its own, so decoding chunk `c`
//! reads only chunk `c`'s bytes. A chunk that the scheme does not shrink is stored as the
//! inner encoding wrote it, and its chunk entry says so ([`ChunkStorage::Raw`]): a page never
//! grows by more than its chunk table, and the reader never has to guess.

use std::cell::RefCell;
use std::sync::Arc;

use arrow_buffer::MutableBuffer;

use super::repeats::{write_repeated_value_block, RepeatLayout};
use super::{
    check_chunk_input, check_output, checked_len, ChunkStorage, Learn, MiniBlockCompressor,
    MiniBlockDecompressor, DEFAULT_ZSTD_LEVEL, TRUSTED_EXPANSION,
};
use crate::error::{Error, Result};
use crate::proto::encodings::{
    array_encoding, buffer, ArrayEncoding, Buffer, Compression, GeneralMiniBlock,
};

/// A general-purpose compression scheme applied per chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CompressionScheme {
    /// LZ4 block format: written by lz4_flex (safe code), or directly for a chunk of one
    /// repeated value; read by liblz4's `LZ4_decompress_safe`.
    Lz4,
    /// Zstandard frames (the `zstd` crate, libzstd), one frame per chunk, with the
    /// decoded size in the frame header.
    Zstd,
}

impl CompressionScheme {
    /// The scheme string stored in `Compression.scheme`.
    pub fn name(self) -> &'static str {
        match self {
            CompressionScheme::Lz4 => "lz4",
            CompressionScheme::Zstd => "zstd",
        }
    }

    /// The protobuf `Compression` message for this scheme (the level is set by
    /// `GeneralMiniBlockCompressor` for Zstd).
    pub fn to_proto(self) -> Compression {
        Compression {
            scheme: self.name().to_owned(),
            level: None,
        }
    }

    /// Reads a `Compression` message; an unknown scheme is [`Error::Unsupported`].
    pub fn from_proto(compression: &Compression) -> Result<Self> {
        match compression.scheme.as_str() {
            "lz4" => Ok(CompressionScheme::Lz4),
            "zstd" => Ok(CompressionScheme::Zstd),
            other => Err(Error::unsupported(format!(
                "compression scheme {other:?} (this build knows \"lz4\" and \"zstd\")"
            ))),
        }
    }

    /// How many times larger than its compressed bytes a chunk can decode to: LZ4 writes
    /// at most 255 bytes per length byte; a Zstd RLE block of 4 bytes can stand for a
    /// 128 KiB block. A chunk table claiming more is lying.
    pub fn max_expansion(self) -> usize {
        match self {
            CompressionScheme::Lz4 => 256,
            CompressionScheme::Zstd => 1 << 15,
        }
    }

    /// Checks a Zstd level: libzstd's range (negative levels are its fast modes).
    pub fn check_zstd_level(level: i32) -> Result<()> {
        let range = zstd::compression_level_range();
        if range.contains(&level) {
            Ok(())
        } else {
            Err(Error::invalid(format!(
                "zstd level {level} is outside {}..={}",
                range.start(),
                range.end()
            )))
        }
    }
}

thread_local! {
    /// One Zstd compression context per thread, kept between chunks (creating one costs
    /// more than compressing a 4 KiB chunk), with the level it was set to.
    static ZSTD_COMPRESSOR: RefCell<Option<(i32, zstd::bulk::Compressor<'static>)>> =
        const { RefCell::new(None) };
    /// One Zstd decompression context per thread.
    static ZSTD_DECOMPRESSOR: RefCell<Option<zstd::bulk::Decompressor<'static>>> =
        const { RefCell::new(None) };
    /// Contexts for chunks compressed with a page's dictionary, kept apart from the
    /// others so that neither keeps a dictionary or parameters the other set.
    static ZSTD_DICT_CONTEXTS: RefCell<Option<(zstd::zstd_safe::CCtx<'static>, zstd::zstd_safe::DCtx<'static>)>> =
        const { RefCell::new(None) };
    /// LZ4 hash tables per thread, cleared for each chunk instead of allocated and freed
    /// for each chunk: one with 16-bit entries for inputs under 64 KiB, one with 32-bit
    /// entries for larger ones. Each input size always gets the same kind of table, as
    /// `lz4_flex::block::compress_into` picks it, so a chunk's bytes never depend on what
    /// the thread compressed before.
    static LZ4_TABLES: RefCell<[Option<lz4_flex::block::CompressTable>; 2]> =
        const { RefCell::new([None, None]) };
}

/// Compresses `src` into `dst` (at least `get_maximum_output_size(src.len())` bytes) with
/// this thread's LZ4 hash table for its size; returns the bytes written.
fn lz4_compress(src: &[u8], dst: &mut [u8]) -> Result<usize> {
    use lz4_flex::block::CompressTable;
    LZ4_TABLES.with(|cell| {
        let mut tables = cell.borrow_mut();
        let small = src.len() < usize::from(u16::MAX);
        let table = tables[usize::from(!small)].get_or_insert_with(|| {
            if small {
                CompressTable::small()
            } else {
                CompressTable::large()
            }
        });
        lz4_flex::block::compress_into_with_table(src, dst, table)
            .map_err(|e| Error::invalid(format!("lz4 compression failed: {e}")))
    })
}

/// Compresses `src` into `dst` with this thread's Zstd context; returns the bytes written.
fn zstd_compress(src: &[u8], dst: &mut [u8], level: i32) -> Result<usize> {
    let fail = |e: std::io::Error| Error::invalid(format!("zstd compression failed: {e}"));
    ZSTD_COMPRESSOR.with(|cell| {
        let mut slot = cell.borrow_mut();
        match slot.as_mut() {
            Some((current, compressor)) => {
                if *current != level {
                    compressor.set_compression_level(level).map_err(fail)?;
                    *current = level;
                }
            }
            None => *slot = Some((level, zstd::bulk::Compressor::new(level).map_err(fail)?)),
        }
        let (_, compressor) = slot.as_mut().expect("set above");
        compressor.compress_to_buffer(src, dst).map_err(fail)
    })
}

/// This thread's dictionary contexts, created on first use.
fn with_dict_contexts<T>(
    f: impl FnOnce(
        &mut zstd::zstd_safe::CCtx<'static>,
        &mut zstd::zstd_safe::DCtx<'static>,
    ) -> Result<T>,
) -> Result<T> {
    ZSTD_DICT_CONTEXTS.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            let cctx = zstd::zstd_safe::CCtx::try_create();
            let dctx = zstd::zstd_safe::DCtx::try_create();
            let (Some(cctx), Some(dctx)) = (cctx, dctx) else {
                return Err(Error::invalid("zstd dictionary contexts: out of memory"));
            };
            *slot = Some((cctx, dctx));
        }
        let (cctx, dctx) = slot.as_mut().expect("set above");
        f(cctx, dctx)
    })
}

/// Compresses `src` into `dst` with a page's prepared dictionary; returns the bytes
/// written.
fn zstd_compress_with(
    src: &[u8],
    dst: &mut [u8],
    cdict: &zstd::zstd_safe::CDict<'_>,
) -> Result<usize> {
    with_dict_contexts(|cctx, _| {
        cctx.compress_using_cdict(dst, src, cdict).map_err(|code| {
            Error::invalid(format!(
                "zstd compression failed: {}",
                zstd::zstd_safe::get_error_name(code)
            ))
        })
    })
}

/// Decompresses one Zstd frame that must decode to exactly `dst.len()` bytes with a
/// page's dictionary.
fn zstd_decompress_with(
    src: &[u8],
    dst: &mut [u8],
    ddict: &zstd::zstd_safe::DDict<'_>,
) -> Result<()> {
    let len = dst.len();
    let written = with_dict_contexts(|_, dctx| {
        dctx.decompress_using_ddict(dst, src, ddict).map_err(|code| {
            Error::corrupt(format!(
                "zstd chunk of {} bytes does not decompress to {len} bytes with its page's dictionary: {}",
                src.len(),
                zstd::zstd_safe::get_error_name(code)
            ))
        })
    })?;
    if written != len {
        return Err(Error::corrupt(format!(
            "zstd chunk decompressed to {written} bytes, expected {len}"
        )));
    }
    Ok(())
}

/// Checks that a Zstd chunk starts with a frame header recording exactly `len` decoded
/// bytes (the writer always records it), so nothing is allocated for a size the chunk
/// does not claim itself.
fn check_zstd_header(src: &[u8], len: usize) -> Result<()> {
    match zstd::zstd_safe::get_frame_content_size(src) {
        Ok(Some(size)) if size == len as u64 => Ok(()),
        Ok(Some(size)) => Err(Error::corrupt(format!(
            "zstd frame records {size} decoded bytes, expected {len}"
        ))),
        Ok(None) => Err(Error::corrupt(
            "zstd frame does not record its decoded size",
        )),
        Err(_) => Err(Error::corrupt(format!(
            "zstd chunk of {} bytes has no valid frame header",
            src.len()
        ))),
    }
}

/// How many decoded bytes a compressed chunk of `stored` bytes may claim before the claim
/// is verified rather than allocated: [`TRUSTED_EXPANSION`] times its size, plus 64 KiB.
fn trusted_len(stored: usize) -> usize {
    stored
        .saturating_mul(TRUSTED_EXPANSION)
        .saturating_add(64 * 1024)
}

/// A valid LZ4 block may decode to fewer bytes than asked for: then it is not this chunk.
fn check_lz4_len(written: usize, len: usize) -> Result<()> {
    if written == len {
        Ok(())
    } else {
        Err(Error::corrupt(format!(
            "lz4 chunk decompressed to {written} bytes, expected {len}"
        )))
    }
}

/// The exact number of bytes the LZ4 block `block` decodes to, read off its sequences
/// (token, literal length, literals, offset, match length) without decoding anything; an
/// error as soon as it passes `limit` or the block's structure runs off its end. Offsets
/// are not checked here: the decoder that runs afterwards checks them.
///
/// ```text
/// token: high nibble = literal length (15: more length bytes follow, each added, until
///        one below 255), low nibble = match length - 4 (15: likewise)
/// sequence: token | [literal length bytes] | literals | offset u16 | [match length bytes]
/// the last sequence ends after its literals
/// ```
pub(crate) fn lz4_decoded_len(block: &[u8], limit: usize) -> Result<usize> {
    let bad = |what: &str| {
        Error::corrupt(format!(
            "lz4 chunk of {} bytes is not a valid block: {what}",
            block.len()
        ))
    };
    // Reads a length that starts at `base` (15 means extension bytes follow).
    let extend = |mut pos: usize, base: usize| -> Result<(usize, usize)> {
        let mut len = base;
        if base == 15 {
            loop {
                let byte = *block
                    .get(pos)
                    .ok_or_else(|| bad("a length runs off its end"))?;
                pos += 1;
                len = len.saturating_add(usize::from(byte));
                if byte != 255 {
                    break;
                }
            }
        }
        Ok((pos, len))
    };
    let mut pos = 0usize;
    let mut total = 0usize;
    loop {
        let token = *block
            .get(pos)
            .ok_or_else(|| bad("it ends before a token"))?;
        let (after, literals) = extend(pos + 1, usize::from(token >> 4))?;
        pos = after
            .checked_add(literals)
            .filter(|&end| end <= block.len())
            .ok_or_else(|| bad("literals run off its end"))?;
        total = total.saturating_add(literals);
        let past_limit = || {
            Error::corrupt(format!(
                "lz4 chunk of {} bytes decodes to more than the {limit} bytes it should",
                block.len()
            ))
        };
        if total > limit {
            return Err(past_limit());
        }
        if pos == block.len() {
            return Ok(total);
        }
        if pos + 2 > block.len() {
            return Err(bad("it ends inside an offset"));
        }
        let (after, matched) = extend(pos + 2, usize::from(token & 15))?;
        pos = after;
        total = total.saturating_add(matched + 4);
        if total > limit {
            return Err(past_limit());
        }
    }
}

/// Decodes one Zstd frame whose header records `len` decoded bytes into `out` through
/// libzstd's streaming decoder, growing `out` only as output really comes (doubling, up
/// to `len`): the path for chunks that claim more than [`trusted_len`].
fn zstd_decompress_growing(src: &[u8], len: usize, out: &mut Vec<u8>) -> Result<()> {
    zstd_decompress_growing_with(src, len, out, None)
}

/// [`zstd_decompress_growing`], with a page's dictionary when the frame was made with one.
fn zstd_decompress_growing_with(
    src: &[u8],
    len: usize,
    out: &mut Vec<u8>,
    ddict: Option<&zstd::zstd_safe::DDict<'_>>,
) -> Result<()> {
    use zstd::zstd_safe::{DCtx, InBuffer, OutBuffer};
    let corrupt = |what: String| {
        Error::corrupt(format!(
            "zstd chunk of {} bytes does not decompress to {len} bytes: {what}",
            src.len()
        ))
    };
    out.clear();
    let mut dctx = DCtx::try_create()
        .ok_or_else(|| Error::invalid("zstd decompression context: out of memory"))?;
    if let Some(ddict) = ddict {
        dctx.ref_ddict(ddict).map_err(|code| {
            Error::invalid(format!(
                "zstd could not take a page's dictionary: {}",
                zstd::zstd_safe::get_error_name(code)
            ))
        })?;
    }
    let mut input = InBuffer::around(src);
    loop {
        if out.len() == out.capacity() && out.len() < len {
            let grow = out.capacity().max(64 * 1024).min(len - out.len());
            out.reserve_exact(grow);
        }
        let (before_in, before_out) = (input.pos(), out.len());
        let hint = {
            let pos = out.len();
            // Writes into the spare capacity and sets the Vec's length to what it wrote.
            let mut output = OutBuffer::around_pos(out, pos);
            dctx.decompress_stream(&mut output, &mut input)
                .map_err(|code| corrupt(zstd::zstd_safe::get_error_name(code).to_owned()))?
        };
        if hint == 0 {
            break;
        }
        if input.pos() == before_in && out.len() == before_out {
            return Err(corrupt("the frame ends early".to_owned()));
        }
    }
    if out.len() != len || input.pos() != src.len() {
        return Err(corrupt(format!(
            "it decoded {} bytes from {} of its bytes",
            out.len(),
            input.pos()
        )));
    }
    Ok(())
}

/// Decodes the LZ4 block `src` into `dst` (at most `dst.len()` bytes), returning how many
/// bytes it wrote. This is liblz4's `LZ4_decompress_safe` (through the `lz4` crate), the
/// decoder of the reference implementation that is built for hostile input: it never
/// reads past `src` or writes past `dst`, and reports a malformed block as an error. It
/// decoded the benchmarked chunks 2.3-2.9x faster than lz4_flex's safe decoder
/// (docs/history.md); the blocks themselves are still written by lz4_flex.
fn lz4_decompress(src: &[u8], dst: &mut [u8]) -> Result<usize> {
    let (Ok(_), Ok(capacity)) = (i32::try_from(src.len()), i32::try_from(dst.len())) else {
        return Err(Error::unsupported(format!(
            "lz4 chunk of {} bytes decoding to {} bytes: over 2 GiB",
            src.len(),
            dst.len()
        )));
    };
    lz4::block::decompress_to_buffer(src, Some(capacity), dst).map_err(|e| {
        Error::corrupt(format!(
            "lz4 chunk of {} bytes does not decompress to {} bytes: {e}",
            src.len(),
            dst.len()
        ))
    })
}

/// Decompresses one Zstd frame that must decode to exactly `dst.len()` bytes, with this
/// thread's context.
fn zstd_decompress(src: &[u8], dst: &mut [u8]) -> Result<()> {
    let len = dst.len();
    ZSTD_DECOMPRESSOR.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            *slot = Some(
                zstd::bulk::Decompressor::new()
                    .map_err(|e| Error::invalid(format!("zstd decompression context: {e}")))?,
            );
        }
        let decompressor = slot.as_mut().expect("set above");
        let written = decompressor.decompress_to_buffer(src, dst).map_err(|e| {
            Error::corrupt(format!(
                "zstd chunk of {} bytes does not decompress to {len} bytes: {e}",
                src.len()
            ))
        })?;
        if written != len {
            return Err(Error::corrupt(format!(
                "zstd chunk decompressed to {written} bytes, expected {len}"
            )));
        }
        Ok(())
    })
}

/// Most bytes a page's Zstd dictionary holds, decoded: matches further back than this
/// gain little, and a reader allocates no more for one.
pub const MAX_DICTIONARY_BYTES: usize = 1 << 20;

/// How a Zstd dictionary's bytes begin when libzstd reads them as a trained dictionary
/// (entropy tables and content) rather than as raw content: a page's dictionary never
/// begins so, and a reader refuses one that does.
const TRAINED_DICTIONARY_MAGIC: [u8; 4] = [0x37, 0xA4, 0x30, 0xEC];

/// Byte streams of each chunk a page's dictionary takes (the last ones, the values' high
/// bytes: sign, exponent and leading fraction bits, which repeat across a page far more
/// than within a chunk).
const DICTIONARY_STREAMS: usize = 2;

/// Chunks whose high streams are compressed alone to estimate what the dictionary saves.
const DICTIONARY_PROBES: usize = 8;

/// The Zstd level of those estimates.
const DICTIONARY_PROBE_LEVEL: i32 = 1;

/// A dictionary is made when its frame costs less than this share of what the probed
/// chunks' high streams cost alone, per byte.
const DICTIONARY_SAVING: f64 = 0.8;

/// A page's Zstd dictionary, as the compressor uses it and as the page stores it.
struct PageDictionary {
    /// The page buffer: one Zstd frame of the dictionary's bytes.
    buffers: Vec<Vec<u8>>,
    cdict: zstd::zstd_safe::CDict<'static>,
}

impl std::fmt::Debug for PageDictionary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PageDictionary")
            .field("frame_bytes", &self.buffers[0].len())
            .finish_non_exhaustive()
    }
}

/// Compresses every chunk of an inner compressor.
#[derive(Debug)]
pub struct GeneralMiniBlockCompressor {
    inner: Arc<dyn MiniBlockCompressor>,
    scheme: CompressionScheme,
    level: Option<i32>,
    /// How the inner encoding lays out a chunk of one repeated value, for writing its LZ4
    /// block directly (`repeats`); `None` for the others (ALP, delta).
    repeat_layout: Option<RepeatLayout>,
    /// Whether the inner encoding's chunks vary in size (ALP), so each compressed chunk
    /// starts with the inner chunk's size.
    size_prefix: bool,
    /// Whether [`for_page`](MiniBlockCompressor::for_page) makes a Zstd dictionary of the
    /// page (`bss+zstd+dict`).
    learns_dictionary: bool,
    /// The page's dictionary, in a compressor made for a page.
    dictionary: Option<Arc<PageDictionary>>,
}

impl GeneralMiniBlockCompressor {
    /// Wraps `inner`. The inner encoding must itself be uncompressed (a flat, BSS, ALP,
    /// delta or bitpack encoder); nesting general compression is refused.
    pub fn try_new(inner: Box<dyn MiniBlockCompressor>, scheme: CompressionScheme) -> Result<Self> {
        let (repeat_layout, size_prefix) = match inner.array_encoding().array_encoding {
            Some(array_encoding::ArrayEncoding::Flat(_)) => (Some(RepeatLayout::Flat), false),
            Some(array_encoding::ArrayEncoding::ByteStreamSplit(_)) => {
                (Some(RepeatLayout::Split), false)
            }
            Some(
                array_encoding::ArrayEncoding::Alp(_) | array_encoding::ArrayEncoding::Bitpack(_),
            ) => (None, true),
            Some(array_encoding::ArrayEncoding::Delta(_)) => (None, false),
            _ => return Err(Error::invalid(
                "the inner encoding of general compression must be flat, byte_stream_split, alp, delta or bitpack",
            )),
        };
        Ok(Self {
            inner: Arc::from(inner),
            scheme,
            level: None,
            repeat_layout,
            size_prefix,
            learns_dictionary: false,
            dictionary: None,
        })
    }

    /// Makes a Zstd dictionary for each page (`bss+zstd+dict`): the high byte streams of
    /// its chunks, which every chunk's frame may then match, so that what repeats across
    /// the page but not within a chunk (an ephemeris' exponents, thousands of values
    /// apart) is stored about once. For byte stream split under Zstd only.
    pub fn with_page_dictionary(mut self) -> Result<Self> {
        if self.scheme != CompressionScheme::Zstd || self.repeat_layout != Some(RepeatLayout::Split)
        {
            return Err(Error::invalid(
                "a page dictionary is made only for byte stream split under zstd",
            ));
        }
        self.learns_dictionary = true;
        Ok(self)
    }

    /// The dictionary of the page `values`: for each chunk in turn, its last
    /// [`DICTIONARY_STREAMS`] byte streams as byte stream split lays them out, up to
    /// [`MAX_DICTIONARY_BYTES`]; `None` when there is nothing to take or it would begin
    /// as a trained dictionary does.
    fn dictionary_bytes(&self, values: &[u8]) -> Option<Vec<u8>> {
        let width = self.inner.value_width();
        let streams = DICTIONARY_STREAMS.min(width);
        let chunk_bytes = self.inner.chunk_values() * width;
        let mut dictionary =
            Vec::with_capacity((values.len() / width * streams).min(MAX_DICTIONARY_BYTES));
        for chunk in values.chunks(chunk_bytes) {
            for stream in width - streams..width {
                dictionary.extend(chunk.iter().skip(stream).step_by(width));
            }
            if dictionary.len() >= MAX_DICTIONARY_BYTES {
                dictionary.truncate(MAX_DICTIONARY_BYTES);
                break;
            }
        }
        (!dictionary.is_empty() && !dictionary.starts_with(&TRAINED_DICTIONARY_MAGIC))
            .then_some(dictionary)
    }

    /// Sets the compression level (Zstd only; LZ4 has none), recorded in
    /// `Compression.level`.
    pub fn with_level(mut self, level: i32) -> Result<Self> {
        match self.scheme {
            CompressionScheme::Zstd => CompressionScheme::check_zstd_level(level)?,
            CompressionScheme::Lz4 => {
                return Err(Error::invalid("lz4 has no compression level"));
            }
        }
        self.level = Some(level);
        Ok(self)
    }
}

impl MiniBlockCompressor for GeneralMiniBlockCompressor {
    fn value_width(&self) -> usize {
        self.inner.value_width()
    }

    fn chunk_values(&self) -> usize {
        self.inner.chunk_values()
    }

    fn array_encoding(&self) -> ArrayEncoding {
        ArrayEncoding {
            array_encoding: Some(array_encoding::ArrayEncoding::GeneralMiniBlock(Box::new(
                GeneralMiniBlock {
                    inner: Some(Box::new(self.inner.array_encoding())),
                    compression: Some(Compression {
                        level: self.level,
                        ..self.scheme.to_proto()
                    }),
                    dictionary: self.dictionary.as_ref().map(|_| Buffer {
                        buffer_index: 0,
                        buffer_type: buffer::BufferType::Page.into(),
                    }),
                },
            ))),
        }
    }

    fn compress_chunk(
        &self,
        values: &[u8],
        out: &mut Vec<u8>,
        scratch: &mut Vec<u8>,
    ) -> Result<ChunkStorage> {
        check_chunk_input(values, self.inner.value_width(), self.inner.chunk_values())?;
        if let (CompressionScheme::Lz4, Some(layout)) = (self.scheme, self.repeat_layout) {
            // A chunk of one repeated value: its block is written, not searched for.
            let start = out.len();
            let width = self.inner.value_width();
            if write_repeated_value_block(values, width, layout, out) {
                if out.len() - start < values.len() {
                    return Ok(ChunkStorage::Compressed);
                }
                out.truncate(start);
            }
        }
        scratch.clear();
        if self
            .inner
            .compress_chunk(values, scratch, &mut Vec::new())?
            != ChunkStorage::Raw
        {
            return Err(Error::invalid(
                "inner encoding of general compression compressed a chunk",
            ));
        }
        let start = out.len();
        // An inner chunk of variable size is prefixed with its size, so the decoder knows
        // what to decompress to before it decompresses.
        if self.size_prefix {
            let len = u32::try_from(scratch.len())
                .map_err(|_| Error::invalid("an inner chunk over 4 GiB"))?;
            out.extend_from_slice(&len.to_le_bytes());
        }
        let body = out.len();
        match self.scheme {
            CompressionScheme::Lz4 => {
                out.resize(
                    body + lz4_flex::block::get_maximum_output_size(scratch.len()),
                    0,
                );
                let written = lz4_compress(scratch, &mut out[body..])?;
                if body - start + written < scratch.len() {
                    out.truncate(body + written);
                    return Ok(ChunkStorage::Compressed);
                }
            }
            CompressionScheme::Zstd => {
                out.resize(body + zstd::zstd_safe::compress_bound(scratch.len()), 0);
                let written = match &self.dictionary {
                    Some(dictionary) => {
                        zstd_compress_with(scratch, &mut out[body..], &dictionary.cdict)?
                    }
                    None => zstd_compress(
                        scratch,
                        &mut out[body..],
                        self.level.unwrap_or(DEFAULT_ZSTD_LEVEL),
                    )?,
                };
                if body - start + written < scratch.len() {
                    out.truncate(body + written);
                    return Ok(ChunkStorage::Compressed);
                }
            }
        }
        out.truncate(start);
        out.extend_from_slice(scratch);
        Ok(ChunkStorage::Raw)
    }

    /// With [`with_page_dictionary`](GeneralMiniBlockCompressor::with_page_dictionary):
    /// a compressor whose chunks use the page's dictionary, stored as page buffer 0 (the
    /// same from a sample as from the whole page: it is read off every chunk at once).
    fn for_page(
        &self,
        values: &[u8],
        _learn: Learn,
    ) -> Result<Option<Box<dyn MiniBlockCompressor>>> {
        if !self.learns_dictionary {
            return Ok(None);
        }
        let Some(bytes) = self.dictionary_bytes(values) else {
            return Ok(None);
        };
        let level = self.level.unwrap_or(DEFAULT_ZSTD_LEVEL);
        // The high streams stored once cost about their frame; stored chunk by chunk,
        // about what a few chunks spread over the page cost alone. Both are measured at
        // Zstd's fastest level first: without a clear saving no frame is made at the
        // page's level and no dictionary prepared (they would cost encode time for
        // nothing).
        let mut frame = Vec::new();
        compress_append(
            CompressionScheme::Zstd,
            DICTIONARY_PROBE_LEVEL,
            &bytes,
            &mut frame,
        )?;
        // Each whole chunk adds this many bytes, in order (only the page's last may add
        // fewer).
        let chunk_stream_bytes =
            DICTIONARY_STREAMS.min(self.inner.value_width()) * self.inner.chunk_values();
        let chunks = bytes.len().div_ceil(chunk_stream_bytes);
        let step = chunks.div_ceil(DICTIONARY_PROBES).max(1);
        let (mut probed, mut probe_cost) = (0usize, 0usize);
        let mut probe = Vec::new();
        for c in (0..chunks).step_by(step) {
            let start = c * chunk_stream_bytes;
            let end = (start + chunk_stream_bytes).min(bytes.len());
            probe.clear();
            compress_append(
                CompressionScheme::Zstd,
                DICTIONARY_PROBE_LEVEL,
                &bytes[start..end],
                &mut probe,
            )?;
            probed += end - start;
            probe_cost += probe.len().min(end - start);
        }
        let alone = probe_cost as f64 / probed.max(1) as f64;
        let shared = frame.len() as f64 / bytes.len() as f64;
        if shared >= alone * DICTIONARY_SAVING {
            return Ok(None);
        }
        frame.clear();
        compress_append(CompressionScheme::Zstd, level, &bytes, &mut frame)?;
        let cdict = zstd::zstd_safe::CDict::try_create(&bytes, level)
            .ok_or_else(|| Error::invalid("zstd could not prepare a page's dictionary"))?;
        Ok(Some(Box::new(Self {
            inner: Arc::clone(&self.inner),
            scheme: self.scheme,
            level: self.level,
            repeat_layout: self.repeat_layout,
            size_prefix: self.size_prefix,
            learns_dictionary: false,
            dictionary: Some(Arc::new(PageDictionary {
                buffers: vec![frame],
                cdict,
            })),
        })))
    }

    fn page_buffers(&self) -> &[Vec<u8>] {
        self.dictionary.as_ref().map_or(&[], |d| &d.buffers)
    }
}

/// Decompresses each chunk, then decodes it with the inner decompressor.
pub struct GeneralMiniBlockDecompressor {
    inner: Box<dyn MiniBlockDecompressor>,
    scheme: CompressionScheme,
    /// Whether the message names a dictionary (page buffer 0), and, once the page's
    /// buffers are bound, the dictionary prepared for decoding.
    wants_dictionary: bool,
    ddict: Option<zstd::zstd_safe::DDict<'static>>,
}

impl std::fmt::Debug for GeneralMiniBlockDecompressor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GeneralMiniBlockDecompressor")
            .field("inner", &self.inner)
            .field("scheme", &self.scheme)
            .field("wants_dictionary", &self.wants_dictionary)
            .field("dictionary_bound", &self.ddict.is_some())
            .finish()
    }
}

impl GeneralMiniBlockDecompressor {
    /// Wraps `inner`.
    pub fn new(inner: Box<dyn MiniBlockDecompressor>, scheme: CompressionScheme) -> Self {
        Self {
            inner,
            scheme,
            wants_dictionary: false,
            ddict: None,
        }
    }

    /// Reads `dictionary` (the message's field 3) as page buffer 0 holding a Zstd
    /// dictionary, bound with the page's buffers; refused for LZ4, for an inner encoding
    /// that reads page buffers itself, and for any buffer but the page's first.
    pub fn with_dictionary(mut self, dictionary: Buffer) -> Result<Self> {
        if self.scheme != CompressionScheme::Zstd {
            return Err(Error::unsupported(
                "a dictionary for lz4 (only zstd takes one)",
            ));
        }
        if self.inner.page_buffer_count() != 0 {
            return Err(Error::unsupported(
                "a zstd dictionary over an encoding with page buffers of its own",
            ));
        }
        if dictionary.buffer_index != 0
            || dictionary.buffer_type != i32::from(buffer::BufferType::Page)
        {
            return Err(Error::unsupported(format!(
                "a zstd dictionary in {:?} buffer {} (only page buffer 0 is read)",
                dictionary.buffer_type, dictionary.buffer_index
            )));
        }
        self.wants_dictionary = true;
        Ok(self)
    }
}

impl GeneralMiniBlockDecompressor {
    /// Decompresses `chunk` into `scratch`, which ends up exactly `len` bytes long: what
    /// the inner encoding wrote. `len` comes from the validated chunk table, but it is
    /// still only a claim: up to [`TRUSTED_EXPANSION`] times the chunk's bytes (plus
    /// 64 KiB) it is allocated at once; beyond that the claim is verified first (an LZ4
    /// block's exact decoded size is read off its sequences; a Zstd frame decodes into a
    /// buffer that grows only as output really comes), so a lying chunk table cannot make
    /// a reader allocate much more than the bytes it holds.
    fn decompress_to_scratch(&self, chunk: &[u8], len: usize, scratch: &mut Vec<u8>) -> Result<()> {
        let trusted = len <= trusted_len(chunk.len());
        match self.scheme {
            CompressionScheme::Lz4 => {
                if !trusted {
                    let real = lz4_decoded_len(chunk, len)?;
                    if real != len {
                        return Err(Error::corrupt(format!(
                            "lz4 chunk of {} bytes decodes to {real} bytes, expected {len}",
                            chunk.len()
                        )));
                    }
                }
                // Kept from the previous chunk, not cleared: LZ4 writes its output from
                // the start and must write exactly `len` bytes (checked), so no stale
                // byte survives a success, and this skips zeroing a chunk per chunk.
                scratch.resize(len, 0);
                let written = lz4_decompress(chunk, scratch)?;
                check_lz4_len(written, len)
            }
            CompressionScheme::Zstd => {
                check_zstd_header(chunk, len)?;
                if let Some(ddict) = &self.ddict {
                    // As without a dictionary: a large claim is verified as output comes.
                    if !trusted {
                        return zstd_decompress_growing_with(chunk, len, scratch, Some(ddict));
                    }
                    scratch.resize(len, 0);
                    return zstd_decompress_with(chunk, scratch, ddict);
                }
                if trusted {
                    scratch.resize(len, 0);
                    zstd_decompress(chunk, scratch)
                } else {
                    zstd_decompress_growing(chunk, len, scratch)
                }
            }
        }
    }

    /// Decompresses `chunk` into `scratch`: what the inner encoding wrote for `num_values`
    /// values. That is `len` bytes for an inner encoding that stores values at their width,
    /// the one size it allows for one of another fixed size (delta); an inner encoding of
    /// variable size (ALP) has its size in a u32 prefix, checked against the sizes the
    /// inner encoding can take before anything is allocated.
    fn decompress_inner(
        &self,
        chunk: &[u8],
        num_values: usize,
        len: usize,
        scratch: &mut Vec<u8>,
    ) -> Result<()> {
        let Some((min, max)) = self.inner.raw_len_range(num_values) else {
            return self.decompress_to_scratch(chunk, len, scratch);
        };
        if min == max {
            return self.decompress_to_scratch(chunk, min, scratch);
        }
        let (prefix, body) = chunk.split_at_checked(4).ok_or_else(|| {
            Error::corrupt(format!(
                "compressed chunk of {} bytes has no size prefix",
                chunk.len()
            ))
        })?;
        let inner_len = u32::from_le_bytes(prefix.try_into().expect("4 bytes")) as usize;
        if !(min..=max).contains(&inner_len) {
            return Err(Error::corrupt(format!(
                "compressed chunk of {num_values} values records an inner size of {inner_len} bytes (expected {min} to {max})"
            )));
        }
        self.decompress_to_scratch(body, inner_len, scratch)
    }

    /// Decompresses `chunk` into `out`, which it must fill exactly: a chunk decoding to
    /// fewer or more bytes is corrupt.
    fn decompress_exact(&self, chunk: &[u8], out: &mut [u8]) -> Result<()> {
        let len = out.len();
        match self.scheme {
            CompressionScheme::Lz4 => {
                let written = lz4_decompress(chunk, out)?;
                check_lz4_len(written, len)?;
            }
            CompressionScheme::Zstd => {
                check_zstd_header(chunk, len)?;
                match &self.ddict {
                    Some(ddict) => zstd_decompress_with(chunk, out, ddict)?,
                    None => zstd_decompress(chunk, out)?,
                }
            }
        }
        Ok(())
    }
}

impl MiniBlockDecompressor for GeneralMiniBlockDecompressor {
    fn value_width(&self) -> usize {
        self.inner.value_width()
    }

    fn page_buffer_count(&self) -> usize {
        usize::from(self.wants_dictionary)
    }

    /// With a dictionary: its frame is decoded (at most [`MAX_DICTIONARY_BYTES`], growing
    /// only as output comes) and prepared once for every chunk of the page.
    fn bind_page_buffers(&mut self, buffers: &[&[u8]]) -> Result<()> {
        if !self.wants_dictionary {
            return self.inner.bind_page_buffers(buffers);
        }
        let [frame] = buffers else {
            return Err(Error::corrupt(format!(
                "a page with a zstd dictionary has 1 page buffer, {} given",
                buffers.len()
            )));
        };
        // Within what a Zstd frame of its size can stand for, as for chunks.
        let limit = frame
            .len()
            .saturating_mul(CompressionScheme::Zstd.max_expansion())
            .min(MAX_DICTIONARY_BYTES);
        let mut bytes = Vec::new();
        zstd_decompress_bounded(frame, limit, &mut bytes)
            .map_err(|e| Error::corrupt(format!("the page's zstd dictionary: {e}")))?;
        if bytes.is_empty() || bytes.starts_with(&TRAINED_DICTIONARY_MAGIC) {
            return Err(Error::corrupt(
                "the page's zstd dictionary is empty or begins as a trained dictionary",
            ));
        }
        let ddict = zstd::zstd_safe::DDict::try_create(&bytes)
            .ok_or_else(|| Error::invalid("zstd could not prepare the page's dictionary"))?;
        self.ddict = Some(ddict);
        Ok(())
    }

    fn max_expansion(&self) -> usize {
        self.scheme
            .max_expansion()
            .saturating_mul(self.inner.raw_expansion())
    }

    fn raw_len_range(&self, num_values: usize) -> Option<(usize, usize)> {
        self.inner.raw_len_range(num_values)
    }

    fn raw_expansion(&self) -> usize {
        self.inner.raw_expansion()
    }

    fn decompress_into(
        &self,
        chunk: &[u8],
        num_values: usize,
        storage: ChunkStorage,
        out: &mut [u8],
        scratch: &mut Vec<u8>,
    ) -> Result<()> {
        let len = check_output(out, num_values, self.value_width())?;
        if storage == ChunkStorage::Raw {
            return self
                .inner
                .decompress_into(chunk, num_values, storage, out, scratch);
        }
        if self.inner.raw_chunks_are_values() {
            // Flat inside: the decompressed bytes are the values, so they go straight to
            // `out` (checked for its exact length above) without a copy through scratch.
            return self.decompress_exact(chunk, out);
        }
        self.decompress_inner(chunk, num_values, len, scratch)?;
        self.inner
            .decompress_into(scratch, num_values, ChunkStorage::Raw, out, &mut Vec::new())
    }

    fn decompress_append(
        &self,
        chunk: &[u8],
        num_values: usize,
        storage: ChunkStorage,
        out: &mut MutableBuffer,
        scratch: &mut Vec<u8>,
    ) -> Result<()> {
        if storage == ChunkStorage::Raw {
            return self
                .inner
                .decompress_append(chunk, num_values, storage, out, scratch);
        }
        let len = checked_len(num_values, self.value_width())?;
        self.decompress_inner(chunk, num_values, len, scratch)?;
        self.inner
            .decompress_append(scratch, num_values, ChunkStorage::Raw, out, &mut Vec::new())
    }

    fn decompress_uncompressed_chunks_append(
        &self,
        chunks: &[u8],
        num_values: usize,
        out: &mut MutableBuffer,
        scratch: &mut Vec<u8>,
    ) -> Result<()> {
        self.inner
            .decompress_uncompressed_chunks_append(chunks, num_values, out, scratch)
    }

    /// Chunks stored uncompressed hold what the inner encoding wrote: its own run decoder
    /// handles them.
    fn decompress_uncompressed_chunks_into(
        &self,
        chunks: &[u8],
        num_values: usize,
        out: &mut [u8],
        scratch: &mut Vec<u8>,
    ) -> Result<()> {
        self.inner
            .decompress_uncompressed_chunks_into(chunks, num_values, out, scratch)
    }
}

/// Appends `src` compressed as one LZ4 block or one Zstd frame (at `level`) to `out`;
/// the block and frame helpers of Lance's chunk framing (`crate::lance`).
pub(crate) fn compress_append(
    scheme: CompressionScheme,
    level: i32,
    src: &[u8],
    out: &mut Vec<u8>,
) -> Result<()> {
    let start = out.len();
    let bound = match scheme {
        CompressionScheme::Lz4 => lz4_flex::block::get_maximum_output_size(src.len()),
        CompressionScheme::Zstd => zstd::zstd_safe::compress_bound(src.len()),
    };
    out.resize(start + bound, 0);
    let written = match scheme {
        CompressionScheme::Lz4 => lz4_compress(src, &mut out[start..]),
        CompressionScheme::Zstd => zstd_compress(src, &mut out[start..], level),
    };
    match written {
        Ok(n) => {
            out.truncate(start + n);
            Ok(())
        }
        Err(e) => {
            out.truncate(start);
            Err(e)
        }
    }
}

/// Decompresses the LZ4 block or Zstd frame `src` into `out` (cleared first), which must
/// come out exactly `len` bytes long. `len` is allocated at once: callers bound it by what
/// the chunk can hold before calling.
pub(crate) fn decompress_exact_len(
    scheme: CompressionScheme,
    src: &[u8],
    len: usize,
    out: &mut Vec<u8>,
) -> Result<()> {
    out.clear();
    out.resize(len, 0);
    match scheme {
        CompressionScheme::Lz4 => {
            let written = lz4_decompress(src, out)?;
            check_lz4_len(written, len)
        }
        CompressionScheme::Zstd => zstd_decompress(src, out),
    }
}

/// Decompresses a Zstd frame of unknown decoded size, at most `limit` bytes, into `out`
/// (cleared first): in one call into a buffer of the size the frame records when its
/// bytes justify that size ([`trusted_len`], as for chunks), else growing it only as
/// output comes. (Zstd's streaming decoder copies its output through a buffer of its
/// own: one call writes it in place.)
pub(crate) fn zstd_decompress_bounded(src: &[u8], limit: usize, out: &mut Vec<u8>) -> Result<()> {
    let size = zstd::zstd_safe::get_frame_content_size(src).ok().flatten();
    match size {
        Some(size) if size <= limit as u64 => {
            let size = usize::try_from(size).unwrap_or(usize::MAX);
            if size <= trusted_len(src.len()) {
                decompress_exact_len(CompressionScheme::Zstd, src, size, out)
            } else {
                zstd_decompress_growing(src, size, out)
            }
        }
        Some(size) => Err(Error::corrupt(format!(
            "zstd frame of {} bytes claims {size} decoded bytes, more than the {limit} its place allows",
            src.len()
        ))),
        None => Err(Error::unsupported(
            "a zstd frame that does not record its decoded size",
        )),
    }
}
