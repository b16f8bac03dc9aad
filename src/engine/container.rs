//! The containers forge runs on a daemon and what it reads of them: the image's probe, bounded
//! by a deadline and an output cap, and a path's first archive entry.

use std::time::Duration;

use bollard::container::LogOutput;
use bollard::errors::Error as BollardError;
use bollard::query_parameters::LogsOptionsBuilder;
use futures_util::StreamExt as _;

use super::bounded::Crossed;
use super::docker::Docker;
use super::{EngineError, ImageId, PathMeta};

/// How long a container forge runs (the image's probe) may run: `FORGE_RUN_TIMEOUT` seconds,
/// else 600.
fn run_deadline() -> Duration {
    std::env::var("FORGE_RUN_TIMEOUT")
        .ok()
        .and_then(|seconds| seconds.trim().parse::<f64>().ok())
        .filter(|seconds| *seconds > 0.0)
        .map_or(Duration::from_secs(600), Duration::from_secs_f64)
}

/// The most output forge reads of a container it runs, both streams together.
const OUTPUT_CAP: u64 = 16 << 20;

impl Docker {
    /// The exit code of the container `id` of `image` once it ends, within `run_deadline()`.
    pub(super) async fn wait_for(&self, id: &str, image: &ImageId) -> Result<i64, EngineError> {
        let deadline = run_deadline();
        let waited = tokio::time::timeout(deadline, async {
            let mut code = 0;
            let mut waiting = self.client.wait_container(id, None);
            while let Some(item) = waiting.next().await {
                match item {
                    Ok(answer) => code = answer.status_code,
                    Err(BollardError::DockerContainerWaitError { code: failed, .. }) => {
                        code = failed;
                    }
                    Err(error) => {
                        return Err(self.api(format!("wait for a container of {image}"))(error));
                    }
                }
            }
            Ok(code)
        })
        .await;
        waited.unwrap_or_else(|_| {
            Err(EngineError::Bounded(Box::new(super::Bounded {
                host: self.host.clone(),
                action: format!("a container of {image}"),
                crossed: Crossed::Running(deadline),
            })))
        })
    }

    /// What the ended container `id` of `image` printed on stdout and stderr: at most
    /// `OUTPUT_CAP` bytes, each part within the idle limit.
    pub(super) async fn output_of(
        &self,
        id: &str,
        image: &ImageId,
    ) -> Result<(Vec<u8>, Vec<u8>), EngineError> {
        let action = format!("the output of a container of {image}");
        let options = LogsOptionsBuilder::default()
            .stdout(true)
            .stderr(true)
            .build();
        let mut logs = self.client.logs(id, Some(options));
        let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
        let idle = crate::http::idle_timeout();
        let crossed = |crossed| {
            EngineError::Bounded(Box::new(super::Bounded {
                host: self.host.clone(),
                action: action.clone(),
                crossed,
            }))
        };
        loop {
            let item = tokio::time::timeout(idle, logs.next())
                .await
                .map_err(|_| crossed(Crossed::Silent(idle)))?;
            let Some(item) = item else { break };
            match item.map_err(self.api(action.clone()))? {
                LogOutput::StdOut { message } => stdout.extend_from_slice(&message),
                LogOutput::StdErr { message } => stderr.extend_from_slice(&message),
                _ => {}
            }
            if (stdout.len() + stderr.len()) as u64 > OUTPUT_CAP {
                return Err(crossed(Crossed::TooLarge(OUTPUT_CAP)));
            }
        }
        Ok((stdout, stderr))
    }
}

/// How many bytes of a path's archive are read for its first entry: a header, and a PAX record
/// of extended attributes before it.
pub(super) const PROBE_BYTES: usize = 64 * 1024;

/// What the first entry of a container path's archive says of the path.
pub(super) fn first_entry(bytes: &[u8]) -> Result<PathMeta, String> {
    let mut archive = tar::Archive::new(bytes);
    let mut entries = archive.entries().map_err(|error| error.to_string())?;
    let entry = entries
        .next()
        .ok_or("the daemon sent an empty archive")?
        .map_err(|error| error.to_string())?;
    let header = entry.header();
    Ok(PathMeta {
        directory: header.entry_type() == tar::EntryType::Directory,
        mode: header.mode().map_err(|error| error.to_string())? & 0o7777,
        owner: (
            header.uid().map_err(|error| error.to_string())?,
            header.gid().map_err(|error| error.to_string())?,
        ),
    })
}
