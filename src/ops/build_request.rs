//! What `forge build` is asked (`BuildOptions`) and what it asks the daemon for each platform
//! (`build_request`): shared by the one-platform build (`build`) and the build of several
//! platforms on their nodes (`platforms`).

use std::path::PathBuf;

use crate::attest::keys::SigningKey;
use crate::engine::{BuildRequest, Builder};
use crate::pipeline::{self, Plan};
use crate::printer::Printer;
use crate::progress::ProgressMode;
use crate::recipe::Recipe;
use crate::registry::Credentials;
use crate::types::oci::Platform;
use crate::types::oci::RegistryHost;

/// How far `forge build` goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BuildMode {
    /// Build, tag, push when asked, record.
    Build,
    /// Stop at the context digest and print the plan; no daemon.
    DryRun,
}

/// Options of `forge build`.
#[derive(Debug, Clone)]
pub struct BuildOptions {
    /// How far to go.
    pub mode: BuildMode,
    /// Refuse to build when the inputs differ from forge.lock.
    pub locked: bool,
    /// Push every tag after tagging.
    pub push: bool,
    /// Re-point immutable tags that name another image.
    pub force: bool,
    /// Ignore the build cache.
    pub no_cache: bool,
    /// The platform, instead of pins.toml's.
    pub platform: Option<Platform>,
    /// The daemon's builder.
    pub builder: Builder,
    /// How progress is shown.
    pub progress: ProgressMode,
    /// Show each step's output lines on a terminal too.
    pub verbose: bool,
    /// Keep the context archive in this file.
    pub context_out: Option<PathBuf>,
    /// Registry hosts besides loopback ones that the dated-tag check may ask over plain HTTP.
    pub insecure_registries: Vec<RegistryHost>,
    /// Images whose build cache to reuse (`--cache-from`); BuildKit then also writes the
    /// image's own cache metadata into it.
    pub cache_from: Vec<String>,
    /// With `--push`: sign the pushed manifest with this key and attach the signature, the
    /// SBOM and the provenance to it.
    pub sign: Option<SigningKey>,
    /// For a recipe of several platforms: the daemon that builds each (`PLATFORM=URL`).
    pub nodes: Vec<crate::engine::address::Node>,
}

/// What the daemon is asked to build for `platform`, from the recipe's commit `revision` and
/// the `credentials` of `build_credentials` (both looked up once per build, whatever the
/// number of platforms).
pub(super) fn build_request<'a>(
    recipe: &Recipe,
    options: &BuildOptions,
    plan: &'a Plan,
    platform: &'a Platform,
    revision: Option<&str>,
    credentials: Vec<Credentials>,
    cache: Option<&CacheImage>,
) -> BuildRequest<'a> {
    let mut cache_from = options.cache_from.clone();
    if let Some(cache) = cache.filter(|cache| cache.readable) {
        cache_from.push(cache.to_string());
    }
    BuildRequest {
        context: plan
            .context
            .archive()
            .expect("a build assembles its context into a file"),
        builder: options.builder,
        no_cache: options.no_cache,
        platform: Some(platform),
        args: pipeline::build_args(recipe, revision),
        labels: plan.labels(),
        credentials,
        cache_from,
        inline_cache: cache.is_some(),
    }
}

/// How long the registry may take to say whether it holds the build cache before the build goes
/// on without it.
const CACHE_PROBE: std::time::Duration = std::time::Duration::from_secs(10);

/// The build cache a push reads and writes (`[image] cache`), `REPOSITORY:TAG`, and whether the
/// registry holds it yet; `None` when the recipe names none or nothing is pushed. The registry
/// is asked first because BuildKit waits without limit on a registry that does not answer.
pub(super) async fn cache_image(
    recipe: &Recipe,
    options: &BuildOptions,
    printer: &Printer,
) -> Option<CacheImage> {
    let tag = recipe.pins.image.cache.clone()?;
    if !options.push {
        return None;
    }
    let mut cache = CacheImage {
        repository: recipe.pins.image.repository.clone(),
        tag,
        readable: false,
    };
    let (repository, tag) = (cache.repository.clone(), cache.tag.clone());
    let insecure = options.insecure_registries.clone();
    let probe = tokio::task::spawn_blocking(move || {
        let (client, _) = crate::registry::RegistryClient::for_recipe(&repository, insecure)
            .map_err(|error| error.to_string())?;
        let remote = crate::registry::RemoteRepository::from(&repository);
        match crate::registry::Registry::manifest(&client, &remote, tag.as_str()) {
            Ok(_) => Ok(true),
            Err(crate::registry::RegistryError::NotFound { .. }) => Ok(false),
            Err(error) => Err(error.to_string()),
        }
    });
    match tokio::time::timeout(CACHE_PROBE, probe).await {
        Ok(Ok(Ok(true))) => cache.readable = true,
        Ok(Ok(Ok(false))) => printer.status(
            "Caching",
            format_args!("nothing yet: {cache} does not exist, this push writes it"),
        ),
        Ok(Ok(Err(error))) => printer.warn(format_args!(
            "the build cache {cache} cannot be read ({error}); building without it"
        )),
        Ok(Err(_)) | Err(_) => printer.warn(format_args!(
            "the registry did not say within {} s whether it holds the build cache {cache}; building without it",
            CACHE_PROBE.as_secs()
        )),
    }
    Some(cache)
}

/// Where the build cache lives: a tag of its own beside the image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct CacheImage {
    /// The image's repository.
    pub repository: crate::types::oci::Repository,
    /// The cache's tag.
    pub tag: crate::types::oci::Tag,
    /// Whether the registry holds it, so that the build can read it.
    pub readable: bool,
}

impl CacheImage {
    /// Tags the image the engine built (before normalizing, with its cache metadata) as the
    /// cache and pushes it with the matching one of `credentials`. A failure is a warning: the
    /// published image stands, and the next cold runner only rebuilds more.
    pub(super) async fn push<E: crate::engine::Engine>(
        &self,
        engine: &E,
        built: &crate::engine::ImageId,
        credentials: &[Credentials],
        printer: &Printer,
    ) {
        let credentials = credentials
            .iter()
            .find(|credentials| self.repository.registry().is_named(&credentials.registry));
        let pushed = async {
            engine.tag(built, &self.repository, &self.tag).await?;
            engine
                .push(&self.repository, &self.tag, credentials, &mut |_| {})
                .await
        }
        .await;
        match pushed {
            Ok(digest) => printer.status("Pushed", format_args!("{self} {digest} (build cache)")),
            Err(error) => printer.warn(format_args!(
                "the build cache was not pushed to {self} ({error}); the image is published, and the next runner with an empty daemon builds the steps again"
            )),
        }
    }
}

impl std::fmt::Display for CacheImage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.repository, self.tag)
    }
}

/// The credentials `docker build` would send with the build: those of every registry the docker
/// configuration holds (`auths`, each `credHelpers` host, what the `credsStore` lists) and the
/// one forge's variables are kept for, so that the base and every other stage's image pull as
/// after `docker login`. The daemon uses each only for its own registry. A lookup that fails is
/// a warning: the images may be public.
pub(super) fn build_credentials(recipe: &Recipe, printer: &Printer) -> Vec<Credentials> {
    let recipe_registry = recipe.pins.image.repository.registry().as_str();
    let (credentials, errors) = crate::registry::credentials::all(recipe_registry);
    for error in errors {
        printer.warn(format_args!(
            "the build is sent without some credentials: {error}"
        ));
    }
    credentials
}
