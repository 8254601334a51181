//! Whole-file float compression against pcodec (the `pco` crate, default level) and
//! arrow-rs Parquet (BYTE_STREAM_SPLIT + Zstd level 3, no dictionary), on every file of
//! `../shared/data` (or the bundled `data/` when it is absent): miniblock `auto:0`
//! (favouring size) and the fixed float encodings in 1 MiB pages of default chunks, as the
//! column writer cuts them, encoded and decoded into a caller's buffer; pco's standalone
//! format and a Parquet file in memory over the same values. Before timing, each file's
//! sizes are printed and every round trip is checked bit for bit.
//!
//! `cargo bench --bench floats` (one group per file: `<codec>/encode`, `<codec>/decode`
//! for `auto:0`, `auto`, `alp+ans`, `alp+zstd`, `alp-rd`, `delta+ans`, `delta`,
//! `delta+zstd`, `delta+lz4`, `bss+lz4`, `bss+zstd`, `bss+zstd+dict`, `dict+zstd`, `bitpack`, `dict`, `pco`, `parquet`). A page's
//! size counts its chunk table, its encoding message and its page buffers.
//!
//! `file:auto:0` and `file:auto` measure the same through the column-file API a user
//! calls, on one thread: `encode` writes the column with `FileWriter` (1 MiB pages, not
//! in parallel), `decode` opens a new `FileReader` over the file's bytes and reads the
//! column into a caller's buffer (`read_column_range_into`, checksums verified), and
//! `read_column` opens one and reads an Arrow array; sizes are whole files.

#![allow(missing_docs)] // criterion_group! generates undocumented functions

mod common;

use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use miniblock::encodings::{EncoderOptions, Strategy};
use miniblock::page::EncodedPage;
use miniblock::PageEncoder;

const PAGE_BYTES: usize = 1 << 20;

use common::{decode, parquet_decompress, Pages};

/// The miniblock strategies measured: `auto:0` first (the ratio floors' subject), then
/// the fixed encodings it chooses from on floats.
const STRATEGIES: [&str; 15] = [
    "auto:0",
    "auto",
    "alp+ans",
    "alp+zstd",
    "alp-rd",
    "delta+ans",
    "delta",
    "delta+zstd",
    "delta+lz4",
    "bss+lz4",
    "bss+zstd",
    "bss+zstd+dict",
    "dict+zstd",
    "bitpack",
    "dict",
];

fn encode(bytes: &[u8], width: usize, strategy: &str) -> Vec<EncodedPage> {
    let strategy: Strategy = strategy.parse().unwrap();
    let encoder = PageEncoder::for_strategy(strategy, width, &EncoderOptions::default()).unwrap();
    bytes
        .chunks(PAGE_BYTES / width * width)
        .map(|page| encoder.encode_values(page, None).unwrap())
        .collect()
}

/// Strategies also measured through the column-file API users call.
const FILE_STRATEGIES: [&str; 2] = ["auto:0", "auto"];

/// A column file of `array` written by `FileWriter` on one thread, in the same 1 MiB
/// pages as the page API's.
fn file_write(array: &arrow_array::ArrayRef, strategy: &str) -> Vec<u8> {
    use miniblock::file::{FileWriter, WriteOptions};
    let batch = arrow_array::RecordBatch::try_from_iter([("v", array.clone())]).unwrap();
    let width = miniblock::page::value_width(array.data_type()).unwrap();
    let options = WriteOptions {
        page_values: Some(PAGE_BYTES / width),
        parallel: false,
        ..WriteOptions::default()
    }
    .with_strategy(strategy.parse::<Strategy>().unwrap());
    let mut writer = FileWriter::try_new(Vec::new(), &batch.schema(), options).unwrap();
    writer.write_batch(&batch).unwrap();
    writer.finish().unwrap()
}

/// Opens `file` (a reader made anew, as a user opening a file does) and reads its column
/// into `out` through the buffer path, checksums verified.
fn file_read_into(file: &[u8], out: &mut [u8]) {
    let mut reader = miniblock::file::FileReader::open(std::io::Cursor::new(file)).unwrap();
    let rows = reader.num_rows();
    reader.read_column_range_into(0, 0..rows, out).unwrap();
}

/// Opens `file` and reads its column as an Arrow array (`read_column`).
fn file_read_column(file: &[u8]) -> arrow_array::ArrayRef {
    let mut reader = miniblock::file::FileReader::open(std::io::Cursor::new(file)).unwrap();
    reader.read_column(0).unwrap()
}

fn parquet_compress(bytes: &[u8], width: usize) -> Vec<u8> {
    use arrow_array::RecordBatch;
    use parquet::arrow::ArrowWriter;
    use parquet::basic::{Compression, Encoding, ZstdLevel};
    use parquet::file::properties::WriterProperties;
    let batch = RecordBatch::try_from_iter([("v", common::float_array(bytes, width))]).unwrap();
    let props = WriterProperties::builder()
        .set_dictionary_enabled(false)
        .set_encoding(Encoding::BYTE_STREAM_SPLIT)
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(3).unwrap()))
        .build();
    let mut out = Vec::new();
    let mut writer = ArrowWriter::try_new(&mut out, batch.schema(), Some(props)).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
    out
}

fn pco_compress<T: pco::data_types::Number>(values: &[T]) -> Vec<u8> {
    pco::standalone::simple_compress(values, &pco::ChunkConfig::default()).unwrap()
}

fn values<T: Copy>(bytes: &[u8], from: fn(&[u8]) -> T, width: usize) -> Vec<T> {
    bytes.chunks_exact(width).map(from).collect()
}

fn bench_file(c: &mut Criterion, path: &Path) {
    let bytes = std::fs::read(path).unwrap();
    let width = if path.extension().is_some_and(|e| e == "f64") {
        8
    } else {
        4
    };
    let name = path.file_stem().unwrap().to_string_lossy().into_owned();
    let mut out = vec![0u8; bytes.len()];
    let ours: Vec<(&str, Pages)> = STRATEGIES
        .iter()
        .map(|&strategy| {
            let pages: Pages = encode(&bytes, width, strategy)
                .into_iter()
                .map(|p| {
                    let table = p.chunk_table();
                    (p, table)
                })
                .collect();
            out.fill(0);
            decode(&pages, &mut out, width);
            assert!(out == bytes, "{name}: miniblock {strategy} round trip");
            (strategy, pages)
        })
        .collect();
    let column = common::float_array(&bytes, width);
    let files: Vec<(String, Vec<u8>)> = FILE_STRATEGIES
        .iter()
        .map(|&strategy| {
            let file = file_write(&column, strategy);
            out.fill(0);
            file_read_into(&file, &mut out);
            assert!(out == bytes, "{name}: column file {strategy} round trip");
            let back = file_read_column(&file);
            assert_eq!(back.as_ref(), column.as_ref());
            (format!("file:{strategy}"), file)
        })
        .collect();
    let parquet = bytes::Bytes::from(parquet_compress(&bytes, width));
    out.fill(0);
    parquet_decompress(&parquet, &mut out, width);
    assert!(out == bytes, "{name}: parquet round trip");
    let (f32s, f64s) = if width == 4 {
        (
            values(&bytes, |b| f32::from_le_bytes(b.try_into().unwrap()), 4),
            Vec::new(),
        )
    } else {
        (
            Vec::new(),
            values(&bytes, |b| f64::from_le_bytes(b.try_into().unwrap()), 8),
        )
    };
    let theirs = if width == 4 {
        let c = pco_compress(&f32s);
        let back: Vec<f32> = pco::standalone::simple_decompress(&c).unwrap();
        assert!(back
            .iter()
            .map(|v| v.to_bits())
            .eq(f32s.iter().map(|v| v.to_bits())));
        c
    } else {
        let c = pco_compress(&f64s);
        let back: Vec<f64> = pco::standalone::simple_decompress(&c).unwrap();
        assert!(back
            .iter()
            .map(|v| v.to_bits())
            .eq(f64s.iter().map(|v| v.to_bits())));
        c
    };
    let ratio = |len: usize| bytes.len() as f64 / len as f64;
    for (strategy, pages) in &ours {
        let len: usize = pages.iter().map(|(p, _)| p.encoded_len()).sum();
        println!("ratio {name} {strategy}: {:.3} ({len} bytes)", ratio(len));
    }
    for (codec, file) in &files {
        println!(
            "ratio {name} {codec}: {:.3} ({} bytes)",
            ratio(file.len()),
            file.len()
        );
    }
    println!(
        "ratio {name} pco: {:.3} ({} bytes)",
        ratio(theirs.len()),
        theirs.len()
    );
    println!(
        "ratio {name} parquet: {:.3} ({} bytes)",
        ratio(parquet.len()),
        parquet.len()
    );

    let mut group = c.benchmark_group(format!("floats/{name}"));
    group.throughput(Throughput::Bytes(bytes.len() as u64));
    for (strategy, pages) in &ours {
        group.bench_function(format!("{strategy}/encode"), |b| {
            b.iter(|| black_box(encode(black_box(&bytes), width, strategy)));
        });
        group.bench_function(format!("{strategy}/decode"), |b| {
            b.iter(|| decode(black_box(pages), &mut out, width));
        });
    }
    for (codec, file) in &files {
        let strategy = codec.trim_start_matches("file:");
        group.bench_function(format!("{codec}/encode"), |b| {
            b.iter(|| black_box(file_write(black_box(&column), strategy)));
        });
        group.bench_function(format!("{codec}/decode"), |b| {
            b.iter(|| file_read_into(black_box(file), &mut out));
        });
        group.bench_function(format!("{codec}/read_column"), |b| {
            b.iter(|| black_box(file_read_column(black_box(file))));
        });
    }
    group.bench_function("parquet/encode", |b| {
        b.iter(|| black_box(parquet_compress(black_box(&bytes), width)));
    });
    group.bench_function("parquet/decode", |b| {
        b.iter(|| parquet_decompress(black_box(&parquet), &mut out, width));
    });
    if width == 4 {
        group.bench_function("pco/encode", |b| b.iter(|| black_box(pco_compress(&f32s))));
        let mut dst = vec![0f32; f32s.len()];
        group.bench_function("pco/decode", |b| {
            b.iter(|| {
                pco::standalone::simple_decompress_into(black_box(&theirs), &mut dst).unwrap()
            });
        });
    } else {
        group.bench_function("pco/encode", |b| b.iter(|| black_box(pco_compress(&f64s))));
        let mut dst = vec![0f64; f64s.len()];
        group.bench_function("pco/decode", |b| {
            b.iter(|| {
                pco::standalone::simple_decompress_into(black_box(&theirs), &mut dst).unwrap()
            });
        });
    }
    group.finish();
}

fn bench_floats(c: &mut Criterion) {
    for path in common::float_files(0) {
        bench_file(c, &path);
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1))
        .sample_size(10);
    targets = bench_floats
}
criterion_main!(benches);
