//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::PathBuf;

use arrow_array::{Array, ArrayRef, Float32Array, Float64Array};

/// Every f32 bit pattern a float column must keep: signed zeros, infinities, NaNs with
/// payloads, subnormals and the extremes.
pub fn special_f32() -> Vec<f32> {
    [
        0x0000_0000u32, // +0.0
        0x8000_0000,    // -0.0
        0x7F80_0000,    // +inf
        0xFF80_0000,    // -inf
        0x7FC0_0000,    // canonical NaN
        0x7FC0_0001,    // quiet NaN with payload
        0x7F80_0001,    // signalling NaN with payload
        0xFFFF_FFFF,    // negative NaN, all payload bits
        0x0000_0001,    // smallest subnormal
        0x807F_FFFF,    // largest negative subnormal
        f32::MIN.to_bits(),
        f32::MAX.to_bits(),
        f32::MIN_POSITIVE.to_bits(),
        f32::EPSILON.to_bits(),
    ]
    .into_iter()
    .map(f32::from_bits)
    .collect()
}

/// The f64 counterpart of [`special_f32`].
pub fn special_f64() -> Vec<f64> {
    [
        0x0000_0000_0000_0000u64,
        0x8000_0000_0000_0000,
        0x7FF0_0000_0000_0000,
        0xFFF0_0000_0000_0000,
        0x7FF8_0000_0000_0000,
        0x7FF8_0000_0000_0001,
        0x7FF0_0000_0000_0001,
        0xFFFF_FFFF_FFFF_FFFF,
        0x0000_0000_0000_0001,
        0x800F_FFFF_FFFF_FFFF,
        f64::MIN.to_bits(),
        f64::MAX.to_bits(),
        f64::MIN_POSITIVE.to_bits(),
        f64::EPSILON.to_bits(),
    ]
    .into_iter()
    .map(f64::from_bits)
    .collect()
}

/// A deterministic xorshift stream.
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
}

/// `len` f32 values mixing a smooth series, random bits and the special patterns.
pub fn mixed_f32(len: usize, seed: u64) -> Vec<f32> {
    let special = special_f32();
    let mut rng = Rng(seed | 1);
    (0..len)
        .map(|i| match rng.next_u64() % 4 {
            0 => special[i % special.len()],
            1 => f32::from_bits(rng.next_u64() as u32),
            _ => (i as f32 * 0.01).sin() * 100.0,
        })
        .collect()
}

/// `len` f64 values mixing a smooth series, random bits and the special patterns.
pub fn mixed_f64(len: usize, seed: u64) -> Vec<f64> {
    let special = special_f64();
    let mut rng = Rng(seed | 1);
    (0..len)
        .map(|i| match rng.next_u64() % 4 {
            0 => special[i % special.len()],
            1 => f64::from_bits(rng.next_u64()),
            _ => (i as f64 * 0.01).sin() * 100.0,
        })
        .collect()
}

/// Asserts two float arrays are equal bit for bit, nulls included; values under nulls
/// are not compared.
pub fn assert_same_bits(expected: &dyn Array, actual: &dyn Array, context: &str) {
    assert_eq!(expected.data_type(), actual.data_type(), "{context}: type");
    assert_eq!(expected.len(), actual.len(), "{context}: length");
    for i in 0..expected.len() {
        assert_eq!(
            expected.is_valid(i),
            actual.is_valid(i),
            "{context}: validity of row {i}"
        );
    }
    let bits = |a: &dyn Array| -> Vec<Option<u64>> {
        if let Some(a) = a.as_any().downcast_ref::<Float32Array>() {
            (0..a.len())
                .map(|i| a.is_valid(i).then(|| u64::from(a.value(i).to_bits())))
                .collect()
        } else if let Some(a) = a.as_any().downcast_ref::<Float64Array>() {
            (0..a.len())
                .map(|i| a.is_valid(i).then(|| a.value(i).to_bits()))
                .collect()
        } else {
            panic!("{context}: not a float array")
        }
    };
    let (e, a) = (bits(expected), bits(actual));
    if let Some(i) = (0..e.len()).find(|&i| e[i] != a[i]) {
        panic!(
            "{context}: row {i} differs: expected {:?}, got {:?}",
            e[i], a[i]
        );
    }
}

/// Nulls at every `every`-th row (none when 0).
pub fn with_nulls(values: &[f32], every: usize) -> ArrayRef {
    std::sync::Arc::new(Float32Array::from_iter(
        values
            .iter()
            .enumerate()
            .map(|(i, v)| (every == 0 || i % every != 0).then_some(*v)),
    ))
}

/// `../shared` beside the checkout. Tests that call it carry
/// `#[cfg_attr(not(shared_data), ignore = "...")]`, so where it is absent they are listed
/// as ignored; run anyway, they fail rather than pass without having run.
pub fn shared_dir() -> PathBuf {
    // The repository's parent, from the root package or from a member one level down.
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let dir = [root.join("../shared"), root.join("../../shared")]
        .into_iter()
        .find(|d| d.join("data").is_dir())
        .unwrap_or_else(|| root.join("../shared"));
    assert!(
        dir.join("data").is_dir(),
        "{} is absent: this test needs the shared data sets",
        dir.display()
    );
    dir
}

/// A column file's `bytes` with its footer edited by `edit` and its trailer (length and
/// checksum) made right again: a footer that lies with a correct checksum.
pub fn with_footer(
    bytes: &[u8],
    edit: impl FnOnce(&mut miniblock::proto::file::Footer),
) -> Vec<u8> {
    let reader = miniblock::file::FileReader::open(std::io::Cursor::new(bytes)).unwrap();
    let mut footer = reader.footer().clone();
    let data_end = bytes.len() - 12 - prost::Message::encoded_len(&footer);
    edit(&mut footer);
    let mut out = bytes[..data_end].to_vec();
    let encoded = prost::Message::encode_to_vec(&footer);
    out.extend_from_slice(&encoded);
    out.extend_from_slice(&(encoded.len() as u32).to_le_bytes());
    out.extend_from_slice(&miniblock::crc32c(&encoded).to_le_bytes());
    out.extend_from_slice(&miniblock::file::MAGIC);
    out
}

/// The encoding of a page of 16 KiB fixed-size binaries whose fill value is all 7s, Zstd
/// inside: a fill chunk of a few bytes of runs stands for up to 1 GiB of values.
pub fn wide_fill_encoding() -> miniblock::proto::encodings::ArrayEncoding {
    let fill = miniblock::encodings::FillCompressor::new(
        vec![7; 16_384],
        miniblock::Encoding::Zstd.compressor(16_384 * 8).unwrap(),
    )
    .unwrap();
    miniblock::encodings::MiniBlockCompressor::array_encoding(&fill)
}

/// A column file of one page of 65,536 values in [`wide_fill_encoding`] whose one chunk
/// (in an 8-byte chunk table entry) is `data`, every checksum right.
pub fn wide_fill_file(data: &[u8]) -> Vec<u8> {
    use miniblock::proto::file as pb;
    let mut table = (data.len() as u32).to_le_bytes().to_vec();
    table.extend_from_slice(&[0, 0, 0, 0]);
    let footer = pb::Footer {
        format_version: miniblock::file::FORMAT_VERSION,
        num_rows: 65_536,
        columns: vec![pb::Column {
            name: "x".into(),
            value_type: pb::ValueType::FixedSizeBinary as i32,
            byte_width: 16_384,
            pages: vec![pb::Page {
                offset: 8,
                length: data.len() as u64,
                num_values: 65_536,
                encoding: Some(wide_fill_encoding()),
                chunk_table: table,
                chunk_entry_bytes: 8,
                crc32c: miniblock::crc32c(data),
                chunk_crc32c: vec![miniblock::crc32c(data)],
                ..pb::Page::default()
            }],
            ..pb::Column::default()
        }],
        ..pb::Footer::default()
    };
    let footer = prost::Message::encode_to_vec(&footer);
    let mut bytes = miniblock::file::MAGIC.to_vec();
    bytes.extend_from_slice(&miniblock::file::FORMAT_VERSION.to_le_bytes());
    bytes.extend_from_slice(data);
    bytes.extend_from_slice(&footer);
    bytes.extend_from_slice(&(footer.len() as u32).to_le_bytes());
    bytes.extend_from_slice(&miniblock::crc32c(&footer).to_le_bytes());
    bytes.extend_from_slice(&miniblock::file::MAGIC);
    bytes
}
