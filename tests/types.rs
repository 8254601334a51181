//! Every fixed-width Arrow type through pages and column files, by bits; chunk sizes from
//! 256 to 65536 values (wide chunk tables); Zstd; `auto`.

mod common;

use std::io::Cursor;
use std::sync::Arc;

use arrow_array::types::{
    Date32Type, Date64Type, Decimal128Type, Decimal256Type, DurationMicrosecondType, Float16Type,
    Int16Type, Int32Type, Int64Type, Int8Type, IntervalMonthDayNanoType, Time32MillisecondType,
    Time64NanosecondType, TimestampNanosecondType, UInt16Type, UInt32Type, UInt64Type, UInt8Type,
};
use arrow_array::{make_array, Array, ArrayRef, FixedSizeBinaryArray, PrimitiveArray, RecordBatch};
use arrow_buffer::{MutableBuffer, NullBuffer};
use arrow_data::ArrayData;
use arrow_schema::{DataType, Field, IntervalUnit, Schema, TimeUnit};
use miniblock::encodings::{AutoOptions, EncoderOptions, Strategy};
use miniblock::file::{FileReader, FileWriter, WriteOptions};
use miniblock::page::{value_width, ChunkTableFormat};
use miniblock::proto::encodings::array_encoding;
use miniblock::{Encoding, ErrorKind, PageDecoder, PageEncoder};

/// Every fixed-width type the format covers.
fn types() -> Vec<DataType> {
    vec![
        DataType::Float16,
        DataType::Float32,
        DataType::Float64,
        DataType::Int8,
        DataType::Int16,
        DataType::Int32,
        DataType::Int64,
        DataType::UInt8,
        DataType::UInt16,
        DataType::UInt32,
        DataType::UInt64,
        DataType::Date32,
        DataType::Date64,
        DataType::Time32(TimeUnit::Second),
        DataType::Time32(TimeUnit::Millisecond),
        DataType::Time64(TimeUnit::Microsecond),
        DataType::Time64(TimeUnit::Nanosecond),
        DataType::Timestamp(TimeUnit::Nanosecond, Some("Europe/Paris".into())),
        DataType::Timestamp(TimeUnit::Second, None),
        DataType::Duration(TimeUnit::Microsecond),
        DataType::Interval(IntervalUnit::YearMonth),
        DataType::Interval(IntervalUnit::DayTime),
        DataType::Interval(IntervalUnit::MonthDayNano),
        DataType::Decimal32(9, 2),
        DataType::Decimal64(18, -3),
        DataType::Decimal128(38, 10),
        DataType::Decimal256(76, 20),
        DataType::FixedSizeBinary(1),
        DataType::FixedSizeBinary(5),
        DataType::FixedSizeBinary(37),
    ]
}

/// `len` values of `data_type` from a deterministic byte pattern (smooth in the low
/// bytes, so compressors have something to do), nulls at every `null_every`-th row.
fn array(data_type: &DataType, len: usize, null_every: Option<usize>, seed: u64) -> ArrayRef {
    let width = value_width(data_type).unwrap();
    let mut state = seed | 1;
    let bytes: Vec<u8> = (0..len * width)
        .map(|i| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            if i % width == 0 {
                (i / width / 3) as u8
            } else {
                state as u8
            }
        })
        .collect();
    let nulls = null_every.map(|k| NullBuffer::from_iter((0..len).map(|i| i % k != 1)));
    let mut buffer = MutableBuffer::new(bytes.len());
    buffer.extend_from_slice(&bytes);
    make_array(
        ArrayData::builder(data_type.clone())
            .len(len)
            .add_buffer(buffer.into())
            .nulls(nulls)
            .build()
            .unwrap(),
    )
}

/// The values' bytes under valid slots (and zero under nulls, as stored).
fn masked_bytes(array: &dyn Array) -> Vec<u8> {
    let data = array.to_data();
    let width = value_width(array.data_type()).unwrap();
    let bytes = &data.buffers()[0].as_slice()[data.offset() * width..][..data.len() * width];
    bytes
        .chunks_exact(width)
        .enumerate()
        .flat_map(|(i, v)| {
            if array.is_valid(i) {
                v.to_vec()
            } else {
                vec![0; width]
            }
        })
        .collect()
}

fn strategies(width: usize) -> Vec<Strategy> {
    let mut all: Vec<Strategy> = Encoding::ALL
        .into_iter()
        .filter(|e| e.supports_width(width))
        .map(Strategy::from)
        .collect();
    all.push("auto".parse().unwrap());
    all.push(Strategy::Auto(
        AutoOptions::default()
            .with_candidates(&Encoding::ALL)
            .unwrap()
            .with_min_gain(0.0)
            .unwrap(),
    ));
    all
}

#[test]
fn every_fixed_width_type_round_trips_by_bits() {
    for data_type in types() {
        let width = value_width(&data_type).unwrap();
        for (len, nulls) in [(0, None), (1, Some(2)), (3001, None), (3001, Some(7))] {
            let input = array(&data_type, len, nulls, len as u64 + width as u64);
            for strategy in strategies(width) {
                for chunk in [None, Some(256), Some(65536)] {
                    let options = EncoderOptions::default().with_chunk_values(chunk).unwrap();
                    let page = PageEncoder::for_strategy(strategy, width, &options)
                        .unwrap()
                        .encode(input.as_ref())
                        .unwrap();
                    let bytes = page.to_bytes();
                    let decoder = PageDecoder::try_new(&page.encoding, page.num_values, &bytes)
                        .unwrap()
                        .with_data_type(&data_type)
                        .unwrap();
                    let what = format!("{data_type} {strategy} chunk {chunk:?} len {len}");
                    let back = decoder.decode().unwrap();
                    assert_eq!(back.data_type(), &data_type, "{what}");
                    assert_eq!(back.to_data(), input.to_data(), "{what}");
                    assert_eq!(
                        masked_bytes(back.as_ref()),
                        masked_bytes(input.as_ref()),
                        "{what}"
                    );
                    // a range across chunk boundaries
                    if len > 600 {
                        let part = decoder.decode_range(255..600).unwrap();
                        assert_eq!(part.to_data(), input.slice(255, 345).to_data(), "{what}");
                    }
                }
            }
        }
    }
}

#[test]
fn float16_keeps_every_bit_pattern() {
    // All 65536 half-precision patterns: NaN payloads, -0.0, subnormals.
    let values: Vec<u16> = (0..=u16::MAX).collect();
    let input: ArrayRef = Arc::new(PrimitiveArray::<Float16Type>::from_iter_values(
        values.iter().map(|&b| half_from_bits(b)),
    ));
    for encoding in Encoding::ALL {
        if !encoding.supports_width(2) {
            assert!(miniblock::encode_page(input.as_ref(), encoding).is_err());
            continue;
        }
        let page = miniblock::encode_page(input.as_ref(), encoding).unwrap();
        let back = page.decoder(&DataType::Float16).unwrap().decode().unwrap();
        let back = back
            .as_any()
            .downcast_ref::<PrimitiveArray<Float16Type>>()
            .unwrap();
        let bits: Vec<u16> = back.values().iter().map(|v| v.to_bits()).collect();
        assert_eq!(bits, values, "{encoding}");
    }
}

fn half_from_bits(bits: u16) -> <Float16Type as arrow_array::ArrowPrimitiveType>::Native {
    <Float16Type as arrow_array::ArrowPrimitiveType>::Native::from_bits(bits)
}

#[test]
fn a_file_of_every_type_reads_back_with_its_schema() {
    let fields: Vec<Field> = types()
        .iter()
        .enumerate()
        .map(|(i, t)| Field::new(format!("c{i}"), t.clone(), i % 2 == 0))
        .collect();
    let schema = Arc::new(Schema::new(fields));
    let columns: Vec<ArrayRef> = types()
        .iter()
        .enumerate()
        .map(|(i, t)| array(t, 5000, (i % 2 == 0).then_some(11), i as u64 + 1))
        .collect();
    let batch = RecordBatch::try_new(schema.clone(), columns).unwrap();
    for strategy in ["auto", "bss+zstd", "plain"] {
        let options = WriteOptions {
            page_values: Some(1700),
            ..WriteOptions::default()
        }
        .with_strategy(strategy.parse::<Strategy>().unwrap());
        let mut writer = FileWriter::try_new(Vec::new(), &schema, options).unwrap();
        writer.write_batch(&batch).unwrap();
        let bytes = writer.finish().unwrap();
        let mut reader = FileReader::open(Cursor::new(bytes)).unwrap();
        assert_eq!(reader.schema().as_ref(), schema.as_ref());
        for (i, expected) in batch.columns().iter().enumerate() {
            assert_eq!(
                reader.read_column(i).unwrap().to_data(),
                expected.to_data(),
                "{strategy} {}",
                schema.field(i)
            );
            let part = reader.read_column_range(i, 1650..1800).unwrap();
            assert_eq!(part.to_data(), expected.slice(1650, 150).to_data());
        }
    }
}

#[test]
fn typed_arrays_keep_their_type_through_a_file() {
    // A few types built the ordinary way, compared as typed arrays.
    let columns: Vec<(&str, ArrayRef)> = vec![
        (
            "i8",
            Arc::new(PrimitiveArray::<Int8Type>::from(vec![-128, 0, 127])),
        ),
        (
            "i16",
            Arc::new(PrimitiveArray::<Int16Type>::from(vec![
                i16::MIN,
                1,
                i16::MAX,
            ])),
        ),
        (
            "i32",
            Arc::new(PrimitiveArray::<Int32Type>::from(vec![
                Some(-1),
                None,
                Some(3),
            ])),
        ),
        (
            "i64",
            Arc::new(PrimitiveArray::<Int64Type>::from(vec![
                i64::MIN,
                0,
                i64::MAX,
            ])),
        ),
        (
            "u8",
            Arc::new(PrimitiveArray::<UInt8Type>::from(vec![0, 1, 255])),
        ),
        (
            "u16",
            Arc::new(PrimitiveArray::<UInt16Type>::from(vec![0, 1, u16::MAX])),
        ),
        (
            "u32",
            Arc::new(PrimitiveArray::<UInt32Type>::from(vec![0, 1, u32::MAX])),
        ),
        (
            "u64",
            Arc::new(PrimitiveArray::<UInt64Type>::from(vec![0, 1, u64::MAX])),
        ),
        (
            "d32",
            Arc::new(PrimitiveArray::<Date32Type>::from(vec![0, 19_000, -1])),
        ),
        (
            "d64",
            Arc::new(PrimitiveArray::<Date64Type>::from(vec![0, 1 << 40, -1])),
        ),
        (
            "t32",
            Arc::new(PrimitiveArray::<Time32MillisecondType>::from(vec![
                0, 1000, 86_399_999,
            ])),
        ),
        (
            "t64",
            Arc::new(PrimitiveArray::<Time64NanosecondType>::from(vec![0, 1, 2])),
        ),
        (
            "ts",
            Arc::new(
                PrimitiveArray::<TimestampNanosecondType>::from(vec![0, 1, i64::MAX])
                    .with_timezone("UTC"),
            ),
        ),
        (
            "dur",
            Arc::new(PrimitiveArray::<DurationMicrosecondType>::from(vec![
                -5, 0, 5,
            ])),
        ),
        (
            "mdn",
            Arc::new(PrimitiveArray::<IntervalMonthDayNanoType>::from(vec![
                arrow_array::types::IntervalMonthDayNano::new(1, 2, 3),
                arrow_array::types::IntervalMonthDayNano::new(-1, 0, i64::MAX),
                arrow_array::types::IntervalMonthDayNano::new(0, 0, 0),
            ])),
        ),
        (
            "dec128",
            Arc::new(
                PrimitiveArray::<Decimal128Type>::from(vec![12_345, -1, i128::MAX])
                    .with_precision_and_scale(38, 3)
                    .unwrap(),
            ),
        ),
        (
            "dec256",
            Arc::new(
                PrimitiveArray::<Decimal256Type>::from(vec![
                    arrow_buffer::i256::from_i128(-7),
                    arrow_buffer::i256::MAX,
                    arrow_buffer::i256::ZERO,
                ])
                .with_precision_and_scale(76, 0)
                .unwrap(),
            ),
        ),
        (
            "fsb",
            Arc::new(
                FixedSizeBinaryArray::try_from_sparse_iter_with_size(
                    [Some(b"abcde".to_vec()), None, Some(b"vwxyz".to_vec())].into_iter(),
                    5,
                )
                .unwrap(),
            ),
        ),
    ];
    let batch = RecordBatch::try_from_iter(columns.clone()).unwrap();
    let mut writer =
        FileWriter::try_new(Vec::new(), batch.schema().as_ref(), WriteOptions::default()).unwrap();
    writer.write_batch(&batch).unwrap();
    let mut reader = FileReader::open(Cursor::new(writer.finish().unwrap())).unwrap();
    for (i, (name, expected)) in columns.iter().enumerate() {
        let back = reader.read_column(i).unwrap();
        assert_eq!(&back, expected, "{name}");
    }
}

#[test]
fn large_chunks_use_wide_chunk_tables() {
    let data_type = DataType::Float64;
    let input = array(&data_type, 200_000, Some(1000), 9);
    let options = EncoderOptions::default()
        .with_chunk_values(Some(65536))
        .unwrap();
    let page = PageEncoder::for_strategy(Encoding::Bss.into(), 8, &options)
        .unwrap()
        .encode(input.as_ref())
        .unwrap();
    // 65536 values of 8 bytes and a validity bitmap: past u16.
    assert_eq!(page.chunks.len(), 4);
    assert_eq!(page.chunks[0].num_bytes, 65536 * 8 + 65536 / 8);
    assert_eq!(page.chunks[0].log_num_values, 16);
    assert_eq!(page.table_format(), ChunkTableFormat::Wide);
    assert_eq!(page.chunk_table().len(), 4 * 8);
    let bytes = page.to_bytes();
    assert_eq!(
        bytes[3] & 0x80,
        0x80,
        "the header's bit 31 marks a wide table"
    );
    let decoder = PageDecoder::try_new(&page.encoding, page.num_values, &bytes).unwrap();
    assert_eq!(decoder.decode().unwrap().to_data(), input.to_data());
    assert_eq!(decoder.chunk_rows(1).unwrap(), 65536..131_072);
    // The same table read as narrow entries is refused, not misread.
    let err = PageDecoder::from_parts(
        &page.encoding,
        &page.buffer_slices(),
        page.num_values,
        &page.chunk_table(),
        ChunkTableFormat::Narrow,
        &page.data,
    )
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Corrupt, "{err}");
    // Small chunks keep 4-byte entries.
    let small = PageEncoder::for_strategy(Encoding::Bss.into(), 8, &EncoderOptions::default())
        .unwrap()
        .encode(input.as_ref())
        .unwrap();
    assert_eq!(small.table_format(), ChunkTableFormat::Narrow);
}

#[test]
fn chunk_sizes_outside_256_to_65536_values_are_refused() {
    for n in [0, 1, 128, 255, 300, 1000, 131_072] {
        let err = EncoderOptions::default()
            .with_chunk_values(Some(n))
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{n}");
    }
    for n in [256, 512, 1024, 4096, 65536] {
        EncoderOptions::default()
            .with_chunk_values(Some(n))
            .unwrap();
    }
}

#[test]
fn zstd_records_its_level_and_round_trips() {
    let input = array(&DataType::Float32, 10_000, None, 3);
    for level in [-5, 1, 3, 19] {
        let options = EncoderOptions::default().with_zstd_level(level).unwrap();
        let page = PageEncoder::for_strategy(Encoding::BssZstd.into(), 4, &options)
            .unwrap()
            .encode(input.as_ref())
            .unwrap();
        let Some(array_encoding::ArrayEncoding::GeneralMiniBlock(general)) =
            &page.encoding.array_encoding
        else {
            panic!("bss+zstd is a general_mini_block");
        };
        let compression = general.compression.as_ref().unwrap();
        assert_eq!(compression.scheme, "zstd");
        assert_eq!(compression.level, Some(level));
        assert_eq!(page.encoding_kind(), Some(Encoding::BssZstd));
        assert!(page
            .chunks
            .iter()
            .any(|c| c.storage == miniblock::encodings::ChunkStorage::Compressed));
        let back = page.decoder(&DataType::Float32).unwrap().decode().unwrap();
        assert_eq!(back.to_data(), input.to_data());
    }
    assert_eq!(
        EncoderOptions::default()
            .with_zstd_level(1000)
            .unwrap_err()
            .kind(),
        ErrorKind::InvalidArgument
    );
}

#[test]
fn strategies_parse_and_print() {
    for name in [
        "plain",
        "lz4",
        "zstd",
        "bss",
        "bss+lz4",
        "bss+zstd",
        "delta+lz4",
        "delta+zstd",
        "auto",
        "auto:0",
        "auto:0.1",
        "auto:nofill",
        "auto:0.2:nofill",
    ] {
        let strategy: Strategy = name.parse().unwrap();
        assert_eq!(strategy.to_string(), name);
    }
    assert_eq!(
        "BSS+ZSTD".parse::<Strategy>().unwrap().to_string(),
        "bss+zstd"
    );
    let Ok(Strategy::Auto(no_fills)) = "auto:0.2:nofill".parse::<Strategy>() else {
        panic!("not auto")
    };
    assert!(!no_fills.fills());
    assert_eq!("auto:0.03".parse::<Strategy>().unwrap().to_string(), "auto");
    for bad in [
        "",
        "gzip",
        "auto:x",
        "auto:1",
        "auto:-0.5",
        "auto:",
        "auto:nofill:0.2",
        "auto:0.1:0.2",
        "auto:0.1:fill",
    ] {
        let err = bad.parse::<Strategy>().unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{bad}");
    }
    assert_eq!(Strategy::default().to_string(), "auto");
}

#[test]
fn auto_picks_what_the_data_favours() {
    // A smooth series: byte stream split wins, of the values or of their differences
    // (delta), or ALP (its integers delta coded, the last digits as corrections).
    let smooth: ArrayRef = Arc::new(arrow_array::Float64Array::from_iter_values(
        (0..100_000).map(|i| 20.0 + (f64::from(i) / 3000.0).sin()),
    ));
    // Hourly temperatures with few distinct decimal values (the bundled tmy3_Dry_bulb):
    // LZ4/Zstd alone or ALP win, as whole 8-byte values repeat; splitting them does not.
    let bytes = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("data/tmy3_Dry_bulb.f64"),
    )
    .unwrap();
    let dry_bulb: ArrayRef = Arc::new(arrow_array::Float64Array::from_iter_values(
        bytes
            .chunks_exact(8)
            .map(|b| f64::from_le_bytes(b.try_into().unwrap())),
    ));
    let size_only = Strategy::Auto(AutoOptions::default().with_min_gain(0.0).unwrap());
    for (input, splits) in [(&smooth, true), (&dry_bulb, false)] {
        let page = PageEncoder::for_strategy(size_only, 8, &EncoderOptions::default())
            .unwrap()
            .encode(input.as_ref())
            .unwrap();
        let chosen = page.encoding_kind().unwrap();
        let split = chosen.splits() || chosen.is_delta();
        assert_eq!(split || (splits && chosen.is_alp()), splits, "{chosen}");
        // within 2% of the best fixed encoding on this page
        let best = Encoding::ALL
            .iter()
            .map(|&e| {
                miniblock::encode_page(input.as_ref(), e)
                    .unwrap()
                    .encoded_len()
            })
            .min()
            .unwrap();
        assert!(page.encoded_len() as f64 <= best as f64 * 1.02, "{chosen}");
        assert_eq!(
            page.decoder(&DataType::Float64)
                .unwrap()
                .decode()
                .unwrap()
                .to_data(),
            input.to_data()
        );
    }
}

#[test]
fn auto_with_nulls_and_odd_lengths_round_trips() {
    // Trial chunks are reused by the encoder only when they hold no nulls: check both.
    for len in [1, 255, 256, 257, 5000, 70_000] {
        for null_every in [None, Some(3), Some(4000)] {
            let input = array(&DataType::Float32, len, null_every, len as u64);
            let page = miniblock::encode_page(input.as_ref(), Strategy::default()).unwrap();
            let back = page.decoder(&DataType::Float32).unwrap().decode().unwrap();
            assert_eq!(back.to_data(), input.to_data(), "{len} {null_every:?}");
            assert_eq!(masked_bytes(back.as_ref()), masked_bytes(input.as_ref()));
        }
    }
}

#[test]
fn auto_with_only_zstd_candidates_still_tries_them() {
    // Without an LZ4 candidate, nothing may be skipped: both Zstd encodings are tried.
    let input = array(&DataType::Float64, 50_000, None, 5);
    let bytes = input.to_data().buffers()[0].as_slice().to_vec();
    let auto = AutoOptions::default()
        .with_candidates(&[Encoding::Zstd, Encoding::BssZstd])
        .unwrap();
    let chooser =
        miniblock::encodings::AutoChooser::new(8, &EncoderOptions::default(), &auto).unwrap();
    let choice = chooser.choose(&bytes).unwrap();
    assert_eq!(choice.estimates.len(), 2);
    assert!(
        choice.estimates.iter().all(|(_, r)| r.is_some()),
        "{choice:?}"
    );
    assert!(matches!(
        choice.encoding,
        Encoding::Zstd | Encoding::BssZstd
    ));
}

/// Integer and timestamp columns take delta: readings every millisecond with a few
/// microseconds of jitter, as nanoseconds, and a running counter of 32-bit integers.
/// `auto` picks a delta encoding, under three quarters of what byte stream split plus
/// Zstd stores; both read back bit for bit, nulls included.
#[test]
fn timestamps_and_counters_take_delta() {
    let mut x = 0x9E37_79B9_u64;
    let mut next = |range: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % range
    };
    let mut t = 1_700_000_000_000_000_000i64;
    let times: ArrayRef = Arc::new(PrimitiveArray::<TimestampNanosecondType>::from_iter(
        (0..100_000).map(|i| {
            t += 999_000 + next(2_000).cast_signed();
            (i % 97 != 0).then_some(t)
        }),
    ));
    let mut c = 0i32;
    let counters: ArrayRef = Arc::new(PrimitiveArray::<Int32Type>::from_iter_values(
        (0..100_000).map(|_| {
            c += next(40) as i32;
            c
        }),
    ));
    for column in [times, counters] {
        let width = value_width(column.data_type()).unwrap();
        let size_first = Strategy::Auto(AutoOptions::default().with_min_gain(0.0).unwrap());
        let page = PageEncoder::for_strategy(size_first, width, &EncoderOptions::default())
            .unwrap()
            .encode(column.as_ref())
            .unwrap();
        let chosen = page.encoding_kind().unwrap();
        assert!(chosen.is_delta(), "{}: {chosen}", column.data_type());
        let bss = miniblock::encode_page(column.as_ref(), Encoding::BssZstd).unwrap();
        assert!(
            page.encoded_len() * 4 < bss.encoded_len() * 3,
            "{}: {} bytes, bss+zstd {}",
            column.data_type(),
            page.encoded_len(),
            bss.encoded_len()
        );
        let back = page.decoder(column.data_type()).unwrap().decode().unwrap();
        assert_eq!(back.to_data(), column.to_data());
    }
}
