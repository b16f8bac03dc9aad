//! The ssh transport: each HTTP connection to the daemon is one
//! `ssh [-l USER] [-p PORT] -- HOST docker system dial-stdio`, as the docker CLI makes it, with
//! the request written to ssh's stdin and the response read from its stdout.
//!
//! The destination goes to ssh as separate `-l`, `-p` and host arguments: handed over as one
//! `USER@HOST:PORT` word (as bollard's ssh transport does), the port would be read as part of
//! the host name.

use std::io;
use std::pin::Pin;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, ReadBuf};
use tokio::process::{ChildStdin, ChildStdout, Command};
use tokio::task::JoinHandle;

use super::address::SshDestination;

/// How much of what ssh printed on stderr is kept for an error message.
const KEPT_STDERR: usize = 4096;

/// How long ssh, once its connection failed, may take to finish what it prints.
const STDERR_GRACE: Duration = Duration::from_secs(3);

/// Opens connections to one daemon over ssh, and keeps what ssh said.
#[derive(Clone)]
pub(super) struct SshConnector {
    destination: Arc<SshDestination>,
    log: Arc<SshLog>,
}

/// What the ssh processes printed on stderr, and the reader of the latest one's.
#[derive(Default)]
struct SshLog {
    said: Mutex<String>,
    reader: Mutex<Option<JoinHandle<()>>>,
}

impl SshConnector {
    /// A connector for `destination`.
    pub(super) fn new(destination: SshDestination) -> Self {
        Self {
            destination: Arc::new(destination),
            log: Arc::default(),
        }
    }

    /// What ssh printed on stderr, once the latest ssh process has finished printing (or a few
    /// seconds have passed); empty when it printed nothing.
    pub(super) async fn said(&self) -> String {
        let reader = self
            .log
            .reader
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take();
        if let Some(reader) = reader {
            let _ = tokio::time::timeout(STDERR_GRACE, reader).await;
        }
        let said = self
            .log
            .said
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        said.trim().to_owned()
    }

    fn command(&self) -> Command {
        let destination = &self.destination;
        let mut command = Command::new("ssh");
        // No prompt can be answered: the terminal is forge's, and stdin carries HTTP.
        command.args(["-o", "BatchMode=yes", "-o", "ConnectTimeout=15", "-T"]);
        if let Some(user) = &destination.user {
            command.arg("-l").arg(user);
        }
        if let Some(port) = destination.port {
            command.arg("-p").arg(port.to_string());
        }
        command
            .arg("--")
            .arg(&destination.host)
            .args(["docker", "system", "dial-stdio"]);
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // A connection the client drops takes its ssh process with it.
            .kill_on_drop(true);
        command
    }

    /// Starts one ssh process, a connection to the daemon.
    pub(super) fn open(&self) -> io::Result<SshStream> {
        let mut child = self
            .command()
            .spawn()
            .map_err(|error| io::Error::new(error.kind(), format!("cannot run `ssh`: {error}")))?;
        let stdin = child.stdin.take().expect("stdin is piped");
        let stdout = child.stdout.take().expect("stdout is piped");
        let mut stderr = child.stderr.take().expect("stderr is piped");
        // An error names what the latest ssh said, not what an earlier one warned about.
        self.log
            .said
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clear();
        let log = Arc::clone(&self.log);
        let reader = tokio::spawn(async move {
            let mut buffer = [0; 1024];
            while let Ok(read) = stderr.read(&mut buffer).await {
                if read == 0 {
                    break;
                }
                let mut said = log
                    .said
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner());
                said.push_str(&String::from_utf8_lossy(&buffer[..read]));
                if said.len() > KEPT_STDERR {
                    let mut cut = said.len() - KEPT_STDERR;
                    while !said.is_char_boundary(cut) {
                        cut += 1;
                    }
                    said.drain(..cut);
                }
            }
        });
        *self
            .log
            .reader
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(reader);
        Ok(SshStream {
            _child: child,
            stdin,
            stdout,
        })
    }
}

/// How long ssh may take to say which port of the remote loopback it forwards.
const FORWARD_WAIT: Duration = Duration::from_secs(20);

/// Forwards a port of `destination`'s loopback, which the remote sshd picks, to `port` of
/// this machine's: `ssh -N -R 0:127.0.0.1:PORT`, kept open until the returned process is
/// dropped. Returns the remote port, or what ssh said when it could not.
pub(super) async fn forward(
    destination: &SshDestination,
    port: u16,
) -> Result<(u16, tokio::process::Child), String> {
    use tokio::io::AsyncBufReadExt as _;
    let mut command = Command::new("ssh");
    command.args([
        "-o",
        "BatchMode=yes",
        "-o",
        "ConnectTimeout=15",
        "-o",
        "ExitOnForwardFailure=yes",
        "-N",
        "-R",
        &format!("0:127.0.0.1:{port}"),
    ]);
    if let Some(user) = &destination.user {
        command.arg("-l").arg(user);
    }
    if let Some(remote) = destination.port {
        command.arg("-p").arg(remote.to_string());
    }
    command
        .arg("--")
        .arg(&destination.host)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = command
        .spawn()
        .map_err(|error| format!("cannot run `ssh`: {error}"))?;
    let stderr = child.stderr.take().expect("stderr is piped");
    let mut lines = tokio::io::BufReader::new(stderr).lines();
    let mut said = String::new();
    let allocated = tokio::time::timeout(FORWARD_WAIT, async {
        while let Ok(Some(line)) = lines.next_line().await {
            // "Allocated port 40123 for remote forward to 127.0.0.1:5000"
            if let Some(rest) = line.strip_prefix("Allocated port ")
                && let Some(remote) = rest.split_whitespace().next()
                && let Ok(remote) = remote.parse::<u16>()
            {
                return Some(remote);
            }
            said.push_str(&line);
            said.push('\n');
        }
        None
    })
    .await;
    match allocated {
        Ok(Some(remote)) => {
            // What ssh says later is not read: let it go nowhere.
            tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
            Ok((remote, child))
        }
        Ok(None) => Err(said.trim().to_owned()),
        Err(_) => Err(format!(
            "ssh named no forwarded port within {} s",
            FORWARD_WAIT.as_secs()
        )),
    }
}

/// One ssh process: writes go to its stdin, reads come from its stdout.
pub(super) struct SshStream {
    _child: tokio::process::Child,
    stdin: ChildStdin,
    stdout: ChildStdout,
}

impl AsyncRead for SshStream {
    fn poll_read(
        self: Pin<&mut Self>,
        context: &mut Context<'_>,
        buffer: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stdout).poll_read(context, buffer)
    }
}

impl AsyncWrite for SshStream {
    fn poll_write(
        self: Pin<&mut Self>,
        context: &mut Context<'_>,
        buffer: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stdin).poll_write(context, buffer)
    }

    fn poll_flush(self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stdin).poll_flush(context)
    }

    fn poll_shutdown(self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stdin).poll_shutdown(context)
    }
}
