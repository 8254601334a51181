//! Whole-file float compression against pcodec (the `pco` crate, default level), on every
//! file of `../shared/data` (or the bundled `data/` when it is absent): miniblock `auto:0`
//! (favouring size) in 1 MiB pages of default chunks, as the column writer cuts them,
//! encoded and decoded into a caller's buffer; pco's standalone format over the same
//! values. Before timing, each file's sizes are printed and both round trips are checked
//! bit for bit.
//!
//! `cargo bench --bench floats` (one group per file, `miniblock/encode`, `pco/encode`,
//! `miniblock/decode`, `pco/decode`).

#![allow(missing_docs)] // criterion_group! generates undocumented functions

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use miniblock::encodings::{EncoderOptions, Strategy};
use miniblock::page::EncodedPage;
use miniblock::{PageDecoder, PageEncoder};

const PAGE_BYTES: usize = 1 << 20;

fn files() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let shared = root.join("../shared/data");
    let dir = if shared.is_dir() {
        shared
    } else {
        root.join("data")
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "f32" || e == "f64"))
        .collect();
    files.sort();
    files
}

fn encode(bytes: &[u8], width: usize) -> Vec<EncodedPage> {
    let strategy: Strategy = "auto:0".parse().unwrap();
    let encoder = PageEncoder::for_strategy(strategy, width, &EncoderOptions::default()).unwrap();
    bytes
        .chunks(PAGE_BYTES / width * width)
        .map(|page| encoder.encode_values(page, None).unwrap())
        .collect()
}

fn decode(pages: &[(EncodedPage, Vec<u8>)], out: &mut [u8], width: usize) {
    let mut at = 0;
    for (page, table) in pages {
        let decoder = PageDecoder::from_parts(
            &page.encoding,
            page.num_values,
            table,
            page.table_format(),
            &page.data,
        )
        .unwrap();
        let len = page.num_values as usize * width;
        decoder
            .decode_into(0..page.num_values as usize, &mut out[at..at + len], None)
            .unwrap();
        at += len;
    }
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
    let pages: Vec<(EncodedPage, Vec<u8>)> = encode(&bytes, width)
        .into_iter()
        .map(|p| {
            let table = p.chunk_table();
            (p, table)
        })
        .collect();
    let ours: usize = pages.iter().map(|(p, _)| p.encoded_len()).sum();
    let mut out = vec![0u8; bytes.len()];
    decode(&pages, &mut out, width);
    assert!(out == bytes, "{name}: miniblock round trip");
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
    println!(
        "ratio {name}: miniblock auto:0 {:.3} ({ours} bytes), pco {:.3} ({} bytes)",
        bytes.len() as f64 / ours as f64,
        bytes.len() as f64 / theirs.len() as f64,
        theirs.len()
    );

    let mut group = c.benchmark_group(format!("floats/{name}"));
    group.throughput(Throughput::Bytes(bytes.len() as u64));
    group.bench_function("miniblock/encode", |b| {
        b.iter(|| black_box(encode(black_box(&bytes), width)));
    });
    group.bench_function("miniblock/decode", |b| {
        b.iter(|| decode(black_box(&pages), &mut out, width));
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
    for path in files() {
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
