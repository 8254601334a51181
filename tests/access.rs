//! Random access: a row range decodes only the chunks it overlaps, counted through a
//! decompressor that records its calls.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use arrow_array::{Array, Float32Array};
use miniblock::encodings::{decompressor_for, ChunkStorage, MiniBlockDecompressor};
use miniblock::{encode_page, Encoding, PageDecoder};

#[derive(Debug)]
struct Counting {
    inner: Box<dyn MiniBlockDecompressor>,
    calls: Arc<AtomicUsize>,
}

impl MiniBlockDecompressor for Counting {
    fn value_width(&self) -> usize {
        self.inner.value_width()
    }

    fn max_expansion(&self) -> usize {
        self.inner.max_expansion()
    }

    fn raw_len_range(&self, num_values: usize) -> Option<(usize, usize)> {
        self.inner.raw_len_range(num_values)
    }

    fn raw_expansion(&self) -> usize {
        self.inner.raw_expansion()
    }

    fn decompress_into(
        &self,
        chunk: &[u8],
        num_values: usize,
        storage: ChunkStorage,
        out: &mut [u8],
        scratch: &mut Vec<u8>,
    ) -> miniblock::Result<()> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.inner
            .decompress_into(chunk, num_values, storage, out, scratch)
    }
}

#[test]
fn ranges_touch_only_overlapping_chunks() {
    let values: Vec<f32> = (0..10_000).map(|i| i as f32 * 0.5).collect();
    let array = Float32Array::from(values.clone());
    for encoding in Encoding::ALL {
        let page = encode_page(&array, encoding).unwrap();
        let calls = Arc::new(AtomicUsize::new(0));
        let counting = Counting {
            inner: decompressor_for(&page.encoding, &page.buffer_slices()).unwrap(),
            calls: calls.clone(),
        };
        let table = page.chunk_table();
        let decoder = PageDecoder::with_decompressor(
            Box::new(counting) as Box<dyn miniblock::encodings::MiniBlockDecompressor>,
            page.num_values,
            &table,
            page.table_format(),
            &page.data,
        )
        .unwrap();
        assert_eq!(decoder.num_chunks(), 10);
        // (range, chunks it overlaps)
        for (range, chunks) in [
            (0..0, 0),
            (0..1, 1),
            (1023..1025, 2),
            (1024..2048, 1),
            (5000..5001, 1),
            (3000..7000, 5),
            (9999..10_000, 1),
            (0..10_000, 10),
        ] {
            calls.store(0, Ordering::SeqCst);
            let decoded = decoder.decode_range(range.clone()).unwrap();
            assert_eq!(
                calls.load(Ordering::SeqCst),
                chunks,
                "{encoding} rows {range:?}"
            );
            let decoded = decoded.as_any().downcast_ref::<Float32Array>().unwrap();
            assert_eq!(decoded.values(), &values[range.clone()]);
            assert_eq!(decoder.chunks_for_rows(range).len(), chunks);
        }
        calls.store(0, Ordering::SeqCst);
        decoder.decode_chunk(7).unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }
}
