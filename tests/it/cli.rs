//! The command line as git, cargo and docker users expect it: colour as they ask for it, man
//! pages, help that fits the terminal.

use crate::support::snapshot::forge_snapshot;
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
    forge_snapshot!(run.stderr, context.path(), @"
    error: invalid value 'sometimes' for '--color <WHEN>'
      [possible values: auto, always, never]

    For more information, try '--help'.
    ");
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
        "FORGE_RUN_TIMEOUT",
        "FORGE_REGISTRY_DEADLINE",
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
    forge_snapshot!(run.stderr, context.path(), @"
    error: forge has no command `deploy`, so no man page of it
    hint: `forge --help` lists the commands; `forge man` alone is forge(1)
    ");
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
    for (path, columns) in all.iter().flat_map(|path| [(path, "100"), (path, "200")]) {
        let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
        args.push("--help");
        // A wider terminal does not widen help past 100 columns, as cargo's.
        let help = context
            .forge_with(&args, &[("COLUMNS", columns)])
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

/// `forge -C DIR` from another folder, with relative paths.
fn forge_from(folder: &std::path::Path, args: &[&str]) -> crate::support::Run {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_forge"));
    command
        .args(args)
        .current_dir(folder)
        .env("NO_COLOR", "1")
        .env("COLUMNS", "100")
        .env_remove("SOURCE_DATE_EPOCH");
    crate::support::Run::of(&mut command)
}

/// `-C DIR` changes directory first, as git's does: `--out` and `keygen --out` write into DIR,
/// and status lines name the recipe's files as they are typed there; a folder that is not
/// there is refused by name.
#[test]
fn dash_c_changes_directory_first() {
    let outer = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(outer.path().join("offline")).unwrap();
    crate::support::images::copy_example(&outer.path().join("offline"));
    let run = forge_from(
        outer.path(),
        &["-C", "offline", "render", "--out", "Dockerfile.test"],
    );
    let run = run.expect_code(0);
    assert!(outer.path().join("offline/Dockerfile.test").is_file());
    assert!(!outer.path().join("Dockerfile.test").exists());
    forge_snapshot!(run.stderr, outer.path(), @"    Rendered Dockerfile.test (sha256:<digest>)");

    forge_from(outer.path(), &["-C", "offline", "keygen", "--out", "lab"]).expect_code(0);
    assert!(outer.path().join("offline/lab.key").is_file());
    assert!(!outer.path().join("lab.key").exists());

    let run = forge_from(outer.path(), &["-C", "offline", "build", "--dry-run"]).expect_code(0);
    forge_snapshot!(run.stderr, outer.path(), @"
     Rendered Dockerfile sha256:<digest>
      Patched patches/app onto overlays/app (scratch repository) (2 applied, 0 already there)
    Assembled context sha256:<digest> (6 entries, 6.5 KiB)
    ");
    assert!(
        !run.stderr.contains(&outer.path().display().to_string()),
        "{}",
        run.stderr
    );

    let run = forge_from(outer.path(), &["-C", "nowhere", "render"]).expect_code(2);
    forge_snapshot!(run.stderr, outer.path(), @"
    error: cannot change to the folder nowhere that -C names
    caused by: No such file or directory (os error 2)
    hint: name the recipe folder (the one holding pins.toml) after -C, relative to the working folder or absolute
    ");
    // The system's reason once, as the cause, not again in the message.
    assert_eq!(
        run.stderr.matches("No such file or directory").count(),
        1,
        "{}",
        run.stderr
    );
}

/// What bash offers after `words` (the last one being completed) in `folder`, through the
/// function `forge completions bash` registers, which asks the forge on PATH.
fn bash_completes(folder: &std::path::Path, words: &[&str]) -> Vec<String> {
    let binary = std::path::Path::new(env!("CARGO_BIN_EXE_forge"));
    let quoted: Vec<String> = words.iter().map(|word| format!("'{word}'")).collect();
    let script = format!(
        "source <(forge completions bash)\n\
         function=$(complete -p forge | sed 's/.* -F \\([^ ]*\\) .*/\\1/')\n\
         COMP_WORDS=({words}); COMP_CWORD={cword}; COMP_LINE='{line}'; COMP_POINT=${{#COMP_LINE}}\n\
         \"$function\" forge '{current}' '{previous}'\n\
         printf '%s\\n' \"${{COMPREPLY[@]}}\"\n",
        words = quoted.join(" "),
        cword = words.len() - 1,
        line = words.join(" "),
        current = words[words.len() - 1],
        previous = words[words.len() - 2],
    );
    let output = std::process::Command::new("bash")
        .args(["--noprofile", "--norc", "-c", &script])
        .current_dir(folder)
        .env(
            "PATH",
            format!(
                "{}:{}",
                binary.parent().unwrap().display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        )
        .output()
        .expect("bash runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| line.trim().to_owned())
        .filter(|line| !line.is_empty())
        .collect()
}

/// In a recipe folder, bash completes `forge pin bump` with the recipe's pins and `base`, and
/// `forge verify-digest` with the references forge.lock records, as well as commands and flags.
#[test]
fn bash_completes_pin_names_and_recorded_references() {
    let context = TestContext::default_recipe();
    let pins = bash_completes(context.path(), &["forge", "pin", "bump", ""]);
    for pin in [
        "base",
        "nccl",
        "cutlass-dsl",
        "deepgemm",
        "flashinfer",
        "tilelang",
    ] {
        assert!(
            pins.iter().any(|offered| offered == pin),
            "{pin} not in {pins:?}"
        );
    }
    let some = bash_completes(context.path(), &["forge", "pin", "bump", "fl"]);
    assert_eq!(some, ["flashinfer"]);
    let commands = bash_completes(context.path(), &["forge", "ver"]);
    assert_eq!(commands, ["verify-digest"]);

    // forge.lock of a build: its tags complete a reference.
    let Some((example, _)) = crate::support::images::built("completion") else {
        return;
    };
    let references = bash_completes(
        example.context.path(),
        &["forge", "verify-digest", "forge-"],
    );
    assert_eq!(
        references,
        [
            format!("{}:latest", example.repository),
            format!("{}:2026-07-08-offline", example.repository)
        ],
    );
}
