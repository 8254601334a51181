//! Writing outputs without leaving partial files: everything goes to a temporary file in
//! the destination's folder, renamed over the destination only when complete.

use std::io::{BufWriter, Write};
use std::path::Path;

use super::CliError;

/// Runs `write` on a temporary file beside `path` and renames it to `path` on success; on
/// failure the temporary file is removed and `path` is untouched.
pub fn atomic_write<F>(path: &Path, write: F) -> Result<(), CliError>
where
    F: FnOnce(&mut BufWriter<&mut std::fs::File>) -> Result<(), CliError>,
{
    let shown = path.display();
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let mut temp = tempfile::Builder::new()
        .prefix(".miniblock-")
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(|e| CliError::new(format!("cannot create a file in {}: {e}", dir.display())))?;
    {
        let mut writer = BufWriter::new(temp.as_file_mut());
        write(&mut writer)?;
        writer
            .flush()
            .map_err(|e| CliError::new(format!("writing {shown}: {e}")))?;
    }
    temp.persist(path)
        .map_err(|e| CliError::new(format!("cannot write {shown}: {}", e.error)))?;
    Ok(())
}

/// A `.npy` version 1.0 header for a 1-D little-endian float array of `len` values.
pub fn npy_header(descr: &str, len: usize) -> Vec<u8> {
    let mut dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': ({len},), }}");
    // magic (6) + version (2) + length (2) + dict + newline, padded to 64 bytes
    let unpadded = 10 + dict.len() + 1;
    dict.push_str(&" ".repeat(unpadded.next_multiple_of(64) - unpadded));
    dict.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(dict.len() as u16).to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out
}
