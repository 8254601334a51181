//! Writes the golden files (the newest set, `tests/golden/v9`, by default): standalone pages (every encoding, nulls,
//! widths 1 to 300, a wide chunk table) and column files, each with the bytes it must
//! decode to. `tests/golden.rs` decodes the committed files, so any change of the format
//! is caught. Regenerate only for a deliberate format change, into a new version folder:
//! `cargo run --example golden -- tests/golden/v10`, then keep there only the files that
//! differ from the sets before it (`tests/golden.rs` reads a missing name from them).

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::types::Decimal128Type;
use arrow_array::{
    Array, ArrayRef, FixedSizeBinaryArray, Float16Array, Float32Array, Float64Array, Int8Array,
    PrimitiveArray, RecordBatch, TimestampMicrosecondArray,
};
use arrow_schema::DataType;
use half::f16;
use miniblock::encodings::{AutoOptions, EncoderOptions, FillCompressor, Strategy};
use miniblock::file::{FileWriter, WriteOptions};
use miniblock::{Encoding, PageEncoder};
use prost::Message;

/// A deterministic pseudo-random stream.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Every `every`-th value null.
fn nulls(len: usize, every: usize) -> Vec<bool> {
    (0..len).map(|i| every == 0 || i % every != 3).collect()
}

/// The golden arrays: name (also the data type's name in the manifest), array, and the
/// chunk size to encode it with.
fn arrays() -> Vec<(&'static str, ArrayRef, Option<usize>)> {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let n = 2500;
    let f32s: Vec<Option<f32>> = (0..n)
        .zip(nulls(n, 17))
        .map(|(i, valid)| {
            let v = match i % 500 {
                0 => f32::from_bits(0x7FC0_1234), // NaN with a payload
                1 => -0.0,
                2 => f32::from_bits(1), // smallest subnormal
                3 => f32::INFINITY,
                _ => (i as f32 * 0.01).sin() * 100.0,
            };
            valid.then_some(v)
        })
        .collect();
    let f64s: Vec<f64> = (0..n)
        .map(|i| (f64::from(i as u32) * 0.1).round() / 10.0 + 1000.0)
        .collect();
    let f16s: Vec<Option<f16>> = (0..600)
        .zip(nulls(600, 5))
        .map(|(i, valid)| valid.then(|| f16::from_f32(i as f32 / 7.0)))
        .collect();
    let i8s: Vec<i8> = (0..1500).map(|_| (rng.next() % 7) as i8 - 3).collect();
    let fsb5: Vec<Option<Vec<u8>>> = (0..700)
        .zip(nulls(700, 11))
        .map(|(i, valid)| valid.then(|| vec![i as u8, (i >> 8) as u8, 0xAB, 0, (i % 3) as u8]))
        .collect();
    let fsb300: Vec<Vec<u8>> = (0..300)
        .map(|_| (0..300).map(|_| rng.next() as u8).collect())
        .collect();
    let decimals: PrimitiveArray<Decimal128Type> = (0..900)
        .map(|i| (i % 13 != 0).then_some(i128::from(i) * 12_345 - 5_000_000))
        .collect::<PrimitiveArray<Decimal128Type>>()
        .with_precision_and_scale(38, 4)
        .unwrap();
    vec![
        ("f32", Arc::new(Float32Array::from(f32s)), None),
        ("f64", Arc::new(Float64Array::from(f64s)), Some(256)),
        ("f16", Arc::new(Float16Array::from(f16s)), None),
        ("i8", Arc::new(Int8Array::from(i8s)), None),
        (
            "fsb5",
            Arc::new(
                FixedSizeBinaryArray::try_from_sparse_iter_with_size(fsb5.into_iter(), 5).unwrap(),
            ),
            None,
        ),
        (
            "fsb300",
            Arc::new(FixedSizeBinaryArray::try_from_iter(fsb300.into_iter()).unwrap()),
            Some(256),
        ),
        ("d128", Arc::new(decimals), None),
    ]
}

/// The values of a fixed-width array as little-endian bytes, values under nulls as stored
/// (the encoder writes zeros there).
fn value_bytes(array: &dyn Array, width: usize) -> Vec<u8> {
    let data = array.to_data();
    let mut bytes = data.buffers()[0].as_slice()[..array.len() * width].to_vec();
    if let Some(nulls) = array.nulls() {
        for (value, valid) in bytes.chunks_exact_mut(width).zip(nulls.iter()) {
            if !valid {
                value.fill(0);
            }
        }
    }
    bytes
}

fn write(dir: &Path, name: &str, bytes: &[u8]) {
    fs::write(dir.join(name), bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
}

fn main() {
    let dir = PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or_else(|| "tests/golden/v9".to_owned()),
    );
    fs::create_dir_all(&dir).unwrap();
    let mut manifest = String::from("# name data_type num_values has_validity\n");
    for (type_name, array, chunk_values) in arrays() {
        let width = miniblock::page::value_width(array.data_type()).unwrap();
        let options = EncoderOptions::default()
            .with_chunk_values(chunk_values)
            .unwrap();
        for encoding in Encoding::ALL
            .into_iter()
            .filter(|e| e.supports_width(width))
        {
            let encoder = PageEncoder::for_strategy(encoding.into(), width, &options).unwrap();
            let page = encoder.encode(array.as_ref()).unwrap();
            let name = format!("{type_name}.{}", encoding.name().replace('+', "_"));
            write(&dir, &format!("{name}.page"), &page.to_bytes());
            write(
                &dir,
                &format!("{name}.encoding"),
                &page.encoding.encode_to_vec(),
            );
            let line = format!(
                "{name} {type_name} {} {}\n",
                array.len(),
                array.null_count() > 0
            );
            manifest.push_str(&line);
        }
        write(
            &dir,
            &format!("{type_name}.values"),
            &value_bytes(array.as_ref(), width),
        );
        if let Some(nulls) = array.nulls() {
            write(&dir, &format!("{type_name}.validity"), nulls.validity());
        }
    }
    // Fill pages (v9): an hourly f64 series whose zeros come in night-long runs, with 0.0
    // now and then in the day too, around ALP: a plain fill page, and a `coded_fill` one
    // whose chunks code their run headers with the page's run tables.
    let hourly: Vec<f64> = (0..4000)
        .map(|i| match (i % 24, i % 97) {
            (0..=12, _) | (_, 0) => 0.0,
            (h, _) => f64::from(h * 37 % 900 + i % 5) * 0.5,
        })
        .collect();
    let hourly = Float64Array::from(hourly);
    let hourly_bytes = value_bytes(&hourly, 8);
    let fill = 0f64.to_le_bytes().to_vec();
    let inner = || Encoding::Alp.compressor(64).unwrap();
    for (name, compressor) in [
        (
            "h64.fill_alp",
            FillCompressor::new(fill.clone(), inner()).unwrap(),
        ),
        (
            "h64.coded_fill_alp",
            FillCompressor::for_page(fill.clone(), inner(), &hourly_bytes).unwrap(),
        ),
    ] {
        let page = PageEncoder::new(Box::new(compressor))
            .encode(&hourly)
            .unwrap();
        write(&dir, &format!("{name}.page"), &page.to_bytes());
        write(
            &dir,
            &format!("{name}.encoding"),
            &page.encoding.encode_to_vec(),
        );
        let line = format!("{name} h64 {} false\n", hourly.len());
        manifest.push_str(&line);
    }
    write(&dir, "h64.values", &hourly_bytes);
    write(&dir, "MANIFEST.txt", manifest.as_bytes());

    // Column files: several types in one file, small pages, with auto and with a fixed
    // encoding; the expected columns as an Arrow IPC file.
    let columns: Vec<(&str, ArrayRef)> = arrays()
        .into_iter()
        .filter(|(name, _, _)| *name != "fsb300")
        .map(|(name, array, _)| (name, array.slice(0, 600)))
        .chain(std::iter::once((
            "ts",
            Arc::new(
                TimestampMicrosecondArray::from(
                    (0..600)
                        .map(|i| 1_700_000_000_000_000 + i * 3_600_000_000)
                        .collect::<Vec<i64>>(),
                )
                .with_timezone("UTC"),
            ) as ArrayRef,
        )))
        .collect();
    let batch = RecordBatch::try_from_iter(columns).unwrap();
    for (file, strategy) in [
        ("columns.auto.mb", Strategy::Auto(AutoOptions::default())),
        ("columns.bss_zstd.mb", Encoding::BssZstd.into()),
    ] {
        let options = WriteOptions {
            strategy,
            page_values: Some(250),
            parallel: false,
            ..WriteOptions::default()
        };
        let mut writer = FileWriter::try_new(Vec::new(), batch.schema().as_ref(), options).unwrap();
        writer.write_batch(&batch).unwrap();
        write(&dir, file, &writer.finish().unwrap());
    }
    let mut ipc = Vec::new();
    {
        let mut writer =
            arrow_ipc::writer::FileWriter::try_new(&mut ipc, batch.schema().as_ref()).unwrap();
        writer.write(&batch).unwrap();
        writer.finish().unwrap();
    }
    write(&dir, "columns.expected.arrow", &ipc);
    assert!(matches!(batch.column(0).data_type(), DataType::Float32));
    println!("golden files written to {}", dir.display());
}
