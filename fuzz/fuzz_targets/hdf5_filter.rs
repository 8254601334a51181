//! The HDF5 filter's decode entry point on arbitrary chunks: the input is a frame without
//! its checksum, which is appended here so that the fuzzer explores the header and the
//! page rather than the CRC. The first byte picks the stored parameters' value type.
//! Decoding must return Ok or Err, never panic, and never allocate beyond what the
//! bytes justify (`-malloc_limit_mb`).
#![no_main]

use h5miniblock::codec::decode_chunk;
use h5miniblock::params::TAG;
use libfuzzer_sys::fuzz_target;
use miniblock::frame::FrameDecoder;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, body)) = data.split_first() else {
        return;
    };
    let mut chunk = body.to_vec();
    chunk.extend_from_slice(&miniblock::crc32c(body).to_le_bytes());
    // Parameters as set_local stores them (type code 0-11, either byte order), or none.
    let value_type = u32::from(selector % 13);
    let stored = [TAG, u32::from(selector >> 4) % 20, 0, value_type, u32::from(selector >> 7)];
    let cd: &[u32] = if value_type == 12 { &[] } else { &stored };
    let _ = decode_chunk(cd, &chunk);
    if let Ok(frame) = FrameDecoder::new(&chunk) {
        let n = frame.num_values();
        let _ = frame.decode_array(0..n);
        let _ = frame.decode_values(n / 3..n);
        if let Some(len) = n
            .checked_mul(frame.value_type().value_width().unwrap_or(1))
            .filter(|&l| l <= 1 << 24)
        {
            let _ = frame.decode_into(0..n, &mut vec![0; len]);
        }
    }
});
