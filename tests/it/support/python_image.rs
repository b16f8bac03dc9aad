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
//! The tree is made and imported by `host_image`: one deterministic archive, named after its
//! sha256 under a name of the test process's own, so a second test reuses it, and a different
//! host Python or fixture makes a new one.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use crate::support::host_image::{self, Tree};

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
    /// `forge-test-python-PID:<hash>`.
    pub(crate) name: String,
    /// Where the image's `libnccl.so.2` is.
    pub(crate) nccl_path: String,
    /// The site-packages folder its interpreter puts on `sys.path` (the host's own path).
    pub(crate) site_packages: String,
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

/// Makes the image unless one with the same content exists, and returns it.
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
    tree.busybox();
    add_fixtures(&mut tree, &site_packages, &nccl_path);
    let name = host_image::imported(REPOSITORY, &tree);
    let image = PythonImage {
        name,
        nccl_path,
        site_packages,
    };
    *made = Some(image.clone());
    image
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
        tree.binary(&self.executable);
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
            tree.binary(module);
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
