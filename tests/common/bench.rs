//! One `speclens bench` for every test file: the targets, the tests' named defaults (each one
//! given way to by the same flag among the extra arguments), and what the run left behind.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{read_records, run_speclens_within, speclens_peak_rss_kb};

/// A `speclens bench` to run: built with [`Bench::at`], then named defaults, then [`Bench::ok`]
/// (asserts success and reads `result.json`) or [`Bench::run`] (any exit).
pub struct Bench {
    urls: Vec<String>,
    /// Flags with their value, in the order they were set; dropped when `extra` names them.
    defaults: Vec<(&'static str, Option<String>)>,
    extra: Vec<String>,
    out: Option<PathBuf>,
    limit: Duration,
}

/// What a finished `speclens bench` left: its exit code, its console, its folder and, when it
/// wrote one, its `result.json`.
pub struct BenchRun {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    /// The run's folder (`result.json`, `records.jsonl`, …).
    pub out: PathBuf,
    /// `result.json`, or `Null` when the run wrote none.
    pub result: serde_json::Value,
    /// The temporary folder that holds `out` when the test named none; removed with the run.
    _dir: Option<tempfile::TempDir>,
}

impl Bench {
    /// `speclens bench --url URL`, into a fresh temporary folder, within a minute.
    pub fn at(url: &str) -> Bench {
        Bench::at_all(&[url])
    }

    /// `speclens bench` with one `--url` each (a fleet).
    pub fn at_all<S: AsRef<str>>(urls: &[S]) -> Bench {
        Bench {
            urls: urls.iter().map(|u| u.as_ref().to_string()).collect(),
            defaults: Vec::new(),
            extra: Vec::new(),
            out: None,
            limit: Duration::from_secs(60),
        }
    }

    /// A flag with its value, unless the extra arguments give the same flag.
    pub fn set(mut self, flag: &'static str, value: impl ToString) -> Bench {
        self.defaults.retain(|(f, _)| *f != flag);
        self.defaults.push((flag, Some(value.to_string())));
        self
    }

    /// A switch (a flag without a value).
    pub fn switch(mut self, flag: &'static str) -> Bench {
        self.defaults.retain(|(f, _)| *f != flag);
        self.defaults.push((flag, None));
        self
    }

    /// `--num-prompts N`.
    pub fn prompts(self, n: u32) -> Bench {
        self.set("--num-prompts", n)
    }

    /// `--input-tokens IN --output-tokens OUT`.
    pub fn tokens(self, input: u32, output: u32) -> Bench {
        self.set("--input-tokens", input).output_tokens(output)
    }

    /// `--output-tokens N`.
    pub fn output_tokens(self, n: u32) -> Bench {
        self.set("--output-tokens", n)
    }

    /// `--quiet`: no progress bar or live table on stderr.
    pub fn quiet(self) -> Bench {
        self.switch("--quiet")
    }

    /// The test's own arguments, after the defaults (a flag here replaces its default).
    pub fn args(mut self, extra: &[&str]) -> Bench {
        self.extra.extend(extra.iter().map(|a| a.to_string()));
        self
    }

    /// Into the folder `out` instead of a temporary one.
    pub fn into(mut self, out: &Path) -> Bench {
        self.out = Some(out.to_path_buf());
        self
    }

    /// A longer (or shorter) limit than a minute.
    pub fn within(mut self, limit: Duration) -> Bench {
        self.limit = limit;
        self
    }

    /// The flags among the test's own arguments (`--flag` or `--flag=value`; a value that
    /// follows a flag is not one).
    fn extra_flags(&self) -> Vec<&str> {
        self.extra
            .iter()
            .filter(|a| a.starts_with("--"))
            .map(|a| a.split_once('=').map_or(a.as_str(), |(flag, _)| flag))
            .collect()
    }

    /// The folder and the whole argument list (`bench` first).
    fn command(&self) -> (PathBuf, Option<tempfile::TempDir>, Vec<String>) {
        // An `--out` among the test's own arguments is the folder, as `into` would make it.
        let given_out = self
            .extra
            .iter()
            .position(|a| a == "--out")
            .and_then(|i| self.extra.get(i + 1))
            .map(PathBuf::from);
        let (out, dir) = match given_out.as_ref().or(self.out.as_ref()) {
            Some(out) => (out.clone(), None),
            None => {
                let dir = tempfile::tempdir().expect("a temporary folder");
                (dir.path().join("run"), Some(dir))
            }
        };
        let extra_flags = self.extra_flags();
        let mut args = vec!["bench".to_string()];
        for url in &self.urls {
            args.extend(["--url".to_string(), url.clone()]);
        }
        for (flag, value) in &self.defaults {
            if extra_flags.contains(flag) {
                continue;
            }
            args.push(flag.to_string());
            args.extend(value.clone());
        }
        if given_out.is_none() {
            args.extend(["--out".to_string(), out.to_str().expect("UTF-8 path").to_string()]);
        }
        args.extend(self.extra.iter().cloned());
        (out, dir, args)
    }

    /// Run it to its end, whatever its exit.
    pub fn run(self) -> BenchRun {
        let (out, dir, args) = self.command();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, stdout, stderr) = run_speclens_within(&args, self.limit);
        let result = std::fs::read_to_string(out.join("result.json"))
            .ok()
            .map(|text| serde_json::from_str(&text).expect("result.json is JSON"))
            .unwrap_or(serde_json::Value::Null);
        BenchRun {
            code,
            stdout,
            stderr,
            out,
            result,
            _dir: dir,
        }
    }

    /// Run it and assert it succeeded and wrote `result.json`.
    pub fn ok(self) -> BenchRun {
        let run = self.run();
        assert_eq!(run.code, 0, "bench failed:\n{}\n{}", run.stdout, run.stderr);
        assert!(!run.result.is_null(), "bench wrote no result.json:\n{}", run.stderr);
        run
    }

    /// Run it to its end and return its peak resident memory in kB.
    pub fn peak_rss_kb(self) -> u64 {
        let (_out, _dir, args) = self.command();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        speclens_peak_rss_kb(&args, self.limit).0
    }
}

impl BenchRun {
    /// Every record of the run's `records.jsonl`.
    pub fn records(&self) -> Vec<speclens_shared::run::record::RequestRecord> {
        read_records(&self.out)
    }

    /// The console as a user saw it: stdout, then stderr.
    pub fn console(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }
}
