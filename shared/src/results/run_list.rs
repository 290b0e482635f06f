//! The list of a results folder's runs (`/api/runs`, `read`, the report's index): one entry per
//! run, repeats grouped under their first, and the folder's sweeps and accept matrices.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::results::run_result::RunResult;

/// One line of the run list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunListEntry {
    /// The run's folder relative to the results folder (`demo/sweep/spec-c64`): the same id on
    /// the dashboard and in a report of that folder.
    pub id: String,
    pub label: String,
    pub date: Option<String>,
    pub model_id: Option<String>,
    pub partial: bool,
    pub completed: Option<u64>,
    /// Output tokens per second over the whole run.
    pub output_throughput: Option<f64>,
    /// Output tokens per second in the steady window (what sweeps compare), when it had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steady_output_throughput: Option<f64>,
    pub spec_decode_acceptance_length: Option<f64>,
    /// The closed loop's concurrency, when the run had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_concurrency: Option<u64>,
    /// What made the run: `bench`, `sweep spec` / `sweep base` (a sweep's point), `accept`, or
    /// `vllm bench serve` (a file speclens did not write).
    #[serde(default)]
    pub kind: String,
    /// For a sweep point's extra repeat (`spec-c16-r2`), the id of the point whose figure is
    /// the repeats' median (`spec-c16`); the list shows it under that point.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat_of: Option<String>,
    /// For a sweep point that was repeated, how many runs its median is of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeats: Option<usize>,
}

impl RunListEntry {
    pub fn new(id: &str, r: &RunResult) -> RunListEntry {
        RunListEntry {
            id: id.into(),
            label: r.label.clone(),
            date: r.date.clone(),
            model_id: r.model_id.clone(),
            partial: r.partial,
            completed: r.completed,
            output_throughput: r.output_throughput,
            steady_output_throughput: r.steady_output_throughput,
            spec_decode_acceptance_length: r.spec_decode_acceptance_length,
            max_concurrency: r.max_concurrency.or(r.config.as_ref().and_then(|c| c.concurrency)),
            kind: if r.speclens_version.is_some() {
                "bench"
            } else {
                "vllm bench serve"
            }
            .into(),
            repeat_of: None,
            repeats: None,
        }
    }

    /// The figure sweeps compare: the steady window's output tokens/s, else the whole run's.
    pub fn compared_throughput(&self) -> Option<f64> {
        self.steady_output_throughput.or(self.output_throughput)
    }

    /// The date as people read it: `2026-12-01 04:28:26` (UTC) from RFC 3339 with nanoseconds.
    pub fn readable_date(&self) -> Option<String> {
        let date = self.date.as_deref()?;
        let trimmed: String = date.chars().take(19).collect();
        Some(if trimmed.len() == 19 && trimmed.as_bytes()[10] == b'T' {
            format!("{} UTC", trimmed.replacen('T', " ", 1))
        } else {
            date.to_string()
        })
    }

    /// Does the row match a filter typed by the user (case-insensitive, any column's text)?
    pub fn matches(&self, filter: &str) -> bool {
        let filter = filter.trim().to_lowercase();
        filter.is_empty()
            || [
                self.id.as_str(),
                self.label.as_str(),
                self.kind.as_str(),
                self.model_id.as_deref().unwrap_or_default(),
            ]
            .iter()
            .any(|text| text.to_lowercase().contains(&filter))
    }
}

/// The run list (`/api/runs`): runs newest first, then sweep and accept folder ids.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunList {
    pub results_dir: String,
    pub runs: Vec<RunListEntry>,
    pub sweeps: Vec<String>,
    pub accepts: Vec<String>,
}

impl RunList {
    /// The list, newest first, each run's kind told by the folder it is in: a sweep's points
    /// are `sweep spec` / `sweep base`, an accept folder's runs `accept`.
    pub fn new(results_dir: &str, mut runs: Vec<RunListEntry>, sweeps: Vec<String>, accepts: Vec<String>) -> RunList {
        let inside = |id: &str, folders: &[String]| {
            folders
                .iter()
                .any(|f| id.strip_prefix(f.as_str()).is_some_and(|rest| rest.starts_with('/')))
        };
        for run in &mut runs {
            if inside(&run.id, &sweeps) {
                let point = run.id.rsplit('/').next().unwrap_or_default();
                run.kind = if point.starts_with("base-") {
                    "sweep base"
                } else {
                    "sweep spec"
                }
                .into();
            } else if inside(&run.id, &accepts) {
                run.kind = "accept".into();
            }
        }
        runs.sort_by(|a, b| b.date.cmp(&a.date));
        group_repeats(&mut runs);
        RunList {
            results_dir: results_dir.into(),
            runs,
            sweeps,
            accepts,
        }
    }
}

/// A sweep point's repeats under the point: a run `<point>-r<n>` of a sweep whose `<point>`
/// is listed too is marked as its repeat and moved right after it, and the point counts them.
fn group_repeats(runs: &mut Vec<RunListEntry>) {
    let point_of = |r: &RunListEntry| -> Option<String> {
        if !r.kind.starts_with("sweep") {
            return None;
        }
        let (point, n) = r.id.rsplit_once("-r")?;
        (!n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())).then(|| point.to_string())
    };
    let ids: BTreeSet<String> = runs.iter().map(|r| r.id.clone()).collect();
    let mut repeats: BTreeMap<String, Vec<RunListEntry>> = BTreeMap::new();
    let mut rest = Vec::with_capacity(runs.len());
    for mut run in runs.drain(..) {
        match point_of(&run).filter(|p| ids.contains(p)) {
            Some(point) => {
                run.repeat_of = Some(point.clone());
                repeats.entry(point).or_default().push(run);
            }
            None => rest.push(run),
        }
    }
    for mut run in rest {
        let mine = repeats.remove(&run.id).unwrap_or_default();
        if !mine.is_empty() {
            run.repeats = Some(mine.len() + 1);
        }
        runs.push(run);
        runs.extend(mine);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(id: &str, date: &str, steady: Option<f64>) -> RunListEntry {
        let r: RunResult = serde_json::from_value(serde_json::json!({
            "date": date, "speclens_version": "x", "output_throughput": 100.0,
            "steady_output_throughput": steady, "spec_decode_acceptance_length": 2.5
        }))
        .unwrap();
        RunListEntry::new(id, &r)
    }

    /// A point's repeats follow the point, marked as its repeats; the point counts them and
    /// shows the figure the sweep compares (steady window), beside the whole run's.
    #[test]
    fn a_sweep_points_repeats_are_listed_under_the_point() {
        let runs = vec![
            listed("sw/spec-c1-r1", "2026-01-01T00:00:01", Some(90.0)),
            listed("sw/spec-c1", "2026-01-01T00:00:02", Some(95.0)),
            listed("sw/spec-c1-r3", "2026-01-01T00:00:03", Some(99.0)),
            listed("sw/base-c1", "2026-01-01T00:00:04", None),
            listed("mine-r2", "2026-01-01T00:00:05", Some(50.0)),
        ];
        let list = RunList::new("results", runs, vec!["sw".into()], Vec::new());
        let ids: Vec<&str> = list.runs.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(
            ids,
            ["mine-r2", "sw/base-c1", "sw/spec-c1", "sw/spec-c1-r3", "sw/spec-c1-r1"]
        );
        let point = &list.runs[2];
        assert_eq!((point.repeats, point.repeat_of.as_deref()), (Some(3), None));
        assert_eq!(list.runs[3].repeat_of.as_deref(), Some("sw/spec-c1"));
        assert_eq!(list.runs[0].repeat_of, None, "a bench run named -r2 is not a repeat");
        assert_eq!(point.compared_throughput(), Some(95.0));
        assert_eq!(
            list.runs[1].compared_throughput(),
            Some(100.0),
            "no steady window: the whole run's"
        );
    }
}
