//! Protobuf messages generated from `protos/` at build time.
//!
//! [`encodings`] holds `ArrayEncoding` and its parts, wire-compatible with Lance's v2.0
//! encodings; [`file`](mod@file) holds the column file footer.

/// `protos/encodings.proto`: how a page is encoded.
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod encodings {
    include!(concat!(env!("OUT_DIR"), "/miniblock.encodings.rs"));
}

/// `protos/file.proto`: the column file footer.
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod file {
    include!(concat!(env!("OUT_DIR"), "/miniblock.file.rs"));
}
