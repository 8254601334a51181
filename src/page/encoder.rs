//! Arrow array -> [`EncodedPage`].

use std::borrow::Cow;

use arrow_array::{Array, Float16Array, Float32Array, Float64Array};
use arrow_buffer::{BooleanBuffer, NullBuffer};
use arrow_schema::DataType;

use super::{value_width, ChunkMeta, EncodedPage};
use crate::encodings::auto::TrialChunk;
use crate::encodings::memo;
use crate::encodings::{
    AutoChooser, ChunkPlan, ChunkStorage, EncoderOptions, Learn, MiniBlockCompressor, Strategy,
};
use crate::error::{Error, Result};

/// Encodes pages: with one compressor, or with the one `auto` picks for each page.
#[derive(Debug)]
pub struct PageEncoder {
    mode: Mode,
}

#[derive(Debug)]
enum Mode {
    Fixed(Box<dyn MiniBlockCompressor>),
    Auto(AutoChooser),
}

/// The bytes of the values of a fixed-width array of `width`-byte values, its offset
/// applied; a boolean array's bits as a byte each, 0 or 1.
pub(crate) fn value_bytes(data: &arrow_data::ArrayData, width: usize) -> Result<Cow<'_, [u8]>> {
    let short = || Error::invalid("array values buffer is shorter than its length");
    if data.data_type() == &DataType::Boolean {
        let buffer = data.buffers().first().ok_or_else(short)?;
        if buffer.len() * 8 < data.offset() + data.len() {
            return Err(short());
        }
        let bits = BooleanBuffer::new(buffer.clone(), data.offset(), data.len());
        return Ok(Cow::Owned(bits.iter().map(u8::from).collect()));
    }
    data.buffers()
        .first()
        .and_then(|b| {
            b.as_slice()
                .get(data.offset() * width..(data.offset() + data.len()) * width)
        })
        .map(Cow::Borrowed)
        .ok_or_else(short)
}

/// Encodes `array` (any fixed-width type, nullable or not) with `encoding` and the default
/// options.
///
/// ```
/// use arrow_array::Float32Array;
/// use miniblock::{encode_page, Encoding};
///
/// let page = encode_page(&Float32Array::from(vec![1.0, 2.0, 3.0, 4.0]), Encoding::Bss)?;
/// assert_eq!(page.data[8..], [0x80, 0x00, 0x40, 0x80, 0x3F, 0x40, 0x40, 0x40]);
/// # Ok::<(), miniblock::Error>(())
/// ```
pub fn encode_page(array: &dyn Array, encoding: impl Into<Strategy>) -> Result<EncodedPage> {
    let width = value_width(array.data_type())?;
    PageEncoder::for_strategy(encoding.into(), width, &EncoderOptions::default())?.encode(array)
}

impl PageEncoder {
    /// An encoder using `compressor` for the values of every chunk.
    pub fn new(compressor: Box<dyn MiniBlockCompressor>) -> Self {
        Self {
            mode: Mode::Fixed(compressor),
        }
    }

    /// An encoder for values of `width` bytes following `strategy`, its compressors built
    /// with `options`.
    pub fn for_strategy(
        strategy: Strategy,
        width: usize,
        options: &EncoderOptions,
    ) -> Result<Self> {
        Ok(Self {
            mode: match strategy {
                Strategy::Fixed(encoding) => Mode::Fixed(encoding.compressor_with(width, options)?),
                Strategy::Auto(auto) => Mode::Auto(AutoChooser::new(width, options, &auto)?),
            },
        })
    }

    /// Bytes per value.
    pub fn value_width(&self) -> usize {
        match &self.mode {
            Mode::Fixed(c) => c.value_width(),
            Mode::Auto(a) => a.value_width(),
        }
    }

    /// Encodes one page. The array's values must have the encoder's width.
    pub fn encode(&self, array: &dyn Array) -> Result<EncodedPage> {
        let width = value_width(array.data_type())?;
        if width != self.value_width() {
            return Err(Error::invalid(format!(
                "a {} array has {width}-byte values but the encoder expects {}-byte values",
                array.data_type(),
                self.value_width()
            )));
        }
        // Float arrays (the common case) hand over their values directly: `to_data()`
        // builds and moves a whole `ArrayData`, a third of the time of a 4 KiB page.
        let any = array.as_any();
        if let Some(a) = any.downcast_ref::<Float32Array>() {
            return self.encode_values(a.values().inner().as_slice(), a.nulls());
        }
        if let Some(a) = any.downcast_ref::<Float64Array>() {
            return self.encode_values(a.values().inner().as_slice(), a.nulls());
        }
        if let Some(a) = any.downcast_ref::<Float16Array>() {
            return self.encode_values(a.values().inner().as_slice(), a.nulls());
        }
        let data = array.to_data();
        self.encode_values(&value_bytes(&data, width)?, array.nulls())
    }

    /// The compressor this encoder uses for a page of `values` (the fixed one, or `auto`'s
    /// pick, made for the page when it learns from it) and the chunks a trial already
    /// encoded with it.
    fn pick(&self, values: &[u8]) -> Result<(PageCompressor<'_>, Vec<TrialChunk>)> {
        match &self.mode {
            Mode::Fixed(c) => Ok((
                match c.for_page(values, Learn::Page)? {
                    Some(page) => PageCompressor::Owned(page),
                    None => PageCompressor::Shared(c.as_ref()),
                },
                Vec::new(),
            )),
            Mode::Auto(auto) => {
                let choice = auto.choose(values)?;
                let compressor = match choice.page_compressor {
                    Some(page) => PageCompressor::Owned(page),
                    None => PageCompressor::Shared(auto.compressor(choice.encoding).ok_or_else(
                        || Error::invalid("auto picked an encoding it does not have"),
                    )?),
                };
                Ok((compressor, choice.encoded_chunks))
            }
        }
    }

    /// Encodes one page given its values (little-endian, back to back) and validity.
    pub fn encode_values(&self, values: &[u8], nulls: Option<&NullBuffer>) -> Result<EncodedPage> {
        let width = self.value_width();
        if !values.len().is_multiple_of(width) {
            return Err(Error::invalid(format!(
                "{} bytes is not a whole number of {width}-byte values",
                values.len()
            )));
        }
        let num_values = values.len() / width;
        if let Some(nulls) = nulls {
            if nulls.len() != num_values {
                return Err(Error::invalid(format!(
                    "validity has {} rows, values {num_values}",
                    nulls.len()
                )));
            }
        }
        // Values under nulls are written as zero whatever the array holds there, and auto
        // chooses from what is written: the choice depends only on the valid values.
        let nulls = nulls.filter(|n| n.null_count() > 0);
        let masked;
        let values = match nulls {
            Some(nulls) => {
                masked = mask_nulls(values, width, nulls);
                &masked[..]
            }
            None => values,
        };
        // Auto's trials, the page's tables and the final encoding analyse many chunks
        // alike: within the memo's scope each is analysed once. A fixed encoding that
        // learns nothing from the page analyses each chunk once anyway: it encodes
        // outside, where no analysis is kept.
        let picked = memo::scoped(|| {
            let (compressor, encoded_chunks) = self.pick(values)?;
            if matches!(
                (&self.mode, &compressor),
                (Mode::Fixed(_), PageCompressor::Shared(_))
            ) {
                return Ok(Err(compressor));
            }
            // The last pass: its new analyses would not be reused.
            memo::stop_keeping();
            self.encode_chunks(values, num_values, nulls, &compressor, encoded_chunks)
                .map(Ok)
        })?;
        match picked {
            Ok(page) => Ok(page),
            Err(compressor) => {
                self.encode_chunks(values, num_values, nulls, &compressor, Vec::new())
            }
        }
    }

    /// Encodes the chunks of a page of `values` (with the values under nulls zeroed) with
    /// `compressor`, copying those a trial already encoded with it.
    fn encode_chunks(
        &self,
        values: &[u8],
        num_values: usize,
        nulls: Option<&NullBuffer>,
        compressor: &PageCompressor,
        encoded_chunks: Vec<TrialChunk>,
    ) -> Result<EncodedPage> {
        let width = self.value_width();
        let compressor = compressor.get();
        let mut encoded_chunks = encoded_chunks.into_iter().peekable();
        let plan = ChunkPlan::new(num_values, compressor.chunk_values())?;
        // One allocation: the values, every chunk's validity when there are nulls, and the
        // slack a compressor needs to try one chunk (LZ4's worst case for 4 KiB is +429).
        let validity_bytes = if nulls.is_some() {
            plan.num_chunks() * compressor.chunk_values().div_ceil(8)
        } else {
            0
        };
        // (Zstd's bound for a 4 KiB chunk is +77 bytes.)
        let slack = 1024 + compressor.chunk_values() * width / 128;
        let mut data = Vec::with_capacity(values.len() + validity_bytes + slack);
        let mut chunks = Vec::with_capacity(plan.num_chunks());
        let mut scratch = Vec::new();
        // Every chunk but the last holds exactly `chunk_values` values; without nulls and
        // without chunks a trial already encoded, an encoding that stores them unchanged
        // in size (plain, BSS) encodes all of them in one call.
        let mut first_left = 0;
        let whole = plan.num_chunks().saturating_sub(1);
        if whole > 0 && validity_bytes == 0 && encoded_chunks.peek().is_none() {
            let chunk_len = compressor.chunk_values() * width;
            let start = data.len();
            if compressor.compress_uncompressed_chunks(&values[..whole * chunk_len], &mut data) {
                if data.len() - start != whole * chunk_len {
                    return Err(Error::invalid(format!(
                        "the compressor wrote {} bytes for {whole} uncompressed chunks of {chunk_len} bytes",
                        data.len() - start
                    )));
                }
                let num_bytes = u32::try_from(chunk_len).map_err(|_| {
                    Error::unsupported(format!(
                        "chunks of {chunk_len} bytes are more than a chunk table entry holds"
                    ))
                })?;
                chunks.extend((0..whole).map(|index| ChunkMeta {
                    num_bytes,
                    log_num_values: plan.chunk(index).1,
                    has_validity: false,
                    storage: ChunkStorage::Raw,
                }));
                first_left = whole;
            }
        }
        for index in first_left..plan.num_chunks() {
            let (rows, log_num_values) = plan.chunk(index);
            let start = data.len();
            let chunk_values = &values[rows.start * width..rows.end * width];
            let chunk_nulls = nulls
                .map(|n| n.slice(rows.start, rows.len()))
                .filter(|n| n.null_count() > 0);
            if let Some(chunk_nulls) = &chunk_nulls {
                append_validity(chunk_nulls, &mut data);
            }
            let storage = match encoded_chunks.next_if(|c| c.index == index) {
                // Encoded by auto's trial from the same (masked) bytes.
                Some(done) => {
                    data.extend_from_slice(&done.bytes);
                    done.storage
                }
                _ => compressor.compress_chunk(chunk_values, &mut data, &mut scratch)?,
            };
            let size = data.len() - start;
            let num_bytes = u32::try_from(size).map_err(|_| {
                Error::unsupported(format!(
                    "chunk {index} takes {size} bytes, more than a chunk table entry holds"
                ))
            })?;
            chunks.push(ChunkMeta {
                num_bytes,
                log_num_values,
                has_validity: chunk_nulls.is_some(),
                storage,
            });
        }
        Ok(EncodedPage {
            encoding: compressor.array_encoding(),
            num_values: num_values as u64,
            chunks,
            data,
            buffers: compressor.page_buffers().to_vec(),
        })
    }
}

/// The compressor of one page: the encoder's own, or one made for the page.
enum PageCompressor<'a> {
    Shared(&'a dyn MiniBlockCompressor),
    Owned(Box<dyn MiniBlockCompressor>),
}

impl PageCompressor<'_> {
    fn get(&self) -> &dyn MiniBlockCompressor {
        match self {
            PageCompressor::Shared(c) => *c,
            PageCompressor::Owned(c) => c.as_ref(),
        }
    }
}

/// A copy of `values` with the values under nulls set to zero.
fn mask_nulls(values: &[u8], width: usize, nulls: &NullBuffer) -> Vec<u8> {
    let mut masked = values.to_vec();
    // `set_slices` gives the runs of valid rows; the gaps between them are nulls.
    let mut next = 0;
    for (start, end) in nulls.inner().set_slices() {
        masked[next * width..start * width].fill(0);
        next = end;
    }
    masked[next * width..].fill(0);
    masked
}

/// Appends `nulls` as a bitmap of `ceil(len / 8)` bytes, LSB first, padding bits zero.
fn append_validity(nulls: &NullBuffer, out: &mut Vec<u8>) {
    let bits = nulls.inner().bit_chunks();
    for word in bits.iter() {
        out.extend_from_slice(&word.to_le_bytes());
    }
    let rest = bits.remainder_len();
    if rest > 0 {
        let word = bits.remainder_bits() & (u64::MAX >> (64 - rest));
        out.extend_from_slice(&word.to_le_bytes()[..rest.div_ceil(8)]);
    }
}
