//! Trust: every single-byte change to a real column file is detected, and one file or
//! page decodes from 8 threads at once to identical results.

mod common;

use std::io::Cursor;
use std::path::PathBuf;
use std::sync::Arc;

use arrow_array::{ArrayRef, Float64Array, RecordBatch};
use miniblock::encodings::{MiniBlockCompressor, MiniBlockDecompressor};
use miniblock::file::{FileReader, FileWriter, WriteOptions};
use miniblock::{Encoding, ErrorKind, PageDecoder, PageEncoder};

fn bundled_f64(name: &str) -> Vec<f64> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("data")
        .join(name);
    std::fs::read(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .chunks_exact(8)
        .map(|b| f64::from_le_bytes(b.try_into().unwrap()))
        .collect()
}

fn small_file() -> (Vec<u8>, ArrayRef) {
    let values = bundled_f64("tmy3_Dry_bulb.f64");
    let column: ArrayRef = Arc::new(Float64Array::from_iter(
        values
            .iter()
            .enumerate()
            .map(|(i, v)| (i % 97 != 0).then_some(*v)),
    ));
    let batch = RecordBatch::try_from_iter([("dry_bulb", column.clone())]).unwrap();
    let options = WriteOptions {
        strategy: Encoding::BssLz4.into(),
        page_values: Some(3000),
        ..WriteOptions::default()
    };
    let mut writer = FileWriter::try_new(Vec::new(), batch.schema().as_ref(), options).unwrap();
    writer.write_batch(&batch).unwrap();
    (writer.finish().unwrap(), column)
}

fn read_all(bytes: &[u8]) -> miniblock::Result<ArrayRef> {
    let mut reader = FileReader::open(Cursor::new(bytes))?;
    reader.read_column(0)
}

#[test]
fn every_single_byte_change_is_detected() {
    let (bytes, column) = small_file();
    assert_eq!(read_all(&bytes).unwrap().to_data(), column.to_data());
    for pos in 0..bytes.len() {
        for flip in [0x01u8, 0x80] {
            let mut damaged = bytes.clone();
            damaged[pos] ^= flip;
            let err =
                read_all(&damaged).expect_err(&format!("change at byte {pos} went unnoticed"));
            assert!(
                matches!(
                    err.kind(),
                    ErrorKind::Corrupt | ErrorKind::Truncated | ErrorKind::Unsupported
                ),
                "byte {pos}: {err}"
            );
        }
    }
}

#[test]
fn every_prefix_of_a_file_is_truncated() {
    let (bytes, _) = small_file();
    for cut in 0..bytes.len() {
        let err = read_all(&bytes[..cut]).unwrap_err();
        assert_eq!(
            err.kind(),
            ErrorKind::Truncated,
            "prefix of {cut} bytes: {err}"
        );
    }
}

#[test]
fn codec_types_are_send_and_sync() {
    fn check<T: Send + Sync + ?Sized>() {}
    check::<dyn MiniBlockCompressor>();
    check::<dyn MiniBlockDecompressor>();
    check::<PageEncoder>();
    check::<PageDecoder<'static>>();
    check::<FileReader<Cursor<Vec<u8>>>>();
    check::<FileWriter<Vec<u8>>>();
}

#[test]
fn eight_threads_decode_one_file_and_one_page() {
    let (bytes, column) = small_file();
    let expected = column.to_data();
    let page = PageEncoder::new(Encoding::BssLz4.compressor(64).unwrap())
        .encode(column.as_ref())
        .unwrap();
    let page_bytes = page.to_bytes();
    let decoder = PageDecoder::try_new(&page.encoding, page.num_values, &page_bytes).unwrap();
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..8)
            .map(|t| {
                let (bytes, decoder, expected, column) = (&bytes, &decoder, &expected, &column);
                scope.spawn(move || {
                    for round in 0..20 {
                        // each thread its own reader over the shared bytes
                        assert_eq!(&read_all(bytes).unwrap().to_data(), expected);
                        // one decoder shared by all threads
                        assert_eq!(&decoder.decode().unwrap().to_data(), expected);
                        let c = (t * 7 + round) % decoder.num_chunks();
                        let rows = decoder.chunk_rows(c).unwrap();
                        let chunk = decoder.decode_chunk(c).unwrap();
                        assert_eq!(
                            chunk.to_data(),
                            column.slice(rows.start, rows.len()).to_data()
                        );
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
    });
}
