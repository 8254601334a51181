//! Damaged input: every prefix of a valid page, single-byte changes to the page and to its
//! ArrayEncoding bytes, and hand-made lies in the chunk table. Each gives Ok or an error of
//! the right kind, never a panic.

mod common;

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, Float32Array, Float64Array};
use arrow_buffer::{BooleanBufferBuilder, MutableBuffer};
use miniblock::page::ChunkTableFormat;
use miniblock::proto::encodings::ArrayEncoding;
use miniblock::{encode_page, EncodedPage, Encoding, ErrorKind, PageDecoder};
use prost::Message;

fn sample_pages() -> Vec<EncodedPage> {
    let smooth: Vec<f32> = (0..2600).map(|i| (i as f32 * 0.003).cos() * 20.0).collect();
    let f32_nullable: ArrayRef = Arc::new(Float32Array::from_iter(
        smooth
            .iter()
            .enumerate()
            .map(|(i, v)| (i % 11 != 0).then_some(*v)),
    ));
    let f64_dense: ArrayRef = Arc::new(Float64Array::from(common::mixed_f64(1100, 9)));
    let mut pages = Vec::new();
    for encoding in Encoding::ALL {
        pages.push(encode_page(f32_nullable.as_ref(), encoding).unwrap());
        pages.push(encode_page(f64_dense.as_ref(), encoding).unwrap());
    }
    pages
}

fn try_decode(encoding: &ArrayEncoding, num_values: u64, bytes: &[u8]) -> miniblock::Result<()> {
    let decoder = PageDecoder::try_new(encoding, num_values, bytes)?;
    let n = decoder.num_values();
    let mut out = vec![0; n * decoder.value_width()];
    // Both output paths: a caller's buffer (LZ4/Zstd around flat decompress straight into
    // it) and new arrays (decoded into spare capacity).
    let into = decoder.decode_into(0..n, &mut out, None);
    let array = decoder.decode();
    assert_eq!(
        into.is_ok(),
        array.is_ok(),
        "decode_into and decode disagree"
    );
    array?;
    for c in 0..decoder.num_chunks() {
        decoder.decode_chunk(c)?;
    }
    Ok(())
}

#[test]
fn every_prefix_is_reported_truncated() {
    for page in sample_pages() {
        let bytes = page.to_bytes();
        try_decode(&page.encoding, page.num_values, &bytes).unwrap();
        for cut in 0..bytes.len() {
            let err = try_decode(&page.encoding, page.num_values, &bytes[..cut]).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::Truncated, "cut at {cut}: {err}");
        }
    }
}

#[test]
fn single_byte_changes_to_page_bytes_never_panic() {
    for page in sample_pages() {
        let bytes = page.to_bytes();
        // every byte of the count and table; a stride through the data
        let positions: Vec<usize> = (0..4 + page.chunks.len() * 4)
            .chain((0..bytes.len()).step_by(7))
            .collect();
        for &pos in &positions {
            for change in [0x01u8, 0x80, 0xFF, 0x10] {
                let mut damaged = bytes.clone();
                damaged[pos] ^= change;
                let _ = try_decode(&page.encoding, page.num_values, &damaged);
            }
        }
    }
}

/// `decode_append` writes into the spare capacity of the caller's buffer: when a damaged
/// chunk fails half way, the buffer and validity go back to what they held before.
#[test]
fn failed_appends_leave_the_callers_buffers_as_they_were() {
    let mut failures = 0;
    for page in sample_pages() {
        let bytes = page.to_bytes();
        for pos in (4 + page.chunks.len() * 4..bytes.len()).step_by(5) {
            let mut damaged = bytes.clone();
            damaged[pos] ^= 0xFF;
            let Ok(decoder) = PageDecoder::try_new(&page.encoding, page.num_values, &damaged)
            else {
                continue;
            };
            let mut values = MutableBuffer::new(0);
            values.extend_from_slice(&[1u8, 2, 3]);
            let mut validity = BooleanBufferBuilder::new(0);
            validity.append(false);
            let rows = 0..decoder.num_values();
            if decoder
                .decode_append(rows, &mut values, Some(&mut validity))
                .is_err()
            {
                failures += 1;
                assert_eq!(
                    values.as_slice(),
                    [1, 2, 3],
                    "byte {pos} of {:?}",
                    page.encoding
                );
                assert_eq!(validity.len(), 1);
            }
        }
    }
    assert!(
        failures > 50,
        "only {failures} damaged pages failed to decode"
    );
}

#[test]
fn single_byte_changes_to_encoding_bytes_never_panic() {
    for page in sample_pages() {
        let bytes = page.to_bytes();
        let encoded = page.encoding.encode_to_vec();
        for pos in 0..encoded.len() {
            for value in 0..=255u8 {
                let mut damaged = encoded.clone();
                damaged[pos] = value;
                if let Ok(encoding) = ArrayEncoding::decode(damaged.as_slice()) {
                    let _ = try_decode(&encoding, page.num_values, &bytes);
                }
            }
        }
        for cut in 0..encoded.len() {
            if let Ok(encoding) = ArrayEncoding::decode(&encoded[..cut]) {
                let _ = try_decode(&encoding, page.num_values, &bytes);
            }
        }
    }
}

#[test]
fn wrong_value_counts_are_corrupt() {
    let page = encode_page(&Float32Array::from(vec![1.0f32; 3000]), Encoding::Bss).unwrap();
    let bytes = page.to_bytes();
    for claimed in [0u64, 1, 2047, 2048, 2049, 2999, 3001, 1 << 40, u64::MAX] {
        let err = try_decode(&page.encoding, claimed, &bytes).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Corrupt, "claimed {claimed}: {err}");
    }
}

#[test]
fn lying_chunk_tables_are_corrupt() {
    let page = encode_page(&Float32Array::from(vec![1.0f32; 3000]), Encoding::BssLz4).unwrap();
    let encoding = page.encoding.clone();
    let table = page.chunk_table();
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("log 0 before the last chunk", {
            let mut t = table.clone();
            t[2] = 0;
            t
        }),
        ("log 17", {
            let mut t = table.clone();
            t[2] = 17;
            t
        }),
        ("log 255", {
            let mut t = table.clone();
            t[2] = 255;
            t
        }),
        ("last chunk with a log", {
            let mut t = table.clone();
            t[10] = 3;
            t
        }),
        ("unknown flag", {
            let mut t = table.clone();
            t[3] |= 0x40;
            t
        }),
        ("size 0 compressed", {
            let mut t = table.clone();
            t[0] = 0;
            t[1] = 0;
            t
        }),
        ("odd table length", table[..7].to_vec()),
    ];
    for (what, table) in cases {
        let err = PageDecoder::from_parts(
            &encoding,
            &[],
            3000,
            &table,
            ChunkTableFormat::Narrow,
            &page.data,
        )
        .and_then(|d| d.decode().map(|_| ()))
        .unwrap_err();
        assert!(
            matches!(err.kind(), ErrorKind::Corrupt | ErrorKind::Truncated),
            "{what}: {err}"
        );
    }
    // Trailing bytes after the last chunk
    let mut data = page.data.clone();
    data.push(0);
    let err = PageDecoder::from_parts(
        &encoding,
        &[],
        3000,
        &table,
        ChunkTableFormat::Narrow,
        &data,
    )
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Corrupt);
}

#[test]
fn huge_claims_are_rejected_before_allocating() {
    // A table that claims 2^16-value chunks of 64 KiB compressed bytes of nothing.
    let encoding = Encoding::BssLz4.compressor(64).unwrap().array_encoding();
    let table = [0xFF, 0xFF, 16, 2, 0xFF, 0xFF, 0, 2];
    let err = PageDecoder::from_parts(
        &encoding,
        &[],
        1 << 17,
        &table,
        ChunkTableFormat::Narrow,
        &[],
    )
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Truncated, "{err}");
    // A compressed chunk claiming far more values than its bytes can expand to.
    let table = [0x04, 0x00, 16, 2, 0x04, 0x00, 0, 2];
    let err = PageDecoder::from_parts(
        &encoding,
        &[],
        1 << 17,
        &table,
        ChunkTableFormat::Narrow,
        &[0; 8],
    )
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Corrupt, "{err}");
    // A chunk count of u32::MAX in 8 bytes of page.
    let err = PageDecoder::try_new(&encoding, 1 << 40, &[0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0])
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Truncated, "{err}");
}

#[test]
fn validity_padding_bits_must_be_zero() {
    let array = Float32Array::from(vec![Some(1.0), None, Some(3.0)]);
    let page = encode_page(&array, Encoding::Plain).unwrap();
    let mut bytes = page.to_bytes();
    bytes[8] |= 0x80; // padding bit of the 3-row bitmap
    let err = try_decode(&page.encoding, 3, &bytes).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Corrupt);
    assert!(err.to_string().contains("chunk 0"), "{err}");
}

/// Chunks that really expand past what a decoder allocates on trust (32x their size plus
/// 64 KiB) take the verified paths, the LZ4 size scan and the growing Zstd stream decode,
/// and still decode bit for bit, whole and in part.
#[test]
fn highly_compressible_large_chunks_decode_through_the_verified_paths() {
    use miniblock::encodings::EncoderOptions;
    let values: Vec<f64> = (0..65_536 * 2 + 77)
        .map(|i| if i % 20_000 == 0 { f64::from(i) } else { -0.0 })
        .collect();
    let array = Float64Array::from(values.clone());
    let options = EncoderOptions::default()
        .with_chunk_values(Some(65_536))
        .unwrap();
    for encoding in [
        Encoding::Lz4,
        Encoding::BssLz4,
        Encoding::Zstd,
        Encoding::BssZstd,
    ] {
        let encoder = miniblock::PageEncoder::for_strategy(encoding.into(), 8, &options).unwrap();
        let page = encoder.encode(&array).unwrap();
        let chunk = page.chunks[0];
        assert!(
            (chunk.num_bytes as usize) * 32 + 65_536 < 65_536 * 8,
            "{encoding}: chunk of {} bytes does not expand past the trusted bound",
            chunk.num_bytes
        );
        let decoder = page.decoder(&arrow_schema::DataType::Float64).unwrap();
        let back = decoder.decode().unwrap();
        let back = back.as_any().downcast_ref::<Float64Array>().unwrap();
        assert!(
            back.values()
                .iter()
                .zip(&values)
                .all(|(a, b)| a.to_bits() == b.to_bits()),
            "{encoding}"
        );
        let part = decoder.decode_range(70_000..70_010).unwrap();
        assert_eq!(
            part.to_data(),
            back.slice(70_000, 10).to_data(),
            "{encoding}"
        );
    }
}
