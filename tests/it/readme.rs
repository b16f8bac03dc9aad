//! The console examples of README.md, docs/*.md and examples/*/README.md, run against the forge
//! under test and compared with what the documents show.
//!
//! Every ```` ```console ```` block follows a marker line naming it:
//! `<!-- example: NAME -->` when `SETUPS` below says how to run it, or
//! `<!-- example: NAME; not run: REASON -->` when it cannot run here (the real 18 GB base, a
//! GB10, the real package index or GitHub). A block is `$ command` lines, each followed by what
//! the command prints (stderr and stdout, as a terminal shows them); a line `...` or `…` stands
//! for any number of lines left out. `forge` and `cargo run --release --` are the binary under
//! test; `# ...` after a command says what was set up, which the block's set-up here does.
//!
//! Each block runs in a fresh copy of the checkout's recipe files (the default recipe and
//! `examples/`), at `/home/me/forge` as the documents spell it. What truly varies from machine to
//! machine or run to run is normalised and nothing else: progress times, registry ports, the
//! copy's temporary path, and the ids the daemon, the registry and git assign (image ids,
//! pushed digests, the checkout's commit, the commits of a git remote a set-up made), which may
//! differ from the document's only consistently (one document id stands for one id of the run).
//! Dockerfile, context, input and file digests, patch commits (made in scratch repositories,
//! committed by forge itself) and everything else must match byte for byte.
//!
//! `FORGE_BLESS_DOCS=1` rewrites each stale step that elides nothing with what forge printed
//! (see [`rewrite`]); a step with `...` lines is still reported, to be mended by hand.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::images::{EXAMPLE_BASE, base_image, docker_ready};
use crate::support::index::IndexServer;
use crate::support::registry::RegistryServer;
use crate::support::{copy_tree, git_in, repository_root};

/// How many console blocks the documents hold, and how many of them cannot run here: a new
/// block, run or not, changes one of these on purpose.
const BLOCKS: usize = 21;
const NOT_RUN: usize = 1;

/// Where the documents put the checkout.
const HOME_CHECKOUT: &str = "/home/me/forge";

/// The offline example's repository as the documents name it. Each sandbox tags under a name
/// of its own instead, of the same length so that tables keep their columns, and shows it as
/// this one.
const DOCUMENTED_REPOSITORY: &str = "forge-example/offline";

/// A repository name as long as `DOCUMENTED_REPOSITORY`, unique to one sandbox of this process.
fn sandbox_repository() -> String {
    static MADE: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let made = MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut number = (std::process::id() % 100_000) * 100 + made % 100;
    let mut digits = Vec::new();
    for _ in 0..6 {
        digits.push(char::from_digit(number % 36, 36).expect("a base-36 digit"));
        number /= 36;
    }
    let name = format!("forge-readme/o-{}", digits.iter().rev().collect::<String>());
    assert_eq!(name.len(), DOCUMENTED_REPOSITORY.len());
    name
}

/// One console block of a document.
#[derive(Debug)]
struct Block {
    /// The document, relative to the repository root.
    file: String,
    /// The line of the opening fence.
    line: usize,
    name: String,
    not_run: Option<String>,
    steps: Vec<Step>,
}

/// A `$ command` line and what it prints.
#[derive(Debug)]
struct Step {
    line: usize,
    command: String,
    /// Each line with its line number in the document.
    expected: Vec<(usize, String)>,
}

/// The documents whose console blocks are checked: README.md, then docs/*.md and
/// examples/*/README.md, each group in name order.
fn documents() -> Vec<String> {
    let root = repository_root();
    let mut files = vec!["README.md".to_owned()];
    let mut manual: Vec<String> = std::fs::read_dir(root.join("docs"))
        .expect("the docs folder")
        .filter_map(|entry| {
            let name = entry.ok()?.file_name().into_string().ok()?;
            let page = format!("docs/{name}");
            (name.ends_with(".md") && root.join(&page).is_file()).then_some(page)
        })
        .collect();
    manual.sort();
    files.extend(manual);
    let mut examples: Vec<String> = std::fs::read_dir(root.join("examples"))
        .expect("the examples folder")
        .filter_map(|entry| {
            let name = entry.ok()?.file_name().into_string().ok()?;
            let readme = format!("examples/{name}/README.md");
            root.join(&readme).is_file().then_some(readme)
        })
        .collect();
    examples.sort();
    files.extend(examples);
    files
}

/// Every console block of `file`, or what is wrong with the markers.
fn blocks_of(file: &str) -> Result<Vec<Block>, String> {
    let text = std::fs::read_to_string(repository_root().join(file)).expect("a document");
    let lines: Vec<&str> = text.lines().collect();
    let mut blocks = Vec::new();
    let mut at = 0;
    while at < lines.len() {
        if lines[at].trim_end() != "```console" {
            at += 1;
            continue;
        }
        let fence = at + 1;
        let marker = at
            .checked_sub(1)
            .and_then(|before| parse_marker(lines[before]))
            .ok_or_else(|| {
                format!(
                    "{file}:{fence}: a console block without a marker line before it \
                     (`<!-- example: NAME -->`, or `<!-- example: NAME; not run: REASON -->`)"
                )
            })?;
        let mut steps: Vec<Step> = Vec::new();
        at += 1;
        while at < lines.len() && lines[at].trim_end() != "```" {
            let line = lines[at];
            if let Some(command) = line.strip_prefix("$ ") {
                steps.push(Step {
                    line: at + 1,
                    command: command.to_owned(),
                    expected: Vec::new(),
                });
            } else {
                let step = steps
                    .last_mut()
                    .ok_or_else(|| format!("{file}:{}: output before any `$ ` line", at + 1))?;
                step.expected.push((at + 1, line.to_owned()));
            }
            at += 1;
        }
        // A blank line between commands separates them on the page, not in the output.
        for step in &mut steps {
            while step
                .expected
                .last()
                .is_some_and(|(_, line)| line.trim().is_empty())
            {
                step.expected.pop();
            }
        }
        blocks.push(Block {
            file: file.to_owned(),
            line: fence,
            name: marker.0,
            not_run: marker.1,
            steps,
        });
        at += 1;
    }
    Ok(blocks)
}

/// `<!-- example: NAME -->` or `<!-- example: NAME; not run: REASON -->`.
fn parse_marker(line: &str) -> Option<(String, Option<String>)> {
    let inner = line
        .trim()
        .strip_prefix("<!-- example:")?
        .strip_suffix("-->")?
        .trim();
    match inner.split_once(';') {
        Some((name, rest)) => {
            let reason = rest.trim().strip_prefix("not run:")?.trim();
            (!reason.is_empty()).then(|| (name.trim().to_owned(), Some(reason.to_owned())))
        }
        None => Some((inner.to_owned(), None)),
    }
}

/// Every console block of every document; panics on a block without a marker.
fn all_blocks() -> Vec<Block> {
    documents()
        .iter()
        .flat_map(|file| blocks_of(file).unwrap_or_else(|problem| panic!("{problem}")))
        .collect()
}

/// What a block needs besides forge.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Needs {
    Nothing,
    /// A registry on loopback (`docker-registry`, `skopeo`).
    Registry,
    /// The daemon, and a registry on loopback.
    Docker,
}

/// How to run one block: the folder its commands start in (relative to the checkout), what it
/// needs, what to do before each of its steps, and where the values that vary come from.
struct Setup {
    name: &'static str,
    folder: &'static str,
    needs: Needs,
    before: fn(&mut Sandbox, usize),
    varying: fn(&Sandbox) -> Vec<String>,
}

fn nothing(_: &mut Sandbox, _: usize) {}

fn nothing_varies(_: &Sandbox) -> Vec<String> {
    Vec::new()
}

const SETUPS: &[Setup] = &[
    Setup {
        name: "quick-start-dry-run",
        folder: "",
        needs: Needs::Nothing,
        before: nothing,
        varying: nothing_varies,
    },
    Setup {
        name: "invalid-version",
        folder: "",
        needs: Needs::Nothing,
        before: |sandbox, _| {
            sandbox.edit(
                "pins.toml",
                "version = \"0.6.14\"",
                "version = \"0.6.14 && rm -rf /\"",
            );
        },
        varying: nothing_varies,
    },
    Setup {
        name: "outside-the-recipe",
        folder: "",
        needs: Needs::Nothing,
        before: outside_the_recipe,
        varying: nothing_varies,
    },
    Setup {
        name: "secret-files",
        folder: "examples/offline",
        needs: Needs::Nothing,
        before: |sandbox, _| {
            sandbox.write("examples/offline/overlays/app/.env.local", "TOKEN=x\n");
            sandbox.write("examples/offline/overlays/app/id_ed25519", "key\n");
        },
        varying: nothing_varies,
    },
    Setup {
        name: "render-out",
        folder: "",
        needs: Needs::Nothing,
        before: nothing,
        varying: nothing_varies,
    },
    Setup {
        name: "pin-list",
        folder: "",
        needs: Needs::Nothing,
        before: nothing,
        varying: nothing_varies,
    },
    Setup {
        name: "patch-check-apply",
        folder: "",
        needs: Needs::Nothing,
        before: nothing,
        varying: nothing_varies,
    },
    Setup {
        name: "keygen",
        folder: "",
        needs: Needs::Nothing,
        before: nothing,
        varying: nothing_varies,
    },
    Setup {
        name: "offline-build",
        folder: "",
        needs: Needs::Docker,
        before: nothing,
        varying: daemon_ids,
    },
    Setup {
        name: "offline-verify-contents",
        folder: "",
        needs: Needs::Docker,
        before: |sandbox, step| {
            if step == 0 {
                sandbox.build_offline(&[]);
            }
        },
        varying: daemon_ids,
    },
    Setup {
        name: "offline-verify-repointed",
        folder: "",
        needs: Needs::Docker,
        before: |sandbox, step| {
            if step == 0 {
                sandbox.build_offline(&[]);
                let dated = format!("{}:2026-07-08-offline", sandbox.repository);
                docker(&["tag", base_image(), &dated]);
            }
        },
        varying: daemon_ids,
    },
    Setup {
        name: "report-without-a-build",
        folder: "",
        needs: Needs::Nothing,
        before: nothing,
        varying: nothing_varies,
    },
    Setup {
        name: "offline-report-pushed",
        folder: "",
        needs: Needs::Docker,
        before: pushed_to_a_loopback_registry,
        varying: |sandbox| {
            let mut ids = daemon_ids(sandbox);
            ids.extend(pushed_digests(sandbox));
            ids.extend(attached_digests(sandbox));
            ids.push(
                git_in(&sandbox.checkout(), &["rev-parse", "HEAD"], &[])
                    .trim()
                    .to_owned(),
            );
            ids
        },
    },
    Setup {
        name: "pin-outdated",
        folder: "",
        needs: Needs::Nothing,
        before: upstream_on_loopback,
        varying: nothing_varies,
    },
    Setup {
        name: "pin-bump-requires",
        folder: "",
        needs: Needs::Nothing,
        before: |sandbox, _| {
            if sandbox.keep.is_empty() {
                flashinfer_on_indexes(sandbox);
                sandbox.index(crate::support::index::recorded_index());
            }
        },
        varying: nothing_varies,
    },
    Setup {
        name: "pin-bump-flashinfer",
        folder: "",
        needs: Needs::Nothing,
        before: flashinfer_0_6_15,
        varying: nothing_varies,
    },
    Setup {
        name: "pin-bump-dry-run",
        folder: "",
        needs: Needs::Nothing,
        before: flashinfer_0_6_15,
        varying: nothing_varies,
    },
    Setup {
        name: "pin-bump-denied",
        folder: "",
        needs: Needs::Nothing,
        before: |sandbox, _| {
            if sandbox.keep.is_empty() {
                let index = IndexServer::start();
                for version in ["0.1.11", "0.1.12"] {
                    index
                        .wheel("apache-tvm-ffi", version)
                        .wheel("tilelang", version);
                }
                sandbox.index(index);
            }
        },
        varying: nothing_varies,
    },
    Setup {
        name: "pin-bump-base",
        folder: "",
        needs: Needs::Registry,
        before: base_tags_in_a_loopback_registry,
        varying: nothing_varies,
    },
    Setup {
        name: "pin-bump-unknown",
        folder: "",
        needs: Needs::Nothing,
        before: |sandbox, step| {
            if step == 2 {
                flashinfer_on_indexes(sandbox);
            }
        },
        varying: nothing_varies,
    },
];

/// A registry on loopback holding the base's tag and two newer dated ones (one-file images
/// made on the spot, the same bytes on every machine), and pins.toml's base in it, following
/// dated tags.
fn base_tags_in_a_loopback_registry(sandbox: &mut Sandbox, step: usize) {
    if step > 0 {
        return;
    }
    let registry = RegistryServer::start();
    let repository = "aeon-7/aeon-vllm-ultimate";
    for tag in [
        "2026-07-01-v0.24.0",
        "2026-07-15-v0.25.0",
        "2026-08-02-v0.25.1",
    ] {
        registry.push(repository, tag);
    }
    sandbox.edit(
        "pins.toml",
        "image = \"ghcr.io/aeon-7/aeon-vllm-ultimate:2026-07-01-v0.24.0\"",
        &format!(
            "image = \"{}/{repository}:2026-07-01-v0.24.0\"\ntags = \"????-??-??-v*\"",
            registry.address()
        ),
    );
    sandbox.keep.push(Box::new(registry));
}

/// Upstream on loopback: DeepGEMM's pin following a git remote made here (its `nv_dev` head a
/// commit ahead), and a package index where FlashInfer (its wheels looked up there) has 0.6.15
/// and the tvm group 0.1.12.
fn upstream_on_loopback(sandbox: &mut Sandbox, step: usize) {
    if step > 0 {
        return;
    }
    flashinfer_on_indexes(sandbox);
    let remote = crate::support::git::GitRemote::new();
    sandbox.edit(
        "pins.toml",
        "url = \"https://github.com/deepseek-ai/DeepGEMM.git\"",
        &format!("url = \"{}\"", remote.url()),
    );
    sandbox.ids.extend([
        remote.first.clone(),
        remote.second.clone(),
        remote.head.clone(),
        remote.side.clone(),
    ]);
    sandbox.keep.push(Box::new(remote));
    let index = IndexServer::start();
    for version in ["0.6.14", "0.6.15"] {
        index
            .wheel("flashinfer-python", version)
            .wheel("flashinfer-cubin", version)
            .wheel("flashinfer-jit-cache", &format!("{version}+cu130"));
    }
    for version in ["0.1.11", "0.1.12"] {
        index
            .wheel("apache-tvm-ffi", version)
            .wheel("tilelang", version);
    }
    sandbox.index(index);
}

/// The sandbox's FlashInfer wheels looked up on the package index, not downloaded from the
/// release assets.
fn flashinfer_on_indexes(sandbox: &Sandbox) {
    let pins = sandbox.checkout().join("pins.toml");
    let text = std::fs::read_to_string(&pins).unwrap();
    std::fs::write(&pins, crate::support::flashinfer_on_indexes(&text)).unwrap();
}

/// FlashInfer's wheels looked up on the package index (not the release assets), and a package
/// index on loopback offering its three wheels at 0.6.14 and 0.6.15.
fn flashinfer_0_6_15(sandbox: &mut Sandbox, step: usize) {
    if step > 0 {
        return;
    }
    flashinfer_on_indexes(sandbox);
    let index = IndexServer::start();
    for version in ["0.6.14", "0.6.15"] {
        index
            .wheel("flashinfer-python", version)
            .wheel("flashinfer-cubin", version)
            .wheel("flashinfer-jit-cache", &format!("{version}+cu130"));
    }
    sandbox.index(index);
}

/// The first command with `overlays/` a link out of the recipe; the second with it back and a
/// FIFO in the overlay.
fn outside_the_recipe(sandbox: &mut Sandbox, step: usize) {
    let overlays = sandbox.checkout().join("examples/offline/overlays");
    let outside = sandbox.root().join("srv/shared/overlays");
    if step == 0 {
        std::fs::create_dir_all(outside.parent().unwrap()).unwrap();
        std::fs::rename(&overlays, &outside).unwrap();
        std::os::unix::fs::symlink(&outside, &overlays).unwrap();
    } else {
        std::fs::remove_file(&overlays).unwrap();
        std::fs::rename(&outside, &overlays).unwrap();
        let fifo = overlays.join("app/conf/pipe");
        let made = Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .expect("mkfifo runs");
        assert!(made.success(), "mkfifo {}", fifo.display());
    }
}

/// A registry on loopback, the checkout a git repository (the report names its commit), and the
/// offline example built and pushed there with `--repository`.
fn pushed_to_a_loopback_registry(sandbox: &mut Sandbox, step: usize) {
    if step > 0 {
        return;
    }
    let registry = RegistryServer::start();
    let checkout = sandbox.checkout();
    let env = [
        ("GIT_AUTHOR_NAME", "Me"),
        ("GIT_AUTHOR_EMAIL", "me@example.org"),
        ("GIT_COMMITTER_NAME", "Me"),
        ("GIT_COMMITTER_EMAIL", "me@example.org"),
    ];
    git_in(&checkout, &["init", "-q"], &env);
    git_in(&checkout, &["add", "-A"], &env);
    git_in(&checkout, &["commit", "-q", "-m", "the checkout"], &env);
    let repository = format!("{}/forge-example/offline", registry.address());
    sandbox.build_offline(&["--push", "--repository", &repository]);
    // The push tags the engine's image as the build cache beside the two tags.
    for tag in ["latest", "2026-07-08-offline", "buildcache"] {
        sandbox.removals.push(format!("{repository}:{tag}"));
    }
    sandbox.keep.push(Box::new(registry));
}

/// Every image id the daemon holds: ids the daemon assigns.
fn daemon_ids(_: &Sandbox) -> Vec<String> {
    let output = Command::new("docker")
        .args(["images", "--all", "--quiet", "--no-trunc"])
        .output()
        .expect("docker runs");
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The digests of what the push attached (each attachment's manifest and content), as the
/// offline example's forge.lock records them: they name the image, whose id varies.
fn attached_digests(sandbox: &Sandbox) -> Vec<String> {
    let lock = sandbox.checkout().join("examples/offline/forge.lock");
    std::fs::read_to_string(lock)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| {
            line.strip_prefix("manifest = \"")
                .or_else(|| line.strip_prefix("content = \""))
        })
        .map(|digest| digest.trim_end_matches('"').to_owned())
        .collect()
}

/// The digests the registry gave the pushed tags, as the daemon noted them.
fn pushed_digests(sandbox: &Sandbox) -> Vec<String> {
    let mut digests = Vec::new();
    for reference in sandbox
        .removals
        .iter()
        .filter(|reference| reference.starts_with("127."))
    {
        let output = Command::new("docker")
            .args([
                "image",
                "inspect",
                "--format",
                "{{range .RepoDigests}}{{println .}}{{end}}",
            ])
            .arg(reference)
            .output()
            .expect("docker runs");
        digests.extend(
            String::from_utf8_lossy(&output.stdout)
                .lines()
                .filter_map(|line| Some(line.split_once('@')?.1.to_owned())),
        );
    }
    digests
}

fn docker(args: &[&str]) {
    let output = Command::new("docker")
        .args(args)
        .output()
        .expect("docker runs");
    assert!(
        output.status.success(),
        "docker {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// A temporary folder holding a copy of the checkout's recipe files at `forge/`, and a `bin/`
/// where `forge` is the binary under test.
struct Sandbox {
    folder: tempfile::TempDir,
    /// Servers the block's commands talk to, stopped when the block ends.
    keep: Vec<Box<dyn std::any::Any>>,
    /// Image references to remove when the block ends.
    removals: Vec<String>,
    /// Environment the block's commands run with, such as the package index they ask.
    env: Vec<(&'static str, String)>,
    /// Ids the set-up made that vary from run to run (commits of a git remote it made).
    ids: Vec<String>,
    /// The offline example's repository in this sandbox, shown as `DOCUMENTED_REPOSITORY`.
    repository: String,
    /// Digests of files that name the sandbox's base, each with the digest the file has when it
    /// names the documented base instead.
    renamed: Vec<(String, String)>,
}

impl Sandbox {
    fn new() -> Self {
        let folder = tempfile::tempdir().expect("a temporary folder");
        let root = repository_root();
        let checkout = folder.path().join("forge");
        let listed = git_in(
            &root,
            &[
                "ls-files",
                "-z",
                "--",
                "pins.toml",
                "templates",
                "patches",
                "overlays",
                "ci",
                "examples",
                "forge-workspace.toml",
                "lanes",
            ],
            &[],
        );
        for file in listed.split('\0').filter(|file| !file.is_empty()) {
            let from = root.join(file);
            if from.is_file() {
                let to = checkout.join(file);
                std::fs::create_dir_all(to.parent().unwrap()).unwrap();
                copy_tree(&from, &to);
            }
        }
        let bin = folder.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_forge"), bin.join("forge")).unwrap();
        std::fs::create_dir_all(folder.path().join("docker-config")).unwrap();
        let repository = sandbox_repository();
        let sandbox = Self {
            folder,
            keep: Vec::new(),
            // Whatever a block builds of the offline example goes when the block ends.
            removals: ["latest", "2026-07-08-offline"]
                .iter()
                .map(|tag| format!("{repository}:{tag}"))
                .collect(),
            env: Vec::new(),
            ids: Vec::new(),
            repository,
            renamed: Vec::new(),
        };
        let mut sandbox = sandbox;
        sandbox.edit(
            "examples/offline/pins.toml",
            &format!("repository = \"{DOCUMENTED_REPOSITORY}\""),
            &format!("repository = \"{}\"", sandbox.repository),
        );
        // The base is the one this test process made, as long a name as the documented one.
        crate::support::images::on_the_tests_base(
            &sandbox.checkout().join("examples/offline/pins.toml"),
        );
        // The same in every sandbox of this process: worked out once.
        static RENAMED: std::sync::OnceLock<Vec<(String, String)>> = std::sync::OnceLock::new();
        sandbox.renamed = RENAMED
            .get_or_init(|| renamed_digests(&sandbox.checkout().join("examples/offline")))
            .clone();
        // The repository is in pins.toml, whose digest the verify table shows.
        let pins = std::fs::read(sandbox.checkout().join("examples/offline/pins.toml")).unwrap();
        sandbox
            .ids
            .push(hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&pins)));
        sandbox
    }

    fn root(&self) -> &Path {
        self.folder.path()
    }

    fn checkout(&self) -> PathBuf {
        self.root().join("forge")
    }

    fn write(&self, relative: &str, text: &str) {
        let path = self.checkout().join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn edit(&self, relative: &str, from: &str, to: &str) {
        let path = self.checkout().join(relative);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains(from), "{relative} does not contain {from:?}");
        std::fs::write(path, text.replacen(from, to, 1)).unwrap();
    }

    /// The shell command `command` as the documents write it, run in `folder` of the checkout
    /// after a command that exited `last`: its exit code and everything it printed.
    fn run(&self, folder: &str, command: &str, last: i32) -> (i32, String) {
        let command = command
            .trim()
            .strip_prefix("cargo run --release --")
            .map_or_else(|| command.trim().to_owned(), |rest| format!("forge{rest}"));
        let path = format!(
            "{}:{}",
            self.root().join("bin").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let output = Command::new("sh")
            .arg("-c")
            .arg(format!("(exit {last}); {{ {command}\n}} 2>&1"))
            .current_dir(self.checkout().join(folder))
            .env("PATH", path)
            .env("NO_COLOR", "1")
            .env("COLUMNS", "100")
            // The patch commits forge makes name the committer: the documents' is "Me".
            .env("FORGE_COMMITTER_NAME", "Me")
            .env("FORGE_COMMITTER_EMAIL", "me@example.org")
            .env("DOCKER_CONFIG", self.root().join("docker-config"))
            .env_remove("SOURCE_DATE_EPOCH")
            .env_remove("FORGE_REGISTRY_USER")
            .env_remove("FORGE_REGISTRY_PASSWORD")
            .env_remove("FORGE_REGISTRY_HOST")
            .env_remove("FORGE_INDEX_URL")
            .env_remove("PIP_INDEX_URL")
            .env_remove("PIP_CONFIG_FILE")
            .env("XDG_CACHE_HOME", self.root().join("cache"))
            .envs(self.env.iter().map(|(name, value)| (*name, value)))
            .stdin(std::process::Stdio::null())
            .output()
            .expect("sh runs");
        (
            output.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&output.stdout).into_owned(),
        )
    }

    /// `forge -C examples/offline build ARGS`, which must succeed; its tags are removed when
    /// the block ends.
    fn build_offline(&mut self, args: &[&str]) {
        let mut command = vec!["forge", "-C", "examples/offline", "build"];
        command.extend_from_slice(args);
        let (code, output) = self.run("", &command.join(" "), 0);
        assert_eq!(code, 0, "the set-up's build failed:\n{output}");
    }

    /// Makes `index` the package index every command asks (`FORGE_INDEX_URL`, the mirror that
    /// stands in for every index the recipe names), for as long as the block runs.
    fn index(&mut self, index: IndexServer) {
        self.env.push(("FORGE_INDEX_URL", index.url()));
        self.keep.push(Box::new(index));
    }

    /// `text` with the copy's paths, the offline example's repository and its base as the
    /// documents write them.
    fn as_documented(&self, text: &str) -> String {
        let checkout = self.checkout().display().to_string();
        let root = self.root().display().to_string();
        let text = text
            .replace(&checkout, HOME_CHECKOUT)
            .replace(&root, "")
            .replace(&self.repository, DOCUMENTED_REPOSITORY)
            .replace(repository_of(base_image()), repository_of(EXAMPLE_BASE));
        self.renamed
            .iter()
            .fold(text, |text, (sandbox, documented)| {
                text.replace(sandbox, documented)
            })
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        for reference in &self.removals {
            let _ = Command::new("docker")
                .args(["image", "rm", reference])
                .output();
        }
    }
}

/// The digests of the offline example's rendered Dockerfile and context in `recipe`, which names
/// the base this test process made, each with the digest it has when the recipe names the
/// documented base (the Dockerfile's `FROM` names it): a dry run of each says which. Full and
/// 12-digit forms, the full first.
fn renamed_digests(recipe: &Path) -> Vec<(String, String)> {
    let mut renamed = Vec::new();
    let plan = |pins: Option<&str>| {
        let copy = tempfile::tempdir().expect("a temporary folder");
        copy_tree(recipe, copy.path());
        if let Some(pins) = pins {
            std::fs::write(copy.path().join("pins.toml"), pins).unwrap();
        }
        let output = Command::new(env!("CARGO_BIN_EXE_forge"))
            .args(["--json", "build", "--dry-run"])
            .current_dir(copy.path())
            .output()
            .expect("forge runs");
        assert!(output.status.success(), "forge build --dry-run: {output:?}");
        let plan: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        ["dockerfile_digest", "context_digest"]
            .map(|key| plan[key].as_str().expect("a digest").to_owned())
    };
    let pins = std::fs::read_to_string(recipe.join("pins.toml")).unwrap();
    let documented = pins.replace(repository_of(base_image()), repository_of(EXAMPLE_BASE));
    for (run, shown) in plan(None).into_iter().zip(plan(Some(&documented))) {
        // Tables show a digest's first 12 digits.
        let short = |digest: &str| digest["sha256:".len()..][..12].to_owned();
        renamed.push((short(&run), short(&shown)));
        renamed.insert(0, (run, shown));
    }
    renamed
}

/// The repository of a tagged image name.
fn repository_of(image: &str) -> &str {
    image
        .split_once(':')
        .map_or(image, |(repository, _)| repository)
}

/// Progress times (`[11:41:28.491     0.6s]`) and loopback ports, which vary from run to run.
fn normalise(text: &str) -> String {
    text.lines()
        .map(|line| loopback_ports(&progress_time(line)))
        .collect::<Vec<_>>()
        .join("\n")
}

fn progress_time(line: &str) -> String {
    let bytes = line.as_bytes();
    let clock = bytes.len() > 14
        && bytes[0] == b'['
        && [1, 2, 4, 5, 7, 8, 10, 11, 12]
            .iter()
            .all(|&at| bytes[at].is_ascii_digit())
        && bytes[3] == b':'
        && bytes[6] == b':'
        && bytes[9] == b'.';
    match line.find("s]") {
        Some(end) if clock => format!("[<time>]{}", &line[end + 2..]),
        _ => line.to_owned(),
    }
}

fn loopback_ports(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(found) = rest.find("127.0.0.1:") {
        let after = found + "127.0.0.1:".len();
        out.push_str(&rest[..after]);
        rest = &rest[after..];
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 {
            out.push_str("<port>");
            rest = &rest[digits..];
        }
    }
    out.push_str(rest);
    out
}

/// A line cut into text and lowercase hex runs of 7 or more digits (ids and digests).
fn pieces(line: &str) -> Vec<(bool, &str)> {
    let bytes = line.as_bytes();
    let hex = |byte: u8| byte.is_ascii_digit() || (b'a'..=b'f').contains(&byte);
    let mut out = Vec::new();
    let (mut start, mut at) = (0, 0);
    while at < bytes.len() {
        let boundary = at == 0 || !bytes[at - 1].is_ascii_alphanumeric();
        let run = bytes[at..].iter().take_while(|&&byte| hex(byte)).count();
        let ends = at + run == bytes.len() || !bytes[at + run].is_ascii_alphanumeric();
        if boundary && run >= 7 && ends {
            if start < at {
                out.push((false, &line[start..at]));
            }
            out.push((true, &line[at..at + run]));
            at += run;
            start = at;
        } else {
            at += 1;
        }
    }
    if start < bytes.len() {
        out.push((false, &line[start..]));
    }
    out
}

/// Compares a step's expected lines with what it printed, allowing the ids in `varying` to
/// differ consistently.
struct Matcher<'a> {
    expected: &'a [(usize, String)],
    actual: &'a [String],
    varying: &'a [String],
    /// The furthest expected line that failed to match, and the actual line it met.
    furthest: Option<(usize, Option<usize>)>,
}

type Bindings = HashMap<String, String>;

impl Matcher<'_> {
    fn matches(&mut self, expected: usize, actual: usize, bindings: &Bindings) -> bool {
        let Some((_, line)) = self.expected.get(expected) else {
            if actual == self.actual.len() {
                return true;
            }
            self.note(expected, Some(actual));
            return false;
        };
        if matches!(line.trim(), "..." | "…") {
            return (actual..=self.actual.len())
                .any(|skip| self.matches(expected + 1, skip, bindings));
        }
        let Some(found) = self.actual.get(actual) else {
            self.note(expected, None);
            return false;
        };
        let mut bindings = bindings.clone();
        if self.line_matches(line, found, &mut bindings) {
            self.matches(expected + 1, actual + 1, &bindings)
        } else {
            self.note(expected, Some(actual));
            false
        }
    }

    fn note(&mut self, expected: usize, actual: Option<usize>) {
        if self.furthest.is_none_or(|(at, _)| expected > at) {
            self.furthest = Some((expected, actual));
        }
    }

    fn line_matches(&self, expected: &str, actual: &str, bindings: &mut Bindings) -> bool {
        if expected == actual {
            return true;
        }
        let (expected, actual) = (pieces(expected), pieces(actual));
        expected.len() == actual.len()
            && expected
                .iter()
                .zip(&actual)
                .all(|(&(hex, want), &(_, got))| {
                    want == got || (hex && self.unify(want, got, bindings))
                })
    }

    /// Whether the document's id `want` may stand for the run's id `got`: `got` is (a prefix
    /// of) an id that varies, and `want` stood for no other id before (and `got` for no other).
    fn unify(&self, want: &str, got: &str, bindings: &mut Bindings) -> bool {
        if want.len() != got.len() {
            return false;
        }
        let varies = self
            .varying
            .iter()
            .any(|id| id.trim_start_matches("sha256:").starts_with(got));
        if !varies {
            return false;
        }
        let key = |id: &str| id[..id.len().min(12)].to_owned();
        let (want, got) = (format!("={}", key(want)), key(got));
        let forward = bindings.get(&want).is_none_or(|bound| *bound == got);
        let backward = bindings.get(&got).is_none_or(|bound| *bound == want);
        if forward && backward {
            bindings.insert(want.clone(), got.clone());
            bindings.insert(got, want);
            true
        } else {
            false
        }
    }
}

/// A step's output lines in a document, to be replaced by what forge printed: the document,
/// the first and last line (1-based; `last < first` when the step shows no output), the lines.
struct Rewrite {
    file: String,
    first: usize,
    last: usize,
    lines: Vec<String>,
}

/// With `FORGE_BLESS_DOCS=1`, a stale step that elides nothing (no `...` line) is rewritten
/// with what forge printed, keeping each line the document shows that still matches it.
fn blessing() -> bool {
    std::env::var_os("FORGE_BLESS_DOCS").is_some_and(|value| value == "1")
}

/// What a stale `step` becomes: forge's `raw` lines, each document line kept where it still
/// matches (`same`) forge's at the same place; none when the step elides lines.
fn rewrite(
    block: &Block,
    step: &Step,
    raw: &str,
    mut same: impl FnMut(&str, &str) -> bool,
) -> Option<Rewrite> {
    if step
        .expected
        .iter()
        .any(|(_, line)| matches!(line.trim(), "..." | "…"))
    {
        return None;
    }
    let lines = raw
        .lines()
        .enumerate()
        .map(|(at, line)| match step.expected.get(at) {
            Some((_, shown)) if same(&normalise(shown), &normalise(line)) => shown.clone(),
            _ => line.to_owned(),
        })
        .collect();
    Some(Rewrite {
        file: block.file.clone(),
        first: step.line + 1,
        last: step.line + step.expected.len(),
        lines,
    })
}

/// Applies `rewrites` to their documents, the last lines of each document first.
fn apply(mut rewrites: Vec<Rewrite>) {
    rewrites.sort_by(|a, b| (&b.file, b.first).cmp(&(&a.file, a.first)));
    for rewrite in rewrites {
        let path = repository_root().join(&rewrite.file);
        let text = std::fs::read_to_string(&path).expect("a document");
        let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
        lines.splice(rewrite.first - 1..rewrite.last, rewrite.lines);
        std::fs::write(&path, lines.join("\n") + "\n").expect("the document is written");
    }
}

/// Runs every step of `block` with `setup`; the readable failure, if any, and with
/// [`blessing`] the rewrites that would make the document show what forge printed.
fn check(block: &Block, setup: &Setup, rewrites: &mut Vec<Rewrite>) -> Result<(), String> {
    let mut sandbox = Sandbox::new();
    let mut last = 0;
    let mut printed = Vec::new();
    let mut raw = Vec::new();
    for (index, step) in block.steps.iter().enumerate() {
        (setup.before)(&mut sandbox, index);
        let (code, output) = sandbox.run(setup.folder, &step.command, last);
        last = code;
        raw.push(sandbox.as_documented(&output));
        printed.push(normalise(&sandbox.as_documented(&output)));
    }
    let mut varying = (setup.varying)(&sandbox);
    varying.extend(sandbox.ids.iter().cloned());
    varying.extend(engine_built(&printed));
    let mut failure = None;
    for ((step, output), raw) in block.steps.iter().zip(&printed).zip(&raw) {
        let expected: Vec<(usize, String)> = step
            .expected
            .iter()
            .map(|(line, text)| (*line, normalise(text)))
            .collect();
        let actual: Vec<String> = output.lines().map(str::to_owned).collect();
        let mut matcher = Matcher {
            expected: &expected,
            actual: &actual,
            varying: &varying,
            furthest: None,
        };
        if matcher.matches(0, 0, &Bindings::new()) {
            continue;
        }
        let (at, found) = matcher.furthest.expect("a failed match notes where");
        let (line, want) = expected
            .get(at)
            .map_or((step.line, "(the end of the output)"), |(line, text)| {
                (*line, text.as_str())
            });
        let got = found
            .and_then(|found| actual.get(found))
            .map_or("(nothing more)", String::as_str);
        let stale = format!(
            "{}:{line}: the example `{}` (`$ {}`) is stale\n  the document: {want}\n  forge prints: {got}\n--- forge printed (normalised):\n{output}\n---",
            block.file, block.name, step.command
        );
        let mut bindings = Bindings::new();
        let same = |shown: &str, printed: &str| matcher.line_matches(shown, printed, &mut bindings);
        match rewrite(block, step, raw, same) {
            Some(rewrite) if blessing() => rewrites.push(rewrite),
            _ => {
                failure.get_or_insert(stale);
            }
        }
    }
    failure.map_or(Ok(()), Err)
}

/// The ids of the images the engine built, as `Built sha256:…` lines name them: forge removes
/// them once it has loaded the normalized image, and their config holds the engine's clock.
fn engine_built(printed: &[String]) -> Vec<String> {
    printed
        .iter()
        .flat_map(|output| output.lines())
        .filter_map(|line| line.trim_start().strip_prefix("Built sha256:"))
        .map(str::to_owned)
        .collect()
}

/// Runs the blocks whose set-up needs one of `needs`, and fails with every stale one.
fn check_all(needs: &[Needs]) {
    let mut failures = Vec::new();
    let mut rewrites = Vec::new();
    for block in all_blocks().iter().filter(|block| block.not_run.is_none()) {
        let setup = SETUPS
            .iter()
            .find(|setup| setup.name == block.name)
            .unwrap_or_else(|| {
                panic!(
                    "{}:{}: no set-up named {}",
                    block.file, block.line, block.name
                )
            });
        if needs.contains(&setup.needs)
            && let Err(failure) = check(block, setup, &mut rewrites)
        {
            failures.push(failure);
        }
    }
    apply(rewrites);
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn every_console_example_is_marked_and_counted() {
    let blocks = all_blocks();
    let mut names: Vec<&str> = blocks.iter().map(|block| block.name.as_str()).collect();
    names.sort_unstable();
    let before = names.len();
    names.dedup();
    assert_eq!(
        before,
        names.len(),
        "two console blocks share a name: {names:?}"
    );
    for block in &blocks {
        let known = SETUPS.iter().any(|setup| setup.name == block.name);
        match &block.not_run {
            None => assert!(
                known,
                "{}:{}: the example `{}` has no set-up in tests/it/readme.rs",
                block.file, block.line, block.name
            ),
            Some(_) => assert!(
                !known,
                "{}:{}: the example `{}` is marked not run but has a set-up",
                block.file, block.line, block.name
            ),
        }
        assert!(
            !block.steps.is_empty(),
            "{}:{}: a console block without a `$ ` command",
            block.file,
            block.line
        );
    }
    for setup in SETUPS {
        assert!(
            blocks.iter().any(|block| block.name == setup.name),
            "the set-up {} names no console block",
            setup.name
        );
    }
    let not_run: Vec<String> = blocks
        .iter()
        .filter_map(|block| {
            let reason = block.not_run.as_ref()?;
            Some(format!(
                "{}:{} {}: {reason}",
                block.file, block.line, block.name
            ))
        })
        .collect();
    assert_eq!(
        (blocks.len(), not_run.len()),
        (BLOCKS, NOT_RUN),
        "console blocks (all, not run) changed; not run:\n{}",
        not_run.join("\n")
    );
}

#[test]
fn console_examples_without_a_daemon_print_what_the_documents_show() {
    check_all(&[Needs::Nothing]);
}

#[test]
fn console_examples_on_the_daemon_print_what_the_documents_show() {
    if crate::support::registry::registry_tools_missing() {
        return;
    }
    if docker_ready() {
        check_all(&[Needs::Registry, Needs::Docker]);
    } else {
        check_all(&[Needs::Registry]);
    }
}
