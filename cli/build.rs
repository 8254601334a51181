//! Tests that read the full data sets of `../shared` (beside the repository, as in CI)
//! run when it is there and are listed as ignored, with the reason, when it is not.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(shared_data)");
    // An absent watched path would rerun this script on every build: not watched.
    println!("cargo:rerun-if-changed=build.rs");
    if std::path::Path::new("../../shared/data").is_dir() {
        println!("cargo:rerun-if-changed=../../shared/data");
        println!("cargo:rustc-cfg=shared_data");
    }
}
