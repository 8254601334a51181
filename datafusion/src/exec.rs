//! [`MiniblockScanExec`]: the leaf of a query plan that reads column files.

use std::collections::VecDeque;
use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use datafusion::arrow::array::{make_array, Array, ArrayData, ArrayRef};
use datafusion::arrow::buffer::{BooleanBuffer, Buffer, NullBuffer};
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::arrow::record_batch::{RecordBatch, RecordBatchOptions};
use datafusion::common::runtime::SpawnedTask;
use datafusion::common::stats::Precision;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{internal_err, plan_err, DataFusionError, Result, Statistics};
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::metrics::{
    Count, ExecutionPlanMetricsSet, MetricBuilder, MetricsSet,
};
use datafusion::physical_plan::statistics::StatisticsArgs;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
    ReplaceChildrenOptions,
};
use miniblock::file::{FetchCount, Fetched, FileReader, ObjectStoreReader};
use object_store::path::Path;
use object_store::ObjectStore;
use tokio::sync::OnceCell;

use crate::table::external;

/// A file a scan reads, and its reader once opened (shared by the partitions of one
/// process: its footer is fetched and parsed once).
#[derive(Debug, Clone)]
pub(crate) struct ScanFile {
    pub(crate) path: Path,
    pub(crate) reader: Arc<OnceCell<ObjectStoreReader>>,
}

impl ScanFile {
    pub(crate) fn unopened(path: Path) -> Self {
        Self {
            path,
            reader: Arc::new(OnceCell::new()),
        }
    }

    /// Its reader, opened now if it was not: the footer fetched and checked, and its
    /// columns checked against `schema`, the table's.
    pub(crate) async fn open(
        &self,
        store: &Arc<dyn ObjectStore>,
        schema: &SchemaRef,
    ) -> Result<&ObjectStoreReader> {
        self.reader
            .get_or_try_init(|| async {
                let reader = ObjectStoreReader::open(Arc::clone(store), self.path.clone())
                    .await
                    .map_err(|e| external(e).context(self.path.to_string()))?;
                if reader.reader().schema().fields() != schema.fields() {
                    return plan_err!(
                        "{}: its columns are not those of the table it was named in",
                        self.path
                    );
                }
                Ok(reader)
            })
            .await
    }
}

/// Rows `rows` of file `file` (an index into the scan's files).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unit {
    pub(crate) file: usize,
    pub(crate) rows: Range<u64>,
}

/// Reads rows of column files as record batches of the projected columns: partition
/// `p` reads its own runs of rows, planned by [`MiniblockTable`](crate::MiniblockTable)
/// (pages the filters rule out already left out). Each batch fetches, in one ranged
/// request, the chunks its rows overlap.
///
/// Rows are fetched in windows of the projected columns (about 8 MiB from a remote store,
/// less from local files, 1 MiB a column); once a scan reads
/// on past a window's first batch, the next window of its rows is fetched in the
/// background (a spawned task, by a second reader of the file) while this one decodes,
/// so that reading from the store and decoding overlap.
///
/// Rows are decoded a span of several batches at a time (about [`SPAN_BYTES`] of
/// decoded values) and handed out as slices of it: the decoders take the chunks of a
/// span side by side, more of them at once than one batch holds. A batch's fixed-width
/// columns are views of the span's buffers that count as their own bytes alone
/// ([`batch_of`]), so an operator that keeps batches and counts their memory by their
/// buffers (a sort under a memory limit) counts each span's bytes once, not once a batch.
///
/// Metrics: `requests` and `bytes_fetched`, the ranged reads of pages and chunks (the
/// footers are read when the table is opened, or once per file by a plan sent
/// elsewhere), read-aheads counted when their window is reached (one dropped with its
/// scan is not); `windows_fetched_ahead`, the windows whose read-ahead was started.
#[derive(Debug, Clone)]
pub struct MiniblockScanExec {
    store_url: ObjectStoreUrl,
    files: Arc<[ScanFile]>,
    file_schema: SchemaRef,
    projection: Vec<usize>,
    schema: SchemaRef,
    partitions: Vec<Vec<Unit>>,
    properties: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
}

impl MiniblockScanExec {
    pub(crate) fn try_new(
        store_url: ObjectStoreUrl,
        files: Arc<[ScanFile]>,
        file_schema: SchemaRef,
        projection: Vec<usize>,
        partitions: Vec<Vec<Unit>>,
    ) -> Result<Self> {
        let columns = file_schema.fields().len();
        if let Some(bad) = projection.iter().find(|&&c| c >= columns) {
            return plan_err!("column {bad} projected of a table of {columns} columns");
        }
        for unit in partitions.iter().flatten() {
            if unit.file >= files.len() || unit.rows.start > unit.rows.end {
                return plan_err!(
                    "rows {:?} of file {} in a scan of {} files",
                    unit.rows,
                    unit.file,
                    files.len()
                );
            }
        }
        if partitions.is_empty() {
            return plan_err!("a scan of no partitions");
        }
        let schema = Arc::new(file_schema.project(&projection)?);
        let properties = PlanProperties::new(
            EquivalenceProperties::new(Arc::clone(&schema)),
            Partitioning::UnknownPartitioning(partitions.len()),
            EmissionType::Incremental,
            Boundedness::Bounded,
        );
        Ok(Self {
            store_url,
            files,
            file_schema,
            projection,
            schema,
            partitions,
            properties: Arc::new(properties),
            metrics: ExecutionPlanMetricsSet::new(),
        })
    }

    pub(crate) fn store_url(&self) -> &ObjectStoreUrl {
        &self.store_url
    }

    pub(crate) fn files(&self) -> &[ScanFile] {
        &self.files
    }

    pub(crate) fn file_schema(&self) -> &SchemaRef {
        &self.file_schema
    }

    pub(crate) fn projection(&self) -> &[usize] {
        &self.projection
    }

    pub(crate) fn partitions(&self) -> &[Vec<Unit>] {
        &self.partitions
    }

    /// Rows partition `p` reads (all partitions' for `None`).
    pub fn rows(&self, partition: Option<usize>) -> u64 {
        self.units(partition)
            .iter()
            .fold(0u64, |sum, u| sum.saturating_add(u.rows.end - u.rows.start))
    }

    /// The runs of rows partition `partition` reads (all partitions' for `None`).
    fn units(&self, partition: Option<usize>) -> Vec<&Unit> {
        match partition {
            Some(p) => self.partitions.get(p).into_iter().flatten().collect(),
            None => self.partitions.iter().flatten().collect(),
        }
    }
}

impl DisplayAs for MiniblockScanExec {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let names: Vec<&str> = self
            .projection
            .iter()
            .map(|&c| self.file_schema.field(c).name().as_str())
            .collect();
        match t {
            DisplayFormatType::Default | DisplayFormatType::Verbose => write!(
                f,
                "MiniblockScanExec: files={}, projection=[{}], rows={}",
                self.files.len(),
                names.join(", "),
                self.rows(None)
            ),
            DisplayFormatType::TreeRender => {
                writeln!(f, "files={}", self.files.len())?;
                write!(f, "rows={}", self.rows(None))
            }
        }
    }
}

impl ExecutionPlan for MiniblockScanExec {
    fn name(&self) -> &'static str {
        "MiniblockScanExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn replace_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
        _options: ReplaceChildrenOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if !children.is_empty() {
            return internal_err!("MiniblockScanExec has no children");
        }
        Ok(self)
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if !children.is_empty() {
            return internal_err!("MiniblockScanExec has no children");
        }
        Ok(self)
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let Some(units) = self.partitions.get(partition) else {
            return internal_err!(
                "partition {partition} of a scan of {} partitions",
                self.partitions.len()
            );
        };
        let store = context.runtime_env().object_store(&self.store_url)?;
        let batch_rows = context.session_config().batch_size().max(1) as u64;
        let state = PartitionScan {
            units: units.iter().cloned().collect(),
            batch_rows,
            span_rows: span_rows(&self.file_schema, &self.projection, batch_rows),
            decoded: None,
            window_bytes: window_bytes(&self.store_url, self.projection.len()),
            current: None,
            files: Arc::clone(&self.files),
            file_schema: Arc::clone(&self.file_schema),
            store,
            projection: self.projection.clone(),
            requests: MetricBuilder::new(&self.metrics).counter("requests", partition),
            bytes: MetricBuilder::new(&self.metrics).counter("bytes_fetched", partition),
            fetched_ahead: MetricBuilder::new(&self.metrics)
                .counter("windows_fetched_ahead", partition),
        };
        let stream = futures::stream::try_unfold(state, |mut scan| async move {
            let Some((file, rows, unit_end)) = scan.next_batch() else {
                return Ok(None);
            };
            let batch = scan.read(file, rows, unit_end).await?;
            Ok(Some((batch, scan)))
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            Arc::clone(&self.schema),
            stream,
        )))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }

    fn statistics_from_inputs(
        &self,
        _input_stats: &[Arc<Statistics>],
        args: &StatisticsArgs,
    ) -> Result<Arc<Statistics>> {
        let rows = usize::try_from(self.rows(args.partition())).unwrap_or(usize::MAX);
        let units = self.units(args.partition());
        let mut statistics =
            Statistics::new_unknown(&self.schema).with_num_rows(Precision::Exact(rows));
        statistics.column_statistics = self
            .projection
            .iter()
            .map(|&c| {
                let data_type = self.file_schema.field(c).data_type();
                crate::stats::column_statistics(&self.files, &units, c, data_type)
            })
            .collect();
        Ok(Arc::new(statistics))
    }
}

/// One partition's reading: the rows left, and a reader per file it opened.
struct PartitionScan {
    /// Cut into batches as they are read: a plan's ranges are not trusted to be small.
    units: VecDeque<Unit>,
    batch_rows: u64,
    /// Rows decoded at once ([`span_rows`]).
    span_rows: u64,
    /// The last span decoded: its file, its rows and their batch.
    decoded: Option<(usize, Range<u64>, RecordBatch)>,
    /// Bytes a window fetches ([`window_bytes`]).
    window_bytes: u64,
    /// The file being read: a partition reads its files one after the other.
    current: Option<Current>,
    files: Arc<[ScanFile]>,
    file_schema: SchemaRef,
    store: Arc<dyn ObjectStore>,
    projection: Vec<usize>,
    requests: Count,
    bytes: Count,
    /// Windows whose fetching ahead was started.
    fetched_ahead: Count,
}

impl PartitionScan {
    /// The next batch's file and rows, and where its unit ends.
    fn next_batch(&mut self) -> Option<(usize, Range<u64>, u64)> {
        loop {
            let unit = self.units.front_mut()?;
            if unit.rows.is_empty() {
                self.units.pop_front();
                continue;
            }
            let end = unit
                .rows
                .end
                .min(unit.rows.start.saturating_add(self.batch_rows));
            let rows = unit.rows.start..end;
            unit.rows.start = end;
            return Some((unit.file, rows, unit.rows.end));
        }
    }

    /// Reads `rows` of `file`: a slice of the span last decoded when it holds them, else
    /// the span from `rows.start` on (up to `unit_end` and the end of the window it lies
    /// in) is decoded first. Rows past the last prefetched window are fetched with the
    /// rest of their window, about `window_bytes` (or taken from the read-ahead, when
    /// it holds them); then the window after it starts to be fetched in the background.
    async fn read(&mut self, file: usize, rows: Range<u64>, unit_end: u64) -> Result<RecordBatch> {
        if let Some((at, span, batch)) = &self.decoded {
            if *at == file && span.start <= rows.start && rows.end <= span.end {
                let offset = usize::try_from(rows.start - span.start).expect("within a batch");
                let len = usize::try_from(rows.end - rows.start).expect("within a batch");
                let batch = batch_of(batch, offset, len)?;
                // A second batch of a span: the scan reads on.
                if let Some(current) = self.current.as_mut() {
                    current.read_ahead(&self.projection, unit_end, &self.fetched_ahead);
                }
                return Ok(batch);
            }
        }
        self.decoded = None;
        let scan_file = &self.files[file];
        let in_file = |e: miniblock::Error| external(e).context(scan_file.path.to_string());
        if self.current.as_ref().is_none_or(|c| c.file != file) {
            // Dropping the last file's reader drops what it prefetched, and stops its
            // read-ahead.
            self.current = None;
            let reader = scan_file.open(&self.store, &self.file_schema).await?;
            let window_rows = window_rows(
                reader.reader(),
                &self.projection,
                self.batch_rows,
                self.window_bytes,
            );
            self.current = Some(Current {
                file,
                reader: reader.clone(),
                window_rows,
                window: 0..0,
                ahead: None,
            });
        }
        let current = self.current.as_mut().expect("opened above");
        let mut fetched = FetchCount::default();
        // Whether the scan has shown it reads on: a window read through after another,
        // or a second batch of one. A scan stopped after its first batch (a limit above a
        // filter) so fetches nothing it does not read.
        let mut reads_on = rows.start > current.window.start && rows.end <= current.window.end;
        if rows.start < current.window.start || rows.end > current.window.end {
            match current.ahead.take() {
                Some(ahead) if ahead.window.start == rows.start && rows.end <= ahead.window.end => {
                    let (reader, count) = ahead
                        .task
                        .join_unwind()
                        .await
                        .map_err(|e| DataFusionError::External(Box::new(e)))?
                        .map_err(in_file)?;
                    current.reader = reader;
                    current.window = ahead.window;
                    fetched = count;
                    reads_on = true;
                }
                _ => {
                    let window =
                        rows.start..unit_end.min(rows.start.saturating_add(current.window_rows));
                    fetched = prefetch(&mut current.reader, &self.projection, window.clone())
                        .await
                        .map_err(in_file)?;
                    current.window = window;
                }
            }
        }
        if reads_on {
            current.read_ahead(&self.projection, unit_end, &self.fetched_ahead);
        }
        // The span stays within the window (whose fetching was counted above) and its unit.
        let span = rows.start
            ..unit_end
                .min(current.window.end)
                .min(rows.start.saturating_add(self.span_rows))
                .max(rows.end);
        let reader = &mut current.reader;
        let before = reader.fetched();
        let decoded = reader
            .read_batch(&self.projection, span.clone())
            .await
            .map_err(in_file)?;
        let len = usize::try_from(rows.end - rows.start).expect("a batch's rows");
        let batch = batch_of(&decoded, 0, len)?;
        self.decoded = Some((file, span, decoded));
        let after = reader.fetched();
        fetched.requests += after.requests - before.requests;
        fetched.bytes += after.bytes - before.bytes;
        self.requests.add(fetched.requests as usize);
        self.bytes.add(fetched.bytes as usize);
        Ok(batch)
    }
}

/// Rows `offset..offset + len` of `span`, without copying. Its fixed-width columns
/// (primitive or fixed-size binary, without children) are rebuilt on views of the span's buffers, each view an
/// allocation of its own bytes to Arrow's memory accounting (`Buffer::from(Bytes)`, the
/// span's buffer its owner); a plain slice would report the whole span's buffer for
/// every batch. Other columns are plain slices.
fn batch_of(span: &RecordBatch, offset: usize, len: usize) -> Result<RecordBatch> {
    let sliced = span.slice(offset, len);
    let columns = sliced
        .columns()
        .iter()
        .map(|column| own_buffers(column.as_ref()))
        .collect::<Result<Vec<_>>>()?;
    Ok(RecordBatch::try_new_with_options(
        sliced.schema(),
        columns,
        &RecordBatchOptions::new().with_row_count(Some(len)),
    )?)
}

/// `array` (a slice of a span's column) on buffers of its own rows' bytes alone, when it
/// is fixed-width (primitive or fixed-size binary) without children; else `array`
/// itself.
fn own_buffers(array: &dyn Array) -> Result<ArrayRef> {
    let data = array.to_data();
    let width = match data.data_type() {
        DataType::FixedSizeBinary(width) => usize::try_from(*width).ok(),
        other => other.primitive_width(),
    };
    let (Some(width), [values], []) = (width, data.buffers(), data.child_data()) else {
        return Ok(make_array(data));
    };
    let (offset, len) = (data.offset(), data.len());
    let view = |buffer: &Buffer, range: Range<usize>| {
        Buffer::from(bytes::Bytes::from_owner(Owner(
            buffer.slice_with_length(range.start, range.end - range.start),
        )))
    };
    let values = view(values, offset * width..(offset + len) * width);
    let nulls = data.nulls().map(|nulls| {
        let bits = nulls.inner();
        let first = bits.offset() / 8;
        let bytes = view(bits.inner(), first..(bits.offset() + len).div_ceil(8));
        NullBuffer::new(BooleanBuffer::new(bytes, bits.offset() % 8, len))
    });
    let rebuilt = ArrayData::builder(data.data_type().clone())
        .len(len)
        .add_buffer(values)
        .nulls(nulls)
        .build()?;
    Ok(make_array(rebuilt))
}

/// A slice of a span's buffer, as the owner of a view of its bytes.
struct Owner(Buffer);

impl AsRef<[u8]> for Owner {
    fn as_ref(&self) -> &[u8] {
        self.0.as_slice()
    }
}

/// Decoded bytes a partition's span of rows holds, at most (one batch at least): enough
/// chunks of each column for the decoders to take many side by side, few enough that
/// the span is still in the core's cache when its last batch is consumed.
const SPAN_BYTES: u64 = 256 << 10;

/// Rows of `projection` decoded at once: whole batches of `batch_rows` making at most
/// [`SPAN_BYTES`] of values, at least one batch.
fn span_rows(schema: &SchemaRef, projection: &[usize], batch_rows: u64) -> u64 {
    let row_bytes: u64 = projection
        .iter()
        .map(|&c| {
            schema
                .fields()
                .get(c)
                .and_then(|f| f.data_type().primitive_width())
                .map_or(8, |w| w as u64)
        })
        .sum();
    let batches = SPAN_BYTES / row_bytes.max(1).saturating_mul(batch_rows).max(1);
    batches.max(1).saturating_mul(batch_rows)
}

/// `reader.prefetch(projection, rows)`, and what it fetched.
async fn prefetch(
    reader: &mut ObjectStoreReader,
    projection: &[usize],
    rows: Range<u64>,
) -> miniblock::Result<FetchCount> {
    let before = reader.fetched();
    reader.prefetch(projection, rows).await?;
    let after = reader.fetched();
    Ok(FetchCount {
        requests: after.requests - before.requests,
        bytes: after.bytes - before.bytes,
    })
}

/// The window after the current one, being fetched by a second reader of the file while
/// the current window's rows decode.
struct Ahead {
    window: Range<u64>,
    task: SpawnedTask<miniblock::Result<(ObjectStoreReader, FetchCount)>>,
}

/// The file a partition is reading.
struct Current {
    file: usize,
    reader: ObjectStoreReader,
    /// Rows of the projection that make about the partition's `window_bytes`.
    window_rows: u64,
    /// The rows last prefetched.
    window: Range<u64>,
    ahead: Option<Ahead>,
}

impl Current {
    /// Starts fetching the window after the current one (within its unit, which ends at
    /// `unit_end`) in the background, unless that is under way or there is none.
    fn read_ahead(&mut self, projection: &[usize], unit_end: u64, started: &Count) {
        let next = self.window.end..unit_end.min(self.window.end.saturating_add(self.window_rows));
        if self.ahead.is_some() || next.is_empty() {
            return;
        }
        // A clone shares the parsed footer and the decoders that `prefetch` built for the
        // current window, so it does not ask for their page buffers again.
        let mut reader = self.reader.clone();
        let projection = projection.to_vec();
        let window = next.clone();
        started.add(1);
        self.ahead = Some(Ahead {
            window: next,
            task: SpawnedTask::spawn(async move {
                let count = prefetch(&mut reader, &projection, window).await?;
                Ok((reader, count))
            }),
        });
    }
}

/// Bytes a partition fetches at once: enough that per-request costs vanish against the
/// transfer, small enough to hold per partition (twice, with the read-ahead). Unit tests
/// take windows small enough for a small file to need many.
const PREFETCH_BYTES: u64 = if cfg!(test) { 64 << 10 } else { 8 << 20 };

/// Bytes per projected column of a window read from local files (at most
/// [`PREFETCH_BYTES`] in all). A local read is a copy out of the page cache, whose
/// per-request cost is small, so the window is sized for the CPU's caches instead: a
/// window is read while the one before it decodes, and one much larger than a core's
/// cache is evicted to memory between its read and its decoding. Each column keeps about
/// this much of a window, as one request, so that a wide projection does not cut its
/// reads into many small ones.
const LOCAL_COLUMN_BYTES: u64 = if cfg!(test) { 16 << 10 } else { 1 << 20 };

/// How many bytes a window of `columns` projected columns fetches from the store at
/// `store_url`: [`PREFETCH_BYTES`] from a remote store, less from local files.
fn window_bytes(store_url: &ObjectStoreUrl, columns: usize) -> u64 {
    if store_url.as_str().starts_with("file:") {
        LOCAL_COLUMN_BYTES
            .saturating_mul(columns.max(1) as u64)
            .min(PREFETCH_BYTES)
    } else {
        PREFETCH_BYTES
    }
}

/// Rows of `projection` that make about `window_bytes` in `reader`'s file, by its
/// columns' average bytes per row; whole batches, at least one.
fn window_rows(
    reader: &FileReader<Fetched>,
    projection: &[usize],
    batch_rows: u64,
    window_bytes: u64,
) -> u64 {
    let bytes = projection
        .iter()
        .filter_map(|&c| reader.column_bytes(c))
        .fold(0u64, u64::saturating_add);
    let per_row = (bytes / reader.num_rows().max(1)).max(1);
    let batches = (window_bytes / per_row / batch_rows).max(1);
    batches.saturating_mul(batch_rows)
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use object_store::memory::InMemory;

    use super::*;

    #[test]
    fn spans_are_whole_batches_of_a_quarter_mebibyte_at_least_one() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("f", DataType::Float32, true),
            Field::new("d", DataType::Float64, true),
            Field::new("s", DataType::Utf8, true),
        ]));
        assert_eq!(span_rows(&schema, &[0], 8192), 65536);
        assert_eq!(span_rows(&schema, &[1], 8192), 32768);
        assert_eq!(span_rows(&schema, &[0, 1], 8192), 16384);
        assert_eq!(span_rows(&schema, &[0], 100), 655 * 100);
        // Wider than the span's bytes, or a column of no fixed width: one batch.
        assert_eq!(span_rows(&schema, &[0, 1, 2], 1 << 20), 1 << 20);
        assert_eq!(span_rows(&schema, &[2], 32768), 32768);
        assert_eq!(span_rows(&schema, &[], 8192), 8192 * (SPAN_BYTES / 8192));
        assert_eq!(span_rows(&schema, &[0], u64::MAX), u64::MAX);
    }

    #[test]
    fn hostile_ranges_are_cut_as_read_and_summed_without_overflow() {
        let huge = Unit {
            file: 0,
            rows: 5..u64::MAX,
        };
        let mut scan = PartitionScan {
            units: VecDeque::from([
                Unit {
                    file: 0,
                    rows: 3..3,
                },
                huge.clone(),
            ]),
            batch_rows: 8192,
            span_rows: 8192,
            decoded: None,
            window_bytes: PREFETCH_BYTES,
            current: None,
            files: Arc::from(vec![ScanFile::unopened(Path::from("x.mb"))]),
            file_schema: Arc::new(Schema::new(vec![Field::new("x", DataType::Int32, false)])),
            store: Arc::new(InMemory::new()),
            projection: vec![0],
            requests: Count::new(),
            bytes: Count::new(),
            fetched_ahead: Count::new(),
        };
        assert_eq!(scan.next_batch(), Some((0, 5..8197, u64::MAX)));
        assert_eq!(scan.next_batch(), Some((0, 8197..16389, u64::MAX)));
        let exec = MiniblockScanExec::try_new(
            ObjectStoreUrl::local_filesystem(),
            Arc::clone(&scan.files),
            Arc::clone(&scan.file_schema),
            vec![0],
            vec![vec![huge.clone(), huge]],
        )
        .unwrap();
        assert_eq!(exec.rows(None), u64::MAX);
    }

    #[test]
    fn local_windows_are_smaller_for_a_narrow_projection_and_capped() {
        let local = ObjectStoreUrl::local_filesystem();
        let remote = ObjectStoreUrl::parse("s3://bucket").unwrap();
        assert_eq!(window_bytes(&local, 1), LOCAL_COLUMN_BYTES);
        assert!(window_bytes(&local, 1) < PREFETCH_BYTES);
        assert_eq!(window_bytes(&local, 2), 2 * LOCAL_COLUMN_BYTES);
        assert_eq!(window_bytes(&local, 10_000), PREFETCH_BYTES);
        assert_eq!(window_bytes(&local, usize::MAX), PREFETCH_BYTES);
        assert_eq!(window_bytes(&remote, 1), PREFETCH_BYTES);
    }

    /// The value of row `i` of [`dictionary_file`]'s column: 500 distinct decimals.
    fn value(i: usize) -> f64 {
        ((i * 7919) % 500) as f64 / 100.0
    }

    /// A file of `rows` rows of one `f64` column `x`, dictionary-coded in pages of 8,192
    /// values: each page's dictionary is a page buffer of 4,000 bytes.
    fn dictionary_file(dir: &std::path::Path, rows: usize) -> std::path::PathBuf {
        use datafusion::arrow::array::{ArrayRef, Float64Array, RecordBatch};
        use miniblock::file::{FileWriter, WriteOptions};
        let x: ArrayRef = Arc::new(Float64Array::from_iter_values((0..rows).map(value)));
        let batch = RecordBatch::try_from_iter([("x", x)]).unwrap();
        let path = dir.join("x.mb");
        let options = WriteOptions {
            page_values: Some(8192),
            ..WriteOptions::default().with_strategy(miniblock::Encoding::Dict)
        };
        let mut writer = FileWriter::try_new(
            std::fs::File::create(&path).unwrap(),
            batch.schema().as_ref(),
            options,
        )
        .unwrap();
        writer.write_batch(&batch).unwrap();
        writer.finish().unwrap();
        path
    }

    /// The scan in `plan`, and its metric `name` summed over partitions.
    fn scan_metric(plan: &Arc<dyn ExecutionPlan>, name: &str) -> usize {
        fn find(plan: &Arc<dyn ExecutionPlan>) -> Option<&MiniblockScanExec> {
            plan.downcast_ref::<MiniblockScanExec>()
                .or_else(|| plan.children().into_iter().find_map(find))
        }
        let scan = find(plan).expect("a scan in the plan");
        scan.metrics()
            .unwrap()
            .sum_by_name(name)
            .map_or(0, |v| v.as_usize())
    }

    /// A scan's batches, of floats or fixed-size binaries, count their own bytes alone by
    /// DataFusion's own count (which a sort under a memory limit reserves per batch it
    /// keeps), where plain slices of a span would count the span's buffers for each;
    /// values and nulls come back unchanged.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn batches_count_their_own_bytes() {
        use datafusion::arrow::array::{FixedSizeBinaryArray, Float32Array, RecordBatch};
        use datafusion::common::utils::memory::get_record_batch_memory_size;
        use datafusion::prelude::{SessionConfig, SessionContext};
        use miniblock::file::{FileWriter, WriteOptions};
        let rows: u32 = 1 << 19;
        // Runs of values (so that the small windows of unit tests hold spans of more than
        // one batch), NaN and -0.0 among them, and a few nulls.
        let f: Float32Array = (0..rows)
            .map(|i| {
                let x = [1.5, -0.0, f32::from_bits(0x7fc0_1234), 3e-42][(i / 5000 % 4) as usize];
                (i % 100_000 >= 10).then_some(x + (i / 20_000) as f32)
            })
            .collect();
        let dir = tempfile::tempdir().unwrap();
        let config = SessionConfig::new()
            .with_target_partitions(1)
            .with_batch_size(8192);
        let ctx = SessionContext::new_with_config(config);
        // Writes `array` as the one column of table `name`, and scans it.
        let scanned = async |name: &str, array: ArrayRef| {
            let batch = RecordBatch::try_from_iter([("c", array)]).unwrap();
            let path = dir.path().join(format!("{name}.mb"));
            let mut writer = FileWriter::try_new(
                std::fs::File::create(&path).unwrap(),
                batch.schema().as_ref(),
                WriteOptions::default(),
            )
            .unwrap();
            writer.write_batch(&batch).unwrap();
            writer.finish().unwrap();
            let table = crate::MiniblockTable::open(&ctx.state(), path.to_str().unwrap())
                .await
                .unwrap();
            ctx.register_table(name, Arc::new(table)).unwrap();
            planned(&ctx, &format!("SELECT c FROM {name}")).await.1
        };
        let out = scanned("f", Arc::new(f.clone())).await;
        let bits = |a: &Float32Array| a.iter().map(|v| v.map(f32::to_bits)).collect::<Vec<_>>();
        let mut got = Vec::new();
        let mut counted = 0;
        for b in &out {
            let (n, own) = (b.num_rows(), get_record_batch_memory_size(b));
            assert!(own <= n * 4 + n / 8 + 256, "{n} rows count {own} bytes");
            counted += own;
            got.extend(bits(b.column(0).as_any().downcast_ref().unwrap()));
        }
        let raw = rows as usize * 4;
        assert!(counted <= raw + raw / 8 + 4096, "{counted} bytes for {raw}");
        assert_eq!(got, bits(&f));

        // Fixed-size binaries, 12 bytes a value.
        let b = FixedSizeBinaryArray::try_from_sparse_iter_with_size(
            (0..rows / 4).map(|i| (i % 1000 != 0).then_some([(i / 9000) as u8; 12])),
            12,
        )
        .unwrap();
        let out = scanned("b", Arc::new(b.clone())).await;
        let mut got: Vec<Option<Vec<u8>>> = Vec::new();
        for batch in &out {
            let (n, own) = (batch.num_rows(), get_record_batch_memory_size(batch));
            assert!(own <= n * 12 + n / 8 + 256, "{n} rows count {own} bytes");
            let column = batch
                .column(0)
                .as_any()
                .downcast_ref::<FixedSizeBinaryArray>();
            got.extend(column.unwrap().iter().map(|v| v.map(<[u8]>::to_vec)));
        }
        assert_eq!(
            got,
            b.iter().map(|v| v.map(<[u8]>::to_vec)).collect::<Vec<_>>()
        );
    }

    async fn planned(
        ctx: &datafusion::prelude::SessionContext,
        sql: &str,
    ) -> (
        Arc<dyn ExecutionPlan>,
        Vec<datafusion::arrow::array::RecordBatch>,
    ) {
        let plan = ctx
            .sql(sql)
            .await
            .unwrap()
            .create_physical_plan()
            .await
            .unwrap();
        let out = datafusion::physical_plan::collect(Arc::clone(&plan), ctx.task_ctx())
            .await
            .unwrap();
        (plan, out)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn long_scans_fetch_each_window_ahead_once() {
        use datafusion::arrow::array::{Float64Array, Int64Array};
        use datafusion::prelude::{SessionConfig, SessionContext};
        let dir = tempfile::tempdir().unwrap();
        let rows = 800_000;
        let path = dictionary_file(dir.path(), rows);
        let file = FileReader::open(std::fs::File::open(&path).unwrap()).unwrap();
        let own = file.column_bytes(0).unwrap();
        let buffers = file.footer().columns[0]
            .pages
            .iter()
            .map(|p| p.buffer_sizes.iter().sum::<u64>())
            .max()
            .unwrap();
        assert!(buffers >= 4000, "{buffers}: the test needs page buffers");
        // Many windows, most of them ending inside a page.
        assert!(own > 10 * PREFETCH_BYTES, "{own} bytes");
        let expected: (f64, f64, f64) = (0..rows)
            .map(value)
            .fold((f64::MAX, f64::MIN, 0.0), |(lo, hi, sum), x| {
                (lo.min(x), hi.max(x), sum + x)
            });
        for partitions in [1, 2] {
            let ctx = SessionContext::new_with_config(
                SessionConfig::new().with_target_partitions(partitions),
            );
            let table = crate::MiniblockTable::open(&ctx.state(), path.to_str().unwrap())
                .await
                .unwrap();
            ctx.register_table("t", Arc::new(table)).unwrap();
            let (plan, out) = planned(&ctx, "SELECT count(*), min(x), max(x), sum(x) FROM t").await;
            let column = |c: usize| out[0].column(c);
            let count = column(0).as_any().downcast_ref::<Int64Array>().unwrap();
            let float = |c: usize| {
                column(c)
                    .as_any()
                    .downcast_ref::<Float64Array>()
                    .unwrap()
                    .value(0)
            };
            assert_eq!(count.value(0), i64::try_from(rows).unwrap());
            assert_eq!(float(1).to_bits(), expected.0.to_bits());
            assert_eq!(float(2).to_bits(), expected.1.to_bits());
            assert!((float(3) - expected.2).abs() <= 1e-9 * expected.2);
            // Every window but each partition's first fetched ahead.
            let ahead = scan_metric(&plan, "windows_fetched_ahead") as u64;
            let windows = scan_metric(&plan, "requests") as u64;
            assert!(
                ahead >= 10 && ahead + partitions as u64 == windows,
                "{ahead} of {windows} windows fetched ahead at {partitions}p"
            );
            // Each byte of the column fetched, and again at most the page buffers of the
            // page a window starts in: built by the window before it, they lie between
            // its first chunks and the next page, a gap the request bridges rather than
            // make two.
            let fetched = scan_metric(&plan, "bytes_fetched") as u64;
            assert!(
                (own..=own + windows * buffers).contains(&fetched),
                "{fetched} bytes fetched of {own} at {partitions}p"
            );
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_scan_stopped_after_its_first_batch_fetches_nothing_ahead() {
        use datafusion::arrow::array::RecordBatch;
        use datafusion::prelude::{SessionConfig, SessionContext};
        let dir = tempfile::tempdir().unwrap();
        let path = dictionary_file(dir.path(), 800_000);
        let ctx = SessionContext::new_with_config(SessionConfig::new().with_target_partitions(1));
        let table = crate::MiniblockTable::open(&ctx.state(), path.to_str().unwrap())
            .await
            .unwrap();
        ctx.register_table("t", Arc::new(table)).unwrap();
        // A limit above a filter: the scan does not know where it stops.
        let (plan, out) = planned(&ctx, "SELECT x FROM t WHERE x > 1 LIMIT 3").await;
        assert_eq!(out.iter().map(RecordBatch::num_rows).sum::<usize>(), 3);
        assert_eq!(scan_metric(&plan, "windows_fetched_ahead"), 0);
        assert_eq!(scan_metric(&plan, "requests"), 1);
    }
}
