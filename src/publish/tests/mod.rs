//! `publish` against an engine and a registry held in memory: the order of the refusals, the
//! tags, the pushes and the record, and what a failure or a stop at each step leaves behind.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, mpsc};

use tokio::sync::Notify;

use super::*;
use crate::diagnostics::CheckFailed;
use crate::engine::{BuildRequest, ImageInfo, RunOutput};
use crate::printer::{ColorChoice, OutputFormat, Verbosity};
use crate::registry::Held;

const REPOSITORY: &str = "forge-test/publish";
const BASE: &str = "forge-test-base:1";
const MOVING: &str = "latest";
const DATED: &str = "2026-07-08-test";

const PINS: &str = r#"
[image]
repository = "forge-test/publish"
date = "2026-07-08"
platform = "linux/amd64"

[image.tags]
moving = ["latest"]
immutable = ["{{ date }}-test"]

[base]
image = "forge-test-base:1"
"#;

fn image(byte: char) -> ImageId {
    ImageId(Digest::filled(byte))
}

fn reference(tag: &str) -> String {
    format!("{REPOSITORY}:{tag}")
}

/// The image the tests publish.
fn built() -> ImageId {
    image('b')
}

/// The digest the memory engine's registry stores for a push of `tag`.
fn pushed_digest(tag: &str) -> Digest {
    Digest::from_sha256(&<sha2::Sha256 as sha2::Digest>::digest(tag.as_bytes()))
}

/// One request the engine received.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Call {
    Image(String),
    Tag(String, ImageId),
    RemoveTag(String),
    Push(String),
    /// The registry has stored the push of the tag; the daemon has yet to answer.
    Pushed(String),
}

/// A daemon whose tags live in a map, with the ids of the images it holds in `store` (an image
/// stays there untagged until pruned), and the registry it pushes to in `landed`. A push
/// fails for the tags in `failing_pushes`; the request at position `hang_at` takes effect,
/// fires `stop` and then never answers, as a daemon that went quiet while a signal arrived. A
/// push is two positions: before it reaches the registry, and once the registry holds it.
#[derive(Default)]
struct MemoryEngine {
    images: RefCell<BTreeMap<String, ImageId>>,
    store: RefCell<std::collections::BTreeSet<ImageId>>,
    landed: Landed,
    calls: RefCell<Vec<Call>>,
    failing_pushes: Vec<&'static str>,
    hang_at: Option<usize>,
    stop: Arc<Notify>,
}

impl MemoryEngine {
    /// A daemon where `tags` name images already.
    fn with(tags: &[(&str, ImageId)]) -> Self {
        let engine = Self::default();
        for (tag, id) in tags {
            engine
                .images
                .borrow_mut()
                .insert(reference(tag), id.clone());
            engine.store.borrow_mut().insert(id.clone());
        }
        engine
    }

    /// What each of the recipe's tags names.
    fn tags(&self) -> BTreeMap<String, ImageId> {
        self.images
            .borrow()
            .iter()
            .filter_map(|(name, id)| {
                Some((name.strip_prefix(REPOSITORY)?[1..].to_owned(), id.clone()))
            })
            .collect()
    }

    fn calls(&self) -> Vec<Call> {
        self.calls.borrow().clone()
    }

    /// Records `call`, and hangs when it is the one at `hang_at`.
    async fn answer(&self, call: Call) {
        let position = {
            let mut calls = self.calls.borrow_mut();
            calls.push(call);
            calls.len() - 1
        };
        if self.hang_at == Some(position) {
            self.stop.notify_one();
            std::future::pending::<()>().await;
        }
    }
}

impl Engine for MemoryEngine {
    async fn build(
        &self,
        _request: &BuildRequest<'_>,
        _events: &mut dyn FnMut(Event<'_>),
    ) -> Result<ImageId, EngineError> {
        unreachable!("publishing builds nothing")
    }

    async fn image(&self, reference: &str) -> Result<Option<ImageInfo>, EngineError> {
        // By a name, or by the id of an image the daemon holds (the image just built is held).
        let found = {
            let images = self.images.borrow();
            let by_id = (reference == built().0.as_str()
                || self
                    .store
                    .borrow()
                    .iter()
                    .any(|id| id.0.as_str() == reference))
            .then(|| ImageId(reference.parse().expect("an image id")));
            images
                .get(reference)
                .cloned()
                .or(by_id)
                .map(|id| ImageInfo {
                    id,
                    repo_digests: Vec::new(),
                    tags: Vec::new(),
                    layers: Vec::new(),
                })
        };
        self.answer(Call::Image(reference.to_owned())).await;
        Ok(found)
    }

    async fn tag(
        &self,
        image: &ImageId,
        repository: &Repository,
        tag: &Tag,
    ) -> Result<(), EngineError> {
        self.images
            .borrow_mut()
            .insert(format!("{repository}:{tag}"), image.clone());
        self.store.borrow_mut().insert(image.clone());
        self.answer(Call::Tag(tag.to_string(), image.clone())).await;
        Ok(())
    }

    async fn remove_tag(&self, repository: &Repository, tag: &Tag) -> Result<(), EngineError> {
        self.images
            .borrow_mut()
            .remove(&format!("{repository}:{tag}"));
        self.answer(Call::RemoveTag(tag.to_string())).await;
        Ok(())
    }

    async fn push(
        &self,
        repository: &Repository,
        tag: &Tag,
        _credentials: Option<&Credentials>,
        events: &mut dyn FnMut(Event<'_>),
    ) -> Result<Digest, EngineError> {
        self.answer(Call::Push(tag.to_string())).await;
        let reference = format!("{repository}:{tag}");
        if self.failing_pushes.contains(&tag.as_str()) {
            return Err(EngineError::Push {
                reference,
                message: "the registry went away".to_owned(),
            });
        }
        let digest = pushed_digest(tag.as_str());
        let image = self.images.borrow().get(&reference).cloned();
        self.landed.lock().unwrap().insert(
            tag.to_string(),
            Held {
                digest: digest.clone(),
                manifest: Some(digest.clone()),
                image: image.map(|id| id.0),
            },
        );
        self.answer(Call::Pushed(tag.to_string())).await;
        events(Event::Push {
            reference: &reference,
            status: &format!("pushed {digest}"),
        });
        Ok(digest)
    }

    async fn run(&self, _image: &ImageId, _command: &[String]) -> Result<RunOutput, EngineError> {
        unreachable!("publishing runs nothing")
    }

    async fn pull_reference(
        &self,
        _reference: &crate::types::oci::ImageRef,
        _platform: &crate::types::oci::Platform,
        _credentials: Option<&Credentials>,
    ) -> Result<ImageInfo, EngineError> {
        unreachable!("publishing pulls nothing")
    }

    async fn remove_untagged(&self, _image: &ImageId) -> Result<bool, EngineError> {
        unreachable!("publishing removes nothing")
    }

    fn host(&self) -> &str {
        "memory"
    }

    async fn untag(&self, _reference: &str) -> Result<(), EngineError> {
        unreachable!("publishing removes no name but a tag")
    }

    async fn history_len(&self, _image: &ImageId) -> Result<usize, EngineError> {
        unreachable!("publishing reads no history")
    }

    async fn open_probe(&self, _image: &ImageId) -> Result<String, EngineError> {
        unreachable!("publishing makes no container")
    }

    async fn path_in(
        &self,
        _container: &str,
        _path: &str,
    ) -> Result<Option<crate::engine::PathMeta>, EngineError> {
        unreachable!("publishing reads no path")
    }

    async fn close_probe(&self, _container: &str) {}
}

/// What a memory engine's pushes stored in its registry, by tag.
type Landed = Arc<Mutex<BTreeMap<String, Held>>>;

/// A registry whose tags live in a map, noting every tag it is asked about; what `landed` holds
/// (a memory engine's pushes) comes first. With `blocked`, the first question fires the stop
/// and waits until the test lets go of the sender.
#[derive(Default)]
struct MemoryRegistry {
    landed: Landed,
    tags: BTreeMap<&'static str, Held>,
    asked: Arc<Mutex<Vec<String>>>,
    blocked: Option<(Arc<Notify>, mpsc::Receiver<()>)>,
}

impl MemoryRegistry {
    /// The registry `engine` pushes to.
    fn of(engine: &MemoryEngine) -> Self {
        Self {
            landed: Arc::clone(&engine.landed),
            ..Self::default()
        }
    }

    /// A registry whose only tag is `tag`, holding `held`.
    fn holding(tag: &'static str, held: Held) -> Self {
        Self {
            tags: BTreeMap::from([(tag, held)]),
            ..Self::default()
        }
    }
}

/// A registry entry: the manifest `digest` names, the image manifest it leads to and its config.
fn held(digest: char, manifest: Option<Digest>, image: Option<Digest>) -> Held {
    Held {
        digest: Digest::filled(digest),
        manifest,
        image,
    }
}

impl RegistryTags for MemoryRegistry {
    fn credentials(&self) -> Option<Credentials> {
        Some(Credentials {
            registry: "localhost:5000".to_owned(),
            username: "forge".to_owned(),
            password: "secret".to_owned(),
        })
    }

    fn held(&self, tag: &Tag) -> anyhow::Result<Option<Held>> {
        self.asked.lock().unwrap().push(tag.to_string());
        if let Some((stop, answer)) = &self.blocked {
            stop.notify_one();
            let _ = answer.recv();
        }
        let landed = self.landed.lock().unwrap().get(tag.as_str()).cloned();
        Ok(landed.or_else(|| self.tags.get(tag.as_str()).cloned()))
    }

    fn upload(
        &self,
        _blobs: &crate::normalize::Blobs,
        _base: &crate::types::oci::ImageRef,
    ) -> anyhow::Result<usize> {
        Ok(0)
    }

    fn put_manifest(&self, _tag: &Tag, manifest: &[u8]) -> anyhow::Result<Digest> {
        Ok(crate::conduit::sha256(manifest))
    }
}

/// A stop that arrives when the engine or the registry fires it.
struct Trigger(Arc<Notify>);

impl Stop for Trigger {
    async fn received(&mut self) -> &'static str {
        self.0.notified().await;
        "SIGINT"
    }
}

/// A recipe folder and the inputs of a build of it.
struct Bench {
    folder: tempfile::TempDir,
    recipe: Recipe,
    tags: Vec<ResolvedTag>,
    inputs: Inputs,
    platform: Platform,
    image: ImageId,
}

impl Bench {
    fn new() -> Self {
        let folder = tempfile::tempdir().unwrap();
        std::fs::write(folder.path().join("pins.toml"), PINS).unwrap();
        let recipe = Recipe::open(folder.path()).unwrap();
        let tags = recipe.tags();
        let inputs = Inputs::sample();
        let platform = recipe.pins.image.platform.clone();
        Self {
            folder,
            recipe,
            tags,
            inputs,
            platform,
            image: built(),
        }
    }

    fn publication(&self, push: bool, force: bool) -> Publication<'_> {
        Publication {
            recipe: &self.recipe,
            image: &self.image,
            id: &self.image.0,
            manifest: None,
            blobs: None,
            epoch: self.recipe.source_date_epoch(),
            platform: &self.platform,
            tags: &self.tags,
            inputs: &self.inputs,
            patches: &[],
            revision: Some("0123456789abcdef0123456789abcdef01234567"),
            push,
            force,
            builder: crate::engine::Builder::Buildkit,
            built: None,
        }
    }

    /// forge.lock's bytes, if it exists.
    fn lock_bytes(&self) -> Option<Vec<u8>> {
        std::fs::read(self.folder.path().join(lock::LOCK_FILE)).ok()
    }

    /// Publishes with `engine` and `registry`; returns the outcome and the progress lines.
    async fn publish(
        &self,
        publication: Publication<'_>,
        engine: &MemoryEngine,
        registry: MemoryRegistry,
    ) -> (anyhow::Result<Published>, Vec<String>) {
        let printer = Printer::new(Verbosity::Quiet, OutputFormat::Human, ColorChoice::Never);
        let mut stop = Trigger(engine.stop.clone());
        let mut lines = Vec::new();
        let mut events = |event: Event<'_>| {
            if let Event::Push { reference, status } = event {
                lines.push(format!("{reference}: {status}"));
            }
        };
        let outcome = publish(
            &publication,
            engine,
            move || Ok(registry),
            &mut stop,
            &mut events,
            &printer,
        )
        .await;
        (outcome, lines)
    }

    /// Publishes with a push on `engine` until it stops answering, then drops the publication,
    /// which runs none of its own clean-up, as a SIGKILL would. Returns whether it was killed
    /// (false: it finished first).
    async fn killed(&self, engine: &MemoryEngine) -> bool {
        let printer = Printer::new(Verbosity::Quiet, OutputFormat::Human, ColorChoice::Never);
        let publication = self.publication(true, false);
        let registry = MemoryRegistry::default();
        let (mut never, mut events) = (Never, |_: Event<'_>| {});
        tokio::select! {
            biased;
            () = engine.stop.notified() => true,
            outcome = publish(&publication, engine, move || Ok(registry), &mut never, &mut events, &printer) => {
                outcome.unwrap();
                false
            }
        }
    }

    /// A daemon where `before` tags name images, on which a publication was killed at request
    /// `at`.
    async fn killed_at(&self, before: &[(&str, ImageId)], at: usize) -> MemoryEngine {
        let engine = MemoryEngine {
            hang_at: Some(at),
            ..MemoryEngine::with(before)
        };
        assert!(self.killed(&engine).await, "killed at request {at}");
        engine
    }

    /// Settles the intent the way `choice` says, asking `registry`.
    async fn settle(
        &self,
        engine: &MemoryEngine,
        registry: anyhow::Result<MemoryRegistry>,
        choice: intent::Choice,
    ) -> anyhow::Result<intent::Settled> {
        let printer = Printer::new(Verbosity::Quiet, OutputFormat::Human, ColorChoice::Never);
        intent::settle(&self.recipe, engine, move |_, _| registry, choice, &printer).await
    }

    /// The intent's text, if there is one.
    fn intent_text(&self) -> Option<String> {
        std::fs::read_to_string(intent::path(self.folder.path())).ok()
    }
}

/// The record's pushed digest of each tag.
fn recorded_pushes(record: &Record) -> Vec<(String, Option<Digest>)> {
    record
        .tags
        .iter()
        .map(|tag| (tag.name.to_string(), tag.pushed.clone()))
        .collect()
}

fn tags(pairs: &[(&str, ImageId)]) -> BTreeMap<String, ImageId> {
    pairs
        .iter()
        .map(|(tag, id)| ((*tag).to_owned(), id.clone()))
        .collect()
}

fn message(error: &anyhow::Error) -> String {
    error.to_string()
}

#[tokio::test]
async fn a_first_push_tags_then_pushes_immutable_tags_first_and_records_every_digest() {
    let bench = Bench::new();
    let engine = MemoryEngine::default();
    let (outcome, lines) = bench
        .publish(
            bench.publication(true, false),
            &engine,
            MemoryRegistry::default(),
        )
        .await;
    let published = outcome.unwrap();
    assert_eq!(
        engine.calls(),
        [
            Call::Image(reference(MOVING)),
            Call::Image(reference(DATED)),
            Call::Image(BASE.to_owned()),
            Call::Tag(MOVING.to_owned(), built()),
            Call::Tag(DATED.to_owned(), built()),
            Call::Push(DATED.to_owned()),
            Call::Pushed(DATED.to_owned()),
            Call::Push(MOVING.to_owned()),
            Call::Pushed(MOVING.to_owned()),
        ]
    );
    assert_eq!(
        lines,
        [
            format!("{}: pushed {}", reference(DATED), pushed_digest(DATED)),
            format!("{}: pushed {}", reference(MOVING), pushed_digest(MOVING)),
        ]
    );
    assert_eq!(published.written, Written::Changed);
    assert_eq!(
        recorded_pushes(&published.record),
        [
            (MOVING.to_owned(), Some(pushed_digest(MOVING))),
            (DATED.to_owned(), Some(pushed_digest(DATED))),
        ]
    );
    assert_eq!(
        lock::read(bench.folder.path()).unwrap().as_ref(),
        Some(&published.record)
    );
    assert_eq!(
        published.record.image.revision.as_deref(),
        Some("0123456789abcdef0123456789abcdef01234567")
    );
}

#[tokio::test]
async fn tags_already_on_the_image_are_fresh_and_the_base_is_recorded_from_the_daemon() {
    let bench = Bench::new();
    let engine = MemoryEngine::with(&[(MOVING, built()), (DATED, built())]);
    engine
        .images
        .borrow_mut()
        .insert(BASE.to_owned(), image('e'));
    let (outcome, _) = bench
        .publish(
            bench.publication(false, false),
            &engine,
            MemoryRegistry::default(),
        )
        .await;
    let published = outcome.unwrap();
    assert!(
        !engine
            .calls()
            .iter()
            .any(|call| matches!(call, Call::Tag(..) | Call::Push(_)))
    );
    assert_eq!(published.record.base.id, Some(Digest::filled('e')));
    assert_eq!(
        recorded_pushes(&published.record),
        [(MOVING.to_owned(), None), (DATED.to_owned(), None)]
    );
}

#[tokio::test]
async fn a_dated_tag_on_another_image_on_the_daemon_is_refused_before_any_tag_moves() {
    let bench = Bench::new();
    let engine = MemoryEngine::with(&[(MOVING, image('a')), (DATED, image('a'))]);
    let registry = MemoryRegistry::default();
    let asked = registry.asked.clone();
    let (outcome, _) = bench
        .publish(bench.publication(true, false), &engine, registry)
        .await;
    let error = outcome.unwrap_err();
    assert_eq!(
        message(&error),
        format!(
            "tag {DATED} already points at {}, not at the image just built ({})",
            image('a'),
            built()
        )
    );
    // A check that did not hold (exit 1), which the build explains from the two images.
    assert!(matches!(
        error.downcast_ref::<BuildError>(),
        Some(BuildError::TagHoldsAnother { differs: None, .. })
    ));
    assert_eq!(
        crate::diagnostics::advice_of(error.root_cause()).map(|advice| advice.exit_status()),
        Some(crate::diagnostics::ExitStatus::Failure)
    );
    assert_eq!(engine.calls().len(), 3, "only the look-ups");
    assert!(
        asked.lock().unwrap().is_empty(),
        "the registry is not asked"
    );
    assert_eq!(
        engine.tags(),
        tags(&[(MOVING, image('a')), (DATED, image('a'))])
    );
    assert_eq!(bench.lock_bytes(), None);
}

#[tokio::test]
async fn a_dated_tag_on_another_image_in_the_registry_is_refused_before_any_tag_moves() {
    let bench = Bench::new();
    let engine = MemoryEngine::with(&[(MOVING, image('a'))]);
    let registry = MemoryRegistry::holding(
        DATED,
        held('d', Some(Digest::filled('d')), Some(image('a').0)),
    );
    let asked = registry.asked.clone();
    let (outcome, _) = bench
        .publish(bench.publication(true, false), &engine, registry)
        .await;
    let error = outcome.unwrap_err();
    assert_eq!(
        message(&error),
        format!(
            "tag {DATED} already names {} in the registry (image {}), which is not the image just built ({})",
            Digest::filled('d'),
            image('a'),
            built()
        )
    );
    assert!(error.downcast_ref::<CheckFailed>().is_some());
    assert_eq!(
        *asked.lock().unwrap(),
        [DATED],
        "only immutable tags are asked"
    );
    assert_eq!(engine.calls().len(), 3, "only the look-ups");
    assert_eq!(engine.tags(), tags(&[(MOVING, image('a'))]));
    assert_eq!(bench.lock_bytes(), None);
}

#[tokio::test]
async fn a_registry_index_without_this_platform_is_refused_as_holding_no_image() {
    let bench = Bench::new();
    let engine = MemoryEngine::default();
    let registry = MemoryRegistry::holding(DATED, held('d', None, None));
    let (outcome, _) = bench
        .publish(bench.publication(true, false), &engine, registry)
        .await;
    assert_eq!(
        message(&outcome.unwrap_err()),
        format!(
            "tag {DATED} already names {} in the registry (no image for linux/amd64), which is not the image just built ({})",
            Digest::filled('d'),
            built()
        )
    );
    assert!(engine.tags().is_empty());
}

#[tokio::test]
async fn force_re_points_dated_tags_without_asking_the_registry() {
    let bench = Bench::new();
    let engine = MemoryEngine::with(&[(DATED, image('a'))]);
    let registry = MemoryRegistry::holding(
        DATED,
        held('d', Some(Digest::filled('d')), Some(image('a').0)),
    );
    let asked = registry.asked.clone();
    let (outcome, _) = bench
        .publish(bench.publication(true, true), &engine, registry)
        .await;
    let published = outcome.unwrap();
    assert!(asked.lock().unwrap().is_empty());
    assert_eq!(engine.tags(), tags(&[(MOVING, built()), (DATED, built())]));
    assert_eq!(
        recorded_pushes(&published.record),
        [
            (MOVING.to_owned(), Some(pushed_digest(MOVING))),
            (DATED.to_owned(), Some(pushed_digest(DATED))),
        ]
    );
}

#[tokio::test]
async fn a_tag_the_registry_holds_with_this_image_is_kept_not_pushed() {
    // Once by its configuration, once by its manifest (a daemon with the containerd image
    // store names images by manifest).
    for held in [
        Held {
            digest: Digest::filled('d'),
            manifest: Some(Digest::filled('d')),
            image: Some(built().0),
        },
        Held {
            digest: Digest::filled('d'),
            manifest: Some(built().0),
            image: None,
        },
    ] {
        let bench = Bench::new();
        let engine = MemoryEngine::default();
        let registry = MemoryRegistry {
            tags: BTreeMap::from([(DATED, held)]),
            ..MemoryRegistry::default()
        };
        let (outcome, _) = bench
            .publish(bench.publication(true, false), &engine, registry)
            .await;
        let published = outcome.unwrap();
        let pushes: Vec<Call> = engine
            .calls()
            .into_iter()
            .filter(|call| matches!(call, Call::Push(_)))
            .collect();
        assert_eq!(pushes, [Call::Push(MOVING.to_owned())]);
        assert_eq!(
            recorded_pushes(&published.record),
            [
                (MOVING.to_owned(), Some(pushed_digest(MOVING))),
                (DATED.to_owned(), Some(Digest::filled('d'))),
            ]
        );
    }
}

#[tokio::test]
async fn a_push_that_fails_after_another_keeps_the_tags_and_records_what_was_pushed() {
    let bench = Bench::new();
    let engine = MemoryEngine {
        failing_pushes: vec![MOVING],
        ..MemoryEngine::with(&[(MOVING, image('a'))])
    };
    let (outcome, _) = bench
        .publish(
            bench.publication(true, false),
            &engine,
            MemoryRegistry::default(),
        )
        .await;
    let error = outcome.unwrap_err();
    match error.downcast_ref::<BuildError>() {
        Some(BuildError::PartlyPushed {
            pushed,
            not_pushed,
            source: EngineError::Push { reference, .. },
        }) => {
            assert_eq!(pushed, &[DATED]);
            assert_eq!(not_pushed, &[MOVING]);
            assert_eq!(reference, &self::reference(MOVING));
        }
        _ => panic!("not a partial push: {error:#}"),
    }
    assert_eq!(
        message(&error),
        format!("the push stopped part way: pushed {DATED}; not pushed {MOVING}")
    );
    assert_eq!(
        engine.calls().last(),
        Some(&Call::Push(MOVING.to_owned())),
        "nothing is put back"
    );
    assert_eq!(engine.tags(), tags(&[(MOVING, built()), (DATED, built())]));
    let record = lock::read(bench.folder.path()).unwrap().unwrap();
    assert_eq!(
        recorded_pushes(&record),
        [
            (MOVING.to_owned(), None),
            (DATED.to_owned(), Some(pushed_digest(DATED))),
        ]
    );
}

#[tokio::test]
async fn a_failing_first_push_puts_the_tags_back_last_moved_first_and_leaves_the_record() {
    let bench = Bench::new();
    let last = Record::sample().to_text();
    std::fs::write(bench.folder.path().join(lock::LOCK_FILE), &last).unwrap();
    let engine = MemoryEngine {
        failing_pushes: vec![DATED],
        ..MemoryEngine::with(&[(MOVING, image('a'))])
    };
    let (outcome, _) = bench
        .publish(
            bench.publication(true, false),
            &engine,
            MemoryRegistry::default(),
        )
        .await;
    let error = outcome.unwrap_err();
    assert!(matches!(
        error.downcast_ref::<EngineError>(),
        Some(EngineError::Push { .. })
    ));
    // The registry is asked whether the push reached it (it did not), then the tags go back.
    let calls = engine.calls();
    let after_push = calls
        .iter()
        .position(|call| call == &Call::Push(DATED.to_owned()))
        .unwrap();
    let moves: Vec<&Call> = calls[after_push + 1..]
        .iter()
        .filter(|call| !matches!(call, Call::Image(_)))
        .collect();
    assert_eq!(
        moves,
        [
            &Call::RemoveTag(DATED.to_owned()),
            &Call::Tag(MOVING.to_owned(), image('a')),
        ]
    );
    assert_eq!(engine.tags(), tags(&[(MOVING, image('a'))]));
    assert_eq!(bench.lock_bytes().unwrap(), last.as_bytes());
    assert!(!intent::path(bench.folder.path()).exists());
}

#[tokio::test]
async fn a_build_without_push_of_the_pushed_image_keeps_the_recorded_digests() {
    let mut bench = Bench::new();
    let engine = MemoryEngine::default();
    let (outcome, _) = bench
        .publish(
            bench.publication(true, false),
            &engine,
            MemoryRegistry::default(),
        )
        .await;
    let pushed = recorded_pushes(&outcome.unwrap().record);

    // The same image again, not pushed: the registry still holds what was pushed of it.
    let (outcome, _) = bench
        .publish(
            bench.publication(false, false),
            &engine,
            MemoryRegistry::default(),
        )
        .await;
    let published = outcome.unwrap();
    assert_eq!(recorded_pushes(&published.record), pushed);
    assert_eq!(published.written, Written::Unchanged);

    // Another image: nothing of it was pushed.
    bench.image = image('c');
    let (outcome, _) = bench
        .publish(
            bench.publication(false, true),
            &engine,
            MemoryRegistry::default(),
        )
        .await;
    assert_eq!(
        recorded_pushes(&outcome.unwrap().record),
        [(MOVING.to_owned(), None), (DATED.to_owned(), None)]
    );
}

#[tokio::test]
async fn a_record_forge_cannot_read_stops_the_build_before_any_tag_moves() {
    let bench = Bench::new();
    std::fs::write(bench.folder.path().join(lock::LOCK_FILE), "version = 99\n").unwrap();
    let engine = MemoryEngine::default();
    let (outcome, _) = bench
        .publish(
            bench.publication(false, false),
            &engine,
            MemoryRegistry::default(),
        )
        .await;
    let error = outcome.unwrap_err();
    assert!(
        error.downcast_ref::<lock::LockError>().is_some(),
        "{error:#}"
    );
    assert!(engine.tags().is_empty());
    assert_eq!(bench.lock_bytes().unwrap(), b"version = 99\n");
}

/// A stop that never comes: the publication runs until it ends or is dropped.
struct Never;

impl Stop for Never {
    async fn received(&mut self) -> &'static str {
        std::future::pending().await
    }
}

mod recovery;
