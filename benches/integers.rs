//! Integer columns against arrow-rs Parquet's DELTA_BINARY_PACKED (no compression: the
//! encoding Parquet has for them) and pcodec (the `pco` crate, default level), with a
//! `memcpy` of the same bytes for scale: timestamps in milliseconds a second apart with
//! jitter (`i64`), and readings of a narrow range (`i32`). Miniblock `delta`, `bitpack`,
//! `delta+ans` and `auto` in 1 MiB pages of default chunks, decoded into a caller's
//! buffer; Parquet's file and pco's standalone format in memory. Sizes are printed and
//! every round trip is checked first.
//!
//! `cargo bench --bench integers` (groups `integers/timestamps_i64` and
//! `integers/readings_i32`: `<codec>/decode`, `memcpy`).

#![allow(missing_docs)] // criterion_group! generates undocumented functions

mod common;

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use arrow_array::{Array, ArrayRef, Int32Array, Int64Array, RecordBatch};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use miniblock::encodings::{EncoderOptions, Strategy};
use miniblock::PageEncoder;

const PAGE_BYTES: usize = 1 << 20;
const VALUES: usize = 1 << 22;
use common::{decode, parquet_decompress, Pages};

const STRATEGIES: [&str; 4] = ["delta", "bitpack", "delta+ans", "auto"];

fn xorshift(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

/// Milliseconds since the epoch, one reading a second give or take 50 ms.
fn timestamps() -> Vec<i64> {
    let (mut x, mut t) = (0x9E37_79B9_7F4A_7C15u64, 1_700_000_000_000i64);
    (0..VALUES)
        .map(|_| {
            t += 950 + (xorshift(&mut x) % 101).cast_signed();
            t
        })
        .collect()
}

/// A reading in hundredths that wanders within a few thousand of its start.
fn readings() -> Vec<i32> {
    let (mut x, mut v) = (0x2545_F491_4F6C_DD1Du64, 150_000i32);
    (0..VALUES)
        .map(|_| {
            v += i32::try_from(xorshift(&mut x) % 41).unwrap() - 20;
            v
        })
        .collect()
}

fn encode(bytes: &[u8], width: usize, strategy: &str) -> Pages {
    let strategy: Strategy = strategy.parse().unwrap();
    let encoder = PageEncoder::for_strategy(strategy, width, &EncoderOptions::default()).unwrap();
    bytes
        .chunks(PAGE_BYTES / width * width)
        .map(|page| {
            let page = encoder.encode_values(page, None).unwrap();
            let table = page.chunk_table();
            (page, table)
        })
        .collect()
}

fn parquet_compress(array: ArrayRef) -> bytes::Bytes {
    use parquet::arrow::ArrowWriter;
    use parquet::basic::{Compression, Encoding};
    use parquet::file::properties::WriterProperties;
    let batch = RecordBatch::try_from_iter([("v", array)]).unwrap();
    let props = WriterProperties::builder()
        .set_dictionary_enabled(false)
        .set_encoding(Encoding::DELTA_BINARY_PACKED)
        .set_compression(Compression::UNCOMPRESSED)
        .build();
    let mut out = Vec::new();
    let mut writer = ArrowWriter::try_new(&mut out, batch.schema(), Some(props)).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
    out.into()
}

fn bench_column<T: pco::data_types::Number>(
    c: &mut Criterion,
    name: &str,
    values: &[T],
    bytes: &[u8],
    array: ArrayRef,
) {
    let width = bytes.len() / values.len();
    let mut out = vec![0u8; bytes.len()];
    let ours: Vec<(&str, Pages)> = STRATEGIES
        .iter()
        .map(|&strategy| {
            let pages = encode(bytes, width, strategy);
            out.fill(0);
            decode(&pages, &mut out, width);
            assert!(out == bytes, "{name}: miniblock {strategy} round trip");
            let len: usize = pages.iter().map(|(p, _)| p.encoded_len()).sum();
            println!("size {name} {strategy}: {len} bytes");
            (strategy, pages)
        })
        .collect();
    let parquet = parquet_compress(array);
    out.fill(0);
    parquet_decompress(&parquet, &mut out, width);
    assert!(out == bytes, "{name}: parquet round trip");
    println!("size {name} parquet: {} bytes", parquet.len());
    let theirs = pco::standalone::simple_compress(values, &pco::ChunkConfig::default()).unwrap();
    let back: Vec<T> = pco::standalone::simple_decompress(&theirs).unwrap();
    assert!(back.len() == values.len(), "{name}: pco round trip");
    println!("size {name} pco: {} bytes", theirs.len());

    let mut group = c.benchmark_group(format!("integers/{name}"));
    group.throughput(Throughput::Bytes(bytes.len() as u64));
    for (strategy, pages) in &ours {
        group.bench_function(format!("{strategy}/decode"), |b| {
            b.iter(|| decode(black_box(pages), &mut out, width));
        });
    }
    group.bench_function("parquet/decode", |b| {
        b.iter(|| parquet_decompress(black_box(&parquet), &mut out, width));
    });
    let mut dst = back;
    group.bench_function("pco/decode", |b| {
        b.iter(|| pco::standalone::simple_decompress_into(black_box(&theirs), &mut dst).unwrap());
    });
    group.bench_function("memcpy", |b| {
        b.iter(|| out.copy_from_slice(black_box(bytes)));
    });
    group.finish();
}

fn bench_integers(c: &mut Criterion) {
    let ts = timestamps();
    let bytes: Vec<u8> = ts.iter().flat_map(|v| v.to_le_bytes()).collect();
    let array: ArrayRef = Arc::new(Int64Array::from(ts.clone()));
    assert_eq!(array.len(), VALUES);
    bench_column(c, "timestamps_i64", &ts, &bytes, array);
    let readings = readings();
    let bytes: Vec<u8> = readings.iter().flat_map(|v| v.to_le_bytes()).collect();
    let array: ArrayRef = Arc::new(Int32Array::from(readings.clone()));
    bench_column(c, "readings_i32", &readings, &bytes, array);
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = bench_integers
}
criterion_main!(benches);
