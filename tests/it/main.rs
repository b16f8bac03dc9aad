//! forge's integration tests: one binary, each module a command or a stage, all driving the real
//! `forge` executable through `TestContext`.

mod build;
mod context;
mod credential_helper;
mod credentials;
mod dockerignore;
mod errors;
mod faults;
mod fuzz_replay;
mod git_http_server;
mod git_image;
mod git_pin_series;
mod host_image;
mod hostile;
mod image_guard;
mod index_server;
mod json;
mod patch;
mod patch_differential;
mod pin_bump;
mod pins;
mod readme;
mod registry_server;
mod remote_daemon;
mod render;
mod report;
mod support;
mod tls;
mod verify;
mod workflow;
