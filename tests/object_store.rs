//! Column files read from object stores (`object_store`'s `InMemory` and
//! `LocalFileSystem`): the same arrays as the file reader gives, each read fetching only
//! what it needs, counted in requests and bytes.
#![cfg(feature = "object-store")]

mod common;

use std::io::Cursor;
use std::sync::Arc;

use arrow_array::{ArrayRef, Float64Array, Int32Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use miniblock::file::{FileReader, FileWriter, ObjectStoreReader, WriteOptions};
use miniblock::{Encoding, ErrorKind};
use object_store::local::LocalFileSystem;
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};

/// A file of two columns: f64 (auto) and dictionary-encoded codes with nulls, in pages
/// of 20,000 rows.
fn file() -> (Vec<u8>, ArrayRef, ArrayRef) {
    let rows = 100_000;
    let x: ArrayRef = Arc::new(Float64Array::from(common::mixed_f64(rows, 7)));
    let codes: ArrayRef = Arc::new(Int32Array::from_iter(
        (0..rows).map(|i| (i % 11 != 4).then_some([3, -8, 1_000_000][i % 3])),
    ));
    let schema = Arc::new(Schema::new(vec![
        Field::new("x", DataType::Float64, false),
        Field::new("code", DataType::Int32, true),
    ]));
    let options = WriteOptions {
        page_values: Some(20_000),
        ..WriteOptions::default()
    };
    let mut writer = FileWriter::try_new(Vec::new(), &schema, options).unwrap();
    writer
        .write_batch(&RecordBatch::try_new(schema, vec![x.clone(), codes.clone()]).unwrap())
        .unwrap();
    (writer.finish().unwrap(), x, codes)
}

async fn reads_match_the_file_reader(store: Arc<dyn ObjectStore>, path: Path, bytes: &[u8]) {
    let (_, x, codes) = file();
    let mut remote = ObjectStoreReader::open(store.clone(), path.clone())
        .await
        .unwrap();
    let mut local = FileReader::open(Cursor::new(bytes.to_vec())).unwrap();
    let opened = remote.fetched();
    assert!(
        opened.requests <= 2 && opened.bytes <= 64 * 1024 + 8,
        "{opened:?}"
    );
    assert_eq!(remote.reader().schema(), local.schema());
    assert_eq!(
        remote.reader().column_stats(1).unwrap(),
        local.column_stats(1).unwrap()
    );
    for (column, expected) in [(0, &x), (1, &codes)] {
        for rows in [
            0..100_000u64,
            10..20,
            19_990..20_010,
            55_555..77_777,
            99_999..100_000,
        ] {
            let before = remote.fetched();
            let got = remote
                .read_column_range(column, rows.clone())
                .await
                .unwrap();
            let want = local.read_column_range(column, rows.clone()).unwrap();
            assert_eq!(got.to_data(), want.to_data(), "{column} {rows:?}");
            assert_eq!(
                got.as_ref(),
                expected
                    .slice(rows.start as usize, (rows.end - rows.start) as usize)
                    .as_ref()
            );
            let spent = remote.fetched();
            println!(
                "column {column} rows {rows:?}: {} request(s), {} bytes",
                spent.requests - before.requests,
                spent.bytes - before.bytes
            );
            // One coalesced call per read; a few rows fetch a chunk or two, not a page.
            if rows.end - rows.start <= 20 {
                assert!(spent.requests - before.requests <= 2, "{rows:?}");
                assert!(spent.bytes - before.bytes <= 3 * 8192, "{rows:?}");
            }
        }
    }
    // A prefetch takes one call (a range per column: their pages lie apart); batches
    // within it take none and read the same rows, and a read outside it fetches for
    // itself.
    let mut remote = ObjectStoreReader::open(store.clone(), path.clone())
        .await
        .unwrap();
    remote.reader().column_stats(0).unwrap();
    let before = remote.fetched();
    remote.prefetch(&[0, 1], 15_000..45_000).await.unwrap();
    let prefetched = remote.fetched();
    assert_eq!(prefetched.requests - before.requests, 2);
    for start in (15_000..45_000).step_by(7_000) {
        let rows = start..(start + 7_000).min(45_000);
        let batch = remote.read_batch(&[1, 0], rows.clone()).await.unwrap();
        let want = local.read_column_range(0, rows.clone()).unwrap();
        assert_eq!(batch.column(1).to_data(), want.to_data(), "{rows:?}");
        let want = local.read_column_range(1, rows.clone()).unwrap();
        assert_eq!(batch.column(0).to_data(), want.to_data(), "{rows:?}");
    }
    assert_eq!(remote.fetched(), prefetched);
    let got = remote.read_column_range(0, 80_000..81_000).await.unwrap();
    let want = local.read_column_range(0, 80_000..81_000).unwrap();
    assert_eq!(got.to_data(), want.to_data());
    assert_eq!(remote.fetched().requests, prefetched.requests + 1);
    // Past the file's rows or columns: an error, no request.
    let after = remote.fetched();
    assert!(remote.prefetch(&[0], 99_000..100_001).await.is_err());
    assert!(remote.prefetch(&[2], 0..10).await.is_err());
    assert_eq!(remote.fetched(), after);

    // A column of 1 of 2 reads none of the other's bytes.
    let mut remote = ObjectStoreReader::open(store, path).await.unwrap();
    let opened = remote.fetched().bytes;
    remote.read_column(1).await.unwrap();
    let code_bytes = remote.reader().column_bytes(1).unwrap();
    let x_bytes = remote.reader().column_bytes(0).unwrap();
    assert_eq!(remote.reader().column_bytes(2), None);
    let spent = remote.fetched().bytes - opened;
    assert!(
        spent >= code_bytes && spent < code_bytes + x_bytes / 4,
        "{spent} {code_bytes}"
    );
}

#[tokio::test]
async fn in_memory_store() {
    let (bytes, _, _) = file();
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let path = Path::from("tables/t.mb");
    store.put(&path, bytes.clone().into()).await.unwrap();
    reads_match_the_file_reader(store.clone(), path, &bytes).await;
    // Missing objects and objects that are not column files are errors.
    let err = ObjectStoreReader::open(store.clone(), Path::from("nope.mb"))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    let cut = Path::from("cut.mb");
    store
        .put(&cut, bytes[..bytes.len() - 5].to_vec().into())
        .await
        .unwrap();
    let err = ObjectStoreReader::open(store, cut).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Truncated, "{err}");
}

#[tokio::test]
async fn local_file_system_store() {
    let (bytes, _, _) = file();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("t.mb"), &bytes).unwrap();
    let store: Arc<dyn ObjectStore> =
        Arc::new(LocalFileSystem::new_with_prefix(dir.path()).unwrap());
    reads_match_the_file_reader(store, Path::from("t.mb"), &bytes).await;
}

/// A local read of more than 8 MiB goes to tokio's blocking threads, smaller ones are
/// read where asked: both give the file reader's values, by bits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_reads_large_and_small() {
    let rows = 1_600_000usize;
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    // Random mantissas, -0.0 and a NaN payload: the column stays over 9 MiB.
    let values: Vec<f64> = (0..rows)
        .map(|i| match i % 1000 {
            0 => -0.0,
            1 => f64::from_bits(0x7ff8_0000_0000_0bad),
            _ => {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                f64::from_bits(x & !(0x7ff << 52) | (0x3ff << 52))
            }
        })
        .collect();
    let array: ArrayRef = Arc::new(Float64Array::from(values));
    let schema = Arc::new(Schema::new(vec![Field::new("x", DataType::Float64, false)]));
    let mut writer = FileWriter::try_new(Vec::new(), &schema, WriteOptions::default()).unwrap();
    writer
        .write_batch(&RecordBatch::try_new(schema, vec![array.clone()]).unwrap())
        .unwrap();
    let bytes = writer.finish().unwrap();
    assert!(bytes.len() > 9 << 20, "{} bytes", bytes.len());
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("big.mb"), &bytes).unwrap();
    let store: Arc<dyn ObjectStore> =
        Arc::new(LocalFileSystem::new_with_prefix(dir.path()).unwrap());
    let mut remote = ObjectStoreReader::open(store, Path::from("big.mb"))
        .await
        .unwrap();
    let bits = |a: &ArrayRef| {
        let a = a.as_any().downcast_ref::<Float64Array>().unwrap();
        a.values().iter().map(|v| v.to_bits()).collect::<Vec<_>>()
    };
    let opened = remote.fetched();
    let whole = remote.read_column(0).await.unwrap();
    let fetched = remote.fetched();
    assert_eq!(fetched.requests - opened.requests, 1, "one coalesced range");
    assert!(fetched.bytes - opened.bytes > 8 << 20, "{fetched:?}");
    assert_eq!(bits(&whole), bits(&array));
    let part = remote.read_column_range(0, 600_000..610_000).await.unwrap();
    assert_eq!(bits(&part), bits(&array.slice(600_000, 10_000)));
}

/// A footer larger than the 64 KiB the first request reads: a second request fetches
/// the rest.
#[tokio::test]
async fn footers_past_the_first_request() {
    let columns: Vec<ArrayRef> = (0..300)
        .map(|c| Arc::new(Int32Array::from_iter_values((0..2000).map(move |i| i * c))) as ArrayRef)
        .collect();
    let schema = Arc::new(Schema::new(
        (0..300)
            .map(|c| Field::new(format!("c{c}"), DataType::Int32, false))
            .collect::<Vec<_>>(),
    ));
    let options = WriteOptions {
        page_values: Some(100),
        ..WriteOptions::default()
    }
    .with_strategy(Encoding::Bitpack);
    let mut writer = FileWriter::try_new(Vec::new(), &schema, options).unwrap();
    writer
        .write_batch(&RecordBatch::try_new(schema, columns.clone()).unwrap())
        .unwrap();
    let bytes = writer.finish().unwrap();
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let path = Path::from("wide.mb");
    store.put(&path, bytes.into()).await.unwrap();
    let mut remote = ObjectStoreReader::open(store, path).await.unwrap();
    assert_eq!(
        remote.fetched().requests,
        3,
        "header, tail, the footer's start"
    );
    let got = remote.read_column_range(299, 150..170).await.unwrap();
    assert_eq!(got.as_ref(), columns[299].slice(150, 20).as_ref());
}

/// A scan through the object store with a filter on a sorted column and a projection:
/// the pages the statistics rule out are never fetched, nor the columns left out (the
/// shape of #16's floors, at 10 columns of 200,000 rows).
#[tokio::test]
async fn pruned_and_projected_batches_fetch_a_few_percent() {
    use miniblock::file::{StatValue, StatsFilter};
    let rows = 200_000usize;
    let mut columns: Vec<ArrayRef> = vec![Arc::new(Int32Array::from_iter_values(
        (0..200_000).map(|i| 2 * i),
    ))];
    for c in 1..10 {
        columns.push(Arc::new(Float64Array::from(common::mixed_f64(rows, c))));
    }
    let schema = Arc::new(Schema::new(
        (0..10)
            .map(|c| {
                let t = if c == 0 {
                    DataType::Int32
                } else {
                    DataType::Float64
                };
                Field::new(format!("c{c}"), t, false)
            })
            .collect::<Vec<_>>(),
    ));
    let options = WriteOptions {
        page_values: Some(2_000),
        ..WriteOptions::default()
    };
    let mut writer = FileWriter::try_new(Vec::new(), &schema, options).unwrap();
    writer
        .write_batch(&RecordBatch::try_new(schema, columns.clone()).unwrap())
        .unwrap();
    let bytes = writer.finish().unwrap();
    let total = bytes.len() as u64;
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let path = Path::from("wide.mb");
    store.put(&path, bytes.into()).await.unwrap();

    // c0 from 100,000 to 103,000: 1 of the 100 pages of each column (rows 50,000..52,000).
    let mut remote = ObjectStoreReader::open(store.clone(), path.clone())
        .await
        .unwrap();
    let opened = remote.fetched().bytes;
    let filter = StatsFilter {
        column: 0.into(),
        min: Some(StatValue::Int(100_000)),
        max: Some(StatValue::Int(103_000)),
    };
    let ranges = remote
        .reader()
        .matching_rows(&filter, 0..rows as u64)
        .unwrap();
    assert_eq!(ranges.len(), 1);
    assert_eq!(ranges[0], 50_000..52_000);
    let mut got = 0;
    for range in ranges {
        let batch = remote.read_batch(&[0, 3], range.clone()).await.unwrap();
        assert_eq!(batch.schema().field(1).name(), "c3");
        assert_eq!(
            batch.column(1).as_ref(),
            columns[3].slice(range.start as usize, 2_000).as_ref()
        );
        got += batch.num_rows();
    }
    assert_eq!(got, 2_000);
    let pruned = remote.fetched().bytes - opened;
    println!("pruned: {pruned} of {total} bytes");
    assert!(pruned * 100 <= total * 3, "{pruned} of {total}");

    // One column of ten, whole: its own pages only.
    let mut remote = ObjectStoreReader::open(store, path).await.unwrap();
    let opened = remote.fetched().bytes;
    let batch = remote.read_batch(&[5], 0..rows as u64).await.unwrap();
    assert_eq!(batch.column(0).as_ref(), columns[5].as_ref());
    let projected = remote.fetched().bytes - opened;
    println!("projected: {projected} of {total} bytes");
    assert!(projected * 100 <= total * 15, "{projected} of {total}");
}
