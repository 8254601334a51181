//! The bytes we write, checked against hand-computed expectations: the golden BSS chunk,
//! the chunk table, and the protobuf wire format Lance's parser reads.

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, Float32Array, Float64Array};
use miniblock::encodings::{decompressor_for, ChunkStorage};
use miniblock::proto::encodings::{
    array_encoding, ArrayEncoding, ByteStreamSplit, Compression, Delta, Flat, GeneralMiniBlock,
};
use miniblock::{encode_page, Encoding, ErrorKind, PageDecoder};
use prost::Message;

#[test]
fn golden_bss_chunk() {
    let page = encode_page(&Float32Array::from(vec![1.0, 2.0, 3.0, 4.0]), Encoding::Bss).unwrap();
    assert_eq!(
        page.data,
        [
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x00, 0x40, 0x80, 0x3F, 0x40,
            0x40, 0x40
        ]
    );
    // one chunk: 16 bytes, last chunk (log 0), no validity, not compressed
    assert_eq!(page.chunk_table(), [0x10, 0x00, 0x00, 0x00]);
    assert_eq!(page.to_bytes()[..8], [1, 0, 0, 0, 0x10, 0x00, 0x00, 0x00]);
}

#[test]
fn chunk_table_of_a_multi_chunk_page() {
    // 2500 f32 values: chunks of 1024, 1024, 452; log 10, 10, 0
    let page = encode_page(&Float32Array::from(vec![0.5f32; 2500]), Encoding::Bss).unwrap();
    let table = page.chunk_table();
    assert_eq!(
        table,
        [0x00, 0x10, 10, 0, 0x00, 0x10, 10, 0, 0x10, 0x07, 0, 0]
    );
    // 1024 f64 values divide evenly: exactly two chunks of 512, no empty third
    let page = encode_page(&Float64Array::from(vec![0.5f64; 1024]), Encoding::Plain).unwrap();
    assert_eq!(page.chunk_table(), [0x00, 0x10, 9, 0, 0x00, 0x10, 0, 0]);
}

#[test]
fn bss_chunk_layout_is_chunk_local() {
    // 1500 f32 values: chunk 1 holds values 1024..1500 split on their own
    let values: Vec<f32> = (0..1500).map(|i| i as f32).collect();
    let page = encode_page(&Float32Array::from(values.clone()), Encoding::Bss).unwrap();
    let chunk1 = &page.data[4096..];
    let n = 476;
    for (i, v) in values[1024..].iter().enumerate() {
        for (j, byte) in v.to_le_bytes().iter().enumerate() {
            assert_eq!(chunk1[j * n + i], *byte);
        }
    }
}

#[test]
fn array_encoding_wire_bytes_match_lance_field_numbers() {
    let bss_lz4 = Encoding::BssLz4.compressor(32).unwrap().array_encoding();
    // general_mini_block = 20 (tag A2 01), inner = 1 (0A), byte_stream_split = 21 (AA 01),
    // bits_per_value = 1 (08) 32 (20), compression = 2 (12), scheme = 1 (0A) "lz4"
    assert_eq!(
        bss_lz4.encode_to_vec(),
        [
            0xA2, 0x01, 0x0E, 0x0A, 0x05, 0xAA, 0x01, 0x02, 0x08, 0x20, 0x12, 0x05, 0x0A, 0x03,
            b'l', b'z', b'4'
        ]
    );
    // flat = 1 (0A), bits_per_value = 1 (08) 64 (40)
    assert_eq!(
        Encoding::Plain
            .compressor(64)
            .unwrap()
            .array_encoding()
            .encode_to_vec(),
        [0x0A, 0x02, 0x08, 0x40]
    );
    // lz4 over flat
    let lz4 = ArrayEncoding {
        array_encoding: Some(array_encoding::ArrayEncoding::GeneralMiniBlock(Box::new(
            GeneralMiniBlock {
                inner: Some(Box::new(ArrayEncoding {
                    array_encoding: Some(array_encoding::ArrayEncoding::Flat(Flat {
                        bits_per_value: 32,
                        buffer: None,
                        compression: None,
                    })),
                })),
                compression: Some(Compression {
                    scheme: "lz4".into(),
                    level: None,
                }),
                dictionary: None,
            },
        ))),
    };
    assert_eq!(Encoding::Lz4.compressor(32).unwrap().array_encoding(), lz4);
}

#[test]
fn widths_that_are_not_whole_bytes_are_refused() {
    let max = 8 * miniblock::encodings::MAX_VALUE_WIDTH as u64;
    for bits in [0u64, 1, 7, 31, 33, 100, max + 8, u64::MAX] {
        for encoding in [Encoding::Bss, Encoding::Plain, Encoding::BssZstd] {
            assert_eq!(
                encoding.compressor(bits).unwrap_err().kind(),
                ErrorKind::InvalidArgument,
                "{encoding} of {bits} bits"
            );
        }
        let encoding = ArrayEncoding {
            array_encoding: Some(array_encoding::ArrayEncoding::ByteStreamSplit(
                ByteStreamSplit {
                    bits_per_value: bits,
                },
            )),
        };
        assert_eq!(
            decompressor_for(&encoding, &[]).unwrap_err().kind(),
            ErrorKind::Unsupported
        );
    }
    // Any whole number of bytes is a width: floats, integers, decimals, binaries.
    for bits in [8u64, 16, 32, 40, 64, 128, 256, max] {
        let encoder = Encoding::Bss.compressor(bits).unwrap();
        assert_eq!(encoder.value_width() as u64 * 8, bits);
        assert_eq!(
            decompressor_for(&encoder.array_encoding(), &[])
                .unwrap()
                .value_width() as u64
                * 8,
            bits
        );
    }
    // Variable-width Arrow types are not fixed-width values.
    for array in [
        Arc::new(arrow_array::StringArray::from(vec!["a"])) as ArrayRef,
        Arc::new(arrow_array::BinaryArray::from(vec![&b"a"[..]])),
    ] {
        let err = encode_page(array.as_ref(), Encoding::Bss).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument);
        assert!(
            err.to_string().contains(&array.data_type().to_string()),
            "{err}"
        );
    }
}

#[test]
fn delta_takes_whole_integer_widths_only() {
    let delta = |bits| ArrayEncoding {
        array_encoding: Some(array_encoding::ArrayEncoding::Delta(Delta {
            bits_per_value: bits,
            ..Delta::default()
        })),
    };
    for bits in [0u64, 7, 24, 40, 128, 256, u64::MAX] {
        let err = decompressor_for(&delta(bits), &[]).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Unsupported, "{bits}: {err}");
        for encoding in [Encoding::DeltaLz4, Encoding::DeltaZstd, Encoding::DeltaAns] {
            assert!(
                encoding.compressor(bits).is_err(),
                "{encoding} of {bits} bits"
            );
        }
    }
    for bits in [8u64, 16, 32, 64] {
        let decompressor = decompressor_for(&delta(bits), &[]).unwrap();
        assert_eq!(decompressor.value_width() as u64 * 8, bits);
        for encoding in [Encoding::DeltaLz4, Encoding::DeltaZstd, Encoding::DeltaAns] {
            let message = encoding.compressor(bits).unwrap().array_encoding();
            assert_eq!(Encoding::of(&message), Some(encoding));
            assert!(decompressor_for(&message, &[]).is_ok());
        }
    }
    // Delta alone is a valid inner encoding but not one of the encodings a page is
    // written with, unless entropy-coded; page tables without entropy coding are corrupt.
    assert_eq!(Encoding::of(&delta(32)), None);
    let mut message = delta(32);
    let Some(array_encoding::ArrayEncoding::Delta(d)) = &mut message.array_encoding else {
        unreachable!()
    };
    d.page_tables = vec![1, 5, 1, 5, 0, 1, 31, 1];
    let err = decompressor_for(&message, &[]).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Corrupt, "{err}");
    for width in [3, 5, 16, 32] {
        assert!(!Encoding::DeltaZstd.supports_width(width));
        assert!(Encoding::DeltaZstd.compressor(width as u64 * 8).is_err());
    }
}

#[test]
fn bad_encoding_messages_are_errors_of_the_right_kind() {
    let cases: Vec<(ArrayEncoding, ErrorKind)> = vec![
        (
            ArrayEncoding {
                array_encoding: None,
            },
            ErrorKind::Corrupt,
        ),
        (
            ArrayEncoding {
                array_encoding: Some(array_encoding::ArrayEncoding::GeneralMiniBlock(Box::new(
                    GeneralMiniBlock {
                        inner: None,
                        compression: Some(Compression {
                            scheme: "lz4".into(),
                            level: None,
                        }),
                        dictionary: None,
                    },
                ))),
            },
            ErrorKind::Corrupt,
        ),
        (
            ArrayEncoding {
                array_encoding: Some(array_encoding::ArrayEncoding::GeneralMiniBlock(Box::new(
                    GeneralMiniBlock {
                        inner: Some(Box::new(
                            Encoding::Bss.compressor(32).unwrap().array_encoding(),
                        )),
                        compression: Some(Compression {
                            scheme: "brotli".into(),
                            level: None,
                        }),
                        dictionary: None,
                    },
                ))),
            },
            ErrorKind::Unsupported,
        ),
        (
            ArrayEncoding {
                array_encoding: Some(array_encoding::ArrayEncoding::GeneralMiniBlock(Box::new(
                    GeneralMiniBlock {
                        inner: Some(Box::new(
                            Encoding::BssLz4.compressor(32).unwrap().array_encoding(),
                        )),
                        compression: Some(Compression {
                            scheme: "lz4".into(),
                            level: None,
                        }),
                        dictionary: None,
                    },
                ))),
            },
            ErrorKind::Unsupported,
        ),
        (
            ArrayEncoding {
                array_encoding: Some(array_encoding::ArrayEncoding::Flat(Flat {
                    bits_per_value: 32,
                    buffer: None,
                    compression: Some(Compression {
                        scheme: "lz4".into(),
                        level: None,
                    }),
                })),
            },
            ErrorKind::Unsupported,
        ),
    ];
    for (encoding, kind) in cases {
        let err = decompressor_for(&encoding, &[]).unwrap_err();
        assert_eq!(err.kind(), kind, "{encoding:?}: {err}");
    }
}

#[test]
fn raw_chunk_marked_compressed_is_corrupt() {
    let d = decompressor_for(&Encoding::Bss.compressor(32).unwrap().array_encoding(), &[]).unwrap();
    let err = d
        .decompress(&[0; 16], 4, ChunkStorage::Compressed)
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Corrupt);
    let err = d.decompress(&[0; 15], 4, ChunkStorage::Raw).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Corrupt);
    assert!(err.to_string().contains("16"), "{err}");
}

#[test]
fn truncated_lz4_chunk_is_an_error_not_a_short_read() {
    let values: Vec<f32> = (0..1024).map(|i| (i as f32 * 0.01).sin()).collect();
    let page = encode_page(&Float32Array::from(values), Encoding::BssLz4).unwrap();
    assert_eq!(page.chunks[0].storage, ChunkStorage::Compressed);
    let decoder = decompressor_for(&page.encoding, &page.buffer_slices()).unwrap();
    let full = decoder
        .decompress(&page.data, 1024, ChunkStorage::Compressed)
        .unwrap();
    assert_eq!(full.len(), 4096);
    for cut in 0..page.data.len() {
        assert!(
            decoder
                .decompress(&page.data[..cut], 1024, ChunkStorage::Compressed)
                .is_err(),
            "cut {cut}"
        );
    }
}

#[test]
fn unchanged_lz4_chunks_are_stored_raw_and_flagged() {
    let mut rng = 0x1234_5678_9abc_def0u64;
    let random: Vec<f64> = (0..512)
        .map(|_| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            f64::from_bits(rng)
        })
        .collect();
    let array = Float64Array::from(random);
    let page = encode_page(&array, Encoding::Lz4).unwrap();
    assert_eq!(page.chunks[0].storage, ChunkStorage::Raw);
    assert_eq!(page.data.len(), 4096);
    let bytes = page.to_bytes();
    let decoded = PageDecoder::try_new(&page.encoding, 512, &bytes)
        .unwrap()
        .decode()
        .unwrap();
    assert_eq!(decoded.to_data(), array.to_data());
}
