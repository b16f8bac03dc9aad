//! Credentials go only where they belong: no message prints the user information or the token
//! of a URL.

use crate::index_server::IndexServer;
use crate::pin_bump::forge;
use crate::support::{TestContext, assert_contains, free_port};

/// Item 4: credentials in a git or index URL never reach the terminal or a JSON document; the
/// URL is shown as `http://***@host/...`, the host still visible.
#[test]
fn credentials_in_git_and_index_urls_are_never_printed() {
    const GIT_SECRET: &str = "s3cret-in-the-git-url";
    const INDEX_SECRET: &str = "s3cret-in-the-index-url";
    let port = free_port();
    let git_url = format!("http://robot:{GIT_SECRET}@127.0.0.1:{port}/deepgemm.git");
    let context = TestContext::default_recipe();
    context.edit(
        "pins.toml",
        "url = \"https://github.com/deepseek-ai/DeepGEMM.git\"",
        &format!("url = \"{git_url}\""),
    );
    let shown = format!("http://***@127.0.0.1:{port}/deepgemm.git");
    for args in [
        &["pin", "bump", "deepgemm"][..],
        &["--json", "pin", "bump", "deepgemm"],
        &["-v", "pin", "bump", "deepgemm"],
    ] {
        let run = forge(&context, args, &[]).expect_code(2);
        let output = format!("{}{}", run.stdout, run.stderr);
        assert!(!output.contains(GIT_SECRET), "{args:?}:\n{output}");
        assert_contains(&output, &shown);
    }

    // An index URL with a user and password, to an index that is down and to one that is up.
    let down = format!("http://robot:{INDEX_SECRET}@127.0.0.1:{port}/simple");
    for args in [
        &["pin", "bump", "flashinfer", "--index-url", &down][..],
        &["--json", "pin", "bump", "flashinfer", "--index-url", &down],
    ] {
        let run = forge(&context, args, &[]).expect_code(2);
        let output = format!("{}{}", run.stdout, run.stderr);
        assert!(!output.contains(INDEX_SECRET), "{args:?}:\n{output}");
        assert_contains(&output, &format!("http://***@127.0.0.1:{port}/simple"));
    }
    let index = IndexServer::start();
    let up = index
        .url()
        .replacen("http://", &format!("http://robot:{INDEX_SECRET}@"), 1);
    for args in [
        &["-v", "pin", "outdated"][..],
        &["--json", "-v", "pin", "outdated"],
    ] {
        let run = forge(&context, args, &[("FORGE_INDEX_URL", &up)]);
        let output = format!("{}{}", run.stdout, run.stderr);
        assert!(!output.contains(INDEX_SECRET), "{args:?}:\n{output}");
        assert!(!output.contains(GIT_SECRET), "{args:?}:\n{output}");
    }
}
