//! `bss+zstd+dict`: byte stream split under Zstd with a dictionary the page stores once
//! (page buffer 0, one Zstd frame of the high byte streams of its chunks). What repeats
//! across the page but not within a chunk is matched, every chunk still decodes alone,
//! and a hostile dictionary, message or buffer is an error of the right kind.

mod common;

use arrow_array::{Array, Float64Array};
use miniblock::encodings::Strategy;
use miniblock::proto::encodings::{array_encoding, ArrayEncoding, Buffer};
use miniblock::{encode_page, EncodedPage, Encoding, ErrorKind, PageDecoder};

/// f64 values whose top 16 bits follow a random sequence of 700 values (longer than a
/// 512-value chunk, so no chunk repeats itself) over and over, under random low bits: an
/// ephemeris' exponents in miniature.
fn long_period(n: usize) -> Float64Array {
    let mut rng = common::Rng(0x5EED);
    let tops: Vec<u64> = (0..700).map(|_| rng.next_u64() >> 48).collect();
    Float64Array::from_iter_values(
        (0..n).map(|i| f64::from_bits(tops[i % tops.len()] << 48 | rng.next_u64() >> 16)),
    )
}

fn decode(page: &EncodedPage) -> miniblock::Result<Vec<u8>> {
    let bytes = page.to_bytes();
    let decoder = PageDecoder::try_new(&page.encoding, page.num_values, &bytes)?;
    let mut out = vec![0; decoder.num_values() * 8];
    decoder.decode_into(0..decoder.num_values(), &mut out, None)?;
    for c in 0..decoder.num_chunks() {
        decoder.decode_chunk(c)?;
    }
    Ok(out)
}

fn values_bytes(array: &Float64Array) -> Vec<u8> {
    array
        .values()
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect()
}

fn general(encoding: &mut ArrayEncoding) -> &mut miniblock::proto::encodings::GeneralMiniBlock {
    match encoding.array_encoding.as_mut() {
        Some(array_encoding::ArrayEncoding::GeneralMiniBlock(g)) => g,
        other => panic!("not general_mini_block: {other:?}"),
    }
}

#[test]
fn a_page_dictionary_matches_beyond_a_chunk() {
    let array = long_period(100_000);
    let plain = encode_page(&array, Encoding::BssZstd).unwrap();
    let dict = encode_page(&array, Encoding::BssZstdDict).unwrap();
    assert_eq!(Encoding::of(&dict.encoding), Some(Encoding::BssZstdDict));
    assert_eq!(dict.buffers.len(), 1);
    let (plain_bytes, dict_bytes) = (plain.to_bytes().len(), dict.to_bytes().len());
    // The top two of eight bytes are random within a chunk (Zstd alone stores about all
    // of them) but repeat across it: with the dictionary they cost next to nothing.
    assert!(
        (dict_bytes as f64) < 0.85 * plain_bytes as f64,
        "bss+zstd+dict {dict_bytes} bytes, bss+zstd {plain_bytes}"
    );
    assert_eq!(decode(&dict).unwrap(), values_bytes(&array));
    // A chunk alone decodes to its rows.
    let bytes = dict.to_bytes();
    let decoder = PageDecoder::try_new(&dict.encoding, dict.num_values, &bytes).unwrap();
    let last = decoder.num_chunks() - 1;
    let rows = decoder.chunk_rows(last).unwrap();
    assert_eq!(
        decoder.decode_chunk(last).unwrap().to_data(),
        array.slice(rows.start, rows.len()).to_data()
    );
}

#[test]
fn auto_takes_the_dictionary_where_it_wins() {
    let array = long_period(131_072);
    let page = encode_page(&array, "auto:0".parse::<Strategy>().unwrap()).unwrap();
    assert_eq!(Encoding::of(&page.encoding), Some(Encoding::BssZstdDict));
    assert_eq!(decode(&page).unwrap(), values_bytes(&array));
}

#[test]
fn hostile_dictionaries_are_errors() {
    let array = long_period(20_000);
    let page = encode_page(&array, Encoding::BssZstdDict).unwrap();
    let with = |edit: &dyn Fn(&mut EncodedPage)| {
        let mut page = page.clone();
        edit(&mut page);
        decode(&page).map(|_| ()).map_err(|e| e.kind())
    };
    let frame = |content: &[u8]| zstd::bulk::compress(content, 3).unwrap();
    // A dictionary only Zstd takes, in page buffer 0 only.
    assert_eq!(
        with(&|p| general(&mut p.encoding)
            .compression
            .as_mut()
            .unwrap()
            .scheme = "lz4".into()),
        Err(ErrorKind::Unsupported)
    );
    assert_eq!(
        with(&|p| {
            general(&mut p.encoding).dictionary = Some(Buffer {
                buffer_index: 1,
                buffer_type: 0,
            });
        }),
        Err(ErrorKind::Unsupported)
    );
    // The message and the buffers disagree.
    assert_eq!(with(&|p| p.buffers.clear()), Err(ErrorKind::Corrupt));
    assert_eq!(
        with(&|p| general(&mut p.encoding).dictionary = None),
        Err(ErrorKind::Corrupt)
    );
    // Frames that are not a dictionary: garbage, one too large, one that begins as a
    // trained dictionary, an empty one.
    assert_eq!(
        with(&|p| p.buffers[0] = vec![0x5A; 40]),
        Err(ErrorKind::Corrupt)
    );
    assert_eq!(
        with(&|p| p.buffers[0] = frame(&vec![0; (1 << 20) + 1])),
        Err(ErrorKind::Corrupt)
    );
    assert_eq!(
        with(&|p| p.buffers[0] = frame(&[0x37, 0xA4, 0x30, 0xEC, 1, 2, 3, 4])),
        Err(ErrorKind::Corrupt)
    );
    assert_eq!(
        with(&|p| p.buffers[0] = frame(&[])),
        Err(ErrorKind::Corrupt)
    );
    // Another dictionary: the chunks' matches point at other bytes. Zstd may decode them
    // (to other values) or refuse them; either way nothing panics.
    let other = with(&|p| p.buffers[0] = frame(&[7; 4096]));
    assert!(
        matches!(other, Ok(()) | Err(ErrorKind::Corrupt)),
        "{other:?}"
    );
    // Every byte of the dictionary's frame changed in turn.
    for at in 0..page.buffers[0].len() {
        let result = with(&|p| p.buffers[0][at] ^= 0x41);
        assert!(
            matches!(result, Ok(()) | Err(ErrorKind::Corrupt)),
            "byte {at}: {result:?}"
        );
    }
}

#[test]
fn the_worked_example() {
    use prost::Message;
    let array = long_period(2_000);
    let page = encode_page(&array, Encoding::BssZstdDict).unwrap();
    assert_eq!(
        page.encoding.encode_to_vec(),
        [
            0xA2, 0x01, 0x13, 0x0A, 0x05, 0xAA, 0x01, 0x02, 0x08, 0x40, 0x12, 0x08, 0x0A, 0x04,
            b'z', b's', b't', b'd', 0x10, 0x03, 0x1A, 0x00
        ]
    );
    // For each chunk of 512 values in turn: byte 6 of each value, then byte 7.
    let bytes = values_bytes(&array);
    let mut expected: Vec<u8> = Vec::new();
    for chunk in bytes.chunks(512 * 8) {
        for stream in 6..8 {
            expected.extend(chunk.iter().skip(stream).step_by(8));
        }
    }
    let dictionary = zstd::bulk::decompress(&page.buffers[0], 1 << 20).unwrap();
    assert_eq!(dictionary, expected);
    assert_eq!(decode(&page).unwrap(), bytes);
    // A page whose high bytes do not repeat across chunks gets no dictionary: its
    // encoding is bss+zstd's.
    let tiny = encode_page(
        &Float64Array::from(vec![1.0, 2.0, -3.0]),
        Encoding::BssZstdDict,
    )
    .unwrap();
    assert_eq!(Encoding::of(&tiny.encoding), Some(Encoding::BssZstd));
    assert!(tiny.buffers.is_empty());
}
