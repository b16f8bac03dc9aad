//! forge: a Dockerfile generator and layer patcher for pinned image layers.
//!
//! The pipeline, one module per stage:
//!
//! 1. `pins`: pins.toml → `Pins` (typed, checked).
//! 2. `render`: `Recipe` → `Dockerfile` (minijinja, strict).
//! 3. `patch`: `git format-patch` mail → `Series` → commits on a repository or a scratch copy
//!    (authors kept, all or nothing) → the patched tree.
//! 4. `context`: Dockerfile + overlays + patched trees + shims → a deterministic tar and its
//!    sha256, the context digest.
//! 5. `engine`: context → image id (Docker Engine API, BuildKit or classic) → tags, pushes.
//!    `normalize` then makes that image a function of its content (times clamped to the
//!    recipe's date, nothing host-specific) and loads it back: what forge tags.
//! 6. `lock`: the successful build → `forge.lock`, its record.
//! 7. `verify`: the record and what daemons, the registry and the image hold now → a `Report`.
//!
//! `pipeline` runs stages 2 to 4 for a recipe (render → patch → context, and the inputs);
//! `publish` takes the image stage 5 built through to the record: refusals, tags, pushes,
//! forge.lock, and putting the tags back on a failure. `ops` runs the stages for each command;
//! `commands` maps the command line onto `ops`; `printer` is the only writer to the terminal
//! (with `progress`, which draws the engine's progress events) and `diagnostics` the only
//! renderer of errors.
//! `types` holds the checked value types every stage shares, one module per grammar.
//!
//! Shared services, each used by several stages and depending on none of them: `http` (one
//! guarded client: timeouts, size caps from `limits`), `registry` (the OCI distribution API),
//! `git_remote` (ref listing and fetches), `package_index` (the Python package index), `glob`
//! (the one pattern matcher of tags and ignore files, Docker's), `fs` (atomic writes, and reads
//! confined to the recipe folder that refuse special files), `location` (file:line:col),
//! `redact` (credentials and tokens masked in URLs, for everything printed). `bump` plans pin
//! moves from upstream; `attest` builds SBOMs, provenance and signatures.

pub mod attest;
pub mod bump;
pub mod cli;
pub mod commands;
pub mod completion;
pub mod conduit;
pub mod context;
pub mod diagnostics;
pub mod engine;
pub mod fs;
pub mod git_remote;
pub mod glob;
pub mod http;
pub mod limits;
pub mod location;
pub mod lock;
pub mod manual;
pub mod normalize;
pub mod ops;
pub mod package_index;
pub mod patch;
pub mod pins;
pub mod pipeline;
pub mod printer;
pub mod progress;
pub mod publish;
pub mod recipe;
pub mod redact;
pub mod registry;
pub mod render;
pub mod table;
pub mod types;
pub mod verify;
pub mod workspace;
