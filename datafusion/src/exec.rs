//! [`MiniblockScanExec`]: the leaf of a query plan that reads column files.

use std::collections::VecDeque;
use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::stats::Precision;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{internal_err, plan_err, Result, Statistics};
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
use miniblock::file::{Fetched, FileReader, ObjectStoreReader};
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
/// Metrics: `requests` and `bytes_fetched`, the ranged reads of pages and chunks (the
/// footers are read when the table is opened, or once per file by a plan sent
/// elsewhere).
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
        let units: Vec<&Unit> = match partition {
            Some(p) => self.partitions.get(p).into_iter().flatten().collect(),
            None => self.partitions.iter().flatten().collect(),
        };
        units
            .iter()
            .fold(0u64, |sum, u| sum.saturating_add(u.rows.end - u.rows.start))
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
            current: None,
            files: Arc::clone(&self.files),
            file_schema: Arc::clone(&self.file_schema),
            store,
            projection: self.projection.clone(),
            requests: MetricBuilder::new(&self.metrics).counter("requests", partition),
            bytes: MetricBuilder::new(&self.metrics).counter("bytes_fetched", partition),
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
        Ok(Arc::new(
            Statistics::new_unknown(&self.schema).with_num_rows(Precision::Exact(rows)),
        ))
    }
}

/// One partition's reading: the rows left, and a reader per file it opened.
struct PartitionScan {
    /// Cut into batches as they are read: a plan's ranges are not trusted to be small.
    units: VecDeque<Unit>,
    batch_rows: u64,
    /// The file being read: a partition reads its files one after the other.
    current: Option<Current>,
    files: Arc<[ScanFile]>,
    file_schema: SchemaRef,
    store: Arc<dyn ObjectStore>,
    projection: Vec<usize>,
    requests: Count,
    bytes: Count,
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

    /// Reads `rows` of `file`, first prefetching them and the unit's next rows, about
    /// [`PREFETCH_BYTES`] in all, unless the last prefetch holds them.
    async fn read(
        &mut self,
        file: usize,
        rows: Range<u64>,
        unit_end: u64,
    ) -> Result<datafusion::arrow::record_batch::RecordBatch> {
        let scan_file = &self.files[file];
        if self.current.as_ref().is_none_or(|c| c.file != file) {
            // Dropping the last file's reader drops what it prefetched.
            self.current = None;
            let reader = scan_file.open(&self.store, &self.file_schema).await?;
            let window_rows = window_rows(reader.reader(), &self.projection, self.batch_rows);
            self.current = Some(Current {
                file,
                reader: reader.clone(),
                window_rows,
                window: 0..0,
            });
        }
        let current = self.current.as_mut().expect("opened above");
        let reader = &mut current.reader;
        let before = reader.fetched();
        if rows.start < current.window.start || rows.end > current.window.end {
            let window = rows.start..unit_end.min(rows.start.saturating_add(current.window_rows));
            reader
                .prefetch(&self.projection, window.clone())
                .await
                .map_err(|e| external(e).context(scan_file.path.to_string()))?;
            current.window = window;
        }
        let batch = reader
            .read_batch(&self.projection, rows)
            .await
            .map_err(|e| external(e).context(scan_file.path.to_string()))?;
        let after = reader.fetched();
        self.requests
            .add((after.requests - before.requests) as usize);
        self.bytes.add((after.bytes - before.bytes) as usize);
        Ok(batch)
    }
}

/// The file a partition is reading.
struct Current {
    file: usize,
    reader: ObjectStoreReader,
    /// Rows of the projection that make about [`PREFETCH_BYTES`].
    window_rows: u64,
    /// The rows last prefetched.
    window: Range<u64>,
}

/// Bytes a partition fetches at once: enough that per-request costs vanish against the
/// transfer, small enough to hold per partition.
const PREFETCH_BYTES: u64 = 8 << 20;

/// Rows of `projection` that make about [`PREFETCH_BYTES`] in `reader`'s file, by its
/// columns' average bytes per row; whole batches, at least one.
fn window_rows(reader: &FileReader<Fetched>, projection: &[usize], batch_rows: u64) -> u64 {
    let bytes = projection
        .iter()
        .filter_map(|&c| reader.column_bytes(c))
        .fold(0u64, u64::saturating_add);
    let per_row = (bytes / reader.num_rows().max(1)).max(1);
    let batches = (PREFETCH_BYTES / per_row / batch_rows).max(1);
    batches.saturating_mul(batch_rows)
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use object_store::memory::InMemory;

    use super::*;

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
            current: None,
            files: Arc::from(vec![ScanFile::unopened(Path::from("x.mb"))]),
            file_schema: Arc::new(Schema::new(vec![Field::new("x", DataType::Int32, false)])),
            store: Arc::new(InMemory::new()),
            projection: vec![0],
            requests: Count::new(),
            bytes: Count::new(),
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
}
