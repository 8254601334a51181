//! `.mb` as a DataFusion file format: `COPY (SELECT ...) TO 'out.mb'` writes a column
//! file, and `CREATE EXTERNAL TABLE t STORED AS MB LOCATION 'dir/'` reads them through
//! DataFusion's listing table.
//!
//! [`enable_url_table`](crate::enable_url_table) registers it; otherwise
//! `state.register_file_format(Arc::new(MiniblockFormatFactory), false)`. Queries that name
//! files by path (`FROM 'x.mb'`) go through [`MiniblockTable`](crate::MiniblockTable)
//! instead, which prunes pages by their statistics and reads only the chunks a scan needs;
//! the listing table's scan here reads every column of a file in batches.
//!
//! A `COPY` writes one column file per output file DataFusion's demultiplexer names (one
//! for `TO 'out.mb'`, one per partition for a directory), never over an existing file, encoded with `auto` and the
//! default options; the column types must be ones column files hold (fixed-width ones and
//! booleans), else the query fails naming the column.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::{Schema, SchemaRef};
use datafusion::catalog::Session;
use datafusion::common::runtime::{JoinSet, SpawnedTask};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{not_impl_err, plan_err, DataFusionError, GetExt, Result, Statistics};
use datafusion::datasource::file_format::file_compression_type::FileCompressionType;
use datafusion::datasource::file_format::write::demux::DemuxedStreamReceiver;
use datafusion::datasource::file_format::write::{
    get_writer_schema, ObjectWriterBuilder, SharedBuffer,
};
use datafusion::datasource::file_format::{FileFormat, FileFormatFactory};
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::{
    FileOpenFuture, FileOpener, FileScanConfig, FileSink, FileSinkConfig, FileSource,
};
use datafusion::datasource::projection::{ProjectionOpener, SplitProjection};
use datafusion::datasource::sink::{DataSink, DataSinkExec};
use datafusion::datasource::source::DataSourceExec;
use datafusion::datasource::table_schema::TableSchema;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::dml::InsertOp;
use datafusion::physical_expr_common::sort_expr::LexRequirement;
use datafusion::physical_plan::metrics::ExecutionPlanMetricsSet;
use datafusion::physical_plan::projection::ProjectionExprs;
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan, PhysicalExpr};
use futures::StreamExt;
use miniblock::file::{FileWriter, ObjectStoreReader, WriteOptions};
use object_store::{ObjectMeta, ObjectStore, ObjectStoreExt};
use tokio::io::AsyncWriteExt;

use crate::table::external;

/// The file format's name in `STORED AS` and its extension.
const EXT: &str = "mb";

/// Bytes a writer gathers before handing them to the object store.
const FLUSH_BYTES: usize = 8 << 20;

/// Rows per batch of a listing table's scan, unless the session says otherwise.
const DEFAULT_BATCH_ROWS: usize = 8192;

/// Makes [`MiniblockFormat`]s: what DataFusion looks up for `STORED AS MB` and for a
/// `COPY ... TO` path ending in `.mb`.
#[derive(Debug, Default)]
pub struct MiniblockFormatFactory;

impl GetExt for MiniblockFormatFactory {
    fn get_ext(&self) -> String {
        EXT.to_string()
    }
}

impl FileFormatFactory for MiniblockFormatFactory {
    fn create(
        &self,
        _state: &dyn Session,
        format_options: &HashMap<String, String>,
    ) -> Result<Arc<dyn FileFormat>> {
        if let Some(key) = format_options.keys().next() {
            return plan_err!("the mb format takes no options (got {key:?})");
        }
        Ok(Arc::new(MiniblockFormat))
    }

    fn default(&self) -> Arc<dyn FileFormat> {
        Arc::new(MiniblockFormat)
    }
}

/// Column files as a DataFusion [`FileFormat`].
#[derive(Debug, Default)]
pub struct MiniblockFormat;

#[async_trait]
impl FileFormat for MiniblockFormat {
    fn get_ext(&self) -> String {
        EXT.to_string()
    }

    fn get_ext_with_compression(&self, compression: &FileCompressionType) -> Result<String> {
        if compression.is_compressed() {
            return plan_err!("column files compress their own pages; not {compression:?}");
        }
        Ok(EXT.to_string())
    }

    fn compression_type(&self) -> Option<FileCompressionType> {
        None
    }

    async fn infer_schema(
        &self,
        _state: &dyn Session,
        store: &Arc<dyn ObjectStore>,
        objects: &[ObjectMeta],
    ) -> Result<SchemaRef> {
        let mut schema: Option<SchemaRef> = None;
        for object in objects {
            let reader = ObjectStoreReader::open(Arc::clone(store), object.location.clone())
                .await
                .map_err(|e| external(e).context(object.location.to_string()))?;
            let found = Arc::clone(reader.reader().schema());
            match &schema {
                None => schema = Some(found),
                Some(first) if first.fields() != found.fields() => {
                    return plan_err!(
                        "{}: its columns are not those of the other files",
                        object.location
                    );
                }
                Some(_) => {}
            }
        }
        Ok(schema.unwrap_or_else(|| Arc::new(Schema::empty())))
    }

    async fn infer_stats(
        &self,
        _state: &dyn Session,
        _store: &Arc<dyn ObjectStore>,
        table_schema: SchemaRef,
        _object: &ObjectMeta,
    ) -> Result<Statistics> {
        Ok(Statistics::new_unknown(&table_schema))
    }

    async fn create_physical_plan(
        &self,
        _state: &dyn Session,
        conf: FileScanConfig,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        // `conf` already carries the source `file_source` made for the listing table.
        Ok(DataSourceExec::from_data_source(conf))
    }

    async fn create_writer_physical_plan(
        &self,
        input: Arc<dyn ExecutionPlan>,
        _state: &dyn Session,
        conf: FileSinkConfig,
        order_requirements: Option<LexRequirement>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if conf.insert_op != InsertOp::Append {
            return not_impl_err!(
                "column files are written whole: INSERT OVERWRITE is not supported"
            );
        }
        let sink = Arc::new(MiniblockSink { config: conf });
        Ok(Arc::new(DataSinkExec::new(input, sink, order_requirements)))
    }

    fn file_source(&self, table_schema: TableSchema) -> Arc<dyn FileSource> {
        Arc::new(MiniblockSource {
            projection: SplitProjection::unprojected(&table_schema),
            table_schema,
            batch_rows: DEFAULT_BATCH_ROWS,
            metrics: ExecutionPlanMetricsSet::new(),
        })
    }
}

/// Reads column files for a listing table, the projected columns only, a batch of rows
/// at a time.
#[derive(Clone)]
struct MiniblockSource {
    table_schema: TableSchema,
    /// The columns read from each file, and what DataFusion computes from them.
    projection: SplitProjection,
    batch_rows: usize,
    metrics: ExecutionPlanMetricsSet,
}

impl FileSource for MiniblockSource {
    fn create_file_opener(
        &self,
        object_store: Arc<dyn ObjectStore>,
        _base_config: &FileScanConfig,
        _partition: usize,
    ) -> Result<Arc<dyn FileOpener>> {
        let opener = Arc::new(MiniblockOpener {
            store: object_store,
            schema: Arc::clone(self.table_schema.file_schema()),
            columns: self.projection.file_indices.clone(),
            batch_rows: self.batch_rows as u64,
        });
        ProjectionOpener::try_new(
            self.projection.clone(),
            opener,
            self.table_schema.file_schema(),
        )
    }

    fn try_pushdown_projection(
        &self,
        projection: &ProjectionExprs,
    ) -> Result<Option<Arc<dyn FileSource>>> {
        let mut source = self.clone();
        source.projection = SplitProjection::new(
            self.table_schema.file_schema(),
            &self.projection.source.try_merge(projection)?,
        );
        Ok(Some(Arc::new(source)))
    }

    fn projection(&self) -> Option<&ProjectionExprs> {
        Some(&self.projection.source)
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        datafusion::physical_plan::apply_expression_roots(self.projection.source.iter(), f)
    }

    fn table_schema(&self) -> &TableSchema {
        &self.table_schema
    }

    fn with_batch_size(&self, batch_size: usize) -> Arc<dyn FileSource> {
        Arc::new(Self {
            batch_rows: batch_size.max(1),
            ..self.clone()
        })
    }

    fn metrics(&self) -> &ExecutionPlanMetricsSet {
        &self.metrics
    }

    fn file_type(&self) -> &str {
        EXT
    }
}

struct MiniblockOpener {
    store: Arc<dyn ObjectStore>,
    /// The table's columns, which every file must have.
    schema: SchemaRef,
    /// The columns read.
    columns: Vec<usize>,
    batch_rows: u64,
}

impl FileOpener for MiniblockOpener {
    fn open(&self, file: PartitionedFile) -> Result<FileOpenFuture> {
        let (store, schema, step) = (
            Arc::clone(&self.store),
            Arc::clone(&self.schema),
            self.batch_rows,
        );
        let columns = self.columns.clone();
        let path = file.object_meta.location;
        Ok(Box::pin(async move {
            let reader = ObjectStoreReader::open(store, path.clone())
                .await
                .map_err(|e| external(e).context(path.to_string()))?;
            if reader.reader().schema().fields() != schema.fields() {
                return plan_err!("{path}: its columns are not those of the table");
            }
            let rows = reader.reader().num_rows();
            let batches = futures::stream::try_unfold((reader, 0u64), move |(mut reader, at)| {
                let columns = columns.clone();
                let path = path.clone();
                async move {
                    if at >= rows {
                        return Ok(None);
                    }
                    let end = rows.min(at.saturating_add(step));
                    let batch = reader
                        .read_batch(&columns, at..end)
                        .await
                        .map_err(|e| external(e).context(path.to_string()))?;
                    Ok(Some((batch, (reader, end))))
                }
            });
            Ok(batches.boxed())
        }))
    }
}

/// Writes the files of a `COPY ... TO`: one column file per file the demultiplexer names.
struct MiniblockSink {
    config: FileSinkConfig,
}

impl fmt::Debug for MiniblockSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MiniblockSink")
            .field("url", &self.config.original_url)
            .finish()
    }
}

impl DisplayAs for MiniblockSink {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MiniblockSink(url={})", self.config.original_url)
    }
}

#[async_trait]
impl FileSink for MiniblockSink {
    fn config(&self) -> &FileSinkConfig {
        &self.config
    }

    async fn spawn_writer_tasks_and_join(
        &self,
        _context: &Arc<TaskContext>,
        demux_task: SpawnedTask<Result<()>>,
        mut file_stream_rx: DemuxedStreamReceiver,
        object_store: Arc<dyn ObjectStore>,
    ) -> Result<u64> {
        let schema = get_writer_schema(&self.config);
        let mut tasks: JoinSet<Result<u64>> = JoinSet::new();
        while let Some((path, mut rx)) = file_stream_rx.recv().await {
            // A file is never replaced: a COPY naming an existing one fails.
            if object_store.head(&path).await.is_ok() {
                return plan_err!(
                    "{path} already exists; remove it first, COPY does not replace files"
                );
            }
            let buffer = SharedBuffer::new(FLUSH_BYTES);
            let mut writer = FileWriter::try_new(buffer.clone(), &schema, WriteOptions::default())
                .map_err(|e| external(e).context(path.to_string()))?;
            let mut object = ObjectWriterBuilder::new(
                FileCompressionType::UNCOMPRESSED,
                &path,
                Arc::clone(&object_store),
            )
            .build()?;
            tasks.spawn(async move {
                let mut rows = 0u64;
                while let Some(batch) = rx.recv().await {
                    rows += batch.num_rows() as u64;
                    writer
                        .write_batch(&batch)
                        .map_err(|e| external(e).context(path.to_string()))?;
                    let pending = std::mem::take(&mut *buffer.buffer.lock().await);
                    if !pending.is_empty() {
                        object.write_all(&pending).await?;
                    }
                }
                writer
                    .finish()
                    .map_err(|e| external(e).context(path.to_string()))?;
                let rest = std::mem::take(&mut *buffer.buffer.lock().await);
                object.write_all(&rest).await?;
                object.shutdown().await?;
                Ok(rows)
            });
        }
        let mut rows = 0;
        while let Some(result) = tasks.join_next().await {
            match result {
                Ok(written) => rows += written?,
                Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                Err(e) => return Err(DataFusionError::External(Box::new(e))),
            }
        }
        demux_task
            .join_unwind()
            .await
            .map_err(|e| DataFusionError::ExecutionJoin(Box::new(e)))??;
        Ok(rows)
    }
}

#[async_trait]
impl DataSink for MiniblockSink {
    fn schema(&self) -> &SchemaRef {
        self.config.output_schema()
    }

    async fn write_all(
        &self,
        data: SendableRecordBatchStream,
        context: &Arc<TaskContext>,
    ) -> Result<u64> {
        FileSink::write_all(self, data, context).await
    }
}
