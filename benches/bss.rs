//! BSS against a memcpy of the same bytes, LZ4 alone, BSS+LZ4 and arrow-rs's Parquet
//! BYTE_STREAM_SPLIT encoder/decoder, for f32 and f64 pages of 4 KiB, 64 KiB and 1 MiB of
//! real and synthetic values (decoding into a caller's buffer, and BSS also to a new Arrow
//! array); and one chunk against the whole of a 1 Mi-value page.
//!
//! `cargo bench --bench bss`, then `cargo run --release --example bench_report`.

#![allow(missing_docs)] // criterion_group! generates undocumented functions

mod common;

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use arrow_array::{ArrayRef, Float32Array, Float64Array};
use arrow_buffer::{Buffer, ScalarBuffer};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use miniblock::shuffle::{shuffle_into, unshuffle_into};
use miniblock::{Encoding, PageEncoder};
use parquet::basic::{Encoding as ParquetEncoding, Type as PhysicalType};
use parquet::data_type::{DataType as ParquetType, DoubleType, FloatType};
use parquet::encodings::decoding::get_decoder;
use parquet::encodings::encoding::get_encoder;
use parquet::schema::types::{ColumnDescriptor, ColumnPath, Type};

fn array(bytes: &[u8], width: usize) -> ArrayRef {
    let buffer = Buffer::from(bytes.to_vec());
    let n = bytes.len() / width;
    if width == 4 {
        Arc::new(Float32Array::new(ScalarBuffer::new(buffer, 0, n), None))
    } else {
        Arc::new(Float64Array::new(ScalarBuffer::new(buffer, 0, n), None))
    }
}

fn parquet_descr(physical: PhysicalType) -> Arc<ColumnDescriptor> {
    let tp = Type::primitive_type_builder("x", physical).build().unwrap();
    Arc::new(ColumnDescriptor::new(
        Arc::new(tp),
        0,
        0,
        ColumnPath::new(vec!["x".into()]),
    ))
}

fn bench_parquet<T: ParquetType>(
    c: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    values: &[T::T],
    physical: PhysicalType,
) where
    T::T: Clone + Default,
{
    let descr = parquet_descr(physical);
    let mut encoder = get_encoder::<T>(ParquetEncoding::BYTE_STREAM_SPLIT, &descr).unwrap();
    c.bench_function("parquet_bss_encode", |b| {
        b.iter(|| {
            encoder.put(black_box(values)).unwrap();
            black_box(encoder.flush_buffer().unwrap())
        });
    });
    encoder.put(values).unwrap();
    let encoded = encoder.flush_buffer().unwrap();
    let mut decoder = get_decoder::<T>(descr, ParquetEncoding::BYTE_STREAM_SPLIT).unwrap();
    let mut out = vec![T::T::default(); values.len()];
    c.bench_function("parquet_bss_decode", |b| {
        b.iter(|| {
            decoder.set_data(encoded.clone(), values.len()).unwrap();
            black_box(decoder.get(&mut out).unwrap())
        });
    });
}

fn bench_pages(c: &mut Criterion) {
    for width in [4usize, 8] {
        for (page_name, page_bytes) in [("4KiB", 4096usize), ("64KiB", 64 << 10), ("1MiB", 1 << 20)]
        {
            let (real_name, real) = common::real(width, page_bytes);
            for (data_name, bytes) in [
                ("real", real),
                ("synthetic", common::synthetic(width, page_bytes)),
            ] {
                let ty = if width == 4 { "f32" } else { "f64" };
                let mut group = c.benchmark_group(format!("{ty}/{data_name}/{page_name}"));
                group.throughput(Throughput::Bytes(bytes.len() as u64));
                if data_name == "real" {
                    eprintln!("{ty}/{data_name}: {real_name}");
                }
                let mut out = vec![0u8; bytes.len()];
                group.bench_function("memcpy", |b| {
                    b.iter(|| out.copy_from_slice(black_box(&bytes)));
                });
                // The transform alone, chunk by chunk (what the page encoder runs per
                // chunk, without its bookkeeping), through the public shuffle filter.
                let mut split = vec![0u8; bytes.len()];
                group.bench_function("bss_kernel_split", |b| {
                    b.iter(|| {
                        for (src, dst) in bytes.chunks(4096).zip(split.chunks_mut(4096)) {
                            shuffle_into(black_box(src), dst, width).unwrap();
                        }
                    });
                });
                group.bench_function("bss_kernel_unsplit", |b| {
                    b.iter(|| {
                        for (src, dst) in split.chunks(4096).zip(out.chunks_mut(4096)) {
                            unshuffle_into(black_box(src), dst, width).unwrap();
                        }
                    });
                });
                let input = array(&bytes, width);
                for encoding in [Encoding::Bss, Encoding::Lz4, Encoding::BssLz4] {
                    let name = encoding.name().replace('+', "_");
                    let encoder = PageEncoder::new(encoding.compressor(width as u64 * 8).unwrap());
                    group.bench_function(format!("{name}_encode"), |b| {
                        b.iter(|| black_box(encoder.encode(black_box(input.as_ref())).unwrap()));
                    });
                    let page = encoder.encode(input.as_ref()).unwrap();
                    let decoder = page.decoder(input.data_type()).unwrap();
                    let rows = decoder.num_values();
                    group.bench_function(format!("{name}_decode"), |b| {
                        b.iter(|| {
                            decoder
                                .decode_into(0..rows, black_box(&mut out), None)
                                .unwrap();
                        });
                    });
                    if encoding != Encoding::Lz4 {
                        // The whole page to a new Arrow array, as a reader hands it on.
                        group.bench_function(format!("{name}_decode_array"), |b| {
                            b.iter(|| black_box(decoder.decode().unwrap()));
                        });
                    }
                }
                if width == 4 {
                    let values: Vec<f32> = bytes
                        .chunks_exact(4)
                        .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
                        .collect();
                    bench_parquet::<FloatType>(&mut group, &values, PhysicalType::FLOAT);
                } else {
                    let values: Vec<f64> = bytes
                        .chunks_exact(8)
                        .map(|b| f64::from_le_bytes(b.try_into().unwrap()))
                        .collect();
                    bench_parquet::<DoubleType>(&mut group, &values, PhysicalType::DOUBLE);
                }
                group.finish();
            }
        }
    }
}

/// One chunk of a 1 Mi-value page against the whole page, through a decoder whose chunk
/// table is parsed once (as a reader caches it per page).
fn bench_chunk_access(c: &mut Criterion) {
    for width in [4usize, 8] {
        let ty = if width == 4 { "f32" } else { "f64" };
        let (_, bytes) = common::real(width, (1 << 20) * width);
        let input = array(&bytes, width);
        for encoding in [Encoding::Bss, Encoding::BssLz4] {
            let encoder = PageEncoder::new(encoding.compressor(width as u64 * 8).unwrap());
            let page = encoder.encode(input.as_ref()).unwrap();
            let decoder = page.decoder(input.data_type()).unwrap();
            let mut group = c.benchmark_group(format!(
                "chunk_access/{ty}/{}",
                encoding.name().replace('+', "_")
            ));
            let mut out = vec![0u8; bytes.len()];
            let rows = decoder.num_values();
            group.bench_function("whole_page", |b| {
                b.iter(|| {
                    decoder
                        .decode_into(0..rows, black_box(&mut out), None)
                        .unwrap();
                });
            });
            let middle = decoder.num_chunks() / 2;
            let chunk_rows = decoder.chunk_rows(middle).unwrap();
            let mut chunk_out = vec![0u8; chunk_rows.len() * width];
            group.bench_with_input(
                BenchmarkId::new("one_chunk", middle),
                &chunk_rows,
                |b, rows| {
                    b.iter(|| {
                        decoder
                            .decode_into(rows.clone(), black_box(&mut chunk_out), None)
                            .unwrap();
                    });
                },
            );
            group.finish();
        }
    }
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_millis(1200))
        .sample_size(20)
}

criterion_group! {
    name = benches;
    config = config();
    targets = bench_pages, bench_chunk_access
}
criterion_main!(benches);
