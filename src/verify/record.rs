//! What pip left of each pinned wheel in the image: which of the pinned files was installed, and
//! whether the installed files are still the ones it wrote.
//!
//! pip checks a wheel's sha256 while it installs (the render's `--require-hashes`); once the
//! file is unpacked the wheel itself is gone, and what stands for it is the distribution's
//! `dist-info`: `WHEEL` lists the tags of the file that was installed (one `Tag:` line per tag of
//! its name), and `RECORD` the sha256 of every file pip wrote. So the probe reads both for every
//! distribution a pin installs, and the checks ask:
//!
//! - **wheel**: the installed tags are exactly those of one file pins.toml records for the pin
//!   (the manylinux_2_28 file and not the manylinux2014 one, say), and
//! - **RECORD**: every file `RECORD` lists with a hash still has that hash. A file an overlay of
//!   the recipe writes is left to that overlay's own row.
//!
//! For each distribution it finds, the probe prints `wheel PACKAGE TAG...` (`-` without a `WHEEL`), `record PACKAGE CHECKED
//! CHANGED` (`record PACKAGE -` without a `RECORD`), then `changed PACKAGE PATH` for at most
//! `LISTED` changed files.

use std::collections::{BTreeMap, BTreeSet};

use super::{Check, Kind, MISSING};
use crate::package_index::wheel::expanded_tags;
use crate::pins::{Installed, Pin};

/// How many changed paths the probe prints per distribution.
const LISTED: usize = 200;

/// How many changed paths a row names before it says how many more there are.
const NAMED: usize = 3;

/// What the RECORD row expects, and finds when every file holds.
const AS_RECORDED: &str = "every file as RECORD lists";

/// One distribution a pin installs, and the wheel files it may have come from.
struct Distribution {
    /// The pin's name.
    pin: String,
    /// The distribution, as pins.toml names it (the probe's key).
    package: String,
    /// The file names pins.toml records for it (empty when it records none).
    files: Vec<String>,
}

fn distributions<'a>(pins: impl IntoIterator<Item = &'a Pin>) -> Vec<Distribution> {
    let mut found = Vec::new();
    for pin in pins {
        for installed in pin.installed() {
            let (package, files) = match installed {
                Installed::Indexed { package, files, .. } => (
                    package,
                    files.iter().map(|file| file.file.to_string()).collect(),
                ),
                Installed::Downloaded { package, file } => (package, vec![file]),
            };
            found.push(Distribution {
                pin: pin.name.to_string(),
                package: package.to_string(),
                files,
            });
        }
    }
    found
}

/// The Python lines that print what `WHEEL` and `RECORD` say of each distribution the pins
/// install, or `None` when they install none. Written for `python3 -c "..."`: no double quote,
/// dollar, backquote or backslash.
pub fn script<'a>(pins: impl IntoIterator<Item = &'a Pin>) -> Option<String> {
    let packages: Vec<String> = distributions(pins)
        .iter()
        .map(|distribution| format!("'{}'", distribution.package))
        .collect();
    if packages.is_empty() {
        return None;
    }
    Some(format!(
        "import importlib.metadata as m, hashlib, base64, os
for p in [{packages}]:
    try:
        d = m.distribution(p)
    except Exception:
        continue
    w = d.read_text('WHEEL') or ''
    tags = sorted({{l.split(':', 1)[1].strip() for l in w.splitlines() if l.startswith('Tag:')}})
    print('wheel', p, ' '.join(tags) or '-')
    if d.files is None:
        print('record', p, '-')
        continue
    n, bad = 0, []
    for f in d.files:
        if not f.hash:
            continue
        n += 1
        path = os.path.normpath(str(f.locate()))
        h = hashlib.new(f.hash.mode)
        try:
            with open(path, 'rb') as s:
                for b in iter(lambda: s.read(1 << 20), b''):
                    h.update(b)
            same = base64.urlsafe_b64encode(h.digest()).rstrip(b'=').decode() == f.hash.value
        except Exception:
            same = False
        if not same:
            bad.append(path)
    print('record', p, n, len(bad))
    for path in bad[:{LISTED}]:
        print('changed', p, path)",
        packages = packages.join(", ")
    ))
}

/// What the probe printed of one distribution.
#[derive(Debug, Default)]
struct Found<'a> {
    /// The installed tags; `None` without a `wheel` line, empty for `-`.
    tags: Option<BTreeSet<&'a str>>,
    /// Files checked and changed; `None` without a `record` line or a `RECORD`.
    record: Option<(usize, usize)>,
    /// A `record` line was printed.
    recorded: bool,
    /// The changed paths printed.
    changed: Vec<&'a str>,
}

fn parse(output: &str) -> BTreeMap<&str, Found<'_>> {
    let mut found: BTreeMap<&str, Found<'_>> = BTreeMap::new();
    for line in output.lines() {
        let mut words = line.splitn(3, ' ');
        let (Some(kind), Some(package), rest) = (words.next(), words.next(), words.next()) else {
            continue;
        };
        if !matches!(kind, "wheel" | "record" | "changed") {
            continue;
        }
        let rest = rest.unwrap_or("").trim();
        let distribution = found.entry(package).or_default();
        match kind {
            "wheel" => {
                distribution.tags =
                    Some(rest.split_whitespace().filter(|tag| *tag != "-").collect());
            }
            "record" => {
                distribution.recorded = true;
                distribution.record = rest.split_once(' ').and_then(|(checked, changed)| {
                    Some((checked.parse().ok()?, changed.parse().ok()?))
                });
            }
            _ => distribution.changed.push(rest),
        }
    }
    found
}

/// Two rows per distribution the pins install: which pinned wheel file it came from, and
/// whether its files are as `RECORD` lists; `overlaid` are the image paths the recipe's overlays
/// write, whose changes are theirs. `no_python` is what a row finds when the image has no
/// `python3`.
pub fn checks<'a>(
    pins: impl IntoIterator<Item = &'a Pin>,
    overlaid: &BTreeSet<&str>,
    output: &str,
    no_python: Option<&str>,
) -> Vec<Check> {
    let found = parse(output);
    let mut checks = Vec::new();
    for distribution in distributions(pins) {
        let subject = format!("{} ({})", distribution.pin, distribution.package);
        let of = found.get(distribution.package.as_str());
        let absent = no_python.unwrap_or(MISSING);
        checks.push(wheel_row(&distribution, &subject, of, absent));
        checks.push(record_row(&subject, of, overlaid, absent));
    }
    checks
}

fn wheel_row(
    distribution: &Distribution,
    subject: &str,
    found: Option<&Found<'_>>,
    absent: &str,
) -> Check {
    let subject = format!("{subject} wheel");
    let expected = match distribution.files.as_slice() {
        [] => "a wheel".to_owned(),
        [file] => file.clone(),
        files => format!("one of {}", files.join(", ")),
    };
    let Some(tags) = found.and_then(|found| found.tags.as_ref()) else {
        return Check::new(Kind::Pin, subject, expected, absent, false);
    };
    if tags.is_empty() {
        return Check::new(Kind::Pin, subject, expected, "no WHEEL", false);
    }
    let matched = distribution.files.iter().find(|file| {
        expanded_tags(file)
            .is_some_and(|wanted| wanted.iter().map(String::as_str).eq(tags.iter().copied()))
    });
    match matched {
        Some(file) => Check::new(Kind::Pin, subject, file.clone(), file.clone(), true),
        None => {
            let tags = tags.iter().copied().collect::<Vec<_>>().join(" ");
            // With nothing recorded to compare with, the tags are what there is to say.
            let ok = distribution.files.is_empty();
            Check::new(Kind::Pin, subject, expected, format!("tags {tags}"), ok)
        }
    }
}

fn record_row(
    subject: &str,
    found: Option<&Found<'_>>,
    overlaid: &BTreeSet<&str>,
    absent: &str,
) -> Check {
    let subject = format!("{subject} RECORD");
    let Some(found) = found.filter(|found| found.recorded) else {
        return Check::new(Kind::Pin, subject, AS_RECORDED, absent, false);
    };
    let Some((checked, changed)) = found.record else {
        return Check::new(Kind::Pin, subject, AS_RECORDED, "no RECORD", false);
    };
    // A file an overlay writes is that overlay's row.
    let not_overlaid: Vec<&str> = found
        .changed
        .iter()
        .copied()
        .filter(|path| !overlaid.contains(path))
        .collect();
    let overlays = found.changed.len() - not_overlaid.len();
    let changed_here = changed.saturating_sub(overlays);
    if changed_here == 0 {
        return Check::new(Kind::Pin, subject, AS_RECORDED, AS_RECORDED, true);
    }
    let paths = &not_overlaid[..not_overlaid.len().min(NAMED)];
    let more = changed_here.saturating_sub(paths.len());
    let more = if more > 0 {
        format!(" and {more} more")
    } else {
        String::new()
    };
    Check::new(
        Kind::Pin,
        subject,
        AS_RECORDED,
        format!(
            "{changed_here} of {checked} changed since pip installed them: {}{more}",
            paths.join(", ")
        ),
        false,
    )
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    const MANYLINUX2014: &str = "tilelang-0.1.11-cp38-abi3-manylinux2014_aarch64.whl";
    const MANYLINUX_2_28: &str = "tilelang-0.1.11-cp38-abi3-manylinux_2_28_aarch64.whl";

    fn pins() -> crate::pins::Pins {
        let text = format!(
            "[image]\nrepository = \"r\"\nplatform = \"linux/arm64\"\n[image.tags]\nmoving = [\"latest\"]\n\
             [base]\nimage = \"busybox:1\"\n\
             [pins.tilelang]\nkind = \"python\"\npackage = \"tilelang\"\nmodule = \"tilelang\"\nversion = \"0.1.11\"\n\
             files = [{{ file = \"{MANYLINUX2014}\", sha256 = \"{a}\" }}, {{ file = \"{MANYLINUX_2_28}\", sha256 = \"{b}\" }}]\n\
             [pins.base-only]\nkind = \"python\"\npackage = \"torch\"\nmodule = \"torch\"\nversion = \"2.9.0\"\ninstall = false\n",
            a = "a".repeat(64),
            b = "b".repeat(64),
        );
        crate::pins::parse(Path::new("pins.toml"), &text).unwrap()
    }

    fn rows(output: &str, overlaid: &[&str]) -> Vec<Check> {
        let overlaid = overlaid.iter().copied().collect();
        checks(pins().pins.values(), &overlaid, output, None)
    }

    #[test]
    fn the_probe_reads_only_what_the_pins_install() {
        let script = script(pins().pins.values()).unwrap();
        assert!(script.contains("for p in ['tilelang']:"), "{script}");
        for forbidden in ['"', '$', '`', '\\'] {
            assert!(!script.contains(forbidden), "{forbidden} in {script}");
        }
        let pins = pins();
        assert_eq!(script_of(&pins, "base-only"), None);
    }

    fn script_of(pins: &crate::pins::Pins, name: &str) -> Option<String> {
        script(pins.pins.values().filter(|pin| pin.name.as_str() == name))
    }

    #[test]
    fn the_installed_tags_name_the_pinned_file_and_an_intact_record_holds() {
        let rows = rows(
            "wheel tilelang cp38-abi3-manylinux_2_28_aarch64\nrecord tilelang 412 0\n",
            &[],
        );
        assert_eq!(rows.len(), 2, "{rows:?}");
        assert_eq!(rows[0].subject, "tilelang (tilelang) wheel");
        assert_eq!(
            (
                rows[0].expected.as_str(),
                rows[0].actual.as_str(),
                rows[0].ok
            ),
            (MANYLINUX_2_28, MANYLINUX_2_28, true)
        );
        assert_eq!(rows[1].subject, "tilelang (tilelang) RECORD");
        assert_eq!(
            (
                rows[1].expected.as_str(),
                rows[1].actual.as_str(),
                rows[1].ok
            ),
            (AS_RECORDED, AS_RECORDED, true)
        );
    }

    #[test]
    fn another_file_and_a_changed_file_are_named() {
        let rows = rows(
            "wheel tilelang cp312-cp312-linux_aarch64\nrecord tilelang 412 5\n\
             changed tilelang /site/tilelang/a.py\nchanged tilelang /site/tilelang/b c.py\n\
             changed tilelang /site/tilelang/overlaid.py\nchanged tilelang /site/tilelang/d.py\n\
             changed tilelang /site/tilelang/e.py\n",
            &["/site/tilelang/overlaid.py"],
        );
        assert!(!rows[0].ok);
        assert_eq!(
            rows[0].expected,
            format!("one of {MANYLINUX2014}, {MANYLINUX_2_28}")
        );
        assert_eq!(rows[0].actual, "tags cp312-cp312-linux_aarch64");
        assert!(!rows[1].ok);
        assert_eq!(
            rows[1].actual,
            "4 of 412 changed since pip installed them: /site/tilelang/a.py, /site/tilelang/b c.py, /site/tilelang/d.py and 1 more"
        );
    }

    #[test]
    fn a_file_only_an_overlay_changed_is_the_overlay_s_row() {
        let rows = rows(
            "wheel tilelang cp38-abi3-manylinux2014_aarch64\nrecord tilelang 3 1\n\
             changed tilelang /site/tilelang/overlaid.py\n",
            &["/site/tilelang/overlaid.py"],
        );
        assert!(rows.iter().all(|row| row.ok), "{rows:?}");
        assert_eq!(rows[0].actual, MANYLINUX2014);
    }

    #[test]
    fn a_distribution_not_there_or_without_its_dist_info_files_fails() {
        let rows = rows("", &[]);
        assert!(
            rows.iter().all(|row| !row.ok && row.actual == MISSING),
            "{rows:?}"
        );
        let rows = self::rows("wheel tilelang -\nrecord tilelang -\n", &[]);
        assert_eq!(rows[0].actual, "no WHEEL");
        assert_eq!(rows[1].actual, "no RECORD");
        assert!(rows.iter().all(|row| !row.ok));
        let missing = "python3 missing";
        let rows = checks(pins().pins.values(), &BTreeSet::new(), "", Some(missing));
        assert!(rows.iter().all(|row| row.actual == missing), "{rows:?}");
    }
}
