//! Dictionary pages, Lance's `Dictionary`: the page's distinct values (its items) once in
//! a page buffer, and per chunk each value's index into them. Low-cardinality columns
//! (categories, sensor readings on a coarse grid, status codes) shrink to a few bits a
//! value, and a chunk still decodes alone: its indices, then a lookup.
//!
//! The items are the page's distinct values in increasing order (read as unsigned
//! little-endian integers), stored `flat` in page buffer 0. The indices are 16-bit
//! integers (32-bit on a page of more than 65536 distinct values) encoded chunk by chunk
//! with frame of reference and bit-packing (`bitpack`), alone (`dict`) or under Zstd
//! (`dict+zstd`). Values of 1 to 8 bytes are supported; a null's slot holds the index of
//! zero (the page encoder writes zero under nulls).
//!
//! ```text
//! ArrayEncoding.dictionary (7)
//!   indices (1): bitpack { bits_per_value: 16 (32 when k > 65536) }, or
//!                general_mini_block over it
//!   items (2): flat { bits_per_value: 8W, buffer: { buffer_index: 0, buffer_type: page } }
//!   num_dictionary_items (3): k (0 only on an empty page)
//! page buffer 0: the k items, W bytes each, strictly increasing
//! chunk of n values: n indices below k, as the indices encoding writes them
//! ```
//!
//! Worked example: u32 values `7, 3, 7, 7, 3` have the items `3, 7` (buffer `03 00 00 00
//! 07 00 00 00`) and the indices `1, 0, 1, 1, 0`, one chunk of bitpack: `01` (1 bit,
//! unsigned) `00 00` (reference 0) `0D` (bits 1 0 1 1 0, LSB first).

use super::bitpacked::{self, read, BitpackDecompressor};
use super::general::GeneralMiniBlockCompressor;
use super::{
    check_output, ChunkShape, ChunkStorage, CompressionScheme, Learn, MiniBlockCompressor,
    MiniBlockDecompressor,
};
use crate::error::{Error, Result};
use crate::kernels::unpack;
use crate::proto::encodings::{array_encoding, buffer, ArrayEncoding, Buffer, Dictionary, Flat};

/// Most items a dictionary with 16-bit indices holds; larger ones have 32-bit indices.
const MAX_NARROW_ITEMS: usize = 1 << 16;

/// The index width, in bytes, of a dictionary of `items` items.
fn index_width(items: usize) -> usize {
    if items <= MAX_NARROW_ITEMS {
        2
    } else {
        4
    }
}

/// Whether values of `width` bytes can be dictionary-encoded.
pub(crate) fn supports_width(width: usize) -> bool {
    (1..=8).contains(&width)
}

/// An open-addressing map from values to indices: a page's values are looked up once
/// each, which a general-purpose hash map would make the encoder's slowest step.
#[derive(Debug, Clone)]
struct ItemTable {
    /// (value, index + 1); index 0 marks an empty slot.
    slots: Vec<(u64, u32)>,
    len: usize,
}

impl ItemTable {
    fn with_capacity(items: usize) -> Self {
        Self {
            slots: vec![(0, 0); (2 * items).next_power_of_two().max(64)],
            len: 0,
        }
    }

    fn slot(&self, value: u64) -> usize {
        let shift = 64 - self.slots.len().trailing_zeros();
        (value.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> shift) as usize
    }

    /// The index of `value`, if it is in the table.
    fn get(&self, value: u64) -> Option<u32> {
        let mask = self.slots.len() - 1;
        let mut at = self.slot(value);
        loop {
            let (v, i) = self.slots[at];
            if i == 0 {
                return None;
            }
            if v == value {
                return Some(i - 1);
            }
            at = (at + 1) & mask;
        }
    }

    /// Adds `value` with `index` unless it is there; whether it was added.
    fn insert(&mut self, value: u64, index: u32) -> bool {
        if 2 * (self.len + 1) > self.slots.len() {
            let old = std::mem::take(&mut self.slots);
            self.slots = vec![(0, 0); 2 * old.len()];
            self.len = 0;
            for (v, i) in old.into_iter().filter(|&(_, i)| i != 0) {
                self.insert(v, i - 1);
            }
        }
        let mask = self.slots.len() - 1;
        let mut at = self.slot(value);
        loop {
            let (v, i) = self.slots[at];
            if i == 0 {
                self.slots[at] = (value, index + 1);
                self.len += 1;
                return true;
            }
            if v == value {
                return false;
            }
            at = (at + 1) & mask;
        }
    }
}

/// Whether a sample of a page (`values`, of `width` bytes) has few enough distinct values
/// that a dictionary may pay: at most a quarter of the sample.
pub(crate) fn worth_trying(values: &[&[u8]], width: usize) -> bool {
    let n: usize = values.iter().map(|v| v.len() / width).sum();
    let limit = n / 4;
    let mut table = ItemTable::with_capacity(limit.min(1024));
    for v in values.iter().flat_map(|v| v.chunks_exact(width)) {
        if table.insert(read(v), 0) && table.len > limit {
            return false;
        }
    }
    n > 0
}

/// The template of a page's dictionary encoder: values of `width` bytes, indices under
/// `scheme` or bare. It encodes nothing itself; [`for_page`](MiniBlockCompressor::for_page)
/// makes the encoder of one page, with that page's items.
#[derive(Debug, Clone)]
pub struct DictionaryEncoder {
    shape: ChunkShape,
    compression: Option<(CompressionScheme, i32)>,
}

impl DictionaryEncoder {
    /// An encoder for values of `bits_per_value` bits (8 to 64, whole bytes).
    pub fn try_new(bits_per_value: u64) -> Result<Self> {
        let shape = ChunkShape::from_bits(bits_per_value)?;
        if !supports_width(shape.width) {
            return Err(Error::unsupported(format!(
                "dict takes values of 1 to 8 bytes, not {bits_per_value}-bit values"
            )));
        }
        Ok(Self {
            shape,
            compression: None,
        })
    }

    /// The same encoder with chunks of `chunk_values` values.
    pub fn with_chunk_values(self, chunk_values: usize) -> Result<Self> {
        Ok(Self {
            shape: self.shape.with_chunk_values(chunk_values)?,
            ..self
        })
    }

    /// The same encoder with each chunk's indices compressed by `scheme` at `level`.
    pub fn with_compression(self, scheme: CompressionScheme, level: i32) -> Self {
        Self {
            compression: Some((scheme, level)),
            ..self
        }
    }

    /// The message of a page of `num_items` items whose indices `indices` encodes.
    fn message(&self, indices: ArrayEncoding, num_items: usize) -> ArrayEncoding {
        ArrayEncoding {
            array_encoding: Some(array_encoding::ArrayEncoding::Dictionary(Box::new(
                Dictionary {
                    indices: Some(Box::new(indices)),
                    items: Some(Box::new(ArrayEncoding {
                        array_encoding: Some(array_encoding::ArrayEncoding::Flat(Flat {
                            bits_per_value: 8 * self.shape.width as u64,
                            buffer: Some(Buffer {
                                buffer_index: 0,
                                buffer_type: buffer::BufferType::Page as i32,
                            }),
                            compression: None,
                        })),
                    })),
                    num_dictionary_items: num_items as u32,
                },
            ))),
        }
    }

    fn indices_compressor(&self, index_width: usize) -> Result<Box<dyn MiniBlockCompressor>> {
        let packed = Box::new(
            bitpacked::BitpackEncoder::try_new(8 * index_width as u64)?
                .with_chunk_values(self.shape.chunk_values)?,
        );
        Ok(match self.compression {
            None => packed,
            Some((scheme, level)) => {
                let general = GeneralMiniBlockCompressor::try_new(packed, scheme)?;
                Box::new(match scheme {
                    CompressionScheme::Zstd => general.with_level(level)?,
                    CompressionScheme::Lz4 => general,
                })
            }
        })
    }
}

impl MiniBlockCompressor for DictionaryEncoder {
    fn value_width(&self) -> usize {
        self.shape.width
    }

    fn chunk_values(&self) -> usize {
        self.shape.chunk_values
    }

    /// A dictionary of no items: the template describes no page.
    fn array_encoding(&self) -> ArrayEncoding {
        let indices = self
            .indices_compressor(2)
            .map_or_else(|_| bitpacked::message(2), |c| c.array_encoding());
        self.message(indices, 0)
    }

    fn compress_chunk(
        &self,
        values: &[u8],
        _: &mut Vec<u8>,
        _: &mut Vec<u8>,
    ) -> Result<ChunkStorage> {
        self.shape.check_chunk(values)?;
        Err(Error::invalid(
            "a dictionary encodes a page's chunks only once made for the page (for_page)",
        ))
    }

    fn for_page(
        &self,
        values: &[u8],
        _learn: Learn,
    ) -> Result<Option<Box<dyn MiniBlockCompressor>>> {
        let width = self.shape.width;
        if !values.len().is_multiple_of(width) {
            return Err(Error::invalid(format!(
                "{} bytes are not a whole number of {width}-byte values",
                values.len()
            )));
        }
        let mut table = ItemTable::with_capacity(1024);
        let mut items = Vec::new();
        // A value equal to the one before it is in the table already: series of few
        // distinct values repeat them in runs, and a comparison costs less than a probe.
        let mut previous = None;
        for v in values.chunks_exact(width) {
            let v = read(v);
            if previous != Some(v) && table.insert(v, 0) {
                items.push(v);
            }
            previous = Some(v);
        }
        items.sort_unstable();
        let mut table = ItemTable::with_capacity(items.len());
        let mut buffer = Vec::with_capacity(items.len() * width);
        for (i, &v) in items.iter().enumerate() {
            table.insert(v, i as u32);
            buffer.extend_from_slice(&v.to_le_bytes()[..width]);
        }
        let index_width = index_width(items.len());
        let indices = self.indices_compressor(index_width)?;
        Ok(Some(Box::new(DictionaryPage {
            index_width,
            encoding: self.message(indices.array_encoding(), items.len()),
            shape: self.shape,
            table,
            buffers: vec![buffer],
            indices,
        })))
    }
}

/// A dictionary encoder made for one page: its items and their indices.
#[derive(Debug)]
struct DictionaryPage {
    index_width: usize,
    encoding: ArrayEncoding,
    shape: ChunkShape,
    table: ItemTable,
    buffers: Vec<Vec<u8>>,
    indices: Box<dyn MiniBlockCompressor>,
}

impl MiniBlockCompressor for DictionaryPage {
    fn value_width(&self) -> usize {
        self.shape.width
    }

    fn chunk_values(&self) -> usize {
        self.shape.chunk_values
    }

    fn array_encoding(&self) -> ArrayEncoding {
        self.encoding.clone()
    }

    fn page_buffers(&self) -> &[Vec<u8>] {
        &self.buffers
    }

    fn compress_chunk(
        &self,
        values: &[u8],
        out: &mut Vec<u8>,
        scratch: &mut Vec<u8>,
    ) -> Result<ChunkStorage> {
        self.shape.check_chunk(values)?;
        let mut indices = Vec::with_capacity(values.len() / self.shape.width * self.index_width);
        // Runs of one value look it up once.
        let mut previous = None;
        for v in values.chunks_exact(self.shape.width) {
            let v = read(v);
            let index = match previous {
                Some((p, index)) if p == v => index,
                _ => self.table.get(v).ok_or_else(|| {
                    Error::invalid("a value that is not in the page's dictionary")
                })?,
            };
            previous = Some((v, index));
            indices.extend_from_slice(&index.to_le_bytes()[..self.index_width]);
        }
        self.indices.compress_chunk(&indices, out, scratch)
    }
}

thread_local! {
    /// Decoded indices of the chunk a thread is decoding, when they are not bit-packed.
    static INDICES: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// How a dictionary page's indices are decoded: bit-packed ones straight into the
/// lookup, others through their decoder and scratch space.
#[derive(Debug)]
enum Indices {
    Packed(BitpackDecompressor),
    Other(Box<dyn MiniBlockDecompressor>),
}

/// Decodes dictionary pages.
#[derive(Debug)]
pub struct DictionaryDecompressor {
    width: usize,
    index_width: usize,
    num_items: usize,
    /// The items as integers, once the page buffer is bound.
    items: Option<Vec<u64>>,
    indices: Indices,
}

impl DictionaryDecompressor {
    /// The decoder a `Dictionary` message describes, its items not yet given
    /// ([`bind_page_buffers`](MiniBlockDecompressor::bind_page_buffers)); `indices` is
    /// the decoder its `indices` message describes.
    pub(crate) fn new(
        message: &Dictionary,
        indices: Box<dyn MiniBlockDecompressor>,
    ) -> Result<Self> {
        let items = message
            .items
            .as_deref()
            .and_then(|i| i.array_encoding.as_ref())
            .ok_or_else(|| Error::corrupt("dictionary has no items encoding"))?;
        let array_encoding::ArrayEncoding::Flat(flat) = items else {
            return Err(Error::unsupported(
                "dictionary items other than flat in a page buffer",
            ));
        };
        let width = usize::try_from(flat.bits_per_value / 8)
            .ok()
            .filter(|&w| flat.bits_per_value % 8 == 0 && supports_width(w))
            .ok_or_else(|| {
                Error::unsupported(format!(
                    "dictionary items of {} bits (8 to 64, whole bytes, are supported)",
                    flat.bits_per_value
                ))
            })?;
        let in_page_buffer_0 = flat.buffer.as_ref().is_some_and(|b| {
            b.buffer_index == 0 && b.buffer_type == buffer::BufferType::Page as i32
        });
        if flat.compression.is_some() || !in_page_buffer_0 {
            return Err(Error::unsupported(
                "dictionary items other than uncompressed in page buffer 0",
            ));
        }
        let num_items = message.num_dictionary_items as usize;
        let index_width = indices.value_width();
        if index_width != self::index_width(num_items) {
            return Err(Error::corrupt(format!(
                "dictionary of {num_items} items with {index_width}-byte indices (2-byte indices up to {MAX_NARROW_ITEMS} items, else 4-byte)"
            )));
        }
        let indices = match message
            .indices
            .as_deref()
            .and_then(|i| i.array_encoding.as_ref())
        {
            Some(array_encoding::ArrayEncoding::Bitpack(b)) => {
                Indices::Packed(BitpackDecompressor::new(b.bits_per_value)?)
            }
            _ => Indices::Other(indices),
        };
        Ok(Self {
            width,
            index_width,
            num_items,
            items: None,
            indices,
        })
    }

    fn index_decoder(&self) -> &dyn MiniBlockDecompressor {
        match &self.indices {
            Indices::Packed(p) => p,
            Indices::Other(o) => o.as_ref(),
        }
    }

    /// Writes the items of `indices` to `out`; an index past the items is an error.
    fn look_up(&self, indices: impl Iterator<Item = u64>, out: &mut [u8]) -> Result<()> {
        let items = self.items.as_deref().unwrap_or_default();
        let mut widest = 0u64;
        // Indices past the items read item 0 (the check follows the pass, which keeps
        // the loop free of branches that depend on the data).
        let item = |i: u64| items.get(i as usize).copied().unwrap_or(0);
        match self.width {
            8 => {
                for (slot, i) in out.chunks_exact_mut(8).zip(indices) {
                    widest = widest.max(i);
                    slot.copy_from_slice(&item(i).to_le_bytes());
                }
            }
            4 => {
                for (slot, i) in out.chunks_exact_mut(4).zip(indices) {
                    widest = widest.max(i);
                    slot.copy_from_slice(&(item(i) as u32).to_le_bytes());
                }
            }
            w => {
                for (slot, i) in out.chunks_exact_mut(w).zip(indices) {
                    widest = widest.max(i);
                    slot.copy_from_slice(&item(i).to_le_bytes()[..w]);
                }
            }
        }
        if !out.is_empty() && widest as usize >= items.len() {
            return Err(Error::corrupt(format!(
                "dictionary index {widest} of {} items",
                items.len()
            )));
        }
        Ok(())
    }
}

impl MiniBlockDecompressor for DictionaryDecompressor {
    fn value_width(&self) -> usize {
        self.width
    }

    fn max_expansion(&self) -> usize {
        // Chunks decode to W bytes per index.
        match self.index_decoder().max_expansion() {
            1 => 1,
            e => e.saturating_mul(self.width.div_ceil(self.index_width)),
        }
    }

    fn raw_len_range(&self, num_values: usize) -> Option<(usize, usize)> {
        let decoder = self.index_decoder();
        let plain = num_values.saturating_mul(self.index_width);
        Some(decoder.raw_len_range(num_values).unwrap_or((plain, plain)))
    }

    fn raw_expansion(&self) -> usize {
        self.index_decoder()
            .raw_expansion()
            .saturating_mul(self.width.div_ceil(self.index_width))
    }

    fn page_buffer_count(&self) -> usize {
        1
    }

    fn bind_page_buffers(&mut self, buffers: &[&[u8]]) -> Result<()> {
        let [items] = buffers else {
            return Err(Error::corrupt(format!(
                "a dictionary page has 1 page buffer, {} given",
                buffers.len()
            )));
        };
        if Some(items.len()) != self.num_items.checked_mul(self.width) {
            return Err(Error::corrupt(format!(
                "dictionary page buffer of {} bytes for {} items of {} bytes",
                items.len(),
                self.num_items,
                self.width
            )));
        }
        // Strictly increasing W-byte items number at most 2^(8W): checked before the
        // items are widened to 8 bytes each, so 1- and 2-byte items cannot make a decoder
        // allocate several times the buffer.
        if self.width < 8 && self.num_items > 1 << (8 * self.width) {
            return Err(Error::corrupt(format!(
                "a dictionary of {} distinct {}-byte items",
                self.num_items, self.width
            )));
        }
        let items: Vec<u64> = items.chunks_exact(self.width).map(read).collect();
        if items.windows(2).any(|w| w[0] >= w[1]) {
            return Err(Error::corrupt(
                "dictionary items are not strictly increasing",
            ));
        }
        self.items = Some(items);
        Ok(())
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
        if self.items.is_none() {
            return Err(Error::invalid(
                "dictionary page decoded without its items (page buffer 0)",
            ));
        }
        match &self.indices {
            Indices::Packed(packed) => {
                if storage != ChunkStorage::Raw {
                    return Err(Error::corrupt(
                        "dictionary chunk is marked compressed but its indices have no compression",
                    ));
                }
                // With the vector kernel, the indices go to the thread's buffer and are
                // looked up in one pass; without it, a block at a time.
                if unpack::has_kernel() {
                    let unpacked = INDICES.with_borrow_mut(|indices| {
                        indices.clear();
                        indices.resize(super::checked_len(num_values, self.index_width)?, 0);
                        if packed.unpack_into(chunk, num_values, unpack::Then::Store, indices)? {
                            self.look_up_all(indices, out)?;
                            return Ok(true);
                        }
                        Ok::<_, Error>(false)
                    })?;
                    if unpacked {
                        return Ok(());
                    }
                }
                let mut at = 0;
                let mut result = Ok(());
                packed.unpack(chunk, num_values, |indices| {
                    let end = at + indices.len() * self.width;
                    if result.is_ok() {
                        result = self.look_up(indices.iter().copied(), &mut out[at..end]);
                    }
                    at = end;
                })?;
                result
            }
            Indices::Other(decoder) => INDICES.with_borrow_mut(|indices| {
                // The indices go to a buffer of this thread's, so the caller's scratch
                // stays the inner decoder's (Zstd's output): neither is allocated per chunk.
                let iw = self.index_width;
                indices.clear();
                indices.resize(super::checked_len(num_values, iw)?, 0);
                decoder.decompress_into(chunk, num_values, storage, indices, scratch)?;
                self.look_up_all(indices, out)
            }),
        }
    }
}

impl DictionaryDecompressor {
    /// Looks up every index of `indices` (little-endian, `index_width` bytes each).
    fn look_up_all(&self, indices: &[u8], out: &mut [u8]) -> Result<()> {
        // Fixed-width reads for the widths dictionaries write (a loop of loads, where the
        // general read is a byte loop per index).
        match self.index_width {
            1 => self.look_up(indices.iter().map(|&b| u64::from(b)), out),
            2 => self.look_up(
                indices
                    .chunks_exact(2)
                    .map(|b| u64::from(u16::from_le_bytes([b[0], b[1]]))),
                out,
            ),
            4 => self.look_up(
                indices
                    .chunks_exact(4)
                    .map(|b| u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))),
                out,
            ),
            iw => self.look_up(indices.chunks_exact(iw).map(read), out),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encodings::decompressor_for;

    fn page(values: &[u8], bits: u64, zstd: bool) -> Box<dyn MiniBlockCompressor> {
        let mut encoder = DictionaryEncoder::try_new(bits).unwrap();
        if zstd {
            encoder = encoder.with_compression(CompressionScheme::Zstd, 3);
        }
        encoder.for_page(values, Learn::Page).unwrap().unwrap()
    }

    #[test]
    fn worked_example() {
        let values: Vec<u8> = [7u32, 3, 7, 7, 3]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let page = page(&values, 32, false);
        assert_eq!(page.page_buffers(), [vec![3, 0, 0, 0, 7, 0, 0, 0]]);
        let mut chunk = Vec::new();
        page.compress_chunk(&values, &mut chunk, &mut Vec::new())
            .unwrap();
        assert_eq!(chunk, [0x01, 0x00, 0x00, 0x0D]);
        let items: &[u8] = &page.page_buffers()[0];
        let decoder = decompressor_for(&page.array_encoding(), &[items]).unwrap();
        assert_eq!(
            decoder.decompress(&chunk, 5, ChunkStorage::Raw).unwrap(),
            values
        );
    }

    #[test]
    fn every_width_round_trips_with_and_without_zstd() {
        for width in 1..=8usize {
            let values: Vec<u8> = (0..3000u64)
                .flat_map(|i| {
                    ((i * i) % 37 * 0x0101_0101_0101_0101).to_le_bytes()[..width].to_vec()
                })
                .collect();
            for zstd in [false, true] {
                let page = page(&values, 8 * width as u64, zstd);
                let items: &[u8] = &page.page_buffers()[0];
                let decoder = decompressor_for(&page.array_encoding(), &[items]).unwrap();
                let n = page.chunk_values();
                for chunk_values in values.chunks(n * width) {
                    let mut chunk = Vec::new();
                    let storage = page
                        .compress_chunk(chunk_values, &mut chunk, &mut Vec::new())
                        .unwrap();
                    let decoded = decoder
                        .decompress(&chunk, chunk_values.len() / width, storage)
                        .unwrap();
                    assert_eq!(decoded, chunk_values, "{width} {zstd}");
                }
            }
        }
    }

    #[test]
    fn hostile_items_and_indices_are_errors() {
        let values: Vec<u8> = [7u32, 3, 7, 7, 3]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let page = page(&values, 32, false);
        let encoding = page.array_encoding();
        let items = &page.page_buffers()[0];
        // Missing, extra, short and unordered item buffers.
        assert!(decompressor_for(&encoding, &[]).is_err());
        assert!(decompressor_for(&encoding, &[items, items]).is_err());
        assert!(decompressor_for(&encoding, &[&items[..7]]).is_err());
        assert!(decompressor_for(&encoding, &[&[7, 0, 0, 0, 3, 0, 0, 0]]).is_err());
        // An index past the items: 1-bit indices with reference 1 make index 2.
        let decoder = decompressor_for(&encoding, &[items]).unwrap();
        let err = decoder
            .decompress(&[0x01, 0x01, 0x00, 0x0D], 5, ChunkStorage::Raw)
            .unwrap_err();
        assert_eq!(err.kind(), crate::error::ErrorKind::Corrupt);
        // A message whose index width does not fit its item count.
        let mut wide = encoding.clone();
        if let Some(array_encoding::ArrayEncoding::Dictionary(d)) = &mut wide.array_encoding {
            d.num_dictionary_items = MAX_NARROW_ITEMS as u32 + 1;
        }
        assert!(decompressor_for(&wide, &[items]).is_err());
        // More 1-byte items than there are bytes: refused before the items are widened.
        let bytes = DictionaryEncoder::try_new(8)
            .unwrap()
            .message(bitpacked::message(2), 300);
        let err = decompressor_for(&bytes, &[&[0; 300]]).unwrap_err();
        assert!(
            err.to_string().contains("300 distinct 1-byte items"),
            "{err}"
        );
    }

    #[test]
    fn more_than_65536_items_take_32_bit_indices() {
        let many: Vec<u8> = (0..MAX_NARROW_ITEMS as u32 + 7)
            .rev()
            .flat_map(u32::to_le_bytes)
            .collect();
        let page = page(&many, 32, false);
        assert_eq!(page.page_buffers()[0].len(), many.len());
        let items: &[u8] = &page.page_buffers()[0];
        let decoder = decompressor_for(&page.array_encoding(), &[items]).unwrap();
        for values in many.chunks(4096).take(3) {
            let mut chunk = Vec::new();
            page.compress_chunk(values, &mut chunk, &mut Vec::new())
                .unwrap();
            let n = values.len() / 4;
            assert_eq!(
                decoder.decompress(&chunk, n, ChunkStorage::Raw).unwrap(),
                values
            );
        }
    }
}
