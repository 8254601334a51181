//! Writing a 64 MiB column file with pages encoded on all cores against one core. The
//! file goes to `io::sink()`, so the figure is the writer's encoding pipeline (split, LZ4,
//! CRC, page cutting), not the speed of a disk or of growing a `Vec`.
//!
//! Reading a 16 MiB column file from memory with and without checksum verification: the
//! whole column (page CRC32Cs) and one chunk's rows (that chunk's CRC32C), the cost of
//! every byte read being covered by a verified checksum.
//!
//! The CRC-32C behind those checksums against the `crc32c` crate on the same bytes: a
//! chunk's size (2 and 4 KiB) and a whole page's (1 MiB). `MINIBLOCK_CRC=pclmulqdq`
//! measures the 128-bit kernel of CPUs without AVX-512 in place of the fastest.
//!
//! `cargo bench --bench column`, then `cargo run --release --example bench_report`.

#![allow(missing_docs)] // criterion_group! generates undocumented functions

mod common;

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use arrow_array::{ArrayRef, Float32Array, RecordBatch};
use arrow_buffer::{Buffer, ScalarBuffer};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use miniblock::file::{FileReader, FileWriter, WriteOptions};
use miniblock::Encoding;

fn bench_column(c: &mut Criterion) {
    let len = 64 << 20;
    let (_, bytes) = common::real(4, len);
    let column: ArrayRef = Arc::new(Float32Array::new(
        ScalarBuffer::new(Buffer::from(bytes), 0, len / 4),
        None,
    ));
    let batch = RecordBatch::try_from_iter([("x", column)]).unwrap();
    let mut group = c.benchmark_group("column_64MiB");
    group.throughput(Throughput::Bytes(len as u64));
    for (name, parallel) in [("serial", false), ("parallel", true)] {
        let options = WriteOptions {
            strategy: Encoding::BssLz4.into(),
            parallel,
            ..WriteOptions::default()
        };
        group.bench_function(name, |b| {
            b.iter(|| {
                let mut writer =
                    FileWriter::try_new(std::io::sink(), batch.schema().as_ref(), options).unwrap();
                writer.write_batch(black_box(&batch)).unwrap();
                black_box(writer.finish().unwrap())
            });
        });
    }
    group.finish();
}

fn bench_read(c: &mut Criterion) {
    let len = 16 << 20;
    let (_, bytes) = common::real(4, len);
    let column: ArrayRef = Arc::new(Float32Array::new(
        ScalarBuffer::new(Buffer::from(bytes), 0, len / 4),
        None,
    ));
    let batch = RecordBatch::try_from_iter([("x", column)]).unwrap();
    for encoding in [Encoding::Bss, Encoding::BssLz4] {
        let options = WriteOptions {
            strategy: encoding.into(),
            ..WriteOptions::default()
        };
        let mut writer = FileWriter::try_new(Vec::new(), batch.schema().as_ref(), options).unwrap();
        writer.write_batch(&batch).unwrap();
        let file = writer.finish().unwrap();
        let mut group = c.benchmark_group(format!("read_16MiB_{}", encoding.name()));
        for verify in [true, false] {
            let suffix = if verify { "verified" } else { "unverified" };
            let mut reader = FileReader::open(std::io::Cursor::new(file.as_slice())).unwrap();
            reader.set_verify_checksums(verify);
            group.throughput(Throughput::Bytes(len as u64));
            group.bench_function(format!("column_{suffix}"), |b| {
                b.iter(|| black_box(reader.read_column(0).unwrap()));
            });
            group.throughput(Throughput::Bytes(4096));
            group.bench_function(format!("one_chunk_{suffix}"), |b| {
                b.iter(|| black_box(reader.read_column_range(0, 999_424..1_000_448).unwrap()));
            });
        }
        group.finish();
    }
}

fn bench_crc(c: &mut Criterion) {
    let (_, bytes) = common::real(4, 1 << 20);
    let mut group = c.benchmark_group("crc32c");
    for len in [2048, 4096, 1 << 20] {
        let data = &bytes[..len];
        group.throughput(Throughput::Bytes(len as u64));
        group.bench_function(format!("miniblock_{len}"), |b| {
            b.iter(|| black_box(miniblock::crc32c(black_box(data))));
        });
        group.bench_function(format!("crc32c_crate_{len}"), |b| {
            b.iter(|| black_box(crc32c::crc32c(black_box(data))));
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(4)).sample_size(10);
    targets = bench_column, bench_read, bench_crc
}
criterion_main!(benches);
