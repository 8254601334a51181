//! Queries through the table provider against the same queries through DataFusion's own
//! Parquet reader, on real data with nulls; pruning, projection and limit byte counts at
//! the object store; plans through `datafusion-proto` and back.

mod common;

use std::sync::Arc;

use common::{weather, write_file, write_mb, write_parquet, Counting};
use datafusion::arrow::array::{ArrayRef, Float64Array, Int32Array, Int64Array, RecordBatch};
use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::physical_plan::{collect, ExecutionPlan};
use datafusion::prelude::{ParquetReadOptions, SessionConfig, SessionContext};
use datafusion_proto::bytes::{
    logical_plan_from_bytes_with_extension_codec, logical_plan_to_bytes_with_extension_codec,
    physical_plan_from_bytes_with_extension_codec, physical_plan_to_bytes_with_extension_codec,
};
use miniblock::file::WriteOptions;
use miniblock_datafusion::{enable_url_table, MiniblockCodec, MiniblockScanExec, MiniblockTable};
use object_store::local::LocalFileSystem;

fn context(partitions: usize) -> SessionContext {
    SessionContext::new_with_config(SessionConfig::new().with_target_partitions(partitions))
}

async fn run(ctx: &SessionContext, sql: &str) -> String {
    let batches = ctx
        .sql(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .collect()
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    pretty_format_batches(&batches).unwrap().to_string()
}

const QUERIES: &[&str] = &[
    "SELECT count(*), count(value), count(series), min(value), max(value), round(avg(value), 6), round(sum(value), 2) FROM t",
    "SELECT series, count(*), count(value), min(value), max(value), round(avg(value), 6) FROM t GROUP BY series ORDER BY series NULLS FIRST",
    "SELECT series, hour, value FROM t WHERE value > 900 ORDER BY value DESC, series, hour LIMIT 12",
    "SELECT count(*), min(hour), max(hour) FROM t WHERE hour BETWEEN 100 AND 120 AND series = 4",
    "SELECT count(*), min(hour) FROM t WHERE series IS NULL",
    "SELECT hour, value FROM t WHERE series = 7 AND value IS NULL ORDER BY hour",
    "SELECT series, hour FROM t WHERE value < -5 OR value IS NULL ORDER BY series NULLS LAST, hour LIMIT 20 OFFSET 40",
    "SELECT count(*) FROM t WHERE value = 0.0 OR hour IN (1, 2, 8759)",
    "SELECT hour % 24 AS h, round(avg(value), 6), max(value) FROM t WHERE series = 0 GROUP BY h ORDER BY h",
];

#[tokio::test]
async fn queries_match_datafusions_parquet_reader() {
    let dir = tempfile::tempdir().unwrap();
    let batch = weather();
    write_mb(&dir.path().join("mb"), &batch, 3, WriteOptions::default());
    write_parquet(&dir.path().join("pq"), &batch, 3);
    for partitions in [1, 2, 5] {
        let ours = context(partitions);
        let table = MiniblockTable::open(&ours.state(), dir.path().join("mb").to_str().unwrap())
            .await
            .unwrap();
        assert_eq!(table.num_rows(), batch.num_rows() as u64);
        assert_eq!(table.paths().count(), 3);
        ours.register_table("t", Arc::new(table)).unwrap();
        let theirs = context(partitions);
        theirs
            .register_parquet(
                "t",
                dir.path().join("pq").to_str().unwrap(),
                ParquetReadOptions::default(),
            )
            .await
            .unwrap();
        for sql in QUERIES {
            let (a, b) = (run(&ours, sql).await, run(&theirs, sql).await);
            assert_eq!(a, b, "{sql} at {partitions} partitions");
            assert!(
                a.lines().count() > 4,
                "{sql}: an empty answer proves little\n{a}"
            );
        }
    }
}

#[tokio::test]
async fn scans_use_every_partition_and_keep_the_schema_metadata() {
    let dir = tempfile::tempdir().unwrap();
    let batch = weather();
    let schema = Arc::new(
        batch
            .schema()
            .as_ref()
            .clone()
            .with_metadata([("source".to_string(), "pvlib tmy3".to_string())].into()),
    );
    let batch = batch.with_schema(schema).unwrap();
    write_mb(dir.path(), &batch, 2, WriteOptions::default());
    let ctx = context(4);
    let table = MiniblockTable::open(&ctx.state(), dir.path().to_str().unwrap())
        .await
        .unwrap();
    ctx.register_table("t", Arc::new(table)).unwrap();
    let plan = ctx
        .sql("SELECT value FROM t")
        .await
        .unwrap()
        .create_physical_plan()
        .await
        .unwrap();
    let scan = find_scan(&plan);
    assert_eq!(scan.properties().output_partitioning().partition_count(), 4);
    assert_eq!(scan.rows(None), batch.num_rows() as u64);
    let share = scan.rows(Some(0));
    assert!((0..4).all(|p| scan.rows(Some(p)).abs_diff(share) <= 1));
    let out = collect(Arc::clone(&plan), ctx.task_ctx()).await.unwrap();
    assert_eq!(
        out.iter().map(RecordBatch::num_rows).sum::<usize>(),
        batch.num_rows()
    );
    let df = ctx.table("t").await.unwrap();
    assert_eq!(df.schema().metadata()["source"], "pvlib tmy3");
}

/// The scan in `plan`, if it has one.
fn scan_in(plan: &Arc<dyn ExecutionPlan>) -> Option<&MiniblockScanExec> {
    plan.downcast_ref::<MiniblockScanExec>()
        .or_else(|| plan.children().into_iter().find_map(scan_in))
}

fn find_scan(plan: &Arc<dyn ExecutionPlan>) -> &MiniblockScanExec {
    scan_in(plan).expect("a scan in the plan")
}

/// Ten columns, 819,200 rows, 100 pages each: `key` sorted (with jitter), the others
/// real values (the bundled sample's, picked at random) and random integers.
fn wide() -> RecordBatch {
    let rows = 819_200u64;
    let hash = |x: u64| {
        let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let base = weather();
    let values = base
        .column(2)
        .as_any()
        .downcast_ref::<Float64Array>()
        .unwrap();
    let mut columns: Vec<(String, ArrayRef)> = vec![(
        "key".into(),
        Arc::new(Int64Array::from_iter_values(
            (0..rows).map(|i| (i * 4 + hash(i) % 4).cast_signed()),
        )),
    )];
    for c in 0..6u64 {
        let column: Float64Array = (0..rows)
            .map(|i| Some(values.value((hash(i * 16 + c) % values.len() as u64) as usize)))
            .collect();
        columns.push((format!("f{c}"), Arc::new(column)));
    }
    for c in 0..3u64 {
        let column = Int32Array::from_iter_values(
            (0..rows).map(|i| (hash(i * 16 + 8 + c) % 1_000_000) as i32),
        );
        columns.push((format!("i{c}"), Arc::new(column)));
    }
    RecordBatch::try_from_iter(columns).unwrap()
}

/// A context whose local files are read through a counting store, with the table `t`
/// (`wide()`, one file).
async fn counted(dir: &std::path::Path, partitions: usize) -> (SessionContext, Arc<Counting>, u64) {
    let batch = wide();
    let options = WriteOptions {
        page_values: Some(8192),
        ..WriteOptions::default()
    };
    write_mb(dir, &batch, 1, options);
    let file_bytes = std::fs::metadata(dir.join("part-0.mb")).unwrap().len();
    let store = Arc::new(Counting::new(Arc::new(LocalFileSystem::new())));
    let ctx = context(partitions);
    ctx.register_object_store(
        &url::Url::parse("file://").unwrap(),
        Arc::clone(&store) as _,
    );
    let table = MiniblockTable::open(&ctx.state(), dir.to_str().unwrap())
        .await
        .unwrap();
    ctx.register_table("t", Arc::new(table)).unwrap();
    store.reset();
    (ctx, store, file_bytes)
}

#[tokio::test]
async fn a_selective_filter_reads_few_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let (ctx, store, file_bytes) = counted(dir.path(), 2).await;
    // 1% of the rows: one page of `key` in a hundred (rows 409,600 to 417,791).
    let out = run(
        &ctx,
        "SELECT count(*), round(avg(f0), 6), max(i1) FROM t WHERE key >= 1638400 AND key < 1671168",
    )
    .await;
    assert!(out.contains("| 8192 "), "{out}");
    let share = store.bytes() as f64 / file_bytes as f64;
    println!(
        "filter on 1% of the pages: {} of {file_bytes} bytes ({:.2}%), {} requests",
        store.bytes(),
        share * 100.0,
        store.requests.load(std::sync::atomic::Ordering::SeqCst)
    );
    assert!(share <= 0.03, "{share}");
    // A filter the statistics cannot judge reads every page of the columns it needs.
    let pruned = store.bytes();
    store.reset();
    let out = run(
        &ctx,
        "SELECT count(*), round(avg(f0), 6), max(i1) FROM t WHERE abs(key - 1654784) < 16384",
    )
    .await;
    assert!(out.contains("| 819"), "{out}");
    assert!(
        store.bytes() > 50 * pruned,
        "{} against {pruned}",
        store.bytes()
    );
}

#[tokio::test]
async fn one_column_of_ten_reads_its_own_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let (ctx, store, file_bytes) = counted(dir.path(), 2).await;
    let out = run(&ctx, "SELECT round(sum(f3), 3), count(*) FROM t").await;
    assert!(out.contains("| 819200 "), "{out}");
    let share = store.bytes() as f64 / file_bytes as f64;
    println!(
        "1 column of 10: {} of {file_bytes} bytes ({:.1}%)",
        store.bytes(),
        share * 100.0
    );
    assert!(share <= 0.15, "{share}");
    // count(*) alone is answered by the footer: no page is read.
    store.reset();
    let out = run(&ctx, "SELECT count(*) FROM t").await;
    assert!(out.contains("| 819200 "), "{out}");
    assert_eq!(store.bytes(), 0);
    // A limit without a filter reads the first rows only.
    store.reset();
    let out = run(&ctx, "SELECT key, f1 FROM t LIMIT 5").await;
    assert_eq!(out.lines().count(), 9, "{out}");
    assert!(store.bytes() < 64 * 1024, "{}", store.bytes());
}

#[tokio::test]
async fn plans_travel_through_datafusion_proto() {
    let dir = tempfile::tempdir().unwrap();
    let batch = weather();
    write_mb(dir.path(), &batch, 2, WriteOptions::default());
    let ctx = context(3);
    let table = MiniblockTable::open(&ctx.state(), dir.path().to_str().unwrap())
        .await
        .unwrap();
    ctx.register_table("t", Arc::new(table)).unwrap();
    let sql = "SELECT series, count(*), max(value), round(avg(value), 6) FROM t WHERE hour < 4000 GROUP BY series ORDER BY series";
    let plan = ctx
        .sql(sql)
        .await
        .unwrap()
        .create_physical_plan()
        .await
        .unwrap();
    let bytes =
        physical_plan_to_bytes_with_extension_codec(Arc::clone(&plan), &MiniblockCodec::default())
            .unwrap();
    // An executor: a fresh session, no table registered, the files opened anew.
    let executor = context(3);
    let back = physical_plan_from_bytes_with_extension_codec(
        &bytes,
        &executor.task_ctx(),
        &MiniblockCodec::default(),
    )
    .unwrap();
    assert_eq!(
        datafusion::physical_plan::displayable(plan.as_ref())
            .indent(true)
            .to_string(),
        datafusion::physical_plan::displayable(back.as_ref())
            .indent(true)
            .to_string()
    );
    let want = collect(plan, ctx.task_ctx()).await.unwrap();
    let got = collect(back, executor.task_ctx()).await.unwrap();
    assert_eq!(
        pretty_format_batches(&want).unwrap().to_string(),
        pretty_format_batches(&got).unwrap().to_string()
    );
    // 25 series and the rows without one.
    assert_eq!(want.iter().map(RecordBatch::num_rows).sum::<usize>(), 26);
    // Bytes that are not a plan are an error, not a panic.
    for cut in [1, bytes.len() / 2, bytes.len() - 1] {
        let _ = physical_plan_from_bytes_with_extension_codec(
            &bytes[..cut],
            &executor.task_ctx(),
            &MiniblockCodec::default(),
        );
    }
}

#[tokio::test]
async fn logical_plans_carry_the_table() {
    let dir = tempfile::tempdir().unwrap();
    write_mb(dir.path(), &weather(), 2, WriteOptions::default());
    let ctx = context(2);
    let table = MiniblockTable::open(&ctx.state(), dir.path().to_str().unwrap())
        .await
        .unwrap();
    ctx.register_table("t", Arc::new(table)).unwrap();
    let sql = "SELECT series, min(value), count(*) FROM t WHERE value > 20 GROUP BY series ORDER BY series";
    let frame = ctx.sql(sql).await.unwrap();
    let bytes = logical_plan_to_bytes_with_extension_codec(
        frame.logical_plan(),
        &MiniblockCodec::default(),
    )
    .unwrap();
    // A scheduler: a fresh session; the table's files are opened by its first scan.
    let scheduler = context(2);
    let plan = logical_plan_from_bytes_with_extension_codec(
        &bytes,
        &scheduler.task_ctx(),
        &MiniblockCodec::default(),
    )
    .unwrap();
    let got = scheduler
        .execute_logical_plan(plan)
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    let want = frame.collect().await.unwrap();
    assert_eq!(
        pretty_format_batches(&want).unwrap().to_string(),
        pretty_format_batches(&got).unwrap().to_string()
    );
    assert!(want.iter().map(RecordBatch::num_rows).sum::<usize>() >= 5);
    // A file replaced by one of other columns is refused when the scan opens it.
    let other = weather().project(&[0, 2]).unwrap();
    write_file(
        &dir.path().join("part-1.mb"),
        &other,
        WriteOptions::default(),
    );
    let plan = logical_plan_from_bytes_with_extension_codec(
        &bytes,
        &context(2).task_ctx(),
        &MiniblockCodec::default(),
    )
    .unwrap();
    let err = context(2)
        .execute_logical_plan(plan)
        .await
        .unwrap()
        .collect()
        .await
        .unwrap_err();
    assert!(err.to_string().contains("part-1.mb"), "{err}");
}

#[tokio::test]
async fn sql_names_files_by_path() {
    let dir = tempfile::tempdir().unwrap();
    let batch = weather();
    write_mb(&dir.path().join("mb"), &batch, 2, WriteOptions::default());
    write_parquet(&dir.path().join("pq"), &batch, 1);
    let ctx = enable_url_table(SessionContext::new());
    let mb = dir.path().join("mb");
    for from in [
        format!("'{}/*.mb'", mb.display()),
        format!("'{}'", mb.display()),
        format!("'{}/part-0.mb'", mb.display()),
    ] {
        let out = run(&ctx, &format!("SELECT count(*) FROM {from}")).await;
        let want = if from.contains("part-0") {
            109_500
        } else {
            219_000
        };
        assert!(out.contains(&format!("| {want} ")), "{from}: {out}");
    }
    let parquet = format!("'{}/part-0.parquet'", dir.path().join("pq").display());
    let out = run(&ctx, &format!("SELECT count(*) FROM {parquet}")).await;
    assert!(out.contains("| 219000 "), "{out}");
    let err = ctx
        .sql(&format!(
            "SELECT * FROM '{}/nothing/*.mb'",
            dir.path().display()
        ))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("no column files"), "{err}");
}

#[tokio::test]
async fn files_of_other_columns_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let batch = weather();
    write_mb(dir.path(), &batch, 1, WriteOptions::default());
    let other = batch.project(&[0, 2]).unwrap();
    write_file(
        &dir.path().join("other.mb"),
        &other,
        WriteOptions::default(),
    );
    let ctx = context(2);
    let err = MiniblockTable::open(&ctx.state(), dir.path().to_str().unwrap())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("columns"), "{err}");
    // A damaged file is named in the error.
    std::fs::write(dir.path().join("other.mb"), b"MBLK\x01\0\0\0 not a footer").unwrap();
    let err = MiniblockTable::open(&ctx.state(), dir.path().to_str().unwrap())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("other.mb"), "{err}");
}

/// `count(*)`, `min` and `max` over whole pages with statistics and no NaN come from the
/// footers, with no scan left in the plan; a column with NaN, and rows that cut pages,
/// are scanned. Either way the answers are those of a scan of the same rows in memory,
/// bit for bit (signed zeros and NaN included).
#[tokio::test]
async fn extremes_come_from_page_statistics_only_when_exact() {
    use datafusion::arrow::array::Float32Array;
    use datafusion::datasource::MemTable;
    let rows = 10_000;
    let batch = RecordBatch::try_from_iter([
        (
            "i",
            Arc::new(Int64Array::from_iter_values(
                (0..rows).map(|i| i * 3 - 7_000),
            )) as ArrayRef,
        ),
        (
            // Zeros of both signs at the extremes, nulls, no NaN.
            "z",
            Arc::new(Float64Array::from_iter((0..rows).map(|i| match i % 5 {
                0 => None,
                1 => Some(-0.0),
                _ => Some(0.0),
            }))) as ArrayRef,
        ),
        (
            // One NaN, with its sign bit set: Arrow's min takes it.
            "n",
            Arc::new(Float32Array::from_iter_values((0..rows).map(|i| {
                if i == 4_321 {
                    f32::from_bits(0xFFC0_0001)
                } else {
                    (i as f32).sin()
                }
            }))) as ArrayRef,
        ),
    ])
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let options = WriteOptions {
        page_values: Some(1_000),
        ..WriteOptions::default()
    };
    write_mb(&dir.path().join("two"), &batch, 2, options);
    // One file: two partitions cut it within a page, and together cover its pages.
    write_file(&dir.path().join("one.mb"), &batch, options);
    let queries = [
        (
            "SELECT count(*), min(i), max(i), min(z), max(z), count(z) FROM t",
            false,
        ),
        ("SELECT min(n), max(n) FROM t", true),
        ("SELECT max(i) FROM (SELECT i FROM t LIMIT 1500)", true),
        (
            "SELECT min(i), max(i) FROM (SELECT i FROM t LIMIT 2000)",
            false,
        ),
    ];
    for (partitions, at) in [(1, "two"), (2, "two"), (2, "one.mb"), (3, "one.mb")] {
        let ctx = context(partitions);
        let at = dir.path().join(at);
        let table = MiniblockTable::open(&ctx.state(), at.to_str().unwrap())
            .await
            .unwrap();
        {
            use datafusion::catalog::TableProvider;
            use datafusion::common::stats::Precision;
            use datafusion::common::ScalarValue;
            let stats = table.statistics().unwrap();
            assert_eq!(stats.num_rows, Precision::Exact(10_000));
            let i = &stats.column_statistics[0];
            assert_eq!(
                i.min_value,
                Precision::Exact(ScalarValue::Int64(Some(-7_000)))
            );
            assert_eq!(
                i.max_value,
                Precision::Exact(ScalarValue::Int64(Some(22_997)))
            );
            assert_eq!(
                stats.column_statistics[1].null_count,
                Precision::Exact(2_000)
            );
            assert_eq!(stats.column_statistics[2].max_value, Precision::Absent);
        }
        ctx.register_table("t", Arc::new(table)).unwrap();
        let memory = context(partitions);
        let mem = MemTable::try_new(batch.schema(), vec![vec![batch.clone()]]).unwrap();
        memory.register_table("t", Arc::new(mem)).unwrap();
        for (sql, scanned) in queries {
            let df = ctx.sql(sql).await.unwrap();
            let plan = df.clone().create_physical_plan().await.unwrap();
            let has_scan = scan_in(&plan).is_some();
            assert_eq!(has_scan, scanned, "{sql} at {partitions}p");
            let ours = collect(plan, ctx.task_ctx()).await.unwrap();
            let theirs = memory.sql(sql).await.unwrap().collect().await.unwrap();
            assert_eq!(ours.len(), 1, "{sql}");
            assert_eq!(ours[0].num_rows(), 1, "{sql}");
            for c in 0..ours[0].num_columns() {
                let (a, b) = (ours[0].column(c), theirs[0].column(c));
                let bits = |x: &ArrayRef| -> Vec<u64> {
                    if let Some(f) = x.as_any().downcast_ref::<Float64Array>() {
                        f.values().iter().map(|v| v.to_bits()).collect()
                    } else if let Some(f) = x.as_any().downcast_ref::<Float32Array>() {
                        f.values().iter().map(|v| u64::from(v.to_bits())).collect()
                    } else {
                        Vec::new()
                    }
                };
                assert_eq!(a.as_ref(), b.as_ref(), "{sql} column {c} at {partitions}p");
                assert_eq!(bits(a), bits(b), "{sql} column {c} at {partitions}p");
            }
        }
    }
    // The NaN is what Arrow's min returns, so the check above saw it.
    let memory = context(1);
    let mem = MemTable::try_new(batch.schema(), vec![vec![batch.clone()]]).unwrap();
    memory.register_table("t", Arc::new(mem)).unwrap();
    let out = memory
        .sql("SELECT min(n) FROM t")
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    let min = out[0]
        .column(0)
        .as_any()
        .downcast_ref::<Float32Array>()
        .unwrap()
        .value(0);
    assert_eq!(min.to_bits(), 0xFFC0_0001);
}

/// Extremes Arrow cannot show (dates and times beyond chrono's range, which a column file
/// rightly holds) are not handed to DataFusion as statistics, whose display of them
/// panics; the query scans instead and answers, or fails with an error.
#[tokio::test]
async fn out_of_range_temporal_extremes_are_not_statistics() {
    use datafusion::arrow::array::{Date32Array, Date64Array, TimestampSecondArray};
    use datafusion::catalog::TableProvider;
    use datafusion::common::stats::Precision;
    let batch = RecordBatch::try_from_iter([
        (
            "d64",
            Arc::new(Date64Array::from(vec![i64::MIN, 0, i64::MAX])) as ArrayRef,
        ),
        (
            "d32",
            Arc::new(Date32Array::from(vec![i32::MIN, 0, i32::MAX])) as ArrayRef,
        ),
        (
            "ts",
            Arc::new(TimestampSecondArray::from(vec![i64::MIN, 0, i64::MAX])) as ArrayRef,
        ),
        ("i", Arc::new(Int64Array::from(vec![1, 2, 3])) as ArrayRef),
    ])
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.mb");
    write_file(&path, &batch, WriteOptions::default());
    let ctx = context(1);
    let table = MiniblockTable::open(&ctx.state(), path.to_str().unwrap())
        .await
        .unwrap();
    let stats = table.statistics().unwrap();
    for c in 0..3 {
        assert_eq!(
            stats.column_statistics[c].min_value,
            Precision::Absent,
            "{c}"
        );
        assert_eq!(
            stats.column_statistics[c].max_value,
            Precision::Absent,
            "{c}"
        );
    }
    assert!(matches!(
        stats.column_statistics[3].max_value,
        Precision::Exact(_)
    ));
    ctx.register_table("t", Arc::new(table)).unwrap();
    for sql in [
        "SELECT min(d64), max(d64) FROM t",
        "SELECT min(d32), max(d32) FROM t",
        "SELECT min(ts), max(ts) FROM t",
    ] {
        let answer = std::panic::AssertUnwindSafe(async {
            let batches = ctx.sql(sql).await?.collect().await?;
            Ok::<_, datafusion::error::DataFusionError>(batches)
        });
        let answer = futures::FutureExt::catch_unwind(answer).await;
        assert!(answer.is_ok(), "{sql} panicked");
    }
}

/// `COPY (SELECT ...) TO 'x.mb'` writes a column file (types, nulls and values as the
/// query gave them), `STORED AS MB` reads a directory of them through DataFusion's
/// listing table, and a column type column files cannot hold fails the query by name.
#[tokio::test]
async fn copy_to_writes_column_files() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("weather.mb");
    write_file(&source, &weather(), WriteOptions::default());
    let ctx = enable_url_table(context(2));
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let copied = out.join("hot.mb");
    let query = format!(
        "SELECT series, hour, value, value > 20 AS hot FROM '{}' WHERE hour < 5000",
        source.display()
    );
    let counted = run(&ctx, &format!("COPY ({query}) TO '{}'", copied.display())).await;
    assert!(counted.contains('|'), "{counted}");
    let expected = run(&ctx, &format!("{query} ORDER BY series, hour")).await;
    let back = run(
        &ctx,
        &format!("SELECT * FROM '{}' ORDER BY series, hour", copied.display()),
    )
    .await;
    assert_eq!(back, expected);
    let mut reader =
        miniblock::file::FileReader::open(std::fs::File::open(&copied).unwrap()).unwrap();
    reader.verify().unwrap();
    assert_eq!(
        reader.schema().field(3).data_type(),
        &datafusion::arrow::datatypes::DataType::Boolean
    );

    // The same file through a listing table of the directory.
    run(
        &ctx,
        &format!(
            "CREATE EXTERNAL TABLE listed STORED AS MB LOCATION '{}/'",
            out.display()
        ),
    )
    .await;
    let listed = run(&ctx, "SELECT * FROM listed ORDER BY series, hour").await;
    assert_eq!(listed, expected);
    let some = run(&ctx, "SELECT count(*), max(value) FROM listed WHERE hot").await;
    let direct = run(
        &ctx,
        &format!("SELECT count(*), max(value) FROM ({query}) WHERE hot"),
    )
    .await;
    let cells = |table: &str| -> Vec<String> {
        let row = table.lines().nth(3).unwrap_or_default();
        row.split('|').map(|c| c.trim().to_string()).collect()
    };
    assert_eq!(cells(&some), cells(&direct));

    let again = ctx
        .sql(&format!("COPY ({query}) TO '{}'", copied.display()))
        .await
        .unwrap()
        .collect()
        .await
        .unwrap_err();
    assert!(again.to_string().contains("already exists"), "{again}");

    let err = ctx
        .sql(&format!(
            "COPY (SELECT 'text' AS label) TO '{}'",
            out.join("bad.mb").display()
        ))
        .await
        .unwrap()
        .collect()
        .await
        .unwrap_err();
    assert!(err.to_string().contains("label"), "{err}");
}
