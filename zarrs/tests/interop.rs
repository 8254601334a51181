//! The `miniblock` zarrs codec: round trips in zarrs by bits, its metadata, hostile
//! configurations, and arrays that zarr-python (with the Python package, from
//! `../.venv-py`) reads after zarrs wrote them and the other way round.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use miniblock_zarrs::{MiniblockCodec, MiniblockCodecConfiguration};
use zarrs::array::{data_type, Array, ArrayBuilder, ArraySubset};
use zarrs::filesystem::FilesystemStore;

fn grid() -> Vec<f32> {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/ferret_coads_climatology_SLP.f32");
    let bytes = std::fs::read(path).unwrap();
    bytes[..12 * 90 * 180 * 4]
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
        .collect()
}

fn bits(values: &[f32]) -> Vec<u32> {
    values.iter().map(|v| v.to_bits()).collect()
}

fn codec(encoding: &str, chunk_values: Option<usize>) -> Arc<MiniblockCodec> {
    Arc::new(
        MiniblockCodec::new(MiniblockCodecConfiguration {
            encoding: encoding.to_owned(),
            chunk_values,
        })
        .unwrap(),
    )
}

fn write_grid(dir: &Path, encoding: &str) -> Vec<f32> {
    let store = Arc::new(FilesystemStore::new(dir).unwrap());
    let array = ArrayBuilder::new(
        vec![12, 90, 180],
        vec![1, 90, 180],
        data_type::float32(),
        0.0f32,
    )
    .array_to_bytes_codec(codec(encoding, None))
    .build(store, "/grid")
    .unwrap();
    array.store_metadata().unwrap();
    let values = grid();
    let all = ArraySubset::new_with_ranges(&[0..12, 0..90, 0..180]);
    array.store_array_subset(&all, values.as_slice()).unwrap();
    values
}

fn read_f32(dir: &Path, subset: &ArraySubset) -> Vec<f32> {
    let store = Arc::new(FilesystemStore::new(dir).unwrap());
    let array = Array::open(store, "/grid").unwrap();
    array.retrieve_array_subset::<Vec<f32>>(subset).unwrap()
}

#[test]
fn zarrs_round_trips_by_bits() {
    let dir = tempfile::tempdir().unwrap();
    let values = write_grid(dir.path(), "auto:0");
    let all = ArraySubset::new_with_ranges(&[0..12, 0..90, 0..180]);
    assert_eq!(bits(&read_f32(dir.path(), &all)), bits(&values));
    // A part of the array: only the Zarr chunks it touches are read and decoded.
    let part = ArraySubset::new_with_ranges(&[3..5, 10..20, 170..180]);
    let got = read_f32(dir.path(), &part);
    let mut expected = Vec::new();
    for t in 3..5 {
        for y in 10..20 {
            expected.extend_from_slice(&values[(t * 90 + y) * 180 + 170..(t * 90 + y) * 180 + 180]);
        }
    }
    assert_eq!(bits(&got), bits(&expected));
    let meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("grid/zarr.json")).unwrap()).unwrap();
    assert_eq!(
        meta["codecs"],
        serde_json::json!([{"name": "miniblock", "configuration": {"encoding": "auto:0"}}])
    );
}

#[test]
fn integers_with_edge_chunks() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(FilesystemStore::new(dir.path()).unwrap());
    let array = ArrayBuilder::new(vec![7, 95], vec![4, 50], data_type::int16(), 0i16)
        .array_to_bytes_codec(codec("delta", Some(256)))
        .build(store.clone(), "/ints")
        .unwrap();
    array.store_metadata().unwrap();
    let values: Vec<i16> = (0..7 * 95).map(|i| (i * 37 % 1000) as i16 - 500).collect();
    let all = ArraySubset::new_with_ranges(&[0..7, 0..95]);
    array.store_array_subset(&all, values.as_slice()).unwrap();
    let array = Array::open(store, "/ints").unwrap();
    assert_eq!(
        array.retrieve_array_subset::<Vec<i16>>(&all).unwrap(),
        values
    );
}

#[test]
fn bad_configurations_are_refused() {
    for bad in [
        r#"{"encoding": "nope"}"#,
        r#"{"encoding": "auto", "chunk_values": 1000}"#,
        r#"{"encoding": "auto", "level": 3}"#,
        r#"{"encoding": 7}"#,
    ] {
        let parsed: Result<MiniblockCodecConfiguration, _> = serde_json::from_str(bad);
        let refused = match parsed {
            Err(_) => true,
            Ok(configuration) => MiniblockCodec::new(configuration).is_err(),
        };
        assert!(refused, "{bad}");
    }
}

#[test]
fn damaged_chunks_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    write_grid(dir.path(), "auto");
    let chunk = dir.path().join("grid/c/4/0/0");
    let mut bytes = std::fs::read(&chunk).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x40;
    std::fs::write(&chunk, bytes).unwrap();
    let store = Arc::new(FilesystemStore::new(dir.path()).unwrap());
    let array = Array::open(store, "/grid").unwrap();
    let damaged = ArraySubset::new_with_ranges(&[4..5, 0..90, 0..180]);
    assert!(array.retrieve_array_subset::<Vec<f32>>(&damaged).is_err());
    let fine = ArraySubset::new_with_ranges(&[5..6, 0..90, 0..180]);
    assert!(array.retrieve_array_subset::<Vec<f32>>(&fine).is_ok());
}

/// The Python environment `bash .ci/python-venv` makes, with the package installed.
fn python() -> Option<PathBuf> {
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.venv-py/bin/python");
    let ok = python.exists()
        && Command::new(&python)
            .args(["-c", "import zarr, miniblock.zarr"])
            .status()
            .is_ok_and(|s| s.success());
    if !ok {
        eprintln!(
            "SKIPPED: zarr-python interop: no ../.venv-py with miniblock and zarr (bash .ci/python-venv makes it)"
        );
    }
    ok.then_some(python)
}

#[test]
fn zarr_python_reads_what_zarrs_wrote() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let values = write_grid(dir.path(), "auto");
    let raw: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    std::fs::write(dir.path().join("expected.f32"), raw).unwrap();
    // A fresh interpreter that never imports miniblock: zarr finds the codec by entry point.
    let code = format!(
        "import sys, zarr, numpy as np\n\
         z = zarr.open_array({store:?}, mode='r')\n\
         e = np.fromfile({expected:?}, dtype='<f4').reshape(12, 90, 180)\n\
         assert z[:].tobytes() == e.tobytes()\n\
         assert z[7, 3:9, 100:110].tobytes() == e[7, 3:9, 100:110].tobytes()\n\
         print(type(z.metadata.codecs[0]).__module__)\n",
        store = dir.path().join("grid").display().to_string(),
        expected = dir.path().join("expected.f32").display().to_string(),
    );
    let out = Command::new(python).args(["-c", &code]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "miniblock.zarr"
    );
}

#[test]
fn zarrs_reads_what_zarr_python_wrote() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let code = format!(
        "import zarr, numpy as np, miniblock.zarr\n\
         a = np.fromfile({data:?}, dtype='<f4')[:12 * 90 * 180].reshape(12, 90, 180)\n\
         z = zarr.create_array({store:?}, shape=a.shape, chunks=(1, 90, 180), dtype='float32',\n\
                               serializer=miniblock.zarr.Miniblock(encoding='alp+ans', chunk_values=2048),\n\
                               compressors=None, fill_value=0.0)\n\
         z[:] = a\n",
        data = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../data/ferret_coads_climatology_SLP.f32")
            .display()
            .to_string(),
        store = dir.path().join("grid").display().to_string(),
    );
    let out = Command::new(python).args(["-c", &code]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let all = ArraySubset::new_with_ranges(&[0..12, 0..90, 0..180]);
    assert_eq!(bits(&read_f32(dir.path(), &all)), bits(&grid()));
    let meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("grid/zarr.json")).unwrap()).unwrap();
    assert_eq!(
        meta["codecs"][0],
        serde_json::json!({"name": "miniblock", "configuration": {"encoding": "alp+ans", "chunk_values": 2048}})
    );
}
