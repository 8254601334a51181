//! Frames (`miniblock::frame`): the worked example of the docs byte for byte, round trips
//! of every type by bits, golden frames that must decode forever, and hostile frames:
//! every prefix, every byte flipped, headers rewritten with a correct checksum, and a
//! frame claiming 2^40 values, measured by a counting allocator.

mod common;
mod counting;

use std::fs;
use std::path::{Path, PathBuf};

use arrow_array::{Array, Float64Array, TimestampMillisecondArray};
use arrow_schema::{DataType, TimeUnit};
use common::{assert_same_bits, mixed_f32, mixed_f64, special_f32, special_f64, Rng};
use counting::{measure, serial};
use miniblock::encodings::Strategy;
use miniblock::frame::{self, FrameDecoder, FrameOptions, FrameType};
use miniblock::proto::encodings::ArrayEncoding;
use miniblock::proto::frame::FrameHeader;
use miniblock::{Encoding, ErrorKind};
use prost::Message;

fn options(strategy: &str) -> FrameOptions {
    FrameOptions::default().with_strategy(strategy.parse::<Strategy>().unwrap())
}

fn le_bytes<T: Copy, const N: usize>(values: &[T], to: impl Fn(T) -> [u8; N]) -> Vec<u8> {
    values.iter().flat_map(|&v| to(v)).collect()
}

fn decode_all(blob: &[u8]) -> Vec<u8> {
    let frame = FrameDecoder::new(blob).unwrap();
    let n = frame.num_values();
    let width = frame.value_type().value_width().unwrap();
    let mut out = vec![0u8; n * width];
    frame.decode_into(0..n, &mut out).unwrap();
    let grown = frame.decode_values(0..n).unwrap();
    assert_eq!(
        grown.as_slice(),
        &out[..],
        "decode_values and decode_into agree"
    );
    out
}

/// Recomputes the trailing checksum after a deliberate change.
fn reseal(blob: &mut [u8]) {
    let end = blob.len() - 4;
    let crc = miniblock::crc32c(&blob[..end]);
    blob[end..].copy_from_slice(&crc.to_le_bytes());
}

/// A frame whose header is `header` over `page`, sealed with a correct checksum.
fn frame_of(header: &FrameHeader, page: &[u8]) -> Vec<u8> {
    let header = header.encode_to_vec();
    let mut blob = frame::MAGIC.to_vec();
    blob.extend_from_slice(&[frame::VERSION, 0, 0, 0]);
    blob.extend_from_slice(&(header.len() as u32).to_le_bytes());
    blob.extend_from_slice(&header);
    blob.extend_from_slice(page);
    blob.extend_from_slice(&[0; 4]);
    reseal(&mut blob);
    blob
}

/// The header and page parts of a frame this build wrote.
fn split(blob: &[u8]) -> (FrameHeader, Vec<u8>) {
    let h = u32::from_le_bytes(blob[8..12].try_into().unwrap()) as usize;
    let header = FrameHeader::decode(&blob[12..12 + h]).unwrap();
    (header, blob[12 + h..blob.len() - 4].to_vec())
}

#[test]
fn worked_example_bytes() {
    let _serial = serial();
    let values = le_bytes(&[1.0f32, 2.0, 3.0, 4.0], f32::to_le_bytes);
    let blob = frame::encode(
        &values,
        &FrameType::new(DataType::Float32),
        &[4],
        None,
        &options("bss"),
    )
    .unwrap();
    let mut expected: Vec<u8> = vec![
        0x4D, 0x42, 0x46, 0x52, 0x01, 0x00, 0x00, 0x00, // magic, version, reserved
        0x0E, 0x00, 0x00, 0x00, // header length 14
        0x08, 0x01, // value_type FLOAT32
        0x4A, 0x01, 0x04, // shape [4]
        0x50, 0x04, // num_values 4
        0x5A, 0x05, 0xAA, 0x01, 0x02, 0x08, 0x20, // encoding: byte_stream_split, 32 bits
        0x01, 0x00, 0x00, 0x00, // one chunk, narrow table
        0x10, 0x00, 0x00, 0x00, // 16 bytes, last chunk, no flags
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // streams 0 and 1
        0x80, 0x00, 0x40, 0x80, 0x3F, 0x40, 0x40, 0x40, // streams 2 and 3
    ];
    let crc = miniblock::crc32c(&expected);
    expected.extend_from_slice(&crc.to_le_bytes());
    assert_eq!(blob, expected, "the docs' worked example");
    assert_eq!(blob.len(), 54);
    assert_eq!(decode_all(&blob), values);
}

fn round_trip(values: &[u8], value_type: &FrameType, shape: &[u64], strategy: &str) -> Vec<u8> {
    let blob = frame::encode(values, value_type, shape, None, &options(strategy))
        .unwrap_or_else(|e| panic!("{strategy} {value_type:?}: {e}"));
    let frame = FrameDecoder::new(&blob).unwrap();
    assert_eq!(frame.shape(), shape);
    assert_eq!(frame.value_type(), value_type);
    assert_eq!(decode_all(&blob), values, "{strategy} {value_type:?}");
    // A row range decodes to the same bytes as the slice of the whole.
    let width = value_type.value_width().unwrap();
    let n = values.len() / width;
    if n > 10 {
        let rows = n / 3..n / 3 + n / 4;
        let mut out = vec![0u8; rows.len() * width];
        frame.decode_into(rows.clone(), &mut out).unwrap();
        assert_eq!(out, values[rows.start * width..rows.end * width]);
    }
    blob
}

#[test]
fn every_type_round_trips_by_bits() {
    let _serial = serial();
    let mut f32s = special_f32();
    f32s.extend(mixed_f32(5000, 7));
    let mut f64s = special_f64();
    f64s.extend(mixed_f64(3000, 9));
    let mut rng = Rng(0x5eed);
    let ints: Vec<u64> = (0..4099)
        .map(|_| rng.next_u64() >> (rng.next_u64() % 64))
        .collect();
    let bytes64 = le_bytes(&ints, u64::to_le_bytes);
    for strategy in [
        "auto", "auto:0", "plain", "bss+lz4", "bss+zstd", "delta", "dict", "bitpack",
    ] {
        for (dtype, width) in [
            ("<i8", 8),
            ("<u8", 8),
            ("<i4", 4),
            ("<u4", 4),
            ("<i2", 2),
            ("<u2", 2),
            ("|i1", 1),
            ("|u1", 1),
        ] {
            let n = bytes64.len() / 8 * 8 / width;
            let values = &bytes64[..n * width];
            round_trip(
                values,
                &FrameType::from_numpy(dtype).unwrap(),
                &[n as u64],
                strategy,
            );
        }
    }
    for strategy in [
        "auto",
        "auto:0",
        "alp",
        "alp+ans",
        "alp-rd",
        "bss",
        "delta+ans",
        "zstd",
    ] {
        let v32 = le_bytes(&f32s, f32::to_le_bytes);
        round_trip(
            &v32,
            &FrameType::new(DataType::Float32),
            &[f32s.len() as u64],
            strategy,
        );
        let v64 = le_bytes(&f64s, f64::to_le_bytes);
        round_trip(
            &v64,
            &FrameType::new(DataType::Float64),
            &[f64s.len() as u64],
            strategy,
        );
    }
    // Float16, booleans and datetimes in units Arrow has and has not.
    let halves = &bytes64[..2 * 3001];
    round_trip(
        halves,
        &FrameType::from_numpy("<f2").unwrap(),
        &[3001],
        "auto",
    );
    let bools: Vec<u8> = (0..777).map(|i| u8::from(i % 3 == 0)).collect();
    round_trip(
        &bools,
        &FrameType::from_numpy("|b1").unwrap(),
        &[777],
        "auto",
    );
    for dtype in ["<M8[D]", "<M8[ms]", "<m8[10s]", "<M8[ns]", "<m8[Y]"] {
        let t = FrameType::from_numpy(dtype).unwrap();
        let blob = round_trip(&bytes64, &t, &[bytes64.len() as u64 / 8], "auto");
        let frame = FrameDecoder::new(&blob).unwrap();
        assert_eq!(frame.value_type().numpy_dtype().unwrap(), dtype);
    }
    assert_eq!(
        FrameType::from_numpy("<M8[ms]").unwrap().data_type(),
        &DataType::Timestamp(TimeUnit::Millisecond, None)
    );
}

#[test]
fn big_endian_values_come_back_big_endian() {
    let _serial = serial();
    let values: Vec<f64> = mixed_f64(2000, 3);
    let big = le_bytes(&values, f64::to_be_bytes);
    let t = FrameType::from_numpy(">f8").unwrap();
    assert!(t.is_big_endian());
    let blob = round_trip(&big, &t, &[40, 50], "auto");
    // Stored little-endian: the Arrow view gives the numbers themselves.
    let frame = FrameDecoder::new(&blob).unwrap();
    let array = frame.decode_array(0..2000).unwrap();
    assert_same_bits(
        &Float64Array::from(values.clone()),
        &array,
        "big-endian f64 as Arrow",
    );
    // The same numbers little-endian encode to the same page.
    let little = frame::encode(
        &le_bytes(&values, f64::to_le_bytes),
        &FrameType::from_numpy("<f8").unwrap(),
        &[40, 50],
        None,
        &options("auto"),
    )
    .unwrap();
    assert_eq!(split(&blob).1, split(&little).1);
    for dtype in [">i2", ">u4", ">M8[s]", ">f4"] {
        let t = FrameType::from_numpy(dtype).unwrap();
        let width = t.value_width().unwrap();
        let n = big.len() / width;
        round_trip(&big[..n * width], &t, &[n as u64], "auto:0");
    }
}

#[test]
fn shapes_and_empty_arrays() {
    let _serial = serial();
    let v = le_bytes(&mixed_f32(12 * 90 * 18, 1), f32::to_le_bytes);
    round_trip(
        &v,
        &FrameType::new(DataType::Float32),
        &[12, 90, 18],
        "auto",
    );
    round_trip(&[], &FrameType::new(DataType::Float32), &[0], "auto");
    round_trip(&[], &FrameType::new(DataType::Float64), &[3, 0, 7], "bss");
    round_trip(&v[..4], &FrameType::new(DataType::Float32), &[], "auto");
    let err = frame::encode(
        &v,
        &FrameType::new(DataType::Float32),
        &[5, 5],
        None,
        &options("auto"),
    );
    assert_eq!(err.unwrap_err().kind(), ErrorKind::InvalidArgument);
    let too_deep = vec![1u64; frame::MAX_RANK + 1];
    let err = frame::encode(
        &v[..4],
        &FrameType::new(DataType::Float32),
        &too_deep,
        None,
        &options("auto"),
    );
    assert_eq!(err.unwrap_err().kind(), ErrorKind::InvalidArgument);
}

#[test]
fn arrow_arrays_keep_their_nulls_and_types() {
    let _serial = serial();
    let values: Vec<Option<i64>> = (0..3000)
        .map(|i| (i % 7 != 3).then_some(1_600_000_000_000 + i * 1000))
        .collect();
    let array = TimestampMillisecondArray::from(values).with_timezone("Europe/Paris");
    let blob = frame::encode_array(&array, None, &FrameOptions::default()).unwrap();
    let frame = FrameDecoder::new(&blob).unwrap();
    assert!(frame.may_have_nulls(0..3000));
    let back = frame.decode_array(0..3000).unwrap();
    assert_eq!(back.data_type(), array.data_type());
    assert_eq!(back.to_data(), array.to_data(), "timestamps with nulls");
    let part = frame.decode_array(100..200).unwrap();
    assert_eq!(
        part.to_data(),
        array.slice(100, 100).to_data(),
        "a row range"
    );
    // Raw values cannot show nulls: asking for them is an error, rows without any are not.
    let mut out = vec![0u8; 8 * 3000];
    let err = frame.decode_into(0..3000, &mut out).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert!(err.to_string().contains("nulls"), "{err}");
    assert!(frame.decode_values(0..3000).is_err());
    assert_eq!(frame.value_type().numpy_dtype().unwrap(), "<M8[ms]");
    // A sliced array encodes its own rows.
    let sliced = array.slice(5, 50);
    let blob = frame::encode_array(&sliced, None, &FrameOptions::default()).unwrap();
    let back = FrameDecoder::new(&blob)
        .unwrap()
        .decode_array(0..50)
        .unwrap();
    assert_eq!(back.to_data(), sliced.to_data(), "a sliced array");
}

#[test]
fn bad_types_are_refused() {
    let _serial = serial();
    for dtype in [
        "<c8", "|O", "<U4", "|S3", "<f16", "f8", "<f8[ms]", "<M8", "<M8[xs]", "<M8[05s]", ">u1",
        "|f8", "<V8", "",
    ] {
        let err = FrameType::from_numpy(dtype).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{dtype:?}");
    }
    let err = FrameType::new(DataType::Decimal128(10, 2))
        .big_endian(true)
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    let err = frame::encode(
        &[0u8; 3],
        &FrameType::new(DataType::Float32),
        &[1],
        None,
        &options("auto"),
    );
    assert_eq!(err.unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert!("nonsense".parse::<Strategy>().is_err());
}

fn sample_frames() -> Vec<(String, Vec<u8>)> {
    let f64s = le_bytes(&mixed_f64(1500, 11), f64::to_le_bytes);
    let f32s = le_bytes(&mixed_f32(2500, 12), f32::to_le_bytes);
    let mut out = Vec::new();
    for strategy in ["bss+lz4", "alp+ans", "delta", "dict"] {
        out.push((
            format!("f64 {strategy}"),
            frame::encode(
                &f64s,
                &FrameType::new(DataType::Float64),
                &[30, 50],
                None,
                &options(strategy),
            )
            .unwrap(),
        ));
    }
    out.push((
        "f32 auto".to_owned(),
        frame::encode(
            &f32s,
            &FrameType::from_numpy(">f4").unwrap(),
            &[2500],
            None,
            &options("auto"),
        )
        .unwrap(),
    ));
    let array =
        Float64Array::from_iter((0..900).map(|i| (i % 5 != 0).then_some(f64::from(i) * 0.25)));
    out.push((
        "nulls".to_owned(),
        frame::encode_array(&array, None, &options("alp")).unwrap(),
    ));
    out
}

#[test]
fn every_prefix_and_every_flipped_byte_is_an_error() {
    let _serial = serial();
    for (name, blob) in sample_frames() {
        for len in 0..blob.len() {
            assert!(
                FrameDecoder::new(&blob[..len]).is_err(),
                "{name}: prefix of {len} bytes"
            );
        }
        let mut longer = blob.clone();
        longer.push(0);
        assert!(
            FrameDecoder::new(&longer).is_err(),
            "{name}: a byte too many"
        );
        for i in 0..blob.len() {
            let mut damaged = blob.clone();
            damaged[i] ^= 0x41;
            assert!(
                FrameDecoder::new(&damaged).is_err(),
                "{name}: byte {i} flipped"
            );
        }
    }
}

/// Damage behind a correct checksum (a crafted frame): decoding gives an error or some
/// values, never a panic, and allocates no more than a few times the frame's size.
#[test]
fn crafted_frames_never_panic_and_stay_bounded() {
    let serial = serial();
    let mut rng = Rng(0x00c0_ffee);
    for (name, blob) in sample_frames() {
        for _ in 0..3000 {
            let mut damaged = blob.clone();
            let flips = 1 + rng.next_u64() % 3;
            for _ in 0..flips {
                let i = 8 + (rng.next_u64() as usize) % (damaged.len() - 12);
                damaged[i] ^= 1 << (rng.next_u64() % 8);
            }
            reseal(&mut damaged);
            let (peak, _) = measure(&serial, || {
                if let Ok(frame) = FrameDecoder::new(&damaged) {
                    let n = frame.num_values();
                    let _ = frame.decode_values(0..n);
                    let _ = frame.decode_array(0..n);
                    let _ = frame.decode_values(n / 2..n);
                }
            });
            if peak > 64 * damaged.len() + (1 << 20) {
                let diff: Vec<usize> = (0..blob.len()).filter(|&i| blob[i] != damaged[i]).collect();
                let f = FrameDecoder::new(&damaged).unwrap();
                panic!(
                    "{name}: {peak} bytes for a frame of {} (bytes {diff:?} changed; {} values, {:?}, {:?})",
                    damaged.len(), f.num_values(), f.shape(), f.encoding()
                );
            }
        }
    }
}

#[test]
fn a_frame_claiming_2_pow_40_values_allocates_nothing_of_that_size() {
    let serial = serial();
    let values = le_bytes(&mixed_f64(512, 5), f64::to_le_bytes);
    let blob = frame::encode(
        &values,
        &FrameType::new(DataType::Float64),
        &[512],
        None,
        &options("bss"),
    )
    .unwrap();
    let (mut header, page) = split(&blob);
    let huge = 1u64 << 40;
    header.num_values = huge;
    header.shape = vec![huge];
    let lying = frame_of(&header, &page);
    // A chunk table saying so: its single chunk's count is "the page total".
    let mut result = Ok(());
    let (peak, _) = measure(&serial, || {
        result =
            FrameDecoder::new(&lying).and_then(|f| f.decode_values(0..f.num_values()).map(|_| ()));
    });
    assert!(
        result.is_err(),
        "a frame of {} bytes claiming 2^40 values",
        lying.len()
    );
    assert!(peak < 1 << 20, "{peak} bytes allocated");
    // The shape must multiply out to the count, without overflow.
    header.shape = vec![1 << 32, 1 << 32];
    assert_eq!(
        FrameDecoder::new(&frame_of(&header, &page))
            .unwrap_err()
            .kind(),
        ErrorKind::Corrupt
    );
    header.shape = vec![huge / 2];
    assert_eq!(
        FrameDecoder::new(&frame_of(&header, &page))
            .unwrap_err()
            .kind(),
        ErrorKind::Corrupt
    );
}

#[test]
fn crafted_headers_are_corrupt() {
    let _serial = serial();
    let values = le_bytes(&mixed_f32(100, 5), f32::to_le_bytes);
    let blob = frame::encode(
        &values,
        &FrameType::from_numpy("<f4").unwrap(),
        &[100],
        None,
        &options("bss"),
    )
    .unwrap();
    let (header, page) = split(&blob);
    assert!(FrameDecoder::new(&frame_of(&header, &page)).is_ok());
    let cases: Vec<(&str, FrameHeader)> = vec![
        (
            "no encoding",
            FrameHeader {
                encoding: None,
                ..header.clone()
            },
        ),
        (
            "unknown value type",
            FrameHeader {
                value_type: 999,
                ..header.clone()
            },
        ),
        (
            "a type of another width",
            FrameHeader {
                value_type: miniblock::proto::file::ValueType::Float64 as i32,
                numpy_dtype: None,
                ..header.clone()
            },
        ),
        (
            "a numpy dtype against the type",
            FrameHeader {
                numpy_dtype: Some("<i4".into()),
                ..header.clone()
            },
        ),
        (
            "a byte order against the dtype",
            FrameHeader {
                big_endian: true,
                ..header.clone()
            },
        ),
        (
            "a bad numpy dtype",
            FrameHeader {
                numpy_dtype: Some("<f4,<f4".into()),
                ..header.clone()
            },
        ),
        (
            "an empty encoding",
            FrameHeader {
                encoding: Some(ArrayEncoding::default()),
                ..header.clone()
            },
        ),
        (
            "too few values",
            FrameHeader {
                num_values: 99,
                shape: vec![99],
                ..header.clone()
            },
        ),
    ];
    for (what, h) in cases {
        assert!(FrameDecoder::new(&frame_of(&h, &page)).is_err(), "{what}");
    }
    let mut v2 = blob.clone();
    v2[4] = 2;
    reseal(&mut v2);
    assert_eq!(
        FrameDecoder::new(&v2).unwrap_err().kind(),
        ErrorKind::Unsupported
    );
    let mut reserved = blob.clone();
    reserved[6] = 1;
    reseal(&mut reserved);
    assert_eq!(
        FrameDecoder::new(&reserved).unwrap_err().kind(),
        ErrorKind::Corrupt
    );
    let mut long_header = blob.clone();
    long_header[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
    reseal(&mut long_header);
    assert_eq!(
        FrameDecoder::new(&long_header).unwrap_err().kind(),
        ErrorKind::Truncated
    );
}

// Golden frames: written once by `cargo test --test frame -- --ignored write_golden_frames`,
// then frozen; each must decode to the values its recipe makes, forever.

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/frames/v1")
}

/// A golden frame's file name, strategy, numpy dtype, shape and raw values (in the
/// dtype's byte order).
type Recipe = (&'static str, &'static str, &'static str, Vec<u64>, Vec<u8>);

fn golden_recipes() -> Vec<Recipe> {
    let mut f32s = special_f32();
    f32s.extend(mixed_f32(3000, 21));
    let mut f64s = special_f64();
    f64s.extend(mixed_f64(2186, 22));
    let v32 = le_bytes(&f32s, f32::to_le_bytes);
    let v64 = le_bytes(&f64s, f64::to_le_bytes);
    let be64 = le_bytes(&f64s, f64::to_be_bytes);
    let mut rng = Rng(0x901d);
    let i16s: Vec<i16> = (0..5000)
        .scan(0i16, |s, _| {
            *s = s.wrapping_add((rng.next_u64() % 21) as i16 - 10);
            Some(*s)
        })
        .collect();
    let days: Vec<i64> = (0..1000).map(|i| 18_000 + i / 3).collect();
    let bools: Vec<u8> = (0..2048).map(|i| u8::from(i % 5 == 0)).collect();
    vec![
        (
            "f32_bss_worked.mbf",
            "bss",
            "<f4",
            vec![4],
            le_bytes(&[1.0f32, 2.0, 3.0, 4.0], f32::to_le_bytes),
        ),
        ("f32_auto.mbf", "auto", "<f4", vec![3014], v32.clone()),
        ("f32_alp_ans_2d.mbf", "alp+ans", "<f4", vec![11, 274], v32),
        (
            "f64_auto0_3d.mbf",
            "auto:0",
            "<f8",
            vec![2, 10, 110],
            v64.clone(),
        ),
        ("f64_delta_ans.mbf", "delta+ans", "<f8", vec![2200], v64),
        (
            "f64_big_endian_bss_zstd.mbf",
            "bss+zstd",
            ">f8",
            vec![2200],
            be64,
        ),
        (
            "i16_delta.mbf",
            "delta",
            "<i2",
            vec![5000],
            le_bytes(&i16s, i16::to_le_bytes),
        ),
        (
            "datetime64_days_auto.mbf",
            "auto",
            "<M8[D]",
            vec![1000],
            le_bytes(&days, i64::to_le_bytes),
        ),
        ("bool_dict.mbf", "dict", "|b1", vec![32, 64], bools),
        ("empty_f32.mbf", "auto", "<f4", vec![0, 3], Vec::new()),
    ]
}

fn golden_nulls() -> Float64Array {
    Float64Array::from_iter((0..1500).map(|i| (i % 7 != 0).then_some(f64::from(i).sqrt())))
}

#[test]
#[ignore = "writes the golden frames: run once for a new set, then commit them"]
fn write_golden_frames() {
    let _serial = serial();
    let dir = golden_dir();
    fs::create_dir_all(&dir).unwrap();
    for (name, strategy, dtype, shape, values) in golden_recipes() {
        let blob = frame::encode(
            &values,
            &FrameType::from_numpy(dtype).unwrap(),
            &shape,
            None,
            &options(strategy),
        )
        .unwrap();
        fs::write(dir.join(name), blob).unwrap();
    }
    let blob = frame::encode_array(&golden_nulls(), None, &options("alp")).unwrap();
    fs::write(dir.join("f64_nulls_alp.mbf"), blob).unwrap();
}

#[test]
fn golden_frames_decode_forever() {
    let _serial = serial();
    for (name, strategy, dtype, shape, values) in golden_recipes() {
        let blob = fs::read(golden_dir().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        let frame = FrameDecoder::new(&blob).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(frame.shape(), &shape[..], "{name}");
        assert_eq!(frame.value_type().numpy_dtype().unwrap(), dtype, "{name}");
        assert_eq!(decode_all(&blob), values, "{name}");
        if !strategy.starts_with("auto") {
            let expected = strategy.parse::<Encoding>().unwrap();
            assert_eq!(Encoding::of(frame.encoding()), Some(expected), "{name}");
        }
    }
    let blob = fs::read(golden_dir().join("f64_nulls_alp.mbf")).unwrap();
    let array = FrameDecoder::new(&blob)
        .unwrap()
        .decode_array(0..1500)
        .unwrap();
    assert_same_bits(&golden_nulls(), &array, "f64_nulls_alp.mbf");
}

#[test]
fn encoding_is_deterministic() {
    let _serial = serial();
    for (name, strategy, dtype, shape, values) in golden_recipes() {
        let t = FrameType::from_numpy(dtype).unwrap();
        let a = frame::encode(&values, &t, &shape, None, &options(strategy)).unwrap();
        let b = frame::encode(&values, &t, &shape, None, &options(strategy)).unwrap();
        assert_eq!(a, b, "{name}");
    }
}

#[test]
fn chunk_sizes_are_kept() {
    let _serial = serial();
    let values = le_bytes(&mixed_f64(5000, 2), f64::to_le_bytes);
    for chunk_values in [256usize, 1024, 65536] {
        let o = FrameOptions::default()
            .with_chunk_values(Some(chunk_values))
            .unwrap();
        let blob = frame::encode(
            &values,
            &FrameType::new(DataType::Float64),
            &[5000],
            None,
            &o,
        )
        .unwrap();
        let frame = FrameDecoder::new(&blob).unwrap();
        assert_eq!(frame.num_chunks(), 5000usize.div_ceil(chunk_values));
        assert_eq!(decode_all(&blob), values);
    }
    assert!(FrameOptions::default()
        .with_chunk_values(Some(1000))
        .is_err());
}
