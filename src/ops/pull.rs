//! `forge pull`: puts the image forge.lock records on every node of a rig, so that all ranks
//! run one image, whatever a moving tag names in the registry by the time each node asks.
//!
//! 1. Read the record: the manifest digest its pushed tags name (they must agree).
//! 2. Reach every node (`--host`s, else the daemon the docker CLI would use); one that cannot
//!    be reached stops the pull before anything moves.
//! 3. Pull `repository@digest` on all nodes at once, with the registry's credentials.
//! 4. Check that every node now holds the recorded image id: a node that holds another image
//!    (a record that is wrong, an index whose entry for the platform changed) fails the pull.
//! 5. Only then point the recipe's tags at the image on every node; a tag that cannot move puts
//!    back every tag already moved, on every node.
//! 6. The per-node tag rows of `verify-digest`.

use std::cell::RefCell;
use std::path::PathBuf;

use anyhow::Context as _;

use crate::diagnostics::{Advice, Advise, CheckFailed};
use crate::engine::steps::Event;
use crate::engine::{Docker, Engine, EngineError, ImageId};
use crate::lock::{self, Record};
use crate::printer::Printer;
use crate::progress::{Display, ProgressMode};
use crate::publish;
use crate::recipe::Recipe;
use crate::registry::Credentials;
use crate::types::oci::RegistryHost;
use crate::types::oci::{Digest, Platform, Tag};
use crate::verify::{self, Report};

/// Options of `forge pull`.
#[derive(Debug, Clone)]
pub struct PullOptions {
    /// The nodes (`unix://`, `tcp://`, `ssh://`, as `DOCKER_HOST` spells them); empty for the
    /// daemon the docker CLI would use.
    pub hosts: Vec<crate::engine::address::DaemonHost>,
    /// How to show the pulls' progress.
    pub progress: ProgressMode,
    /// Show every layer state.
    pub verbose: bool,
    /// Print the table with whole digests.
    pub wide: bool,
}

/// Why the recorded image cannot be pulled.
#[derive(Debug, thiserror::Error)]
pub enum PullError {
    /// No tag of the record was pushed, so the registry holds no digest to pull.
    #[error("{} records no pushed tag: there is no manifest digest to pull", path.display())]
    NotPushed {
        /// forge.lock.
        path: PathBuf,
    },
    /// The record's pushed tags name different manifests.
    #[error("{} records different manifests for its tags: {found}", path.display())]
    Disagree {
        /// forge.lock.
        path: PathBuf,
        /// `tag → digest` for each pushed tag.
        found: String,
    },
    /// A node runs on a platform the recorded index has no image for.
    #[error(
        "node {node} runs on {platform}, which the recorded index holds no image for; nothing was pulled"
    )]
    NoPlatform {
        /// The node's address.
        node: String,
        /// The platform it runs on.
        platform: String,
    },
    /// A node could not be reached or could not pull.
    #[error("node {node} cannot pull {reference}; no tag moved on any node")]
    Node {
        /// The node's address.
        node: String,
        /// `repository@digest`.
        reference: String,
    },
}

impl Advise for PullError {
    fn advice(&self) -> Advice {
        match self {
            PullError::NotPushed { .. } => Advice::Hint(
                "`forge build --push` records the digest the registry stored; pull after it".to_owned(),
            ),
            PullError::Disagree { .. } => Advice::Hint(
                "forge.lock was edited or written by two builds; build and push again to record one image".to_owned(),
            ),
            PullError::NoPlatform { .. } => Advice::Hint(
                "add the platform to [image] platforms and build it on a node of its own, or pull on the nodes the index serves".to_owned(),
            ),
            PullError::Node { .. } => Advice::Hint(
                "check that the node's daemon runs and reaches the registry (its own `docker pull` of the same reference); credentials come from this machine's docker login".to_owned(),
            ),
        }
    }
}

crate::advised!(PullError);

/// Runs `forge pull` for `recipe`: the image its forge.lock records.
pub fn pull(recipe: &Recipe, options: &PullOptions, printer: &Printer) -> anyhow::Result<()> {
    publish::intent::settle_before_reading(recipe, &[], printer)?;
    let record = verify::recorded_build(recipe)?;
    let digest = recorded_manifest(recipe, &record)?;
    // No build of this recipe may move its tags on this machine while the nodes are tagged.
    let _exclusive = publish::lock_recipe(&recipe.root)?;
    pull_record(
        &record,
        &digest,
        &recipe.pins,
        Some(recipe.pins.image.repository.registry().as_str()),
        options,
        printer,
    )
}

/// Runs `forge pull REF`: the image `reference` names, by the manifest digest it names now,
/// as the build record attached to it describes it; nothing is read from or written to the
/// working folder.
pub fn pull_reference(
    reference: &crate::types::oci::ImageRef,
    key: Option<&crate::attest::keys::VerifyingKey>,
    insecure_registries: &[RegistryHost],
    options: &PullOptions,
    printer: &Printer,
) -> anyhow::Result<()> {
    let attached = super::attached::fetch(reference, key, insecure_registries, None, printer)?;
    pull_record(
        attached.record(),
        &attached.manifest,
        &attached.pins,
        None,
        options,
        printer,
    )
}

/// Pulls `repository@digest` of `record` on every node, checks each ends on the recorded
/// image (of its own platform, that of `pins` for a record that names none), then tags it; the
/// verdict names the lane `pins` says.
fn pull_record(
    record: &Record,
    digest: &Digest,
    pins: &crate::pins::Pins,
    recipe_registry: Option<&str>,
    options: &PullOptions,
    printer: &Printer,
) -> anyhow::Result<()> {
    let credentials = credentials(record, recipe_registry, printer);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let (report, reached) = runtime.block_on(async {
        let nodes =
            expectations(&pins.image.platform, record, connect(&options.hosts).await?).await?;
        let display = RefCell::new(Display::new(options.progress, printer, options.verbose));
        let pulled = pull_everywhere(
            &nodes,
            record,
            digest,
            credentials.as_ref(),
            &display,
            printer,
        )
        .await;
        display.borrow_mut().finish();
        pulled?;
        tag_everywhere(&nodes, (record, digest), printer).await?;
        let mut report = Report::of(record.image.repository.to_string());
        report.lane.clone_from(&pins.lane);
        for node in &nodes {
            let mut resolved = Vec::new();
            for tag in &record.tags {
                let reference = format!("{}:{}", record.image.repository, tag.name);
                let found = node.engine.image(&reference).await?.map(|info| info.id.0);
                resolved.push((reference, found));
            }
            // Each node is judged by the image of its own platform.
            let mut expected = record.clone();
            expected.image.id = node.image.clone();
            report.extend(verify::tags(&expected, node.engine.host(), &resolved));
        }
        anyhow::Ok((report, nodes.len()))
    })?;
    printer.answer(&report.table(options.wide));
    printer.document(&report.verdict(&[]));
    if let Some(failed) = report.failed().next() {
        return Err(CheckFailed::new(
            format!(
                "{} {}: expected {}, found {}",
                failed.name, failed.subject, failed.expected, failed.actual
            ),
            "a tag moved on a node while forge pulled; run `forge pull` again",
        )
        .into());
    }
    printer.status(
        "Pulled",
        format_args!(
            "{}@{digest} on {} node(s)",
            record.image.repository, reached
        ),
    );
    Ok(())
}

/// The one manifest digest the record's pushed tags name.
fn recorded_manifest(recipe: &Recipe, record: &Record) -> Result<Digest, PullError> {
    let path = lock::path(&recipe.root);
    let pushed: Vec<(&Tag, &Digest)> = record
        .tags
        .iter()
        .filter_map(|tag| tag.pushed.as_ref().map(|digest| (&tag.name, digest)))
        .collect();
    let Some((_, first)) = pushed.first() else {
        return Err(PullError::NotPushed { path });
    };
    if pushed.iter().any(|(_, digest)| digest != first) {
        let found = pushed
            .iter()
            .map(|(tag, digest)| format!("{tag} → {digest}"))
            .collect::<Vec<_>>()
            .join(", ");
        return Err(PullError::Disagree { path, found });
    }
    Ok((*first).clone())
}

/// The credentials `docker pull` would send to the image's registry after `docker login`
/// (`FORGE_REGISTRY_USER` and `FORGE_REGISTRY_PASSWORD` only where it is `recipe_registry`,
/// the registry of the recipe read, or `FORGE_REGISTRY_HOST`); a lookup that fails is a
/// warning, as the image may be public.
fn credentials(
    record: &Record,
    recipe_registry: Option<&str>,
    printer: &Printer,
) -> Option<Credentials> {
    let registry = record.image.repository.registry().as_str();
    match crate::registry::credentials::lookup(registry, recipe_registry) {
        Ok(lookup) => lookup.credentials,
        Err(error) => {
            printer.warn(format_args!("pulling without credentials: {error}"));
            None
        }
    }
}

/// A node, with the platform it pulls for and the image it must end on: the record's image,
/// or for a multi-platform record the entry of the node's own platform.
struct Node {
    engine: Docker,
    platform: Platform,
    image: Digest,
}

/// What each node pulls: for a multi-platform record, the platform the node runs on, which the
/// record must hold an image for (before anything is pulled).
async fn expectations(
    platform: &Platform,
    record: &Record,
    engines: Vec<Docker>,
) -> anyhow::Result<Vec<Node>> {
    let recorded = record.image.platform.as_ref().unwrap_or(platform);
    let mut nodes = Vec::new();
    for engine in engines {
        if record.platforms.is_empty() {
            nodes.push(Node {
                engine,
                platform: recorded.clone(),
                image: record.image.id.clone(),
            });
            continue;
        }
        let native = engine.platform().await?;
        let Some(entry) = record
            .platforms
            .iter()
            .find(|entry| entry.platform.as_str() == native)
        else {
            return Err(PullError::NoPlatform {
                node: engine.host().to_owned(),
                platform: native,
            }
            .into());
        };
        nodes.push(Node {
            engine,
            platform: entry.platform.clone(),
            image: entry.id.clone(),
        });
    }
    Ok(nodes)
}

/// Every node, or the first error naming the one that cannot be reached.
async fn connect(hosts: &[crate::engine::address::DaemonHost]) -> anyhow::Result<Vec<Docker>> {
    if hosts.is_empty() {
        return Ok(vec![Docker::connect().await?]);
    }
    let attempts = hosts.iter().map(|host| async move {
        Docker::connect_to(host.as_str()).await.map_err(|error| {
            anyhow::Error::from(error)
                .context(format!("cannot reach node {host}; nothing was pulled"))
        })
    });
    futures_util::future::try_join_all(attempts).await
}

/// Pulls the recorded digest on every node at once and checks that each ends on the recorded
/// image.
async fn pull_everywhere(
    nodes: &[Node],
    record: &Record,
    digest: &Digest,
    credentials: Option<&Credentials>,
    display: &RefCell<Display>,
    printer: &Printer,
) -> anyhow::Result<()> {
    let repository = &record.image.repository;
    let reference = format!("{repository}@{digest}");
    let pulls = nodes.iter().map(|node| {
        let reference = &reference;
        async move {
            let host = node.engine.host();
            printer.status(
                "Pulling",
                format_args!("{reference} on {host} ({})", node.platform),
            );
            // Both nodes pull the same reference at once: each line names its node instead.
            let mut events = |event: Event<'_>| {
                let event = match event {
                    Event::Pull { status, .. } => Event::Pull {
                        reference: host,
                        status,
                    },
                    Event::Layer {
                        layer,
                        status,
                        current,
                        total,
                        ..
                    } => Event::Layer {
                        reference: host,
                        layer,
                        status,
                        current,
                        total,
                    },
                    other => other,
                };
                display.borrow_mut().event(event);
            };
            let pulled = node
                .engine
                .pull(repository, digest, &node.platform, credentials, &mut events)
                .await;
            (node, pulled)
        }
    });
    let outcomes = futures_util::future::join_all(pulls).await;
    let mut failed = Vec::new();
    let mut wrong = None;
    let mut right = Vec::new();
    for (node, outcome) in outcomes {
        let host = node.engine.host();
        match outcome {
            // A containerd store names what it pulled by the digest pulled.
            Ok(info) if info.id.0 == node.image || info.id.0 == *digest => {
                printer.status("Pulled", format_args!("{} on {host}", info.id.short()));
                right.push(node);
            }
            Ok(info) => {
                wrong.get_or_insert((node, info.id));
            }
            Err(error) => failed.push((host.to_owned(), error)),
        }
    }
    if let Some((node, id)) = wrong {
        return Err(wrong_image(node, &id, &reference, &right).into());
    }
    let mut failed = failed.into_iter();
    if let Some((node, error)) = failed.next() {
        for (other, error) in failed {
            printer.error(format_args!(
                "node {other} cannot pull {reference}: {error}"
            ));
        }
        return Err(anyhow::Error::from(error).context(PullError::Node { node, reference }));
    }
    Ok(())
}

/// The failure of a node that holds `id` under `reference` instead of its recorded image. When
/// another node of its platform pulled the same digest and holds the recorded image, the
/// registry served them the same bytes: the fault is that node's daemon, not the registry's.
fn wrong_image(node: &Node, id: &ImageId, reference: &str, right: &[&Node]) -> CheckFailed {
    let host = node.engine.host();
    let message = format!(
        "node {host} holds {id} under {reference}, not the recorded image {}; no tag moved on any node",
        node.image
    );
    let witnesses: Vec<&str> = (right.iter())
        .filter(|other| other.platform == node.platform && other.image == node.image)
        .map(|other| other.engine.host())
        .collect();
    if witnesses.is_empty() {
        return CheckFailed::new(
            message,
            "the registry serves another image for the platform than the build recorded: build and push again, or check [image] platform",
        );
    }
    CheckFailed::new(
        format!(
            "{message}; {} pulled the same digest and holds the recorded image",
            witnesses.join(", ")
        ),
        format!(
            "the registry served every node the same digest, so the fault is the daemon at {host}: check its image store (one that names images by their manifest digest reports other ids) and its version, then pull again"
        ),
    )
}

/// Points every recorded tag at the image on every node; on a failure, puts back what each
/// moved tag named before, on every node, then fails.
async fn tag_everywhere(
    nodes: &[Node],
    (record, digest): (&Record, &Digest),
    printer: &Printer,
) -> anyhow::Result<()> {
    let repository = &record.image.repository;
    let mut moved: Vec<(&Docker, &Tag, Option<ImageId>)> = Vec::new();
    let mut outcome: Result<(), EngineError> = Ok(());
    'nodes: for node in nodes {
        let engine = &node.engine;
        // A classic store names the image by its id, a containerd store by the digest pulled.
        let image = match engine.image(node.image.as_str()).await {
            Ok(Some(_)) => ImageId(node.image.clone()),
            Ok(None) => ImageId(digest.clone()),
            Err(error) => {
                outcome = Err(error);
                break 'nodes;
            }
        };
        for tag in &record.tags {
            let before = match engine.image(&format!("{repository}:{}", tag.name)).await {
                Ok(before) => before.map(|info| info.id),
                Err(error) => {
                    outcome = Err(error);
                    break 'nodes;
                }
            };
            if before.as_ref() == Some(&image) {
                continue;
            }
            moved.push((engine, &tag.name, before));
            if let Err(error) = engine.tag(&image, repository, &tag.name).await {
                outcome = Err(error);
                break 'nodes;
            }
            printer.status(
                "Tagged",
                format_args!("{repository}:{} on {}", tag.name, engine.host()),
            );
        }
    }
    let Err(error) = outcome else {
        return Ok(());
    };
    for (node, tag, before) in moved.into_iter().rev() {
        let restored = match &before {
            Some(previous) => node.tag(previous, repository, tag).await,
            None => node.remove_tag(repository, tag).await,
        };
        if let Err(problem) = restored {
            printer.error(format_args!(
                "cannot put back {repository}:{tag} on {}: {problem}",
                node.host()
            ));
        }
    }
    Err(anyhow::Error::from(error)
        .context("tagging the pulled image failed; every tag was put back"))
}
