//! forge's integration tests: one binary, each module a command or a stage, all driving the real
//! `forge` executable through `TestContext`.

mod fuzz_replay;
mod build;
mod patch;
mod pins;
mod render;
mod support;
