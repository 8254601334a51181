//! Arbitrary buffers and element sizes: shuffle/unshuffle never panic and invert each other.
#![no_main]

use libfuzzer_sys::fuzz_target;
use miniblock::shuffle::{shuffle, unshuffle, ShuffleError};

fuzz_target!(|data: &[u8]| {
    let Some((&size, rest)) = data.split_first() else {
        return;
    };
    let size = usize::from(size % 20);
    match shuffle(rest, size) {
        Ok(shuffled) => assert_eq!(unshuffle(&shuffled, size).unwrap(), rest),
        Err(ShuffleError::ZeroElementSize) => assert_eq!(size, 0),
        Err(ShuffleError::Misaligned { .. }) => assert_ne!(rest.len() % size, 0),
        Err(e) => panic!("unexpected {e}"),
    }
});
