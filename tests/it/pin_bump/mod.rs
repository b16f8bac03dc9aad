//! `forge pin bump` and `forge pin outdated` against real servers: a package index on
//! 127.0.0.1 (`support::index`), bare git repositories over file:// and over git's smart HTTP
//! protocol (`support::git_http`), and a `docker-registry` on loopback for the base image
//! (`support::registry`). Every run is hermetic: no pip configuration, cache or credentials of
//! the machine leak in.
//!
//! - `moves`: index-driven moves of wheel pins, and what refuses them;
//! - `requirements`: the requirements the wheels declare, and the groups they move;
//! - `indexes`: where the index comes from and how it is read;
//! - `outdated`: `pin outdated`;
//! - `git`: git pins, over file://, smart HTTP and HTTPS;
//! - `base`: the base image on a registry.
//!
//! This front holds what the parts share: the recipes and indexes they start from and the
//! assertions on pins.toml.

mod base;
mod git;
mod indexes;
mod moves;
mod outdated;
mod requirements;

use std::path::Path;
use std::process::Command;

use crate::support::credential_helper::{CredentialHelper, HELPER};
use crate::support::forge;
use crate::support::git::deepgemm_from;
use crate::support::git::{GitRemote, git, with_a_deepgemm_series, with_git_remote};
use crate::support::git_http::GitHttpServer;
use crate::support::index::IndexServer;
use crate::support::index::{default_index, recorded_index};
use crate::support::outdated_row;
use crate::support::registry::{self, RegistryServer};
use crate::support::snapshot::forge_snapshot;
use crate::support::tls::{Certificates, TlsTerminator};
use crate::support::{
    Run, TestContext, assert_contains, assert_contains_flowed, assert_fits_100_columns, free_port,
    stop, wait_for_port,
};

/// `forge`, with `index` as the package index.
fn forge_on(context: &TestContext, index: &IndexServer, args: &[&str]) -> Run {
    forge(context, args, &[("FORGE_INDEX_URL", &index.url())])
}

/// The default recipe, its pins.toml as it stands, and an index offering everything it pins
/// at its current versions.
fn recipe_and_index() -> (TestContext, String, IndexServer) {
    let context = TestContext::default_recipe_on_indexes();
    let before = context.read("pins.toml");
    (context, before, default_index())
}

/// `recipe_and_index`, with the first `from` in pins.toml made `to` first.
fn edited_recipe_and_index(from: &str, to: &str) -> (TestContext, String, IndexServer) {
    let context = TestContext::default_recipe_on_indexes();
    context.edit("pins.toml", from, to);
    let before = context.read("pins.toml");
    (context, before, default_index())
}

/// `recipe_and_index` with the tvm group declared lockstep: one version for both members.
fn lockstep_recipe_and_index() -> (TestContext, String, IndexServer) {
    let context = TestContext::default_recipe_on_indexes();
    let text = context.read("pins.toml");
    context.write(
        "pins.toml",
        &format!("{text}\n[groups.tvm]\nlockstep = true\n"),
    );
    let before = context.read("pins.toml");
    (context, before, default_index())
}

/// FlashInfer's version line in the default recipe, and after the move to 0.6.15.
const FLASHINFER_0_6_14: &str = "version = \"0.6.14\"";
const FLASHINFER_0_6_15: &str = "version = \"0.6.15\"";

/// Offers FlashInfer 0.6.15: all three wheels, the jit-cache one with its `+cu130` label.
fn offer_flashinfer_0_6_15(index: &IndexServer) {
    index
        .wheel("flashinfer-python", "0.6.15")
        .publish("flashinfer-python", &["flashinfer_python-0.6.15.tar.gz"])
        .wheel("flashinfer-cubin", "0.6.15")
        .wheel("flashinfer-jit-cache", "0.6.15+cu130");
}

#[track_caller]
fn assert_unchanged(context: &TestContext, before: &str) {
    assert_eq!(
        context.read("pins.toml"),
        before,
        "pins.toml must be left untouched"
    );
}

/// Panics unless `run` says each of `messages` and pins.toml is still `before`.
#[track_caller]
fn assert_unchanged_saying(run: &Run, context: &TestContext, before: &str, messages: &[&str]) {
    for message in messages {
        assert_contains(&run.stderr, message);
    }
    assert_unchanged(context, before);
}

/// The sha256 of the stand-in `IndexServer::publish` serves for `file` (its name and a newline).
fn stand_in_sha256(file: &str) -> String {
    crate::support::release::sha256_hex(format!("{file}\n").as_bytes())
}

/// `{ file = "...", sha256 = "..." }` of the stand-in wheel `IndexServer::wheel` publishes for
/// `package` at `version`.
fn stand_in_entry(package: &str, version: &str) -> String {
    let file = format!(
        "{}-{version}-py3-none-manylinux_2_28_aarch64.whl",
        package.replace('-', "_")
    );
    format!(
        "{{ file = \"{file}\", sha256 = \"{}\" }}",
        stand_in_sha256(&file)
    )
}

/// Panics unless pins.toml is `before` with its first `from` made `to`, and FlashInfer's three
/// wheels recording the stand-in files of `version` the index offers.
#[track_caller]
fn assert_flashinfer_moved(
    context: &TestContext,
    before: &str,
    from: &str,
    to: &str,
    version: &str,
) {
    let wanted: Vec<String> = before
        .replacen(from, to, 1)
        .lines()
        .map(|line| {
            let wheel = [
                "flashinfer-python",
                "flashinfer-cubin",
                "flashinfer-jit-cache",
            ]
            .into_iter()
            .find(|package| line.starts_with(&format!("  {{ package = \"{package}\"")));
            match (wheel, line.strip_suffix(" },")) {
                (Some(package), Some(entry)) => {
                    let at = if package.ends_with("jit-cache") {
                        format!("{version}+cu130")
                    } else {
                        version.to_owned()
                    };
                    format!("{entry}, files = [{}] }},", stand_in_entry(package, &at))
                }
                _ => line.to_owned(),
            }
        })
        .collect();
    assert_eq!(context.read("pins.toml"), wanted.join("\n") + "\n");
}

/// `text` with the `files` of `[pins.PIN]` made `entries` (`{ file = ..., sha256 = ... }`).
fn with_files(text: &str, pin: &str, entries: &[String]) -> String {
    let table = text
        .find(&format!("[pins.{pin}]"))
        .unwrap_or_else(|| panic!("no [pins.{pin}]"));
    let start = table + text[table..].find("files = [\n").expect("recorded files");
    let end = start + text[start..].find("\n]\n").expect("the end of the files") + 3;
    let lines: String = entries
        .iter()
        .map(|entry| format!("  {entry},\n"))
        .collect();
    format!("{}files = [\n{lines}]\n{}", &text[..start], &text[end..])
}

/// `{ file = ..., sha256 = ... }` of `file` as the real index lists it (`tests/fixtures/index`).
fn fixture_entry(package: &str, file: &str) -> String {
    let path = crate::support::repository_root()
        .join("tests/fixtures/index")
        .join(format!("{package}.json"));
    let document: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("a fixture")).expect("JSON");
    let sha256 = document["files"]
        .as_array()
        .expect("files")
        .iter()
        .find(|entry| entry["filename"] == file)
        .and_then(|entry| entry["sha256"].as_str())
        .unwrap_or_else(|| panic!("{file} is not in the {package} fixture"))
        .to_owned();
    format!("{{ file = \"{file}\", sha256 = \"{sha256}\" }}")
}

/// Panics unless pins.toml is `before` with its first `from` made `to`, and nothing else.
#[track_caller]
fn assert_moved(context: &TestContext, before: &str, from: &str, to: &str) {
    assert_eq!(context.read("pins.toml"), before.replacen(from, to, 1));
}

/// `forge pin bump deepgemm --to` the remote's second commit by a short id, with `env`: the pin
/// in `before` moves to its full id.
#[track_caller]
fn assert_a_short_revision_resolves(
    context: &TestContext,
    before: &str,
    remote: &GitRemote,
    env: &[(&str, &str)],
) {
    let to = ["pin", "bump", "deepgemm", "--to", &remote.second[..9]];
    forge(context, &to, env).expect_code(0);
    assert_deepgemm_at(context, before, &remote.second);
}

/// Panics unless pins.toml is `before` with DeepGEMM's revision moved to `rev`.
#[track_caller]
fn assert_deepgemm_at(context: &TestContext, before: &str, rev: &str) {
    assert_moved(
        context,
        before,
        "rev = \"a6b593d2826719dcf4892609af7b84ee23aaf32a\"",
        &format!("rev = \"{rev}\""),
    );
}

/// The default recipe with DeepGEMM at the head of a local remote, so that only the index
/// decides what can move; the remote is returned to live as long as the recipe.
fn recipe_at_the_git_head() -> (TestContext, GitRemote) {
    let context = TestContext::default_recipe_on_indexes();
    let remote = GitRemote::new();
    with_git_remote(&context, &remote);
    context.edit(
        "pins.toml",
        "rev = \"a6b593d2826719dcf4892609af7b84ee23aaf32a\"",
        &format!("rev = \"{}\"", remote.head),
    );
    (context, remote)
}
