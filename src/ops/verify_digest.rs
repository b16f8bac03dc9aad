//! `forge verify-digest`: proves from forge.lock that the tags, the base, the inputs, the
//! registry, every node and the image contents still are what the build recorded.
//!
//! 1. Read the record; render, patch and assemble the context as a build would, for the inputs
//!    (and the overlay files `--contents` compares).
//! 2. On each node (the `--host`s, else `DOCKER_HOST` or the default socket): what every tag
//!    names. On the first node also the base image, and with `--contents` a run of the image.
//! 3. With `--remote`: each tag's manifest from the registry itself, and the image it holds
//!    (for an index, the manifest of its entry for the recipe's platform).
//! 4. The table on stdout (on stderr beside `--json`, which takes stdout); exit 1 when a check
//!    fails, 2 when a check could not run.

use anyhow::Context as _;

use crate::attest::{bundle, cosign};
use crate::context::Output;
use crate::diagnostics::CheckFailed;
use crate::engine::{Docker, Engine, ImageId};
use crate::lock::{self, Record};
use crate::pipeline;
use crate::printer::Printer;
use crate::publish;
use crate::recipe::Recipe;
use crate::registry::{self, Registry, RegistryClient, RegistryError, RemoteRepository};
use crate::types::oci::ImageRef;
use crate::types::oci::RegistryHost;
use crate::verify::{self, Check, Kind, Report, Served, VerifyError, attached, probe};

/// Options of `forge verify-digest`.
#[derive(Debug, Clone, Default)]
pub struct VerifyOptions {
    /// Ask the registry for each tag's manifest.
    pub remote: bool,
    /// Print the table with whole digests.
    pub wide: bool,
    /// Run the image and read back its pins and overlay files.
    pub contents: bool,
    /// The daemons to check (`unix://`, `tcp://`, `ssh://`, as `DOCKER_HOST` spells them); empty
    /// for the default one.
    pub hosts: Vec<crate::engine::address::DaemonHost>,
    /// Registry hosts that may be spoken to over plain HTTP besides loopback ones.
    pub insecure_registries: Vec<RegistryHost>,
    /// With `remote`: check the attachments of each tag's manifest with this key.
    pub key: Option<crate::attest::keys::VerifyingKey>,
    /// Build the recorded inputs again with no cache on the first daemon and compare the
    /// result with the recorded image.
    pub rebuild: bool,
}

/// Runs `forge verify-digest` on `recipe`: against its forge.lock.
pub fn verify_digest(
    recipe: &Recipe,
    options: &VerifyOptions,
    printer: &Printer,
) -> anyhow::Result<()> {
    publish::intent::settle_before_reading(recipe, &options.insecure_registries, printer)?;
    let record = verify::recorded_build(recipe)?;
    // A build with `--repository` recorded where its tags went: the checks follow the record.
    let recipe = &recipe
        .clone()
        .with_repository(record.image.repository.clone());
    let mut report = Report::of(record.image.repository.to_string());
    let plan = recorded_plan(recipe, &record, &mut report, printer)?;
    let current = plan.inputs.as_ref().expect("the plan computes the inputs");

    let files = if options.contents {
        let archive = plan
            .context
            .archive()
            .expect("the context is assembled into a file");
        probe::overlay_files(archive, &recipe.pins.overlay_paths())
            .with_context(|| format!("cannot read the build context {}", archive.display()))?
    } else {
        Vec::new()
    };
    let repository = remote_repository(&record);
    let client = RegistryClient::new(options.insecure_registries.clone()).with_credentials_for(
        &repository.registry,
        Some(recipe.pins.image.repository.registry().as_str()),
    );
    let subject = Subject {
        record: &record,
        pins: &recipe.pins,
        inputs: current,
        files,
        platform: record
            .image
            .platform
            .as_ref()
            .unwrap_or(&recipe.pins.image.platform),
        client: &client,
        repository,
        recipe: Some(recipe),
        rebuild: options.rebuild.then_some((recipe, &plan)),
        origin: lock::path(&recipe.root).display().to_string(),
        reference: None,
    };
    run_checks(&subject, options, options.remote, report, printer)
}

/// Runs `forge verify-digest REF`: against the build record attached to the image `reference`
/// names in its registry, with no recipe folder, except for `--rebuild`, which builds
/// `recipe` (whose inputs must be the recorded ones) again. The registry is always asked.
pub fn verify_reference(
    reference: &ImageRef,
    recipe: Option<&Recipe>,
    options: &VerifyOptions,
    printer: &Printer,
) -> anyhow::Result<()> {
    let attached = super::attached::fetch(
        reference,
        options.key.as_ref(),
        &options.insecure_registries,
        recipe.map(|recipe| recipe.pins.image.repository.registry().as_str()),
        printer,
    )?;
    let record = attached.record();
    let mut report = Report::of(record.image.repository.to_string());
    let plan = match recipe {
        Some(recipe) if options.rebuild => {
            Some((recipe, recorded_plan(recipe, record, &mut report, printer)?))
        }
        _ => None,
    };
    let subject = Subject {
        record,
        pins: &attached.pins,
        // The provenance must name the inputs the record names.
        inputs: &record.inputs,
        files: if options.contents {
            attached.document.files.clone()
        } else {
            Vec::new()
        },
        platform: record
            .image
            .platform
            .as_ref()
            .unwrap_or(&attached.pins.image.platform),
        client: &attached.client,
        repository: attached.repository.clone(),
        recipe: None,
        rebuild: plan.as_ref().map(|(recipe, plan)| (*recipe, plan)),
        origin: attached.origin(),
        reference: Some(reference.to_string()),
    };
    run_checks(&subject, options, true, report, printer)
}

/// The plan of `recipe` as `record`'s build made it, with a row in `report` for each input: the
/// context is assembled with the mtime the build used, whatever SOURCE_DATE_EPOCH says now, so
/// that only a changed input can change its digest.
fn recorded_plan(
    recipe: &Recipe,
    record: &Record,
    report: &mut Report,
    printer: &Printer,
) -> anyhow::Result<pipeline::Plan> {
    let plan = pipeline::plan(
        recipe,
        Output::TemporaryFile,
        true,
        Some(record.inputs.context_mtime),
        printer,
    )?;
    let current = plan.inputs.as_ref().expect("the plan computes the inputs");
    report.extend(verify::inputs(&record.inputs, current));
    Ok(plan)
}

/// What is verified, and against what: a recipe's forge.lock, or the record attached to an
/// image in its registry.
struct Subject<'a> {
    /// The build record.
    record: &'a Record,
    /// The pins the image was built from.
    pins: &'a crate::pins::Pins,
    /// The inputs the provenance must name.
    inputs: &'a crate::lock::Inputs,
    /// With `--contents`: the files the overlays put in the image.
    files: Vec<probe::ExpectedFile>,
    /// The platform the image was built for.
    platform: &'a crate::types::oci::Platform,
    /// A client for the record's registry.
    client: &'a RegistryClient,
    /// The record's repository on that registry.
    repository: RemoteRepository,
    /// The recipe, when verifying against its forge.lock: the base is checked on the first
    /// node, and what the image holds is recorded there.
    recipe: Option<&'a Recipe>,
    /// With `--rebuild`: the recipe and its plan (the context the rebuild sends).
    rebuild: Option<(&'a Recipe, &'a pipeline::Plan)>,
    /// Where the record came from, for the closing line.
    origin: String,
    /// The image reference the tester named (`verify-digest REF`), when it was one.
    reference: Option<String>,
}

/// The record's repository on its registry.
fn remote_repository(record: &Record) -> RemoteRepository {
    RemoteRepository::from(&record.image.repository)
}

/// The checks on the nodes and, with `remote`, in the registry, added to `report`; then the
/// table and the verdict.
fn run_checks(
    subject: &Subject<'_>,
    options: &VerifyOptions,
    remote: bool,
    mut report: Report,
    printer: &Printer,
) -> anyhow::Result<()> {
    let mut unreached: Vec<(String, anyhow::Error)> = Vec::new();
    report.lane.clone_from(&subject.pins.lane);
    printer.status(
        "Lane",
        format_args!(
            "{} is {}",
            subject.record.image.repository,
            super::report::lane_text(subject.pins.lane.as_ref())
        ),
    );
    daemon_checks(subject, options, printer, &mut report, &mut unreached)?;
    if remote {
        match registry_checks(subject, options, printer) {
            Ok(checks) => report.extend(checks),
            Err((what, error)) => unreached.push((what, error)),
        }
    }
    conclude(&subject.origin, &report, unreached, options.wide, printer)
}

/// The checks on each daemon: its tags, and on the first one the base image and, with
/// `--contents`, what the image holds. A daemon that cannot be reached is added to
/// `unreached`.
fn daemon_checks(
    subject: &Subject<'_>,
    options: &VerifyOptions,
    printer: &Printer,
    report: &mut Report,
    unreached: &mut Vec<(String, anyhow::Error)>,
) -> anyhow::Result<()> {
    let record = subject.record;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async {
        let hosts: Vec<Option<&str>> = if options.hosts.is_empty() {
            vec![None]
        } else {
            options
                .hosts
                .iter()
                .map(|host| Some(host.as_str()))
                .collect()
        };
        let mut first = true;
        for host in hosts {
            let connected = match host {
                Some(host) => Docker::connect_to(host).await,
                None => Docker::connect().await,
            };
            let engine = match connected {
                Ok(engine) => engine,
                Err(error) => {
                    let subject = host.map_or_else(
                        || "the Docker daemon".to_owned(),
                        |host| format!("node {host}"),
                    );
                    unreached.push((subject, error.into()));
                    continue;
                }
            };
            match skip_unpulled(subject, options, &engine, printer).await {
                Ok(true) => continue,
                Ok(false) => {}
                Err(error) => {
                    unreached.push((format!("node {}", engine.host()), error));
                    continue;
                }
            }
            printer.status("Checking", format_args!("tags on {}", engine.host()));
            let outcome = async {
                node_checks(record, &engine, report).await?;
                if first {
                    // A tester's node holds the layer's image, whose layers hold the base's,
                    // not the base under its own name: the base is checked on the
                    // maintainer's daemon only.
                    if subject.recipe.is_some() {
                        base_checks(record, &engine, report).await?;
                    }
                    if options.contents {
                        content_checks(subject, &engine, report, printer).await?;
                    }
                    rebuild_checks(subject, &engine, report, printer).await?;
                }
                anyhow::Ok(())
            }
            .await;
            if let Err(error) = outcome {
                unreached.push((format!("node {}", engine.host()), error));
            }
            first = false;
        }
    });

    Ok(())
}

/// Prints the table (and the JSON document) and says how the run ends.
fn conclude(
    origin: &str,
    report: &Report,
    unreached: Vec<(String, anyhow::Error)>,
    wide: bool,
    printer: &Printer,
) -> anyhow::Result<()> {
    let names: Vec<String> = unreached
        .iter()
        .map(|(subject, error)| format!("{subject}: {error}"))
        .collect();
    printer.answer(&report.table(wide));
    printer.document(&report.verdict(&names));
    let mut unreached = unreached.into_iter();
    if let Some((subject, error)) = unreached.next() {
        for (other, error) in unreached {
            printer.error(format_args!("could not verify {other}: {error:#}"));
        }
        return Err(error.context(VerifyError::Unreached { subject }));
    }
    let failed: Vec<&Check> = report.failed().collect();
    if let Some(first) = failed.first() {
        let stale = failed.iter().any(|check| check.name == Kind::Input);
        let rebuilt = failed.iter().all(|check| check.name == Kind::Rebuild);
        return Err(CheckFailed::new(
            format!(
                "{} of {} checks failed; the first: {} {}: expected {}, found {}",
                failed.len(),
                report.checks.len(),
                first.name,
                first.full_subject(),
                first.expected,
                first.actual
            ),
            if stale {
                "an input changed since the build: build again to record it, or restore the input"
            } else if rebuilt {
                "the rebuild made another image: the rows above name each layer, and in it each file, that came out differently; a step that writes the clock, a build path or a random name does not reproduce (README, \"Reproducible images\")"
            } else {
                "what was recorded no longer holds: re-point the tags at the recorded image, or build again; a dated tag that names another image in the registry is only re-pointed by `forge build --push --force` or under a new [image] date"
            },
        )
        .into());
    }
    printer.status(
        "Verified",
        format_args!("{} checks against {origin}", report.checks.len()),
    );
    Ok(())
}

/// The recorded image as `engine` names it, by whichever of its names the daemon holds.
async fn held_record(engine: &Docker, record: &Record) -> anyhow::Result<Option<ImageId>> {
    for name in record.identities() {
        if let Some(held) = engine.image(name.as_str()).await? {
            return Ok(Some(held.id));
        }
    }
    Ok(None)
}

/// What every recorded tag names on `engine`.
/// Whether the daemon's rows are left out: a tester who checks an image named by reference
/// before pulling it (as `cosign verify` allows, to decide whether an 18 GB pull is worth it)
/// has none of it on the default daemon; the registry side is checked in full, and one line
/// says the image is not pulled here and how to pull it. Not with `--host`, `--contents` or
/// `--rebuild`, which ask about a daemon.
async fn skip_unpulled(
    subject: &Subject<'_>,
    options: &VerifyOptions,
    engine: &Docker,
    printer: &Printer,
) -> anyhow::Result<bool> {
    let Some(reference) = &subject.reference else {
        return Ok(false);
    };
    if !options.hosts.is_empty() || options.contents || subject.rebuild.is_some() {
        return Ok(false);
    }
    let record = subject.record;
    if engine.image(record.image.id.as_str()).await?.is_some() {
        return Ok(false);
    }
    for tag in &record.tags {
        let tagged = format!("{}:{}", record.image.repository, tag.name);
        if engine.image(&tagged).await?.is_some() {
            return Ok(false);
        }
    }
    printer.status(
        "Not pulled",
        format_args!(
            "{reference} on {}: the registry side is checked; `forge pull {reference}` pulls it",
            engine.host()
        ),
    );
    Ok(true)
}

async fn node_checks(record: &Record, engine: &Docker, report: &mut Report) -> anyhow::Result<()> {
    let repository = &record.image.repository;
    let mut resolved = Vec::new();
    for tag in &record.tags {
        let reference = format!("{repository}:{}", tag.name);
        let found = engine.image(&reference).await?.map(|info| info.id.0);
        resolved.push((reference, found));
    }
    report.extend(verify::tags(record, engine.host(), &resolved));
    Ok(())
}

async fn base_checks(record: &Record, engine: &Docker, report: &mut Report) -> anyhow::Result<()> {
    let found = engine.image(record.base.image.as_str()).await?;
    report.extend(verify::base(&record.base, engine.host(), found.as_ref()));
    Ok(())
}

/// With `--rebuild`, and only when every input is the recorded one: the recorded inputs built
/// again on `engine` and compared with the recorded image.
async fn rebuild_checks(
    subject: &Subject<'_>,
    engine: &Docker,
    report: &mut Report,
    printer: &Printer,
) -> anyhow::Result<()> {
    let Some((recipe, plan)) = subject.rebuild else {
        return Ok(());
    };
    if report
        .checks
        .iter()
        .any(|check| check.name == Kind::Input && !check.ok)
    {
        printer.warn("the inputs differ from the record's, so nothing was rebuilt");
        return Ok(());
    }
    report.extend(super::rebuild::rebuild(recipe, subject.record, plan, engine, printer).await?);
    Ok(())
}

/// Runs the recorded image and compares what it reports with the recipe's pins and files.
async fn content_checks(
    subject: &Subject<'_>,
    engine: &Docker,
    report: &mut Report,
    printer: &Printer,
) -> anyhow::Result<()> {
    let (record, pins, files) = (subject.record, subject.pins, &subject.files);
    let Some(image) = held_record(engine, record).await? else {
        report.extend([verify::image_missing(engine.host(), &record.image.id)]);
        return Ok(());
    };
    printer.status(
        "Running",
        format_args!("{} to read back its contents", image.short()),
    );
    let command = probe::command(pins.pins.values(), files, &pins.fixes, &pins.scripts);
    let output = engine.run(&image, &command).await?;
    printer.detail(
        "Probe",
        format_args!("exit {}, stderr: {}", output.code, output.stderr.trim()),
    );
    report.extend(probe::checks(
        pins.pins.values(),
        files,
        &pins.fixes,
        &pins.scripts,
        &output.stdout,
    ));
    match subject.recipe {
        Some(recipe) => record_installed(recipe, record, &output.stdout, printer),
        // Nothing is written where a tester verifies a reference.
        None => Ok(()),
    }
}

/// Records in forge.lock the distributions the image holds, when they changed: what the base
/// supplies for `pin bump` to check the pins' requirements against.
fn record_installed(
    recipe: &Recipe,
    record: &Record,
    output: &str,
    printer: &Printer,
) -> anyhow::Result<()> {
    let installed = probe::installed(output);
    let runtime = probe::runtime(output);
    if installed.is_empty() {
        return Ok(());
    }
    let base = &record.base;
    if installed == base.packages && runtime.glibc == base.glibc && runtime.python == base.python {
        return Ok(());
    }
    let mut updated = record.clone();
    updated.base.packages = installed;
    updated.base.glibc = runtime.glibc;
    updated.base.python = runtime.python;
    updated.write(&recipe.root)?;
    recipe.lock_written();
    let glibc = updated
        .base
        .glibc
        .as_ref()
        .map(|glibc| format!(", glibc {glibc}"))
        .unwrap_or_default();
    printer.status(
        "Recorded",
        format_args!(
            "{} installed Python distributions{glibc} in {} (what `pin bump` checks requirements on unpinned packages and wheel tags against)",
            updated.base.packages.len(),
            crate::lock::LOCK_FILE
        ),
    );
    Ok(())
}

/// Each recorded tag's manifest and the image it holds, from the registry of the image's
/// repository.
fn registry_checks(
    subject: &Subject<'_>,
    options: &VerifyOptions,
    printer: &Printer,
) -> Result<Vec<Check>, (String, anyhow::Error)> {
    let (record, client, repository, platform) = (
        subject.record,
        subject.client,
        &subject.repository,
        subject.platform,
    );
    let mut served = Vec::new();
    let mut absent = Vec::new();
    for tag in &record.tags {
        let reference = format!("{repository}:{}", tag.name);
        printer.status("Asking", format_args!("{reference} of its registry"));
        let manifest = match client.manifest(repository, tag.name.as_str()) {
            Ok(manifest) => manifest,
            // A tag the registry does not hold is drift, not an unreachable registry.
            Err(RegistryError::NotFound { .. }) => {
                absent.extend(verify::unserved(
                    &reference,
                    tag.pushed.as_ref(),
                    &record.image.id,
                ));
                continue;
            }
            Err(error) => return Err((reference, error.into())),
        };
        let image = match registry::image_of(client, repository, &manifest, platform) {
            Ok(image) => image,
            // An index whose entry the registry no longer holds names no image: drift, as above.
            Err(RegistryError::NotFound { .. }) => None,
            Err(error) => return Err((reference, error.into())),
        };
        served.push(Served {
            reference,
            pushed: tag.pushed.clone(),
            manifest,
            image,
        });
    }
    let mut checks = verify::registry(&served, platform.as_str(), &record.image.id);
    checks.extend(absent);
    checks.extend(platform_checks(client, repository, record, &served));
    if let Some(key) = &options.key {
        let pins = crate::attest::attach::pins_expected(subject.pins);
        let expected = attached::Expected {
            repository: &repository.to_string(),
            inputs: subject.inputs,
            pins: &pins,
        };
        for served in &served {
            let held = served
                .manifest
                .claimed
                .clone()
                .unwrap_or_else(|| served.manifest.received.clone());
            printer.status(
                "Asking",
                format_args!("{} for what is attached to {held}", served.reference),
            );
            let found = fetch_attached(client, repository, &held)
                .map_err(|error| (served.reference.clone(), error.into()))?;
            checks.extend(attached::checks(
                &served.reference,
                &held,
                &found,
                key,
                expected,
            ));
        }
    }
    Ok(checks)
}

/// What `repository` holds under the cosign tags of the manifest `held`.
fn fetch_attached(
    client: &RegistryClient,
    repository: &RemoteRepository,
    held: &crate::types::oci::Digest,
) -> Result<attached::Attached, RegistryError> {
    let layers = |kind: cosign::Kind| -> Result<_, RegistryError> {
        Ok(
            crate::attest::attach::listed(client, repository, kind, held)?
                .map(|listed| listed.layers),
        )
    };
    // Every layer, its blob read when it is of the attachment's own type and within the budget.
    let budget = std::cell::RefCell::new(crate::attest::attach::Budget::new());
    let read = |layers: Vec<crate::types::manifest::Descriptor>,
                own: &str|
     -> Result<Vec<attached::Layer>, RegistryError> {
        let mut read = Vec::new();
        for (index, layer) in layers.into_iter().enumerate() {
            let mut unread = None;
            let mut bytes = Vec::new();
            if layer.media_type == own {
                match budget.borrow_mut().take(index, layer.size) {
                    Ok(()) => bytes = client.blob(repository, &layer.digest)?,
                    Err(why) => unread = Some(why),
                }
            }
            read.push(attached::Layer {
                signature: layer.annotations.get(cosign::SIGNATURE_ANNOTATION).cloned(),
                media_type: layer.media_type,
                bytes,
                unread,
            });
        }
        Ok(read)
    };
    let mut found = attached::Attached::default();
    if let Some(layers) = layers(cosign::Kind::Signature)? {
        found.signatures = Some(read(layers, cosign::SIMPLE_SIGNING)?);
    }
    if let Some(layers) = layers(cosign::Kind::Attestation)? {
        found.attestations = Some(read(layers, cosign::DSSE_ENVELOPE)?);
    }
    if let Some(layer) = layers(cosign::Kind::Sbom)?.and_then(|layers| layers.into_iter().next()) {
        found.sbom = Some((
            layer.digest.clone(),
            client.blob(repository, &layer.digest)?,
        ));
    }
    found.bundles = bundles(client, repository, held)?;
    Ok(found)
}

/// The sigstore bundles among the referrers of `held`, each read (bounded) or with why not; a
/// referrers index that cannot be read is one malformed entry, never trusted.
fn bundles(
    client: &RegistryClient,
    repository: &RemoteRepository,
    held: &crate::types::oci::Digest,
) -> Result<Vec<attached::Bundle>, RegistryError> {
    let listed = match client.referrers(repository, held) {
        Ok(listed) => listed,
        Err(RegistryError::Invalid { url, message }) => {
            return Ok(vec![attached::Bundle {
                predicate: None,
                read: Err(format!("{url}: {message}")),
            }]);
        }
        Err(error) => return Err(error),
    };
    let mut bundles = Vec::new();
    for descriptor in listed.descriptors() {
        bundles.push(match descriptor {
            Err(why) => attached::Bundle {
                predicate: None,
                read: Err(why),
            },
            // Another tool's referrer (an SBOM, a scan): not forge's to judge.
            Ok(descriptor) if !bundle::may_be_bundle(&descriptor) => continue,
            Ok(descriptor) => {
                match crate::attest::attach::read_referrer(client, repository, &descriptor) {
                    Ok(read) => attached::Bundle {
                        predicate: read.predicate,
                        read: Ok((read.subject, read.bundle)),
                    },
                    // An entry of the empty type that is no bundle is another tool's too.
                    Err(_) if !bundle::is_bundle(descriptor.artifact()) => continue,
                    Err(why) => attached::Bundle {
                        predicate: descriptor
                            .annotations
                            .get(bundle::PREDICATE_ANNOTATION)
                            .cloned(),
                        read: Err(why),
                    },
                }
            }
        });
    }
    Ok(bundles)
}

/// For a multi-platform record: what each tag's index serves for every platform but the first.
fn platform_checks(
    client: &RegistryClient,
    repository: &RemoteRepository,
    record: &Record,
    served: &[Served],
) -> Vec<Check> {
    let mut checks = Vec::new();
    for served in served {
        for entry in record.platforms.iter().skip(1) {
            let manifest = served.manifest.platform_entry(entry.platform.as_str());
            let image = registry::image_of(client, repository, &served.manifest, &entry.platform)
                .ok()
                .flatten();
            checks.extend(verify::platform_entry(
                &served.reference,
                entry,
                manifest.as_ref(),
                image.as_ref(),
            ));
        }
    }
    checks
}
