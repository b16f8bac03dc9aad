//! Base images made on the spot from the host's own files, for the tests that need a program
//! inside an image (no registry can be reached to pull one).
//!
//! A `Tree` gathers host files at the paths they have on the host, the shared libraries `ldd`
//! names for the binaries added and the dynamic loader, and busybox for `sh` and the usual
//! tools. `imported` turns it into one deterministic archive and imports it under a name of the
//! test process's own whose tag is the archive's sha256, so a second test reuses the image, a
//! different host binary makes a new one, and another suite on the daemon never sees it.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// One entry of the image's file system.
#[derive(Debug)]
enum Node {
    Folder { mode: u32 },
    File { bytes: Vec<u8>, mode: u32 },
    Link { target: String },
}

/// An image's file system, by absolute path; parents are added as folders.
#[derive(Debug, Default)]
pub(crate) struct Tree {
    nodes: BTreeMap<PathBuf, Node>,
}

impl Tree {
    fn parents(&mut self, path: &Path) {
        for parent in path.ancestors().skip(1) {
            if parent.as_os_str().is_empty() || parent == Path::new("/") {
                break;
            }
            self.nodes
                .entry(parent.to_owned())
                .or_insert(Node::Folder { mode: 0o755 });
        }
    }

    /// A folder at `path` with `mode`.
    pub(crate) fn folder(&mut self, path: &str, mode: u32) {
        self.parents(Path::new(path));
        self.nodes
            .insert(PathBuf::from(path), Node::Folder { mode });
    }

    /// A file at `path` holding `bytes`.
    pub(crate) fn file(&mut self, path: &str, bytes: Vec<u8>, mode: u32) {
        self.parents(Path::new(path));
        self.nodes
            .insert(PathBuf::from(path), Node::File { bytes, mode });
    }

    /// A symbolic link at `path` pointing at `target`.
    pub(crate) fn link(&mut self, path: &str, target: &str) {
        self.parents(Path::new(path));
        self.nodes.insert(
            PathBuf::from(path),
            Node::Link {
                target: target.to_owned(),
            },
        );
    }

    /// A copy of the host file at `path` (symbolic links followed), at the same path.
    pub(crate) fn copy(&mut self, path: &str) {
        let bytes = std::fs::read(path).unwrap_or_else(|error| panic!("read {path}: {error}"));
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(path)
                .expect("metadata of a readable file")
                .permissions(),
        );
        self.file(path, bytes, if mode & 0o111 != 0 { 0o755 } else { 0o644 });
    }

    /// The host binary or shared object at `path`, with every shared library `ldd` names for
    /// it.
    pub(crate) fn binary(&mut self, path: &str) {
        self.copy(path);
        self.libraries(path);
    }

    /// Every shared library `ldd` names for `binary`, and the dynamic loader, at the paths it
    /// names; nothing for a statically linked binary. No loader cache is written: the paths are
    /// the loader's own default folders, or those the binary's run path names.
    pub(crate) fn libraries(&mut self, binary: &str) {
        let output = Command::new("ldd").arg(binary).output().expect("ldd runs");
        let text = String::from_utf8_lossy(&output.stdout);
        if !output.status.success() || text.contains("not a dynamic executable") {
            return;
        }
        for line in text.lines() {
            let line = line.trim();
            let path = match line.split_once(" => ") {
                Some((name, _)) if line.ends_with("not found") => {
                    panic!("{binary} needs {name}, which this machine does not have")
                }
                Some((_, rest)) => rest.split_whitespace().next(),
                None => line
                    .split_whitespace()
                    .next()
                    .filter(|path| path.starts_with('/')),
            };
            if let Some(path) = path.filter(|path| path.starts_with('/')) {
                self.copy(path);
            }
        }
    }

    /// Busybox for `sh`, `sha256sum` and the rest, one link per applet in `/bin`, and the files
    /// a shell expects.
    pub(crate) fn busybox(&mut self) {
        const BUSYBOX: &str = "/bin/busybox";
        assert!(
            Path::new(BUSYBOX).exists(),
            "{BUSYBOX} not found; install it with: apt-get install busybox-static"
        );
        self.binary(BUSYBOX);
        let output = Command::new(BUSYBOX)
            .arg("--list")
            .output()
            .expect("busybox runs");
        for applet in String::from_utf8_lossy(&output.stdout).lines() {
            if applet != "busybox" && !applet.is_empty() {
                self.link(&format!("/bin/{applet}"), "busybox");
            }
        }
        self.file(
            "/etc/passwd",
            b"root:x:0:0:root:/root:/bin/sh\n".to_vec(),
            0o644,
        );
        self.file("/etc/group", b"root:x:0:\n".to_vec(), 0o644);
        self.folder("/tmp", 0o1777);
    }

    /// The tree as a tar archive that depends on nothing but the content: sorted, owned by
    /// root, every mtime zero.
    pub(crate) fn archive(&self) -> Vec<u8> {
        let mut builder = tar::Builder::new(Vec::new());
        for (path, node) in &self.nodes {
            let relative = path.strip_prefix("/").expect("absolute paths");
            let mut header = tar::Header::new_gnu();
            header.set_mtime(0);
            header.set_uid(0);
            header.set_gid(0);
            match node {
                Node::Folder { mode } => {
                    header.set_entry_type(tar::EntryType::Directory);
                    header.set_mode(*mode);
                    header.set_size(0);
                    builder
                        .append_data(&mut header, relative, std::io::empty())
                        .expect("append a folder");
                }
                Node::File { bytes, mode } => {
                    header.set_entry_type(tar::EntryType::Regular);
                    header.set_mode(*mode);
                    header.set_size(bytes.len() as u64);
                    builder
                        .append_data(&mut header, relative, bytes.as_slice())
                        .expect("append a file");
                }
                Node::Link { target } => {
                    header.set_entry_type(tar::EntryType::Symlink);
                    header.set_mode(0o777);
                    header.set_size(0);
                    builder
                        .append_link(&mut header, relative, target)
                        .expect("append a link");
                }
            }
        }
        builder.into_inner().expect("finish the archive")
    }
}

/// Imports `tree` as `REPOSITORY-PID:<the first 16 hex digits of its archive's sha256>` unless
/// this test process did already, and returns the name; the image goes when the process ends.
pub(crate) fn imported(repository: &str, tree: &Tree) -> String {
    let archive = tree.archive();
    let name = format!(
        "{repository}-{:07}:{}",
        std::process::id(),
        &sha256_hex(&archive)[..16]
    );
    if crate::support::images::image_id(&name).is_none() {
        crate::support::images::removed_at_exit(&name);
        import(&archive, &name);
    }
    name
}

/// The sha256 of `bytes` in hex, from coreutils' `sha256sum`: the test binary is built without
/// optimisation, and sha2 at that speed takes seconds over a 50 MB layer.
fn sha256_hex(bytes: &[u8]) -> String {
    let mut child = Command::new("sha256sum")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("sha256sum runs");
    let mut input = child.stdin.take().expect("a pipe to sha256sum");
    // Written from a second thread so that neither side waits on a full pipe.
    let output = std::thread::scope(|scope| {
        let writer = scope.spawn(move || input.write_all(bytes));
        let output = child.wait_with_output().expect("sha256sum finishes");
        writer
            .join()
            .expect("the writer thread")
            .expect("send the layer to sha256sum");
        output
    });
    assert!(output.status.success(), "sha256sum failed");
    let text = String::from_utf8(output.stdout).expect("hex digits");
    let hex = text
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_owned();
    assert_eq!(hex.len(), 64, "sha256sum printed {text:?}");
    hex
}

/// `docker import` of `archive` as `name`, with busybox's folder as the whole PATH.
fn import(archive: &[u8], name: &str) {
    let mut child = Command::new("docker")
        .args(["import", "--change", "ENV PATH=/bin", "-", name])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("docker import runs");
    child
        .stdin
        .take()
        .expect("a pipe to docker import")
        .write_all(archive)
        .expect("send the layer to docker import");
    let output = child.wait_with_output().expect("docker import finishes");
    assert!(
        output.status.success(),
        "docker import {name} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}
