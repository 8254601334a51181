//! Arrow array -> [`EncodedPage`].

use arrow_array::Array;
use arrow_buffer::NullBuffer;

use super::{value_width, ChunkMeta, EncodedPage};
use crate::encodings::{ChunkPlan, Encoding, MiniBlockCompressor};
use crate::error::{Error, Result};

/// Encodes pages with one compressor.
#[derive(Debug)]
pub struct PageEncoder {
    compressor: Box<dyn MiniBlockCompressor>,
}

/// Encodes `array` (Float32 or Float64, nullable or not) with `encoding`.
///
/// ```
/// use arrow_array::Float32Array;
/// use miniblock::{encode_page, Encoding};
///
/// let page = encode_page(&Float32Array::from(vec![1.0, 2.0, 3.0, 4.0]), Encoding::Bss)?;
/// assert_eq!(page.data[8..], [0x80, 0x00, 0x40, 0x80, 0x3F, 0x40, 0x40, 0x40]);
/// # Ok::<(), miniblock::Error>(())
/// ```
pub fn encode_page(array: &dyn Array, encoding: Encoding) -> Result<EncodedPage> {
    let width = value_width(array.data_type())?;
    PageEncoder::new(encoding.compressor(width as u64 * 8)?).encode(array)
}

impl PageEncoder {
    /// An encoder using `compressor` for the values of every chunk.
    pub fn new(compressor: Box<dyn MiniBlockCompressor>) -> Self {
        Self { compressor }
    }

    /// The compressor this encoder uses.
    pub fn compressor(&self) -> &dyn MiniBlockCompressor {
        self.compressor.as_ref()
    }

    /// Encodes one page. The array's values must have the compressor's width.
    pub fn encode(&self, array: &dyn Array) -> Result<EncodedPage> {
        let width = value_width(array.data_type())?;
        if width != self.compressor.value_width() {
            return Err(Error::invalid(format!(
                "a {} array has {width}-byte values but the encoder expects {}-byte values",
                array.data_type(),
                self.compressor.value_width()
            )));
        }
        let data = array.to_data();
        let values = data
            .buffers()
            .first()
            .and_then(|b| {
                b.as_slice()
                    .get(data.offset() * width..(data.offset() + data.len()) * width)
            })
            .ok_or_else(|| Error::invalid("array values buffer is shorter than its length"))?;
        self.encode_values(values, array.nulls())
    }

    /// Encodes one page given its values (little-endian, back to back) and validity.
    pub fn encode_values(&self, values: &[u8], nulls: Option<&NullBuffer>) -> Result<EncodedPage> {
        let width = self.compressor.value_width();
        if values.len() % width != 0 {
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
        let plan = ChunkPlan::new(num_values, self.compressor.chunk_values())?;
        // One allocation: the values, every chunk's validity when there are nulls, and the
        // slack a compressor needs to try one chunk (LZ4's worst case for 4 KiB is +429).
        let validity_bytes = if nulls.is_some_and(|n| n.null_count() > 0) {
            plan.num_chunks() * self.compressor.chunk_values().div_ceil(8)
        } else {
            0
        };
        let mut data = Vec::with_capacity(values.len() + validity_bytes + 1024);
        let mut chunks = Vec::with_capacity(plan.num_chunks());
        let mut masked = Vec::new();
        let mut scratch = Vec::new();
        for index in 0..plan.num_chunks() {
            let (rows, log_num_values) = plan.chunk(index);
            let start = data.len();
            let mut chunk_values = &values[rows.start * width..rows.end * width];
            let chunk_nulls = nulls
                .map(|n| n.slice(rows.start, rows.len()))
                .filter(|n| n.null_count() > 0);
            if let Some(chunk_nulls) = &chunk_nulls {
                append_validity(chunk_nulls, &mut data);
                masked.clear();
                masked.extend_from_slice(chunk_values);
                for (value, valid) in masked.chunks_exact_mut(width).zip(chunk_nulls.iter()) {
                    if !valid {
                        value.fill(0);
                    }
                }
                chunk_values = &masked;
            }
            let storage = self
                .compressor
                .compress_chunk(chunk_values, &mut data, &mut scratch)?;
            let size = data.len() - start;
            let num_bytes = u16::try_from(size).map_err(|_| {
                Error::unsupported(format!(
                    "chunk {index} takes {size} bytes, more than the u16 chunk size field holds"
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
            encoding: self.compressor.array_encoding(),
            num_values: num_values as u64,
            chunks,
            data,
        })
    }
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
