//! A miniblock table queried through Ballista: a scheduler and an executor started in
//! this process (Ballista's `standalone` mode, which talks gRPC to them as to remote
//! ones), set up with the codec as the README shows. The logical plan goes from the
//! client to the scheduler and the physical plan from the scheduler to the executor as
//! bytes, through `MiniblockCodec` wrapped around Ballista's own codecs; the results
//! must equal those of a local `SessionContext` over the same file.

use std::sync::Arc;

use arrow_array::{Float64Array, Int64Array, RecordBatch};
use ballista::prelude::{SessionConfigExt, SessionContextExt};
use ballista_core::serde::{BallistaLogicalExtensionCodec, BallistaPhysicalExtensionCodec};
use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::execution::SessionStateBuilder;
use datafusion::prelude::{SessionConfig, SessionContext};
use miniblock::file::{FileWriter, WriteOptions};
use miniblock_datafusion::{MiniblockCodec, MiniblockTable};

/// Hourly readings of 24 stations: an integer key, a float with nulls.
fn readings() -> RecordBatch {
    let n = 50_000;
    let station: Int64Array = (0..n).map(|i| i64::from(i % 24)).collect();
    let value: Float64Array = (0..n)
        .map(|i| (i % 97 != 5).then(|| f64::from(i).sin() * 40.0 + 1000.0))
        .collect();
    RecordBatch::try_from_iter([
        ("station", Arc::new(station) as _),
        ("value", Arc::new(value) as _),
    ])
    .unwrap()
}

/// Writes [`readings`] as a miniblock file in `dir`; returns its path.
fn write_readings(dir: &std::path::Path) -> String {
    let path = dir.join("readings.mb");
    let batch = readings();
    let file = std::fs::File::create(&path).unwrap();
    let mut writer = FileWriter::try_new(file, &batch.schema(), WriteOptions::default()).unwrap();
    writer.write_batch(&batch).unwrap();
    writer.finish().unwrap();
    path.to_str().unwrap().to_owned()
}

const QUERIES: [&str; 3] = [
    "SELECT count(*), count(value), min(value), max(value), sum(value) FROM t",
    "SELECT station, count(value), avg(value) FROM t WHERE value > 1010 GROUP BY station ORDER BY station",
    "SELECT station, value FROM t WHERE value IS NOT NULL ORDER BY value DESC, station LIMIT 5",
];

async fn results(ctx: &SessionContext, path: &str) -> Vec<String> {
    let table = MiniblockTable::open(&ctx.state(), path).await.unwrap();
    ctx.register_table("t", Arc::new(table)).unwrap();
    let mut out = Vec::new();
    for query in QUERIES {
        let batches = ctx.sql(query).await.unwrap().collect().await.unwrap();
        out.push(pretty_format_batches(&batches).unwrap().to_string());
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_table_runs_on_a_ballista_scheduler_and_executor() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_readings(dir.path());

    // As in the README.
    let codec = Arc::new(MiniblockCodec::wrapping(
        Arc::new(BallistaLogicalExtensionCodec::default()),
        Arc::new(BallistaPhysicalExtensionCodec::default()),
    ));
    let config = SessionConfig::new_with_ballista()
        .with_ballista_logical_extension_codec(codec.clone())
        .with_ballista_physical_extension_codec(codec)
        .with_target_partitions(2);
    let state = SessionStateBuilder::new()
        .with_config(config)
        .with_default_features()
        .build();
    let ballista = SessionContext::standalone_with_state(state).await.unwrap();

    let local = SessionContext::new_with_config(SessionConfig::new().with_target_partitions(2));
    let expected = results(&local, &path).await;
    let got = results(&ballista, &path).await;
    for ((query, got), expected) in QUERIES.iter().zip(&got).zip(&expected) {
        assert_eq!(got, expected, "{query}");
    }
    // Not vacuous: the aggregates saw every row and every null.
    assert!(expected[0].contains("50000"), "{}", expected[0]);
    assert!(expected[0].contains("49484"), "{}", expected[0]);
    // The queries went to the scheduler: the client's plan is Ballista's.
    let plan = ballista.sql(QUERIES[0]).await.unwrap();
    let plan = plan.create_physical_plan().await.unwrap();
    let shown = datafusion::physical_plan::displayable(plan.as_ref())
        .indent(false)
        .to_string();
    assert!(shown.contains("DistributedQueryExec"), "{shown}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn without_the_codec_ballista_cannot_ship_the_table() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_readings(dir.path());
    // Ballista's own codecs only: the query must fail, not run somewhere unnoticed.
    let state = SessionStateBuilder::new()
        .with_config(SessionConfig::new_with_ballista())
        .with_default_features()
        .build();
    let ctx = SessionContext::standalone_with_state(state).await.unwrap();
    let table = MiniblockTable::open(&ctx.state(), &path).await.unwrap();
    ctx.register_table("t", Arc::new(table)).unwrap();
    let result = match ctx.sql(QUERIES[0]).await {
        Ok(frame) => frame.collect().await.map(|_| ()),
        Err(e) => Err(e),
    };
    let err = result.expect_err("a miniblock table shipped without its codec");
    println!("without the codec: {err}");
}
