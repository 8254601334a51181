//! A scan's column statistics, folded from the page statistics in its files' footers
//! (nothing is read): DataFusion answers `count(*)`, `min(c)` and `max(c)` from exact ones
//! without running the scan, and uses inexact ones as bounds.
//!
//! A column's extremes are exact when every page the scan's rows touch lies whole within
//! them and has statistics, and no value is NaN: the pages' extremes order floats as
//! Arrow's `min` and `max` kernels do (IEEE 754 total order, -0.0 below +0.0) but leave
//! NaN out, which those kernels rank above (or, with the sign bit set, below) every
//! number, so a column with NaN gets no extremes at all. When the rows cut a page, the
//! page's extremes still bound the rows' (inexact). Null counts are exact under the same
//! condition and unknown otherwise.

use std::ops::Range;

use datafusion::arrow::datatypes::DataType;
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use datafusion::common::stats::Precision;
use datafusion::common::{ColumnStatistics, ScalarValue};
use miniblock::file::{FileReader, PageStats, StatValue};

use crate::exec::{ScanFile, Unit};

/// The statistics of column `column` over the rows of `units` (of `files`, whose readers
/// must be open for anything to be known).
pub(crate) fn column_statistics(
    files: &[ScanFile],
    units: &[&Unit],
    column: usize,
    data_type: &DataType,
) -> ColumnStatistics {
    match fold(files, units, column) {
        Some((stats, exact)) => of(&stats, exact, data_type),
        None => ColumnStatistics::new_unknown(),
    }
}

/// The statistics of the pages `units` touch, and whether together they cover whole
/// pages only; `None` when a file is not open or a page has no (valid) statistics.
fn fold(files: &[ScanFile], units: &[&Unit], column: usize) -> Option<(PageStats, bool)> {
    let mut total = PageStats {
        min: None,
        max: None,
        null_count: 0,
        nan_count: 0,
    };
    let mut exact = true;
    for (file, rows) in runs(units) {
        let reader: &FileReader<_> = files.get(file)?.reader.get()?.reader();
        let starts = reader.page_starts(column)?;
        // Pages `first..last` overlap the rows: page `i` holds `starts[i]..starts[i + 1]`.
        let first = starts
            .partition_point(|&s| s <= rows.start)
            .checked_sub(1)?;
        let last = starts.partition_point(|&s| s < rows.end);
        if last >= starts.len() || first >= last {
            return None;
        }
        exact &= starts[first] == rows.start && starts[last] == rows.end;
        for page in first..last {
            total.merge(&reader.page_stats(column, page).ok()??);
        }
    }
    Some((total, exact))
}

/// The rows of `units`, file by file, as sorted runs with touching or overlapping ones
/// merged: partitions cut a file at any row, and between them they may still cover its
/// pages whole (and each page is counted once).
fn runs(units: &[&Unit]) -> Vec<(usize, Range<u64>)> {
    let mut sorted: Vec<(usize, Range<u64>)> = units
        .iter()
        .filter(|u| !u.rows.is_empty())
        .map(|u| (u.file, u.rows.clone()))
        .collect();
    sorted.sort_by_key(|(file, rows)| (*file, rows.start));
    let mut out: Vec<(usize, Range<u64>)> = Vec::with_capacity(sorted.len());
    for (file, rows) in sorted {
        match out.last_mut() {
            Some((f, last)) if *f == file && rows.start <= last.end => {
                last.end = last.end.max(rows.end);
            }
            _ => out.push((file, rows)),
        }
    }
    out
}

fn of(stats: &PageStats, exact: bool, data_type: &DataType) -> ColumnStatistics {
    let precision = |value: ScalarValue| {
        if exact {
            Precision::Exact(value)
        } else {
            Precision::Inexact(value)
        }
    };
    let scalar = |value: Option<StatValue>| {
        let array = PageStats::value_array(value?, data_type)?;
        // Only values Arrow can show: DataFusion formats statistics with an unwrap, so a
        // date or time beyond chrono's range (a Date64 of i64::MIN, which a file may
        // rightly hold) would panic there; such extremes are left unknown and scanned.
        let format = FormatOptions::default();
        let formatter = ArrayFormatter::try_new(array.as_ref(), &format).ok()?;
        formatter.value(0).try_to_string().ok()?;
        ScalarValue::try_from_array(&array, 0).ok()
    };
    let (min, max) = if stats.nan_count == 0 {
        (scalar(stats.min), scalar(stats.max))
    } else {
        (None, None)
    };
    ColumnStatistics {
        null_count: if exact {
            Precision::Exact(usize::try_from(stats.null_count).unwrap_or(usize::MAX))
        } else {
            Precision::Absent
        },
        min_value: min.map_or(Precision::Absent, precision),
        max_value: max.map_or(Precision::Absent, precision),
        ..ColumnStatistics::new_unknown()
    }
}
