//! The entropy coder: arbitrary bytes decode to an error or to bytes, never a panic or a
//! read past the input; arbitrary streams encode and decode back to themselves.
#![no_main]

use libfuzzer_sys::fuzz_target;
use miniblock::encodings::entropy;

fuzz_target!(|data: &[u8]| {
    let Some((&[a, b], rest)) = data.split_first_chunk::<2>() else {
        return;
    };
    let n = usize::from(u16::from_le_bytes([a, b]));
    let mut out = vec![0u8; n];
    if let Ok(used) = entropy::decode(rest, &mut out) {
        assert!(used <= rest.len());
    }
    let mut coded = Vec::new();
    entropy::encode(rest, &mut coded).unwrap();
    assert!(coded.len() <= entropy::max_coded_len(rest.len()).max(2));
    let mut back = vec![0u8; rest.len()];
    assert_eq!(entropy::decode(&coded, &mut back).unwrap(), coded.len());
    assert_eq!(back, rest);
});
