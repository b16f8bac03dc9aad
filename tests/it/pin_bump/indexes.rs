//! Where the package index comes from and how it is read: one index per wheel, pip's settings
//! and netrc (a password-protected index, as pip reaches it), PyPI's JSON API, the index of
//! pins.toml; unknown pins, unreachable indexes and missing versions; and, where asked, the real
//! PyPI.

use super::*;
use crate::support::snapshot::forge_snapshot;

#[test]
fn each_wheel_is_looked_up_on_its_own_index_and_pip_settings_choose_the_default() {
    let context = TestContext::default_recipe_on_indexes();
    let main = default_index();
    main.wheel("flashinfer-python", "0.6.15")
        .wheel("flashinfer-cubin", "0.6.15");
    let wheels = IndexServer::start();
    wheels.wheel("flashinfer-jit-cache", "0.6.14+cu130");
    context.edit(
        "pins.toml",
        "index = \"https://flashinfer.ai/whl/cu130\"",
        &format!("index = \"{}\"", wheels.url()),
    );
    let before = context.read("pins.toml");

    // The jit-cache wheel is missing on its own index: refused, naming that index.
    let run = forge(
        &context,
        &["pin", "bump", "flashinfer"],
        &[("PIP_INDEX_URL", &main.url())],
    )
    .expect_code(0);
    forge_snapshot!(format!("{}{}", run.stdout, run.stderr), context.path(), @r"
        warning: skipping flashinfer 0.6.15: wheel flashinfer-jit-cache 0.6.15+cu130 is not on http://127.0.0.1:<port>/simple
               Fresh flashinfer is at 0.6.14, the newest allowed version (1 newer held back; `forge pin outdated` says why)
        ");
    let missing = format!(
        "wheel flashinfer-jit-cache 0.6.15+cu130 is not on {}",
        wheels.url()
    );
    assert_unchanged_saying(&run, &context, &before, &[&missing]);
    assert!(
        main.requests()
            .iter()
            .all(|path| !path.contains("jit-cache")),
        "the jit-cache wheel must be asked on its own index: {:?}",
        main.requests()
    );

    // Published there: the bump goes through, with the default index from a pip config file.
    wheels.wheel("flashinfer-jit-cache", "0.6.15+cu130");
    let config = context.path().join("pip.conf");
    std::fs::write(&config, format!("[global]\nindex-url = {}\n", main.url())).unwrap();
    forge(
        &context,
        &["pin", "bump", "flashinfer"],
        &[("PIP_CONFIG_FILE", config.to_str().unwrap())],
    )
    .expect_code(0);
    assert_flashinfer_moved(
        &context,
        &before,
        FLASHINFER_0_6_14,
        FLASHINFER_0_6_15,
        "0.6.15",
    );
}

const INDEX_PASSWORD: &str = "n3trc-s3cret-pw";

/// pip, the judge of which index set a configuration names: the versions of `package` it finds
/// for the image's platform with `env`, as `pip index versions` prints them.
fn pip_index_versions(context: &TestContext, package: &str, env: &[(&str, &str)]) -> String {
    let home = context.path().join(".home");
    let output = Command::new("python3")
        .args(["-m", "pip", "index", "versions", package])
        .args([
            "--platform",
            "manylinux_2_28_aarch64",
            "--python-version",
            "3.12",
        ])
        .args([
            "--only-binary",
            ":all:",
            "--disable-pip-version-check",
            "--no-cache-dir",
        ])
        .env_remove("PIP_INDEX_URL")
        .env_remove("PIP_EXTRA_INDEX_URL")
        .env_remove("PIP_CONFIG_FILE")
        .env_remove("NETRC")
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_CONFIG_DIRS", home.join("xdg"))
        .envs(env.iter().copied())
        .output()
        .expect("python3 -m pip");
    assert!(
        output.status.success(),
        "pip: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// Writes a netrc with the login `protected` wants, a pip.conf naming `protected` and `extra`,
/// and a user pip.conf naming an index nobody serves; the netrc's and the pip.conf's paths.
fn pip_settings(
    context: &TestContext,
    protected: &IndexServer,
    extra: &IndexServer,
) -> (std::path::PathBuf, std::path::PathBuf) {
    let netrc = context.path().join("netrc");
    std::fs::write(
        &netrc,
        format!("machine 127.0.0.1\n  login forge\n  password {INDEX_PASSWORD}\n"),
    )
    .unwrap();
    let pip_conf = context.path().join("pip.conf");
    std::fs::write(
        &pip_conf,
        format!(
            "[global]\nindex-url = {}\nextra-index-url =\n    {}\n",
            protected.url(),
            extra.url()
        ),
    )
    .unwrap();
    // The user's pip.conf names an index nobody serves: pip skips it when PIP_CONFIG_FILE exists.
    let user_conf = context.path().join(".home/.config/pip");
    std::fs::create_dir_all(&user_conf).unwrap();
    std::fs::write(
        user_conf.join("pip.conf"),
        format!(
            "[global]\nindex-url = http://127.0.0.1:{}/simple\n",
            free_port()
        ),
    )
    .unwrap();
    (netrc, pip_conf)
}

/// pip's configuration as pip reads it: the index from `PIP_INDEX_URL` or pip.conf, the extra
/// indexes from `PIP_EXTRA_INDEX_URL` (space separated) or pip.conf's `extra-index-url`, a
/// `PIP_CONFIG_FILE` that exists shutting the user's pip.conf out, and netrc credentials for a
/// password-protected index; pip finds the same versions with the same settings, and the
/// password is never printed.
#[test]
fn pip_settings_and_netrc_reach_a_password_protected_index_as_pip_does() {
    let (context, _remote) = recipe_at_the_git_head();
    let protected = default_index();
    protected.require_login("forge", INDEX_PASSWORD);
    let extra = IndexServer::start();
    extra.wheel("tilelang", "0.1.12");
    context.edit(
        "pins.toml",
        "index = \"https://flashinfer.ai/whl/cu130\"",
        &format!("index = \"{}\"", protected.url()),
    );
    let (netrc, pip_conf) = pip_settings(&context, &protected, &extra);
    let (netrc, pip_conf) = (netrc.to_str().unwrap(), pip_conf.to_str().unwrap());
    // Two extra indexes, space separated; the second one has no tilelang at all.
    let empty = IndexServer::start();
    let both = format!("{} {}", extra.url(), empty.url());
    let protected_url = protected.url();
    let settings: [Vec<(&str, &str)>; 2] = [
        vec![("PIP_CONFIG_FILE", pip_conf), ("NETRC", netrc)],
        vec![
            ("PIP_INDEX_URL", &protected_url),
            ("PIP_EXTRA_INDEX_URL", &both),
            ("NETRC", netrc),
        ],
    ];
    for env in &settings {
        let run = forge(&context, &["pin", "outdated"], env).expect_code(0);
        assert_eq!(
            outdated_row(&run.stdout, "tilelang"),
            ["tilelang", "0.1.11", "0.1.12", "0.1.12", "outdated"],
            "{env:?}"
        );
        assert_eq!(
            outdated_row(&run.stdout, "flashinfer"),
            ["flashinfer", "0.6.14", "0.6.14", "0.6.14", "up-to-date"]
        );
        assert!(!run.stdout.contains(INDEX_PASSWORD) && !run.stderr.contains(INDEX_PASSWORD));
        assert!(
            !protected
                .requests()
                .iter()
                .any(|line| line.starts_with("refused ")),
            "{:?}",
            protected.requests()
        );
        assert_contains(
            &pip_index_versions(&context, "tilelang", env),
            "Available versions: 0.1.12, 0.1.11",
        );
    }

    // Without the netrc entry the index refuses, and forge says so, naming the index.
    let run = forge(
        &context,
        &["pin", "outdated"],
        &[("PIP_CONFIG_FILE", pip_conf)],
    )
    .expect_code(2);
    let report = run.stdout.replace(&protected.url(), "<protected>");
    forge_snapshot!(report, context.path(), @r#"
    NAME  CURRENT  ALLOWED  NEWEST  STATE
    base  ghcr.io/aeon-7/aeon-vllm-ultimate:2026-07-01-v0.24.0  -  -  not-followed
    apache-tvm-ffi  0.1.11  -  -  error
    cutlass-dsl  4.6.0  -  -  in-base
    deepgemm  <short>  <short>  <short>  up-to-date
    flashinfer  0.6.14  -  -  error
    nccl  2.28.9  -  -  in-base
    tilelang  0.1.11  -  -  error

    base: not followed: declare [base] tags = "PATTERN" to follow newer tags
    apache-tvm-ffi: the package index at <protected>/apache-tvm-ffi/ answered HTTP 401
    cutlass-dsl: in the base image (install = false): moves with `forge pin bump base`, never alone
    flashinfer: the package index at <protected>/flashinfer-python/ answered HTTP 401
    nccl: asserted in the base image: moves with `forge pin bump base`
    tilelang: the package index at <protected>/tilelang/ answered HTTP 401
    "#);
}

#[test]
fn the_pypi_json_api_is_read_for_an_index_url_ending_in_pypi() {
    let context = TestContext::default_recipe_on_indexes();
    let index = default_index();
    offer_flashinfer_0_6_15(&index);
    index.wheel("flashinfer-python", "0.6.16").yank(
        "flashinfer-python",
        "flashinfer_python-0.6.16-py3-none-manylinux_2_28_aarch64.whl",
    );
    forge(
        &context,
        &[
            "pin",
            "bump",
            "flashinfer",
            "--index-url",
            &index.json_api_url(),
        ],
        &[],
    )
    .expect_code(0);
    assert_contains(
        &context.read("pins.toml"),
        "version = \"0.6.15\"\nmodule = \"flashinfer\"",
    );
    assert!(
        index
            .requests()
            .iter()
            .any(|path| path == "/pypi/flashinfer-jit-cache/json"),
        "{:?}",
        index.requests()
    );
}

#[test]
fn the_index_of_pins_toml_is_used_when_pip_names_none() {
    let context = TestContext::default_recipe_on_indexes();
    let index = default_index();
    index
        .wheel("tilelang", "0.1.13")
        .wheel("apache-tvm-ffi", "0.1.13");
    context.edit(
        "pins.toml",
        "[env]\n",
        &format!("[index]\nurl = \"{}\"\n\n[env]\n", index.url()),
    );
    forge(&context, &["pin", "bump", "tilelang"], &[]).expect_code(0);
    assert_contains(
        &context.read("pins.toml"),
        "version = \"0.1.13\"\ngroup = \"tvm\"\n",
    );
    assert!(
        index
            .requests()
            .iter()
            .any(|path| path == "/simple/tilelang/")
    );
}

#[test]
fn an_unknown_pin_suggests_the_closest_name() {
    let context = TestContext::default_recipe_on_indexes();
    let before = context.read("pins.toml");
    let run = forge(&context, &["pin", "bump", "flashinfr"], &[]).expect_code(2);
    forge_snapshot!(format!("{}{}", run.stdout, run.stderr), context.path(), @r"
        error: pins.toml has no pin `flashinfr`
        hint: did you mean `flashinfer`? (`forge pin list` shows every pin)
        ");
    assert_unchanged_saying(
        &run,
        &context,
        &before,
        &[
            "error: pins.toml has no pin `flashinfr`",
            "hint: did you mean `flashinfer`?",
        ],
    );
}

#[test]
fn an_unreachable_index_names_the_url_and_changes_nothing() {
    let context = TestContext::default_recipe_on_indexes();
    let before = context.read("pins.toml");
    // A port nobody listens on: bind one, note it, close it.
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}/simple");
    let run = forge(
        &context,
        &["pin", "bump", "flashinfer", "--index-url", &url],
        &[],
    )
    .expect_code(2);
    forge_snapshot!(format!("{}{}", run.stdout, run.stderr), context.path(), @r"
        error: cannot look up the versions of flashinfer; pins.toml was not changed
        caused by: cannot reach the package index at http://127.0.0.1:<port>/simple/flashinfer-python/: io: Connection refused (os error 111)
        hint: check the URL and the network; on an air-gapped machine point forge at a mirror with --index-url URL or FORGE_INDEX_URL
        ");
    let unreachable = format!("cannot reach the package index at {url}/flashinfer-python/");
    assert_unchanged_saying(
        &run,
        &context,
        &before,
        &["pins.toml was not changed", &unreachable, "hint: "],
    );
}

#[test]
fn a_version_missing_from_the_index_is_an_error() {
    let (context, before, index) = recipe_and_index();
    let run = forge_on(
        &context,
        &index,
        &["pin", "bump", "flashinfer", "--to", "0.6.99"],
    )
    .expect_code(2);
    forge_snapshot!(format!("{}{}", run.stdout, run.stderr), context.path(), @r"
        error: flashinfer-python 0.6.99 is not on http://127.0.0.1:<port>/simple
        hint: `forge pin outdated` lists the versions on offer; leave --to out to move flashinfer to the newest allowed one
        ");
    let missing = format!("error: flashinfer-python 0.6.99 is not on {}", index.url());
    assert_unchanged_saying(
        &run,
        &context,
        &before,
        &[&missing, "hint: `forge pin outdated` lists"],
    );
}

#[test]
fn pypi_answers_for_flashinfer_python() {
    if std::env::var("FORGE_TEST_PYPI").as_deref() != Ok("1") {
        crate::support::note(
            "skipped: set FORGE_TEST_PYPI=1 to ask the real PyPI for flashinfer-python",
        );
        return;
    }
    let context = TestContext::default_recipe_on_indexes();
    // Only the wheel PyPI serves: the cu130 jit-cache wheel lives on FlashInfer's own index.
    context.edit(
        "pins.toml",
        "  { package = \"flashinfer-cubin\" },\n  { package = \"flashinfer-jit-cache\", local = \"cu130\", index = \"https://flashinfer.ai/whl/cu130\" },\n",
        "",
    );
    let run = forge(
        &context,
        &[
            "--json",
            "pin",
            "bump",
            "flashinfer",
            "--dry-run",
            "--index-url",
            "https://pypi.org/simple",
        ],
        &[],
    )
    .expect_code(0);
    // Whatever PyPI offers today, the answer parsed: a move to a PEP 440 version, or none.
    let document = run.json();
    if document["changed"] == true {
        let to = document["to"].as_str().expect("a version");
        assert!(
            to.parse::<pep440_rs::Version>().is_ok(),
            "not a version: {to}"
        );
    } else {
        assert_eq!(document["changed"], false, "{document}");
    }
}
