//! What a tester installs: the release binary (Cargo.toml's `[profile.release]`) is stripped
//! and small enough to copy onto a Spark by hand, and the dependency tree carries one
//! generation of each hash and no crate forge does not use.

use std::path::PathBuf;
use std::process::Command;

use crate::support::repository_root;

/// The release binary: `FORGE_RELEASE_BINARY` when `ci/test` built it before the suite, else
/// built here into a target folder of its own (so as not to wait on the suite's own build).
fn release_binary() -> PathBuf {
    if let Some(binary) = std::env::var_os("FORGE_RELEASE_BINARY") {
        return PathBuf::from(binary);
    }
    let target = repository_root().join("target/shipping");
    let status = Command::new(env!("CARGO"))
        .args(["build", "--release", "--locked", "--quiet", "--target-dir"])
        .arg(&target)
        .current_dir(repository_root())
        .status()
        .expect("cargo runs");
    assert!(status.success(), "cargo build --release failed");
    target.join("release/forge")
}

#[test]
fn the_release_binary_is_stripped_and_under_16_mb() {
    let binary = release_binary();
    let size = std::fs::metadata(&binary).unwrap().len();
    assert!(
        size < 16 * 1024 * 1024,
        "{} is {size} bytes, over 16 MiB",
        binary.display()
    );
    // readelf lists the sections: a stripped binary keeps no symbol table and no debug info.
    let sections = Command::new("readelf")
        .args(["--section-headers", "--wide"])
        .arg(&binary)
        .output()
        .expect("readelf runs");
    assert!(sections.status.success());
    let sections = String::from_utf8_lossy(&sections.stdout);
    assert!(sections.contains(".text"), "{sections}");
    for section in [".symtab", ".strtab", ".debug_info", ".debug_line"] {
        assert!(
            !sections.contains(&format!(" {section} ")),
            "{} keeps {section}",
            binary.display()
        );
    }
    let version = Command::new(&binary).arg("--version").output().unwrap();
    assert!(version.status.success());
    assert!(String::from_utf8_lossy(&version.stdout).starts_with("forge "));
}

/// Every version Cargo.lock holds of the crate `name`.
fn versions(lock: &toml::Table, name: &str) -> Vec<String> {
    lock["package"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|package| package["name"].as_str() == Some(name))
        .map(|package| package["version"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn the_lock_holds_one_generation_of_the_crypto_crates_and_no_unused_crate() {
    let text = std::fs::read_to_string(repository_root().join("Cargo.lock")).unwrap();
    let lock: toml::Table = text.parse().unwrap();
    for name in [
        "sha2",
        "sha1",
        "digest",
        "block-buffer",
        "crypto-common",
        "p256",
        "ecdsa",
    ] {
        let found = versions(&lock, name);
        assert_eq!(found.len(), 1, "Cargo.lock holds {name} {found:?}");
    }
    // The rand_core forge draws keys from is the one the curve's crates take.
    let forge = (lock["package"].as_array().unwrap().iter())
        .find(|package| package["name"].as_str() == Some("elliptic-curve"))
        .unwrap();
    let curve_rand = (forge["dependencies"].as_array().unwrap().iter())
        .filter_map(|dependency| dependency.as_str())
        .find(|dependency| dependency.starts_with("rand_core"))
        .unwrap();
    let manifest: toml::Table = std::fs::read_to_string(repository_root().join("Cargo.toml"))
        .unwrap()
        .parse()
        .unwrap();
    let declared = manifest["dependencies"]["rand_core"]["version"]
        .as_str()
        .unwrap();
    let resolved = versions(&lock, "rand_core");
    let ours = resolved
        .iter()
        .find(|version| version.starts_with(&format!("{declared}.")))
        .unwrap();
    assert!(
        curve_rand == "rand_core" || curve_rand == format!("rand_core {ours}"),
        "elliptic-curve takes {curve_rand}, forge declares rand_core {declared}"
    );
    assert!(versions(&lock, "mailparse").is_empty());
    assert!(
        !manifest["dependencies"]
            .as_table()
            .unwrap()
            .contains_key("mailparse")
    );
}
