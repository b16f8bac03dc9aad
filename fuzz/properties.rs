#![allow(dead_code)] // each fuzz target uses one property of this file
//! What must hold for any input, shared by the fuzz targets (`cargo fuzz run NAME`) and by the
//! test suite, which replays every file of `fuzz/seeds/` and `fuzz/regressions/` through them.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use forge::pins;
use forge::recipe::{DateSource, Recipe};
use forge::render;

/// forge's repository root, from either the fuzz crate (`fuzz/`) or forge itself.
fn repository_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    if manifest.join("pins.toml").exists() {
        manifest.to_owned()
    } else {
        manifest.join("..")
    }
}

/// A recipe folder holding the folders the default pins.toml names, made once per process.
fn recipe_root() -> &'static Path {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| {
        let root = std::env::temp_dir().join(format!("forge-fuzz-{}", std::process::id()));
        let source = repository_root();
        for file in [
            "overlays/cutlass-dsl/thrmma_shim.py",
            "templates/Dockerfile.j2",
        ] {
            let target = root.join(file);
            std::fs::create_dir_all(target.parent().unwrap()).unwrap();
            std::fs::copy(source.join(file), target).unwrap();
        }
        // `ci` holds the committed render pins.toml names (`[render] committed`).
        for folder in ["patches/pr4", "overlays/vllm", "ci"] {
            std::fs::create_dir_all(root.join(folder)).unwrap();
        }
        root
    })
}

/// The Dockerfile instructions the default template writes; anything else starting a line means
/// a value broke out of its place.
const INSTRUCTIONS: [&str; 8] = [
    "FROM ",
    "SHELL ",
    "ENV ",
    "RUN ",
    "COPY ",
    "ARG ",
    "LABEL ",
    "ENTRYPOINT ",
];

/// pins.toml text: loading never panics, and whatever loads renders into a Dockerfile whose
/// every line is a comment, a continuation, or one of the template's own instructions, with
/// exactly the template's number of RUN steps.
pub fn pins_toml(text: &str) {
    let root = recipe_root();
    let Ok(pins) = pins::parse(&root.join("pins.toml"), text) else {
        return;
    };
    let date = pins
        .image
        .date
        .unwrap_or_else(|| "2026-07-08".parse().unwrap());
    let overlays = pins.overlays.len();
    let recipe = Recipe::new(root, pins, date, DateSource::PinsFile);
    let Ok(dockerfile) = render::dockerfile(&recipe) else {
        return;
    };
    let text = dockerfile.as_str();
    assert!(
        !text.contains(['\0', '\r']),
        "a NUL or CR reached the Dockerfile"
    );
    for line in text.lines() {
        let allowed = line.is_empty()
            || line.starts_with('#')
            || line.starts_with(' ')
            || INSTRUCTIONS.iter().any(|word| line.starts_with(word));
        assert!(allowed, "a value broke out of its line: {line:?}");
    }
    let runs = text.lines().filter(|line| line.starts_with("RUN ")).count();
    assert_eq!(
        runs,
        5 + overlays,
        "the number of RUN steps changed:\n{text}"
    );
}

/// A Dockerfile template: rendering it against the default recipe never panics or hangs.
pub fn dockerfile_template(source: &str) {
    static RECIPE: OnceLock<Recipe> = OnceLock::new();
    let root = recipe_root();
    let recipe = RECIPE.get_or_init(|| {
        let text = std::fs::read_to_string(repository_root().join("pins.toml")).unwrap();
        let pins =
            pins::parse(&root.join("pins.toml"), &text).expect("the default pins.toml loads");
        let date = pins.image.date.unwrap();
        Recipe::new(root, pins, date, DateSource::PinsFile)
    });
    let _ = render::dockerfile_from(recipe, &root.join("templates"), source);
}

/// An mbox file: reading it never panics; every patch it yields carries a patch text whose
/// reading never panics and a message that starts with its subject.
pub fn mbox(bytes: &[u8]) {
    let Ok(series) = forge::patch::Series::parse(Path::new("fuzz.patch"), bytes) else {
        return;
    };
    for patch in &series.patches {
        assert!(
            !patch.diff.is_empty(),
            "a patch without a diff was accepted"
        );
        assert!(
            String::from_utf8_lossy(&patch.message).starts_with(&patch.subject),
            "the message does not start with the subject"
        );
        let _ = forge::patch::count_files(&patch.diff);
    }
}
