//! Compiles `protos/*.proto` with the pure-Rust `protox` compiler, so no system `protoc` is needed.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protos = [
        "protos/encodings.proto",
        "protos/file.proto",
        "protos/frame.proto",
        "protos/lance.proto",
    ];
    for proto in &protos {
        println!("cargo:rerun-if-changed={proto}");
    }
    // Tests that read the full data sets of `../shared` (beside a checkout, as in CI) are
    // compiled as ignored, with the reason shown, where it is absent (a fresh clone).
    println!("cargo::rustc-check-cfg=cfg(shared_data)");
    // A watched path that does not exist makes cargo run this script (and rebuild the
    // crate) on every build, so absent paths are not watched: after adding one, `touch
    // build.rs` (the ignore reasons say so).
    if std::path::Path::new("../shared/data").is_dir() {
        println!("cargo:rerun-if-changed=../shared/data");
        println!("cargo:rustc-cfg=shared_data");
    }
    // The pylance test runs where `.ci/lance-venv` made its virtual environment (CI does);
    // elsewhere it is compiled as ignored, with the command that makes it in the reason.
    println!("cargo::rustc-check-cfg=cfg(pylance)");
    if std::path::Path::new(".venv-lance/bin/python").exists() {
        println!("cargo:rerun-if-changed=.venv-lance/bin/python");
        println!("cargo:rustc-cfg=pylance");
    }
    let descriptors = protox::compile(protos, ["protos"])?;
    prost_build::Config::new().compile_fds(descriptors)?;
    Ok(())
}
