//! forge's integration tests: one binary, each module a command or a stage, all driving the real
//! `forge` executable through `TestContext`.

mod attest;
mod build;
mod cache_from;
mod context;
mod credential_helper;
mod credentials;
mod dockerignore;
mod errors;
mod faults;
mod fixes;
mod fuzz_replay;
mod git_http_server;
mod git_image;
mod git_pin_series;
mod host_image;
mod hostile;
mod image_guard;
mod index_server;
mod json;
mod node;
mod patch;
mod patch_differential;
mod pin_bump;
mod pins;
mod platforms;
mod pull;
mod readme;
mod registry_server;
mod remote_daemon;
mod render;
mod report;
mod support;
mod tls;
mod verify;
mod workflow;
