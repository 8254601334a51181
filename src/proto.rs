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

/// `protos/frame.proto`: the header of a [`frame`](crate::frame).
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod frame {
    include!(concat!(env!("OUT_DIR"), "/miniblock.frame.rs"));
}

/// `protos/lance.proto`: the parts of Lance's v2.1/v2.2 file format that [`crate::lance`]
/// reads and writes, with Lance's field numbers (all in one package, `lance.file.v2`;
/// type URLs name Lance's own packages).
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod lance {
    include!(concat!(env!("OUT_DIR"), "/lance.file.v2.rs"));
}
