//! What a [`FileReader`](super::FileReader) reads: any `Read + Seek` source, and bytes a
//! source already holds in memory lent to the decoder instead of copied out.

use std::io::{BufReader, Cursor, Read, Seek};

/// A source of a column file's bytes for [`FileReader`](super::FileReader).
///
/// Any `Read + Seek` type can be one; a source that holds the file's bytes in memory
/// also lends them ([`lend`](Self::lend)), and a read then decodes each page where it
/// lies, without copying it into a buffer first. The sources here:
///
/// - `std::fs::File` and `BufReader` of a source: read into a buffer;
/// - `Cursor<T>` of any `T: AsRef<[u8]>` (`Vec<u8>`, `&[u8]`, `bytes::Bytes`, a memory
///   map): lent;
/// - `&mut S` and `Box<S>` of a source `S`: as `S`;
/// - `Fetched` (the object-store reader's fetched ranges): lent.
///
/// Another `Read + Seek` type becomes a source with an empty impl:
///
/// ```
/// use std::io::{Read, Seek, SeekFrom};
///
/// struct Tape(std::io::Cursor<Vec<u8>>);
/// impl Read for Tape {
///     fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> { self.0.read(buf) }
/// }
/// impl Seek for Tape {
///     fn seek(&mut self, to: SeekFrom) -> std::io::Result<u64> { self.0.seek(to) }
/// }
/// impl miniblock::file::Source for Tape {}
///
/// let opened = miniblock::file::FileReader::open(Tape(std::io::Cursor::new(b"MBLK".to_vec())));
/// assert!(opened.is_err()); // four bytes are no file, but `Tape` is a source
/// ```
pub trait Source: Read + Seek {
    /// The `len` bytes at `offset`, if the source holds them all in memory; `None` (the
    /// default) has them read with `Read`. A source that lends must lend the bytes a
    /// read at that offset would give.
    fn lend(&self, offset: u64, len: usize) -> Option<&[u8]> {
        let _ = (offset, len);
        None
    }
}

impl Source for std::fs::File {}

impl<S: Source> Source for BufReader<S> {}

impl<T: AsRef<[u8]>> Source for Cursor<T> {
    fn lend(&self, offset: u64, len: usize) -> Option<&[u8]> {
        let start = usize::try_from(offset).ok()?;
        self.get_ref().as_ref().get(start..start.checked_add(len)?)
    }
}

impl<S: Source + ?Sized> Source for &mut S {
    fn lend(&self, offset: u64, len: usize) -> Option<&[u8]> {
        (**self).lend(offset, len)
    }
}

impl<S: Source + ?Sized> Source for Box<S> {
    fn lend(&self, offset: u64, len: usize) -> Option<&[u8]> {
        (**self).lend(offset, len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_lend_only_what_they_hold() {
        let cursor = Cursor::new(vec![1u8, 2, 3, 4]);
        assert_eq!(cursor.lend(1, 2), Some(&[2u8, 3][..]));
        assert_eq!(cursor.lend(0, 4), Some(&[1u8, 2, 3, 4][..]));
        assert_eq!(cursor.lend(4, 0), Some(&[][..]));
        assert_eq!(cursor.lend(3, 2), None);
        assert_eq!(cursor.lend(5, 0), None);
        assert_eq!(cursor.lend(u64::MAX, 1), None);
        assert_eq!(cursor.lend(1, usize::MAX), None);
        let mut cursor = cursor;
        let by_ref = &mut cursor;
        assert_eq!(by_ref.lend(2, 1), Some(&[3u8][..]));
        assert_eq!(
            Box::new(Cursor::new([9u8; 3])).lend(0, 3),
            Some(&[9u8; 3][..])
        );
    }
}
