//! Arbitrary bytes as an ArrayEncoding message, a value count and a page: decoding must
//! return Ok or Err, never panic, and never allocate beyond what the bytes justify.
#![no_main]

use libfuzzer_sys::fuzz_target;
use miniblock::proto::encodings::ArrayEncoding;
use miniblock::PageDecoder;
use prost::Message;

fuzz_target!(|data: &[u8]| {
    // [u8 encoding length][encoding bytes][u32 LE value count][page bytes]
    let Some((&len, rest)) = data.split_first() else {
        return;
    };
    let len = usize::from(len).min(rest.len());
    let (encoding, rest) = rest.split_at(len);
    let Ok(encoding) = ArrayEncoding::decode(encoding) else {
        return;
    };
    if rest.len() < 4 {
        return;
    }
    let num_values = u64::from(u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]));
    let page = &rest[4..];
    if let Ok(decoder) = PageDecoder::try_new(&encoding, num_values, page) {
        let _ = decoder.decode();
        for c in 0..decoder.num_chunks().min(8) {
            let _ = decoder.decode_chunk(c);
        }
        let n = decoder.num_values();
        let _ = decoder.decode_range(n / 3..n - n / 4);
        // Into a caller's buffer (the other output path), when it is of a sane size.
        if let Some(len) = n
            .checked_mul(decoder.value_width())
            .filter(|&l| l <= 1 << 24)
        {
            let _ = decoder.decode_into(0..n, &mut vec![0; len], None);
        }
    }
});
