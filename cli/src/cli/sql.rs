//! `miniblock sql QUERY`: a SQL query through DataFusion, with files named in `FROM` by
//! their path. The engine is behind the `sql` feature (DataFusion is most of a cold
//! build); without it the subcommand still parses and says how to get it.

#[cfg(not(feature = "sql"))]
use super::CliError;

pub(super) const EXAMPLES: &str = "\
Examples:
  miniblock sql \"SELECT count(*), avg(temp) FROM 'weather.mb'\"
  miniblock sql \"SELECT station, max(temp) FROM 'data/*.mb' GROUP BY station ORDER BY 2 DESC LIMIT 5\"
  miniblock sql --format json \"SELECT * FROM 'weather.mb' WHERE temp > 30\" | head
  miniblock sql --format csv \"SELECT * FROM 'old.parquet' LIMIT 10\"

Column names keep their case (no quotes needed). A path ending in .mb, a glob of them
or a directory holding them reads as one table
(columns and pages a query does not need are not read); other paths are read by
DataFusion itself (Parquet, CSV, JSON, Arrow).";

/// How `sql` prints its result.
#[cfg_attr(not(feature = "sql"), allow(dead_code))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// An aligned table.
    Table,
    /// CSV with a header line.
    Csv,
    /// One JSON object per row, a line each.
    Json,
}

/// Arguments of `sql`.
#[cfg_attr(not(feature = "sql"), allow(dead_code))]
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The query; name files as quoted paths: `FROM 'weather.mb'`, `FROM 'dir/*.mb'`.
    query: String,
    /// How to print the result.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// First check every column file the query reads, as `miniblock verify` does
    /// (checksums, every page decoded, statistics against values): answers taken from
    /// footer statistics (`count(*)`, `min`, `max`, pages skipped by a filter) are then
    /// known true. Reads all of every file.
    #[arg(long)]
    verify: bool,
}

/// What `miniblock sql` says in a build without the `sql` feature.
#[cfg(not(feature = "sql"))]
const NOT_BUILT: &str = "this miniblock was built without SQL: \
rebuild it with `cargo install --path cli --features sql` \
(or run `cargo run --release --features sql -- sql QUERY`)";

/// Runs `sql` in a build without the engine: one line saying how to get it.
#[cfg(not(feature = "sql"))]
pub fn run(_args: &Args) -> Result<(), CliError> {
    Err(CliError::new(NOT_BUILT))
}

#[cfg(feature = "sql")]
pub use engine::run;

#[cfg(feature = "sql")]
mod engine {
    use std::io::Write;
    use std::path::Path;

    use arrow_array::RecordBatch;
    use datafusion::prelude::{SessionConfig, SessionContext};
    use futures::StreamExt;

    use super::super::output::{self, write_error};
    use super::super::CliError;
    use super::{Args, Format};

    /// Runs `sql`: the result on standard output as it comes (a table once complete).
    pub fn run(args: &Args) -> Result<(), CliError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .map_err(|e| CliError::new(format!("starting the query engine: {e}")))?;
        // The engine can panic on values it accepts (an `unwrap` in a statistics display,
        // a division inside an aggregate): the command reports it as one line and exit
        // status 1, not as a panic and status 101.
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            runtime.block_on(query(args))
        }));
        std::panic::set_hook(previous);
        result.unwrap_or_else(|panic| {
            let what = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("no message");
            Err(CliError::new(format!(
                "the query engine failed on this query (a bug in DataFusion): {}",
                what.split_whitespace().collect::<Vec<_>>().join(" ")
            )))
        })
    }

    async fn query(args: &Args) -> Result<(), CliError> {
        // Column names keep their case unquoted (`SELECT Temp`), as files name them.
        let config = SessionConfig::new()
            .set_bool("datafusion.sql_parser.enable_ident_normalization", false);
        let ctx = miniblock_datafusion::enable_url_table(SessionContext::new_with_config(config));
        let frame = ctx.sql(&args.query).await.map_err(|e| engine_error(&e))?;
        if args.verify {
            verify_tables(&ctx, frame.logical_plan()).await?;
        }
        let mut batches = frame.execute_stream().await.map_err(|e| engine_error(&e))?;
        let mut watch = output::PipeWatch::new(std::io::stdout().lock());
        let result = write_batches(args.format, &mut batches, &mut watch).await;
        watch.finish(result)
    }

    /// Writes the query's `batches` to `out` in `format`.
    async fn write_batches(
        format: Format,
        batches: &mut datafusion::physical_plan::SendableRecordBatchStream,
        out: &mut impl Write,
    ) -> Result<(), CliError> {
        let stdout = Path::new("standard output");
        match format {
            Format::Table => {
                let mut all: Vec<RecordBatch> = Vec::new();
                while let Some(batch) = batches.next().await {
                    all.push(batch.map_err(|e| engine_error(&e))?);
                }
                let table = arrow_cast::pretty::pretty_format_batches(&all)
                    .map_err(|e| CliError::new(e.to_string()))?;
                writeln!(out, "{table}").map_err(|e| write_error(stdout, &e))?;
                out.flush().map_err(|e| write_error(stdout, &e))
            }
            Format::Csv => {
                let mut writer = arrow_csv::Writer::new(out);
                while let Some(batch) = batches.next().await {
                    writer
                        .write(&batch.map_err(|e| engine_error(&e))?)
                        .map_err(|e| arrow_write_error(stdout, e))?;
                }
                writer
                    .into_inner()
                    .flush()
                    .map_err(|e| write_error(stdout, &e))
            }
            Format::Json => {
                // Every column in every row, `null` included, as DuckDB and DataFusion's
                // own writer print it: readers that go by position keep their columns.
                let mut writer = arrow_json::WriterBuilder::new()
                    .with_explicit_nulls(true)
                    .build::<_, arrow_json::writer::LineDelimited>(out);
                while let Some(batch) = batches.next().await {
                    writer
                        .write(&batch.map_err(|e| engine_error(&e))?)
                        .map_err(|e| arrow_write_error(stdout, e))?;
                }
                writer.finish().map_err(|e| arrow_write_error(stdout, e))?;
                writer
                    .into_inner()
                    .flush()
                    .map_err(|e| write_error(stdout, &e))
            }
        }
    }

    /// Verifies the column files of every table `plan` scans.
    async fn verify_tables(
        ctx: &SessionContext,
        plan: &datafusion::logical_expr::LogicalPlan,
    ) -> Result<(), CliError> {
        use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
        use datafusion::logical_expr::LogicalPlan;
        let mut tables = Vec::new();
        plan.apply(|node| {
            if let LogicalPlan::TableScan(scan) = node {
                tables.push(datafusion::datasource::source_as_provider(&scan.source)?);
            }
            Ok(TreeNodeRecursion::Continue)
        })
        .map_err(|e| engine_error(&e))?;
        // Subqueries are plans of their own.
        plan.apply_subqueries(|sub| {
            sub.apply(|node| {
                if let LogicalPlan::TableScan(scan) = node {
                    tables.push(datafusion::datasource::source_as_provider(&scan.source)?);
                }
                Ok(TreeNodeRecursion::Continue)
            })
        })
        .map_err(|e| engine_error(&e))?;
        let state = ctx.state();
        for table in tables {
            if let Some(table) = table.downcast_ref::<miniblock_datafusion::MiniblockTable>() {
                table.verify(&state).await.map_err(|e| engine_error(&e))?;
            }
        }
        Ok(())
    }

    /// A query error on one line.
    fn engine_error(e: &datafusion::error::DataFusionError) -> CliError {
        let text = e.to_string();
        CliError::new(text.split_whitespace().collect::<Vec<_>>().join(" "))
    }

    fn arrow_write_error(path: &Path, e: arrow_schema::ArrowError) -> CliError {
        match e {
            arrow_schema::ArrowError::IoError(_, io) => write_error(path, &io),
            other => CliError::new(format!("writing {}: {other}", path.display())),
        }
    }
}
