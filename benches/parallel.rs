//! Whole-column reads with the pages decoded on one thread and on rayon's threads
//! (`FileReader::set_parallel`), on the files of `../shared/data` of at least 2 MiB (or
//! the bundled sample's), written with `auto:0` in pages of 256 KiB so that each has at
//! least 8 pages. Each read opens a new reader over the file's bytes and decodes the
//! column into a caller's buffer, checksums verified.
//!
//! `cargo bench --bench parallel` (one group per file: `serial`, `parallel`); the
//! scaling is `serial`'s time over `parallel`'s.

#![allow(missing_docs)] // criterion_group! generates undocumented functions

mod common;

use std::hint::black_box;
use std::io::Cursor;
use std::time::Duration;

use arrow_array::RecordBatch;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use miniblock::file::{FileReader, FileWriter, WriteOptions};

const PAGE_BYTES: usize = 256 * 1024;

fn read(file: &[u8], out: &mut [u8], parallel: bool) {
    let mut reader = FileReader::open(Cursor::new(file)).unwrap();
    reader.set_parallel(parallel);
    let rows = reader.num_rows();
    reader.read_column_range_into(0, 0..rows, out).unwrap();
}

fn bench_parallel(c: &mut Criterion) {
    for path in common::float_files(2 << 20) {
        let bytes = std::fs::read(&path).unwrap();
        let f64s = path.extension().is_some_and(|e| e == "f64");
        let width = if f64s { 8 } else { 4 };
        let array = common::float_array(&bytes, width);
        let batch = RecordBatch::try_from_iter([("v", array)]).unwrap();
        let options = WriteOptions {
            page_values: Some(PAGE_BYTES / width),
            ..WriteOptions::default()
        }
        .with_strategy("auto:0".parse::<miniblock::encodings::Strategy>().unwrap());
        let mut writer = FileWriter::try_new(Vec::new(), &batch.schema(), options).unwrap();
        writer.write_batch(&batch).unwrap();
        let file = writer.finish().unwrap();
        let mut out = vec![0u8; bytes.len()];
        for parallel in [false, true] {
            out.fill(0);
            read(&file, &mut out, parallel);
            assert!(out == bytes, "{} parallel {parallel}", path.display());
        }
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let pages = bytes.len().div_ceil(PAGE_BYTES);
        println!(
            "{name}: {pages} pages, {} threads",
            rayon::current_num_threads()
        );
        let mut group = c.benchmark_group(format!("parallel/{name}"));
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        group.bench_function("serial", |b| {
            b.iter(|| read(black_box(&file), &mut out, false));
        });
        group.bench_function("parallel", |b| {
            b.iter(|| read(black_box(&file), &mut out, true));
        });
        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(20);
    targets = bench_parallel
}
criterion_main!(benches);
