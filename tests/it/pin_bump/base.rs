//! The base image: moved to the newest tag matching its pattern with the digest recorded, on a
//! real `docker-registry` on loopback, with credentials from the environment, docker's
//! configuration, a credential helper, or a bearer token realm.

use super::*;
use crate::support::snapshot::forge_snapshot;

/// A registry for the base-image tests started by `start`, or `None` (with the reason printed)
/// where the tools are missing outside CI; in CI a missing tool fails the test.
fn registry(start: fn() -> RegistryServer) -> Option<RegistryServer> {
    tools_or_skip().then(start)
}

fn tools_or_skip() -> bool {
    match registry::missing_tools() {
        None => true,
        Some(reason) if std::env::var_os("CI").is_some() => {
            panic!("{reason}: ci/test installs docker-registry, skopeo and openssl")
        }
        Some(reason) => {
            crate::support::note(&format!(
                "skipped: {reason} (apt-get install docker-registry skopeo openssl)"
            ));
            false
        }
    }
}

/// The tag the base starts at in the registry tests.
const BASE_TAG: &str = "2026-07-01-v0.24.0";

/// The default recipe with its base at `BASE_TAG` on `registry`, following dated tags, and
/// its pins.toml then.
fn recipe_on_local_base(registry: &RegistryServer) -> (TestContext, String) {
    let context = TestContext::default_recipe_on_indexes();
    context.edit(
        "pins.toml",
        "image = \"ghcr.io/aeon-7/aeon-vllm-ultimate:2026-07-01-v0.24.0\"\n",
        &format!(
            "image = \"{}/aeon-7/base:{BASE_TAG}\"\ntags = \"????-??-??-v*\"      # dated releases only\n",
            registry.address()
        ),
    );
    let before = context.read("pins.toml");
    (context, before)
}

/// Only the base is looked at when the other pins' upstreams answer: DeepGEMM pointed at a
/// local remote, and an index of the current versions, both to keep while forge runs.
fn answering_upstreams(context: &TestContext) -> (GitRemote, IndexServer) {
    let remote = GitRemote::new();
    with_git_remote(context, &remote);
    (remote, default_index())
}

/// Panics unless the first pin `pin outdated --json` lists is the base, whose newest tag is
/// 2026-07-15-v0.25.0.
#[track_caller]
fn assert_base_outdated(json: &serde_json::Value) {
    let base = &json["pins"][0];
    assert_eq!(base["name"], "base");
    assert_eq!(base["newest"], "2026-07-15-v0.25.0");
}

/// Panics unless pins.toml names the base at `tag` on `registry` and records `digest`.
#[track_caller]
fn assert_base_at(context: &TestContext, registry: &RegistryServer, tag: &str, digest: &str) {
    let pins = context.read("pins.toml");
    assert_contains(
        &pins,
        &format!("{}/aeon-7/base:{tag}\"\n", registry.address()),
    );
    assert_contains(&pins, &format!("digest = \"{digest}\"\n"));
}

#[test]
fn the_base_moves_to_the_newest_matching_tag_and_records_its_digest() {
    let Some(registry) = registry(RegistryServer::start) else {
        return;
    };
    for tag in [
        "2026-06-01-v0.23.0",
        "2026-07-01-v0.24.0",
        "2026-07-15-v0.25.9",
        "latest",
        "2026-07-15-rc",
    ] {
        registry.push("aeon-7/base", tag);
    }
    let newest = registry.push("aeon-7/base", "2026-07-15-v0.25.10");
    let (context, before) = recipe_on_local_base(&registry);

    let run = forge(&context, &["pin", "bump", "base"], &[]).expect_code(0);
    forge_snapshot!(format!("{}{}", run.stdout, run.stderr), context.path(), @r#"
        Bumping base 127.0.0.1:<port>/aeon-7/base:2026-07-01-v0.24.0 -> 127.0.0.1:<port>/aeon-7/base:2026-07-15-v0.25.10@sha256:<digest> (the newest tag matching ????-??-??-v*)
        Updated ci/Dockerfile.rendered (the committed render, sha256:<digest>)
        Updated pins.toml: [base] image = "127.0.0.1:<port>/aeon-7/base:2026-07-15-v0.25.10", [base] digest = "sha256:<digest>"
       Rendered Dockerfile sha256:<digest> (was sha256:<digest>)
    Invalidated 16 of 16 steps, from step 1 (Dockerfile line 5) on:
           step  1/16  FROM 127.0.0.1:<port>/aeon-7/base:2026-07-15-v0.25.10@sha256:a85320a6fd8fce47a37e3b70d13…
           step  2/16  SHELL ["/bin/bash", "-o", "pipefail", "-c"]
           step  3/16  ARG SOURCE_DATE_EPOCH=<short>
           step  4/16  ENV TORCH_CUDA_ARCH_LIST=12.1a
           step  5/16  ENV VLLM_DEEP_GEMM_WARMUP=skip
           step  6/16  RUN python3 -c "import ctypes, sys, torch; n = ctypes.c_int(); ctypes.CDLL('libnccl.so.…
           step  7/16  COPY overlays/cutlass-dsl/thrmma_shim.py /opt/forge/shims/cutlass-dsl.py
           step  8/16  RUN python3 -c "import importlib.metadata as m, sys; import cutlass; want = [('nvidia-c…
           step  9/16  RUN git clone --quiet --filter=blob:none --branch nv_dev --single-branch https://github…
           step 10/16  RUN printf '%s\n' 'apache-tvm-ffi==0.1.11 --hash=sha256:da2c8d07fdc737d1ba75f4de25c29f1…
           step 11/16  RUN printf '%s\n' 'flashinfer-python==0.6.14' 'flashinfer-cubin==0.6.14' | python3 -m p…
           step 12/16  COPY overlays/vllm/ /usr/local/lib/python3.12/site-packages/vllm/
           step 13/16  RUN python3 -c "import vllm" && (python3 -P -c "import sys; import importlib.util; sour…
           step 14/16  ARG FORGE_REVISION=unknown
           step 15/16  LABEL org.opencontainers.image.source="https://github.com/aeon-7/vllm-ultimate-deepseek…
           step 16/16  ENTRYPOINT ["/bin/bash"]
    "#);
    let image = format!("{}/aeon-7/base", registry.address());
    // The tag moves, the digest skopeo sees is recorded right after the image, nothing else moves.
    let expected = before.replacen(
        &format!("image = \"{image}:2026-07-01-v0.24.0\"\n"),
        &format!("image = \"{image}:2026-07-15-v0.25.10\"\n"),
        1,
    );
    let expected = expected.replacen(
        "tags = \"????-??-??-v*\"      # dated releases only\n",
        &format!("tags = \"????-??-??-v*\"      # dated releases only\ndigest = \"{newest}\"\n"),
        1,
    );
    assert_eq!(context.read("pins.toml"), expected);
    // FROM changed: every step runs again.
    // Every step runs again; the listing cuts the new digest at its column.
    let cut = regex::Regex::new(r"sha256:[0-9a-f]+…").unwrap();
    let said = cut.replace_all(&run.stderr, "sha256:<cut>…");
    forge_snapshot!("base_bump_invalidates_every_step", said, context.path());
    let render = forge(&context, &["render"], &[]).expect_code(0);
    assert_contains(
        &render.stdout,
        &format!("FROM {image}:2026-07-15-v0.25.10@{newest}\n"),
    );

    // At the newest tag with its digest: nothing to do.
    let now = context.read("pins.toml");
    let run = forge(&context, &["pin", "bump", "base"], &[]).expect_code(0);
    let fresh = format!("Fresh base is at {image}:2026-07-15-v0.25.10@{newest}");
    assert_unchanged_saying(&run, &context, &now, &[&fresh]);

    // --to names a tag, older ones too; its digest replaces the recorded one in place.
    let older = registry.digest("aeon-7/base", "2026-06-01-v0.23.0");
    forge(
        &context,
        &["pin", "bump", "base", "--to", "2026-06-01-v0.23.0"],
        &[],
    )
    .expect_code(0);
    assert_eq!(
        context.read("pins.toml"),
        now.replacen("2026-07-15-v0.25.10", "2026-06-01-v0.23.0", 1)
            .replacen(&newest, &older, 1)
    );
}

#[test]
fn a_base_without_a_tag_pattern_only_records_the_digest_of_its_tag() {
    let Some(registry) = registry(RegistryServer::start) else {
        return;
    };
    let digest = registry.push("aeon-7/base", BASE_TAG);
    registry.push("aeon-7/base", "2026-07-15-v0.25.0");
    let context = TestContext::default_recipe_on_indexes();
    context.edit(
        "pins.toml",
        "image = \"ghcr.io/aeon-7/aeon-vllm-ultimate:2026-07-01-v0.24.0\"\n",
        &format!(
            "image = \"{}/aeon-7/base:2026-07-01-v0.24.0\"\n",
            registry.address()
        ),
    );
    let before = context.read("pins.toml");
    forge(&context, &["pin", "bump", "base"], &[]).expect_code(0);
    assert_eq!(
        context.read("pins.toml"),
        before.replacen(
            "/aeon-7/base:2026-07-01-v0.24.0\"\n",
            &format!("/aeon-7/base:2026-07-01-v0.24.0\"\ndigest = \"{digest}\"\n"),
            1
        )
    );
}

#[test]
fn an_unreachable_registry_or_a_missing_tag_changes_nothing() {
    let Some(registry) = registry(RegistryServer::start) else {
        return;
    };
    registry.push("aeon-7/base", BASE_TAG);
    let (context, before) = recipe_on_local_base(&registry);

    let run = forge(
        &context,
        &["pin", "bump", "base", "--to", "2027-01-01-v1.0.0"],
        &[],
    )
    .expect_code(2);
    forge_snapshot!(format!("{}{}", run.stdout, run.stderr), context.path(), @r"
        error: cannot look up the base image 127.0.0.1:<port>/aeon-7/base:2026-07-01-v0.24.0; pins.toml was not changed
        caused by: 127.0.0.1:<port>/aeon-7/base:2027-01-01-v1.0.0 not found on the registry (http://127.0.0.1:<port>/v2/aeon-7/base/manifests/2027-01-01-v1.0.0, HTTP 404)
        hint: check the image reference in pins.toml [base]
        ");
    assert_unchanged_saying(
        &run,
        &context,
        &before,
        &["pins.toml was not changed", "not found on the registry"],
    );

    let address = registry.address().to_owned();
    drop(registry);
    let run = forge(&context, &["pin", "bump", "base"], &[]).expect_code(2);
    forge_snapshot!(format!("{}{}", run.stdout, run.stderr), context.path(), @r"
        error: cannot look up the base image 127.0.0.1:<port>/aeon-7/base:2026-07-01-v0.24.0; pins.toml was not changed
        caused by: cannot reach the registry at http://127.0.0.1:<port>/v2/aeon-7/base/tags/list?n=1000: io: Connection refused (os error 111)
        hint: check the registry host and the network; a registry without TLS on another host needs --insecure-registry HOST
        ");
    let unreachable =
        format!("cannot reach the registry at http://{address}/v2/aeon-7/base/tags/list");
    assert_unchanged_saying(&run, &context, &before, &[&unreachable]);
}

#[test]
fn outdated_follows_the_base_tags() {
    let Some(registry) = registry(RegistryServer::start) else {
        return;
    };
    registry.push("aeon-7/base", BASE_TAG);
    registry.push("aeon-7/base", "2026-07-15-v0.25.0");
    let (context, _) = recipe_on_local_base(&registry);
    let (_remote, index) = answering_upstreams(&context);
    let json = forge_on(&context, &index, &["--json", "pin", "outdated"])
        .expect_code(0)
        .json();
    assert_base_outdated(&json);
    assert_eq!(json["pins"][0]["state"], "outdated");
}

#[test]
fn a_registry_that_wants_credentials_gets_them_from_the_environment_or_docker_config() {
    let Some(registry) = registry(RegistryServer::start_with_basic_auth) else {
        return;
    };
    let (user, password) = registry.credentials().expect("credentials");
    let digest = registry.push("aeon-7/base", BASE_TAG);
    let (context, before) = recipe_on_local_base(&registry);
    let recorded = before.replacen(
        "# dated releases only\n",
        &format!("# dated releases only\ndigest = \"{digest}\"\n"),
        1,
    );

    let run = forge(&context, &["pin", "bump", "base"], &[]).expect_code(2);
    let log_in = format!("hint: log in with `docker login {}`", registry.address());
    assert_unchanged_saying(
        &run,
        &context,
        &before,
        &["the registry refused access to", "(HTTP 401)", &log_in],
    );

    // The recipe publishes to ghcr.io: the environment's credentials go to the base's registry
    // only when FORGE_REGISTRY_HOST names it.
    forge(
        &context,
        &["pin", "bump", "base"],
        &[
            registry.credentials_env().as_slice(),
            &[("FORGE_REGISTRY_HOST", registry.address())],
        ]
        .concat(),
    )
    .expect_code(0);
    assert_eq!(context.read("pins.toml"), recorded);

    // The same through the Docker client's config.json, and a wrong password refused.
    context.write("pins.toml", &before);
    let docker = context.path().join(".docker-config");
    let auth = |password: &str| {
        use base64::Engine as _;
        let token = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
        format!(
            "{{\"auths\": {{\"{}\": {{\"auth\": \"{token}\"}}}}}}",
            registry.address()
        )
    };
    std::fs::create_dir_all(&docker).unwrap();
    std::fs::write(docker.join("config.json"), auth("wrong")).unwrap();
    let run = forge(
        &context,
        &["pin", "bump", "base"],
        &[("DOCKER_CONFIG", docker.to_str().unwrap())],
    )
    .expect_code(2);
    assert_unchanged_saying(
        &run,
        &context,
        &before,
        &["hint: the credentials were refused"],
    );
    std::fs::write(docker.join("config.json"), auth(password)).unwrap();
    forge(
        &context,
        &["pin", "bump", "base"],
        &[("DOCKER_CONFIG", docker.to_str().unwrap())],
    )
    .expect_code(0);
    assert_eq!(context.read("pins.toml"), recorded);
}

#[test]
fn a_registry_that_wants_credentials_gets_them_from_a_credential_helper() {
    let Some(registry) = registry(RegistryServer::start_with_basic_auth) else {
        return;
    };
    let (user, password) = registry.credentials().expect("credentials");
    let address = registry.address();
    registry.push("aeon-7/base", BASE_TAG);
    let newest = registry.push("aeon-7/base", "2026-07-15-v0.25.0");
    let (context, before) = recipe_on_local_base(&registry);
    let run_with = |helper: &CredentialHelper, config: serde_json::Value, args: &[&str]| {
        let folder = helper.docker_config(&config);
        forge(
            &context,
            args,
            &[
                ("DOCKER_CONFIG", folder.to_str().unwrap()),
                ("PATH", &helper.path()),
            ],
        )
    };

    // `credHelpers`: the bump reads the tags and the digest with the helper's credentials.
    let helper = CredentialHelper::knowing(&[(address, user, password)]);
    let by_registry = serde_json::json!({ "credHelpers": { address: HELPER } });
    run_with(&helper, by_registry.clone(), &["pin", "bump", "base"]).expect_code(0);
    assert_base_at(&context, &registry, "2026-07-15-v0.25.0", &newest);
    assert_eq!(helper.asked(), [address]);

    // `credsStore`: `pin outdated` follows the base tags with the store's credentials.
    context.write("pins.toml", &before);
    let (_remote, index) = answering_upstreams(&context);
    let store = CredentialHelper::knowing(&[(address, user, password)]);
    let folder = store.docker_config(&serde_json::json!({ "credsStore": HELPER }));
    let json = forge(
        &context,
        &["--json", "pin", "outdated"],
        &[
            ("DOCKER_CONFIG", folder.to_str().unwrap()),
            ("PATH", &store.path()),
            ("FORGE_INDEX_URL", &index.url()),
        ],
    )
    .expect_code(0)
    .json();
    assert_base_outdated(&json);
    assert_eq!(store.asked(), [address]);

    // A helper that holds nothing for the registry: exit 2 naming both, nothing written.
    let with_remote = context.read("pins.toml");
    let stranger = CredentialHelper::knowing(&[("127.0.0.1:1", user, password)]);
    let run = run_with(&stranger, by_registry, &["pin", "bump", "base"]).expect_code(2);
    let holds_none = format!("docker-credential-{HELPER} holds none for {address}");
    assert_unchanged_saying(&run, &context, &with_remote, &[&holds_none]);
}

#[test]
fn a_bearer_challenge_is_answered_with_a_token_from_its_realm() {
    let Some(registry) = registry(RegistryServer::start_with_token_auth) else {
        return;
    };
    let digest = registry.push("aeon-7/base", BASE_TAG);
    registry.push("aeon-7/base", "2026-07-15-v0.25.0");
    let newest = registry.digest("aeon-7/base", "2026-07-15-v0.25.0");
    assert_ne!(digest, newest);
    let (context, _) = recipe_on_local_base(&registry);
    let before_requests = registry.token_requests().len();

    forge(&context, &["pin", "bump", "base"], &[]).expect_code(0);
    assert_base_at(&context, &registry, "2026-07-15-v0.25.0", &newest);
    // forge asked the realm for the scope and service of the challenge, once, anonymously.
    let requests = registry.token_requests();
    let asked: Vec<&String> = requests[before_requests..].iter().collect();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_contains(asked[0], "scope=repository%3Aaeon-7%2Fbase%3Apull");
    assert_contains(asked[0], "service=forge-test-registry");
    assert!(!asked[0].contains("Authorization"), "{asked:?}");

    // With credentials for the registry, a realm on another port (another origin) is still
    // asked anonymously: the credentials stay with the registry (tests/it/credentials.rs has a
    // realm on the registry's own origin, which gets them).
    forge(
        &context,
        &["pin", "bump", "base", "--to", "2026-07-01-v0.24.0"],
        &[
            ("FORGE_REGISTRY_USER", "robot"),
            ("FORGE_REGISTRY_PASSWORD", "secret"),
            ("FORGE_REGISTRY_HOST", registry.address()),
        ],
    )
    .expect_code(0);
    assert_contains(
        &context.read("pins.toml"),
        &format!("digest = \"{digest}\"\n"),
    );
    let requests = registry.token_requests();
    assert!(
        requests
            .last()
            .is_some_and(|request| !request.contains("Authorization")),
        "{requests:?}"
    );
}
