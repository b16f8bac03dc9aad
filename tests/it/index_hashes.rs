//! Wheels installed from an index are installed by hash: `pin bump` records the sha256 of every
//! file of the version pip may take on the image (for apache-tvm-ffi on cp312 aarch64 the index
//! holds a manylinux2014 and a manylinux_2_28 file, and pip on a base with glibc 2.28 or newer
//! takes the second), the render passes each as `--hash` under `--require-hashes`, and pip itself, on the
//! rendered step, installs the real files from a loopback index and refuses a changed byte.

use crate::support::index::IndexServer;
use crate::support::release::{sha256_hex, wheel};
use crate::support::snapshot::forge_snapshot;
use crate::support::{TestContext, assert_contains, forge, pip, without_recorded_files};

const OLD_GLIBC: &str =
    "apache_tvm_ffi-0.1.11-cp312-abi3-manylinux2014_aarch64.manylinux_2_17_aarch64.whl";
const NEW_GLIBC: &str =
    "apache_tvm_ffi-0.1.11-cp312-abi3-manylinux_2_24_aarch64.manylinux_2_28_aarch64.whl";
const TILELANG: &str = "tilelang-0.1.11-cp38-abi3-manylinux_2_34_aarch64.whl";
/// A file of the same version that does not fit the image (another Python): never recorded.
const OTHER_PYTHON: &str =
    "apache_tvm_ffi-0.1.11-cp311-cp311-manylinux_2_24_aarch64.manylinux_2_28_aarch64.whl";

/// The default recipe with no `files` recorded for the tvm pins, and an index serving real
/// wheels of both at 0.1.11; the sha256 of each file, by name.
fn unhashed_recipe_and_index() -> (TestContext, IndexServer, Vec<(String, String)>) {
    let context = TestContext::default_recipe();
    context.write(
        "pins.toml",
        &without_recorded_files(&context.read("pins.toml")),
    );
    assert!(!context.read("pins.toml").contains("files ="));
    let index = IndexServer::start();
    let mut hashes = Vec::new();
    for (package, file) in [
        ("apache-tvm-ffi", OLD_GLIBC),
        ("apache-tvm-ffi", NEW_GLIBC),
        ("apache-tvm-ffi", OTHER_PYTHON),
        ("tilelang", TILELANG),
    ] {
        let bytes = wheel(file, "served");
        hashes.push((file.to_owned(), sha256_hex(&bytes)));
        index.publish_bytes(package, file, &bytes);
    }
    (context, index, hashes)
}

fn hash_of(hashes: &[(String, String)], file: &str) -> String {
    hashes
        .iter()
        .find(|(name, _)| name == file)
        .map(|(_, hash)| hash.clone())
        .expect("a published file")
}

/// `text` with the hashes a column limit cut (of wheels built now, whose zip holds the time)
/// as `sha256:<cut>…`.
fn cut_hashes(text: &str) -> String {
    let cut = regex::Regex::new(r"sha256:[0-9a-f]+…").unwrap();
    cut.replace_all(text, "sha256:<cut>…").into_owned()
}

#[test]
fn pin_bump_records_every_file_pip_may_take() {
    recorded_recipe_and_index();
}

/// `unhashed_recipe_and_index`, then `pin bump --to` the version each tvm pin stands at: the
/// files recorded, said, and written once.
fn recorded_recipe_and_index() -> (TestContext, IndexServer, Vec<(String, String)>) {
    let (context, index, hashes) = unhashed_recipe_and_index();
    let env = [("FORGE_INDEX_URL", index.url())];
    let env: Vec<(&str, &str)> = env
        .iter()
        .map(|(name, value)| (*name, value.as_str()))
        .collect();

    let render = context.forge(&["render"]).expect_code(0);
    forge_snapshot!(
        "index_hashes_render_unhashed",
        render.stderr,
        context.path()
    );
    assert_contains(
        &render.stdout,
        "# NOT CHECKED BY HASH: pins.toml records no `files` for apache-tvm-ffi tilelang",
    );

    let run = forge(
        &context,
        &["pin", "bump", "apache-tvm-ffi", "--to", "0.1.11"],
        &env,
    )
    .expect_code(0);
    forge_snapshot!(
        "index_hashes_bump_tvm",
        cut_hashes(&run.stderr),
        context.path()
    );
    let run = forge(
        &context,
        &["pin", "bump", "tilelang", "--to", "0.1.11"],
        &env,
    )
    .expect_code(0);
    forge_snapshot!(
        "index_hashes_bump_tilelang",
        cut_hashes(&run.stderr),
        context.path()
    );
    let pins = context.read("pins.toml");
    assert_contains(
        &pins,
        &format!(
            "files = [\n  {{ file = \"{OLD_GLIBC}\", sha256 = \"{}\" }},\n  {{ file = \"{NEW_GLIBC}\", sha256 = \"{}\" }},\n]\n",
            hash_of(&hashes, OLD_GLIBC),
            hash_of(&hashes, NEW_GLIBC)
        ),
    );
    assert!(!pins.contains(OTHER_PYTHON), "{pins}");
    // Nothing left to record: a second run changes nothing.
    let again = forge(
        &context,
        &["pin", "bump", "tilelang", "--to", "0.1.11"],
        &env,
    )
    .expect_code(0);
    forge_snapshot!("index_hashes_fresh", again.stderr, context.path());
    assert_eq!(context.read("pins.toml"), pins);

    (context, index, hashes)
}

#[test]
fn pip_installs_the_rendered_step_by_the_recorded_hashes_and_refuses_a_changed_file() {
    let (context, index, hashes) = recorded_recipe_and_index();
    let committed = context.read("ci/Dockerfile.rendered");
    assert_eq!(
        pip::requirement_lines(&committed, "tilelang"),
        [
            format!(
                "apache-tvm-ffi==0.1.11 --hash=sha256:{} --hash=sha256:{}",
                hash_of(&hashes, OLD_GLIBC),
                hash_of(&hashes, NEW_GLIBC)
            ),
            format!(
                "tilelang==0.1.11 --hash=sha256:{}",
                hash_of(&hashes, TILELANG)
            ),
        ]
    );
    assert!(
        !committed.contains("NOT CHECKED BY HASH: pins.toml"),
        "{committed}"
    );
    assert_contains(
        &committed,
        "--only-binary :all: --require-hashes -r /dev/stdin",
    );

    // pip, on the rendered step, takes the manylinux_2_28 file on a newer glibc (the bump read
    // the other one's METADATA).
    let old_before = index.sent(OLD_GLIBC).1;
    let new_before = index.sent(NEW_GLIBC).1;
    let installed = pip::run_step(&committed, "tilelang", Some(&index.url()));
    assert!(
        installed.status.success(),
        "pip installs the recorded files:\n{}",
        String::from_utf8_lossy(&installed.stderr)
    );
    assert_eq!(
        index.sent(NEW_GLIBC).1,
        new_before + 1,
        "{:?}",
        index.requests()
    );
    assert_eq!(
        index.sent(OLD_GLIBC).1,
        old_before,
        "{:?}",
        index.requests()
    );

    // One changed byte in the served file, the listing as it was: pip refuses the download.
    let mut changed = wheel(NEW_GLIBC, "served");
    let last = changed.len() - 1;
    changed[last] ^= 1;
    index.publish_bytes("apache-tvm-ffi", NEW_GLIBC, &changed);
    index.list_sha256("apache-tvm-ffi", NEW_GLIBC, &hash_of(&hashes, NEW_GLIBC));
    let refused = pip::run_step(&committed, "tilelang", Some(&index.url()));
    assert!(
        !refused.status.success(),
        "pip must refuse the changed file"
    );
    assert_contains(
        &String::from_utf8_lossy(&refused.stderr),
        "THESE PACKAGES DO NOT MATCH THE HASHES",
    );
    // Both files replaced and listed as they now are: pip finds no file it may take.
    for file in [OLD_GLIBC, NEW_GLIBC] {
        let replaced = wheel(file, "replaced");
        index.publish_bytes("apache-tvm-ffi", file, &replaced);
        index.list_sha256("apache-tvm-ffi", file, &sha256_hex(&replaced));
    }
    let refused = pip::run_step(&committed, "tilelang", Some(&index.url()));
    assert!(
        !refused.status.success(),
        "pip must refuse the replaced files"
    );
    assert_contains(
        &String::from_utf8_lossy(&refused.stderr),
        "apache-tvm-ffi==0.1.11",
    );
}

/// Why every file is recorded: with only the manylinux2014 file's hash, pip (which drops the
/// files whose listed sha256 no `--hash` allows) installs that file on a glibc 2.34 platform,
/// not the manylinux_2_28 one it takes there otherwise: a partial record changes the image.
#[test]
fn the_hash_of_one_of_the_files_makes_pip_take_that_file() {
    let (context, index, hashes) = unhashed_recipe_and_index();
    let text = context.read("pins.toml").replacen(
        "deny = [{ version = \"0.1.12\"",
        &format!(
            "files = [{{ file = \"{OLD_GLIBC}\", sha256 = \"{}\" }}]\ndeny = [{{ version = \"0.1.12\"",
            hash_of(&hashes, OLD_GLIBC)
        ),
        1,
    );
    let text = text.replacen(
        "group = \"tvm\"\n\n",
        &format!(
            "group = \"tvm\"\nfiles = [{{ file = \"{TILELANG}\", sha256 = \"{}\" }}]\n\n",
            hash_of(&hashes, TILELANG)
        ),
        1,
    );
    context.write("pins.toml", &text);
    let render = context.forge(&["render"]).expect_code(0);
    let installed = pip::run_step(&render.stdout, "tilelang", Some(&index.url()));
    assert!(
        installed.status.success(),
        "{}",
        String::from_utf8_lossy(&installed.stderr)
    );
    assert_eq!(index.sent(OLD_GLIBC).1, 1, "{:?}", index.requests());
    assert_eq!(index.sent(NEW_GLIBC).1, 0, "{:?}", index.requests());
}

#[test]
fn recorded_files_must_be_wheels_of_the_pin_at_its_version() {
    let context = TestContext::default_recipe();
    let before = context.read("pins.toml");
    let mut refusals = String::new();
    for (from, to) in [
        ("{ file = \"tilelang-0.1.11-", "{ file = \"tilelang-0.1.10-"),
        (
            "{ file = \"tilelang-0.1.11-",
            "{ file = \"apache_tvm_ffi-0.1.11-",
        ),
        ("sha256 = \"c7b0dedc", "sha256 = \"C7B0DEDC"),
        (
            "{ file = \"tilelang-0.1.11-cp38-abi3-manylinux_2_34_aarch64.whl\"",
            "{ file = \"tilelang-0.1.11.tar.gz\"",
        ),
        ("install = false\n", "install = false\nfiles = []\n"),
    ] {
        context.write("pins.toml", &before.replacen(from, to, 1));
        let run = context.forge(&["render"]).expect_code(2);
        refusals.push_str(&run.stderr);
    }
    forge_snapshot!(refusals, context.path(), @r#"
    error: pins.toml:69:1: pin `tilelang`: recorded file tilelang-0.1.10-cp38-abi3-manylinux_2_34_aarch64.whl is not a wheel of tilelang 0.1.11
    hint: `forge pin bump tilelang --to VERSION` records the files of the version it moves to; drop `files` to install the pin unchecked
    error: pins.toml:69:1: pin `tilelang`: recorded file apache_tvm_ffi-0.1.11-cp38-abi3-manylinux_2_34_aarch64.whl is not a wheel of tilelang 0.1.11
    hint: `forge pin bump tilelang --to VERSION` records the files of the version it moves to; drop `files` to install the pin unchecked
    error: pins.toml:76:77: invalid sha256 "C7B0DEDC0a181486b7fa137d04eaf793271a7573ebd30e77838c18321a3206db": expected 64 lowercase hex digits (the file's sha256, as `sha256sum` prints it)
    hint: values that reach the Dockerfile must match their grammar exactly; nothing was rendered
    error: pins.toml:76:12: invalid wheel file name "tilelang-0.1.11.tar.gz": expected NAME-VERSION[-BUILD]-PYTHON-ABI-PLATFORM.whl, each part letters, digits, '.', '_' or '+'
    hint: values that reach the Dockerfile must match their grammar exactly; nothing was rendered
    error: pins.toml:36:1: pin `cutlass-dsl` installs nothing (install = false) but records `files`
    hint: drop `files`: the base supplies the package, and nothing is downloaded
    "#);
}

/// A forge.lock whose base, as `verify-digest --contents` read it, runs `glibc`.
fn lock_with_base_glibc(glibc: &str) -> String {
    crate::support::default_recipe_lock(&format!("glibc = \"{glibc}\"\npython = \"3.12\"\n"))
}

/// The real tilelang 0.1.11 wheel is manylinux_2_34: a base that runs glibc 2.28 cannot load
/// it: `render` refuses the recipe, and `build --dry-run` refuses it once the Dockerfile is
/// rendered, before anything is patched or built; on glibc 2.39 it loads.
#[test]
fn a_wheel_the_bases_glibc_cannot_load_is_refused_at_load() {
    let context = TestContext::default_recipe();
    context.write("forge.lock", &lock_with_base_glibc("2.28"));
    let mut refusals = String::new();
    for command in [&["render"][..], &["build", "--dry-run"][..]] {
        let run = context.forge(command).expect_code(1);
        refusals.push_str(&run.stderr);
    }
    // apache-tvm-ffi has a manylinux2014 file too: pip takes that one there.
    forge_snapshot!(refusals, context.path(), @"
    warning: pin `flashinfer`: no sha256 recorded for flashinfer-python, flashinfer-cubin, flashinfer-jit-cache, so the Dockerfile installs them unchecked (`forge pin bump flashinfer --to 0.6.14` downloads and records them)
    error: the base runs glibc 2.28 (forge.lock, from `verify-digest --contents`), which cannot load tilelang: tilelang-0.1.11-cp38-abi3-manylinux_2_34_aarch64.whl needs glibc 2.34
    hint: move the pin to a version with a wheel for this glibc (`forge pin bump NAME --to VERSION` records its files), or move the base (`forge pin bump base`, then `forge build` and `forge verify-digest --contents`)
        Rendered Dockerfile sha256:<digest>
    warning: pin `flashinfer`: no sha256 recorded for flashinfer-python, flashinfer-cubin, flashinfer-jit-cache, so the Dockerfile installs them unchecked (`forge pin bump flashinfer --to 0.6.14` downloads and records them)
    error: the base runs glibc 2.28 (forge.lock, from `verify-digest --contents`), which cannot load tilelang: tilelang-0.1.11-cp38-abi3-manylinux_2_34_aarch64.whl needs glibc 2.34
    hint: move the pin to a version with a wheel for this glibc (`forge pin bump NAME --to VERSION` records its files), or move the base (`forge pin bump base`, then `forge build` and `forge verify-digest --contents`)
    ");
    context.write("forge.lock", &lock_with_base_glibc("2.39"));
    context.forge(&["render"]).expect_code(0);
}

/// With the base's glibc recorded, a move records only the files that load there, and refuses
/// a version with none.
#[test]
fn pin_bump_records_only_the_files_the_bases_glibc_loads() {
    const NEWER_GLIBC: &str = "apache_tvm_ffi-0.1.11-cp312-abi3-manylinux_2_34_aarch64.whl";
    let (context, index, hashes) = unhashed_recipe_and_index();
    index.publish_bytes("apache-tvm-ffi", NEWER_GLIBC, &wheel(NEWER_GLIBC, "served"));
    context.write("forge.lock", &lock_with_base_glibc("2.28"));
    let env = [("FORGE_INDEX_URL", index.url())];
    let env: Vec<(&str, &str)> = env
        .iter()
        .map(|(name, value)| (*name, value.as_str()))
        .collect();
    forge(
        &context,
        &["pin", "bump", "apache-tvm-ffi", "--to", "0.1.11"],
        &env,
    )
    .expect_code(0);
    let pins = context.read("pins.toml");
    assert_contains(
        &pins,
        &format!(
            "files = [\n  {{ file = \"{OLD_GLIBC}\", sha256 = \"{}\" }},\n  {{ file = \"{NEW_GLIBC}\", sha256 = \"{}\" }},\n]\n",
            hash_of(&hashes, OLD_GLIBC),
            hash_of(&hashes, NEW_GLIBC)
        ),
    );
    assert!(!pins.contains(NEWER_GLIBC), "{pins}");
    let run = forge(
        &context,
        &["pin", "bump", "tilelang", "--to", "0.1.11"],
        &env,
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    forge_snapshot!(run.stderr, context.path(), @"
    error: refusing to move tilelang to 0.1.11: no wheel of tilelang 0.1.11 loads on linux/aarch64, Python 3.12, glibc 2.28 (offered: cp38-abi3-manylinux_2_34_aarch64)
    hint: the image needs a wheel of the package for its platform, Python and glibc: pick a version that has one, or move the base; pins.toml was not changed
    ");
    assert_eq!(context.read("pins.toml"), pins);
}
