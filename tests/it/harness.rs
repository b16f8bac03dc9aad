//! The suite's own promises. To the daemon it shares: what a test process makes there has a
//! name of that process's own and goes when the process ends, so two suites, or a suite and a
//! user, never re-import or remove each other's images. To its reader: no file past its size.

use std::process::Command;
use std::time::{Duration, Instant};

use crate::support::images::{EXAMPLE_BASE, base_image, docker_ready, image_id};

/// Run by `a_test_process_makes_its_base_under_its_own_name_and_removes_it_when_it_ends` as a
/// process of its own: makes that process's base and says its name.
#[test]
#[ignore = "run by another test as a process of its own"]
fn makes_its_base_and_says_its_name() {
    if !docker_ready() {
        return;
    }
    assert!(image_id(base_image()).is_some(), "{} made", base_image());
    use std::io::Write as _;
    writeln!(std::io::stdout(), "BASE {}", base_image()).expect("stdout");
}

#[test]
fn a_test_process_makes_its_base_under_its_own_name_and_removes_it_when_it_ends() {
    if !docker_ready() {
        return;
    }
    assert_ne!(base_image(), EXAMPLE_BASE);
    assert_eq!(base_image().len(), EXAMPLE_BASE.len());
    let output = Command::new(std::env::current_exe().expect("the test binary"))
        .args([
            "--exact",
            "harness::makes_its_base_and_says_its_name",
            "--ignored",
            "--nocapture",
        ])
        .output()
        .expect("the test binary runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    let name = stdout
        .lines()
        .find_map(|line| line.strip_prefix("BASE "))
        .unwrap_or_else(|| panic!("the child names its base:\n{stdout}"));
    assert_ne!(name, base_image(), "each process has a base of its own");
    assert_ne!(name, EXAMPLE_BASE);
    let deadline = Instant::now() + Duration::from_secs(20);
    while image_id(name).is_some() {
        assert!(
            Instant::now() < deadline,
            "{name} is still on the daemon 20 s after its process ended"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(
        image_id(base_image()).is_some(),
        "this process's base stays"
    );
}

/// No source file over 950 lines and no test file over 1,500: a file a reader can hold. (No
/// function over 80 lines, tests included, is clippy's `too_many_lines`, denied in Cargo.toml.)
#[test]
fn every_file_keeps_to_its_size() {
    let root = crate::support::repository_root();
    let mut over = Vec::new();
    for (folder, limit) in [("src", 950), ("tests", 1500)] {
        for path in crate::support::rust_files(&root.join(folder)) {
            let lines = std::fs::read_to_string(&path).unwrap().lines().count();
            if lines > limit {
                over.push(format!(
                    "{}: {lines} lines (at most {limit})",
                    path.strip_prefix(&root).unwrap().display()
                ));
            }
        }
    }
    assert!(
        over.is_empty(),
        "files past their size:\n{}",
        over.join("\n")
    );
}

/// A pin kind is one capability (`src/pins/kind/`): no code outside the pins room matches on a
/// pin's kind, so adding a kind touches its own file and its registration only.
#[test]
fn only_the_pins_room_matches_on_a_pins_kind() {
    let root = crate::support::repository_root();
    let kinds = ["Python", "Wheels", "Git", "Assert"];
    let mut matches = Vec::new();
    for path in crate::support::rust_files(&root.join("src")) {
        if path.starts_with(root.join("src/pins")) {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for (number, line) in text.lines().enumerate() {
            let names_a_kind = kinds.iter().any(|kind| {
                line.contains(&format!("PinKind::{kind}"))
                    || line.contains(&format!("Source::{kind}"))
            });
            if names_a_kind {
                matches.push(format!(
                    "{}:{}: {}",
                    path.strip_prefix(&root).unwrap().display(),
                    number + 1,
                    line.trim()
                ));
            }
        }
    }
    assert!(
        matches.is_empty(),
        "a pin's kind matched outside src/pins (ask `Kind` instead):\n{}",
        matches.join("\n")
    );
}
