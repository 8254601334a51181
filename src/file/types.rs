//! Arrow data types <-> the footer's `Column` type fields.
//!
//! `value_type` names the type; its parameters sit beside it: `time_unit` for times,
//! timestamps and durations, `timezone` for timestamps, `precision`/`scale` for decimals,
//! `byte_width` for fixed-size binaries. Reading treats every field as hostile: an unknown
//! type is unsupported, a parameter out of range is corrupt.

use std::sync::Arc;

use arrow_schema::{DataType, IntervalUnit, TimeUnit};

use crate::error::{Error, Result};
use crate::page::value_width;
use crate::proto::file as pb;

/// Fills `column`'s type fields for `data_type`; types pages cannot hold are refused.
pub(crate) fn set_column_type(column: &mut pb::Column, data_type: &DataType) -> Result<()> {
    use pb::ValueType as V;
    let refuse = || {
        Error::invalid(format!(
            "column {:?} has type {data_type}; miniblock files hold fixed-width columns (floats, integers, temporal, decimals, FixedSizeBinary, booleans)",
            column.name
        ))
    };
    value_width(data_type).map_err(|_| refuse())?;
    let value_type = match data_type {
        DataType::Float16 => V::Float16,
        DataType::Float32 => V::Float32,
        DataType::Float64 => V::Float64,
        DataType::Int8 => V::Int8,
        DataType::Int16 => V::Int16,
        DataType::Int32 => V::Int32,
        DataType::Int64 => V::Int64,
        DataType::UInt8 => V::Uint8,
        DataType::UInt16 => V::Uint16,
        DataType::UInt32 => V::Uint32,
        DataType::UInt64 => V::Uint64,
        DataType::Date32 => V::Date32,
        DataType::Date64 => V::Date64,
        DataType::Time32(unit) => {
            column.time_unit = time_unit(*unit) as i32;
            V::Time32
        }
        DataType::Time64(unit) => {
            column.time_unit = time_unit(*unit) as i32;
            V::Time64
        }
        DataType::Timestamp(unit, tz) => {
            column.time_unit = time_unit(*unit) as i32;
            column.timezone = tz.as_deref().map(str::to_owned);
            V::Timestamp
        }
        DataType::Duration(unit) => {
            column.time_unit = time_unit(*unit) as i32;
            V::Duration
        }
        DataType::Interval(IntervalUnit::YearMonth) => V::IntervalYearMonth,
        DataType::Interval(IntervalUnit::DayTime) => V::IntervalDayTime,
        DataType::Interval(IntervalUnit::MonthDayNano) => V::IntervalMonthDayNano,
        DataType::Decimal32(p, s)
        | DataType::Decimal64(p, s)
        | DataType::Decimal128(p, s)
        | DataType::Decimal256(p, s) => {
            let max = match data_type {
                DataType::Decimal32(..) => 9,
                DataType::Decimal64(..) => 18,
                DataType::Decimal128(..) => 38,
                _ => 76,
            };
            if !(1..=max).contains(p) || !decimal_scale_fits(*p, *s, max) {
                return Err(Error::invalid(format!(
                    "column {:?}: {data_type} has a scale outside -{max}..={p}; such decimals are refused, as query engines cannot compute with them",
                    column.name
                )));
            }
            column.precision = u32::from(*p);
            column.scale = i32::from(*s);
            match data_type {
                DataType::Decimal32(..) => V::Decimal32,
                DataType::Decimal64(..) => V::Decimal64,
                DataType::Decimal128(..) => V::Decimal128,
                _ => V::Decimal256,
            }
        }
        DataType::FixedSizeBinary(w) => {
            column.byte_width = u32::try_from(*w).map_err(|_| refuse())?;
            V::FixedSizeBinary
        }
        DataType::Boolean => V::Boolean,
        _ => return Err(refuse()),
    };
    column.value_type = value_type as i32;
    Ok(())
}

fn time_unit(unit: TimeUnit) -> pb::TimeUnit {
    match unit {
        TimeUnit::Second => pb::TimeUnit::Second,
        TimeUnit::Millisecond => pb::TimeUnit::Millisecond,
        TimeUnit::Microsecond => pb::TimeUnit::Microsecond,
        TimeUnit::Nanosecond => pb::TimeUnit::Nanosecond,
    }
}

/// The Arrow type a footer column records, checked field by field.
pub(crate) fn column_type(c: usize, column: &pb::Column) -> Result<DataType> {
    use pb::ValueType as V;
    let corrupt = |what: String| Error::corrupt(format!("column {c} ({:?}): {what}", column.name));
    let unit = || -> Result<TimeUnit> {
        match pb::TimeUnit::try_from(column.time_unit) {
            Ok(pb::TimeUnit::Second) => Ok(TimeUnit::Second),
            Ok(pb::TimeUnit::Millisecond) => Ok(TimeUnit::Millisecond),
            Ok(pb::TimeUnit::Microsecond) => Ok(TimeUnit::Microsecond),
            Ok(pb::TimeUnit::Nanosecond) => Ok(TimeUnit::Nanosecond),
            Err(_) => Err(corrupt(format!("unknown time unit {}", column.time_unit))),
        }
    };
    let decimal = |max: u8| -> Result<(u8, i8)> {
        let precision = u8::try_from(column.precision)
            .ok()
            .filter(|p| (1..=max).contains(p))
            .ok_or_else(|| corrupt(format!("decimal precision {}", column.precision)))?;
        let scale = i8::try_from(column.scale)
            .ok()
            .filter(|&s| decimal_scale_fits(precision, s, max))
            .ok_or_else(|| {
                corrupt(format!(
                    "decimal scale {} for precision {precision}",
                    column.scale
                ))
            })?;
        Ok((precision, scale))
    };
    let value_type = V::try_from(column.value_type).map_err(|_| {
        Error::unsupported(format!(
            "column {c} ({:?}) has value type {}",
            column.name, column.value_type
        ))
    })?;
    let data_type = match value_type {
        V::Unspecified => return Err(corrupt("no value type".to_owned())),
        V::Float16 => DataType::Float16,
        V::Float32 => DataType::Float32,
        V::Float64 => DataType::Float64,
        V::Int8 => DataType::Int8,
        V::Int16 => DataType::Int16,
        V::Int32 => DataType::Int32,
        V::Int64 => DataType::Int64,
        V::Uint8 => DataType::UInt8,
        V::Uint16 => DataType::UInt16,
        V::Uint32 => DataType::UInt32,
        V::Uint64 => DataType::UInt64,
        V::Date32 => DataType::Date32,
        V::Date64 => DataType::Date64,
        V::Time32 => match unit()? {
            u @ (TimeUnit::Second | TimeUnit::Millisecond) => DataType::Time32(u),
            u => return Err(corrupt(format!("Time32 in {u:?}"))),
        },
        V::Time64 => match unit()? {
            u @ (TimeUnit::Microsecond | TimeUnit::Nanosecond) => DataType::Time64(u),
            u => return Err(corrupt(format!("Time64 in {u:?}"))),
        },
        V::Timestamp => {
            DataType::Timestamp(unit()?, column.timezone.as_deref().map(Arc::<str>::from))
        }
        V::Duration => DataType::Duration(unit()?),
        V::IntervalYearMonth => DataType::Interval(IntervalUnit::YearMonth),
        V::IntervalDayTime => DataType::Interval(IntervalUnit::DayTime),
        V::IntervalMonthDayNano => DataType::Interval(IntervalUnit::MonthDayNano),
        V::Decimal32 => {
            let (p, s) = decimal(9)?;
            DataType::Decimal32(p, s)
        }
        V::Decimal64 => {
            let (p, s) = decimal(18)?;
            DataType::Decimal64(p, s)
        }
        V::Decimal128 => {
            let (p, s) = decimal(38)?;
            DataType::Decimal128(p, s)
        }
        V::Decimal256 => {
            let (p, s) = decimal(76)?;
            DataType::Decimal256(p, s)
        }
        V::FixedSizeBinary => {
            let width = i32::try_from(column.byte_width)
                .ok()
                .filter(|&w| w > 0)
                .ok_or_else(|| corrupt(format!("byte width {}", column.byte_width)))?;
            DataType::FixedSizeBinary(width)
        }
        V::Boolean => DataType::Boolean,
    };
    value_width(&data_type).map_err(|e| corrupt(e.to_string()))?;
    Ok(data_type)
}

/// Whether a decimal of `precision` digits (at most `max`) may have `scale`: at most its
/// precision (Arrow's rule: a scale above it cannot be read back), and at least `-max`
/// (beyond that, powers of ten overflow the type in engines that rescale, as DataFusion's
/// `avg` does).
fn decimal_scale_fits(precision: u8, scale: i8, max: u8) -> bool {
    i16::from(scale) <= i16::from(precision) && i16::from(scale) >= -i16::from(max)
}
