//! forge's man pages: one per command (`forge man build` is forge-build(1)), from the command
//! line's own definitions (clap_mangen) plus what clap does not know: EXIT STATUS, ENVIRONMENT
//! (every variable forge reads) and FILES.

/// Every environment variable forge reads, with what it does.
pub const ENVIRONMENT: &[(&str, &str)] = &[
    (
        "FORGE_SIGNING_KEY",
        "the signing key's PEM text, when --sign-key is not given (build --sign, sign-blob)",
    ),
    (
        "COSIGN_PASSWORD",
        "the password of a signing key cosign generate-key-pair wrote, as cosign reads it (unset: the empty password)",
    ),
    (
        "FORGE_SIGNING_PASSWORD",
        "the password of a signing key in encrypted PKCS#8 (ENCRYPTED PRIVATE KEY)",
    ),
    (
        "GITHUB_ACTIONS, GITHUB_SERVER_URL, GITHUB_REPOSITORY, GITHUB_WORKFLOW_REF, GITHUB_REF, GITHUB_SHA, GITHUB_RUN_ID, GITHUB_RUN_ATTEMPT, GITHUB_EVENT_NAME, GITHUB_REPOSITORY_ID, GITHUB_REPOSITORY_OWNER_ID, RUNNER_ENVIRONMENT",
        "in a GitHub Actions run, the workflow, its ref, the run and the commit build --sign's provenance names",
    ),
    (
        "FORGE_REGISTRY_USER, FORGE_REGISTRY_PASSWORD",
        "registry credentials, sent to the recipe's own registry only (or to the one host FORGE_REGISTRY_HOST names)",
    ),
    (
        "FORGE_REGISTRY_HOST",
        "the one registry host FORGE_REGISTRY_USER and FORGE_REGISTRY_PASSWORD are for",
    ),
    (
        "FORGE_INDEX_URL",
        "a package index mirror that replaces every index the recipe names (pin outdated, pin bump; as --index-url)",
    ),
    (
        "FORGE_COMMITTER_NAME, FORGE_COMMITTER_EMAIL",
        "the committer of the commits patch apply makes (else the target repository's user.name and user.email)",
    ),
    (
        "FORGE_CACHE_DIR",
        "where git pins' mirrors and package metadata are cached (else $XDG_CACHE_HOME/forge, else ~/.cache/forge)",
    ),
    (
        "FORGE_IDLE_TIMEOUT",
        "seconds a daemon's pull or push, a daemon's answer (an inspect, a container's output), or a download (its answer's head included) may go without progress before forge gives up on it (default 60)",
    ),
    (
        "FORGE_RUN_TIMEOUT",
        "seconds the container verify-digest --contents runs to read an image's versions and files may run (default 600)",
    ),
    (
        "FORGE_REGISTRY_DEADLINE",
        "seconds all of one command's reads from registries may take together (default 600); uploads are bounded per request only",
    ),
    (
        "FORGE_CONDUIT_PORT",
        "the port of 127.0.0.1 forge serves the daemon its image on, for a daemon that reaches forge's loopback through a forward (default: any free port)",
    ),
    (
        "FORGE_DOWNLOAD_LIMIT",
        "the most bytes one download may hold (default 8 GiB)",
    ),
    (
        "FORGE_COMPLETE",
        "set by the completion function `forge completions SHELL` prints: the run answers with the words to offer",
    ),
    (
        "SOURCE_DATE_EPOCH",
        "the image's date (and so its dated tag) when pins.toml gives none; the mtime of every file of the build context; the time of the commits patch apply makes (else now)",
    ),
    (
        "DOCKER_HOST, DOCKER_CONTEXT, DOCKER_TLS_VERIFY, DOCKER_CERT_PATH",
        "which daemon to talk to and how, as the docker CLI reads them",
    ),
    (
        "DOCKER_CONFIG",
        "the folder of the docker CLI's config.json (registry logins, credential helpers, contexts); else ~/.docker",
    ),
    (
        "PIP_INDEX_URL, PIP_EXTRA_INDEX_URL, PIP_CONFIG_FILE",
        "the indexes pip would use, read as pip reads them, for pins without an index of their own",
    ),
    (
        "NETRC",
        "the netrc file with package index logins (else ~/.netrc)",
    ),
    (
        "GH_TOKEN, GITHUB_TOKEN",
        "a GitHub token for listing a release's files (raises the API's rate limit)",
    ),
    (
        "HTTPS_PROXY, HTTP_PROXY, ALL_PROXY, NO_PROXY",
        "the proxy forge's own requests (registries, package indexes, releases) go through; the daemon's pulls follow the daemon's own environment",
    ),
    (
        "SSL_CERT_FILE, SSL_CERT_DIR",
        "certificate authorities to trust besides the system's",
    ),
    (
        "XDG_CACHE_HOME, XDG_CONFIG_HOME, XDG_CONFIG_DIRS",
        "where caches and pip's configuration files are looked for",
    ),
    (
        "HOME",
        "the home folder: ~/.docker, ~/.netrc, ~/.cache; the search for pins.toml stops there",
    ),
    (
        "TMPDIR",
        "where scratch repositories, the context archive, downloads and the layers forge rewrites are spooled",
    ),
    (
        "COLUMNS",
        "the width help wraps to when stdout is not a terminal (at most 100)",
    ),
    (
        "NO_COLOR",
        "set to a value: no colour (unless --color always)",
    ),
    (
        "CLICOLOR_FORCE",
        "set to a value other than 0: colour even into a pipe (unless NO_COLOR or --color never)",
    ),
];

/// The files forge reads and writes, with what each is.
pub const FILES: &[(&str, &str)] = &[
    (
        "pins.toml",
        "the recipe: base image, pins, patch series, overlays, image and tags; forge looks for it from the working folder (or -C DIR) up",
    ),
    ("templates/Dockerfile.j2", "the Dockerfile's template"),
    (
        "patches/",
        "the patch series (git format-patch mails), applied in the order git numbers them",
    ),
    (
        "overlays/",
        "the files copied into the image, patched by the series",
    ),
    (
        "forge.lock",
        "the record of the inputs and of the last build: image id, tags, pushed digests",
    ),
    (
        "forge.lock.intent",
        "a publication under way; a killed forge leaves it for the next command (or forge recover) to settle",
    ),
    (
        ".git/FORGE_APPLY",
        "a patch apply under way in the target repository, finished or undone by the next apply",
    ),
    (
        "~/.docker/config.json",
        "registry logins and credential helpers, as the docker CLI keeps them",
    ),
    ("~/.netrc", "package index logins"),
];

/// Exit statuses, as every command uses them.
pub const EXIT_STATUS: &[(&str, &str)] = &[
    ("0", "success"),
    (
        "1",
        "a check failed: a stale render, a conflicting patch, a refused constraint, a verification that does not hold, a pin that can move (pin outdated --exit-code)",
    ),
    (
        "2",
        "usage or environment error: bad pins.toml, a missing file, an unreachable daemon or registry; nothing was changed",
    ),
];

/// The man page of `forge` (no `path`) or of the command `path` names (`["pin", "bump"]`), as
/// roff; `None` when there is no such command.
pub fn page(mut command: clap::Command, path: &[String]) -> Option<Vec<u8>> {
    command.build();
    let mut name = vec!["forge".to_owned()];
    for part in path {
        command = command.find_subcommand(part)?.clone();
        name.push(part.clone());
    }
    let name = name.join("-");
    let nested = command.has_subcommands();
    let synopsis = synopsis(path, &command);
    let command = command.name(name.clone()).bin_name(name.replace('-', " "));
    let man = clap_mangen::Man::new(command).section("1");
    let mut page = Vec::new();
    man.render_title(&mut page).ok()?;
    man.render_name_section(&mut page).ok()?;
    page.extend_from_slice(format!(".SH SYNOPSIS\n{synopsis}\n").as_bytes());
    man.render_description_section(&mut page).ok()?;
    man.render_options_section(&mut page).ok()?;
    if nested {
        man.render_subcommands_section(&mut page).ok()?;
    }
    section(&mut page, "EXIT STATUS", EXIT_STATUS);
    section(&mut page, "ENVIRONMENT", ENVIRONMENT);
    section(&mut page, "FILES", FILES);
    man.render_version_section(&mut page).ok()?;
    Some(page)
}

/// `forge [-C DIR] COMMAND [OPTIONS] ARGS`, as git writes its synopses: the folder first, then
/// the command's words, its options, and its arguments by their value names.
fn synopsis(path: &[String], command: &clap::Command) -> String {
    let mut line = String::from("\\fBforge\\fR [\\fB\\-C\\fR \\fIDIR\\fR]");
    for word in path {
        line.push_str(&format!(" \\fB{}\\fR", escape(word)));
    }
    line.push_str(" [\\fIOPTIONS\\fR]");
    for argument in command.get_positionals() {
        let name = (argument.get_value_names())
            .and_then(|names| names.first())
            .map_or_else(
                || argument.get_id().to_string().to_uppercase(),
                ToString::to_string,
            );
        let many = matches!(argument.get_num_args(), Some(range) if range.max_values() > 1);
        let name = format!("\\fI{}\\fR{}", escape(&name), if many { "..." } else { "" });
        if argument.is_required_set() {
            line.push_str(&format!(" {name}"));
        } else {
            line.push_str(&format!(" [{name}]"));
        }
    }
    if command.has_subcommands() {
        line.push_str(" \\fICOMMAND\\fR");
    }
    line
}

/// A section of tagged paragraphs: each term in bold, its text below.
fn section(page: &mut Vec<u8>, title: &str, entries: &[(&str, &str)]) {
    page.extend_from_slice(format!(".SH \"{title}\"\n").as_bytes());
    for (term, text) in entries {
        page.extend_from_slice(
            format!(".TP\n\\fB{}\\fR\n{}\n", escape(term), escape(text)).as_bytes(),
        );
    }
}

/// `text` safe in roff: backslashes and hyphens escaped, no line starting with a control
/// character.
fn escape(text: &str) -> String {
    let escaped = text.replace('\\', "\\e").replace('-', "\\-");
    if escaped.starts_with(['.', '\'']) {
        format!("\\&{escaped}")
    } else {
        escaped
    }
}

#[cfg(test)]
mod tests {
    /// Every variable the code reads by name (`env::var("X")`, `var_os`, the helpers that wrap
    /// them, clap's `env = "X"`) is in ENVIRONMENT.
    #[test]
    fn the_environment_section_names_every_variable_forge_reads() {
        let read = regex::Regex::new(
            r#"(?:var|var_os|set|non_empty|non_empty_env|setting|lookup|password)\(\s*"([A-Z][A-Z0-9_]+)"|env = "([A-Z][A-Z0-9_]+)"|\["(GH_TOKEN)", "(GITHUB_TOKEN)"\]"#,
        )
        .unwrap();
        let listed: String = super::ENVIRONMENT
            .iter()
            .map(|(names, _)| *names)
            .collect::<Vec<_>>()
            .join(", ");
        let mut found = std::collections::BTreeSet::new();
        let mut folders = vec![std::path::PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/src"
        ))];
        while let Some(folder) = folders.pop() {
            for entry in std::fs::read_dir(folder).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    folders.push(path);
                } else if path.extension().is_some_and(|extension| extension == "rs") {
                    let text = std::fs::read_to_string(&path).unwrap();
                    for captures in read.captures_iter(&text) {
                        let name = (1..=4).find_map(|group| captures.get(group)).unwrap();
                        found.insert((name.as_str().to_owned(), path.display().to_string()));
                    }
                }
            }
        }
        assert!(found.len() > 20, "{found:?}");
        for (name, path) in found {
            assert!(
                listed.split(", ").any(|listed| listed == name),
                "{path} reads {name}, which forge-*(1)'s ENVIRONMENT does not name"
            );
        }
    }
}
