//! Writing a 64 MiB column file with pages encoded on all cores against one core. The
//! file goes to `io::sink()`, so the figure is the writer's encoding pipeline (split, LZ4,
//! CRC, page cutting), not the speed of a disk or of growing a `Vec`.
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
use miniblock::file::{FileWriter, WriteOptions};
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

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(4)).sample_size(10);
    targets = bench_column
}
criterion_main!(benches);
