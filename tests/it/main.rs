//! forge's integration tests: one binary, each module a command or a stage, all driving the real
//! `forge` executable through `TestContext`. The harness they share (servers, daemons, images,
//! keys, snapshots) is in `support`; no test module imports from another.

mod attest;
mod build;
mod cache_from;
mod cli;
mod context;
mod cosign;
mod credentials;
mod dockerignore;
mod donors;
mod engines;
mod errors;
mod faults;
mod fixes;
mod fuzz_replay;
mod git_pin_series;
mod harness;
mod hostile;
mod index_hashes;
mod journeys;
mod json;
mod lanes;
mod patch;
mod patch_differential;
mod patch_faults;
mod pin_bump;
mod pins;
mod platforms;
mod provenance;
mod pull;
mod readme;
mod remote_daemon;
mod render;
mod report;
mod reproducible;
mod scripts;
mod shipping;
mod signatures;
mod support;
mod verify;
mod wheel_record;
mod wheels_url;
mod workflow;
mod workspace;
