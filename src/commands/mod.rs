//! Thin commands: each turns its clap arguments into options and calls the operations layer.

mod build;
mod lock;
mod patch;
mod pin_bump;
mod pin_list;
mod pin_outdated;
mod pull;
mod recover;
mod render;
mod report;
mod sign_blob;
mod verify_digest;

use crate::cli::{Cli, Command, PinCommand};
use crate::diagnostics::{self, ExitStatus};
use crate::printer::{OutputFormat, Printer, Verbosity};
use crate::recipe::Recipe;

/// Runs the parsed command line and says how forge should exit.
pub fn run(mut cli: Cli) -> ExitStatus {
    let verbosity = match (cli.quiet, cli.verbose) {
        (true, _) => Verbosity::Quiet,
        (_, true) => Verbosity::Verbose,
        _ => Verbosity::Normal,
    };
    let format = if cli.json {
        OutputFormat::Json
    } else {
        OutputFormat::Human
    };
    let printer = Printer::new(verbosity, format, cli.color);
    // libgit2 re-hashes every object it reads unless told not to; git itself does that only in
    // `git fsck`. For a series of a few hundred patches that is a third of the work.
    git2::opts::strict_hash_verification(false);
    // `-C DIR` changes directory first, as git, cargo and make do: every relative path resolves
    // in DIR, and the recipe is DIR itself, named `.` so that messages name its files as the
    // user would type them there.
    if let Some(folder) = cli.directory.take() {
        if let Err(source) = std::env::set_current_dir(&folder) {
            let error = anyhow::Error::from(ChangeDirectory { folder, source });
            return diagnostics::report(&printer, &error);
        }
        cli.directory = Some(std::path::PathBuf::from("."));
    }
    let result = match &cli.command {
        Command::Render(args) => render::run(&cli, args, &printer),
        Command::Build(args) => build::run(&cli, args, &printer),
        Command::Lock => lock::run(&cli, &printer),
        Command::Patch { command } => patch::run(&cli, command, &printer),
        Command::Report(args) => report::run(&cli, args, &printer),
        Command::VerifyDigest(args) => verify_digest::run(&cli, args, &printer),
        Command::Pull(args) => pull::run(&cli, args, &printer),
        Command::Recover(args) => recover::run(&cli, args, &printer),
        Command::Keygen { out, cosign } => keygen(out, *cosign, &printer),
        Command::SignBlob(args) => sign_blob::run(args, &printer),
        Command::Completions { shell } => completions(*shell, &printer),
        Command::Man { command } => man_page(command, &printer),
        Command::Pin {
            command: PinCommand::List,
        } => pin_list::run(&cli, &printer),
        Command::Pin {
            command: PinCommand::Bump(args),
        } => pin_bump::run(&cli, args, &printer),
        Command::Pin {
            command: PinCommand::Outdated(args),
        } => pin_outdated::run(&cli, args, &printer),
    };
    match result {
        Ok(status) => status,
        Err(error) => diagnostics::report(&printer, &error),
    }
}

/// `forge keygen [--out PREFIX] [--cosign]`: a new key pair, never over existing files.
fn keygen(prefix: &std::path::Path, cosign: bool, printer: &Printer) -> anyhow::Result<ExitStatus> {
    use crate::attest::keys::PrivateForm;
    let with = |extension: &str| {
        let mut name = prefix.as_os_str().to_owned();
        name.push(extension);
        std::path::PathBuf::from(name)
    };
    let (private, public) = (with(".key"), with(".pub"));
    let form = if cosign {
        PrivateForm::Cosign
    } else {
        PrivateForm::Pkcs8
    };
    crate::attest::keys::write_pair(&private, &public, form)?;
    let sealed = match form {
        PrivateForm::Pkcs8 => "",
        PrivateForm::Cosign => ", sealed as cosign seals its keys",
    };
    printer.status(
        "Wrote",
        format_args!("{} (private, mode 0600{sealed})", private.display()),
    );
    printer.status("Wrote", format_args!("{} (public)", public.display()));
    printer.document(&KeyPair {
        private: private.display().to_string(),
        public: public.display().to_string(),
    });
    Ok(ExitStatus::Success)
}

/// The key pair `forge keygen` wrote: the statuses say it; `--json` prints this.
#[derive(Debug, serde::Serialize)]
struct KeyPair {
    /// The private key's path.
    private: String,
    /// The public key's path.
    public: String,
}

impl crate::printer::Document for KeyPair {}

/// `forge completions SHELL`: the completion script clap writes for forge's command line.
fn completions(shell: clap_complete::Shell, printer: &Printer) -> anyhow::Result<ExitStatus> {
    let script = crate::completion::registration(shell);
    printer.data(&String::from_utf8(script).expect("clap writes UTF-8"));
    Ok(ExitStatus::Success)
}

/// `forge man [COMMAND...]`: the man page of forge or of one of its commands, as roff.
fn man_page(path: &[String], printer: &Printer) -> anyhow::Result<ExitStatus> {
    let command = <Cli as clap::CommandFactory>::command();
    let page = crate::manual::page(command, path).ok_or_else(|| NoSuchCommand {
        command: path.join(" "),
    })?;
    printer.data(&String::from_utf8(page).expect("clap_mangen writes UTF-8"));
    Ok(ExitStatus::Success)
}

/// `-C DIR` names a folder forge cannot change into.
#[derive(Debug, thiserror::Error)]
#[error("cannot change to the folder {} that -C names", folder.display())]
struct ChangeDirectory {
    folder: std::path::PathBuf,
    source: std::io::Error,
}

impl diagnostics::Advise for ChangeDirectory {
    fn advice(&self) -> diagnostics::Advice {
        diagnostics::Advice::Hint(
            "name the recipe folder (the one holding pins.toml) after -C, relative to the working folder or absolute".to_owned(),
        )
    }
}

crate::advised!(ChangeDirectory);

/// `forge man COMMAND` for a command forge does not have.
#[derive(Debug, thiserror::Error)]
#[error("forge has no command `{command}`, so no man page of it")]
struct NoSuchCommand {
    command: String,
}

impl diagnostics::Advise for NoSuchCommand {
    fn advice(&self) -> diagnostics::Advice {
        diagnostics::Advice::Hint(
            "`forge --help` lists the commands; `forge man` alone is forge(1)".to_owned(),
        )
    }
}

crate::advised!(NoSuchCommand);

/// The public key `--key` names, read.
fn public_key(
    image: &crate::cli::ReferenceArgs,
) -> anyhow::Result<Option<crate::attest::keys::VerifyingKey>> {
    Ok(image
        .key
        .as_deref()
        .map(crate::attest::keys::VerifyingKey::read)
        .transpose()?)
}

/// Refuses `--key` and `--insecure-registry` for `command`'s recipe form, which reads no
/// record from a registry.
fn recipe_only(image: &crate::cli::ReferenceArgs, command: &str) -> anyhow::Result<()> {
    if image.key.is_some() || !image.insecure_registry.is_empty() {
        return Err(ReferenceFlags {
            command: command.to_owned(),
        }
        .into());
    }
    Ok(())
}

/// `--key` or `--insecure-registry` given to a command's recipe form.
#[derive(Debug, thiserror::Error)]
#[error("`forge {command}` takes --key and --insecure-registry only with an image reference (REF)")]
struct ReferenceFlags {
    command: String,
}

impl diagnostics::Advise for ReferenceFlags {
    fn advice(&self) -> diagnostics::Advice {
        diagnostics::Advice::Hint(format!(
            "name the image to read its record from its registry: `forge {} REGISTRY/REPOSITORY:TAG --key PUB.pem`",
            self.command
        ))
    }
}

crate::advised!(ReferenceFlags);

/// Opens the recipe named by `-C`, else the one found from the working folder up, and shows
/// what pins.toml flags.
/// The workspace whose root is the folder forge runs in (`-C`, else the working folder), its
/// members' notices printed; `None` when that folder is no workspace root.
fn open_workspace(
    cli: &Cli,
    printer: &Printer,
) -> anyhow::Result<Option<crate::workspace::Workspace>> {
    let folder = cli
        .directory
        .clone()
        .unwrap_or_else(|| std::path::PathBuf::from("."));
    if !crate::workspace::is_root(&folder) {
        return Ok(None);
    }
    let workspace = crate::workspace::Workspace::open(&folder)?;
    for member in &workspace.members {
        for notice in &member.recipe.pins.notices {
            printer.warn(format_args!("{}: {}", notice.location, notice.message));
        }
    }
    Ok(Some(workspace))
}

fn open_recipe(cli: &Cli, printer: &Printer) -> anyhow::Result<Recipe> {
    let folder = match &cli.directory {
        Some(folder) => folder.clone(),
        None => crate::recipe::discover(),
    };
    let recipe = Recipe::open(&folder)?;
    for notice in &recipe.pins.notices {
        printer.warn(format_args!("{}: {}", notice.location, notice.message));
    }
    Ok(recipe)
}

impl crate::cli::UpstreamArgs {
    /// Whether pre-releases are on offer (`--pre`).
    fn prereleases(&self) -> crate::bump::Prereleases {
        if self.pre {
            crate::bump::Prereleases::Include
        } else {
            crate::bump::Prereleases::Exclude
        }
    }

    /// Where to look beyond the recipe (`--index-url`, `--insecure-registry`).
    fn sources(&self) -> crate::bump::Sources {
        crate::bump::Sources {
            index_url: self.index_url.clone(),
            insecure_registries: self.insecure_registry.clone(),
        }
    }
}
