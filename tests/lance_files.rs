//! Lance files: the ones pylance 14.0.2 wrote (vendored in `tests/lance/`, made by
//! `tests/lance/generate.py`) read bit for bit, and the ones miniblock writes read back.

use std::fs::File;
use std::io::Cursor;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Float64Type};
use arrow_array::{Array, ArrayRef, Float32Array, Float64Array, RecordBatch};
use arrow_buffer::NullBuffer;
use arrow_schema::{DataType, Field, Schema};
use miniblock::encodings::CompressionScheme;
use miniblock::lance::{LanceReader, LanceValues, LanceWriteOptions, LanceWriter};

const ROWS: usize = 5000;

fn f64_values() -> Vec<f64> {
    let bytes = std::fs::read("data/tmy3_Dry_bulb.f64").unwrap();
    bytes[..ROWS * 8]
        .chunks_exact(8)
        .map(|b| f64::from_le_bytes(b.try_into().unwrap()))
        .collect()
}

fn f32_values() -> Vec<f32> {
    let bytes = std::fs::read("data/ferret_coads_climatology_SLP.f32").unwrap();
    bytes[..ROWS * 4]
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
        .collect()
}

/// The generator's null mask: every 7th row and rows 100..300.
fn generator_nulls() -> NullBuffer {
    NullBuffer::from(
        (0..ROWS)
            .map(|i| !(i % 7 == 0 || (100..300).contains(&i)))
            .collect::<Vec<_>>(),
    )
}

fn same_bits(a: &dyn Array, b: &dyn Array) {
    assert_eq!(a.len(), b.len());
    assert_eq!(a.data_type(), b.data_type());
    for i in 0..a.len() {
        assert_eq!(a.is_null(i), b.is_null(i), "null at {i}");
        if a.is_valid(i) {
            match a.data_type() {
                DataType::Float64 => assert_eq!(
                    a.as_primitive::<Float64Type>().value(i).to_bits(),
                    b.as_primitive::<Float64Type>().value(i).to_bits(),
                    "row {i}"
                ),
                DataType::Float32 => assert_eq!(
                    a.as_primitive::<Float32Type>().value(i).to_bits(),
                    b.as_primitive::<Float32Type>().value(i).to_bits(),
                    "row {i}"
                ),
                t => panic!("{t}"),
            }
        }
    }
}

fn expected() -> Vec<ArrayRef> {
    let (f64s, f32s) = (f64_values(), f32_values());
    vec![
        Arc::new(Float64Array::from(f64s.clone())),
        Arc::new(Float32Array::from(f32s.clone())),
        Arc::new(Float64Array::new(f64s.into(), Some(generator_nulls()))),
        Arc::new(Float32Array::new(f32s.into(), Some(generator_nulls()))),
    ]
}

#[test]
fn reads_what_pylance_wrote() {
    let expected = expected();
    for name in ["default", "zstd_bss", "lz4_bss"] {
        for version in ["2.1", "2.2"] {
            let path = format!("tests/lance/{name}_{version}.lance");
            let mut reader = LanceReader::open(File::open(&path).unwrap()).unwrap();
            assert_eq!(reader.num_rows(), ROWS as u64);
            let minor = if version == "2.1" { 1 } else { 2 };
            assert_eq!(reader.version(), (2, minor));
            let names: Vec<_> = reader.fields().iter().map(|f| f.name.clone()).collect();
            assert_eq!(names, ["x64", "x32", "n64", "n32"]);
            for (i, want) in expected.iter().enumerate() {
                let got = reader
                    .read_column(i)
                    .unwrap_or_else(|e| panic!("{path} column {i}: {e}"));
                same_bits(got.as_ref(), want.as_ref());
            }
        }
    }
}
