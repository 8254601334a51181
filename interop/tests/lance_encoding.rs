//! miniblock's Lance pages against the real `lance-encoding` 14.0.2, both ways, on real
//! data (the bundled `data/`, with `../shared/data` too when it is beside the checkout),
//! with and without nulls, for every encoding both have: flat and byte stream split
//! chunks, bare, under LZ4 and under Zstd, and bit-packed definition levels.
//!
//! - Lance decodes ours: each page miniblock writes has its description parsed by
//!   Lance's own protobuf messages, and every chunk decoded by the decompressors Lance's
//!   `DefaultDecompressionStrategy` builds from it, byte for byte against the input.
//! - miniblock decodes Lance's: Lance's own mini-block compressors (`ValueEncoder`,
//!   `ByteStreamSplitEncoder`, `GeneralMiniBlockCompressor`, `OutOfLineBitpacking`) encode
//!   the same values; their descriptions parse as ours and every chunk decodes, byte for
//!   byte.
//! - With the same settings, the chunk bytes are the same bytes.

use std::path::Path;

use arrow_buffer::NullBuffer;
use lance_encoding::buffer::LanceBuffer;
use lance_encoding::compression::{
    BlockCompressor, DecompressionStrategy, DefaultDecompressionStrategy,
};
use lance_encoding::data::{BlockInfo, DataBlock, FixedWidthDataBlock};
use lance_encoding::encodings::logical::primitive::miniblock::{
    MiniBlockCompressed, MiniBlockCompressionContext, MiniBlockCompressor,
};
use lance_encoding::encodings::physical::bitpacking::{InlineBitpacking, OutOfLineBitpacking};
use lance_encoding::encodings::physical::block::{
    CompressionConfig, CompressionScheme as LanceScheme,
};
use lance_encoding::encodings::physical::byte_stream_split::ByteStreamSplitEncoder;
use lance_encoding::encodings::physical::general::GeneralMiniBlockCompressor;
use lance_encoding::encodings::physical::value::ValueEncoder;
use lance_encoding::format::{metadata, pb21};
use miniblock::encodings::CompressionScheme;
use miniblock::lance::page::{encode_page, split_chunks, LevelsDecoder, PageSpec, ValueDecoder};
use miniblock::lance::LanceValues;
use miniblock::proto::lance as ours;
use prost::Message;

/// Values per column taken from each file (several pages' worth of chunks).
const VALUES: usize = 50_000;

/// (name, width, little-endian bytes) of every float file of the data sets.
fn columns() -> Vec<(String, usize, Vec<u8>)> {
    let mut out = Vec::new();
    for dir in ["../data", "../../shared/data"] {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        let mut paths: Vec<_> = entries.filter_map(|e| e.ok()).map(|e| e.path()).collect();
        paths.sort();
        for path in paths {
            let width = match path.extension().and_then(|e| e.to_str()) {
                Some("f32") => 4,
                Some("f64") => 8,
                _ => continue,
            };
            let bytes = std::fs::read(&path).unwrap();
            let take = bytes.len().min(VALUES * width) / width * width;
            let name = format!(
                "{}/{}",
                dir,
                Path::new(&path).file_name().unwrap().to_string_lossy()
            );
            out.push((name, width, bytes[..take].to_vec()));
        }
    }
    assert!(out.len() >= 5, "the bundled data/ has five float files");
    out
}

/// Every 9th value and one long run null.
fn nulls(n: usize) -> NullBuffer {
    NullBuffer::from(
        (0..n)
            .map(|i| !(i % 9 == 4 || (n / 3..n / 3 + 700).contains(&i)))
            .collect::<Vec<_>>(),
    )
}

fn lance_bytes(block: DataBlock) -> Vec<u8> {
    match block {
        DataBlock::FixedWidth(fw) => fw.data.to_vec(),
        other => panic!("Lance decoded a {} block", other.name()),
    }
}

fn fixed_block(bytes: &[u8], bits: u64) -> DataBlock {
    let mut block = FixedWidthDataBlock {
        data: LanceBuffer::copy_slice(bytes),
        bits_per_value: bits,
        num_values: bytes.len() as u64 * 8 / bits,
        block_info: BlockInfo::new(),
    };
    lance_encoding::statistics::ComputeStat::compute_stat(&mut block);
    DataBlock::FixedWidth(block)
}

#[test]
fn lance_decodes_miniblock_pages() {
    let strategy = DefaultDecompressionStrategy::default();
    let mut pages = 0;
    for (name, width, bytes) in columns() {
        let n = bytes.len() / width;
        let validity = nulls(n);
        for with_nulls in [false, true] {
            for transform in [LanceValues::Flat, LanceValues::Bss] {
                for compression in [
                    None,
                    Some((CompressionScheme::Lz4, None)),
                    Some((CompressionScheme::Zstd, Some(3))),
                ] {
                    let spec = PageSpec {
                        values: &bytes,
                        width,
                        nulls: with_nulls.then_some(&validity),
                        chunk_values: 4096 / width,
                        transform,
                        compression,
                    };
                    let page = encode_page(&spec).unwrap();
                    let what = format!("{name} {transform:?} {compression:?} nulls={with_nulls}");
                    // Lance's own messages parse our description.
                    let layout =
                        pb21::PageLayout::decode(page.layout.encode_to_vec().as_slice()).unwrap();
                    let Some(pb21::page_layout::Layout::MiniBlockLayout(mb)) = layout.layout else {
                        panic!("{what}: not a mini-block layout for Lance");
                    };
                    assert_eq!(mb.num_items, n as u64);
                    let values = strategy
                        .create_miniblock_decompressor(
                            &metadata::CompressiveEncoding::from(
                                mb.value_compression.clone().unwrap(),
                            ),
                            &strategy,
                        )
                        .unwrap_or_else(|e| panic!("{what}: Lance refuses the description: {e}"));
                    let levels = mb.def_compression.as_ref().map(|d| {
                        strategy
                            .create_block_decompressor(&metadata::CompressiveEncoding::from(
                                d.clone(),
                            ))
                            .unwrap()
                    });
                    assert_eq!(levels.is_some(), with_nulls);
                    let chunks =
                        split_chunks(&page.buffers[0], &page.buffers[1], n, false, with_nulls, 1)
                            .unwrap();
                    let mut decoded = Vec::with_capacity(bytes.len());
                    let mut row = 0;
                    for chunk in &chunks {
                        let buffers = chunk
                            .buffers
                            .iter()
                            .map(|b| LanceBuffer::copy_slice(b))
                            .collect();
                        decoded.extend(lance_bytes(
                            values.decompress(buffers, chunk.num_values as u64).unwrap(),
                        ));
                        if let Some(levels) = &levels {
                            let def = LanceBuffer::copy_slice(chunk.levels.unwrap());
                            let def = lance_bytes(
                                levels
                                    .decompress(Some(def), chunk.num_values as u64)
                                    .unwrap(),
                            );
                            for (i, l) in def.chunks_exact(2).enumerate() {
                                let null = u16::from_le_bytes([l[0], l[1]]) == 1;
                                assert_eq!(
                                    null,
                                    validity.is_null(row + i),
                                    "{what}: level of row {}",
                                    row + i
                                );
                            }
                        }
                        row += chunk.num_values;
                    }
                    assert_eq!(decoded, bytes, "{what}: Lance decodes other values");
                    pages += 1;
                }
            }
        }
    }
    assert!(pages >= 60);
}

fn lance_compressor(
    transform: LanceValues,
    scheme: Option<LanceScheme>,
    bits: usize,
) -> Box<dyn MiniBlockCompressor> {
    let inner: Box<dyn MiniBlockCompressor> = match transform {
        LanceValues::Flat => Box::new(ValueEncoder::default()),
        LanceValues::Bss => Box::new(ByteStreamSplitEncoder::new(bits)),
    };
    match scheme {
        None => inner,
        Some(s) => Box::new(GeneralMiniBlockCompressor::new(
            inner,
            CompressionConfig::new(s, None),
        )),
    }
}

/// The buffers of each of Lance's chunks.
fn lance_chunks(compressed: &MiniBlockCompressed) -> Vec<(usize, Vec<&[u8]>)> {
    let mut offsets = vec![0usize; compressed.data.len()];
    let mut seen = 0u64;
    compressed
        .chunks
        .iter()
        .map(|chunk| {
            let n = chunk.num_values(seen, compressed.num_values);
            seen += n;
            let buffers = chunk
                .buffer_sizes
                .iter()
                .zip(offsets.iter_mut())
                .zip(&compressed.data)
                .map(|((&size, offset), data)| {
                    let b = &data[*offset..*offset + size as usize];
                    *offset += size as usize;
                    b
                })
                .collect();
            (n as usize, buffers)
        })
        .collect()
}

/// A description as a Lance 2.1 file stores it (`pb21`, converted as Lance's writer does).
fn file_bytes(encoding: &metadata::CompressiveEncoding) -> Vec<u8> {
    pb21::CompressiveEncoding::try_from(encoding.clone())
        .unwrap()
        .encode_to_vec()
}

#[test]
fn miniblock_decodes_lance_chunks() {
    let context = MiniBlockCompressionContext::new(0, false, false);
    let mut checked = 0;
    for (name, width, bytes) in columns() {
        let bits = width * 8;
        for transform in [LanceValues::Flat, LanceValues::Bss] {
            for (scheme, ours_scheme) in [
                (None, None),
                (Some(LanceScheme::Lz4), Some(CompressionScheme::Lz4)),
                (Some(LanceScheme::Zstd), Some(CompressionScheme::Zstd)),
            ] {
                let what = format!("{name} {transform:?} {scheme:?}");
                let compressor = lance_compressor(transform, scheme, bits);
                let (compressed, encoding) = compressor
                    .compress(context, fixed_block(&bytes, bits as u64))
                    .unwrap();
                // Lance's description parses as ours, and decodes with ours.
                let description =
                    ours::CompressiveEncoding::decode(file_bytes(&encoding).as_slice()).unwrap();
                let decoder =
                    ValueDecoder::new(&description).unwrap_or_else(|e| panic!("{what}: {e}"));
                let mut decoded = Vec::with_capacity(bytes.len());
                for (n, buffers) in lance_chunks(&compressed) {
                    decoded.extend(
                        decoder
                            .decode(&buffers, n)
                            .unwrap_or_else(|e| panic!("{what}: {e}")),
                    );
                }
                assert_eq!(decoded, bytes, "{what}: miniblock decodes other values");

                // With Lance's chunk size and the same settings, our chunks are Lance's bytes
                // (unless Lance kept general compression where it does not shrink the page,
                // which miniblock drops: then the descriptions differ, and say so).
                let chunk_values = lance_chunks(&compressed)[0].0;
                let page = encode_page(&PageSpec {
                    values: &bytes,
                    width,
                    nulls: None,
                    chunk_values,
                    transform,
                    compression: ours_scheme.map(|s| (s, None)),
                })
                .unwrap();
                let Some(ours::page_layout::Layout::MiniBlockLayout(mb)) = page.layout.layout
                else {
                    panic!("{what}: ours is not a mini-block layout");
                };
                if mb.value_compression.as_ref().unwrap().encode_to_vec() == file_bytes(&encoding) {
                    let ours_chunks = split_chunks(
                        &page.buffers[0],
                        &page.buffers[1],
                        bytes.len() / width,
                        false,
                        false,
                        1,
                    )
                    .unwrap();
                    let theirs = lance_chunks(&compressed);
                    assert_eq!(ours_chunks.len(), theirs.len(), "{what}");
                    for (a, (n, b)) in ours_chunks.iter().zip(&theirs) {
                        assert_eq!(a.num_values, *n, "{what}");
                        assert_eq!(a.buffers, *b, "{what}: chunk bytes differ from Lance's");
                    }
                    checked += 1;
                }
            }
        }
    }
    assert!(checked >= 25, "only {checked} pages compared byte for byte");
}

/// Our decoding of the levels Lance's `compressor` packed.
fn decode_lance_levels(compressor: &dyn BlockCompressor, levels: &[u8], n: usize) -> Vec<u8> {
    let (packed, encoding) = compressor.compress(fixed_block(levels, 16)).unwrap();
    let description = ours::CompressiveEncoding::decode(file_bytes(&encoding).as_slice()).unwrap();
    let decoded = LevelsDecoder::new(&description)
        .unwrap()
        .decode(&packed.unwrap(), n)
        .unwrap();
    decoded.iter().flat_map(|l| l.to_le_bytes()).collect()
}

#[test]
fn miniblock_decodes_lance_levels() {
    for n in [1usize, 100, 511, 512, 1023, 1024, 1025, 4096, 5000] {
        let validity = nulls(n);
        let levels: Vec<u8> = (0..n)
            .flat_map(|i| u16::from(validity.is_null(i)).to_le_bytes())
            .collect();
        let out_of_line = OutOfLineBitpacking::new(1, 16);
        assert_eq!(
            decode_lance_levels(&out_of_line, &levels, n),
            levels,
            "{n} levels"
        );
        // Lance also writes a chunk's levels as one inline bit-packed block.
        if n <= 1024 {
            let inline = InlineBitpacking::new(16);
            assert_eq!(
                decode_lance_levels(&inline, &levels, n),
                levels,
                "{n} levels, inline"
            );
        }
    }
}
