//! The entropy coder: arbitrary bytes (page tables and a stream) decode to an error or to
//! bytes, never a panic or a read past the input; arbitrary streams encode and decode
//! back to themselves, with and without page tables built from them.
#![no_main]

use libfuzzer_sys::fuzz_target;
use miniblock::encodings::entropy::{self, PageTables};

fuzz_target!(|data: &[u8]| {
    let Some((&[a, b, t], rest)) = data.split_first_chunk::<3>() else {
        return;
    };
    let n = usize::from(u16::from_le_bytes([a, b]));
    let (table_bytes, rest) = rest.split_at(usize::from(t).min(rest.len()));
    let tables = PageTables::parse(table_bytes).unwrap_or_default();
    let mut out = vec![0u8; n];
    if let Ok(used) = entropy::decode(rest, &mut out, &tables) {
        assert!(used <= rest.len());
    }
    let mut counts = [0u32; 256];
    entropy::count(rest, &mut counts);
    let built = PageTables::from_streams(&[(0, counts)], 100.0);
    let parsed = PageTables::parse(&built.to_bytes()).unwrap();
    for (encode_with, decode_with) in [
        (&PageTables::default(), &PageTables::default()),
        (&built, &parsed),
    ] {
        let mut coded = Vec::new();
        entropy::encode(rest, encode_with, &mut coded).unwrap();
        assert!(coded.len() <= entropy::max_coded_len(rest.len()).max(2));
        let mut back = vec![0u8; rest.len()];
        assert_eq!(
            entropy::decode(&coded, &mut back, decode_with).unwrap(),
            coded.len()
        );
        assert_eq!(back, rest);
    }
});
