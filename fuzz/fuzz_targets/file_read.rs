//! Arbitrary bytes as a column file: opening and reading every column (whole and a range)
//! must return Ok or Err, never panic.
#![no_main]

use std::io::Cursor;

use libfuzzer_sys::fuzz_target;
use miniblock::file::FileReader;

fuzz_target!(|data: &[u8]| {
    for verify in [true, false] {
        let Ok(mut reader) = FileReader::open(Cursor::new(data)) else {
            return;
        };
        reader.set_verify_checksums(verify);
        let rows = reader.num_rows();
        for column in 0..reader.schema().fields().len() {
            let _ = reader.read_column(column);
            let _ = reader.read_column_range(column, rows / 3..rows - rows / 4);
        }
    }
});
