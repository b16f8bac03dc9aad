//! The `--json` documents are contracts: each command's document is pinned by a snapshot of its
//! shape (what varies between runs, such as digests and temporary paths, replaced by
//! placeholders), and each carries `"schema": 1`. The documents that need a daemon, a registry
//! or a package index are pinned where those tests run them (`build`, `verify`, `pin_bump`,
//! `report`).

use crate::support::{TestContext, json_shape};

fn document(context: &TestContext, args: &[&str], code: i32) -> serde_json::Value {
    let mut with_json = vec!["--json"];
    with_json.extend_from_slice(args);
    let document = context.forge(&with_json).expect_code(code).json();
    assert_eq!(document["schema"], 1, "{document}");
    document
}

#[test]
fn render_documents() {
    let context = TestContext::default_recipe();
    let mut printed = document(&context, &["render"], 0);
    let text = printed["dockerfile"].take();
    assert!(
        text.as_str().unwrap().starts_with("# syntax") || text.as_str().unwrap().contains("FROM ")
    );
    printed["dockerfile"] = serde_json::json!("<the rendered Dockerfile>");
    insta::assert_snapshot!("json_render", json_shape(&printed, context.path()));
    let written = document(&context, &["render", "--out", "Dockerfile"], 0);
    insta::assert_snapshot!("json_render_out", json_shape(&written, context.path()));
    let checked = document(&context, &["render", "--out", "Dockerfile", "--check"], 0);
    insta::assert_snapshot!("json_render_check", json_shape(&checked, context.path()));
}

#[test]
fn pin_list_document() {
    let context = TestContext::default_recipe();
    let listed = document(&context, &["pin", "list"], 0);
    insta::assert_snapshot!("json_pin_list", json_shape(&listed, context.path()));
}

#[test]
fn patch_documents() {
    let context = TestContext::default_recipe();
    let checked = document(&context, &["patch", "check"], 0);
    insta::assert_snapshot!("json_patch_check", json_shape(&checked, context.path()));
    let applied = document(&context, &["patch", "apply"], 0);
    insta::assert_snapshot!("json_patch_apply", json_shape(&applied, context.path()));
}

#[test]
fn build_dry_run_document() {
    let context = TestContext::default_recipe();
    let plan = document(&context, &["build", "--dry-run"], 0);
    insta::assert_snapshot!("json_build_dry_run", json_shape(&plan, context.path()));
}

#[test]
fn recover_document() {
    let context = TestContext::default_recipe();
    let settled = document(&context, &["recover"], 0);
    assert_eq!(settled["settled"], "nothing", "{settled}");
    insta::assert_snapshot!("json_recover", json_shape(&settled, context.path()));
}
