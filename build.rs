//! Compiles `protos/*.proto` with the pure-Rust `protox` compiler, so no system `protoc` is needed.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protos = ["protos/encodings.proto", "protos/file.proto"];
    for proto in &protos {
        println!("cargo:rerun-if-changed={proto}");
    }
    let descriptors = protox::compile(protos, ["protos"])?;
    prost_build::Config::new().compile_fds(descriptors)?;
    Ok(())
}
