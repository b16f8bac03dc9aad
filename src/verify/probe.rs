//! Content checks: the pins and overlay files of a recipe in, a shell script that reads back
//! what landed in the image out; then that script's output in, one check per pin and file out.
//!
//! The script needs only a POSIX shell and `sha256sum` (busybox has both); the Python pins are
//! read with `importlib.metadata` and the NCCL assertion through `ncclGetVersion`, each only when
//! the recipe has such pins. Git pins are read from the revision files the build writes
//! (`pins::gate::REVISIONS_DIR`). Every value spliced into the script has passed its grammar
//! in `types`; file paths are single-quoted.

use std::collections::BTreeMap;

use super::{Check, Kind, MISSING, record};

pub use crate::context::overlays::{ExpectedFile, overlay_files};
use crate::pins::gate;
use crate::pins::{Fix, Pin, Probe, Script, Shown};

/// What a fix row expects, and finds when the check holds.
const IN_PLACE: &str = "in place";

/// What the probe prints, and a row then finds, when the image has no `python3`.
const NO_PYTHON: &str = "python3 missing";

/// The kinds of line the probe prints: `KIND KEY VALUE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Line {
    /// `python DISTRIBUTION VERSION`.
    Python,
    /// `revision PIN COMMIT` (a git pin's recorded revision file).
    Revision,
    /// `assert PIN VERSION` (what the base reports).
    Assert,
    /// `fix NAME ok|missing`.
    Fix,
    /// `script FILE ok|missing` (a patch script's check).
    Script,
}

impl Line {
    /// The kind a line's first word names, if it is one of the probe's.
    fn parse(word: &str) -> Option<Line> {
        Some(match word {
            "python" => Line::Python,
            "revision" => Line::Revision,
            "assert" => Line::Assert,
            "fix" => Line::Fix,
            "script" => Line::Script,
            _ => return None,
        })
    }
}

/// What a pin must read back as.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Wanted {
    /// The probe line it reads back from.
    kind: Line,
    /// The key the probe prints (a distribution name, or the pin name).
    key: String,
    /// The pin it belongs to.
    pin: String,
    /// The value it must have (a git revision may be a prefix of what is found).
    value: String,
}

fn wanted<'a>(pins: impl IntoIterator<Item = &'a Pin>) -> Vec<Wanted> {
    let mut wanted = Vec::new();
    for pin in pins {
        let name = pin.name.to_string();
        for shown in pin.shown() {
            let (kind, key, value) = match shown {
                Shown::Distribution { package, version } => (Line::Python, package, version),
                Shown::Revision { rev } => (Line::Revision, name.clone(), rev),
                Shown::Reported { version, .. } => (Line::Assert, name.clone(), version),
            };
            wanted.push(Wanted {
                kind,
                key,
                pin: name.clone(),
                value,
            });
        }
    }
    wanted
}

/// The command that reads back every pin and file and runs every fix's and patch script's
/// check: `/bin/sh -c SCRIPT`.
pub fn command<'a>(
    pins: impl IntoIterator<Item = &'a Pin>,
    files: &[ExpectedFile],
    fixes: &[Fix],
    scripts: &[Script],
) -> Vec<String> {
    let pins: Vec<&Pin> = pins.into_iter().collect();
    let mut script = String::new();
    if !files.is_empty() {
        let quoted: Vec<String> = files.iter().map(|file| gate::quote(&file.path)).collect();
        script.push_str(&format!("sha256sum {} 2>/dev/null\n", quoted.join(" ")));
    }
    for pin in &pins {
        if pin
            .shown()
            .iter()
            .any(|shown| matches!(shown, Shown::Revision { .. }))
        {
            script.push_str(&format!(
                "printf 'revision %s %s\\n' {} \"$(head -n 1 {} 2>/dev/null)\"\n",
                pin.name,
                gate::quote(&gate::revision_file(&pin.name))
            ));
        }
    }
    let packages: Vec<String> = wanted(pins.iter().copied())
        .into_iter()
        .filter(|wanted| wanted.kind == Line::Python)
        .map(|wanted| format!("'{}'", wanted.key))
        .collect();
    // Every installed distribution: what the base supplies to the pins' requirements.
    let mut python = vec![
        "import importlib.metadata as m\nfor d in m.distributions():\n    print('installed', d.metadata['Name'], d.version)".to_owned(),
        // The C library and Python the image runs: which wheel tags load there.
        "import platform, sys\nlibc, version = platform.libc_ver()\nprint('runtime', libc or '-', version or '-', '%d.%d' % sys.version_info[:2])".to_owned(),
    ];
    if !packages.is_empty() {
        python.push(format!(
            "import importlib.metadata as m\nfor p in [{}]:\n    try: print('python', p, m.version(p))\n    except Exception: print('python', p, '-')",
            packages.join(", ")
        ));
    }
    for pin in &pins {
        let nccl = |shown: &Shown| {
            matches!(
                shown,
                Shown::Reported {
                    probe: Probe::Nccl,
                    ..
                }
            )
        };
        if pin.shown().iter().any(nccl) {
            // torch loads the NCCL it was built against; the gate asks the same library.
            python.push(format!(
                "import ctypes\ntry:\n    import torch\nexcept Exception:\n    pass\ntry:\n    n = ctypes.c_int(); ctypes.CDLL('libnccl.so.2').ncclGetVersion(ctypes.byref(n))\n    print('assert', '{name}', '{{}}.{{}}.{{}}'.format(n.value // 10000, n.value // 100 % 100, n.value % 100))\nexcept Exception:\n    print('assert', '{name}', '-')",
                name = pin.name
            ));
        }
    }
    python.extend(record::script(pins.iter().copied()));
    python.extend(
        fixes
            .iter()
            .map(|fix| check_probe("fix", fix.name.as_str(), fix.check.as_str())),
    );
    python.extend(
        scripts
            .iter()
            .map(|script| check_probe("script", script.file.as_str(), script.check.as_str())),
    );
    {
        script.push_str(&format!(
            "if command -v python3 >/dev/null 2>&1; then python3 -c \"{}\"; else echo '{NO_PYTHON}'; fi\n",
            python.join("\n")
        ));
    }
    vec!["/bin/sh".to_owned(), "-c".to_owned(), script]
}

/// The lines that print `KIND KEY ok`, or `KIND KEY missing` when `check` is false or raises.
/// The working folder leaves the module path first, as `python3 -P` leaves it out.
fn check_probe(kind: &str, key: &str, check: &str) -> String {
    format!(
        "import sys\nif sys.path and sys.path[0] in ('', '.'):\n    sys.path.pop(0)\ntry:\n    {}\n    ok = bool({})\nexcept Exception:\n    ok = False\nprint('{kind}', '{key}', 'ok' if ok else 'missing')",
        gate::fix_prelude(check),
        check,
    )
}

/// The distributions installed in the image (PEP 503 normalized name to version), from the
/// output of `command`.
pub fn installed(output: &str) -> BTreeMap<String, String> {
    output
        .lines()
        .filter_map(|line| line.strip_prefix("installed "))
        .filter_map(|rest| rest.rsplit_once(' '))
        .filter_map(|(name, version)| {
            let name: crate::types::python::PackageName = name.trim().parse().ok()?;
            Some((name.normalized(), version.trim().to_owned()))
        })
        .collect()
}

/// The C library and Python an image runs, from the output of `command`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Runtime {
    /// The glibc version (`2.39`); `None` on another C library, or without Python to ask.
    pub glibc: Option<String>,
    /// The Python version (`3.12`).
    pub python: Option<String>,
}

/// The image's runtime, from the output of `command`.
pub fn runtime(output: &str) -> Runtime {
    let Some(line) = output
        .lines()
        .find_map(|line| line.strip_prefix("runtime "))
    else {
        return Runtime::default();
    };
    let mut words = line.split_whitespace();
    let (libc, version, python) = (words.next(), words.next(), words.next());
    Runtime {
        glibc: (libc == Some("glibc"))
            .then(|| version.map(ToOwned::to_owned))
            .flatten(),
        python: python.map(ToOwned::to_owned),
    }
}

/// One check per pin value, file, fix and patch script, from the output of `command`.
pub fn checks<'a>(
    pins: impl IntoIterator<Item = &'a Pin>,
    files: &[ExpectedFile],
    fixes: &[Fix],
    scripts: &[Script],
    output: &str,
) -> Vec<Check> {
    let pins: Vec<&Pin> = pins.into_iter().collect();
    let mut found_files: BTreeMap<&str, String> = BTreeMap::new();
    let mut found: BTreeMap<(Line, &str), &str> = BTreeMap::new();
    let no_python = output.lines().any(|line| line == NO_PYTHON);
    for line in output.lines() {
        if let Some((hex, path)) = line.split_once("  ")
            && hex.len() == 64
            && hex.chars().all(|c| c.is_ascii_hexdigit())
        {
            found_files.insert(path, format!("sha256:{hex}"));
            continue;
        }
        let mut parts = line.splitn(3, ' ');
        if let (Some(kind), Some(key)) = (parts.next().and_then(Line::parse), parts.next()) {
            found.insert((kind, key), parts.next().unwrap_or("").trim());
        }
    }
    let mut checks = Vec::new();
    for wanted in wanted(pins.iter().copied()) {
        let actual = match found.get(&(wanted.kind, wanted.key.as_str())) {
            Some(&"-") | Some(&"") => MISSING.to_owned(),
            Some(value) => (*value).to_owned(),
            None if wanted.kind != Line::Revision && no_python => NO_PYTHON.to_owned(),
            None => MISSING.to_owned(),
        };
        let ok = match wanted.kind {
            // A short revision names the commit it is a prefix of.
            Line::Revision => actual != MISSING && actual.starts_with(&wanted.value),
            _ => actual == wanted.value,
        };
        let subject = if wanted.key == wanted.pin {
            wanted.pin.clone()
        } else {
            format!("{} ({})", wanted.pin, wanted.key)
        };
        checks.push(Check::new(Kind::Pin, subject, wanted.value, actual, ok));
    }
    let overlaid = files.iter().map(|file| file.path.as_str()).collect();
    checks.extend(record::checks(
        pins.iter().copied(),
        &overlaid,
        output,
        no_python.then_some(NO_PYTHON),
    ));
    // A check the probe ran: `in place` when it held, else what is missing.
    let ran = |kind: Kind, line: Line, key: &str, missing: String| {
        let actual = match found.get(&(line, key)) {
            Some(&"ok") => IN_PLACE.to_owned(),
            Some(_) => missing,
            None if no_python => NO_PYTHON.to_owned(),
            None => MISSING.to_owned(),
        };
        let ok = actual == IN_PLACE;
        Check::new(kind, key.to_owned(), IN_PLACE, actual, ok)
    };
    for fix in fixes {
        let missing = format!("missing: {}", fix.symptom);
        checks.push(ran(Kind::Fix, Line::Fix, fix.name.as_str(), missing));
    }
    for script in scripts {
        let missing = "missing: its check is false".to_owned();
        checks.push(ran(
            Kind::Script,
            Line::Script,
            script.file.as_str(),
            missing,
        ));
    }
    for file in files {
        checks.push(Check::compare(
            Kind::File,
            file.path.clone(),
            file.digest.as_str(),
            found_files
                .get(file.path.as_str())
                .map_or(MISSING, String::as_str),
        ));
    }
    checks
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn pins(text: &str) -> crate::pins::Pins {
        let base = "[image]\nrepository = \"r\"\nplatform = \"linux/amd64\"\n[image.tags]\nmoving = [\"latest\"]\n[base]\nimage = \"busybox:1\"\n";
        crate::pins::parse(Path::new("pins.toml"), &format!("{base}{text}")).unwrap()
    }

    #[test]
    fn each_pin_reads_back_and_a_missing_one_is_named() {
        let pins = pins(
            "[pins.tool]\nkind = \"git\"\nurl = \"https://example.org/tool.git\"\nrev = \"0123456789abcdef0123456789abcdef01234567\"\nmodule = \"tool\"\n\
             [pins.lib]\nkind = \"python\"\npackage = \"lib-py\"\nmodule = \"lib\"\nversion = \"1.2.3\"\n",
        );
        let files = [ExpectedFile {
            path: "/opt/app/a b.txt".to_owned(),
            digest: format!("sha256:{}", "a".repeat(64)).parse().unwrap(),
        }];
        let command = command(pins.pins.values(), &files, &[], &[]);
        assert!(
            command[2].contains("sha256sum '/opt/app/a b.txt'"),
            "{}",
            command[2]
        );
        assert!(
            command[2].contains("/opt/forge/revisions/tool"),
            "{}",
            command[2]
        );
        assert!(command[2].contains("for p in ['lib-py']"), "{}", command[2]);

        let output = format!(
            "{}  /opt/app/a b.txt\nrevision tool 0123456789abcdef0123456789abcdef01234567\npython lib-py 1.2.4\n",
            "a".repeat(64)
        );
        let checks = checks(pins.pins.values(), &files, &[], &[], &output);
        let row = |subject: &str| {
            checks
                .iter()
                .find(|check| check.subject == subject)
                .unwrap()
        };
        assert!(row("tool").ok);
        assert!(row("/opt/app/a b.txt").ok);
        let lib = row("lib (lib-py)");
        assert!(!lib.ok);
        assert_eq!(
            (lib.expected.as_str(), lib.actual.as_str()),
            ("1.2.3", "1.2.4")
        );

        let checks = super::checks(
            pins.pins.values(),
            &files,
            &[],
            &[],
            "python3 missing\nrevision tool \n",
        );
        assert!(checks.iter().all(|check| !check.ok), "{checks:?}");
        // Pins come in name order: lib, then tool.
        assert_eq!(checks[0].actual, "python3 missing");
        assert_eq!(checks[1].actual, MISSING);
    }
}
