//! The command line, as clap reads it. Commands turn these into options for `ops`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::engine::Builder;
use crate::engine::address::{DaemonHost, Node};
use crate::progress::ProgressMode;
use crate::types::oci::RegistryHost;

/// forge: render, patch, build, tag and verify a pinned image layer.
#[derive(Debug, Parser)]
#[command(
    name = "forge",
    version = env!("FORGE_LONG_VERSION"),
    about,
    propagate_version = true,
    max_term_width = 100
)]
pub struct Cli {
    /// Change to DIR first, as git -C does: relative paths resolve there, and DIR is the recipe
    /// folder (the one holding pins.toml). Without it, the recipe is the nearest folder at or
    /// above the working folder that holds pins.toml, up to the repository root or home.
    #[arg(
        short = 'C',
        value_name = "DIR",
        global = true,
        help_heading = "Global options"
    )]
    pub directory: Option<PathBuf>,

    /// Print one JSON document on stdout instead of text.
    #[arg(long, global = true, help_heading = "Global options")]
    pub json: bool,

    /// Print no status lines, warnings or progress: errors only, and the command's answer on
    /// stdout (a table, a report, the Dockerfile).
    #[arg(
        short,
        long,
        global = true,
        conflicts_with = "verbose",
        help_heading = "Global options"
    )]
    pub quiet: bool,

    /// Print more detail.
    #[arg(short, long, global = true, help_heading = "Global options")]
    pub verbose: bool,

    /// When to colour status and diagnostics: auto (a terminal, unless NO_COLOR is set to a
    /// value; CLICOLOR_FORCE forces it), always, or never.
    #[arg(
        long,
        value_enum,
        value_name = "WHEN",
        global = true,
        default_value = "auto",
        help_heading = "Global options"
    )]
    pub color: crate::printer::ColorChoice,

    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// forge's commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Render the Dockerfile from pins.toml and the templates.
    Render(RenderArgs),
    /// Render, patch, assemble the context, build, tag both tags, push, and record forge.lock.
    Build(BuildArgs),
    /// Record the recipe's inputs in forge.lock without building, for `build --locked`.
    Lock,
    /// Apply or check a `git format-patch` series, keeping every author.
    Patch {
        /// The patch command.
        #[command(subcommand)]
        command: PatchCommand,
    },
    /// Print the tester report for the build forge.lock records (or REF's attached record), as
    /// Markdown (or --json).
    Report(ReportArgs),
    /// Prove from forge.lock (or REF's attached record) that the tags, base, inputs, registry,
    /// nodes and contents still hold.
    VerifyDigest(VerifyDigestArgs),
    /// Pull the image forge.lock (or REF's attached record) names, by digest, on every node and
    /// tag it there.
    Pull(PullArgs),
    /// Settle a publication a killed forge left part way (forge.lock.intent): by the rule, or
    /// as --roll-forward, --roll-back or --drop say when the rule cannot be followed.
    Recover(RecoverArgs),
    /// Inspect and move pins.
    Pin {
        /// The pin command.
        #[command(subcommand)]
        command: PinCommand,
    },
    /// Write a new signing key pair: PREFIX.key (PKCS#8 PEM, mode 0600) and PREFIX.pub.
    Keygen {
        /// Where to write the pair (PREFIX.key and PREFIX.pub).
        #[arg(long, value_name = "PREFIX", default_value = "forge")]
        out: PathBuf,
        /// Seal the private key as `cosign generate-key-pair` does, under the password in
        /// COSIGN_PASSWORD (empty for none), so that `cosign sign --key` signs with it too.
        #[arg(long)]
        cosign: bool,
    },
    /// Sign FILE with the signing key as `cosign sign-blob --key` does: FILE.sig holds the
    /// base64 ECDSA P-256 signature of its SHA-256 (`cosign verify-blob` and `openssl dgst
    /// -sha256 -verify` check it).
    SignBlob(SignBlobArgs),
    /// Print the shell function that completes forge's commands, flags, the recipe's pins and
    /// forge.lock's image references, asking forge itself: `source <(forge completions bash)`.
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff) of forge, or of COMMAND (`forge man pin bump` is
    /// forge-pin-bump(1)), on stdout: `forge man build | man -l -`.
    Man {
        /// The command, as typed after `forge`.
        #[arg(value_name = "COMMAND")]
        command: Vec<String>,
    },
}

/// `forge render`.
#[derive(Debug, Args)]
pub struct RenderArgs {
    /// Write the Dockerfile to FILE (only when its content changes) instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,

    /// Write nothing; exit 1 when FILE (from --out) differs from a fresh render.
    #[arg(long, requires = "out")]
    pub check: bool,
}

/// `forge build`.
#[derive(Debug, Args)]
pub struct BuildArgs {
    /// Stop after the context digest and print the plan; no daemon is needed.
    #[arg(long)]
    pub dry_run: bool,

    /// At a workspace root: only this member and the members it builds from (repeatable).
    #[arg(long = "recipe", value_name = "NAME")]
    pub recipes: Vec<String>,

    /// Push every tag and record the registry digest of each.
    #[arg(long, conflicts_with = "dry_run", help_heading = "Publishing")]
    pub push: bool,

    /// Run every step again instead of reusing the build cache.
    #[arg(long, help_heading = "Build cache")]
    pub no_cache: bool,

    /// Build for this platform instead of the one pins.toml names.
    #[arg(long, value_name = "OS/ARCH", help_heading = "Platforms and daemons")]
    pub platform: Option<crate::types::oci::Platform>,

    /// Tag (and push) into this repository instead of pins.toml's `[image] repository`; forge.lock
    /// records it, and verify-digest and report follow the record.
    #[arg(long, value_name = "REPOSITORY", help_heading = "Publishing")]
    pub repository: Option<crate::types::oci::Repository>,

    /// The daemon's builder: BuildKit, or the classic builder for engines without it.
    #[arg(
        long,
        value_enum,
        default_value = "buildkit",
        help_heading = "Platforms and daemons"
    )]
    pub builder: BuilderChoice,

    /// How to show the build: live on a terminal (auto), timestamped lines (plain), or not at all.
    #[arg(long, value_enum, default_value = "auto")]
    pub progress: ProgressChoice,

    /// Re-point an immutable tag that already names another image.
    #[arg(long, help_heading = "Publishing")]
    pub force: bool,

    /// Refuse to build when the inputs no longer match forge.lock.
    #[arg(long)]
    pub locked: bool,

    /// Also write the context archive the daemon receives to FILE (with --dry-run too).
    #[arg(long, value_name = "FILE")]
    pub context_out: Option<PathBuf>,

    /// A registry host (with port) that the dated-tag check before --push may ask over plain
    /// HTTP; loopback hosts always may.
    #[arg(long, value_name = "HOST", help_heading = "Publishing")]
    pub insecure_registry: Vec<RegistryHost>,

    /// Also reuse the build cache of this image (repeatable): BuildKit reads the cache metadata
    /// the image carries from its registry. With --push, the recipe's own ([image] cache) is
    /// read and written without this flag.
    #[arg(long, value_name = "REF", help_heading = "Build cache")]
    pub cache_from: Vec<String>,

    /// For a recipe of several platforms ([image] platforms): the daemon that builds PLATFORM
    /// natively (repeatable); a platform with none is built on the default daemon only if that
    /// is the platform it runs on.
    #[arg(
        long,
        value_name = "PLATFORM=URL",
        help_heading = "Platforms and daemons"
    )]
    pub node: Vec<Node>,

    /// After the push, sign the pushed manifest and attach the signature, the SBOM and the
    /// provenance under cosign's tags (key from --sign-key, else FORGE_SIGNING_KEY).
    #[arg(long, requires = "push", help_heading = "Publishing")]
    pub sign: bool,

    /// The signing key: a PKCS#8 PEM file (`forge keygen` writes one).
    #[arg(
        long,
        value_name = "FILE",
        requires = "sign",
        help_heading = "Publishing"
    )]
    pub sign_key: Option<PathBuf>,
}

/// `--builder`: which of the daemon's builders runs the build.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BuilderChoice {
    /// BuildKit, with a session per build.
    Buildkit,
    /// The classic builder, for engines without BuildKit.
    Classic,
}

impl From<BuilderChoice> for Builder {
    fn from(choice: BuilderChoice) -> Self {
        match choice {
            BuilderChoice::Buildkit => Builder::Buildkit,
            BuilderChoice::Classic => Builder::Classic,
        }
    }
}

/// `--progress`: the progress display the user asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProgressChoice {
    /// A live display on a terminal, plain lines otherwise.
    Auto,
    /// Plain timestamped lines.
    Plain,
    /// Nothing but the result.
    Quiet,
}

impl From<ProgressChoice> for ProgressMode {
    fn from(choice: ProgressChoice) -> Self {
        match choice {
            ProgressChoice::Auto => ProgressMode::Auto,
            ProgressChoice::Plain => ProgressMode::Plain,
            ProgressChoice::Quiet => ProgressMode::Quiet,
        }
    }
}

/// An image named by reference, read from its registry instead of a recipe's forge.lock.
#[derive(Debug, Args)]
pub struct ReferenceArgs {
    /// The image (REGISTRY/REPOSITORY:TAG or @DIGEST): read the build record attached to it in
    /// its registry; no recipe folder is read and nothing is written.
    #[arg(value_name = "REF", add = clap_complete::engine::ArgValueCandidates::new(crate::completion::recorded_references))]
    pub reference: Option<crate::types::oci::ImageRef>,

    /// The public key (PEM) the build record must be signed with, and the image's signature and
    /// provenance where the command judges them; without it the record is trusted only as far
    /// as the registry is.
    #[arg(long, value_name = "PUB.pem", help_heading = "Image reference")]
    pub key: Option<PathBuf>,

    /// A registry host (with port) that may be spoken to over plain HTTP; loopback hosts always may.
    #[arg(long, value_name = "HOST", help_heading = "Image reference")]
    pub insecure_registry: Vec<RegistryHost>,
}

/// `forge report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The image, and how far to trust its record.
    #[command(flatten)]
    pub image: ReferenceArgs,
}

/// `forge verify-digest`.
#[derive(Debug, Args)]
pub struct VerifyDigestArgs {
    /// The image, and how far to trust its record.
    #[command(flatten)]
    pub image: ReferenceArgs,

    /// Also ask the registry for each tag's manifest digest (not the local daemon); implied by
    /// REF and by --key.
    #[arg(long, help_heading = "Where to check")]
    pub remote: bool,

    /// Also run the image (no network) and read back every pin and overlay file.
    #[arg(long, help_heading = "Deeper checks")]
    pub contents: bool,

    /// Check the tags on this daemon (unix:///PATH, tcp://HOST:PORT, ssh://[USER@]HOST[:PORT])
    /// instead of the default one; repeat for every node.
    #[arg(long, value_name = "URL", help_heading = "Where to check")]
    pub host: Vec<DaemonHost>,

    /// Show every digest whole, and both values of rows that hold (the default table cuts
    /// digests to 12 hex digits to fit 100 columns).
    #[arg(long)]
    pub wide: bool,

    /// Also build the recorded inputs again, with no cache, on the first daemon, and compare
    /// the result with the recorded image layer by layer and file by file. With REF, the
    /// recipe folder (-C) must hold the inputs the image's record names.
    #[arg(long, help_heading = "Deeper checks")]
    pub rebuild: bool,
}

/// `forge pull`.
#[derive(Debug, Args)]
pub struct PullArgs {
    /// The image, and how far to trust its record.
    #[command(flatten)]
    pub image: ReferenceArgs,

    /// Pull on this daemon (unix:///PATH, tcp://HOST:PORT, ssh://[USER@]HOST[:PORT]) instead of
    /// the default one; repeat for every node.
    #[arg(long, value_name = "URL", help_heading = "Where to pull")]
    pub host: Vec<DaemonHost>,

    /// How to show the pulls: live on a terminal (auto), timestamped lines (plain), or not at all.
    #[arg(long, value_enum, default_value = "auto")]
    pub progress: ProgressChoice,

    /// Show every digest whole in the table of tags.
    #[arg(long)]
    pub wide: bool,
}

/// `forge recover`.
#[derive(Debug, Args)]
pub struct RecoverArgs {
    /// Keep every tag on the new image and record it in forge.lock, whatever the registry holds.
    #[arg(long, group = "choice")]
    pub roll_forward: bool,

    /// Put every moved tag back and leave forge.lock, whatever the registry holds.
    #[arg(long, group = "choice")]
    pub roll_back: bool,

    /// Forget the publication: no tag moves, forge.lock stays as it is; no daemon is needed.
    #[arg(long, group = "choice")]
    pub drop: bool,

    /// The repository the publication tagged into, when it was `forge build --repository`'s.
    #[arg(long, value_name = "REPOSITORY")]
    pub repository: Option<crate::types::oci::Repository>,

    /// A registry host (with port) that may be asked over plain HTTP which tags it holds;
    /// loopback hosts always may.
    #[arg(long, value_name = "HOST")]
    pub insecure_registry: Vec<RegistryHost>,
}

/// `forge sign-blob`.
#[derive(Debug, Args)]
pub struct SignBlobArgs {
    /// The file to sign.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,

    /// The signing key: a PKCS#8 PEM file (`forge keygen` writes one); else FORGE_SIGNING_KEY.
    #[arg(long, value_name = "FILE")]
    pub sign_key: Option<PathBuf>,

    /// Where to write the signature (default: FILE.sig).
    #[arg(long, value_name = "SIG")]
    pub out: Option<PathBuf>,

    /// Also write the signature as a sigstore bundle here, as `cosign sign-blob --bundle`
    /// writes it (what cosign 3's `verify-blob --bundle` reads).
    #[arg(long, value_name = "BUNDLE")]
    pub bundle: Option<PathBuf>,
}

/// `forge pin ...`.
#[derive(Debug, Subcommand)]
pub enum PinCommand {
    /// List every pin with its kind, version or revision, and group.
    List,
    /// Show every pin against upstream: current, newest allowed, newest, and what holds it back.
    Outdated(PinOutdatedArgs),
    /// Move one pin (or `base`) to the newest version the constraints allow, or to --to.
    Bump(PinBumpArgs),
}

/// Where `forge pin bump` and `forge pin outdated` look for new versions.
#[derive(Debug, Args)]
pub struct UpstreamArgs {
    /// A package index mirror that replaces every index the recipe names.
    #[arg(long, value_name = "URL", env = "FORGE_INDEX_URL", value_parser = crate::types::url::Url::http, help_heading = "Where to look")]
    pub index_url: Option<crate::types::url::Url>,

    /// Offer pre-releases (a, b, rc, dev) too.
    #[arg(long, help_heading = "Where to look")]
    pub pre: bool,

    /// A registry host (with port) that may be spoken to over plain HTTP; loopback hosts always may.
    #[arg(long, value_name = "HOST", help_heading = "Where to look")]
    pub insecure_registry: Vec<RegistryHost>,
}

/// `forge pin bump`.
#[derive(Debug, Args)]
pub struct PinBumpArgs {
    /// The pin to move, as named under [pins], or `base` for the base image.
    #[arg(value_name = "NAME", add = clap_complete::engine::ArgValueCandidates::new(crate::completion::pin_names))]
    pub name: crate::bump::BumpTarget,

    /// Move to this version, git commit or image tag instead of the newest allowed.
    #[arg(long, value_name = "VERSION")]
    pub to: Option<String>,

    /// Print the pins.toml and Dockerfile diffs; write nothing.
    #[arg(long)]
    pub dry_run: bool,

    /// Move outside the pin's allowed range, or where its patch series conflicts. A denied
    /// version is never moved to.
    #[arg(long)]
    pub force: bool,

    /// Where to look.
    #[command(flatten)]
    pub upstream: UpstreamArgs,
}

/// `forge pin outdated`.
#[derive(Debug, Args)]
pub struct PinOutdatedArgs {
    /// Exit 1 when a pin can move (0 when none can), for scripts and CI.
    #[arg(long)]
    pub exit_code: bool,

    /// Where to look.
    #[command(flatten)]
    pub upstream: UpstreamArgs,
}

/// `forge patch ...`.
#[derive(Debug, Subcommand)]
pub enum PatchCommand {
    /// Commit each patch onto the target with its author; all or nothing.
    Apply(PatchArgs),
    /// Say per patch whether it applies, is already applied, or conflicts; write nothing.
    Check(PatchArgs),
}

/// Arguments of `forge patch apply|check`.
#[derive(Debug, Args)]
pub struct PatchArgs {
    /// The git repository to apply onto (default: each `onto` of pins.toml's [[patches]]).
    #[arg(long, value_name = "REPO")]
    pub onto: Option<PathBuf>,

    /// Patch files or folders of them, in order (default: each `series` of [[patches]]).
    #[arg(value_name = "SERIES")]
    pub series: Vec<PathBuf>,
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_command_line_definition_holds_together() {
        use clap::CommandFactory as _;
        // clap checks each subcommand's flags (names, `requires`, conflicts) here rather than
        // when that subcommand is first parsed.
        super::Cli::command().debug_assert();
    }
}
