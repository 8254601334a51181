//! Scans of a 1 GiB table through DataFusion: our table provider against DataFusion's own
//! Parquet scan on the same rows.
//!
//! The table: `key` (the row number, an `i64` sorted like a time column) and one column
//! per file of `../shared/data` (the bundled `data/` sample's files when that folder is
//! absent), each file tiled to the table's length; as many rows as make 1 GiB of raw
//! values. It is written once, as 4 column files (`WriteOptions::default()`: `auto`, 1 MiB
//! pages) and as 4 Parquet files (BYTE_STREAM_SPLIT, Zstd level 3, dictionary off), and
//! kept under `target/bench-data` for later runs.
//!
//! The same rows are also written with [`SCAN_FIRST`], an `auto` that gives up size for
//! faster decoding, so that one run shows what scanning at Parquet's speed costs in bytes.
//!
//! Timed (criterion, group `scan_1gib`): `SELECT count(*), min(c), max(c), avg(c) FROM t`
//! for every column `c`, at 1 and 2 target partitions, through each (`miniblock`,
//! `miniblock-scan-first`, `parquet`). Counted (printed once per run, through an object
//! store that counts what is read): a filter keeping 1% of the rows of `key`, and each
//! column alone, against the bytes of the files; and each column's bytes in each table.

#![allow(missing_docs)] // criterion_group! generates undocumented functions

#[path = "../tests/common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use common::{write_mb, write_parquet, Counting};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use datafusion::arrow::array::{ArrayRef, Float32Array, Float64Array, Int64Array, RecordBatch};
use datafusion::prelude::{ParquetReadOptions, SessionConfig, SessionContext};
use miniblock::encodings::Strategy;
use miniblock::file::{FileReader, WriteOptions};
use miniblock_datafusion::MiniblockTable;
use object_store::local::LocalFileSystem;
use parquet::file::reader::{FileReader as _, SerializedFileReader};
use tokio::runtime::Runtime;

const TABLE_BYTES: usize = 1 << 30;
const FILES: usize = 4;
/// Bumped whenever the table's recipe or the writer's choices change, so that a stale copy
/// is not reused.
const RECIPE: &str = "v6";

/// The strategy of the scan-first table: the fastest-decoding encoding at most 1.25x the
/// smallest (`AutoOptions::with_min_gain`).
const SCAN_FIRST: &str = "auto:0.2";

/// A table timed: a label, its folder under the table's folder, and whether it holds our
/// column files (else Parquet's).
type Reader = (&'static str, &'static str, bool);

/// The tables timed; the first is `auto`'s, the last Parquet's.
const READERS: [Reader; 3] = [
    ("miniblock", "mb", true),
    ("miniblock-scan-first", "mb-scan-first", true),
    ("parquet", "pq", false),
];

const SOURCES: &[&str] = &[
    "de421_mars.f64",
    "de421_venus.f64",
    "egm96_15.f32",
    "ferret_coads_climatology_AIRT.f32",
    "ferret_coads_climatology_SLP.f32",
    "ferret_etopo20_ROSE.f32",
    "ferret_levitus_climatology_TEMP.f32",
    "ferret_monthly_navy_winds_UWND.f32",
    "tmy3_all_cols.f64",
];

/// Each source found, as (column name, width, bytes), from `../shared/data` or else `data/`.
fn sources() -> Vec<(String, usize, Vec<u8>)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let dirs = [root.join("../../shared/data"), root.join("../data")];
    let mut found = Vec::new();
    for name in SOURCES {
        let Some(bytes) = dirs.iter().find_map(|d| std::fs::read(d.join(name)).ok()) else {
            eprintln!("scan_1gib: {name} is in neither data folder; the table goes without it");
            continue;
        };
        let (stem, ext) = name.rsplit_once('.').unwrap();
        let width = if ext == "f32" { 4 } else { 8 };
        found.push((stem.to_owned(), width, bytes));
    }
    found
}

fn table() -> RecordBatch {
    let sources = sources();
    let row_bytes = 8 + sources.iter().map(|s| s.1).sum::<usize>();
    let rows = TABLE_BYTES / row_bytes;
    let mut columns: Vec<(String, ArrayRef)> = vec![(
        "key".into(),
        Arc::new(Int64Array::from_iter_values(
            0..i64::try_from(rows).unwrap(),
        )),
    )];
    for (name, width, bytes) in sources {
        let values = bytes.chunks_exact(width).cycle().take(rows);
        let array: ArrayRef = if width == 4 {
            Arc::new(Float32Array::from_iter_values(
                values.map(|b| f32::from_le_bytes(b.try_into().unwrap())),
            ))
        } else {
            Arc::new(Float64Array::from_iter_values(
                values.map(|b| f64::from_le_bytes(b.try_into().unwrap())),
            ))
        };
        columns.push((name, array));
    }
    RecordBatch::try_from_iter(columns).unwrap()
}

/// The table's folder, its column files and Parquet files written first if a finished
/// copy is not there, and its scan-first column files likewise.
fn written() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../target/bench-data")
        .join(format!("scan-1gib-{RECIPE}"));
    let mut batch = None;
    if !dir.join("done").exists() {
        let _ = std::fs::remove_dir_all(&dir);
        let batch = batch.insert(table());
        eprintln!(
            "scan_1gib: writing {} rows x {} columns ({} bytes of values)",
            batch.num_rows(),
            batch.num_columns(),
            batch.get_array_memory_size()
        );
        let start = Instant::now();
        write_mb(&dir.join("mb"), batch, FILES, WriteOptions::default());
        let ours = start.elapsed();
        let start = Instant::now();
        write_parquet(&dir.join("pq"), batch, FILES);
        eprintln!(
            "scan_1gib: written in {:.1} s (column files, auto) and {:.1} s (Parquet)",
            ours.as_secs_f64(),
            start.elapsed().as_secs_f64()
        );
        std::fs::write(dir.join("done"), "").unwrap();
    }
    // The marker lies beside the folder: a table over the folder reads every file in it.
    let marker = dir.join(format!("scan-first-done-{SCAN_FIRST}"));
    if !marker.exists() {
        let scan_first = dir.join("mb-scan-first");
        let _ = std::fs::remove_dir_all(&scan_first);
        let batch = batch.get_or_insert_with(table);
        let start = Instant::now();
        let strategy = SCAN_FIRST.parse::<Strategy>().unwrap();
        write_mb(
            &scan_first,
            batch,
            FILES,
            WriteOptions::default().with_strategy(strategy),
        );
        eprintln!(
            "scan_1gib: written in {:.1} s (column files, {SCAN_FIRST})",
            start.elapsed().as_secs_f64()
        );
        std::fs::write(marker, "").unwrap();
    }
    dir
}

fn folder_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum()
}

/// Each column's bytes in the column files: its pages and page buffers.
fn column_bytes(dir: &Path, columns: usize) -> Vec<u64> {
    let mut sums = vec![0; columns];
    for entry in std::fs::read_dir(dir).unwrap() {
        let reader = FileReader::open(std::fs::File::open(entry.unwrap().path()).unwrap()).unwrap();
        for (c, sum) in sums.iter_mut().enumerate() {
            *sum += reader.column_bytes(c).unwrap();
        }
    }
    sums
}

/// Each column's compressed bytes in the folder's Parquet files (its column chunks).
fn parquet_column_bytes(dir: &Path, columns: usize) -> Vec<u64> {
    let mut sums = vec![0; columns];
    for entry in std::fs::read_dir(dir).unwrap() {
        let file = std::fs::File::open(entry.unwrap().path()).unwrap();
        let reader = SerializedFileReader::new(file).unwrap();
        for group in reader.metadata().row_groups() {
            for (c, sum) in sums.iter_mut().enumerate() {
                *sum += group.column(c).compressed_size() as u64;
            }
        }
    }
    sums
}

/// A session of `partitions` whose local files are read through `store`, with the table
/// `t` over `reader`'s folder of `dir`: column files (`ours`) or Parquet files.
async fn session(
    dir: &Path,
    (_, sub, ours): Reader,
    partitions: usize,
    store: Arc<Counting>,
) -> SessionContext {
    let ctx =
        SessionContext::new_with_config(SessionConfig::new().with_target_partitions(partitions));
    ctx.register_object_store(&url::Url::parse("file://").unwrap(), store);
    let path = dir.join(sub);
    let path = path.to_str().unwrap();
    if ours {
        let table = MiniblockTable::open(&ctx.state(), path).await.unwrap();
        ctx.register_table("t", Arc::new(table)).unwrap();
    } else {
        ctx.register_parquet("t", path, ParquetReadOptions::default())
            .await
            .unwrap();
    }
    ctx
}

async fn run(ctx: &SessionContext, sql: &str) -> Vec<RecordBatch> {
    ctx.sql(sql).await.unwrap().collect().await.unwrap()
}

/// One row through both readers: equal, but for the last digits of averages (summation
/// order follows the batches).
fn same_answers(ours: &[RecordBatch], theirs: &[RecordBatch], sql: &str) {
    let (a, b) = (&ours[0], &theirs[0]);
    assert_eq!((a.num_rows(), b.num_rows()), (1, 1), "{sql}");
    for c in 0..a.num_columns() {
        let float = |batch: &RecordBatch| {
            let array = batch.column(c).as_any().downcast_ref::<Float64Array>()?;
            Some(array.value(0))
        };
        match (float(a), float(b)) {
            (Some(x), Some(y)) => assert!(
                (x - y).abs() <= 1e-9 * x.abs().max(y.abs()),
                "{sql}: {x} against {y}"
            ),
            _ => assert_eq!(a.column(c), b.column(c), "{sql}: column {c}"),
        }
    }
}

/// Bytes fetched by `sql` through each reader, printed against the files' bytes.
fn count_bytes(rt: &Runtime, dir: &Path, names: &[String], rows: u64) {
    let files = [folder_bytes(&dir.join("mb")), folder_bytes(&dir.join("pq"))];
    let own = column_bytes(&dir.join("mb"), names.len());
    let scan_first = column_bytes(&dir.join("mb-scan-first"), names.len());
    let parquet = parquet_column_bytes(&dir.join("pq"), names.len());
    for (c, name) in names.iter().enumerate() {
        println!(
            "scan_1gib: bytes of {name}: column files {} (auto), {} ({SCAN_FIRST}, {:.3}x), Parquet {} ({:.3}x auto's)",
            own[c],
            scan_first[c],
            scan_first[c] as f64 / own[c] as f64,
            parquet[c],
            parquet[c] as f64 / own[c] as f64
        );
    }
    println!(
        "scan_1gib: {rows} rows; column files {} bytes, Parquet {} bytes",
        files[0], files[1]
    );
    let fetched = |reader: Reader, sql: &str| {
        rt.block_on(async {
            let store = Arc::new(Counting::new(Arc::new(LocalFileSystem::new())));
            let ctx = session(dir, reader, 2, Arc::clone(&store)).await;
            store.reset();
            let out = run(&ctx, sql).await;
            (store.bytes(), out)
        })
    };
    let (from, to) = (rows / 2, rows / 2 + rows / 100);
    let sql = format!(
        "SELECT count(*), min(\"{a}\"), avg(\"{b}\") FROM t WHERE key >= {from} AND key < {to}",
        a = names[1],
        b = names[names.len() - 1]
    );
    let (ours, answer) = fetched(READERS[0], &sql);
    let (theirs, same) = fetched(READERS[2], &sql);
    same_answers(&answer, &same, &sql);
    let count = answer[0]
        .column(0)
        .as_any()
        .downcast_ref::<Int64Array>()
        .unwrap();
    assert_eq!(count.value(0) as u64, to - from);
    println!(
        "scan_1gib: filter on 1% of the rows ({sql}): column files {ours} bytes ({:.2}%), Parquet {theirs} bytes ({:.2}%)",
        100.0 * ours as f64 / files[0] as f64,
        100.0 * theirs as f64 / files[1] as f64
    );
    for (name, own) in names.iter().zip(own) {
        // Not min or max alone: Parquet answers those from its footer's statistics.
        let sql = format!("SELECT count(*), avg(\"{name}\") FROM t");
        let (ours, answer) = fetched(READERS[0], &sql);
        let (theirs, same) = fetched(READERS[2], &sql);
        same_answers(&answer, &same, &sql);
        println!(
            "scan_1gib: 1 column of {}, {name}: column files {ours} bytes ({:.2}% of the files, {:.3}x the column's own bytes), Parquet {theirs} bytes ({:.2}%)",
            names.len(),
            100.0 * ours as f64 / files[0] as f64,
            ours as f64 / own as f64,
            100.0 * theirs as f64 / files[1] as f64
        );
    }
}

fn scans(c: &mut Criterion) {
    let dir = written();
    let rt = Runtime::new().unwrap();
    let store = || Arc::new(Counting::new(Arc::new(LocalFileSystem::new())));
    let (names, rows) = rt.block_on(async {
        let ctx = session(&dir, READERS[0], 1, store()).await;
        let schema = ctx.table("t").await.unwrap().schema().clone();
        let rows = run(&ctx, "SELECT count(*) FROM t").await[0]
            .column(0)
            .as_any()
            .downcast_ref::<Int64Array>()
            .unwrap()
            .value(0);
        let names: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();
        (names, rows as u64)
    });
    count_bytes(&rt, &dir, &names, rows);

    let mut group = c.benchmark_group("scan_1gib");
    group.sample_size(10);
    for partitions in [1, 2] {
        let contexts =
            READERS.map(|reader| rt.block_on(session(&dir, reader, partitions, store())));
        for name in &names {
            let sql = format!(
                "SELECT count(*), min(\"{name}\"), max(\"{name}\"), avg(\"{name}\") FROM t"
            );
            let answers = contexts.each_ref().map(|ctx| rt.block_on(run(ctx, &sql)));
            same_answers(&answers[0], &answers[2], &sql);
            same_answers(&answers[1], &answers[2], &sql);
            for (ctx, (reader, _, _)) in contexts.iter().zip(READERS) {
                group.bench_function(
                    BenchmarkId::new(format!("{name}/{reader}"), format!("{partitions}p")),
                    |b| b.iter(|| rt.block_on(run(ctx, &sql))),
                );
            }
        }
    }
    group.finish();
}

criterion_group!(benches, scans);
criterion_main!(benches);
