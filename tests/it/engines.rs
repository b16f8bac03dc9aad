//! The engines users run, each a real daemon (`support::engines`): Docker 20.10, 26.1 with
//! containerd 1.7, 28.5 with containerd 2.1, and 28.5 with the containerd image store. The base
//! comes from a registry on loopback, pushed once and pulled by each engine, as the real base
//! comes from ghcr.io.
//!
//! One recipe gives one image id and one pushed manifest digest on all four, with either
//! builder, and what one engine pushed any other pulls; whatever the build cache holds (a build
//! under another `SOURCE_DATE_EPOCH` first, whose context had other times) a build ends on the
//! image a `--no-cache` build makes; a new date is a new image even when the Dockerfile does not
//! change with it. On each engine, one test each, every journey passes: the maintainer's (build,
//! a no-change rebuild, `--no-cache`, `--push --sign`, `verify-digest --contents` and
//! `--rebuild`), the tester's (`pull`, `verify-digest REF --key`, `report`) and a cold CI
//! runner's (an empty build cache, the registry's cache, the published image again).

use crate::support::engines::{Engine, engines};
use crate::support::image_guard::{ImageGuard, LABEL};
use crate::support::images::{DATED_TAG, Example, Tagged, base_image, docker, docker_ready};
use crate::support::keys::Keys;
use crate::support::registry::{RegistryServer, registry_tools_missing};
use crate::support::{Run, TestContext, assert_contains};

/// The base on the registry, pushed from the machine's daemon, which keeps it under its tag as a
/// maintainer's daemon keeps what it pulled; its reference pinned by digest.
struct RegistryBase {
    image: String,
    digest: String,
    _tagged: Tagged,
}

impl RegistryBase {
    /// Pushes the offline example's base to `registry`.
    fn push(registry: &RegistryServer) -> Self {
        let image = format!(
            "{}/forge-test/base-{}:busybox",
            registry.address(),
            std::process::id()
        );
        docker(&["tag", base_image(), &image]);
        docker(&["push", &image]);
        let path = image
            .strip_prefix(&format!("{}/", registry.address()))
            .unwrap();
        let (repository, tag) = path.split_once(':').unwrap();
        let digest = registry.digest(repository, tag);
        Self {
            _tagged: Tagged(vec![image.clone()]),
            image,
            digest,
        }
    }

    /// The offline example under `repository`, built on this base, its images labelled for
    /// `guard`: one recipe, whichever repository each engine pushes it to.
    fn example(&self, repository: &str, guard: &ImageGuard) -> Example {
        let example = Example::with_repository(repository);
        example.context.edit(
            "pins.toml",
            &crate::support::images::base_line(),
            &format!("image = \"{}\"\ndigest = \"{}\"", self.image, self.digest),
        );
        example.context.edit(
            "pins.toml",
            &format!("\"{LABEL}\" = \"{repository}\""),
            &guard.label_entry(),
        );
        example
    }
}

/// The offline example on `base` under a repository of `engine`'s own named for `test`, its
/// images under a guard of their own, `registry` bridged to the engine while the third value
/// lives.
fn example_on(
    engine: &Engine,
    (base, registry): (&RegistryBase, &RegistryServer),
    test: &str,
) -> (Example, ImageGuard, Option<crate::support::node::Bridge>) {
    let bridge = engine.reach(registry.port());
    let repository = format!(
        "forge-test/{test}-{}-{}",
        engine.name.replace('.', "-"),
        std::process::id()
    );
    let guard = ImageGuard::new(&repository);
    let example = base.example(&repository, &guard);
    (example, guard, bridge)
}

/// `forge --json ARGS` in `context` on `engine`, with `SOURCE_DATE_EPOCH` `epoch`.
fn forge_on(engine: &Engine, context: &TestContext, args: &[&str], epoch: &str) -> Run {
    let (env, _conduit) = engine.forge_env();
    let mut env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    env.push(("SOURCE_DATE_EPOCH", epoch));
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    context.forge_with(&all, &env)
}

/// The image id and the pushed manifest digest a build's `--json` report names.
fn reported(run: &Run) -> (String, Option<String>) {
    let report = run.json();
    let id = report["image"]["id"].as_str().unwrap().to_owned();
    let pushed = report["image"]["pushed"][0]["digest"]
        .as_str()
        .map(str::to_owned);
    (id, pushed)
}

/// What the test needs of the machine: a daemon, the registry tools, and the engines.
fn matrix() -> Option<&'static [Engine]> {
    if !docker_ready() || registry_tools_missing() {
        return None;
    }
    engines()
}

/// `example` built with `builder` and pushed from `engine` to `registry`: the image id and the
/// manifest digest, which the registry holds under the dated tag and the daemon names the image
/// by (the manifest digest in a containerd store, the image id in a classic one).
fn built_and_pushed(
    engine: &Engine,
    (example, builder): (&Example, &str),
    registry: &RegistryServer,
) -> (String, String) {
    let args = [
        "build",
        "--push",
        "--builder",
        builder,
        "--progress",
        "plain",
    ];
    let run = forge_on(engine, &example.context, &args, "1783500000").expect_code(0);
    let (id, pushed) = reported(&run);
    let pushed = pushed.expect("a pushed digest");
    let repository = &example.repository;
    let path = repository
        .strip_prefix(&format!("{}/", registry.address()))
        .unwrap();
    assert_eq!(
        registry.digest(path, DATED_TAG),
        pushed,
        "{}: the registry holds what forge reported",
        engine.name
    );
    let held = engine.docker(&[
        "image",
        "inspect",
        "--format",
        "{{.Id}}",
        &format!("{repository}:latest"),
    ]);
    let expected = if engine.containerd_store {
        &pushed
    } else {
        &id
    };
    assert_eq!(&held, expected, "{}", engine.name);
    (id, pushed)
}

/// What `pusher` pushed as `repository`, pulled onto every other engine, which then holds it
/// under the dated tag.
fn pulled_everywhere_else(
    engines: &[Engine],
    pusher: &Engine,
    (repository, example): (&str, &Example),
) {
    let reference = format!("{repository}:latest");
    for engine in engines.iter().filter(|engine| engine.name != pusher.name) {
        let args = ["pull", reference.as_str(), "--host", engine.host.as_str()];
        let run = forge_on(engine, &example.context, &args, "1783500000");
        assert_contains(&run.expect_code(0).stderr, "Pulled");
        let held = engine.docker(&[
            "image",
            "inspect",
            "--format",
            "{{.Id}}",
            &format!("{repository}:{DATED_TAG}"),
        ]);
        assert!(
            !held.is_empty(),
            "{} pulled what {} pushed",
            engine.name,
            pusher.name
        );
    }
}

#[test]
fn one_recipe_gives_one_image_and_one_manifest_on_every_engine_with_either_builder() {
    let Some(engines) = matrix() else {
        return;
    };
    let _turns: Vec<_> = engines.iter().map(Engine::turn).collect();
    let registry = RegistryServer::start();
    let base = RegistryBase::push(&registry);
    let guard = ImageGuard::new(&format!("forge-test/one-{}", std::process::id()));
    let bridges: Vec<_> = engines
        .iter()
        .map(|engine| engine.reach(registry.port()))
        .collect();
    let mut pushed_by = Vec::new();
    for builder in ["buildkit", "classic"] {
        let mut made = Vec::new();
        for engine in engines {
            let repository = format!(
                "{}/forge-test/one-{}-{builder}-{}",
                registry.address(),
                engine.name.replace('.', "-"),
                std::process::id()
            );
            let example = base.example(&repository, &guard);
            let (id, pushed) = built_and_pushed(engine, (&example, builder), &registry);
            made.push((engine.name.as_str(), id, pushed));
            if builder == "buildkit" {
                pushed_by.push((engine, repository, example));
            }
        }
        let (first, id, pushed) = &made[0];
        for (name, other_id, other_pushed) in &made[1..] {
            assert_eq!(
                (other_id, other_pushed),
                (id, pushed),
                "{builder}: {name} and {first} made two images of one recipe"
            );
        }
    }
    // What each engine pushed, every other engine pulls, and then holds under both tags.
    for (pusher, repository, example) in &pushed_by {
        pulled_everywhere_else(engines, pusher, (repository, example));
    }
    drop(bridges);
}

#[test]
fn whatever_the_cache_holds_a_build_ends_on_the_image_a_no_cache_build_makes() {
    let Some(engines) = matrix() else {
        return;
    };
    let registry = RegistryServer::start();
    let base = RegistryBase::push(&registry);
    for engine in engines {
        let _turn = engine.turn();
        let (example, _guard, _bridge) = example_on(engine, (&base, &registry), "cache");
        let context = &example.context;
        let build = |args: &[&str], epoch: &str| {
            let mut all = vec!["build", "--progress", "plain"];
            all.extend_from_slice(args);
            reported(&forge_on(engine, context, &all, epoch).expect_code(0)).0
        };
        // Another SOURCE_DATE_EPOCH gives the context's files other times, which BuildKit's
        // COPY cache does not look at: the next build reuses that layer, times and all.
        build(&[], "1700000000");
        let cached = build(&["--force"], "1783500000");
        let fresh = build(&["--no-cache", "--force"], "1783500000");
        assert_eq!(
            cached, fresh,
            "{}: the cache changed the image",
            engine.name
        );
    }
}

#[test]
fn a_new_date_is_a_new_image_even_when_the_dockerfile_stays_the_same() {
    let Some(engines) = matrix() else {
        return;
    };
    let engine = &engines[0];
    let registry = RegistryServer::start();
    let base = RegistryBase::push(&registry);
    let repository = format!("forge-test/new-date-{}", std::process::id());
    let guard = ImageGuard::new(&repository);
    let example = base.example(&repository, &guard);
    let context = &example.context;
    // A template that does not write the date (no dated tag in a comment, no version or
    // created label): the Dockerfile, and so the engine's image, stay the same when it moves.
    // pins.toml's own labels stay, the guard's among them, so that the images go with the test.
    context.write(
        "templates/Dockerfile.j2",
        "FROM {{ base.reference }}\nARG SOURCE_DATE_EPOCH={{ step_source_date_epoch }}\n\
         {% for overlay in overlays %}COPY {{ overlay.from }}/ {{ overlay.to }}\nRUN {{ overlay.gate }}\n{% endfor %}\
         RUN mkdir -p {{ revisions_dir }} && echo {{ pins.app.rev }} > {{ pins.app.revision_file }}\n\
         LABEL{% for label in image.labels %} {{ label.name }}=\"{{ label.value }}\"{% endfor %}\n",
    );
    let before = reported(&forge_on(engine, context, &["build"], "1783500000").expect_code(0)).0;
    context.edit(
        "pins.toml",
        "date = \"2026-07-08\"",
        "date = \"2026-07-20\"",
    );
    let run = forge_on(engine, context, &["build"], "1783500000").expect_code(0);
    assert!(
        !run.stderr.contains("nothing to rewrite"),
        "an image normalized for another date stood in:\n{}",
        run.stderr
    );
    let after = reported(&run).0;
    assert_ne!(before, after);
    let created = engine.docker(&[
        "image",
        "inspect",
        "--format",
        "{{.Created}}",
        &format!("{repository}:latest"),
    ]);
    assert!(created.starts_with("2026-07-20T00:00:00"), "{created}");
    forge_on(
        engine,
        context,
        &["verify-digest", "--rebuild"],
        "1783500000",
    )
    .expect_code(0);
}

/// Every journey on the engine at `index` of the set: the maintainer's, the tester's and a cold
/// CI runner's.
fn journeys_on(index: usize) {
    let Some(engines) = matrix() else {
        return;
    };
    let engine = &engines[index];
    let _turn = engine.turn();
    let registry = RegistryServer::start();
    let _bridge = engine.reach(registry.port());
    let base = RegistryBase::push(&registry);
    engine.docker(&["pull", "-q", &base.image]);
    let repository = format!(
        "{}/forge-test/journey-{}-{:07}",
        registry.address(),
        engine.name.replace('.', "-"),
        std::process::id()
    );
    let guard = ImageGuard::new(&repository);
    let example = base.example(&repository, &guard);
    let keys = Keys::new();
    let reference = format!("{repository}:latest");
    maintainer(engine, &example, &keys);
    tester(engine, &reference, &keys);
    cold_runner(engine, &example, &reference);
}

/// The maintainer on `engine`: builds, rebuilds with nothing changed (the recorded image stands
/// without a rewrite), builds with no cache (the same image), pushes signed, and verifies the
/// image's contents and a rebuild.
fn maintainer(engine: &Engine, example: &Example, keys: &Keys) {
    let context = &example.context;
    let run = |args: &[&str]| forge_on(engine, context, args, "1783500000");
    let (id, _) = reported(&run(&["build", "--progress", "plain"]).expect_code(0));
    let again = run(&["build", "--progress", "plain"]).expect_code(0);
    assert_contains(&again.stderr, "nothing to rewrite");
    assert_eq!(reported(&again).0, id, "{}", engine.name);
    let fresh = run(&["build", "--no-cache", "--progress", "plain"]).expect_code(0);
    assert_eq!(reported(&fresh).0, id, "{}: --no-cache", engine.name);
    let sign = [
        "build",
        "--push",
        "--sign",
        "--sign-key",
        &keys.private_arg(),
    ];
    let pushed = run(&sign).expect_code(0);
    assert_eq!(reported(&pushed).0, id, "{}", engine.name);
    assert_contains(&pushed.stderr, "Attached build record");
    run(&["verify-digest", "--contents"]).expect_code(0);
    run(&["verify-digest", "--rebuild"]).expect_code(0);
}

/// The tester on `engine`, with the image reference and the key only.
fn tester(engine: &Engine, reference: &str, keys: &Keys) {
    let folder = TestContext::empty();
    folder.write("lab.pub", &keys.public_text());
    let host = ["--host", engine.host.as_str()];
    let run = |args: &[&str]| forge_on(engine, &folder, args, "1783500000");
    run(&[&["pull", reference, "--key", "lab.pub"][..], &host].concat()).expect_code(0);
    let verified = run(&[
        &["verify-digest", reference, "--key", "lab.pub", "--contents"][..],
        &host,
    ]
    .concat());
    let verified = verified.expect_code(0).json();
    let signed = verified["checks"]
        .as_array()
        .unwrap()
        .iter()
        .any(|check| check["name"] == "signature" && check["ok"] == true);
    assert!(signed, "{}: {verified:#}", engine.name);
    let (env, _conduit) = engine.forge_env();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let report = folder.forge_with(&["report", reference, "--key", "lab.pub"], &env);
    assert_contains(&report.expect_code(0).stdout, "# Tester report: ");
}

/// A CI runner on `engine` whose build cache is empty: a fresh clone of the recipe reads the
/// cache the push left in the registry and ends on the published image.
fn cold_runner(engine: &Engine, example: &Example, reference: &str) {
    let published = engine.docker(&["image", "inspect", "--format", "{{.Id}}", reference]);
    engine.docker(&["builder", "prune", "--all", "--force"]);
    let clone = TestContext::empty();
    for entry in [
        "pins.toml",
        "templates",
        "patches",
        "overlays",
        "forge.lock",
    ] {
        crate::support::copy_tree(
            &example.context.path().join(entry),
            &clone.path().join(entry),
        );
    }
    let run = forge_on(
        engine,
        &clone,
        &["build", "--locked", "--push", "--progress", "plain"],
        "1783500000",
    );
    let run = run.expect_code(0);
    assert_contains(&run.stderr, "Caching from ");
    let steps = run.json()["steps"].clone();
    let ran: Vec<&serde_json::Value> = steps
        .as_array()
        .unwrap()
        .iter()
        .filter(|step| step["state"] == "done" && step["name"].as_str().unwrap().contains("RUN "))
        .collect();
    assert!(
        ran.is_empty(),
        "{}: every RUN step comes from the registry's cache: {ran:?}",
        engine.name
    );
    assert_eq!(
        engine.docker(&["image", "inspect", "--format", "{{.Id}}", reference]),
        published,
        "{}: the cold runner ends on the published image",
        engine.name
    );
}

#[test]
fn every_journey_passes_on_the_machines_docker_20_10() {
    journeys_on(0);
}

#[test]
fn every_journey_passes_on_trixies_docker_and_containerd_1_7() {
    journeys_on(1);
}

#[test]
fn every_journey_passes_on_forkys_docker_and_containerd_2_1() {
    journeys_on(2);
}

#[test]
fn every_journey_passes_on_forkys_docker_with_the_containerd_image_store() {
    journeys_on(3);
}

/// A daemon on a machine of its own, reached only through ssh (an sshd beside the engine, in its
/// network namespace): forge forwards a port of that machine's loopback back to its conduit
/// over ssh, and the build there ends on the image the machine's daemon makes of the recipe.
/// `verify-digest --rebuild` over ssh proves it from there too.
#[test]
fn a_daemon_reached_through_ssh_reaches_back_to_forge_over_ssh() {
    let Some(engines) = matrix() else {
        return;
    };
    let (here, there) = (&engines[0], &engines[2]);
    let _turns = (here.turn(), there.turn());
    let registry = RegistryServer::start();
    let _bridge = there.reach(registry.port());
    let base = RegistryBase::push(&registry);
    let guard = ImageGuard::new(&format!("forge-test/over-ssh-{}", std::process::id()));
    let local = base.example(
        &format!("forge-test/over-ssh-here-{}", std::process::id()),
        &guard,
    );
    let (local_id, _) =
        reported(&forge_on(here, &local.context, &["build"], "1783500000").expect_code(0));

    there.docker(&["pull", "-q", &base.image]);
    let sshd = crate::support::ssh::SshServer::start_beside(there);
    let remote = base.example(
        &format!("forge-test/over-ssh-there-{}", std::process::id()),
        &guard,
    );
    let host = sshd.host();
    let path = sshd.path();
    let env = [
        ("DOCKER_HOST", host.as_str()),
        ("PATH", path.as_str()),
        ("SOURCE_DATE_EPOCH", "1783500000"),
    ];
    let built = remote
        .context
        .forge_with(&["--json", "build", "--progress", "plain"], &env);
    let (remote_id, _) = reported(&built.expect_code(0));
    assert_eq!(remote_id, local_id, "the build over ssh made another image");
    remote
        .context
        .forge_with(&["verify-digest", "--rebuild"], &env)
        .expect_code(0);
}

/// What the recipe's tags name on `engine`, and what its forge.lock records: the image id and
/// the manifest forge wrote.
fn tags_and_record(engine: &Engine, example: &Example) -> (Vec<String>, String, String) {
    let tags = ["latest", DATED_TAG]
        .iter()
        .map(|tag| {
            let reference = format!("{}:{tag}", example.repository);
            engine.docker(&["image", "inspect", "--format", "{{.Id}}", &reference])
        })
        .collect();
    let lock: toml::Table = example.context.read("forge.lock").parse().unwrap();
    let field = |name: &str| lock["image"][name].as_str().unwrap().to_owned();
    (tags, field("id"), field("manifest"))
}

/// A SIGKILL while the engine builds, while forge normalizes and just after the first tag moved,
/// on every engine: the next forge command settles what was cut short, and both tags and
/// forge.lock name one image, the old or the new.
#[test]
fn a_kill_at_any_point_of_a_build_leaves_the_tags_and_the_record_on_one_image_on_every_engine() {
    let Some(engines) = matrix() else {
        return;
    };
    let registry = RegistryServer::start();
    let base = RegistryBase::push(&registry);
    for engine in engines {
        let _turn = engine.turn();
        let (example, _guard, _bridge) = example_on(engine, (&base, &registry), "kill");
        forge_on(engine, &example.context, &["build"], "1783500000").expect_code(0);
        for (step, marker) in ["Built", "Normalized", "Tagged"].iter().enumerate() {
            example.context.edit(
                "templates/Dockerfile.j2",
                "# The smoke gate:",
                &format!("RUN echo kill-{step}\n\n# The smoke gate:"),
            );
            let (env, _conduit) = engine.forge_env();
            let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let args = ["build", "--progress", "plain", "--force"];
            let run =
                crate::support::process::Background::start(example.context.path(), &args, &env);
            run.wait_for(marker);
            run.signal("KILL");
            let (_, stderr) = run.finish();
            let next = forge_on(engine, &example.context, &["verify-digest"], "1783500000");
            assert_ne!(
                next.code, 2,
                "{} after a kill at {marker}: {}\n{stderr}",
                engine.name, next.stderr
            );
            assert!(
                !example.context.path().join("forge.lock.intent").exists(),
                "{} after a kill at {marker}",
                engine.name
            );
            let (tags, id, manifest) = tags_and_record(engine, &example);
            let recorded = if engine.containerd_store {
                &manifest
            } else {
                &id
            };
            assert_eq!(
                tags,
                [recorded.clone(), recorded.clone()],
                "{} after a kill at {marker}: the tags and forge.lock name two images",
                engine.name
            );
        }
    }
}
