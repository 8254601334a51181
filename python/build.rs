//! Builds the HDF5 filter plugin (`hdf5/`, a cdylib of its own: HDF5 loads it in processes
//! without Python, so it cannot be this extension) and puts it in the package, at
//! `miniblock/hdf5_plugin/libh5miniblock.so`, where `miniblock.hdf5.PLUGIN_PATH` points.
//! maturin packs the package folder after this build, so the wheel carries the plugin.
//!
//! The plugin is built by a second cargo in a target folder of its own (a cargo holding
//! the outer one's lock would wait for it forever). `MINIBLOCK_NO_HDF5_PLUGIN=1` skips it;
//! `miniblock.hdf5` then says the plugin is missing.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=MINIBLOCK_NO_HDF5_PLUGIN");
    let here = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let plugin_src = here.join("../hdf5");
    for part in ["src", "Cargo.toml"] {
        println!("cargo:rerun-if-changed={}", plugin_src.join(part).display());
    }
    println!("cargo:rerun-if-changed={}", here.join("../src").display());
    if std::env::var_os("MINIBLOCK_NO_HDF5_PLUGIN").is_some_and(|v| v == "1") {
        return;
    }
    // Under clippy or `cargo check` nothing is linked: the plugin is not needed.
    if std::env::var("RUSTC_WORKSPACE_WRAPPER").is_ok_and(|w| w.contains("clippy")) {
        return;
    }
    let profile = std::env::var("PROFILE").unwrap_or_else(|_| "release".to_owned());
    let target_dir = here.join("../target/hdf5-plugin");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut build = Command::new(cargo);
    build
        .args(["build", "--manifest-path"])
        .arg(plugin_src.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(&target_dir)
        .args([
            "--config",
            "profile.release.debug=false",
            "--config",
            "profile.release.strip=\"symbols\"",
        ]);
    if profile == "release" {
        build.arg("--release");
    }
    // The outer build's flags and jobserver are for the extension, not this build.
    for var in [
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTFLAGS",
        "CARGO_MAKEFLAGS",
        "MAKEFLAGS",
        "MFLAGS",
        "CARGO_TARGET_DIR",
    ] {
        build.env_remove(var);
    }
    let status = build.status().expect("running cargo for the HDF5 plugin");
    assert!(status.success(), "building the HDF5 plugin failed");
    let built = target_dir.join(&profile).join("libh5miniblock.so");
    let dest = here.join("miniblock/hdf5_plugin");
    std::fs::create_dir_all(&dest).expect("making miniblock/hdf5_plugin");
    std::fs::copy(&built, dest.join("libh5miniblock.so")).expect("copying the HDF5 plugin");
}
