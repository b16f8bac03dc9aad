//! A Python-capable base image made on the spot from the host's own CPython, for the tests that
//! need `python3` inside an image (no registry can be reached to pull one).
//!
//! The interpreter, the shared libraries `ldd` names for it and for the extension modules kept,
//! the dynamic loader and the standard library (without tests, GUI toolkits, caches and
//! site-packages) are copied to the paths they have on the host, so the interpreter finds its
//! prefix exactly as it does here; busybox adds `sh` and `sha256sum`. Into the interpreter's
//! site-packages go the fixtures a GPU base image would ship: an installed distribution
//! (`*.dist-info/METADATA`), a `torch` stand-in that loads NCCL on import as torch does, and a
//! real `libnccl.so.2` compiled here where the `nvidia-nccl-cu12` wheel puts it.
//!
//! The layer is one deterministic archive; the image is named after its sha256, so a second
//! run (or a second test) reuses it, and a different host Python or fixture makes a new one.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;

/// The repository the images are imported under; the tag is a content hash.
const REPOSITORY: &str = "forge-test-python";

/// The distribution the image ships, asserted but never installed by the test recipe.
pub(crate) const FIXTURE_PACKAGE: &str = "forge-probe-fixture";
/// The module that distribution provides.
pub(crate) const FIXTURE_MODULE: &str = "forge_probe_fixture";
/// The version its metadata declares.
pub(crate) const FIXTURE_VERSION: &str = "1.4.2";
/// The NCCL version (major, minor, patch) the image's `libnccl.so.2` reports.
pub(crate) const NCCL_VERSION: (u32, u32, u32) = (2, 28, 9);

/// Extension modules left out: test modules, and those that pull in large or graphical
/// libraries nothing here needs.
const SKIPPED_MODULES: &[&str] = &[
    "_tkinter",
    "_test",
    "_ctypes_test",
    "_xx",
    "xxlimited",
    "_curses",
    "readline",
    "nis",
    "_sqlite3",
    "_ssl",
    "_hashlib",
    "_dbm",
    "_gdbm",
    "ossaudiodev",
];

/// Folders of the standard library left out, at any depth.
const SKIPPED_FOLDERS: &[&str] = &[
    "__pycache__",
    "site-packages",
    "dist-packages",
    "test",
    "tests",
    "idle_test",
    "tkinter",
    "idlelib",
    "turtledemo",
    "ensurepip",
    "lib2to3",
    "pydoc_data",
];

/// The made image.
#[derive(Debug, Clone)]
pub(crate) struct PythonImage {
    /// `forge-test-python:<hash>`.
    pub(crate) name: String,
    /// Where the image's `libnccl.so.2` is.
    pub(crate) nccl_path: String,
}

/// NCCL's version text for (major, minor, patch), as `ncclGetVersion` callers print it.
pub(crate) fn nccl_version_text((major, minor, patch): (u32, u32, u32)) -> String {
    format!("{major}.{minor}.{patch}")
}

/// Compiles a `libnccl.so.2` whose `ncclGetVersion` reports `version`, encoded as NCCL encodes
/// it since 2.9 (`major * 10000 + minor * 100 + patch`), and returns its bytes.
pub(crate) fn nccl_library((major, minor, patch): (u32, u32, u32)) -> Vec<u8> {
    let folder = tempfile::tempdir().expect("a temporary folder");
    let source = folder.path().join("nccl.c");
    let library = folder.path().join("libnccl.so.2");
    std::fs::write(
        &source,
        format!(
            "/* ncclResult_t ncclGetVersion(int *version): 0 is ncclSuccess. */\n\
             int ncclGetVersion(int *version) {{ *version = {}; return 0; }}\n",
            major * 10000 + minor * 100 + patch
        ),
    )
    .expect("write the library source");
    let output = Command::new("gcc")
        .args(["-shared", "-fPIC", "-O2", "-Wl,-soname,libnccl.so.2", "-o"])
        .arg(&library)
        .arg(&source)
        .output()
        .expect("gcc runs (install it with: apt-get install gcc)");
    assert!(
        output.status.success(),
        "gcc could not build libnccl.so.2:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    std::fs::read(&library).expect("read the compiled library")
}

/// Makes the image unless one with the same content exists, and returns it. A file lock keeps
/// test processes running side by side from importing it twice.
pub(crate) fn ensure() -> PythonImage {
    static MADE: Mutex<Option<PythonImage>> = Mutex::new(None);
    let mut made = MADE.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(image) = made.as_ref() {
        return image.clone();
    }
    let host = HostPython::ask();
    let site_packages = host.purelib.clone();
    let nccl_path = format!("{site_packages}/nvidia/nccl/lib/libnccl.so.2");
    let mut tree = Tree::default();
    host.add_to(&mut tree);
    add_busybox(&mut tree);
    add_fixtures(&mut tree, &site_packages, &nccl_path);
    let archive = tree.archive();
    let name = format!("{REPOSITORY}:{}", &sha256_hex(&archive)[..16]);

    let lock = std::fs::File::create(std::env::temp_dir().join("forge-test-python-image.lock"))
        .expect("a lock file in the temporary folder");
    lock.lock().expect("the Python image lock");
    if crate::build::image_id(&name).is_none() {
        import(&archive, &name);
    }
    let image = PythonImage { name, nccl_path };
    *made = Some(image.clone());
    image
}

/// The sha256 of `bytes` in hex, from coreutils' `sha256sum`: the test binary is built without
/// optimisation, and sha2 at that speed takes seconds over the 50 MB layer.
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

/// One entry of the image's file system.
#[derive(Debug)]
enum Node {
    Folder { mode: u32 },
    File { bytes: Vec<u8>, mode: u32 },
    Link { target: String },
}

/// The image's file system, by absolute path; parents are added as folders.
#[derive(Debug, Default)]
struct Tree {
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

    fn folder(&mut self, path: &str, mode: u32) {
        self.parents(Path::new(path));
        self.nodes
            .insert(PathBuf::from(path), Node::Folder { mode });
    }

    fn file(&mut self, path: &str, bytes: Vec<u8>, mode: u32) {
        self.parents(Path::new(path));
        self.nodes
            .insert(PathBuf::from(path), Node::File { bytes, mode });
    }

    fn link(&mut self, path: &str, target: &str) {
        self.parents(Path::new(path));
        self.nodes.insert(
            PathBuf::from(path),
            Node::Link {
                target: target.to_owned(),
            },
        );
    }

    /// A copy of the host file at `path` (symbolic links followed), at the same path.
    fn copy(&mut self, path: &str) {
        let bytes = std::fs::read(path).unwrap_or_else(|error| panic!("read {path}: {error}"));
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(path)
                .expect("metadata of a readable file")
                .permissions(),
        );
        self.file(path, bytes, if mode & 0o111 != 0 { 0o755 } else { 0o644 });
    }

    /// The tree as a tar archive that depends on nothing but the content: sorted, owned by
    /// root, every mtime zero.
    fn archive(&self) -> Vec<u8> {
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

/// What the host's `python3` says about itself.
#[derive(Debug)]
struct HostPython {
    /// The interpreter binary, symbolic links resolved.
    executable: String,
    /// The standard library folder.
    stdlib: String,
    /// The folder of the compiled extension modules.
    extensions: String,
    /// The site-packages folder the interpreter puts on `sys.path`.
    purelib: String,
}

impl HostPython {
    fn ask() -> Self {
        let program = "import os, sys, sysconfig, _ctypes\n\
                       print(os.path.realpath(sys.executable))\n\
                       print(sysconfig.get_path('stdlib'))\n\
                       print(os.path.dirname(os.path.realpath(_ctypes.__file__)))\n\
                       print(sysconfig.get_path('purelib'))";
        let output = Command::new("python3")
            .args(["-c", program])
            .output()
            .expect("the host's python3 runs");
        assert!(
            output.status.success(),
            "python3 cannot describe itself:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let text = String::from_utf8(output.stdout).expect("paths in UTF-8");
        let lines: Vec<&str> = text.lines().collect();
        let [executable, stdlib, extensions, purelib] = lines[..] else {
            panic!("python3 printed {text:?}, not four paths");
        };
        Self {
            executable: executable.to_owned(),
            stdlib: stdlib.to_owned(),
            extensions: extensions.to_owned(),
            purelib: purelib.to_owned(),
        }
    }

    fn add_to(&self, tree: &mut Tree) {
        tree.copy(&self.executable);
        add_libraries(tree, &self.executable);
        tree.link("/bin/python3", &self.executable);
        self.add_stdlib(tree, Path::new(&self.stdlib));
        let mut modules: Vec<PathBuf> = std::fs::read_dir(&self.extensions)
            .expect("read the extension module folder")
            .map(|entry| entry.expect("a folder entry").path())
            .filter(|path| {
                let name = path.file_name().unwrap().to_string_lossy();
                name.ends_with(".so")
                    && !SKIPPED_MODULES
                        .iter()
                        .any(|skipped| name.starts_with(skipped))
            })
            .collect();
        modules.sort();
        for module in modules {
            let module = module.to_str().expect("a UTF-8 path");
            tree.copy(module);
            add_libraries(tree, module);
        }
        tree.folder(&self.purelib, 0o755);
    }

    fn add_stdlib(&self, tree: &mut Tree, folder: &Path) {
        for entry in std::fs::read_dir(folder).expect("read a standard library folder") {
            let path = entry.expect("a folder entry").path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let text = path.to_str().expect("a UTF-8 path");
            if path.is_dir() {
                // `config-*` holds the static library and makefiles of the interpreter's build:
                // large, and only for compilers.
                let skipped = SKIPPED_FOLDERS.contains(&name.as_str())
                    || name.starts_with("config-")
                    || text == self.extensions;
                if !skipped {
                    self.add_stdlib(tree, &path);
                }
            } else if !name.ends_with(".pyc") {
                tree.copy(text);
            }
        }
    }
}

/// Every shared library `ldd` names for `binary`, and the dynamic loader, at the paths it
/// names; nothing for a statically linked binary. No loader cache is written: the paths are the
/// loader's own default folders, or those the binary's run path names.
fn add_libraries(tree: &mut Tree, binary: &str) {
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
            tree.copy(path);
        }
    }
}

/// Busybox for `sh`, `sha256sum` and the rest, one link per applet, and the files a shell
/// expects.
fn add_busybox(tree: &mut Tree) {
    const BUSYBOX: &str = "/bin/busybox";
    assert!(
        Path::new(BUSYBOX).exists(),
        "{BUSYBOX} not found; install it with: apt-get install busybox-static"
    );
    tree.copy(BUSYBOX);
    add_libraries(tree, BUSYBOX);
    let output = Command::new(BUSYBOX)
        .arg("--list")
        .output()
        .expect("busybox runs");
    for applet in String::from_utf8_lossy(&output.stdout).lines() {
        if applet != "busybox" && !applet.is_empty() {
            tree.link(&format!("/bin/{applet}"), "busybox");
        }
    }
    tree.file(
        "/etc/passwd",
        b"root:x:0:0:root:/root:/bin/sh\n".to_vec(),
        0o644,
    );
    tree.file("/etc/group", b"root:x:0:\n".to_vec(), 0o644);
    tree.folder("/tmp", 0o1777);
}

/// The distribution, the torch stand-in and NCCL, where pip would have put them.
fn add_fixtures(tree: &mut Tree, site_packages: &str, nccl_path: &str) {
    let distribution = FIXTURE_PACKAGE.replace('-', "_");
    tree.file(
        &format!("{site_packages}/{distribution}-{FIXTURE_VERSION}.dist-info/METADATA"),
        format!("Metadata-Version: 2.1\nName: {FIXTURE_PACKAGE}\nVersion: {FIXTURE_VERSION}\n")
            .into_bytes(),
        0o644,
    );
    tree.file(
        &format!("{site_packages}/{FIXTURE_MODULE}/__init__.py"),
        b"\"\"\"A distribution forge's tests place in a base image.\"\"\"\n".to_vec(),
        0o644,
    );
    // Like torch, which loads the NCCL of the nvidia-nccl wheel into the process on import, so
    // that a later dlopen("libnccl.so.2") finds that library by its soname.
    tree.file(
        &format!("{site_packages}/torch/__init__.py"),
        b"\"\"\"Stands in for torch: loads the nvidia-nccl wheel's NCCL as torch does on import.\"\"\"\n\
          import ctypes as _ctypes\n\
          import os as _os\n\n\
          _site_packages = _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))\n\
          _ctypes.CDLL(\n    _os.path.join(_site_packages, 'nvidia', 'nccl', 'lib', 'libnccl.so.2'),\n    mode=_ctypes.RTLD_GLOBAL,\n)\n"
            .to_vec(),
        0o644,
    );
    tree.file(nccl_path, nccl_library(NCCL_VERSION), 0o755);
}
