//! Arbitrary bytes as a Lance file: opening it and reading every field must return Ok or
//! Err, never panic, and never allocate beyond what the bytes justify.
#![no_main]

use std::io::Cursor;

use libfuzzer_sys::fuzz_target;
use miniblock::lance::LanceReader;

fuzz_target!(|data: &[u8]| {
    let Ok(mut reader) = LanceReader::open(Cursor::new(data)) else {
        return;
    };
    for field in 0..reader.fields().len() {
        let _ = reader.read_column(field);
    }
});
