//! A file as a stream of record batches: some columns, some rows, a batch at a time.

use std::io::{Read, Seek};
use std::ops::Range;

use arrow_array::{RecordBatch, RecordBatchOptions, RecordBatchReader};
use arrow_schema::{ArrowError, SchemaRef};

use super::FileReader;
use crate::error::{Error, Result};

/// What [`FileReader::scan`] reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScanOptions {
    /// Column indices, in the order the batches hold them; `None` for every column.
    pub columns: Option<Vec<usize>>,
    /// Rows per batch (the last batch may hold fewer).
    pub batch_rows: usize,
    /// Only these rows; `None` for all of them.
    pub rows: Option<Range<u64>>,
}

impl Default for ScanOptions {
    fn default() -> Self {
        Self {
            columns: None,
            batch_rows: 64 * 1024,
            rows: None,
        }
    }
}

/// Record batches of a file, in row order; see [`FileReader::scan`]. Each batch reads
/// only the pages, and within them the chunks, its rows overlap.
#[derive(Debug)]
pub struct FileBatches<R> {
    reader: FileReader<R>,
    columns: Vec<usize>,
    schema: SchemaRef,
    next: u64,
    end: u64,
    batch_rows: u64,
}

impl<R: Read + Seek> FileReader<R> {
    /// Reads the file as record batches of `options.batch_rows` rows of the chosen
    /// columns and rows. The batches' schema is the file's, projected: field and schema
    /// metadata included.
    pub fn scan(self, options: &ScanOptions) -> Result<FileBatches<R>> {
        let num_columns = self.schema().fields().len();
        let columns = options
            .columns
            .clone()
            .unwrap_or_else(|| (0..num_columns).collect());
        if let Some(&bad) = columns.iter().find(|&&c| c >= num_columns) {
            return Err(Error::invalid(format!(
                "column {bad} asked of a file of {num_columns} columns"
            )));
        }
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
        Ok(FileBatches {
            reader: self,
            columns,
            schema,
            next: rows.start,
            end: rows.end,
            batch_rows: options.batch_rows as u64,
        })
    }
}

impl<R: Read + Seek> FileBatches<R> {
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

impl<R: Read + Seek> Iterator for FileBatches<R> {
    type Item = std::result::Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.next >= self.end {
            return None;
        }
        let rows = self.next..self.next.saturating_add(self.batch_rows).min(self.end);
        let batch = self.batch(rows.clone());
        // After an error the stream ends: the next call would meet the same damage.
        self.next = if batch.is_ok() { rows.end } else { self.end };
        Some(batch.map_err(|e| ArrowError::ExternalError(Box::new(e))))
    }
}

impl<R: Read + Seek> RecordBatchReader for FileBatches<R> {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}
