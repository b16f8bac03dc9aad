//! What keeps a publication whole: one build of a recipe at a time, and signals that stop it
//! only between steps.

use std::path::Path;

use anyhow::Context as _;
use tokio::signal::unix::{Signal, SignalKind, signal};

use super::error::BuildError;

/// What stops a build part way, so that it can put back what it moved instead of ending on
/// the spot.
// Used with static dispatch only, so the future's auto traits need not be named.
#[allow(async_fn_in_trait)]
pub trait Stop {
    /// Waits until the stop arrives, and names it (`SIGINT`, `SIGTERM`).
    async fn received(&mut self) -> &'static str;

    /// Runs `work` unless the stop arrives first, which drops it (a daemon request in flight is
    /// cancelled with its connection) and fails with `BuildError::Interrupted`.
    async fn race<T, E: Into<anyhow::Error>>(
        &mut self,
        work: impl std::future::Future<Output = Result<T, E>>,
    ) -> anyhow::Result<T> {
        tokio::select! {
            biased;
            signal = self.received() => Err(super::BuildError::Interrupted { signal }.into()),
            done = work => done.map_err(Into::into),
        }
    }
}

/// SIGINT and SIGTERM, caught from the moment the daemon is asked to build: instead of ending
/// forge on the spot they stop the build at its next step and let it put back what it moved.
#[derive(Debug)]
pub struct Signals {
    interrupt: Signal,
    terminate: Signal,
}

impl Signals {
    /// Starts catching SIGINT and SIGTERM.
    pub fn listen() -> anyhow::Result<Self> {
        let listen = |kind| signal(kind).context("cannot listen for SIGINT and SIGTERM");
        Ok(Self {
            interrupt: listen(SignalKind::interrupt())?,
            terminate: listen(SignalKind::terminate())?,
        })
    }
}

impl Stop for Signals {
    async fn received(&mut self) -> &'static str {
        tokio::select! {
            _ = self.interrupt.recv() => "SIGINT",
            _ = self.terminate.recv() => "SIGTERM",
        }
    }
}

/// Takes the recipe's lock, held while a build publishes: an advisory lock on the recipe folder
/// itself, so that two builds never move the same tags or write the same forge.lock at once,
/// and nothing settles an intent a running build is still carrying out. Locking the folder
/// rather than a file in it needs no free space, which matters when the disk is full. The
/// kernel lets go of it if forge dies.
pub fn lock_recipe(root: &Path) -> Result<std::fs::File, BuildError> {
    let folder = std::fs::File::open(root).map_err(|source| BuildError::Lock {
        root: root.to_owned(),
        source,
    })?;
    match folder.try_lock() {
        Ok(()) => Ok(folder),
        // The folder by its whole path: from inside it, `.` would say little.
        Err(std::fs::TryLockError::WouldBlock) => Err(BuildError::Busy {
            root: std::fs::canonicalize(root).unwrap_or_else(|_| root.to_owned()),
        }),
        Err(std::fs::TryLockError::Error(source)) => Err(BuildError::Lock {
            root: root.to_owned(),
            source,
        }),
    }
}
