//! `forge build --push` of a recipe with `[image] platforms`: each platform built natively on
//! its own node, one index under the recipe's tags.
//!
//! 1. Every platform has a node before anything is built: `--node PLATFORM=URL`, else the
//!    default daemon for the one platform it runs on natively.
//! 2. Build the same context on each node for its platform, and push each image under its
//!    platform tag (`TAG-os-arch`).
//! 3. Compose the OCI image index of those manifests; refuse a dated tag the registry holds
//!    for another index (without `--force`).
//! 4. Publish the first platform's image on its node as a one-platform build would (tags on
//!    that daemon, forge.lock), then point every recipe tag at the index in the registry and
//!    record the index digest and each platform's image in forge.lock.

use anyhow::Context as _;

use super::build::Built;
use super::build_request::{BuildOptions, build_credentials, build_request};
use super::normalizing::{Normalizing, normalized};
use crate::engine::steps::Event;
use crate::engine::{Docker, Engine, ImageId};
use crate::lock::PlatformRecord;
use crate::normalize::Normalized;
use crate::pipeline::{self, Plan};
use crate::printer::Printer;
use crate::progress::Display;
use crate::publish::{self, Publication, RemoteTags, Signals, image_index};
use crate::recipe::Recipe;
use crate::registry::{RegistryClient, RemoteRepository};
use crate::types::oci::{Digest, Platform};

/// Why a multi-platform build cannot start.
#[derive(Debug, thiserror::Error)]
pub enum PlatformsError {
    /// The tags of several platforms name an index, which lives in a registry only.
    #[error(
        "{platforms} are built together only with --push: their tags name one index in the registry"
    )]
    NotPushed {
        /// The platforms, comma-separated.
        platforms: String,
    },
    /// A platform no node builds.
    #[error("no node builds {platform}: the default daemon runs on {native}")]
    NoNode {
        /// The platform.
        platform: String,
        /// The default daemon's own platform.
        native: String,
    },
    /// `--node` for a platform the recipe lacks.
    #[error("--node {given}: {problem}")]
    BadNode {
        /// What was given.
        given: String,
        /// What is wrong.
        problem: String,
    },
}

impl crate::diagnostics::Advise for PlatformsError {
    fn advice(&self) -> crate::diagnostics::Advice {
        use crate::diagnostics::Advice;
        match self {
            PlatformsError::NotPushed { .. } => Advice::Hint(
                "add --push (or build one platform with --platform OS/ARCH, which builds locally)"
                    .to_owned(),
            ),
            PlatformsError::NoNode { platform, .. } => Advice::Hint(format!(
                "name a daemon that runs on {platform}: --node {platform}=ssh://USER@HOST (or unix://, tcp://); nothing was built"
            )),
            PlatformsError::BadNode { .. } => Advice::Hint(
                "write --node OS/ARCH=URL, for a platform that pins.toml's [image] platforms lists"
                    .to_owned(),
            ),
        }
    }
}

crate::advised!(PlatformsError);

/// Each platform of the recipe with the daemon that builds it, or the first platform no node
/// builds. Nothing is built before every platform has its node.
async fn nodes(recipe: &Recipe, options: &BuildOptions) -> anyhow::Result<Vec<(Platform, Docker)>> {
    let platforms = &recipe.pins.image.platforms;
    if let Some(node) = options
        .nodes
        .iter()
        .find(|node| !platforms.contains(&node.platform))
    {
        return Err(PlatformsError::BadNode {
            given: format!("{}={}", node.platform, node.host),
            problem: format!(
                "pins.toml's [image] platforms does not list {}",
                node.platform
            ),
        }
        .into());
    }
    let mut default: Option<(Docker, String)> = None;
    let mut nodes = Vec::new();
    for platform in platforms {
        if let Some(node) = options.nodes.iter().find(|node| &node.platform == platform) {
            nodes.push((
                platform.clone(),
                Docker::connect_to(node.host.as_str()).await?,
            ));
            continue;
        }
        if default.is_none() {
            let engine = Docker::connect().await?;
            let native = engine.platform().await?;
            default = Some((engine, native));
        }
        let (engine, native) = default.as_ref().expect("connected above");
        if native != platform.as_str() {
            return Err(PlatformsError::NoNode {
                platform: platform.to_string(),
                native: native.clone(),
            }
            .into());
        }
        nodes.push((platform.clone(), engine.clone()));
    }
    Ok(nodes)
}

/// Builds every platform on its node and publishes them under one index.
pub(super) async fn run(
    recipe: &Recipe,
    options: &BuildOptions,
    plan: &Plan,
    printer: &Printer,
) -> anyhow::Result<()> {
    if !options.push {
        let platforms: Vec<&str> = recipe
            .pins
            .image
            .platforms
            .iter()
            .map(Platform::as_str)
            .collect();
        return Err(PlatformsError::NotPushed {
            platforms: platforms.join(", "),
        }
        .into());
    }
    let nodes = nodes(recipe, options).await?;
    let repository = &recipe.pins.image.repository;
    let (client, lookup) =
        RegistryClient::for_recipe(repository, options.insecure_registries.clone())?;
    let target = image_index::PushTarget {
        client,
        repository: RemoteRepository::from(repository),
    };
    let job = Job {
        recipe,
        options,
        plan,
        started: chrono::Utc::now(),
        revision: pipeline::revision(&recipe.root),
    };
    let built =
        build_everywhere(&job, nodes, (&target, lookup.credentials.as_ref()), printer).await?;
    let entries: Vec<(Platform, Digest)> = built
        .iter()
        .map(|built| (built.platform.clone(), built.manifest.clone()))
        .collect();
    let index = target.compose(&entries)?;
    target.refuse_moved(&plan.tags, &index, options.force)?;
    publish_index(&job, &built, &target, &index, printer).await
}

/// One multi-platform build: the recipe, the options and plan, when it started, and the recipe
/// commit it was built from.
struct Job<'a> {
    recipe: &'a Recipe,
    options: &'a BuildOptions,
    plan: &'a Plan,
    started: chrono::DateTime<chrono::Utc>,
    revision: Option<String>,
}

/// Builds the plan on every node, each for its platform, and pushes each image under its
/// platform tag with `credentials`.
async fn build_everywhere(
    job: &Job<'_>,
    nodes: Vec<(Platform, Docker)>,
    (target, credentials): (
        &image_index::PushTarget,
        Option<&crate::registry::Credentials>,
    ),
    printer: &Printer,
) -> anyhow::Result<Vec<NodeImage>> {
    let (recipe, options, plan) = (job.recipe, job.options, job.plan);
    let repository = &recipe.pins.image.repository;
    let build_credentials = build_credentials(recipe, printer);
    let first = &plan.tags.first().expect("a recipe has a tag").tag;
    let mut display = Display::new(options.progress, printer, options.verbose);
    let mut events = |event: Event<'_>| display.event(event);
    let mut built = Vec::new();
    for (platform, engine) in nodes {
        let request = build_request(
            recipe,
            options,
            plan,
            &platform,
            job.revision.as_deref(),
            build_credentials.clone(),
            None,
        );
        printer.status(
            "Building",
            format_args!("{repository} for {platform} on {}", engine.host()),
        );
        let built_image = engine.build(&request, &mut events).await?;
        printer.status("Built", &built_image);
        let job = Normalizing {
            recipe,
            built: &built_image,
            request: &request,
            platform: &platform,
            reuse: false,
            insecure: &options.insecure_registries,
            probe: None,
        };
        let (image, conduit) = normalized(&job, &engine, printer).await?;
        let tag = image_index::platform_tag(first, &platform);
        let base = RemoteRepository::of(&recipe.pins.base.image);
        let pushed = push_node(
            (target, &base),
            (&engine, &image, &tag),
            credentials,
            &mut events,
        )
        .await;
        if let Some(conduit) = conduit {
            conduit.close(&engine).await;
        }
        let manifest = pushed?;
        printer.status("Pushed", format_args!("{repository}:{tag} {manifest}"));
        built.push(NodeImage {
            built: built_image,
            platform,
            image,
            manifest,
            engine,
        });
    }
    display.finish();
    Ok(built)
}

/// Tags `image` on `engine` as `tag` of the recipe's repository and pushes it, forge's blobs
/// uploaded first so that the daemon's push names them as forge wrote them, and forge's
/// manifest put under the tag if the daemon's push left another; returns what the tag names.
async fn push_node(
    (target, base): (&image_index::PushTarget, &RemoteRepository),
    (engine, image, tag): (&Docker, &Normalized, &crate::types::oci::Tag),
    credentials: Option<&crate::registry::Credentials>,
    events: &mut dyn FnMut(Event<'_>),
) -> anyhow::Result<Digest> {
    let repository = &target.repository;
    let named: crate::types::oci::Repository = repository
        .to_string()
        .parse()
        .expect("the recipe's repository");
    engine.tag(&image.id, &named, tag).await?;
    if let Some(blobs) = &image.blobs {
        blobs.upload(&target.client, (repository, base))?;
    }
    let pushed = engine.push(&named, tag, credentials, events).await?;
    match &image.blobs {
        Some(blobs) if blobs.from_registry && pushed != image.manifest => {
            Ok(target.client.push_manifest(
                repository,
                tag.as_str(),
                crate::normalize::manifest::DOCKER_MANIFEST,
                &blobs.manifest,
            )?)
        }
        _ => Ok(pushed),
    }
}

/// One platform's image, built on its node and pushed under its platform tag.
struct NodeImage {
    /// The image the engine built, before normalizing.
    built: ImageId,
    platform: Platform,
    image: Normalized,
    manifest: Digest,
    engine: Docker,
}

/// What forge.lock records of each platform's image.
fn platform_records(built: &[NodeImage]) -> Vec<PlatformRecord> {
    built
        .iter()
        .map(|built| PlatformRecord {
            platform: built.platform.clone(),
            id: built.image.config.clone(),
            manifest: built.manifest.clone(),
            node: built.engine.host().to_owned(),
        })
        .collect()
}

/// Publishes the first platform's image on its node (tags, forge.lock), then points the
/// recipe's tags at `index` and records it with every platform's image.
async fn publish_index(
    job: &Job<'_>,
    built: &[NodeImage],
    target: &image_index::PushTarget,
    index: &image_index::ImageIndex,
    printer: &Printer,
) -> anyhow::Result<()> {
    let (recipe, options, plan) = (job.recipe, job.options, job.plan);
    let NodeImage {
        platform,
        image,
        engine,
        built: engine_built,
        ..
    } = &built[0];
    let publication = Publication {
        recipe,
        image: &image.id,
        id: &image.config,
        manifest: Some(&image.manifest),
        blobs: None,
        epoch: recipe.source_date_epoch(),
        platform,
        tags: &plan.tags,
        inputs: plan.inputs.as_ref().expect("a build computes its inputs"),
        patches: &plan.patches,
        revision: job.revision.as_deref(),
        push: false,
        force: options.force,
        builder: options.builder,
        built: Some(engine_built),
    };
    let registry = {
        let (repository, platform) = (recipe.pins.image.repository.clone(), platform.clone());
        let insecure = options.insecure_registries.clone();
        move || RemoteTags::connect(&repository, platform, insecure)
    };
    let mut stop = Signals::listen()?;
    let mut events = |_: Event<'_>| {};
    let mut published = publish::publish(
        &publication,
        engine,
        registry,
        &mut stop,
        &mut events,
        printer,
    )
    .await?;
    let stored = target.put(&plan.tags, index).with_context(|| {
        format!(
            "cannot put the index {} under the tags of {}",
            index.digest, target.repository
        )
    })?;
    for tag in &plan.tags {
        printer.status(
            "Pushed",
            format_args!(
                "{}:{} {stored} (index)",
                recipe.pins.image.repository, tag.tag
            ),
        );
    }
    let record = &mut published.record;
    for tag in &mut record.tags {
        tag.pushed = Some(stored.clone());
    }
    record.platforms = platform_records(built);
    record.write(&recipe.root)?;
    recipe.lock_written();
    let attaching = super::attaching::Attaching {
        recipe,
        options,
        plan,
        started: job.started,
        daemon: engine.version().await,
    };
    super::attaching::attach(&attaching, record, printer)?;
    printer.document(&Built {
        built: published.document(plan),
        steps: None,
        answer: format!("{stored}\n"),
    });
    Ok(())
}
