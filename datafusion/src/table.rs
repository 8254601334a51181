//! [`MiniblockTable`]: one column file, a directory of them or a glob, as a DataFusion
//! table.

use std::ops::Range;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::stats::Precision;
use datafusion::common::{plan_err, DFSchema, DataFusionError, Result, Statistics};
use datafusion::datasource::listing::ListingTableUrl;
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::logical_expr::utils::conjunction;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown, TableType};
use datafusion::physical_optimizer::pruning::PruningPredicateBuilder;
use datafusion::physical_plan::ExecutionPlan;
use futures::TryStreamExt;
use miniblock::file::ObjectStoreReader;
use object_store::path::Path;
use tokio::sync::OnceCell;

use crate::exec::{MiniblockScanExec, ScanFile, Unit};
use crate::{prune, FILE_EXTENSION};

/// Column files with one schema, as a table: what `FROM 'weather.mb'` or
/// `FROM 'dir/*.mb'` reads in SQL (see [`enable_url_table`](crate::enable_url_table)).
///
/// Opening reads each file's footer. A scan then reads only the projected columns, only
/// the pages whose statistics may match the query's filters (the filters stay applied
/// above the scan: pruning is inexact), stops early under a `LIMIT` without filters, and
/// spreads the rows over `target_partitions` partitions, cutting across files and
/// within them.
#[derive(Debug)]
pub struct MiniblockTable {
    store_url: ObjectStoreUrl,
    files: Arc<[ScanFile]>,
    schema: SchemaRef,
}

impl MiniblockTable {
    /// Opens the column files at `url`: one file (any name), a directory (its `.mb`
    /// files, sorted by path) or a glob (`data/*.mb`), local or in an object store
    /// registered in the runtime environment (`s3://`, `memory://`, ...). Every file's footer is
    /// read and checked; the files must have the same columns.
    pub async fn open(state: &dyn Session, url: &str) -> Result<Self> {
        let table_url = ListingTableUrl::parse(url)?;
        let store_url = table_url.object_store();
        let store = state.runtime_env().object_store(&store_url)?;
        let extension = if table_url.is_collection() {
            FILE_EXTENSION
        } else {
            ""
        };
        let mut found: Vec<Path> = table_url
            .list_all_files(state, store.as_ref(), extension)
            .await?
            .map_ok(|meta| meta.location)
            .try_collect()
            .await?;
        found.sort();
        if found.is_empty() {
            return plan_err!("no column files at {url}");
        }
        let readers = futures::future::try_join_all(found.iter().map(|path| {
            let store = Arc::clone(&store);
            let path = path.clone();
            async move {
                ObjectStoreReader::open(store, path.clone())
                    .await
                    .map_err(|e| external(e).context(path.to_string()))
            }
        }))
        .await?;
        let schema = Arc::clone(readers[0].reader().schema());
        for (path, reader) in found.iter().zip(&readers).skip(1) {
            if reader.reader().schema().fields() != schema.fields() {
                return plan_err!(
                    "{path}: its columns ({}) are not those of {} ({})",
                    columns_of(reader.reader().schema()),
                    found[0],
                    columns_of(&schema)
                );
            }
        }
        let files = found
            .into_iter()
            .zip(readers)
            .map(|(path, reader)| ScanFile {
                path,
                reader: Arc::new(OnceCell::new_with(Some(reader))),
            })
            .collect();
        Ok(Self {
            store_url,
            files,
            schema,
        })
    }

    /// Checks every file whole, as `miniblock verify` does: every checksum, every page
    /// decoded, and every page's statistics against its values. A query trusts the
    /// footers' statistics (for `count(*)`, `min`, `max` and to skip pages a filter rules
    /// out), and their checksum proves only that they are what the writer wrote: this is
    /// the check that they are true. It reads all of every file, a page at a time.
    pub async fn verify(&self, state: &dyn Session) -> Result<()> {
        let store = state.runtime_env().object_store(&self.store_url)?;
        for file in self.files.iter() {
            let mut reader = file.open(&store, &self.schema).await?.clone();
            reader
                .verify()
                .await
                .map_err(|e| external(e).context(file.path.to_string()))?;
        }
        Ok(())
    }

    /// The files, in the order scans read them.
    pub fn paths(&self) -> impl Iterator<Item = &Path> {
        self.files.iter().map(|f| &f.path)
    }

    /// Rows in all the files (of those opened so far: a table that came through
    /// [`MiniblockCodec`](crate::MiniblockCodec) opens its files on its first scan).
    pub fn num_rows(&self) -> u64 {
        self.files
            .iter()
            .filter_map(|f| f.reader.get())
            .map(|r| r.reader().num_rows())
            .sum()
    }
}

#[async_trait]
impl TableProvider for MiniblockTable {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    /// Every file whole: exact row counts, and each column's min, max and null count as a
    /// scan of all rows reports them (exact where no value is NaN); `None` before the
    /// files are open (a table that came through [`MiniblockCodec`](crate::MiniblockCodec)).
    fn statistics(&self) -> Option<Statistics> {
        let units = self
            .files
            .iter()
            .enumerate()
            .map(|(file, f)| {
                let rows = f.reader.get()?.reader().num_rows();
                Some(Unit {
                    file,
                    rows: 0..rows,
                })
            })
            .collect::<Option<Vec<Unit>>>()?;
        let rows = units
            .iter()
            .fold(0u64, |sum, u| sum.saturating_add(u.rows.end));
        let units: Vec<&Unit> = units.iter().collect();
        let mut statistics = Statistics::new_unknown(&self.schema).with_num_rows(Precision::Exact(
            usize::try_from(rows).unwrap_or(usize::MAX),
        ));
        statistics.column_statistics = self
            .schema
            .fields()
            .iter()
            .enumerate()
            .map(|(c, field)| {
                crate::stats::column_statistics(&self.files, &units, c, field.data_type())
            })
            .collect();
        Some(statistics)
    }

    /// Every filter prunes pages where it can; none is exact.
    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> Result<Vec<TableProviderFilterPushDown>> {
        Ok(vec![TableProviderFilterPushDown::Inexact; filters.len()])
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let projection = projection
            .cloned()
            .unwrap_or_else(|| (0..self.schema.fields().len()).collect());
        // A predicate the statistics cannot judge (a function call, say) prunes nothing.
        let predicate = match conjunction(filters.iter().cloned()) {
            Some(expr) => {
                let df_schema = DFSchema::try_from(self.schema.as_ref().clone())?;
                let expr = state.create_physical_expr(expr, &df_schema)?;
                PruningPredicateBuilder::new()
                    .with_file_schema(Arc::clone(&self.schema))
                    .build(expr)
            }
            None => None,
        };
        let store = state.runtime_env().object_store(&self.store_url)?;
        let mut ranges: Vec<(usize, Range<u64>)> = Vec::new();
        for (index, file) in self.files.iter().enumerate() {
            let reader = file.open(&store, &self.schema).await?.reader();
            match &predicate {
                Some(p) => ranges.extend(
                    prune::matching_rows(reader, p)?
                        .into_iter()
                        .map(|r| (index, r)),
                ),
                None if reader.num_rows() > 0 => ranges.push((index, 0..reader.num_rows())),
                None => {}
            }
        }
        // With filters, the rows a limit keeps are only known above the scan.
        if let (Some(limit), true) = (limit, filters.is_empty()) {
            ranges = first_rows(ranges, limit as u64);
        }
        let partitions = split(&ranges, state.config().target_partitions());
        Ok(Arc::new(MiniblockScanExec::try_new(
            self.store_url.clone(),
            Arc::clone(&self.files),
            Arc::clone(&self.schema),
            projection,
            partitions,
        )?))
    }
}

/// The first `limit` rows of `ranges`.
fn first_rows(ranges: Vec<(usize, Range<u64>)>, limit: u64) -> Vec<(usize, Range<u64>)> {
    let mut left = limit;
    let mut out = Vec::new();
    for (file, rows) in ranges {
        if left == 0 {
            break;
        }
        let take = (rows.end - rows.start).min(left);
        left -= take;
        out.push((file, rows.start..rows.start + take));
    }
    out
}

/// `ranges` cut into at most `partitions` runs of about equal rows, in order.
pub(crate) fn split(ranges: &[(usize, Range<u64>)], partitions: usize) -> Vec<Vec<Unit>> {
    let total: u64 = ranges.iter().map(|(_, r)| r.end - r.start).sum();
    let partitions = (partitions.max(1) as u64).min(total.max(1));
    let share = total.div_ceil(partitions).max(1);
    let mut out: Vec<Vec<Unit>> = vec![Vec::new()];
    let mut room = share;
    for (file, rows) in ranges {
        let mut start = rows.start;
        while start < rows.end {
            if room == 0 {
                out.push(Vec::new());
                room = share;
            }
            let end = rows.end.min(start + room);
            room -= end - start;
            out.last_mut().expect("one partition").push(Unit {
                file: *file,
                rows: start..end,
            });
            start = end;
        }
    }
    out
}

fn columns_of(schema: &SchemaRef) -> String {
    schema
        .fields()
        .iter()
        .map(|f| format!("{}: {}", f.name(), f.data_type()))
        .collect::<Vec<_>>()
        .join(", ")
}

impl MiniblockTable {
    /// A table of files not opened yet, whose columns are said to be `schema`: each file
    /// is opened, and checked against it, by the first scan that needs it.
    pub(crate) fn unopened(store_url: ObjectStoreUrl, paths: Vec<Path>, schema: SchemaRef) -> Self {
        Self {
            store_url,
            files: paths.into_iter().map(ScanFile::unopened).collect(),
            schema,
        }
    }

    pub(crate) fn store_url(&self) -> &ObjectStoreUrl {
        &self.store_url
    }
}

/// A miniblock error as DataFusion's.
pub(crate) fn external(e: miniblock::Error) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_are_even_in_order_and_cover_every_row() {
        let ranges = vec![(0, 0..10), (1, 5..8), (2, 0..7)];
        for partitions in 1..=25 {
            let parts = split(&ranges, partitions);
            assert!(parts.len() <= partitions.min(20));
            let sizes: Vec<u64> = parts
                .iter()
                .map(|p| p.iter().map(|u| u.rows.end - u.rows.start).sum())
                .collect();
            let share = 20u64.div_ceil(partitions.min(20) as u64);
            assert!(sizes.iter().all(|&s| s > 0 && s <= share), "{sizes:?}");
            let flat: Vec<(usize, u64)> = parts
                .iter()
                .flatten()
                .flat_map(|u| u.rows.clone().map(move |r| (u.file, r)))
                .collect();
            let want: Vec<(usize, u64)> = ranges
                .iter()
                .flat_map(|(f, r)| r.clone().map(move |r| (*f, r)))
                .collect();
            assert_eq!(flat, want);
        }
        assert_eq!(split(&[], 4), vec![Vec::<Unit>::new()]);
    }

    #[test]
    fn a_limit_keeps_the_first_rows() {
        let ranges = vec![(0, 0..10), (1, 5..8)];
        assert_eq!(first_rows(ranges.clone(), 12), vec![(0, 0..10), (1, 5..7)]);
        assert_eq!(first_rows(ranges.clone(), 0), vec![]);
        assert_eq!(first_rows(ranges.clone(), 100), ranges);
    }
}
