//! The what-if page's state: the model inputs a user sets in the page, their encoding in the
//! URL fragment (so a copied link reopens the same what-if), and the figures the page shows.
//!
//! Fragment form: `#whatif?alpha=0.6&k=3&proposer=ngram&gpu=h100&bmax=512&alphas=0.4,0.6,0.8&ks=1,2,3,4`
//! with `e=3.2` instead of `alpha` for a measured E, `c=0.1` for a custom proposer,
//! `ridge=250` for a custom GPU and `rates=0.8,0.6,0.4` for measured per-position rates.
//! Unknown keys are ignored; a bad value falls back to its default and is reported.

use std::fmt::Write;

use crate::model::context::{BreakEven, StepCosts, KV_RATIO_8B_BF16, MAX_BATCH as MAX_BATCH_SEARCHED, MAX_CONTEXT};
use crate::model::speedup::{self as model, Costs, KChoice, ModelRow, Proposer};

/// How the acceptance is given.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Acceptance {
    /// Per-token acceptance α (i.i.d. model).
    Alpha(f64),
    /// A measured mean acceptance length E (bonus included); α is implied.
    MeasuredE(f64),
}

/// The roofline side: a preset GPU or a ridge in token positions.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Gpu {
    Preset(&'static str),
    Ridge(f64),
}

impl Gpu {
    pub fn ridge_tokens(self) -> f64 {
        match self {
            Gpu::Preset(key) => model::gpu_preset(key).map_or(295.0, |g| g.ridge_tokens),
            Gpu::Ridge(t) => t,
        }
    }
}

/// Everything the what-if page lets a user set.
#[derive(Debug, Clone, PartialEq)]
pub struct WhatIf {
    pub acceptance: Acceptance,
    pub k: u32,
    pub proposer: Proposer,
    pub gpu: Gpu,
    /// Right end of the S(B) chart's batch axis.
    pub batch_max: u32,
    /// Rows of the model table.
    pub table_alphas: Vec<f64>,
    /// Columns of the model table (and the faint curves on the chart).
    pub table_ks: Vec<u32>,
    /// Measured unconditional per-position acceptance rates, position 1 first (may be empty).
    pub position_rates: Vec<f64>,
    /// Batch size at which the best k is chosen from `position_rates`.
    pub batch: u32,
    /// Measured draft tokens per draft at the selected k (below k for proposers that draft
    /// less when their match is short); `None`: full k-token drafts.
    pub draft_tokens: Option<f64>,
    /// Tokens each sequence holds (0: the roofline without the KV read); with it, each step
    /// reads `kv_ratio` of the weights' bytes per token held (docs/MODEL.md, "Break-even in
    /// batch and context").
    pub context_tokens: f64,
    pub kv_ratio: f64,
}

impl Default for WhatIf {
    fn default() -> Self {
        WhatIf {
            acceptance: Acceptance::Alpha(0.7),
            k: 3,
            proposer: Proposer::Ngram,
            gpu: Gpu::Preset("h100"),
            batch_max: 512,
            table_alphas: vec![0.4, 0.6, 0.8],
            table_ks: vec![1, 2, 3, 4, 5],
            position_rates: Vec::new(),
            batch: 64,
            draft_tokens: None,
            context_tokens: 0.0,
            kv_ratio: KV_RATIO_8B_BF16,
        }
    }
}

/// A row's B* as the page shows it: `never` where speculation loses at batch 1, `beyond …`
/// where it pays at every batch searched (with a context), else the batch.
pub fn break_even_text(row: &ModelRow) -> String {
    if !row.pays_at_batch1() {
        "never".into()
    } else if row.break_even_batch >= MAX_BATCH_SEARCHED {
        format!("beyond {MAX_BATCH_SEARCHED}")
    } else {
        format!("{:.1}", row.break_even_batch)
    }
}

/// Limits that keep the page's inputs meaningful.
pub const MAX_K: u32 = 16;
pub const MAX_BATCH: u32 = 65_536;

impl WhatIf {
    /// The model's cost side.
    pub fn costs(&self) -> Costs {
        Costs {
            draft_cost: self.proposer.draft_cost(),
            ridge_tokens: self.gpu.ridge_tokens(),
        }
    }

    /// The α in force (given, or implied by the measured E).
    pub fn alpha(&self) -> f64 {
        match self.acceptance {
            Acceptance::Alpha(a) => a,
            Acceptance::MeasuredE(e) => model::implied_alpha(e, self.k),
        }
    }

    /// E at the selected k (given, or computed from α).
    pub fn expected_tokens(&self) -> f64 {
        match self.acceptance {
            Acceptance::Alpha(a) => model::expected_tokens(a, self.k),
            Acceptance::MeasuredE(e) => e,
        }
    }

    /// Draft tokens per draft that the selected k's costs charge: the measured mean when
    /// given, else k.
    pub fn selected_draft_tokens(&self) -> f64 {
        self.draft_tokens.unwrap_or(f64::from(self.k))
    }

    /// The step costs: the roofline with the KV read of `context_tokens` a sequence.
    pub fn step_costs(&self) -> StepCosts {
        StepCosts::Roofline {
            costs: self.costs(),
            kv_ratio: self.kv_ratio,
            draft_kv_share: 0.0,
        }
    }

    /// S(B) at this state's context for acceptance length `e` and `d` draft tokens a draft.
    pub fn speedup_at(&self, e: f64, d: f64, batch: f64) -> f64 {
        if self.context_tokens > 0.0 {
            self.step_costs().speedup(e, batch, self.context_tokens, d)
        } else {
            model::speedup(e, d, self.costs(), batch)
        }
    }

    /// The selected (α, k) row (at this state's context, when it has one).
    pub fn selected_row(&self) -> ModelRow {
        let d = self.selected_draft_tokens();
        let row = ModelRow::with_draft_tokens(self.alpha(), self.expected_tokens(), self.k, d, self.costs());
        self.at_context(row, d)
    }

    /// The α × k table: the listed α values plus the selected one, every listed k plus the
    /// selected one.
    pub fn table(&self) -> Vec<ModelRow> {
        let mut alphas = self.table_alphas.clone();
        let alpha = self.alpha();
        if !alphas.iter().any(|a| (a - alpha).abs() < 1e-9) {
            alphas.push(alpha);
        }
        alphas.sort_by(f64::total_cmp);
        let mut ks = self.table_ks.clone();
        if !ks.contains(&self.k) {
            ks.push(self.k);
        }
        ks.sort_unstable();
        model::model_table(&alphas, &ks, self.costs())
            .into_iter()
            .map(|row| {
                let d = f64::from(row.k);
                self.at_context(row, d)
            })
            .collect()
    }

    /// `row` with its speedups and B* at this state's context (unchanged without one): the
    /// roofline with the KV read; B* is the end of the searched batches where speculation
    /// still pays there, 0 where it never pays.
    fn at_context(&self, mut row: ModelRow, d: f64) -> ModelRow {
        if self.context_tokens > 0.0 {
            let costs = self.step_costs();
            let (e, l) = (row.expected_tokens, self.context_tokens);
            row.speedup_batch1 = costs.speedup(e, 1.0, l, d);
            row.speedup_asymptotic = costs.speedup(e, MAX_BATCH_SEARCHED, l, d);
            row.break_even_batch = match costs.break_even_batch(e, l, d) {
                BreakEven::At(b) | BreakEven::Beyond(b) => b,
                BreakEven::Never => 0.0,
            };
        }
        row
    }

    /// Best k from the measured per-position rates at the chosen batch.
    pub fn best_k(&self) -> Option<KChoice> {
        model::best_k(&self.position_rates, self.costs(), f64::from(self.batch))
    }

    /// Check ranges; returns a message per problem (the page shows them beside the inputs).
    pub fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        match self.acceptance {
            Acceptance::Alpha(a) if !(0.0..=1.0).contains(&a) => out.push(format!("α must be in [0, 1], got {a}")),
            Acceptance::MeasuredE(e) if !(e >= 1.0 && e <= f64::from(self.k) + 1.0) => out.push(format!(
                "a measured E must be in [1, k + 1] = [1, {}], got {e}",
                self.k + 1
            )),
            _ => {}
        }
        let c = self.proposer.draft_cost();
        if !(c.is_finite() && c >= 0.0) {
            out.push(format!("draft cost c must be ≥ 0, got {c}"));
        }
        let t = self.gpu.ridge_tokens();
        if !(t.is_finite() && t > 0.0) {
            out.push(format!("ridge must be > 0 token positions, got {t}"));
        }
        if let Some(p) = self.position_rates.iter().find(|p| !(0.0..=1.0).contains(*p)) {
            out.push(format!("per-position rates must be fractions in [0, 1], got {p}"));
        }
        if let Some(d) = self.draft_tokens.filter(|d| !(*d > 0.0 && *d <= f64::from(self.k))) {
            out.push(format!(
                "draft tokens per draft must be in (0, k] = (0, {}], got {d}",
                self.k
            ));
        }
        out
    }

    /// The URL fragment (without `#`) that reopens this state.
    pub fn to_fragment(&self) -> String {
        let mut s = String::from("whatif?");
        match self.acceptance {
            Acceptance::Alpha(a) => write!(s, "alpha={}", num(a)),
            Acceptance::MeasuredE(e) => write!(s, "e={}", num(e)),
        }
        .ok();
        write!(s, "&k={}", self.k).ok();
        if let Some(d) = self.draft_tokens {
            write!(s, "&d={}", num(d)).ok();
        }
        write!(s, "&proposer={}", self.proposer.key()).ok();
        if let Proposer::Custom(c) = self.proposer {
            write!(s, "&c={}", num(c)).ok();
        }
        match self.gpu {
            Gpu::Preset(key) => write!(s, "&gpu={key}"),
            Gpu::Ridge(t) => write!(s, "&gpu=custom&ridge={}", num(t)),
        }
        .ok();
        write!(s, "&bmax={}", self.batch_max).ok();
        write!(s, "&alphas={}", list(&self.table_alphas)).ok();
        write!(
            s,
            "&ks={}",
            self.table_ks.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
        )
        .ok();
        if !self.position_rates.is_empty() {
            write!(s, "&rates={}&batch={}", list(&self.position_rates), self.batch).ok();
        }
        if self.context_tokens > 0.0 {
            write!(s, "&ctx={}", num(self.context_tokens)).ok();
            if self.kv_ratio != KV_RATIO_8B_BF16 {
                write!(s, "&kv={}", num(self.kv_ratio)).ok();
            }
        }
        s
    }

    /// Read a fragment (with or without `#`). Returns the state and one message per value that
    /// could not be read (those keep their defaults).
    pub fn from_fragment(fragment: &str) -> (WhatIf, Vec<String>) {
        let mut w = WhatIf::default();
        let mut errors = Vec::new();
        let fragment = fragment.trim_start_matches('#');
        let query = fragment.split_once('?').map_or(fragment, |(_, q)| q);
        let mut custom_c = None;
        let mut proposer_key = None;
        let mut gpu_key = None;
        let mut ridge = None;
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            let value = percent_decode(value);
            let mut bad = |what: &str| errors.push(format!("ignored {key}={value:?}: {what}"));
            match key {
                "alpha" | "e" | "k" | "d" | "c" | "ridge" | "bmax" | "batch" | "ctx" | "kv" => {
                    match parse_input(key, &value) {
                        Ok(v) => match key {
                            "alpha" => w.acceptance = Acceptance::Alpha(v),
                            "e" => w.acceptance = Acceptance::MeasuredE(v),
                            "k" => w.k = v as u32,
                            "d" => w.draft_tokens = Some(v),
                            "c" => custom_c = Some(v),
                            "ridge" => ridge = Some(v),
                            "bmax" => w.batch_max = v as u32,
                            "ctx" => w.context_tokens = v,
                            "kv" => w.kv_ratio = v,
                            _ => w.batch = v as u32,
                        },
                        Err(rule) => bad(rule),
                    }
                }
                "proposer" => proposer_key = Some(value),
                "gpu" => gpu_key = Some(value),
                "alphas" => match parse_list(&value, |a: &f64| (0.0..=1.0).contains(a)) {
                    Some(v) if !v.is_empty() => w.table_alphas = v,
                    _ => bad("a list of α values in [0, 1]"),
                },
                "ks" => match parse_list(&value, |k: &u32| (1..=MAX_K).contains(k)) {
                    Some(v) if !v.is_empty() => w.table_ks = v,
                    _ => bad("a list of k values from 1 to 16"),
                },
                "rates" => match parse_list(&value, |p: &f64| (0.0..=1.0).contains(p)) {
                    Some(v) if v.len() <= MAX_K as usize => w.position_rates = v,
                    _ => bad("a list of at most 16 fractions in [0, 1]"),
                },
                _ => {}
            }
        }
        // A draft cost `c=` or a ridge `ridge=` alone means the custom proposer or GPU they
        // belong to; beside a preset they are ignored, and the notice says so.
        match (proposer_key.as_deref(), custom_c) {
            (None | Some("custom"), Some(c)) => w.proposer = Proposer::Custom(c),
            (Some("custom"), None) => w.proposer = Proposer::Custom(0.0),
            (None, None) | (Some("ngram"), None) => {}
            (Some("ngram"), Some(c)) => errors.push(format!(
                "ignored c={c}: proposer=ngram sets the draft cost (use proposer=custom)"
            )),
            (Some("1b-draft"), c) => {
                w.proposer = Proposer::Drafter1b;
                if let Some(c) = c {
                    errors.push(format!(
                        "ignored c={c}: proposer=1b-draft sets the draft cost (use proposer=custom)"
                    ));
                }
            }
            (Some(other), _) => errors.push(format!("ignored proposer={other:?}: use ngram, 1b-draft or custom")),
        }
        match (gpu_key.as_deref(), ridge) {
            (None | Some("custom"), Some(t)) => w.gpu = Gpu::Ridge(t),
            (Some("custom"), None) => w.gpu = Gpu::Ridge(295.0),
            (None, None) => {}
            (Some(key), ridge) => match model::gpu_preset(key) {
                Some(g) => {
                    w.gpu = Gpu::Preset(g.key);
                    if let Some(t) = ridge {
                        errors.push(format!("ignored ridge={t}: gpu={key} sets the ridge (use gpu=custom)"));
                    }
                }
                None => errors.push(format!("ignored gpu={key:?}: unknown GPU")),
            },
        }
        if let Acceptance::MeasuredE(e) = w.acceptance {
            if e > f64::from(w.k) + 1.0 {
                errors.push(format!("E = {e} is above k + 1 = {}: α is taken as 1", w.k + 1));
            }
        }
        if let Some(d) = w.draft_tokens.filter(|d| *d > f64::from(w.k)) {
            errors.push(format!("ignored d={d}: more draft tokens per draft than k = {}", w.k));
            w.draft_tokens = None;
        }
        (w, errors)
    }
}

/// The rule for one numeric input (`alpha`, `e`, `k`, `d`, `c`, `ridge`, `bmax`, `batch`),
/// shared by the URL and the page's inputs so both refuse the same values in the same words:
/// the number, or the rule it breaks.
pub fn parse_input(key: &str, text: &str) -> Result<f64, &'static str> {
    let v = text.trim().parse::<f64>().ok().filter(|v| v.is_finite());
    let whole = |lo: u32, hi: u32| v.filter(|v| v.fract() == 0.0 && (f64::from(lo)..=f64::from(hi)).contains(v));
    let (value, rule) = match key {
        "alpha" => (v.filter(|a| (0.0..=1.0).contains(a)), "α must be a number in [0, 1]"),
        "e" => (v.filter(|e| *e >= 1.0), "E must be a number ≥ 1"),
        "k" => (whole(1, MAX_K), "k must be a whole number from 1 to 16"),
        "d" => (v.filter(|d| *d > 0.0), "draft tokens per draft must be a number > 0"),
        "c" => (v.filter(|c| *c >= 0.0), "c must be a number ≥ 0"),
        "ridge" => (v.filter(|t| *t > 0.0), "the ridge must be a number > 0"),
        "bmax" => (
            whole(2, MAX_BATCH),
            "the batch axis must end at a whole number between 2 and 65536",
        ),
        "batch" => (
            whole(1, MAX_BATCH),
            "the batch must be a whole number between 1 and 65536",
        ),
        "ctx" => (
            v.filter(|l| (0.0..=MAX_CONTEXT).contains(l)),
            "the context must be a number of tokens from 0 to 4194304",
        ),
        "kv" => (
            v.filter(|r| (0.0..=1.0).contains(r)),
            "the KV ratio must be a number in [0, 1]",
        ),
        _ => (None, "not an input of the model"),
    };
    value.ok_or(rule)
}

/// Shortest decimal text that reads back as the same number.
fn num(v: f64) -> String {
    format!("{v}")
}

fn list(values: &[f64]) -> String {
    values.iter().map(|v| num(*v)).collect::<Vec<_>>().join(",")
}

fn parse_list<T: std::str::FromStr>(text: &str, ok: impl Fn(&T) -> bool) -> Option<Vec<T>> {
    text.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse::<T>().ok().filter(&ok))
        .collect()
}

/// Decode `%XX` escapes (browsers escape `,` in some fragments); invalid escapes stay as text.
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = |b: u8| (b as char).to_digit(16);
            if let (Some(hi), Some(lo)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                out.push((hi * 16 + lo) as u8);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Parse a comma list of numbers typed by a user (the page's list inputs).
pub fn parse_number_list(text: &str) -> Option<Vec<f64>> {
    parse_list(text, |v: &f64| v.is_finite())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_measured_draft_length_feeds_the_selected_row() {
        let (w, errors) = WhatIf::from_fragment("#whatif?e=2.5&k=3&d=2.5&gpu=h100");
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(w.draft_tokens, Some(2.5));
        let ridge = w.costs().ridge_tokens;
        assert!((w.selected_row().break_even_batch - ridge * 2.5 / 3.5).abs() < 1e-9);
        assert!(w.to_fragment().contains("&k=3&d=2.5&"), "{}", w.to_fragment());
        let (too_long, errors) = WhatIf::from_fragment("#whatif?e=2.5&k=3&d=3.5");
        assert_eq!(too_long.draft_tokens, None);
        assert_eq!(errors.len(), 1, "{errors:?}");
    }

    #[test]
    fn fragment_round_trips() {
        let w = WhatIf {
            acceptance: Acceptance::MeasuredE(3.2),
            k: 4,
            proposer: Proposer::Custom(0.12),
            gpu: Gpu::Ridge(250.5),
            batch_max: 1024,
            table_alphas: vec![0.5, 0.9],
            table_ks: vec![2, 4],
            position_rates: vec![0.8, 0.6, 0.3],
            batch: 32,
            draft_tokens: Some(3.25),
            context_tokens: 8192.0,
            kv_ratio: 2e-5,
        };
        let (back, errors) = WhatIf::from_fragment(&format!("#{}", w.to_fragment()));
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(back, w);
        let (back, _) = WhatIf::from_fragment(&WhatIf::default().to_fragment());
        assert_eq!(back, WhatIf::default());
    }

    #[test]
    fn bad_values_fall_back_and_are_reported() {
        let (w, errors) = WhatIf::from_fragment("#whatif?alpha=2&k=0&gpu=tpu&alphas=0.5,x&proposer=1b-draft");
        assert_eq!(w.acceptance, Acceptance::Alpha(0.7));
        assert_eq!(w.k, 3);
        assert_eq!(w.proposer, Proposer::Drafter1b);
        assert_eq!(errors.len(), 4, "{errors:?}");
    }

    #[test]
    fn percent_escapes_are_decoded() {
        // A ridge alone is a custom GPU (the link `speclens demo` prints); beside a preset it is
        // named as ignored, never dropped in silence.
        let (w, errors) = WhatIf::from_fragment("#whatif?e=2.739&k=3&batch=64&ridge=74");
        assert_eq!((w.gpu, errors.len()), (Gpu::Ridge(74.0), 0), "{errors:?}");
        let (w, errors) = WhatIf::from_fragment("#whatif?e=2.739&k=3&ridge=74&gpu=h100&c=0.1");
        assert_eq!(w.gpu, Gpu::Preset("h100"));
        assert_eq!(w.proposer, Proposer::Custom(0.1));
        assert_eq!(
            errors,
            vec!["ignored ridge=74: gpu=h100 sets the ridge (use gpu=custom)".to_string()]
        );
        let (w, errors) = WhatIf::from_fragment("whatif?alphas=0.3%2C0.5&gpu=h200");
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(w.table_alphas, vec![0.3, 0.5]);
        assert_eq!(w.gpu.ridge_tokens(), 206.0);
        assert_eq!(percent_decode("50%"), "50%");
        assert_eq!(percent_decode("%zz%4"), "%zz%4");
        assert_eq!(percent_decode("%aé%C3%A9"), "%aéé");
    }

    #[test]
    fn measured_e_implies_alpha_and_the_table_includes_the_selection() {
        let (w, _) = WhatIf::from_fragment("e=3.2&k=3&ks=1,2&alphas=0.4");
        assert_eq!(format!("{:.4}", w.alpha()), "0.8527");
        let table = w.table();
        assert_eq!(table.len(), 2 * 3);
        let selected = table
            .iter()
            .find(|r| r.k == 3 && r.alpha == w.alpha())
            .expect("selected row in table");
        assert!((selected.expected_tokens - 3.2).abs() < 1e-6);
        assert_eq!(w.selected_row().expected_tokens, 3.2);
        assert!((w.selected_row().break_even_batch - 236.0).abs() < 1e-9);
    }

    #[test]
    fn problems_are_listed() {
        let w = WhatIf {
            acceptance: Acceptance::MeasuredE(9.0),
            proposer: Proposer::Custom(-1.0),
            ..WhatIf::default()
        };
        assert_eq!(w.problems().len(), 2, "{:?}", w.problems());
        assert!(WhatIf::default().problems().is_empty());
    }

    #[test]
    fn a_context_moves_the_break_even_and_travels_in_the_url() {
        let (w, errors) = WhatIf::from_fragment("whatif?alpha=0.7&k=3&gpu=h100&ctx=400");
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(w.context_tokens, 400.0);
        assert!(w.to_fragment().ends_with("&ctx=400"), "{}", w.to_fragment());
        assert_eq!(WhatIf::from_fragment(&w.to_fragment()).0, w);
        // The KV read keeps the plain step bandwidth-bound longer: B* moves right.
        let without = WhatIf::from_fragment("whatif?alpha=0.7&k=3&gpu=h100").0;
        let b0 = without.selected_row().break_even_batch;
        let b = w.selected_row().break_even_batch;
        match w.step_costs().break_even_batch(w.expected_tokens(), 400.0, 3.0) {
            BreakEven::At(want) => assert_eq!(b, want),
            other => panic!("{other:?}"),
        }
        assert!(b > b0, "{b} against {b0}");
        // The table and the chart follow the same context.
        let row = w
            .table()
            .into_iter()
            .find(|r| r.k == 3 && (r.alpha - 0.7).abs() < 1e-9)
            .unwrap();
        assert_eq!(row.break_even_batch, b);
        let (_, errors) = WhatIf::from_fragment("whatif?ctx=-5&kv=2");
        assert_eq!(errors.len(), 2, "{errors:?}");
    }
}
