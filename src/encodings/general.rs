//! General compression over each chunk of an inner miniblock encoding.
//!
//! `ArrayEncoding { general_mini_block: { inner: <inner>, compression: { scheme: "lz4" } } }`.
//! Every chunk the inner encoding writes is compressed on its own, so decoding chunk `c`
//! reads only chunk `c`'s bytes. A chunk that the scheme does not shrink is stored as the
//! inner encoding wrote it, and its chunk entry says so ([`ChunkStorage::Raw`]): a page never
//! grows by more than its chunk table, and the reader never has to guess.

use super::{check_output, ChunkStorage, MiniBlockCompressor, MiniBlockDecompressor};
use crate::error::{Error, Result};
use crate::proto::encodings::{array_encoding, ArrayEncoding, Compression, GeneralMiniBlock};

/// A general-purpose compression scheme applied per chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CompressionScheme {
    /// LZ4 block format (lz4_flex, safe code only).
    Lz4,
}

impl CompressionScheme {
    /// The scheme string stored in `Compression.scheme`.
    pub fn name(self) -> &'static str {
        match self {
            CompressionScheme::Lz4 => "lz4",
        }
    }

    /// The protobuf `Compression` message for this scheme.
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
            other => Err(Error::unsupported(format!(
                "compression scheme {other:?} (this build knows \"lz4\")"
            ))),
        }
    }
}

/// Compresses every chunk of an inner compressor.
#[derive(Debug)]
pub struct GeneralMiniBlockCompressor {
    inner: Box<dyn MiniBlockCompressor>,
    scheme: CompressionScheme,
}

impl GeneralMiniBlockCompressor {
    /// Wraps `inner`. The inner encoding must itself be uncompressed (a flat or BSS
    /// encoder); nesting general compression is refused.
    pub fn try_new(inner: Box<dyn MiniBlockCompressor>, scheme: CompressionScheme) -> Result<Self> {
        if matches!(
            inner.array_encoding().array_encoding,
            Some(array_encoding::ArrayEncoding::GeneralMiniBlock(_)) | None
        ) {
            return Err(Error::invalid(
                "the inner encoding of general compression must be flat or byte_stream_split",
            ));
        }
        Ok(Self { inner, scheme })
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
                    compression: Some(self.scheme.to_proto()),
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
        match self.scheme {
            CompressionScheme::Lz4 => {
                out.resize(
                    start + lz4_flex::block::get_maximum_output_size(scratch.len()),
                    0,
                );
                let written = lz4_flex::block::compress_into(scratch, &mut out[start..])
                    .map_err(|e| Error::invalid(format!("lz4 compression failed: {e}")))?;
                if written < scratch.len() {
                    out.truncate(start + written);
                    return Ok(ChunkStorage::Compressed);
                }
            }
        }
        out.truncate(start);
        out.extend_from_slice(scratch);
        Ok(ChunkStorage::Raw)
    }
}

/// Decompresses each chunk, then decodes it with the inner decompressor.
#[derive(Debug)]
pub struct GeneralMiniBlockDecompressor {
    inner: Box<dyn MiniBlockDecompressor>,
    scheme: CompressionScheme,
}

impl GeneralMiniBlockDecompressor {
    /// Wraps `inner`.
    pub fn new(inner: Box<dyn MiniBlockDecompressor>, scheme: CompressionScheme) -> Self {
        Self { inner, scheme }
    }
}

impl MiniBlockDecompressor for GeneralMiniBlockDecompressor {
    fn value_width(&self) -> usize {
        self.inner.value_width()
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
        scratch.clear();
        scratch.resize(len, 0);
        match self.scheme {
            CompressionScheme::Lz4 => {
                let written = lz4_flex::block::decompress_into(chunk, scratch).map_err(|e| {
                    Error::corrupt(format!(
                        "lz4 chunk of {} bytes does not decompress to {len} bytes: {e}",
                        chunk.len()
                    ))
                })?;
                // lz4_flex may return Ok with fewer bytes on a truncated block.
                if written != len {
                    return Err(Error::corrupt(format!(
                        "lz4 chunk decompressed to {written} bytes, expected {len}"
                    )));
                }
            }
        }
        self.inner
            .decompress_into(scratch, num_values, ChunkStorage::Raw, out, &mut Vec::new())
    }
}
