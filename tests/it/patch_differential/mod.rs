//! forge's patch stage judged by `git am --keep-cr` on the same input.
//!
//! Three modes share one machinery (states written as commits with git2, patches made by
//! `git format-patch -M -C --binary`, both tools run as processes on identical checkouts with
//! the same committer and date, so that agreeing tools make byte-identical commits):
//!
//! - **generated histories**: a linear history of random edits (lines inserted, deleted and
//!   changed at the start, middle and end; files added, deleted, emptied, renamed, copied;
//!   modes, symlinks, gitlinks, binary files, CRLF text, missing final newlines, runs of
//!   identical lines), applied as one series by both tools: every commit must be identical.
//! - **generated cases**: one patch (A to B) applied onto a target that is A, B, or A changed
//!   in a way that moves, breaks or blocks the patch, and some mails damaged on the way:
//!   where git applies, forge makes the same commit; where git refuses, forge changes nothing
//!   and calls the patch `already applied` only if `git apply -R --check` accepts it.
//! - **named cases**: one test per class of disagreement found before (see each test).
//!
//! `FORGE_DIFFERENTIAL_SEED`, `FORGE_DIFFERENTIAL_COMMITS` and `FORGE_DIFFERENTIAL_CASES`
//! make longer runs; `FORGE_HISTORY=GITDIR:BASE:TIP[,...]` replays real histories (see
//! docs/testing.md); `FORGE_DIFFERENTIAL_BINARY` judges another forge binary.

//!
//! The parts: `harness` (states, commits, both tools, one case judged), `random` (random edits),
//! and one module per mode, `histories`, `cases` and `named`.

mod cases;
mod harness;
mod histories;
mod named;
mod random;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;

use git2::{Oid, Repository};

use crate::support::Rng;
use harness::*;
use random::*;
