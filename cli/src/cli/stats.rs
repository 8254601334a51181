//! Per-column statistics for `inspect`: min and max (floats ignoring NaN), nulls, NaNs,
//! folded from the pages' statistics ([`PageStats`]), formatted as Arrow formats the
//! column's type.

use arrow_array::ArrayRef;
use arrow_schema::DataType;
use miniblock::file::{PageStats, StatValue};

/// Statistics of one column, folded page by page.
#[derive(Debug)]
pub struct ColumnStats {
    data_type: DataType,
    total: PageStats,
}

impl ColumnStats {
    /// Empty statistics for a column of `data_type`.
    pub fn new(data_type: &DataType) -> Self {
        Self {
            data_type: data_type.clone(),
            total: PageStats {
                min: None,
                max: None,
                null_count: 0,
                nan_count: 0,
            },
        }
    }

    /// Folds in one page's statistics.
    pub fn add(&mut self, page: &PageStats) {
        self.total.merge(page);
    }

    /// Null slots.
    pub fn nulls(&self) -> u64 {
        self.total.null_count
    }

    /// NaN values; `None` for a column that is not floats.
    pub fn nans(&self) -> Option<u64> {
        matches!(
            self.data_type,
            DataType::Float16 | DataType::Float32 | DataType::Float64
        )
        .then_some(self.total.nan_count)
    }

    /// The smallest value, formatted as Arrow formats its type; `None` when the column
    /// has no ordered value (all null, all NaN, empty, or a type without an order).
    pub fn min(&self) -> Option<String> {
        self.format(self.total.min)
    }

    /// The largest value; see [`min`](Self::min).
    pub fn max(&self) -> Option<String> {
        self.format(self.total.max)
    }

    fn format(&self, value: Option<StatValue>) -> Option<String> {
        let array = PageStats::value_array(value?, &self.data_type)?;
        Some(format_one(&array))
    }
}

/// The one value of `array`, as Arrow's display formats it (dates as dates, decimals with
/// their scale, floats with every digit needed to read them back).
fn format_one(array: &ArrayRef) -> String {
    let options = arrow_cast::display::FormatOptions::default();
    arrow_cast::display::ArrayFormatter::try_new(array.as_ref(), &options)
        .map_or_else(|e| format!("({e})"), |f| f.value(0).to_string())
}

#[cfg(test)]
mod tests {
    use arrow_array::{Date32Array, Float32Array, Int64Array};

    use super::*;

    #[test]
    fn floats_ignore_nan_and_order_signed_zeros() {
        let mut stats = ColumnStats::new(&DataType::Float32);
        let a = Float32Array::from(vec![Some(f32::NAN), Some(0.0), None, Some(-0.0), Some(2.5)]);
        let b = Float32Array::from(vec![Some(-1.5), Some(f32::NAN)]);
        stats.add(&PageStats::of(&a));
        stats.add(&PageStats::of(&b));
        assert_eq!(stats.min().as_deref(), Some("-1.5"));
        assert_eq!(stats.max().as_deref(), Some("2.5"));
        assert_eq!(stats.nans(), Some(2));
        assert_eq!(stats.nulls(), 1);
    }

    #[test]
    fn all_null_or_nan_has_no_extremes() {
        let mut stats = ColumnStats::new(&DataType::Int64);
        stats.add(&PageStats::of(&Int64Array::from(vec![None, None])));
        assert_eq!((stats.min(), stats.max(), stats.nans()), (None, None, None));
        let mut stats = ColumnStats::new(&DataType::Float32);
        stats.add(&PageStats::of(&Float32Array::from(vec![f32::NAN])));
        assert_eq!((stats.min(), stats.nans()), (None, Some(1)));
    }

    #[test]
    fn dates_print_as_dates() {
        let mut stats = ColumnStats::new(&DataType::Date32);
        stats.add(&PageStats::of(&Date32Array::from(vec![19_000, 20_000])));
        assert_eq!(stats.min().as_deref(), Some("2022-01-08"));
    }
}
