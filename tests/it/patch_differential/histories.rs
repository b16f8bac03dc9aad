//! Generated histories (and real ones, from `FORGE_HISTORY`): one series applied by both tools,
//! every commit identical.

use super::*;

/// What replaying a history found.
pub(super) struct Replay {
    /// The first difference, if any.
    pub(super) difference: Option<String>,
    /// Commits both tools made identically.
    pub(super) compared: usize,
    /// Commits git am refuses to make from their own patch (forge refused them too).
    pub(super) refused: Vec<String>,
    /// Seconds git am and forge took.
    pub(super) seconds: [f64; 2],
}

/// Applies the series `base..tip` of `origin` with both tools onto clones at `base` and
/// compares every commit. Where git am refuses a patch of the history (git cannot always
/// apply its own format-patch output), forge must refuse it too, and both go on from the
/// original commit.
pub(super) fn replay_history(origin: &Path, base: &str, tip: &str, work: &Path) -> Replay {
    let home = work.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let originals = rev_list(origin, &home, &format!("{base}..{tip}"));
    let mut replay = Replay {
        difference: None,
        compared: 0,
        refused: Vec::new(),
        seconds: [0.0; 2],
    };
    let mut start = 0;
    let mut round = 0;
    while start < originals.len() {
        round += 1;
        let from = if start == 0 {
            base.to_owned()
        } else {
            originals[start - 1].clone()
        };
        let round = Round::new(origin, &home, work.join(format!("round{round}")), from, tip);
        match round.compare(&mut replay) {
            Err(difference) => {
                replay.difference = Some(difference);
                return replay;
            }
            Ok(None) => break,
            Ok(Some(applied)) => {
                replay.refused.push(originals[start + applied].clone());
                start += applied + 1;
            }
        }
    }
    replay
}

/// The commits of `range` in `folder`, oldest first.
pub(super) fn rev_list(folder: &Path, home: &Path, range: &str) -> Vec<String> {
    String::from_utf8(git(folder, home, &["rev-list", "--reverse", range]).stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// One round of a replay: the series `from..tip` of `origin`, as files in `folder`, applied by
/// both tools onto clones at `from`.
pub(super) struct Round<'a> {
    pub(super) origin: &'a Path,
    pub(super) home: &'a Path,
    pub(super) folder: PathBuf,
    pub(super) from: String,
    /// The series' patch files, in order.
    pub(super) files: Vec<PathBuf>,
}

impl<'a> Round<'a> {
    /// Writes the series `from..tip` of `origin` into `folder`.
    pub(super) fn new(
        origin: &'a Path,
        home: &'a Path,
        folder: PathBuf,
        from: String,
        tip: &str,
    ) -> Self {
        let patches = folder.join("series");
        let made = git(
            origin,
            home,
            &crate::support::format_patch_args(&[
                "-q",
                "-o",
                patches.to_str().unwrap(),
                &format!("{from}..{tip}"),
            ]),
        );
        assert!(
            made.status.success(),
            "{}",
            String::from_utf8_lossy(&made.stderr)
        );
        let mut files: Vec<PathBuf> = std::fs::read_dir(&patches)
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .collect();
        files.sort();
        Self {
            origin,
            home,
            folder,
            from,
            files,
        }
    }

    /// `files` concatenated into one mbox `name` in the round's folder.
    pub(super) fn mbox(&self, name: &str, files: &[PathBuf]) -> PathBuf {
        let path = self.folder.join(name);
        let bytes: Vec<u8> = files
            .iter()
            .flat_map(|file| std::fs::read(file).unwrap())
            .collect();
        std::fs::write(&path, bytes).unwrap();
        path
    }

    /// A clone of origin, `name` in the round's folder, with `work` checked out at `from`.
    pub(super) fn clone_as(&self, name: &str) -> PathBuf {
        let cloned = git(
            &self.folder,
            self.home,
            &[
                "clone",
                "-q",
                "--no-checkout",
                self.origin.to_str().unwrap(),
                name,
            ],
        );
        assert!(
            cloned.status.success(),
            "{}",
            String::from_utf8_lossy(&cloned.stderr)
        );
        let checked_out = git(
            &self.folder.join(name),
            self.home,
            &["checkout", "-q", "-B", "work", &self.from],
        );
        assert!(checked_out.status.success());
        self.folder.join(name)
    }

    /// The commits made in the clone `folder` since `from`.
    pub(super) fn made_since(&self, folder: &Path) -> Vec<String> {
        rev_list(folder, self.home, &format!("{}..work", self.from))
    }

    /// `forge patch apply` of `series` in the clone `folder`.
    pub(super) fn forge_apply(&self, folder: &Path, series: &Path) -> Output {
        forge(
            folder,
            self.home,
            &[
                "-q",
                "patch",
                "apply",
                "--onto",
                ".",
                series.to_str().unwrap(),
            ],
        )
    }

    /// Applies the series with both tools and compares what they made, adding the commits
    /// compared and the time taken to `replay`: the first difference, or where git am stopped
    /// (`None` where it applied the whole series), forge having refused that patch too.
    pub(super) fn compare(&self, replay: &mut Replay) -> Result<Option<usize>, String> {
        let am = self.clone_as("am");
        let all = self.mbox("all.mbox", &self.files);
        let started = std::time::Instant::now();
        let run = git(
            &am,
            self.home,
            &["am", "-q", "--keep-cr", all.to_str().unwrap()],
        );
        replay.seconds[0] += started.elapsed().as_secs_f64();
        let expected = self.made_since(&am);
        let applied = expected.len();

        let forge_folder = self.clone_as("forge");
        let series = if run.status.success() {
            all
        } else {
            self.mbox("applied.mbox", &self.files[..applied])
        };
        if applied > 0 {
            let started = std::time::Instant::now();
            let run = self.forge_apply(&forge_folder, &series);
            replay.seconds[1] += started.elapsed().as_secs_f64();
            if !run.status.success() {
                return Err(format!(
                    "forge failed where git am applied: {}",
                    String::from_utf8_lossy(&run.stderr)
                ));
            }
        }
        let made = self.made_since(&forge_folder);
        if let Some((reference, copy)) = expected
            .iter()
            .zip(&made)
            .find(|(left, right)| left != right)
        {
            return Err(format!(
                "git am {}\nforge  {}",
                facts(&am, Oid::from_str(reference).unwrap()),
                facts(&forge_folder, Oid::from_str(copy).unwrap())
            ));
        }
        if made.len() != expected.len() {
            return Err(format!(
                "git am made {applied} commits, forge {}",
                made.len()
            ));
        }
        replay.compared += applied;
        if run.status.success() {
            return Ok(None);
        }
        self.refused_by_forge(&forge_folder, applied).map(Some)
    }

    /// git am stopped at patch `at`: forge must refuse it as well, changing nothing in its clone
    /// `folder`.
    pub(super) fn refused_by_forge(&self, folder: &Path, at: usize) -> Result<usize, String> {
        let refused = self.mbox("refused.mbox", &self.files[at..=at]);
        let head = head_of(folder);
        let run = self.forge_apply(folder, &refused);
        if run.status.success() || head_of(folder) != head {
            return Err(format!(
                "git am refuses {} but forge applies it",
                self.files[at].display()
            ));
        }
        Ok(at)
    }
}

#[test]
pub(super) fn generated_histories_make_the_commits_git_am_makes() {
    let seed = env_number("FORGE_DIFFERENTIAL_SEED", 11);
    let count = env_number("FORGE_DIFFERENTIAL_COMMITS", 1000) as usize;
    let work = scratch();
    let origin = work.path().join("origin");
    let repository = Repository::init(&origin).unwrap();
    let mut rng = Rng(seed);
    let mut state = random_state(&mut rng);
    for index in 0..12 {
        let path = format!("base/file{index}.txt");
        state.insert(path, Entry::text(&random_text(&mut rng)));
    }
    let base = commit(&repository, &state, &[], &base_author(), "base\n");
    let mut tip = base;
    for _ in 0..count {
        state = changed(&mut rng, &state);
        let author = random_author(&mut rng);
        let message = *rng.pick(&MESSAGES);
        tip = commit(&repository, &state, &[tip], &author, message);
    }
    let replay = replay_history(&origin, &base.to_string(), &tip.to_string(), work.path());
    if replay.difference.is_some() && std::env::var_os("FORGE_DIFFERENTIAL_KEEP").is_some() {
        crate::support::note(&format!("kept {}", work.keep().display()));
    }
    assert!(
        replay.difference.is_none(),
        "seed {seed}: {}",
        replay.difference.unwrap_or_default()
    );
    assert!(
        replay.compared >= count * 9 / 10,
        "only {} commits compared",
        replay.compared
    );
    crate::support::note(&format!(
        "{count} generated commits: {} identical, {} refused by both; git am {:.2}s, forge {:.2}s",
        replay.compared,
        replay.refused.len(),
        replay.seconds[0],
        replay.seconds[1]
    ));
}

/// Real histories, when named: `FORGE_HISTORY=GITDIR:BASE:TIP[,GITDIR:BASE:TIP...]`.
#[test]
pub(super) fn named_real_histories_make_the_commits_git_am_makes() {
    let Ok(list) = std::env::var("FORGE_HISTORY") else {
        return;
    };
    for entry in list.split(',').filter(|entry| !entry.is_empty()) {
        let parts: Vec<&str> = entry.rsplitn(3, ':').collect();
        let [tip, base, origin] = parts[..] else {
            panic!("FORGE_HISTORY entries are GITDIR:BASE:TIP, not {entry}");
        };
        let work = scratch();
        let replay = replay_history(Path::new(origin), base, tip, work.path());
        assert!(
            replay.difference.is_none(),
            "{entry}: {}",
            replay.difference.unwrap_or_default()
        );
        crate::support::note(&format!(
            "{entry}: {} identical commits, {} refused by both {:?}; git am {:.2}s, forge {:.2}s",
            replay.compared,
            replay.refused.len(),
            replay.refused,
            replay.seconds[0],
            replay.seconds[1]
        ));
    }
}
