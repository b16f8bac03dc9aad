//! The command line, as clap reads it. Commands turn these into options for `ops`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// forge: render, patch, build, tag and verify a pinned image layer.
#[derive(Debug, Parser)]
#[command(name = "forge", version, about, propagate_version = true)]
pub struct Cli {
    /// The recipe folder (the one holding pins.toml).
    #[arg(short = 'C', value_name = "DIR", global = true, default_value = ".")]
    pub directory: PathBuf,

    /// Print one JSON document on stdout instead of text.
    #[arg(long, global = true)]
    pub json: bool,

    /// Print errors only.
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,

    /// Print more detail.
    #[arg(short, long, global = true)]
    pub verbose: bool,

    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// forge's commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Render the Dockerfile from pins.toml and the templates.
    Render(RenderArgs),
    /// Inspect and move pins.
    Pin {
        /// The pin command.
        #[command(subcommand)]
        command: PinCommand,
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

/// `forge pin ...`.
#[derive(Debug, Subcommand)]
pub enum PinCommand {
    /// List every pin with its kind, version or revision, and group.
    List,
}
