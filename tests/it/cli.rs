//! The command line as git, cargo and docker users expect it: colour as they ask for it, man
//! pages, help that fits the terminal.

use crate::support::{TestContext, assert_contains};

const PAINTED: &str = "\u{1b}[1;32m";

/// Flags, environment, and whether the status lines are painted.
type ColourCase<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)], bool);

/// `--color` wins; then `NO_COLOR` (only with a value) turns colour off and `CLICOLOR_FORCE`
/// turns it on into a pipe; by default a pipe gets no colour.
#[test]
fn colour_is_what_the_flag_and_the_environment_ask_for() {
    let context = TestContext::default_recipe();
    let render = |flags: &[&str], env: &[(&str, &str)]| {
        let mut args = flags.to_vec();
        args.extend(["render", "--out", "Dockerfile"]);
        context.forge_with(&args, env).expect_code(0).stderr
    };
    let cases: [ColourCase<'_>; 7] = [
        (&["--color", "always"], &[], true),
        (
            &["--color", "never"],
            &[("NO_COLOR", ""), ("CLICOLOR_FORCE", "1")],
            false,
        ),
        (&[], &[("NO_COLOR", ""), ("CLICOLOR_FORCE", "1")], true),
        (&[], &[("NO_COLOR", "1"), ("CLICOLOR_FORCE", "1")], false),
        (&[], &[("NO_COLOR", ""), ("CLICOLOR_FORCE", "0")], false),
        (&[], &[("NO_COLOR", "")], false),
        (&["--color", "auto"], &[("NO_COLOR", "")], false),
    ];
    for (flags, env, painted) in cases {
        std::fs::remove_file(context.path().join("Dockerfile")).ok();
        let stderr = render(flags, env);
        assert_contains(&stderr, "Rendered");
        assert_eq!(
            stderr.contains(PAINTED),
            painted,
            "{flags:?} {env:?}: {stderr:?}"
        );
    }
    let run = context
        .forge(&["--color", "sometimes", "render"])
        .expect_code(2);
    assert_contains(&run.stderr, "possible values: auto, always, never");
}

/// `groff -man` renders `roff` as `man` would, 100 columns wide, with its warnings.
fn rendered(roff: &str) -> (String, String) {
    use std::io::Write as _;
    let mut child = std::process::Command::new("groff")
        .args(["-man", "-Tutf8", "-ww", "-rLL=100n", "-P-cbou"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("groff runs");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(roff.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success());
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// `forge man build` is forge-build(1): its synopsis has the global flags (`-C DIR` first
/// among them), and it has the sections clap does not write, EXIT STATUS, ENVIRONMENT (every
/// variable forge reads) and FILES; groff renders it without a warning. Every command has a
/// page; a command forge lacks has none, and says so.
#[test]
fn every_command_has_a_man_page_with_exit_status_environment_and_files() {
    let context = TestContext::empty();
    let roff = context.forge(&["man", "build"]).expect_code(0).stdout;
    assert!(roff.contains(".TH forge-build 1"), "{roff}");
    let (text, warnings) = rendered(&roff);
    assert_eq!(warnings, "", "groff warns about forge-build(1)");
    // groff justifies lines; the words are what counts.
    let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert_contains(&words, "forge-build - Render, patch");
    let synopsis = &words[words.find("SYNOPSIS").unwrap()..words.find("DESCRIPTION").unwrap()];
    assert_contains(synopsis, "forge [-C DIR] build [OPTIONS]");
    for heading in ["OPTIONS", "EXIT STATUS", "ENVIRONMENT", "FILES"] {
        assert!(
            text.lines().any(|line| line == heading),
            "no {heading} section in forge-build(1):\n{text}"
        );
    }
    for variable in [
        "FORGE_SIGNING_KEY",
        "FORGE_REGISTRY_PASSWORD",
        "FORGE_IDLE_TIMEOUT",
        "DOCKER_HOST",
        "SOURCE_DATE_EPOCH",
        "NO_COLOR",
    ] {
        assert_contains(&words, variable);
    }
    assert_contains(&words, "forge.lock.intent");
    assert!(text.lines().all(|line| line.chars().count() <= 100));

    for command in [&["pin", "bump"][..], &["verify-digest"], &["patch"], &[]] {
        let mut args = vec!["man"];
        args.extend_from_slice(command);
        let roff = context.forge(&args).expect_code(0).stdout;
        let name = ["forge"]
            .iter()
            .chain(command)
            .copied()
            .collect::<Vec<_>>()
            .join("-");
        assert!(roff.contains(&format!(".TH {name} 1")), "{roff}");
        assert_eq!(rendered(&roff).1, "", "groff warns about {name}(1)");
    }
    let run = context.forge(&["man", "deploy"]).expect_code(2);
    assert_contains(&run.stderr, "forge has no command `deploy`");
}

/// Every command's path, found from `forge --help` and each command's own help.
fn commands(context: &TestContext) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    let mut queue = vec![Vec::<String>::new()];
    while let Some(path) = queue.pop() {
        let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
        args.push("--help");
        let help = context.forge(&args).expect_code(0).stdout;
        let listed = (help.lines())
            .skip_while(|line| *line != "Commands:")
            .skip(1)
            .take_while(|line| line.starts_with("  "))
            .filter(|line| line.starts_with("  ") && !line.starts_with("   "))
            .filter_map(|line| line.split_whitespace().next())
            .filter(|name| *name != "help");
        for name in listed {
            let mut next = path.clone();
            next.push(name.to_owned());
            queue.push(next);
        }
        found.push(path);
    }
    found
}

/// At `COLUMNS=100` the help of every command fits 100 columns, wrapped as cargo wraps it, and
/// the global flags stand apart under their own heading (after the command's own), as do
/// build's flags for publishing.
#[test]
fn every_help_fits_100_columns_with_the_global_flags_under_their_own_heading() {
    let context = TestContext::empty();
    let all = commands(&context);
    assert!(all.len() > 15, "{all:?}");
    for path in &all {
        let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
        args.push("--help");
        let help = context
            .forge_with(&args, &[("COLUMNS", "100")])
            .expect_code(0)
            .stdout;
        for line in help.lines() {
            assert!(
                line.chars().count() <= 100,
                "forge {}: a line of {} columns:\n{line}",
                path.join(" "),
                line.chars().count()
            );
        }
        let global = help
            .find("\nGlobal options:\n")
            .unwrap_or_else(|| panic!("forge {} --help:\n{help}", path.join(" ")));
        assert!(help[global..].contains("  -C <DIR>"), "{help}");
        assert!(!help[..global].contains("  -C <DIR>"), "{help}");
    }
    let build = context.forge_with(&["build", "--help"], &[("COLUMNS", "100")]);
    for heading in ["Publishing:", "Build cache:", "Platforms and daemons:"] {
        assert!(
            build.stdout.lines().any(|line| line == heading),
            "{}",
            build.stdout
        );
    }
}
