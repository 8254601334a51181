//! Lance mini-block pages: reading any Lance 2.1/2.2 page of a flat fixed-width column,
//! and writing one from miniblock's encoders.
//!
//! A mini-block page is two buffers (three with a dictionary):
//!
//! ```text
//! buffer 0, chunk metadata: one u16 word per chunk (u32 with has_large_chunk)
//!     ((chunk_bytes / 8 - 1) << 4) | log2(values in the chunk)   (0 for the last chunk)
//! buffer 1, the chunks back to back, each:
//!     u16 num_levels          definition levels in the chunk (0 without nulls)
//!     u16 def_bytes           only when the page has definition levels
//!     u16 (u32) buffer bytes  one per value buffer
//!     padding to 8
//!     definition levels       padded to 8 (level 0: a value, 1: a null)
//!     each value buffer       padded to 8
//! buffer 2, the dictionary's items, when value_compression gives indices
//! ```
//!
//! Values under nulls are stored like any other (the levels say which are null).
//!
//! A worked example (`worked_example_bytes` below checks it): the f32 values 1.0, 2.0 and
//! -0.0, byte stream split, no compression, no nulls, one chunk:
//!
//! ```text
//! chunk:  00 00        num_levels 0 (no levels)
//!         0c 00        the value buffer is 12 bytes
//!         00 00 00 00  padding to 8
//!         00 00 00 | 00 00 00 | 80 00 00 | 3f 40 80   byte 0s, 1s, 2s, 3s of the values
//!         00 00 00 00  padding to 8: the chunk is 24 bytes
//! metadata: 20 00      ((24 / 8 - 1) << 4) | 0 (the last chunk)
//! ```

use arrow_buffer::{BooleanBuffer, NullBuffer};

use crate::encodings::CompressionScheme;
use crate::error::{Error, Result};
use crate::kernels;
use crate::proto::lance as pb;

use super::compression::{self, decode_items, ChunkDecoder, LevelDecoder};
use super::fastlanes;

/// Mini-block chunks and their buffers start at multiples of this.
const ALIGN: usize = 8;
/// A chunk is at most this many bytes unless the page has large chunks.
const MAX_SMALL_CHUNK: usize = 32 * 1024;

fn pad(len: usize) -> usize {
    (ALIGN - len % ALIGN) % ALIGN
}

/// The values of one decoded page, `width` bytes each, and which are null.
pub(crate) struct DecodedPage {
    pub values: Vec<u8>,
    pub nulls: Option<NullBuffer>,
}

/// Reads a little-endian integer of `width` bytes at `*at`, advancing it.
fn read_le(buf: &[u8], at: &mut usize, width: usize, what: &str) -> Result<usize> {
    let bytes = buf
        .get(*at..*at + width)
        .ok_or_else(|| Error::truncated(format!("Lance chunk ends inside its {what}")))?;
    *at += width;
    let mut b = [0u8; 8];
    b[..width].copy_from_slice(bytes);
    Ok(u64::from_le_bytes(b) as usize)
}

fn take<'a>(buf: &'a [u8], at: &mut usize, len: usize, what: &str) -> Result<&'a [u8]> {
    let end = at
        .checked_add(len)
        .filter(|&e| e <= buf.len())
        .ok_or_else(|| {
            Error::truncated(format!(
                "Lance chunk of {} bytes ends inside its {what}",
                buf.len()
            ))
        })?;
    let out = &buf[*at..end];
    *at = end + pad(end);
    Ok(out)
}

/// Whether a page's single layer says its items may be null.
fn nullable_layer(layers: &[i32]) -> Result<bool> {
    match layers {
        [l] if *l == pb::RepDefLayer::RepdefAllValidItem as i32 => Ok(false),
        [l] if *l == pb::RepDefLayer::RepdefNullableItem as i32 => Ok(true),
        _ => Err(Error::unsupported(format!(
            "a Lance page with layers {layers:?}: lists and structs are not fixed-width columns"
        ))),
    }
}

/// Decodes a whole page of `rows` values of `width` bytes.
pub(crate) fn decode_page(
    layout: &pb::PageLayout,
    buffers: &[&[u8]],
    rows: usize,
    width: usize,
) -> Result<DecodedPage> {
    match &layout.layout {
        Some(pb::page_layout::Layout::MiniBlockLayout(mb)) => {
            decode_mini_block(mb, buffers, rows, width)
        }
        Some(pb::page_layout::Layout::ConstantLayout(c)) => {
            decode_constant(c, buffers, rows, width)
        }
        Some(pb::page_layout::Layout::FullZipLayout(_)) => Err(Error::unsupported(
            "Lance full-zip pages (Lance writes them for values wider than 128 bytes)",
        )),
        Some(pb::page_layout::Layout::BlobLayout(_)) => Err(Error::unsupported("Lance blob pages")),
        None => Err(Error::unsupported(
            "a Lance page layout this reader does not know",
        )),
    }
}

fn decode_constant(
    c: &pb::ConstantLayout,
    buffers: &[&[u8]],
    rows: usize,
    width: usize,
) -> Result<DecodedPage> {
    let nullable = nullable_layer(&c.layers)?;
    let has_levels = c.rep_compression.is_some() || c.def_compression.is_some();
    match (&c.inline_value, buffers.is_empty(), has_levels) {
        (Some(value), true, false) => {
            if value.len() != width {
                return Err(Error::corrupt(format!(
                    "Lance constant page of {width}-byte values holds a {}-byte value",
                    value.len()
                )));
            }
            let mut values = Vec::with_capacity(rows * width);
            for _ in 0..rows {
                values.extend_from_slice(value);
            }
            Ok(DecodedPage {
                values,
                nulls: None,
            })
        }
        (None, true, false) if nullable => Ok(DecodedPage {
            values: vec![0; rows * width],
            nulls: Some(NullBuffer::new_null(rows)),
        }),
        _ => Err(Error::unsupported(
            "a Lance constant page with its value or levels in buffers",
        )),
    }
}

struct ChunkEntry {
    bytes: usize,
    values: usize,
}

fn chunk_table(meta: &[u8], large: bool, rows: usize, data_len: usize) -> Result<Vec<ChunkEntry>> {
    let word = if large { 4 } else { 2 };
    if !meta.len().is_multiple_of(word) {
        return Err(Error::corrupt(format!(
            "Lance chunk metadata of {} bytes is not whole {word}-byte words",
            meta.len()
        )));
    }
    let count = meta.len() / word;
    if count == 0 && rows > 0 {
        return Err(Error::corrupt("Lance mini-block page without chunks"));
    }
    let mut chunks = Vec::with_capacity(count);
    let (mut seen_values, mut seen_bytes) = (0usize, 0usize);
    for (i, w) in meta.chunks_exact(word).enumerate() {
        let mut b = [0u8; 4];
        b[..word].copy_from_slice(w);
        let w = u32::from_le_bytes(b) as usize;
        let bytes = ((w >> 4) + 1) * ALIGN;
        if !large && bytes > MAX_SMALL_CHUNK {
            return Err(Error::corrupt("Lance chunk over 32 KiB"));
        }
        let log = w & 0xF;
        let last = i + 1 == count;
        let values = if log == 0 {
            if !last {
                return Err(Error::corrupt(format!(
                    "Lance chunk {i} of {count} has no value count"
                )));
            }
            rows.checked_sub(seen_values).filter(|&v| v > 0)
        } else {
            Some(1usize << log)
        }
        .ok_or_else(|| {
            Error::corrupt(format!(
                "Lance chunks hold more than the page's {rows} values"
            ))
        })?;
        seen_values += values;
        seen_bytes += bytes;
        if seen_values > rows || seen_bytes > data_len {
            return Err(Error::corrupt(format!(
                "Lance chunks hold more than the page's {rows} values or {data_len} bytes"
            )));
        }
        chunks.push(ChunkEntry { bytes, values });
    }
    if seen_values != rows {
        return Err(Error::corrupt(format!(
            "Lance chunks hold {seen_values} values, the page {rows}"
        )));
    }
    Ok(chunks)
}

/// A page layout as text: `mini-block: general zstd over byte stream split over flat
/// 32-bit, nullable`, `mini-block: dictionary of 118 items (general lz4 over flat 64-bit),
/// indices inline bit-packing of 32-bit`, `constant`.
pub fn describe(layout: &pb::PageLayout) -> String {
    match &layout.layout {
        Some(pb::page_layout::Layout::MiniBlockLayout(mb)) => {
            let values = mb
                .value_compression
                .as_ref()
                .map_or_else(|| "no values".to_owned(), compression::describe);
            let mut text = match &mb.dictionary {
                Some(items) => format!(
                    "mini-block: dictionary of {} items ({}), indices {values}",
                    mb.num_dictionary_items,
                    compression::describe(items)
                ),
                None => format!("mini-block: {values}"),
            };
            if mb.def_compression.is_some() {
                text.push_str(", nullable");
            }
            text
        }
        Some(pb::page_layout::Layout::ConstantLayout(_)) => "constant".to_owned(),
        Some(pb::page_layout::Layout::FullZipLayout(_)) => "full-zip".to_owned(),
        Some(pb::page_layout::Layout::BlobLayout(_)) => "blob".to_owned(),
        None => "unknown".to_owned(),
    }
}

/// One chunk of a Lance mini-block page, as its bytes lie in the page.
#[derive(Debug)]
pub struct LanceChunk<'a> {
    /// Values in the chunk.
    pub num_values: usize,
    /// Its definition levels (one per value), encoded, when the page has them.
    pub levels: Option<&'a [u8]>,
    /// Its value buffers, encoded.
    pub buffers: Vec<&'a [u8]>,
}

/// Cuts a mini-block page's data buffer into its chunks, checking the metadata words
/// against `rows` and the data's size, and each chunk's header against its bytes.
/// `has_levels` and `num_buffers` come from the page's `MiniBlockLayout`.
pub fn split_chunks<'a>(
    meta: &[u8],
    data: &'a [u8],
    rows: usize,
    has_large_chunk: bool,
    has_levels: bool,
    num_buffers: usize,
) -> Result<Vec<LanceChunk<'a>>> {
    if num_buffers > 16 {
        return Err(Error::corrupt(format!(
            "Lance chunks of {num_buffers} buffers"
        )));
    }
    let entries = chunk_table(meta, has_large_chunk, rows, data.len())?;
    let size_width = if has_large_chunk { 4 } else { 2 };
    let mut chunks = Vec::with_capacity(entries.len());
    let mut offset = 0;
    for (i, entry) in entries.iter().enumerate() {
        let chunk = &data[offset..offset + entry.bytes];
        offset += entry.bytes;
        let mut at = 0;
        let num_levels = read_le(chunk, &mut at, 2, "level count")?;
        let def_bytes = if has_levels {
            Some(read_le(chunk, &mut at, 2, "level size")?)
        } else {
            None
        };
        let mut sizes = Vec::with_capacity(num_buffers);
        for _ in 0..num_buffers {
            sizes.push(read_le(chunk, &mut at, size_width, "buffer sizes")?);
        }
        at += pad(at);
        let levels = match def_bytes {
            Some(def_bytes) => {
                if num_levels != entry.values {
                    return Err(Error::corrupt(format!(
                        "Lance chunk {i} of {} values has {num_levels} definition levels",
                        entry.values
                    )));
                }
                Some(take(chunk, &mut at, def_bytes, "definition levels")?)
            }
            None if num_levels != 0 => {
                return Err(Error::corrupt(format!(
                    "Lance chunk {i} has levels its page does not describe"
                )))
            }
            None => None,
        };
        let mut buffers = Vec::with_capacity(num_buffers);
        for size in sizes {
            buffers.push(take(chunk, &mut at, size, "value buffers")?);
        }
        chunks.push(LanceChunk {
            num_values: entry.values,
            levels,
            buffers,
        });
    }
    Ok(chunks)
}

fn decode_mini_block(
    mb: &pb::MiniBlockLayout,
    buffers: &[&[u8]],
    rows: usize,
    width: usize,
) -> Result<DecodedPage> {
    let nullable = nullable_layer(&mb.layers)?;
    if mb.rep_compression.is_some() || mb.repetition_index_depth != 0 {
        return Err(Error::unsupported(
            "Lance pages with repetition levels (lists)",
        ));
    }
    if mb.num_items != rows as u64 {
        return Err(Error::corrupt(format!(
            "Lance page of {rows} rows describes {} items",
            mb.num_items
        )));
    }
    let values_encoding = mb
        .value_compression
        .as_ref()
        .ok_or_else(|| Error::corrupt("Lance mini-block page without its value encoding"))?;
    let decoder = ChunkDecoder::parse(values_encoding)?;
    let levels = match (&mb.def_compression, nullable) {
        (Some(def), true) => Some(LevelDecoder::parse(def)?),
        (None, false) => None,
        (Some(_), false) => {
            return Err(Error::corrupt(
                "Lance page of valid items with definition levels",
            ))
        }
        (None, true) => {
            return Err(Error::unsupported(
                "Lance nullable page without definition levels",
            ))
        }
    };
    if mb.num_buffers != decoder.num_buffers() as u64 {
        return Err(Error::corrupt(format!(
            "Lance page says {} buffers per chunk, its encoding uses {}",
            mb.num_buffers,
            decoder.num_buffers()
        )));
    }
    let dictionary = if let Some(items) = &mb.dictionary {
        let n = usize::try_from(mb.num_dictionary_items)
            .map_err(|_| Error::corrupt("dictionary size"))?;
        let buf = buffers
            .get(2)
            .ok_or_else(|| Error::corrupt("Lance dictionary page without its dictionary buffer"))?;
        if n > buf.len().saturating_mul(256).saturating_add(1024) {
            return Err(Error::corrupt(format!(
                "Lance dictionary of {n} items in {} bytes",
                buf.len()
            )));
        }
        let (item_width, items) = decode_items(items, buf, n)?;
        if item_width != width {
            return Err(Error::corrupt(format!(
                "Lance dictionary of {item_width}-byte items for {width}-byte values"
            )));
        }
        if !matches!(decoder.width(), 1 | 2 | 4 | 8) {
            return Err(Error::corrupt(
                "Lance dictionary indices wider than 8 bytes",
            ));
        }
        Some((n, items))
    } else {
        if decoder.width() != width {
            return Err(Error::corrupt(format!(
                "Lance page of {width}-byte values decodes to {}-byte values",
                decoder.width()
            )));
        }
        None
    };
    let expected_buffers = 2 + usize::from(dictionary.is_some());
    if buffers.len() != expected_buffers {
        return Err(Error::corrupt(format!(
            "Lance mini-block page with {} buffers, expected {expected_buffers}",
            buffers.len()
        )));
    }
    let (meta, data) = (buffers[0], buffers[1]);
    let chunks = split_chunks(
        meta,
        data,
        rows,
        mb.has_large_chunk,
        levels.is_some(),
        decoder.num_buffers(),
    )?;

    let out_width = decoder.width();
    // Grown as chunks decode: a page's rows are a claim until its chunks bear it out.
    let mut values = Vec::with_capacity((rows * out_width).min(data.len().saturating_mul(16)));
    let mut valid: Vec<bool> = Vec::new();
    let mut level_buf = Vec::new();
    let mut scratch = Vec::new();
    for chunk in &chunks {
        if let (Some(levels), Some(def)) = (&levels, chunk.levels) {
            levels.decode(def, chunk.num_values, &mut level_buf)?;
            for &l in &level_buf {
                match l {
                    0 => valid.push(true),
                    1 => valid.push(false),
                    _ => {
                        return Err(Error::corrupt(format!(
                            "Lance definition level {l} for a flat column"
                        )))
                    }
                }
            }
        }
        decoder.decode(&chunk.buffers, chunk.num_values, &mut values, &mut scratch)?;
    }
    let values = match dictionary {
        None => values,
        Some((n, items)) => {
            let mut mapped = Vec::with_capacity(values.len() / out_width * width);
            for index in values.chunks_exact(out_width) {
                let mut b = [0u8; 8];
                b[..out_width].copy_from_slice(index);
                let index = u64::from_le_bytes(b) as usize;
                let item = items
                    .get(index * width..(index + 1) * width)
                    .filter(|_| index < n)
                    .ok_or_else(|| {
                        Error::corrupt(format!("Lance dictionary index {index} of {n} items"))
                    })?;
                mapped.extend_from_slice(item);
            }
            mapped
        }
    };
    let nulls = levels.map(|_| NullBuffer::new(BooleanBuffer::from(valid)));
    Ok(DecodedPage { values, nulls })
}

/// How a page miniblock writes for Lance stores its values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LanceValues {
    /// As they are (`Flat`).
    Flat,
    /// Byte stream split per chunk.
    Bss,
}

/// One page to write: `values` at `width` bytes each (little endian, back to back),
/// which are null, `chunk_values` per chunk, how chunks are stored.
pub struct PageSpec<'a> {
    /// The values' bytes.
    pub values: &'a [u8],
    /// Bytes per value.
    pub width: usize,
    /// Which values are null (`None`: a column without nulls, no definition levels).
    pub nulls: Option<&'a NullBuffer>,
    /// Values per chunk (a power of two; at most 16 KiB of values).
    pub chunk_values: usize,
    /// Flat or byte stream split.
    pub transform: LanceValues,
    /// General compression of each chunk, and the Zstd level to record.
    pub compression: Option<(CompressionScheme, Option<i32>)>,
}

/// An encoded mini-block page: its description and its two buffers (chunk metadata,
/// chunks).
pub struct EncodedLancePage {
    /// The page's `PageLayout` (a `MiniBlockLayout`).
    pub layout: pb::PageLayout,
    /// Chunk metadata words, the chunks, and for a dictionary page its items.
    pub buffers: Vec<Vec<u8>>,
}

/// Encodes a page in Lance's mini-block layout. General compression is kept only when it
/// shrinks the page's value bytes, as Lance's writer does (whole page, not per chunk).
pub fn encode_page(spec: &PageSpec<'_>) -> Result<EncodedLancePage> {
    let width = spec.width;
    if !spec.values.len().is_multiple_of(width) {
        return Err(Error::invalid("page bytes are not whole values"));
    }
    let rows = spec.values.len() / width;
    if !spec.chunk_values.is_power_of_two()
        || !(2..=1 << 15).contains(&spec.chunk_values)
        || spec.chunk_values * width > 16 * 1024
    {
        return Err(Error::invalid(format!(
            "Lance chunks of {} values of {width} bytes: a power of two from 2 to 32768 values, at most 16 KiB",
            spec.chunk_values
        )));
    }
    if let Some(nulls) = spec.nulls {
        if nulls.len() != rows {
            return Err(Error::invalid("validity and values differ in length"));
        }
    }
    // Each chunk's raw value buffer (after the transform).
    let mut raw: Vec<Vec<u8>> = Vec::with_capacity(rows.div_ceil(spec.chunk_values));
    for chunk in spec.values.chunks(spec.chunk_values * width) {
        raw.push(match spec.transform {
            LanceValues::Flat => chunk.to_vec(),
            LanceValues::Bss => {
                let mut out = vec![0u8; chunk.len()];
                kernels::split(chunk, &mut out, width);
                out
            }
        });
    }
    let bits = (width * 8) as u64;
    let mut encoding = match spec.transform {
        LanceValues::Flat => compression::flat(bits),
        LanceValues::Bss => compression::bss(bits),
    };
    let mut stored = raw;
    if let Some((scheme, level)) = spec.compression {
        let mut compressed = Vec::with_capacity(stored.len());
        for chunk in &stored {
            let mut out = Vec::new();
            compression::compress_buffer(scheme, level.unwrap_or(3), chunk, &mut out)?;
            compressed.push(out);
        }
        let before: usize = stored.iter().map(Vec::len).sum();
        let after: usize = compressed.iter().map(Vec::len).sum();
        if after < before {
            stored = compressed;
            encoding = compression::general(scheme, level, encoding);
        }
    }
    let (meta, data) = frame(&stored, spec.chunk_values, rows, spec.nulls)?;
    Ok(EncodedLancePage {
        layout: mini_block_layout(encoding, None, rows, spec.nulls.is_some()),
        buffers: vec![meta, data],
    })
}

/// Definition levels are 0 (a value) or 1 (a null): one bit each.
const DEF_BITS: usize = 1;

/// Lays chunks out as a mini-block page: the metadata words and the data buffer, each
/// chunk with its definition levels when the page has nulls. Every chunk holds
/// `chunk_values` values but the last.
fn frame(
    stored: &[Vec<u8>],
    chunk_values: usize,
    rows: usize,
    nulls: Option<&NullBuffer>,
) -> Result<(Vec<u8>, Vec<u8>)> {
    let mut meta = Vec::with_capacity(stored.len() * 2);
    let mut data = Vec::new();
    let mut levels = Vec::new();
    let count = stored.len();
    for (i, buf) in stored.iter().enumerate() {
        let start = data.len();
        let first = i * chunk_values;
        let n = chunk_values.min(rows - first);
        let def = nulls
            .map(|nulls| -> Result<Vec<u8>> {
                levels.clear();
                levels.extend((first..first + n).map(|r| u16::from(nulls.is_null(r))));
                let mut packed = Vec::new();
                LevelDecoder::encode_out_of_line(DEF_BITS, &levels, &mut packed)?;
                Ok(packed)
            })
            .transpose()?;
        let num_levels = if def.is_some() { n } else { 0 };
        data.extend_from_slice(&(num_levels as u16).to_le_bytes());
        if let Some(def) = &def {
            data.extend_from_slice(&(def.len() as u16).to_le_bytes());
        }
        let size = u16::try_from(buf.len())
            .map_err(|_| Error::invalid("a Lance chunk buffer over 64 KiB"))?;
        data.extend_from_slice(&size.to_le_bytes());
        data.resize(data.len() + pad(data.len()), 0);
        if let Some(def) = &def {
            data.extend_from_slice(def);
            data.resize(data.len() + pad(data.len()), 0);
        }
        data.extend_from_slice(buf);
        data.resize(data.len() + pad(data.len()), 0);
        let bytes = data.len() - start;
        if bytes > MAX_SMALL_CHUNK {
            return Err(Error::invalid(format!(
                "a Lance chunk of {bytes} bytes (at most 32 KiB)"
            )));
        }
        let log = if i + 1 == count {
            0
        } else {
            chunk_values.trailing_zeros() as usize
        };
        let word = ((bytes / ALIGN - 1) << 4) | log;
        meta.extend_from_slice(&(word as u16).to_le_bytes());
    }
    Ok((meta, data))
}

/// The `MiniBlockLayout` of a flat column's page.
fn mini_block_layout(
    values: pb::CompressiveEncoding,
    dictionary: Option<(pb::CompressiveEncoding, usize)>,
    rows: usize,
    nullable: bool,
) -> pb::PageLayout {
    let layer = if nullable {
        pb::RepDefLayer::RepdefNullableItem
    } else {
        pb::RepDefLayer::RepdefAllValidItem
    };
    let (dictionary, num_dictionary_items) = match dictionary {
        Some((items, n)) => (Some(items), n as u64),
        None => (None, 0),
    };
    pb::PageLayout {
        layout: Some(pb::page_layout::Layout::MiniBlockLayout(
            pb::MiniBlockLayout {
                rep_compression: None,
                def_compression: nullable.then(|| compression::levels_out_of_line(DEF_BITS as u64)),
                value_compression: Some(values),
                dictionary,
                num_dictionary_items,
                layers: vec![layer as i32],
                num_buffers: 1,
                repetition_index_depth: 0,
                num_items: rows as u64,
                has_large_chunk: false,
            },
        )),
    }
}

/// Most distinct values a dictionary page holds.
const MAX_DICTIONARY: usize = 1 << 16;

/// Encodes a page as a dictionary, as Lance 2.2 does for low-cardinality columns: the
/// distinct values (in order of first appearance) in a third page buffer, flat or under
/// `spec.compression` when that shrinks them; per chunk of 1024 values, their u32 indices
/// FastLanes-packed to the fewest bits (`InlineBitpacking`: a u32 bit width, then the
/// packed words). Values under nulls are not kept (a null's index is 0). `None` when the
/// page has more than 65536 distinct values or is not 32- or 64-bit.
pub fn encode_dictionary_page(spec: &PageSpec<'_>) -> Result<Option<EncodedLancePage>> {
    let width = spec.width;
    if !matches!(width, 4 | 8) || !spec.values.len().is_multiple_of(width) {
        return Ok(None);
    }
    let rows = spec.values.len() / width;
    let mut index_of = std::collections::HashMap::new();
    let mut items = Vec::new();
    let mut indices = Vec::with_capacity(rows);
    for (r, value) in spec.values.chunks_exact(width).enumerate() {
        if spec.nulls.is_some_and(|n| n.is_null(r)) {
            indices.push(0u32);
            continue;
        }
        let mut key = [0u8; 8];
        key[..width].copy_from_slice(value);
        let next = index_of.len();
        let index = *index_of.entry(u64::from_le_bytes(key)).or_insert(next);
        if index == next {
            if next == MAX_DICTIONARY {
                return Ok(None);
            }
            items.extend_from_slice(value);
        }
        indices.push(index as u32);
    }
    if items.is_empty() {
        items.resize(width, 0);
    }
    let num_items = items.len() / width;
    let mut stored = Vec::with_capacity(rows.div_ceil(fastlanes::BLOCK));
    let mut block = [0u64; fastlanes::BLOCK];
    for chunk in indices.chunks(fastlanes::BLOCK) {
        block.fill(0);
        for (b, &i) in block.iter_mut().zip(chunk) {
            *b = u64::from(i);
        }
        let bits = 32 - chunk.iter().fold(0u32, |a, &i| a | i).leading_zeros();
        let mut buf = Vec::with_capacity(4 + fastlanes::packed_bytes(32, bits as usize));
        buf.extend_from_slice(&bits.to_le_bytes());
        fastlanes::pack(32, bits as usize, &block, &mut buf)?;
        stored.push(buf);
    }
    let item_bits = (width * 8) as u64;
    let mut items_encoding = compression::flat(item_bits);
    if let Some((scheme, level)) = spec.compression {
        let mut compressed = Vec::new();
        compression::compress_buffer(scheme, level.unwrap_or(3), &items, &mut compressed)?;
        if compressed.len() < items.len() {
            items = compressed;
            items_encoding = compression::general(scheme, level, items_encoding);
        }
    }
    let (meta, data) = frame(&stored, fastlanes::BLOCK, rows, spec.nulls)?;
    Ok(Some(EncodedLancePage {
        layout: mini_block_layout(
            compression::inline_bitpacking(32),
            Some((items_encoding, num_items)),
            rows,
            spec.nulls.is_some(),
        ),
        buffers: vec![meta, data, items],
    }))
}

/// Decodes the value buffers of one mini-block chunk, as a `CompressiveEncoding` describes
/// them (validated once, here).
#[derive(Debug, Clone)]
pub struct ValueDecoder(ChunkDecoder);

impl ValueDecoder {
    /// Validates a page's `value_compression`.
    pub fn new(encoding: &pb::CompressiveEncoding) -> Result<Self> {
        ChunkDecoder::parse(encoding).map(Self)
    }

    /// Value buffers per chunk.
    pub fn num_buffers(&self) -> usize {
        self.0.num_buffers()
    }

    /// The `num_values` values of one chunk, little endian, back to back.
    pub fn decode(&self, buffers: &[&[u8]], num_values: usize) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.0
            .decode(buffers, num_values, &mut out, &mut Vec::new())?;
        Ok(out)
    }
}

/// Decodes one chunk's definition levels, as a page's `def_compression` describes them.
#[derive(Debug, Clone)]
pub struct LevelsDecoder(LevelDecoder);

impl LevelsDecoder {
    /// Validates a page's `def_compression`.
    pub fn new(encoding: &pb::CompressiveEncoding) -> Result<Self> {
        LevelDecoder::parse(encoding).map(Self)
    }

    /// The chunk's `num_levels` levels (0: a value, 1: a null).
    pub fn decode(&self, buf: &[u8], num_levels: usize) -> Result<Vec<u16>> {
        let mut out = Vec::new();
        self.0.decode(buf, num_levels, &mut out)?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worked_example_bytes() {
        let values: Vec<u8> = [1.0f32, 2.0, -0.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let page = encode_page(&PageSpec {
            values: &values,
            width: 4,
            nulls: None,
            chunk_values: 1024,
            transform: LanceValues::Bss,
            compression: None,
        })
        .unwrap();
        assert_eq!(page.buffers[0], [0x20, 0x00]);
        assert_eq!(
            page.buffers[1],
            [
                0x00, 0x00, 0x0c, 0x00, 0x00, 0x00, 0x00, 0x00, // header, padded
                0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x00, 0x00, 0x3f, 0x40,
                0x80, // streams
                0x00, 0x00, 0x00, 0x00, // padding
            ]
        );
        let decoded =
            decode_page(&page.layout, &[&page.buffers[0], &page.buffers[1]], 3, 4).unwrap();
        assert_eq!(decoded.values, values);
        assert!(decoded.nulls.is_none());
    }
}
