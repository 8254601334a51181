//! Only tests: see `tests/lance_encoding.rs`.
