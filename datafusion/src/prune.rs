//! Which rows of a file a predicate may match, by the page statistics in its footer.
//!
//! DataFusion's `PruningPredicate` judges "containers" that every column shares (a
//! Parquet row group). Our pages are per column and their boundaries differ from column
//! to column, so the containers here are the segments between the page boundaries of
//! every column the predicate names: within a segment each column lies inside one page,
//! whose statistics bound it.

use std::collections::{BTreeSet, HashSet};
use std::ops::Range;
use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, BooleanArray, UInt64Array};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::pruning::PruningStatistics;
use datafusion::common::{Column, Result, ScalarValue};
use datafusion::physical_expr::utils::collect_columns;
use datafusion::physical_optimizer::pruning::PruningPredicate;
use miniblock::file::{FileReader, PageStats};

use crate::table::external;

/// The row ranges of the file `reader` reads that `predicate` may match, in order,
/// adjacent ones merged.
pub(crate) fn matching_rows<R: std::io::Read + std::io::Seek>(
    reader: &FileReader<R>,
    predicate: &PruningPredicate,
) -> Result<Vec<Range<u64>>> {
    let rows = reader.num_rows();
    let mut columns: Vec<usize> = collect_columns(predicate.orig_expr())
        .iter()
        .filter_map(|c| reader.schema().index_of(c.name()).ok())
        .collect();
    columns.sort_unstable();
    columns.dedup();
    let mut cuts: BTreeSet<u64> = BTreeSet::from([0, rows]);
    for &c in &columns {
        cuts.extend(reader.page_starts(c).unwrap_or_default().iter().copied());
    }
    let cuts: Vec<u64> = cuts.into_iter().filter(|&r| r <= rows).collect();
    let segments: Vec<Range<u64>> = cuts
        .windows(2)
        .map(|w| w[0]..w[1])
        .filter(|r| !r.is_empty())
        .collect();
    let stats = Segments::new(reader, &columns, segments)?;
    let keep = predicate.prune(&stats)?;
    let mut out: Vec<Range<u64>> = Vec::new();
    for (segment, keep) in stats.segments.iter().zip(keep) {
        if !keep {
            continue;
        }
        match out.last_mut() {
            Some(last) if last.end == segment.start => last.end = segment.end,
            _ => out.push(segment.clone()),
        }
    }
    Ok(out)
}

/// What the footer says of each segment, per column the predicate names.
struct Segments {
    segments: Vec<Range<u64>>,
    columns: Vec<NamedColumn>,
}

/// A column the predicate names: its type, and per segment the statistics of the page
/// holding it, and whether the segment is that whole page.
struct NamedColumn {
    name: String,
    data_type: DataType,
    pages: Vec<(Option<PageStats>, bool)>,
}

impl Segments {
    fn new<R: std::io::Read + std::io::Seek>(
        reader: &FileReader<R>,
        columns: &[usize],
        segments: Vec<Range<u64>>,
    ) -> Result<Self> {
        let mut out = Vec::with_capacity(columns.len());
        for &c in columns {
            let starts = reader.page_starts(c).unwrap_or_default();
            let mut per_segment = Vec::with_capacity(segments.len());
            for segment in &segments {
                // The page holding the segment: the last that starts at or before it.
                let page = starts
                    .partition_point(|&s| s <= segment.start)
                    .saturating_sub(1);
                let whole = starts.get(page) == Some(&segment.start)
                    && starts.get(page + 1) == Some(&segment.end);
                let stats = reader.page_stats(c, page).map_err(external)?;
                per_segment.push((stats, whole));
            }
            let field = reader.schema().field(c);
            out.push(NamedColumn {
                name: field.name().clone(),
                data_type: field.data_type().clone(),
                pages: per_segment,
            });
        }
        Ok(Self {
            segments,
            columns: out,
        })
    }

    fn column(&self, column: &Column) -> Option<&NamedColumn> {
        self.columns.iter().find(|c| c.name == column.name())
    }

    /// The per-segment extremes of `column`; unknown (null) where the page has none, or
    /// holds a NaN: Arrow orders NaN above every number (and -NaN below), so extremes
    /// that leave NaN out cannot bound it.
    fn extremes(&self, column: &Column, max: bool) -> Option<ArrayRef> {
        let NamedColumn {
            data_type, pages, ..
        } = self.column(column)?;
        let null = ScalarValue::try_from(data_type).ok()?;
        let values = pages.iter().map(|(stats, _)| {
            stats
                .as_ref()
                .filter(|s| s.nan_count == 0)
                .and_then(|s| if max { s.max } else { s.min })
                .and_then(|v| PageStats::value_array(v, data_type))
                .and_then(|a| ScalarValue::try_from_array(&a, 0).ok())
                .unwrap_or_else(|| null.clone())
        });
        ScalarValue::iter_to_array(values).ok()
    }
}

impl PruningStatistics for Segments {
    fn min_values(&self, column: &Column) -> Option<ArrayRef> {
        self.extremes(column, false)
    }

    fn max_values(&self, column: &Column) -> Option<ArrayRef> {
        self.extremes(column, true)
    }

    fn num_containers(&self) -> usize {
        self.segments.len()
    }

    /// A page's null count is its segment's only when the segment is the whole page.
    fn null_counts(&self, column: &Column) -> Option<ArrayRef> {
        let pages = &self.column(column)?.pages;
        let counts: UInt64Array = pages
            .iter()
            .map(|(stats, whole)| stats.as_ref().filter(|_| *whole).map(|s| s.null_count))
            .collect();
        Some(Arc::new(counts))
    }

    fn row_counts(&self) -> Option<ArrayRef> {
        let counts: UInt64Array = self
            .segments
            .iter()
            .map(|r| Some(r.end - r.start))
            .collect();
        Some(Arc::new(counts))
    }

    fn contained(&self, _column: &Column, _values: &HashSet<ScalarValue>) -> Option<BooleanArray> {
        None
    }
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::Array;

    use super::*;

    #[test]
    fn unknown_extremes_are_null_not_absent() {
        let stats = Segments {
            segments: vec![0..10, 10..20],
            columns: vec![NamedColumn {
                name: "x".into(),
                data_type: DataType::Float64,
                pages: vec![
                    (
                        Some(PageStats {
                            min: Some(miniblock::file::StatValue::Float(1.0)),
                            max: Some(miniblock::file::StatValue::Float(2.0)),
                            null_count: 0,
                            nan_count: 0,
                        }),
                        true,
                    ),
                    (
                        Some(PageStats {
                            min: Some(miniblock::file::StatValue::Float(1.0)),
                            max: Some(miniblock::file::StatValue::Float(2.0)),
                            null_count: 3,
                            nan_count: 1,
                        }),
                        false,
                    ),
                ],
            }],
        };
        let max = stats.max_values(&Column::from_name("x")).unwrap();
        assert_eq!(max.len(), 2);
        assert!(
            max.is_valid(0) && max.is_null(1),
            "a page with NaN has no bound"
        );
        let nulls = stats.null_counts(&Column::from_name("x")).unwrap();
        assert!(
            nulls.is_valid(0) && nulls.is_null(1),
            "part of a page: count unknown"
        );
        assert!(stats.min_values(&Column::from_name("y")).is_none());
    }
}
