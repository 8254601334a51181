//! A file as a stream of record batches: some columns, some rows, a batch at a time,
//! skipping the pages whose statistics rule a filter out.

use std::collections::VecDeque;
use std::ops::Range;

use arrow_array::{RecordBatch, RecordBatchOptions, RecordBatchReader};
use arrow_schema::{ArrowError, SchemaRef};

use super::{FileReader, Source, StatValue};
use crate::error::{Error, Result};

/// A column of a file, by its index or by its name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ColumnRef {
    /// The column's index in the file's schema.
    Index(usize),
    /// The column's name.
    Name(String),
}

impl From<usize> for ColumnRef {
    fn from(index: usize) -> Self {
        Self::Index(index)
    }
}

impl From<&str> for ColumnRef {
    fn from(name: &str) -> Self {
        Self::Name(name.to_owned())
    }
}

impl From<String> for ColumnRef {
    fn from(name: String) -> Self {
        Self::Name(name)
    }
}

/// What [`FileReader::scan`] reads.
///
/// ```
/// use miniblock::file::ScanOptions;
/// // Columns "temp" and 0, in that order, 8,192 rows a batch, rows 100 to 999.
/// let options = ScanOptions::default()
///     .with_columns(["temp".into(), 0.into()])
///     .with_batch_rows(8192)
///     .with_rows(100..1000);
/// # assert_eq!(options.batch_rows, 8192);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ScanOptions {
    /// The columns, by index or name, in the order the batches hold them; `None` for
    /// every column. A name the file lacks is an error naming the file's columns.
    pub columns: Option<Vec<ColumnRef>>,
    /// Rows per batch (the last batch may hold fewer).
    pub batch_rows: usize,
    /// Only these rows; `None` for all of them.
    pub rows: Option<Range<u64>>,
    /// Only the rows of pages (of the filter's column) whose statistics say they may hold
    /// a value in the filter's range; `None` for no filter. Inexact: the batches hold
    /// every row of those pages, which the caller filters itself.
    pub filter: Option<StatsFilter>,
}

impl Default for ScanOptions {
    fn default() -> Self {
        Self {
            columns: None,
            batch_rows: 64 * 1024,
            rows: None,
            filter: None,
        }
    }
}

impl ScanOptions {
    /// These columns (indices or names, `ColumnRef::from`), in this order.
    #[must_use]
    pub fn with_columns(mut self, columns: impl IntoIterator<Item = ColumnRef>) -> Self {
        self.columns = Some(columns.into_iter().collect());
        self
    }

    /// Batches of `rows` rows.
    #[must_use]
    pub fn with_batch_rows(mut self, rows: usize) -> Self {
        self.batch_rows = rows;
        self
    }

    /// Only these rows.
    #[must_use]
    pub fn with_rows(mut self, rows: Range<u64>) -> Self {
        self.rows = Some(rows);
        self
    }

    /// Only the pages `filter` may match.
    #[must_use]
    pub fn with_filter(mut self, filter: StatsFilter) -> Self {
        self.filter = Some(filter);
        self
    }
}

/// Values of one column from `min` to `max`, inclusive (either end open when `None`):
/// what a predicate such as `c >= 10 AND c < 20` needs of the pages it may read. Nulls
/// never match; NaN matches a range open above (Arrow orders NaN above every number).
#[derive(Debug, Clone, PartialEq)]
pub struct StatsFilter {
    /// The column, by index or name.
    pub column: ColumnRef,
    /// Smallest value wanted.
    pub min: Option<StatValue>,
    /// Largest value wanted.
    pub max: Option<StatValue>,
}

/// Record batches of a file, in row order; see [`FileReader::scan`]. Each batch reads
/// only the pages, and within them the chunks, its rows overlap.
#[derive(Debug)]
pub struct FileBatches<R> {
    reader: FileReader<R>,
    columns: Vec<usize>,
    schema: SchemaRef,
    /// The row ranges still to read, in order.
    ranges: VecDeque<Range<u64>>,
    batch_rows: u64,
}

impl<R: Source> FileReader<R> {
    /// Reads the file as record batches of `options.batch_rows` rows of the chosen
    /// columns and rows. The batches' schema is the file's, projected: field and schema
    /// metadata included.
    pub fn scan(self, options: &ScanOptions) -> Result<FileBatches<R>> {
        let columns = match &options.columns {
            None => (0..self.schema().fields().len()).collect(),
            Some(columns) => columns
                .iter()
                .map(|c| self.resolve(c))
                .collect::<Result<Vec<_>>>()?,
        };
        if options.batch_rows == 0 {
            return Err(Error::invalid("batches of 0 rows"));
        }
        let rows = options.rows.clone().unwrap_or(0..self.num_rows());
        if rows.start > rows.end || rows.end > self.num_rows() {
            return Err(Error::invalid(format!(
                "rows {rows:?} are outside the file's {} rows",
                self.num_rows()
            )));
        }
        let schema = std::sync::Arc::new(
            self.schema()
                .project(&columns)
                .map_err(|e| Error::invalid(e.to_string()))?,
        );
        let ranges = match &options.filter {
            None => VecDeque::from_iter(Some(rows).filter(|r| !r.is_empty())),
            Some(filter) => self.matching_rows(filter, rows)?,
        };
        Ok(FileBatches {
            reader: self,
            columns,
            schema,
            ranges,
            batch_rows: options.batch_rows as u64,
        })
    }

    /// The index of `column`; an error naming what the file has when it lacks it.
    pub fn resolve(&self, column: &ColumnRef) -> Result<usize> {
        match column {
            ColumnRef::Name(name) => self.column_index(name),
            &ColumnRef::Index(index) => {
                let columns = self.schema().fields().len();
                if index < columns {
                    Ok(index)
                } else {
                    Err(Error::invalid(format!(
                        "column {index} asked of a file of {columns} columns"
                    )))
                }
            }
        }
    }

    /// The parts of `rows` in pages of `filter.column` that may hold a value of its range
    /// (every page without statistics may), adjacent pages merged: what a scan with this
    /// filter reads. Reads only the footer.
    pub fn matching_rows(
        &self,
        filter: &StatsFilter,
        rows: Range<u64>,
    ) -> Result<VecDeque<Range<u64>>> {
        let column = self.resolve(&filter.column)?;
        let pages = self.footer().columns[column].pages.len();
        let mut ranges: VecDeque<Range<u64>> = VecDeque::new();
        for page in 0..pages {
            let span = self.page_rows(column, page);
            let (start, end) = (span.start.max(rows.start), span.end.min(rows.end));
            if start >= end {
                continue;
            }
            let keep = self
                .page_stats(column, page)?
                .is_none_or(|s| s.may_contain(filter.min, filter.max));
            if !keep {
                continue;
            }
            match ranges.back_mut() {
                Some(last) if last.end == start => last.end = end,
                _ => ranges.push_back(start..end),
            }
        }
        Ok(ranges)
    }
}

impl<R: Source> FileBatches<R> {
    fn batch(&mut self, rows: Range<u64>) -> Result<RecordBatch> {
        let arrays = self
            .columns
            .iter()
            .map(|&c| self.reader.read_column_range(c, rows.clone()))
            .collect::<Result<Vec<_>>>()?;
        let row_count = usize::try_from(rows.end - rows.start)
            .map_err(|_| Error::invalid("batch does not fit in memory"))?;
        RecordBatch::try_new_with_options(
            self.schema.clone(),
            arrays,
            &RecordBatchOptions::new().with_row_count(Some(row_count)),
        )
        .map_err(|e| Error::corrupt(format!("rows {rows:?}: {e}")))
    }

    /// Gives the reader back.
    pub fn into_inner(self) -> FileReader<R> {
        self.reader
    }
}

impl<R: Source> Iterator for FileBatches<R> {
    type Item = std::result::Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        let range = self.ranges.front_mut()?;
        let rows = range.start..range.start.saturating_add(self.batch_rows).min(range.end);
        range.start = rows.end;
        if range.is_empty() {
            self.ranges.pop_front();
        }
        let batch = self.batch(rows);
        // After an error the stream ends: the next call would meet the same damage.
        if batch.is_err() {
            self.ranges.clear();
        }
        Some(batch.map_err(|e| ArrowError::ExternalError(Box::new(e))))
    }
}

impl<R: Source> RecordBatchReader for FileBatches<R> {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}
