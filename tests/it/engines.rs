//! The engines users run, each a real daemon (`support::engines`): Docker 20.10, 26.1 with
//! containerd 1.7, 28.5 with containerd 2.1, and 28.5 with the containerd image store. The base
//! comes from a registry on loopback, pushed once and pulled by each engine, as the real base
//! comes from ghcr.io.
//!
//! One recipe gives one image id and one pushed manifest digest on all four, with either
//! builder; whatever the build cache holds (a build under another `SOURCE_DATE_EPOCH` first,
//! whose context had other times) a build ends on the image a `--no-cache` build makes; a new
//! date is a new image even when the Dockerfile does not change with it.

use crate::support::engines::{Engine, engines};
use crate::support::image_guard::{ImageGuard, LABEL};
use crate::support::images::{BASE_IMAGE, DATED_TAG, Example, Tagged, docker, docker_ready};
use crate::support::registry::{RegistryServer, registry_tools_missing};
use crate::support::{Run, TestContext};

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
        docker(&["tag", BASE_IMAGE, &image]);
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
            "image = \"forge-example-base:busybox\"",
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

#[test]
fn one_recipe_gives_one_image_and_one_manifest_on_every_engine_with_either_builder() {
    let Some(engines) = matrix() else {
        return;
    };
    let registry = RegistryServer::start();
    let base = RegistryBase::push(&registry);
    let guard = ImageGuard::new(&format!("forge-test/one-{}", std::process::id()));
    for builder in ["buildkit", "classic"] {
        let mut made = Vec::new();
        for engine in engines {
            let _bridge = engine.reach(registry.port());
            let repository = format!(
                "{}/forge-test/one-{}-{builder}-{}",
                registry.address(),
                engine.name.replace('.', "-"),
                std::process::id()
            );
            let example = base.example(&repository, &guard);
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
            let path = repository
                .strip_prefix(&format!("{}/", registry.address()))
                .unwrap();
            assert_eq!(
                registry.digest(path, DATED_TAG),
                pushed,
                "{}: the registry holds what forge reported",
                engine.name
            );
            // The daemon holds it under the manifest digest (containerd store) or the image id.
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
            made.push((engine.name.as_str(), id, pushed));
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
}

#[test]
fn whatever_the_cache_holds_a_build_ends_on_the_image_a_no_cache_build_makes() {
    let Some(engines) = matrix() else {
        return;
    };
    let registry = RegistryServer::start();
    let base = RegistryBase::push(&registry);
    for engine in engines {
        let _bridge = engine.reach(registry.port());
        let repository = format!(
            "forge-test/cache-{}-{}",
            engine.name.replace('.', "-"),
            std::process::id()
        );
        let guard = ImageGuard::new(&repository);
        let example = base.example(&repository, &guard);
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
    context.write(
        "templates/Dockerfile.j2",
        "FROM {{ base.reference }}\nARG SOURCE_DATE_EPOCH={{ step_source_date_epoch }}\n\
         {% for overlay in overlays %}COPY {{ overlay.from }}/ {{ overlay.to }}\nRUN {{ overlay.gate }}\n{% endfor %}\
         RUN mkdir -p {{ revisions_dir }} && echo {{ pins.app.rev }} > {{ pins.app.revision_file }}\n",
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
