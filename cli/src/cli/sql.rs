//! `miniblock sql QUERY`: a SQL query through DataFusion, with files named in `FROM` by
//! their path.

use std::io::Write;
use std::path::Path;

use arrow_array::RecordBatch;
use datafusion::prelude::{SessionConfig, SessionContext};
use futures::StreamExt;

use super::output::write_error;
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
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The query; name files as quoted paths: `FROM 'weather.mb'`, `FROM 'dir/*.mb'`.
    query: String,
    /// How to print the result.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
}

/// Runs `sql`: the result on standard output as it comes (a table once complete).
pub fn run(args: &Args) -> Result<(), CliError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::new(format!("starting the query engine: {e}")))?;
    runtime.block_on(query(args))
}

async fn query(args: &Args) -> Result<(), CliError> {
    // Column names keep their case unquoted (`SELECT Temp`), as files name them.
    let config =
        SessionConfig::new().set_bool("datafusion.sql_parser.enable_ident_normalization", false);
    let ctx = miniblock_datafusion::enable_url_table(SessionContext::new_with_config(config));
    let frame = ctx.sql(&args.query).await.map_err(|e| engine_error(&e))?;
    let mut batches = frame.execute_stream().await.map_err(|e| engine_error(&e))?;
    let stdout = Path::new("standard output");
    let out = std::io::stdout().lock();
    match args.format {
        Format::Table => {
            let mut all: Vec<RecordBatch> = Vec::new();
            while let Some(batch) = batches.next().await {
                all.push(batch.map_err(|e| engine_error(&e))?);
            }
            let table = arrow_cast::pretty::pretty_format_batches(&all)
                .map_err(|e| CliError::new(e.to_string()))?;
            let mut out = out;
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
            let mut writer = arrow_json::LineDelimitedWriter::new(out);
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
