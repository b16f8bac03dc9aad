//! `forge build`: the recipe in; the image built, tagged, pushed and recorded out.
//!
//! 1. Plan (`pipeline`): render, patch and assemble the context, without a daemon. `--locked`
//!    compares the inputs with forge.lock here; `--dry-run` prints the plan here and stops.
//! 2. Build through the engine, drawing its progress.
//! 3. Publish (`publish`): refuse, tag, push, record, and put the tags back on any failure.
//!
//! One build per recipe at a time (an advisory lock on the recipe folder); SIGINT and SIGTERM
//! stop the build at its next step and put back what it moved.

use std::str::FromStr as _;

use anyhow::Context as _;
use serde::Serialize;

use crate::context::Output;
use crate::engine::steps::{Event, StepState};
use crate::engine::{Builder, Docker, Engine};
use crate::pins::Mutability;
use crate::pipeline::{self, Plan};
use crate::printer::{Document, Printer};
use crate::progress::Display;
use crate::publish::{self, BuildError, Publication, RemoteTags, Signals, Stop as _};
use crate::recipe::Recipe;
use crate::types::oci::ImageRef;

use super::attaching::{Attaching, attach};
pub use super::build_request::{BuildMode, BuildOptions};
use super::build_request::{build_credentials, build_request, cache_image};
use super::normalizing::{Normalizing, differences, early_probe, normalized};

/// Runs `forge build` on `recipe`.
pub fn build(recipe: &Recipe, options: &BuildOptions, printer: &Printer) -> anyhow::Result<()> {
    let output = match (&options.context_out, options.mode) {
        (Some(path), _) => Output::File(path.clone()),
        (None, BuildMode::Build) => Output::TemporaryFile,
        (None, BuildMode::DryRun) => Output::Discard,
    };
    if options.mode == BuildMode::DryRun {
        let plan = checked_plan(recipe, options, output, printer)?;
        printer.document(&planned(recipe, &plan));
        return Ok(());
    }
    // Held until the build returns; the kernel lets go of it if forge dies.
    let _exclusive = publish::lock_recipe(&recipe.root)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let built = runtime.block_on(async {
        // An unreachable daemon is reported before any work that would be wasted.
        let engine = Docker::connect().await?;
        publish::intent::settle(
            recipe,
            &engine,
            publish::intent::registry_of(&options.insecure_registries),
            publish::intent::Choice::Rule,
            printer,
        )
        .await?;
        let plan = checked_plan(recipe, options, output, printer)?;
        if recipe.pins.image.platforms.len() > 1 && options.platform.is_none() {
            return super::platforms::run(recipe, options, &plan, printer).await;
        }
        let platform = (options.platform.as_ref()).unwrap_or(&recipe.pins.image.platform);
        warn_if_emulated(&engine, platform, printer).await;
        run(recipe, options, &plan, &engine, printer).await
    });
    // An interrupted registry check may still be waiting on the network: leave it behind.
    runtime.shutdown_background();
    built
}

/// Says before building when the daemon runs on another platform than the build is for: its
/// RUN steps then run under emulation, if the daemon has it, or fail at the first one.
async fn warn_if_emulated(
    engine: &Docker,
    platform: &crate::types::oci::Platform,
    printer: &Printer,
) {
    let Ok(native) = engine.platform().await else {
        return;
    };
    let wanted: String = platform
        .as_str()
        .split('/')
        .take(2)
        .collect::<Vec<_>>()
        .join("/");
    if native != wanted {
        printer.warn(format_args!(
            "the daemon at {} runs on {native} and this build is for {platform}: every RUN step runs under emulation (QEMU through binfmt_misc) if the daemon has it, slowly, and fails at the first one if not; build on a {platform} machine instead (DOCKER_HOST=ssh://USER@HOST)",
            engine.host()
        ));
    }
}

/// The plan; under `--locked`, checked against forge.lock.
pub(super) fn checked_plan(
    recipe: &Recipe,
    options: &BuildOptions,
    output: Output,
    printer: &Printer,
) -> anyhow::Result<Plan> {
    let with_inputs = options.mode == BuildMode::Build || options.locked;
    // `--locked` builds the context the lock records, with the mtime its entries carried then,
    // whatever SOURCE_DATE_EPOCH says now.
    let mtime = if options.locked {
        recipe.lock()?.map(|lock| lock.inputs().context_mtime)
    } else {
        None
    };
    let plan = pipeline::plan(recipe, output, with_inputs, mtime, printer)?;
    if options.locked {
        pipeline::check_locked(
            recipe,
            plan.inputs.as_ref().expect("--locked computes the inputs"),
        )?;
        printer.status("Locked", "inputs match forge.lock");
    }
    Ok(plan)
}

/// How each step of the build ended, as the builder reported it, in the order they started.
#[derive(Debug, Default)]
struct StepOutcomes {
    order: Vec<String>,
    last: std::collections::HashMap<String, (String, StepState)>,
}

impl StepOutcomes {
    fn note(&mut self, event: &Event<'_>) {
        if let Event::Step { id, name, state } = event {
            if !self.last.contains_key(*id) {
                self.order.push((*id).to_owned());
            }
            self.last
                .insert((*id).to_owned(), ((*name).to_owned(), *state));
        }
    }

    /// Each step's name and last state, in the order the steps began.
    fn entries(&self) -> Vec<StepEntry<'_>> {
        self.order
            .iter()
            .filter_map(|id| self.last.get(id))
            .map(|(name, state)| StepEntry {
                name,
                state: match state {
                    StepState::Running => "running",
                    StepState::Cached => "cached",
                    StepState::Done => "done",
                    StepState::Failed => "failed",
                },
            })
            .collect()
    }
}

/// A build that failed because a registry wanted credentials it did not get is the
/// environment's failure (exit 2, with a login hint), not the recipe's; the error names the
/// image refused, the base or another image the Dockerfile pulls.
fn base_pull_refused(recipe: &Recipe, error: anyhow::Error) -> anyhow::Error {
    let base = &recipe.pins.base.image;
    let (pulled, said) = match error.downcast_ref::<crate::engine::EngineError>() {
        Some(crate::engine::EngineError::StepFailed { step, message, .. })
            // The classic builder's FROM step, or BuildKit's look-up of an image.
            if is_from_step(step) || step.contains("load metadata for") =>
        {
            (pulled_image(step), message)
        }
        Some(crate::engine::EngineError::BuildFailed { message }) => (None, message),
        _ => return error,
    };
    let other = (pulled.as_deref())
        .and_then(|image| ImageRef::from_str(image).ok())
        .filter(|image| {
            image.registry() != base.registry() || image.repository() != base.repository()
        });
    let (image, registry) = match &other {
        Some(image) => (image.to_string(), image.registry().as_str().to_owned()),
        None => (base.to_string(), base.registry().as_str().to_owned()),
    };
    // Only the network to that image's registry: the message names its host (docker.io's
    // registry-1.docker.io holds the name too), and the daemon's own sockets (`dial unix`) are
    // not the network.
    if network_unreachable(said) && said.contains(&registry) && !said.contains("dial unix") {
        return BuildError::PullUnreachable {
            image,
            registry,
            base: other.is_none(),
            said: said.clone(),
        }
        .into();
    }
    if !credentials_refused(said) {
        return error;
    }
    let said = said.clone();
    match other {
        Some(_) => BuildError::ImagePull {
            registry,
            image,
            said,
        },
        None => BuildError::BasePull {
            base: image,
            registry,
            said,
        },
    }
    .into()
}

/// Whether the daemon's message says a registry refused it for want of credentials: the phrases
/// registries and the daemon use, and the status 401 as a word of its own (a digest's hex may
/// hold the digits `401`).
fn credentials_refused(message: &str) -> bool {
    static REFUSED: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(
            r"(?i)no basic auth credentials|unauthorized|authentication required|access denied|\b401\b",
        )
        .expect("the pattern compiles")
    });
    REFUSED.is_match(message)
}

/// Whether the daemon's message says it could not reach a registry at all: a name that does
/// not resolve, a connection refused, reset or timed out, no route, a proxy that failed.
fn network_unreachable(message: &str) -> bool {
    static UNREACHABLE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(
            r"(?i)no such host|server misbehaving|temporary failure in name resolution|connection refused|connection reset|i/o timeout|network is unreachable|no route to host|tls handshake timeout|proxyconnect|context deadline exceeded",
        )
        .expect("the pattern compiles")
    });
    UNREACHABLE.is_match(message)
}

/// Whether `step` (`[1/7] FROM x`, `Step 1/7 : FROM x`) is a FROM instruction, not a step that
/// merely says "FROM" (a RUN of SQL or sed).
fn is_from_step(step: &str) -> bool {
    let instruction = step
        .split_once("] ")
        .or_else(|| step.split_once(" : "))
        .map_or(step, |(_, rest)| rest);
    instruction
        .trim_start()
        .to_ascii_uppercase()
        .starts_with("FROM ")
}

/// The image a failed pull step names: the word after `FROM ` (classic) or `load metadata for `
/// (BuildKit).
fn pulled_image(step: &str) -> Option<String> {
    ["load metadata for ", "FROM "].iter().find_map(|lead| {
        let (_, rest) = step.split_once(lead)?;
        rest.split_whitespace().next().map(ToOwned::to_owned)
    })
}

/// `--dry-run`: the plan, as text or JSON.
pub(super) fn planned<'a>(recipe: &'a Recipe, plan: &'a Plan) -> Planned<'a> {
    let repository = &recipe.pins.image.repository;
    let mut entries = vec![
        (
            "dockerfile",
            plan.dockerfile.digest().to_string(),
            String::new(),
        ),
        (
            "context",
            plan.context.digest.to_string(),
            format!(
                "({} entries, {} bytes)",
                plan.context.entries, plan.context.size
            ),
        ),
    ];
    for patch in &plan.patches {
        let original = patch
            .original
            .as_deref()
            .map(|id| format!(", from {}", &id[..id.len().min(12)]))
            .unwrap_or_default();
        entries.push((
            "patch",
            patch.file.to_string(),
            format!("by {}{original}", patch.author),
        ));
    }
    for tag in &plan.tags {
        let mutability = match tag.mutability {
            Mutability::Moving => "moving",
            Mutability::Immutable => "immutable",
        };
        entries.push((
            "tag",
            format!("{repository}:{}", tag.tag),
            format!("({mutability})"),
        ));
    }
    Planned {
        plan: plan.document(recipe),
        text: crate::table::labelled(&entries),
    }
}

/// `forge build --dry-run`'s answer: the plan, as a labelled list or as its document.
#[derive(Debug, Serialize)]
pub(super) struct Planned<'a> {
    #[serde(flatten)]
    plan: crate::pipeline::PlanDocument<'a>,
    #[serde(skip)]
    pub(super) text: String,
}

impl Document for Planned<'_> {
    fn text(&self) -> Option<String> {
        Some(self.text.clone())
    }
}

/// A build's answer: the image id, or with `--json` the build's document (with each step of a
/// build that ran here).
#[derive(Debug, Serialize)]
pub(super) struct Built<'a> {
    #[serde(flatten)]
    pub built: crate::publish::BuiltDocument<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steps: Option<Vec<StepEntry<'a>>>,
    #[serde(skip)]
    pub answer: String,
}

impl Document for Built<'_> {
    fn text(&self) -> Option<String> {
        Some(self.answer.clone())
    }
}

/// A step of the build and its last state: `done`, `cached`, `failed` or `running`.
#[derive(Debug, Serialize)]
pub(super) struct StepEntry<'a> {
    name: &'a str,
    state: &'static str,
}

/// Says what the build reuses and what it builds: `request` of `repository`.
fn announce(
    request: &crate::engine::BuildRequest<'_>,
    repository: &crate::types::oci::Repository,
    printer: &Printer,
) {
    for source in &request.cache_from {
        printer.status("Caching", format_args!("from {source}"));
    }
    let platform = request
        .platform
        .map(|platform| format!(" for {platform}"))
        .unwrap_or_default();
    printer.status(
        "Building",
        format_args!(
            "{repository}{platform} with the {} builder",
            match request.builder {
                Builder::Buildkit => "BuildKit",
                Builder::Classic => "classic",
            }
        ),
    );
}

/// How the publication reaches the registry of `repository`, when it asks.
fn registry_of(
    options: &BuildOptions,
    repository: &crate::types::oci::Repository,
    platform: &crate::types::oci::Platform,
) -> impl FnOnce() -> anyhow::Result<RemoteTags> + Send + 'static {
    let (repository, platform) = (repository.clone(), platform.clone());
    let insecure = options.insecure_registries.clone();
    move || RemoteTags::connect(&repository, platform, insecure)
}

/// What the daemon made of the plan: the engine's image and the normalized one, with the
/// request, the cache it wrote to, and how each step ended.
struct Made<'a> {
    request: crate::engine::BuildRequest<'a>,
    cache: Option<super::build_request::CacheImage>,
    built: crate::engine::ImageId,
    normalized: crate::normalize::Normalized,
    /// What holds forge's blobs of the image until it is published; closing it removes what
    /// forge named on the daemon (and the engine's image, unless the cache names it).
    conduit: Option<crate::conduit::Conduit>,
    steps: StepOutcomes,
}

/// Builds `plan` for `platform` on `engine` and normalizes the result, racing `stop`.
async fn make<'a, E: Engine>(
    (recipe, options, plan): (&Recipe, &BuildOptions, &'a Plan),
    engine: &E,
    platform: &'a crate::types::oci::Platform,
    revision: Option<&str>,
    stop: &mut Signals,
    display: &mut Display,
    printer: &Printer,
) -> anyhow::Result<Made<'a>> {
    let cache = cache_image(recipe, options, printer).await;
    let credentials = build_credentials(recipe, printer);
    let request = build_request(
        recipe,
        options,
        plan,
        platform,
        revision,
        credentials,
        cache.as_ref(),
    );
    announce(&request, &recipe.pins.image.repository, printer);
    let mut steps = StepOutcomes::default();
    let mut events = |event: Event<'_>| {
        steps.note(&event);
        display.event(event);
    };
    // Dropping the build's stream closes its connection, and the daemon cancels the build.
    // Meanwhile a container of the base is made, for the normalization to ask what the base
    // holds without waiting for one.
    let (built, probe) = tokio::join!(
        stop.race(engine.build(&request, &mut events)),
        early_probe(recipe, engine, !options.push)
    );
    display.finish();
    let normalizing = async {
        let built = built.map_err(|error| base_pull_refused(recipe, error))?;
        printer.status("Built", &built);
        let job = Normalizing {
            recipe,
            built: &built,
            request: &request,
            platform,
            reuse: !options.push,
            insecure: &options.insecure_registries,
            probe: probe.as_ref(),
        };
        let (normalized, conduit) = stop.race(normalized(&job, engine, printer)).await?;
        anyhow::Ok((built, normalized, conduit))
    }
    .await;
    if let Some(probe) = probe {
        probe.close(engine).await;
    }
    let (built, normalized, conduit) = normalizing?;
    Ok(Made {
        request,
        cache,
        built,
        normalized,
        conduit,
        steps,
    })
}

/// `error`, and when it is a dated tag that names another image on the daemon, with where that
/// image and the one just built differ (a step that does not reproduce), as `engine` holds both.
async fn explained<E: Engine>(
    (recipe, engine, conduit): (&Recipe, &E, Option<&crate::conduit::Conduit>),
    mut error: anyhow::Error,
    platform: &crate::types::oci::Platform,
    credentials: &[crate::registry::Credentials],
) -> anyhow::Error {
    let Some(BuildError::TagHoldsAnother { current, built, .. }) = error.downcast_ref() else {
        return error;
    };
    let pair = (current.clone(), built.clone());
    let compared = differences(
        (recipe, engine, conduit),
        (&pair.0, &pair.1),
        platform,
        credentials,
    )
    .await;
    if let (Ok(comparison), Some(BuildError::TagHoldsAnother { differs, .. })) =
        (compared, error.downcast_mut())
    {
        *differs = comparison.summary();
    }
    error
}

/// The daemon part: build and normalize, racing the stop signals, then publish.
async fn run<E: Engine>(
    recipe: &Recipe,
    options: &BuildOptions,
    plan: &Plan,
    engine: &E,
    printer: &Printer,
) -> anyhow::Result<()> {
    let started = chrono::Utc::now();
    let platform = options
        .platform
        .as_ref()
        .unwrap_or(&recipe.pins.image.platform);
    let revision = pipeline::revision(&recipe.root);
    let mut stop = Signals::listen()?;
    let mut display = Display::new(options.progress, printer, options.verbose);
    let mut made = make(
        (recipe, options, plan),
        engine,
        platform,
        revision.as_deref(),
        &mut stop,
        &mut display,
        printer,
    )
    .await?;
    let conduit = made.conduit.take();
    let outcome = finish(
        (recipe, options, plan),
        (engine, platform, revision.as_deref()),
        (&made, conduit.as_ref()),
        (&mut stop, &mut display, started),
        printer,
    )
    .await;
    match conduit {
        Some(conduit) => conduit.close(engine).await,
        // The engine's image goes once published, as the conduit's closing takes it, unless it
        // is the build cache: pushed with the inline cache, or the classic builder's last step.
        None => {
            let kept = made.request.inline_cache || made.request.builder == Builder::Classic;
            if !kept && made.normalized.id != made.built {
                let _ = engine.remove_untagged(&made.built).await;
            }
        }
    }
    outcome
}

/// Publishes what `made` holds, attaches, pushes the cache, and says what was built.
async fn finish<E: Engine>(
    (recipe, options, plan): (&Recipe, &BuildOptions, &Plan),
    (engine, platform, revision): (&E, &crate::types::oci::Platform, Option<&str>),
    (made, conduit): (&Made<'_>, Option<&crate::conduit::Conduit>),
    (stop, display, started): (&mut Signals, &mut Display, chrono::DateTime<chrono::Utc>),
    printer: &Printer,
) -> anyhow::Result<()> {
    let repository = &recipe.pins.image.repository;
    let normalized = &made.normalized;
    let publication = Publication {
        recipe,
        image: &normalized.id,
        id: &normalized.config,
        manifest: Some(&normalized.manifest),
        blobs: normalized.blobs.as_ref(),
        epoch: recipe.source_date_epoch(),
        platform,
        tags: &plan.tags,
        inputs: plan.inputs.as_ref().expect("a build computes its inputs"),
        patches: &plan.patches,
        revision,
        push: options.push,
        force: options.force,
        builder: options.builder,
        built: Some(&made.built),
    };
    let registry = registry_of(options, repository, platform);
    let mut events = |event: Event<'_>| display.event(event);
    let published =
        publish::publish(&publication, engine, registry, stop, &mut events, printer).await;
    let credentials = &made.request.credentials;
    let mut published = match published {
        Ok(published) => published,
        Err(error) => {
            let explaining = (recipe, engine, conduit);
            return Err(explained(explaining, error, platform, credentials).await);
        }
    };
    if options.push {
        let attaching = Attaching {
            recipe,
            options,
            plan,
            started,
            daemon: engine.version().await,
        };
        // The push is recorded by now, so a stop cannot put anything back: attaching (well
        // under a second) runs to its end, and SIGINT and SIGTERM stay caught until it has.
        attach(&attaching, &mut published.record, printer)?;
    }
    // Last: the published image stands whatever happens to its cache.
    if let Some(cache) = &made.cache {
        cache.push(engine, &made.built, credentials, printer).await;
    }
    print_built(&published, plan, &made.steps, &normalized.config, printer);
    Ok(())
}

/// What a build answers: the image id, or with `--json` the whole report with each step.
fn print_built(
    published: &publish::Published,
    plan: &Plan,
    steps: &StepOutcomes,
    image: &crate::types::oci::Digest,
    printer: &Printer,
) {
    printer.document(&Built {
        built: published.document(plan),
        steps: Some(steps.entries()),
        answer: format!("{image}\n"),
    });
}

#[cfg(test)]
mod tests {
    use super::{credentials_refused, is_from_step, network_unreachable};

    #[test]
    fn a_refusal_is_read_from_its_words_and_not_from_the_digits_of_a_digest() {
        assert!(credentials_refused(
            "failed to resolve: unexpected status code 401 Unauthorized"
        ));
        assert!(credentials_refused(
            "pull access denied for x, repository does not exist or may require 'docker login'"
        ));
        assert!(credentials_refused("HTTP 401"));
        assert!(!credentials_refused(
            "failed to copy: sha256:8f40190a2c1d401e9a3b: unexpected EOF"
        ));
        assert!(!credentials_refused("layer 4015 of 4016 is corrupt"));
    }

    #[test]
    fn an_unreachable_registry_is_read_from_what_the_daemon_says_of_the_network() {
        for said in [
            "failed to resolve source metadata for ghcr.io/a/b:1: failed to do request: Head \"https://ghcr.io/v2/a/b/manifests/1\": dial tcp: lookup ghcr.io on 127.0.0.53:53: no such host",
            "Get \"https://127.0.0.1:9/v2/\": dial tcp 127.0.0.1:9: connect: connection refused",
            "Get \"https://registry-1.docker.io/v2/\": net/http: TLS handshake timeout",
            "Error response from daemon: Get \"https://ghcr.io/v2/\": proxyconnect tcp: dial tcp 10.0.0.1:3128: i/o timeout",
        ] {
            assert!(network_unreachable(said), "{said}");
        }
        assert!(!network_unreachable("pull access denied for x"));
        assert!(is_from_step("[1/7] FROM ghcr.io/a/b:1@sha256:00"));
        assert!(is_from_step("Step 1/7 : FROM busybox"));
        assert!(!is_from_step("[4/7] RUN psql -c 'SELECT 1 FROM t'"));
        assert!(!network_unreachable("manifest unknown"));
    }
}
