//! Cross-implementation vectors written by Arrow C++ (vendored in `tests/vectors`, from
//! apache/parquet-testing, Apache-2.0; see its README): every
//! BYTE_STREAM_SPLIT file unshuffles to its PLAIN twin, the float ones decode through
//! the BSS decompressor as one chunk, and the float16, int32, int64, flba5 and decimal ones
//! decode through the page decoder as typed arrays.

mod common;

use std::fs;
use std::path::Path;

use arrow_array::Array;
use arrow_schema::DataType;
use miniblock::encodings::{decompressor_for, ChunkStorage};
use miniblock::page::{ChunkMeta, ChunkTableFormat};
use miniblock::proto::encodings::{array_encoding, ArrayEncoding, ByteStreamSplit};
use miniblock::shuffle::{shuffle, unshuffle};
use miniblock::{encode_page, Encoding, PageDecoder};

/// (BSS file, PLAIN twin, element width)
const PAIRS: [(&str, &str, usize); 7] = [
    (
        "float16_byte_stream_split.BYTE_STREAM_SPLIT.n200.bin",
        "float16_plain.PLAIN.n200.bin",
        2,
    ),
    (
        "float_byte_stream_split.BYTE_STREAM_SPLIT.n200.bin",
        "float_plain.PLAIN.n200.bin",
        4,
    ),
    (
        "double_byte_stream_split.BYTE_STREAM_SPLIT.n200.bin",
        "double_plain.PLAIN.n200.bin",
        8,
    ),
    (
        "int32_byte_stream_split.BYTE_STREAM_SPLIT.n200.bin",
        "int32_plain.PLAIN.n200.bin",
        4,
    ),
    (
        "int64_byte_stream_split.BYTE_STREAM_SPLIT.n200.bin",
        "int64_plain.PLAIN.n200.bin",
        8,
    ),
    (
        "flba5_byte_stream_split.BYTE_STREAM_SPLIT.n200.bin",
        "flba5_plain.PLAIN.n200.bin",
        5,
    ),
    (
        "decimal_byte_stream_split.BYTE_STREAM_SPLIT.n200.bin",
        "decimal_plain.PLAIN.n200.bin",
        4,
    ),
];

/// The vendored vectors: always present, so these tests always run.
fn vectors_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests")
}

fn read(dir: &Path, name: &str) -> Vec<u8> {
    fs::read(dir.join("vectors").join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn every_bss_vector_unshuffles_to_its_plain_twin() {
    let dir = vectors_dir();
    // Every BSS file in the folder is covered by a pair or by the n300 test below.
    let mut listed: Vec<String> = fs::read_dir(dir.join("vectors"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| {
            n.contains(".BYTE_STREAM_SPLIT.")
                && Path::new(n).extension().is_some_and(|e| e == "bin")
        })
        .collect();
    listed.sort();
    let mut known: Vec<String> = PAIRS.iter().map(|p| p.0.to_owned()).collect();
    known.extend([
        "f32.BYTE_STREAM_SPLIT.n300.bin".to_owned(),
        "f64.BYTE_STREAM_SPLIT.n300.bin".to_owned(),
    ]);
    known.sort();
    assert_eq!(listed, known, "vectors folder changed");

    for (bss, plain, width) in PAIRS {
        let (bss, plain) = (read(&dir, bss), read(&dir, plain));
        assert_eq!(bss.len(), 200 * width);
        assert_eq!(unshuffle(&bss, width).unwrap(), plain, "{width}-byte pair");
        assert_eq!(
            shuffle(&plain, width).unwrap(),
            bss,
            "{width}-byte pair, shuffle"
        );
    }
}

#[test]
fn float_vectors_decode_as_one_chunk() {
    let dir = vectors_dir();
    let cases = [
        (
            "float_byte_stream_split.BYTE_STREAM_SPLIT.n200.bin",
            Some("float_plain.PLAIN.n200.bin"),
            32u64,
            200usize,
        ),
        (
            "double_byte_stream_split.BYTE_STREAM_SPLIT.n200.bin",
            Some("double_plain.PLAIN.n200.bin"),
            64,
            200,
        ),
        ("f32.BYTE_STREAM_SPLIT.n300.bin", None, 32, 300),
        ("f64.BYTE_STREAM_SPLIT.n300.bin", None, 64, 300),
    ];
    for (bss, plain, bits, n) in cases {
        let chunk = read(&dir, bss);
        let expected = match plain {
            Some(plain) => read(&dir, plain),
            None => unshuffle(&chunk, bits as usize / 8).unwrap(),
        };
        let message = Encoding::Bss.compressor(bits).unwrap().array_encoding();
        let decoded = decompressor_for(&message, &[])
            .unwrap()
            .decompress(&chunk, n, ChunkStorage::Raw)
            .unwrap();
        assert_eq!(decoded, expected, "{bss}");
        if plain.is_none() {
            // standard normals: finite and within +-10
            for v in decoded.chunks_exact(bits as usize / 8) {
                let x = if bits == 32 {
                    f64::from(f32::from_le_bytes(v.try_into().unwrap()))
                } else {
                    f64::from_le_bytes(v.try_into().unwrap())
                };
                assert!(x.is_finite() && x.abs() < 10.0, "{bss}: {x}");
            }
        }
    }
}

#[test]
fn typed_vectors_decode_through_the_page_decoder() {
    let dir = vectors_dir();
    // (pair, Arrow type): Parquet's decimal(7,3) is a 4-byte big-endian FIXED_LEN_BYTE_ARRAY,
    // so it is read as FixedSizeBinary(4), as flba5 is FixedSizeBinary(5).
    let cases = [
        (PAIRS[0], DataType::Float16),
        (PAIRS[3], DataType::Int32),
        (PAIRS[4], DataType::Int64),
        (PAIRS[5], DataType::FixedSizeBinary(5)),
        (PAIRS[6], DataType::FixedSizeBinary(4)),
    ];
    for ((bss, plain, width), data_type) in cases {
        let (bss, plain) = (read(&dir, bss), read(&dir, plain));
        let n = plain.len() / width;
        // One chunk (200 values fit the default chunk of every width here): the vector's
        // bytes are exactly that chunk; its table entry says so.
        assert!(n <= miniblock::encodings::default_chunk_values(width));
        let encoding = ArrayEncoding {
            array_encoding: Some(array_encoding::ArrayEncoding::ByteStreamSplit(
                ByteStreamSplit {
                    bits_per_value: width as u64 * 8,
                },
            )),
        };
        let mut table = Vec::new();
        ChunkMeta {
            num_bytes: bss.len() as u32,
            log_num_values: 0,
            has_validity: false,
            storage: ChunkStorage::Raw,
        }
        .write(ChunkTableFormat::Narrow, &mut table)
        .unwrap();
        let decoder = PageDecoder::from_parts(
            &encoding,
            &[],
            n as u64,
            &table,
            ChunkTableFormat::Narrow,
            &bss,
        )
        .unwrap()
        .with_data_type(&data_type)
        .unwrap();
        let array = decoder.decode().unwrap();
        assert_eq!(array.data_type(), &data_type);
        assert_eq!(array.len(), n);
        assert_eq!(
            array.to_data().buffers()[0].as_slice(),
            plain,
            "{data_type}"
        );
        // and back: our encoder writes the same chunk bytes Arrow C++ wrote
        let page = encode_page(array.as_ref(), Encoding::Bss).unwrap();
        assert_eq!(page.data, bss, "{data_type} re-encoded");
    }
}
