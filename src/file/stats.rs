//! Page statistics: per page, the smallest and largest value (floats ignoring NaN), the
//! null count and, for floats, the NaN count. The writer stores them in the footer
//! (`Page.statistics`, field 104), so a reader can tell which pages a range of values may
//! touch without reading them, and `inspect` can print a column's extremes without
//! decoding it. `FileReader::verify` checks them against each page's decoded values: a
//! footer whose statistics are well formed but untrue misleads pruning and answers
//! taken from statistics alone, and nothing else reads the values to notice.
//!
//! Values are ordered as their type orders them: floats by value (-0.0 before +0.0, NaN
//! left out and counted), signed integers, dates, times, timestamps, durations and
//! 32/64/128-bit decimals as signed integers, unsigned integers as unsigned ones.
//! Fixed-size binaries, intervals and 256-bit decimals have no order here: their pages
//! carry only counts. The extremes are stored as the value's own little-endian bytes.

use std::cmp::Ordering;
use std::fmt;

use arrow_array::Array;
use arrow_schema::DataType;
use half::f16;

use crate::error::{Error, Result};
use crate::proto::file as pb;

/// A value's place in its column's order. Two are equal when they are the same value in
/// that order, so a float's -0.0 is not +0.0.
#[derive(Debug, Clone, Copy)]
pub enum StatValue {
    /// A float column's value (never NaN).
    Float(f64),
    /// An integer, temporal or decimal column's value.
    Int(i128),
}

impl PartialEq for StatValue {
    fn eq(&self, other: &Self) -> bool {
        self.compare(*other) == Some(Ordering::Equal)
    }
}

impl StatValue {
    /// The order of two values of one column; `None` between a float and an integer.
    pub fn compare(self, other: StatValue) -> Option<Ordering> {
        match (self, other) {
            (StatValue::Float(a), StatValue::Float(b)) => Some(a.total_cmp(&b)),
            (StatValue::Int(a), StatValue::Int(b)) => Some(a.cmp(&b)),
            _ => None,
        }
    }
}

/// How a type's value bytes read as a [`StatValue`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Order {
    F16,
    F32,
    F64,
    Signed(usize),
    Unsigned(usize),
}

fn order_of(data_type: &DataType) -> Option<Order> {
    use DataType as D;
    Some(match data_type {
        D::Float16 => Order::F16,
        D::Float32 => Order::F32,
        D::Float64 => Order::F64,
        D::UInt8 => Order::Unsigned(1),
        D::UInt16 => Order::Unsigned(2),
        D::UInt32 => Order::Unsigned(4),
        D::UInt64 => Order::Unsigned(8),
        D::Int8 => Order::Signed(1),
        D::Int16 => Order::Signed(2),
        D::Int32 | D::Date32 | D::Time32(_) | D::Decimal32(..) => Order::Signed(4),
        D::Int64
        | D::Date64
        | D::Time64(_)
        | D::Timestamp(..)
        | D::Duration(_)
        | D::Decimal64(..) => Order::Signed(8),
        D::Decimal128(..) => Order::Signed(16),
        _ => return None,
    })
}

/// The smallest and largest total-order keys of the floats of `W` bytes (4 or 8) in
/// `values`, NaN left out, and the NaN count. A float's key is its bits as a signed
/// integer with the magnitude bits flipped when the sign is set: keys order as IEEE
/// 754's total order (-0.0 below +0.0), and the same flip turns a key back into bits.
fn float_keys<const W: usize>(values: &[u8]) -> (Option<i64>, Option<i64>, u64) {
    let (mut lo, mut hi, mut nan) = (i64::MAX, i64::MIN, 0u64);
    for v in values.chunks_exact(W) {
        let (key, is_nan) = if W == 4 {
            let bits = u32::from_le_bytes(v.try_into().unwrap_or_default());
            let key = bits.cast_signed() ^ (((bits.cast_signed() >> 31) as u32) >> 1).cast_signed();
            (i64::from(key), bits & 0x7FFF_FFFF > 0x7F80_0000)
        } else {
            let bits = u64::from_le_bytes(v.try_into().unwrap_or_default());
            let key = bits.cast_signed() ^ (((bits.cast_signed() >> 63) as u64) >> 1).cast_signed();
            (key, bits & 0x7FFF_FFFF_FFFF_FFFF > 0x7FF0_0000_0000_0000)
        };
        nan += u64::from(is_nan);
        if !is_nan {
            lo = lo.min(key);
            hi = hi.max(key);
        }
    }
    let any = (values.len() / W) as u64 > nan;
    (any.then_some(lo), any.then_some(hi), nan)
}

/// The smallest and largest of the integers of `N` bytes in `values`, read by `read`.
fn int_extremes<const N: usize>(
    values: &[u8],
    read: impl Fn([u8; N]) -> i128,
) -> Option<(StatValue, StatValue)> {
    let mut extremes: Option<(i128, i128)> = None;
    for v in values.chunks_exact(N) {
        let value = read(v.try_into().unwrap_or([0; N]));
        extremes = Some(match extremes {
            None => (value, value),
            Some((lo, hi)) => (lo.min(value), hi.max(value)),
        });
    }
    extremes.map(|(lo, hi)| (StatValue::Int(lo), StatValue::Int(hi)))
}

impl Order {
    fn width(self) -> usize {
        match self {
            Order::F16 => 2,
            Order::F32 => 4,
            Order::F64 => 8,
            Order::Signed(w) | Order::Unsigned(w) => w,
        }
    }

    /// The value of `bytes` (exactly [`width`](Self::width) of them); `None` for NaN.
    fn read(self, bytes: &[u8]) -> Option<StatValue> {
        let mut word = [0u8; 16];
        word[..bytes.len()].copy_from_slice(bytes);
        let raw = u128::from_le_bytes(word);
        let float = |v: f64| (!v.is_nan()).then_some(StatValue::Float(v));
        match self {
            Order::F16 => float(f16::from_bits(raw as u16).to_f64()),
            Order::F32 => float(f64::from(f32::from_bits(raw as u32))),
            Order::F64 => float(f64::from_bits(raw as u64)),
            // At most 64 bits: never past i128's range.
            Order::Unsigned(_) => Some(StatValue::Int(raw.cast_signed())),
            Order::Signed(w) => {
                let shift = 128 - 8 * w as u32;
                Some(StatValue::Int((raw << shift).cast_signed() >> shift))
            }
        }
    }

    /// The extremes and NaN count of `values` (whole values of this order's width). Floats
    /// and 4- and 8-byte integers fold as integers in a loop of their own (the writer
    /// computes this for every page: reading each value through [`read`](Self::read) took
    /// a tenth of a column file's encode time); other widths value by value.
    fn fold(self, values: &[u8]) -> PageStats {
        let mut stats = PageStats::default();
        let extremes = match self {
            Order::F32 => {
                let (lo, hi, nan) = float_keys::<4>(values);
                stats.nan_count = nan;
                lo.zip(hi).map(|(lo, hi)| {
                    let float = |key: i64| {
                        let bits = key ^ i64::from((key >> 31) as i32 as u32 >> 1);
                        StatValue::Float(f64::from(f32::from_bits(bits as u32)))
                    };
                    (float(lo), float(hi))
                })
            }
            Order::F64 => {
                let (lo, hi, nan) = float_keys::<8>(values);
                stats.nan_count = nan;
                lo.zip(hi).map(|(lo, hi)| {
                    let float = |key: i64| {
                        let bits = key ^ ((key >> 63) as u64 >> 1).cast_signed();
                        StatValue::Float(f64::from_bits(bits.cast_unsigned()))
                    };
                    (float(lo), float(hi))
                })
            }
            Order::Signed(4) => int_extremes(values, |b| i128::from(i32::from_le_bytes(b))),
            Order::Signed(8) => int_extremes(values, |b| i128::from(i64::from_le_bytes(b))),
            Order::Unsigned(4) => int_extremes(values, |b| i128::from(u32::from_le_bytes(b))),
            Order::Unsigned(8) => int_extremes(values, |b| i128::from(u64::from_le_bytes(b))),
            _ => return self.fold_each(values),
        };
        if let Some((lo, hi)) = extremes {
            (stats.min, stats.max) = (Some(lo), Some(hi));
        }
        stats
    }

    /// [`fold`](Self::fold) value by value, through [`read`](Self::read).
    fn fold_each(self, values: &[u8]) -> PageStats {
        let mut stats = PageStats::default();
        for bytes in values.chunks_exact(self.width()) {
            match self.read(bytes) {
                None => stats.nan_count += 1,
                Some(v) => stats.merge(&PageStats {
                    min: Some(v),
                    max: Some(v),
                    null_count: 0,
                    nan_count: 0,
                }),
            }
        }
        stats
    }

    /// The little-endian bytes of `value` (one this order read).
    fn bytes(self, value: StatValue) -> Vec<u8> {
        match (self, value) {
            (Order::F16, StatValue::Float(v)) => f16::from_f64(v).to_le_bytes().to_vec(),
            (Order::F32, StatValue::Float(v)) => (v as f32).to_le_bytes().to_vec(),
            (Order::F64, StatValue::Float(v)) => v.to_le_bytes().to_vec(),
            (order, StatValue::Int(v)) => v.to_le_bytes()[..order.width()].to_vec(),
            (order, StatValue::Float(v)) => unreachable!("{order:?} never reads a float {v}"),
        }
    }
}

/// Statistics of one page (or, folded, of several); the default is that of no values.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PageStats {
    /// The smallest value that is neither null nor NaN; `None` when there is none, or the
    /// type has no order here.
    pub min: Option<StatValue>,
    /// The largest such value.
    pub max: Option<StatValue>,
    /// Null slots.
    pub null_count: u64,
    /// NaN values (floats only).
    pub nan_count: u64,
}

impl fmt::Display for StatValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            // Debug keeps the sign of -0.0 and every digit needed to read the value back.
            StatValue::Float(v) => write!(f, "{v:?}"),
            StatValue::Int(v) => write!(f, "{v}"),
        }
    }
}

impl fmt::Display for PageStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let extreme = |v: Option<StatValue>| v.map_or("none".to_owned(), |v| v.to_string());
        write!(
            f,
            "min {}, max {}, {} null(s), {} NaN(s)",
            extreme(self.min),
            extreme(self.max),
            self.null_count,
            self.nan_count
        )
    }
}

impl PageStats {
    /// The statistics of `array`'s values.
    pub fn of(array: &dyn Array) -> Self {
        let null_count = array.null_count() as u64;
        let mut stats = PageStats {
            min: None,
            max: None,
            null_count,
            nan_count: 0,
        };
        let Some(order) = order_of(array.data_type()) else {
            return stats;
        };
        let data = array.to_data();
        let width = order.width();
        let Some(values) = data.buffers().first().and_then(|b| {
            b.as_slice()
                .get(data.offset() * width..(data.offset() + data.len()) * width)
        }) else {
            return stats;
        };
        match array.logical_nulls().filter(|n| n.null_count() > 0) {
            None => stats.merge(&order.fold(values)),
            Some(nulls) => {
                for (start, end) in nulls.inner().set_slices() {
                    stats.merge(&order.fold(&values[start * width..end * width]));
                }
            }
        }
        stats
    }

    /// Folds `other` (statistics of more values of the same column) in.
    pub fn merge(&mut self, other: &PageStats) {
        self.null_count += other.null_count;
        self.nan_count += other.nan_count;
        if let Some(v) = other.min {
            if self
                .min
                .is_none_or(|m| v.compare(m) == Some(Ordering::Less))
            {
                self.min = Some(v);
            }
        }
        if let Some(v) = other.max {
            if self
                .max
                .is_none_or(|m| v.compare(m) == Some(Ordering::Greater))
            {
                self.max = Some(v);
            }
        }
    }

    /// Whether some value of the page may lie in `min..=max` (either bound open when
    /// `None`): false only when the statistics rule it out. NaN compares above every
    /// number in Arrow's kernels, so a page with NaN may match any range open above.
    pub fn may_contain(&self, min: Option<StatValue>, max: Option<StatValue>) -> bool {
        if self.nan_count > 0 && max.is_none() {
            return true;
        }
        let (Some(lo), Some(hi)) = (self.min, self.max) else {
            // Nothing ordered: all null or all NaN (the latter handled above).
            return self.nan_count > 0 && max.is_none();
        };
        let below = max.is_some_and(|m| lo.compare(m) == Some(Ordering::Greater));
        let above = min.is_some_and(|m| hi.compare(m) == Some(Ordering::Less));
        !(below || above)
    }

    /// The footer message for a page of `data_type`.
    pub(crate) fn to_proto(&self, data_type: &DataType) -> pb::PageStatistics {
        let order = order_of(data_type);
        let bytes = |v: Option<StatValue>| order.zip(v).map(|(o, v)| o.bytes(v));
        pb::PageStatistics {
            min: bytes(self.min),
            max: bytes(self.max),
            null_count: self.null_count,
            nan_count: self.nan_count,
        }
    }

    /// The statistics a footer's page of `num_values` values of `data_type` records,
    /// checked: extremes of the type's width, in order, counts within the page.
    pub(crate) fn from_proto(
        stats: &pb::PageStatistics,
        data_type: &DataType,
        num_values: u64,
    ) -> Result<Self> {
        let corrupt = |what: &str| Error::corrupt(format!("page statistics: {what}"));
        if stats
            .null_count
            .checked_add(stats.nan_count)
            .is_none_or(|n| n > num_values)
        {
            return Err(corrupt("more nulls and NaNs than values"));
        }
        let order = order_of(data_type);
        let read = |bytes: &Option<Vec<u8>>| -> Result<Option<StatValue>> {
            let Some(bytes) = bytes else { return Ok(None) };
            let order = order.ok_or_else(|| corrupt("extremes for a type without an order"))?;
            if bytes.len() != order.width() {
                return Err(corrupt("an extreme of the wrong width"));
            }
            order
                .read(bytes)
                .map(Some)
                .ok_or_else(|| corrupt("a NaN extreme"))
        };
        let (min, max) = (read(&stats.min)?, read(&stats.max)?);
        match (min, max) {
            (None, None) => {}
            (Some(lo), Some(hi)) if lo.compare(hi) != Some(Ordering::Greater) => {}
            _ => return Err(corrupt("min above max, or only one of them")),
        }
        Ok(Self {
            min,
            max,
            null_count: stats.null_count,
            nan_count: stats.nan_count,
        })
    }

    /// `value` as a one-value Arrow array of `data_type` (for display); `None` for a
    /// type without an order.
    pub fn value_array(value: StatValue, data_type: &DataType) -> Option<arrow_array::ArrayRef> {
        let bytes = order_of(data_type)?.bytes(value);
        let data = arrow_data::ArrayData::builder(data_type.clone())
            .len(1)
            .add_buffer(arrow_buffer::Buffer::from_vec(bytes))
            .build()
            .ok()?;
        Some(arrow_array::make_array(data))
    }
}

#[cfg(test)]
mod tests {

    use arrow_array::{Float32Array, Int16Array, UInt64Array};

    use super::*;

    /// The folds of floats and 4- and 8-byte integers give what reading every value gives:
    /// on random bit patterns (NaNs of both signs and any payload, infinities, zeros of
    /// both signs, subnormals), every prefix length of a few, and all-NaN runs.
    #[test]
    fn typed_folds_match_value_by_value() {
        let reference = |order: Order, values: &[u8]| order.fold_each(values);
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut bytes = Vec::new();
        for i in 0..4096u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let special = [
                0u64,
                1 << 63,
                0x7FF0_0000_0000_0000,
                0xFFF0_0000_0000_0000,
                0x7FF8_0000_0000_0001,
                0xFFF8_0000_0000_0000,
                1,
                0x8000_0000_0000_0001,
                0x7F80_0000,
                0xFF80_0001,
                0x7FC0_0000_7FC0_0000,
            ];
            let v = if i % 5 == 0 {
                special[(x % 11) as usize]
            } else {
                x
            };
            bytes.extend_from_slice(&v.to_le_bytes());
        }
        let nans: Vec<u8> = [0x7FF8_0000_0000_0000u64, 0xFFF0_0000_0000_0001]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        for order in [
            Order::F32,
            Order::F64,
            Order::Signed(4),
            Order::Signed(8),
            Order::Unsigned(4),
            Order::Unsigned(8),
        ] {
            for len in [0, 8, 16, 24, 800, bytes.len()] {
                let values = &bytes[..len];
                let (a, b) = (order.fold(values), reference(order, values));
                assert_eq!(a, b, "{order:?} {len}");
                // Equal by total order is equal bits: the extremes' bytes match too.
                assert_eq!(
                    a.min.map(|v| order.bytes(v)),
                    b.min.map(|v| order.bytes(v)),
                    "{order:?} {len}"
                );
            }
            let (a, b) = (order.fold(&nans), reference(order, &nans));
            assert_eq!(a, b, "{order:?} NaNs");
        }
    }

    #[test]
    fn floats_ignore_nan_and_order_signed_zeros() {
        let a = Float32Array::from(vec![
            Some(f32::NAN),
            Some(0.0),
            None,
            Some(-0.0),
            Some(2.5),
            Some(-1.5),
        ]);
        let stats = PageStats::of(&a);
        assert_eq!(stats.min, Some(StatValue::Float(-1.5)));
        assert_eq!(stats.max, Some(StatValue::Float(2.5)));
        assert_eq!((stats.null_count, stats.nan_count), (1, 1));
        let proto = stats.to_proto(&DataType::Float32);
        assert_eq!(proto.min.as_deref(), Some(&(-1.5f32).to_le_bytes()[..]));
        assert_eq!(
            PageStats::from_proto(&proto, &DataType::Float32, 6).unwrap(),
            stats
        );
        // -0.0 is below +0.0, and not equal to it.
        assert_ne!(StatValue::Float(-0.0), StatValue::Float(0.0));
        assert_ne!(StatValue::Float(1.0), StatValue::Int(1));
        let zeros = PageStats::of(&Float32Array::from(vec![0.0, -0.0]));
        assert_eq!(
            zeros
                .min
                .map(|v| matches!(v, StatValue::Float(z) if z.is_sign_negative())),
            Some(true)
        );
    }

    #[test]
    fn integers_signed_and_unsigned_round_trip_through_the_footer() {
        let a = Int16Array::from(vec![Some(-300), None, Some(7)]);
        let stats = PageStats::of(&a);
        assert_eq!(
            (stats.min, stats.max),
            (Some(StatValue::Int(-300)), Some(StatValue::Int(7)))
        );
        let proto = stats.to_proto(&DataType::Int16);
        assert_eq!(
            PageStats::from_proto(&proto, &DataType::Int16, 3).unwrap(),
            stats
        );
        let u = UInt64Array::from(vec![u64::MAX, 1]);
        let stats = PageStats::of(&u);
        assert_eq!(stats.max, Some(StatValue::Int(i128::from(u64::MAX))));
        let back = PageStats::from_proto(&stats.to_proto(&DataType::UInt64), &DataType::UInt64, 2);
        assert_eq!(back.unwrap(), stats);
        let shown = PageStats::value_array(StatValue::Int(-300), &DataType::Int16).unwrap();
        assert_eq!(shown.as_ref(), &Int16Array::from(vec![-300]) as &dyn Array);
    }

    #[test]
    fn lying_statistics_are_corrupt() {
        let good = PageStats::of(&Int16Array::from(vec![1, 5])).to_proto(&DataType::Int16);
        let lies = [
            pb::PageStatistics {
                null_count: 3,
                ..good.clone()
            },
            pb::PageStatistics {
                min: Some(vec![1]),
                ..good.clone()
            },
            pb::PageStatistics {
                max: None,
                ..good.clone()
            },
            pb::PageStatistics {
                min: good.max.clone(),
                max: good.min.clone(),
                ..good.clone()
            },
        ];
        for lie in lies {
            assert!(
                PageStats::from_proto(&lie, &DataType::Int16, 2).is_err(),
                "{lie:?}"
            );
        }
        let nan = pb::PageStatistics {
            min: Some(f32::NAN.to_le_bytes().to_vec()),
            max: Some(f32::NAN.to_le_bytes().to_vec()),
            null_count: 0,
            nan_count: 0,
        };
        assert!(PageStats::from_proto(&nan, &DataType::Float32, 2).is_err());
    }

    #[test]
    fn pruning_keeps_every_page_that_may_match() {
        let stats = PageStats::of(&Int16Array::from(vec![10, 20]));
        let v = |x| Some(StatValue::Int(x));
        assert!(stats.may_contain(v(15), v(16)));
        assert!(stats.may_contain(v(20), None));
        assert!(stats.may_contain(None, v(10)));
        assert!(!stats.may_contain(v(21), None));
        assert!(!stats.may_contain(None, v(9)));
        let nulls = PageStats::of(&Int16Array::from(vec![None, None]));
        assert!(!nulls.may_contain(None, None));
        let nan = PageStats::of(&Float32Array::from(vec![f32::NAN, 1.0]));
        assert!(nan.may_contain(Some(StatValue::Float(5.0)), None));
        assert!(!nan.may_contain(Some(StatValue::Float(5.0)), Some(StatValue::Float(6.0))));
    }
}
