//! Per-column statistics for `inspect`: min and max (floats ignoring NaN), nulls, NaNs.
//! Folded page by page, so a column never sits in memory whole.

use std::cmp::Ordering;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    ArrowPrimitiveType, Date32Type, Date64Type, Decimal128Type, Decimal32Type, Decimal64Type,
    DurationMicrosecondType, DurationMillisecondType, DurationNanosecondType, DurationSecondType,
    Float16Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type,
    Time32MillisecondType, Time32SecondType, Time64MicrosecondType, Time64NanosecondType,
    TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType,
    TimestampSecondType, UInt16Type, UInt32Type, UInt64Type, UInt8Type,
};
use arrow_array::{Array, ArrayRef, PrimitiveArray};
use arrow_schema::{DataType, TimeUnit};

/// A value's place in its column's order: floats by IEEE total order (-0.0 before +0.0;
/// NaN never gets here), everything else as an integer.
#[derive(Debug, Clone, Copy)]
enum Key {
    Float(f64),
    Int(i128),
}

impl Key {
    fn cmp(self, other: Key) -> Ordering {
        match (self, other) {
            (Key::Float(a), Key::Float(b)) => a.total_cmp(&b),
            (Key::Int(a), Key::Int(b)) => a.cmp(&b),
            // One column holds one type, so the two kinds never meet.
            _ => Ordering::Equal,
        }
    }
}

/// Statistics of one column, folded page by page.
#[derive(Debug, Default)]
pub struct ColumnStats {
    /// Null slots.
    pub nulls: u64,
    /// NaN values (floats only; `None` for other types).
    pub nans: Option<u64>,
    /// Whether the type has an order here (not fixed-size binaries, 256-bit decimals or
    /// intervals).
    ordered: bool,
    min: Option<(Key, ArrayRef)>,
    max: Option<(Key, ArrayRef)>,
}

impl ColumnStats {
    /// Empty statistics for a column of `data_type`.
    pub fn new(data_type: &DataType) -> Self {
        Self {
            nans: matches!(
                data_type,
                DataType::Float16 | DataType::Float32 | DataType::Float64
            )
            .then_some(0),
            ordered: true,
            ..Self::default()
        }
    }

    /// Folds in one page's values.
    pub fn add(&mut self, array: &ArrayRef) {
        self.nulls += array.null_count() as u64;
        let found = match array.data_type() {
            DataType::Float16 => scan::<Float16Type>(array, |v| float(f64::from(v.to_f32()))),
            DataType::Float32 => scan::<Float32Type>(array, |v| float(f64::from(v))),
            DataType::Float64 => scan::<Float64Type>(array, float),
            DataType::Int8 => scan::<Int8Type>(array, int),
            DataType::Int16 => scan::<Int16Type>(array, int),
            DataType::Int32 => scan::<Int32Type>(array, int),
            DataType::Int64 => scan::<Int64Type>(array, int),
            DataType::UInt8 => scan::<UInt8Type>(array, int),
            DataType::UInt16 => scan::<UInt16Type>(array, int),
            DataType::UInt32 => scan::<UInt32Type>(array, int),
            DataType::UInt64 => scan::<UInt64Type>(array, int),
            DataType::Date32 => scan::<Date32Type>(array, int),
            DataType::Date64 => scan::<Date64Type>(array, int),
            DataType::Time32(TimeUnit::Second) => scan::<Time32SecondType>(array, int),
            DataType::Time32(_) => scan::<Time32MillisecondType>(array, int),
            DataType::Time64(TimeUnit::Microsecond) => scan::<Time64MicrosecondType>(array, int),
            DataType::Time64(_) => scan::<Time64NanosecondType>(array, int),
            DataType::Timestamp(TimeUnit::Second, _) => scan::<TimestampSecondType>(array, int),
            DataType::Timestamp(TimeUnit::Millisecond, _) => {
                scan::<TimestampMillisecondType>(array, int)
            }
            DataType::Timestamp(TimeUnit::Microsecond, _) => {
                scan::<TimestampMicrosecondType>(array, int)
            }
            DataType::Timestamp(TimeUnit::Nanosecond, _) => {
                scan::<TimestampNanosecondType>(array, int)
            }
            DataType::Duration(TimeUnit::Second) => scan::<DurationSecondType>(array, int),
            DataType::Duration(TimeUnit::Millisecond) => {
                scan::<DurationMillisecondType>(array, int)
            }
            DataType::Duration(TimeUnit::Microsecond) => {
                scan::<DurationMicrosecondType>(array, int)
            }
            DataType::Duration(TimeUnit::Nanosecond) => scan::<DurationNanosecondType>(array, int),
            DataType::Decimal32(..) => scan::<Decimal32Type>(array, int),
            DataType::Decimal64(..) => scan::<Decimal64Type>(array, int),
            DataType::Decimal128(..) => scan::<Decimal128Type>(array, |v| Some(Key::Int(v))),
            _ => {
                self.ordered = false;
                return;
            }
        };
        let Some(found) = found else { return };
        if let Some(nans) = &mut self.nans {
            *nans += found.nans;
        }
        let better = |best: &Option<(Key, ArrayRef)>, key: Key, want: Ordering| {
            best.as_ref().is_none_or(|(b, _)| key.cmp(*b) == want)
        };
        if let Some((key, at)) = found.min {
            if better(&self.min, key, Ordering::Less) {
                self.min = Some((key, array.slice(at, 1)));
            }
        }
        if let Some((key, at)) = found.max {
            if better(&self.max, key, Ordering::Greater) {
                self.max = Some((key, array.slice(at, 1)));
            }
        }
    }

    /// The smallest value, formatted as Arrow formats its type; `None` when the column
    /// has no ordered value (all null, all NaN, empty, or a type without an order).
    pub fn min(&self) -> Option<String> {
        self.ordered
            .then(|| self.min.as_ref().map(|(_, a)| format_one(a)))
            .flatten()
    }

    /// The largest value; see [`min`](Self::min).
    pub fn max(&self) -> Option<String> {
        self.ordered
            .then(|| self.max.as_ref().map(|(_, a)| format_one(a)))
            .flatten()
    }
}

#[allow(clippy::unnecessary_wraps)]
fn float(v: f64) -> Option<Key> {
    (!v.is_nan()).then_some(Key::Float(v))
}

#[allow(clippy::unnecessary_wraps)]
fn int(v: impl Into<i128>) -> Option<Key> {
    Some(Key::Int(v.into()))
}

struct Found {
    min: Option<(Key, usize)>,
    max: Option<(Key, usize)>,
    nans: u64,
}

/// The positions of the smallest and largest valid value of `array` (a `T` array), and
/// how many valid values have no key (NaN).
fn scan<T: ArrowPrimitiveType>(
    array: &ArrayRef,
    key: impl Fn(T::Native) -> Option<Key>,
) -> Option<Found> {
    let values: &PrimitiveArray<T> = array.as_primitive_opt()?;
    let mut found = Found {
        min: None,
        max: None,
        nans: 0,
    };
    for (i, value) in values.iter().enumerate() {
        let Some(value) = value else { continue };
        let Some(k) = key(value) else {
            found.nans += 1;
            continue;
        };
        if found.min.is_none_or(|(m, _)| k.cmp(m) == Ordering::Less) {
            found.min = Some((k, i));
        }
        if found.max.is_none_or(|(m, _)| k.cmp(m) == Ordering::Greater) {
            found.max = Some((k, i));
        }
    }
    Some(found)
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
    use std::sync::Arc;

    use arrow_array::{Float32Array, Int64Array};

    use super::*;

    #[test]
    fn floats_ignore_nan_and_order_signed_zeros() {
        let mut stats = ColumnStats::new(&DataType::Float32);
        let a: ArrayRef = Arc::new(Float32Array::from(vec![
            Some(f32::NAN),
            Some(0.0),
            None,
            Some(-0.0),
            Some(2.5),
        ]));
        let b: ArrayRef = Arc::new(Float32Array::from(vec![Some(-1.5), Some(f32::NAN)]));
        stats.add(&a);
        stats.add(&b);
        assert_eq!(stats.min().as_deref(), Some("-1.5"));
        assert_eq!(stats.max().as_deref(), Some("2.5"));
        assert_eq!(stats.nans, Some(2));
        assert_eq!(stats.nulls, 1);
    }

    #[test]
    fn all_null_or_nan_has_no_extremes() {
        let mut stats = ColumnStats::new(&DataType::Int64);
        stats.add(&(Arc::new(Int64Array::from(vec![None, None])) as ArrayRef));
        assert_eq!((stats.min(), stats.max(), stats.nans), (None, None, None));
        let mut stats = ColumnStats::new(&DataType::Float32);
        stats.add(&(Arc::new(Float32Array::from(vec![f32::NAN])) as ArrayRef));
        assert_eq!((stats.min(), stats.nans), (None, Some(1)));
    }
}
