//! Smoke gates: the shell command that ends each step and fails the build when the step did not
//! land. Each is generated from the pin it checks, so the version it asserts is the version
//! pinned, never a second copy typed into a template.
//!
//! Every value spliced in here has passed its grammar in `types` (no quote, space or shell
//! metacharacter), which is what makes the plain quoting below safe.

use crate::types::recipe::PinName;

use super::{Fix, Overlay, Pin, Probe, Shim, Shown};

/// Where git pins record the commit they were built from, inside the image.
pub const REVISIONS_DIR: &str = "/opt/forge/revisions";

/// Where, in the build context, the patches a series applies to a git pin go: one folder per
/// pin, holding the mbox files forge applied (not those already upstream), by their names.
pub fn series_context_folder(pin: &str) -> String {
    format!(".forge/series/{pin}")
}

/// Where the template copies a git pin's series in the image, for its build step to apply.
pub fn series_image_folder(pin: &str) -> String {
    format!("/opt/forge/series/{pin}/")
}

/// A one-line Python program, run with `python3 -c "..."`.
fn python(program: &str) -> String {
    format!("python3 -c \"{program}\"")
}

/// Imports `import` (a statement or nothing), then asserts every distribution of `wanted` is
/// installed at exactly its version, naming each one that is not.
fn versions_check(import: &str, wanted: &[(String, String)]) -> String {
    let pairs: Vec<String> = wanted
        .iter()
        .map(|(package, version)| format!("('{package}', '{version}')"))
        .collect();
    python(&format!(
        "import importlib.metadata as m, sys; {import}want = [{}]; \
         bad = [p + ': wanted ' + v + ', found ' + m.version(p) for p, v in want if m.version(p) != v]; \
         sys.exit('; '.join(bad) or None)",
        pairs.join(", ")
    ))
}

/// The gate for `pin`: it imports the pin's module, if it names one, and checks what the image
/// must show for the pin (`Pin::shown`).
pub fn for_pin(pin: &Pin) -> String {
    let import = pin
        .module
        .as_ref()
        .map(|module| format!("import {module}; "));
    let import = import.as_deref().unwrap_or("");
    let mut distributions = Vec::new();
    let mut gates = Vec::new();
    for shown in pin.shown() {
        match shown {
            Shown::Distribution { package, version } => distributions.push((package, version)),
            Shown::Revision { rev } => gates.push(format!(
                "grep -q '^{rev}' {} && {}",
                revision_file(&pin.name),
                python(import.trim_end_matches("; "))
            )),
            Shown::Reported {
                probe: Probe::Nccl,
                version,
            } => gates.push(python(&format!(
                // torch loads the NCCL it was built against; ask that library for its version.
                "import ctypes, sys, torch; n = ctypes.c_int(); ctypes.CDLL('libnccl.so.2').ncclGetVersion(ctypes.byref(n)); \
                 v = '{{}}.{{}}.{{}}'.format(n.value // 10000, n.value // 100 % 100, n.value % 100); \
                 sys.exit(0 if v == '{version}' else 'nccl: wanted {version}, found ' + v)"
            ))),
        }
    }
    if !distributions.is_empty() {
        gates.insert(0, versions_check(import, &distributions));
    }
    gates.join(" && ")
}

/// The gate for a shim: every name it restores imports from the module it patched.
pub fn for_shim(shim: &Shim) -> String {
    let names: Vec<&str> = shim.exports.iter().map(|name| name.as_str()).collect();
    python(&format!("from {} import {}", shim.module, names.join(", ")))
}

/// The file a git pin's build writes its commit id into.
pub fn revision_file(pin: &PinName) -> String {
    format!("{REVISIONS_DIR}/{pin}")
}

/// The gate for an overlay: a folder copied into a Python package's site-packages folder must
/// leave that package importable; anywhere else the folder must exist.
pub fn for_overlay(overlay: &Overlay) -> String {
    let target = overlay.to.as_str();
    let package = target
        .split_once("/site-packages/")
        .and_then(|(_, rest)| rest.split('/').next())
        .filter(|name| {
            !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        });
    match package {
        Some(package) => python(&format!("import {package}")),
        None => format!("test -d {target}"),
    }
}

/// What a fix's check may use without importing it, each imported only when the check names it:
/// `inspect`, `glob`, `import_module`, and `source(module)`, the text of a module's file, found
/// as an import would find it.
const FIX_NAMES: [(&str, &str); 4] = [
    ("inspect", "import inspect"),
    ("glob", "import glob"),
    ("import_module", "from importlib import import_module"),
    (
        "source",
        "import importlib.util; source = lambda module: open(importlib.util.find_spec(module).origin, encoding='utf-8').read()",
    ),
];

/// The statements that make the names `check` uses available, then `sys`.
pub fn fix_prelude(check: &str) -> String {
    let words: std::collections::BTreeSet<&str> = check
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .collect();
    let mut statements = vec!["import sys"];
    statements.extend(
        FIX_NAMES
            .iter()
            .filter(|(name, _)| words.contains(name))
            .map(|(_, statement)| *statement),
    );
    statements.join("; ")
}

/// The gate for a fix: its check, run with `python3 -P` (Python 3.11 and later: the working
/// folder is not put on the module path, so a package is imported from where it is installed,
/// never from a source tree left behind), failing the step with the fix's symptom when the
/// check is false or raises.
pub fn for_fix(fix: &Fix) -> String {
    let message = format!("fix {} is not in place: {}", fix.name, fix.symptom);
    format!(
        "(python3 -P -c \"{}; sys.exit(0 if ({}) else 1)\" || {{ echo {} >&2; exit 1; }})",
        fix_prelude(fix.check.as_str()),
        fix.check,
        quote(&message)
    )
}

/// Where the template copies the patch scripts in the image, each under its file's name.
pub const SCRIPTS_DIR: &str = "/opt/forge/scripts";

/// The step of a patch script: run twice (a patcher the production layer re-applies must leave
/// its own work alone, and one that does not fails its second run or its check), then its check,
/// which names the script when it does not hold.
pub fn for_script(script: &super::Script) -> String {
    let path = format!("{SCRIPTS_DIR}/{}", script.name());
    let message = format!(
        "patch script {} did not take: its check is false after two runs",
        script.file
    );
    format!(
        "python3 {path} \\\n && python3 {path} \\\n && (python3 -P -c \"{}; sys.exit(0 if ({}) else 1)\" || {{ echo {} >&2; exit 1; }})",
        fix_prelude(script.check.as_str()),
        script.check,
        quote(&message)
    )
}

/// `gate`, then the gate of every fix in `fixes`.
pub fn with_fixes<'a>(gate: String, fixes: impl IntoIterator<Item = &'a Fix>) -> String {
    fixes
        .into_iter()
        .fold(gate, |gate, fix| format!("{gate} \\\n && {}", for_fix(fix)))
}

/// `text` in single quotes for the shell.
pub fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}
