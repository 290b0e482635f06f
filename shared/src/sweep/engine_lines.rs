//! The engine lines of a recommendation: vLLM's `--speculative-config` (one k, or its
//! per-batch-size schedule), the model's schedule to try as an adaptive arm, SGLang's draft flags
//! and adaptive tiers, TensorRT-LLM's draft-length schedule; each naming what it rests on.

use super::arms::Arms;
use super::recommend::{Recommendation, Setting, SettingKind, SCHEDULE_END};
use super::schedules::{check_vllm_schedule, sglang_adaptive_config, TrtllmSchedule};
use crate::engine::Engine;

impl Recommendation {
    /// The engine lines of this recommendation.
    pub(super) fn settings_lines(&self, speculative_config: Option<&serde_json::Value>) -> Vec<Setting> {
        let mut out = Vec::new();
        let Some(first) = self.ranges.first() else {
            return out;
        };
        let unknown: Vec<&str> = self
            .ranges
            .iter()
            .filter(|r| r.k.is_none())
            .filter_map(|r| r.arm.as_deref())
            .collect();
        if !unknown.is_empty() {
            out.push(unwritten_vllm_line(format!(
                "no line: arm {} measured no acceptance, so its k is unknown (give the sweep the server's metrics)",
                unknown.join(", ")
            )));
            return out;
        }
        let measured = self.basis();
        let top_k = self.ranges.iter().filter_map(|r| r.k).max().unwrap_or(0);
        let first_k = first.k.unwrap_or(0);
        let mut config = own_keys(speculative_config);
        let template_note = if speculative_config.is_some() {
            String::new()
        } else {
            "; merge these keys into the servers' own --speculative-config (give it to the sweep as --speculative-config to print the whole line)".to_string()
        };
        if top_k == 0 {
            out.push(Setting {
                engine: Engine::Vllm,
                kind: SettingKind::Fixed,
                line: "(no --speculative-config: serve without speculation)".into(),
                basis: format!("plain measured best at every level ({measured})"),
                warnings: Vec::new(),
            });
            return out;
        }
        config.insert("num_speculative_tokens".into(), top_k.into());
        let schedule: Vec<(u64, u64, u32)> = self.batch_schedule();
        let single = schedule.len() == 1;
        if let Err(e) = check_vllm_schedule(&schedule, top_k) {
            out.push(unwritten_vllm_line(format!("no line: {e} ({measured})")));
            return out;
        }
        if self.axis.is_concurrency() && !single {
            config.insert(
                "num_speculative_tokens_per_batch_size".into(),
                serde_json::to_value(&schedule).unwrap_or_default(),
            );
        } else {
            config.remove("num_speculative_tokens_per_batch_size");
        }
        let vllm_kind = if config.contains_key("num_speculative_tokens_per_batch_size") {
            SettingKind::Schedule
        } else {
            SettingKind::Fixed
        };
        let json = serde_json::Value::Object(config).to_string();
        let schedule_note = self.vllm_schedule_note(single);
        out.push(Setting {
            engine: Engine::Vllm,
            kind: vllm_kind,
            line: format!("--speculative-config '{json}'"),
            basis: format!("{measured}{schedule_note}{template_note}"),
            warnings: Vec::new(),
        });
        if first_k > 0 {
            out.push(self.sglang_line(first_k));
        }
        out
    }

    /// What the vLLM line's schedule is (a concurrency sweep of several ranges), or where a
    /// rate sweep's traffic goes above its cut-off.
    fn vllm_schedule_note(&self, single: bool) -> String {
        if self.axis.is_concurrency() {
            if single {
                String::new()
            } else {
                "; the schedule is vLLM's num_speculative_tokens_per_batch_size (vLLM 0.32; inclusive batch-size ranges, k = 0 turns speculation off), with the running batch taken as the sweep's concurrency; vLLM counts every request scheduled in a step, prefills included, so a load that sits at a cut crosses it step by step (vLLM #49548): keep your operating concurrency away from the cuts, and a k = 0 range still pays the drafter's KV and CUDA-graph mode, unlike a plain server (vLLM #51575)".into()
            }
        } else {
            match &self.cut_off {
                Some(c) => format!(
                    "; a rate sweep gives no batch sizes for vLLM's per-batch-size schedule: above {:.1} requests/s route traffic to a plain server",
                    c.level
                ),
                None => String::new(),
            }
        }
    }

    /// The model's schedule as a vLLM line, on a concurrency sweep where it changes k with the
    /// batch and differs from the measured schedule: not every k of it was measured, so it is
    /// a schedule to start a server with and judge as an adaptive arm beside the fixed-k arms.
    pub(super) fn model_schedule_line(&self, speculative_config: Option<&serde_json::Value>) -> Option<Setting> {
        let m = self.model.as_ref().filter(|_| self.axis.is_concurrency())?;
        let top_k = m.ranges.iter().map(|r| r.2).max().filter(|k| *k > 0)?;
        if m.ranges.len() < 2 || m.ranges == self.batch_schedule() || check_vllm_schedule(&m.ranges, top_k).is_err() {
            return None;
        }
        let mut config = own_keys(speculative_config);
        config.insert("num_speculative_tokens".into(), top_k.into());
        config.insert(
            "num_speculative_tokens_per_batch_size".into(),
            serde_json::to_value(&m.ranges).unwrap_or_default(),
        );
        Some(Setting {
            engine: Engine::Vllm,
            kind: SettingKind::ModelSchedule,
            line: format!("--speculative-config '{}'", serde_json::Value::Object(config)),
            basis: format!(
                "the model's best k by batch size from {}'s per-position rates and the sweep's --draft-cost and --ridge, not measured at every k: start a server with it and sweep it as an adaptive arm (--arm NAME=URL --adaptive 'NAME={}') beside the fixed-k arms to judge it and check at each level that the server applied it",
                m.rates_from,
                serde_json::to_string(&m.ranges).unwrap_or_default()
            ),
            warnings: Vec::new(),
        })
    }

    /// SGLang's fixed draft length: the lowest range's k (EAGLE with top-k 1).
    pub(super) fn sglang_line(&self, first_k: u32) -> Setting {
        let off = match &self.cut_off {
            Some(c) => format!(
                "; SGLang takes one draft length for every batch: above {:.1} {} route traffic to a plain server",
                c.level,
                self.axis.unit()
            ),
            None => String::new(),
        };
        Setting {
            engine: Engine::Sglang,
            kind: SettingKind::Fixed,
            line: format!(
                "--speculative-num-steps {first_k} --speculative-eagle-topk 1 --speculative-num-draft-tokens {}",
                first_k + 1
            ),
            basis: format!("k = {first_k} of the lowest range (EAGLE with top-k 1: k steps, k + 1 draft tokens){off}"),
            warnings: Vec::new(),
        }
    }

    /// SGLang's adaptive tiers and TensorRT-LLM's draft-length schedule, on a concurrency sweep
    /// whose schedule changes k (a rate sweep gives no batch sizes; one k needs no schedule).
    pub(super) fn schedule_lines(&self, arms: &Arms) -> Vec<Setting> {
        let schedule = self.batch_schedule();
        if !self.axis.is_concurrency()
            || schedule.len() < 2
            || self.ranges.iter().any(|r| r.arm.is_some() && r.k.is_none())
        {
            return Vec::new();
        }
        let measured = self.basis();
        let mut out = Vec::new();
        // Each tier's candidates: its own k and those of the arms (or plain) tied with its picks.
        let k_of = |name: &str| match name {
            "plain" => Some(0),
            _ => arms.arm(name).and_then(|a| a.k),
        };
        let tiers: Vec<(u64, Vec<u32>)> = schedule
            .iter()
            .map(|&(from, to, k)| {
                let mut steps = vec![k];
                for l in self
                    .levels
                    .iter()
                    .filter(|l| (from..=to).contains(&(l.level.round() as u64)))
                {
                    steps.extend(l.tied.iter().filter_map(|t| k_of(t)));
                }
                (from, steps)
            })
            .collect();
        out.push(Setting {
            engine: Engine::Sglang,
            kind: SettingKind::Adaptive,
            line: format!(
                "--speculative-algorithm EAGLE --speculative-eagle-topk 1 --speculative-adaptive --speculative-adaptive-config adaptive.json  # adaptive.json: {}",
                sglang_adaptive_config(&tiers)
            ),
            basis: format!(
                "{measured}; one tier per range, keyed by its first batch size (SGLang takes the tier of the largest key at or below the running batch), its candidate steps the range's k and those of the arms within its noise (0: off)"
            ),
            warnings: vec![
                "SGLang's adaptive steps run with EAGLE or EAGLE3 at top-k 1 only, and not with attention data parallelism".into(),
                "SGLang pads the running batch up to its next captured CUDA-graph batch size before it picks a tier (adaptive_step_router.py): a key between two captured sizes takes effect from the lower one + 1, so capture the keys' batch sizes (--cuda-graph-bs) to keep the cuts where they are".into(),
            ],
        });
        if let Some(t) = TrtllmSchedule::floored(&schedule) {
            // The two-model form beside it, with what its capping changed (none when the first
            // range drafts nothing: the engine cannot start a schedule there).
            let two_model = TrtllmSchedule::of(&schedule).map_or_else(
                || {
                    "none, as its first range drafts nothing (TensorRT-LLM takes the first key's k as max_draft_len)"
                        .to_string()
                },
                |m| match m.capped_note() {
                    Some(note) => format!("{} ({note})", m.yaml()),
                    None => m.yaml(),
                },
            );
            // Where speculation goes off, that load is routed: the floored line never turns it off.
            let off: Vec<String> = schedule
                .iter()
                .filter(|r| r.2 == 0)
                .map(|&(from, to, _)| match to {
                    SCHEDULE_END => format!("{from} and above"),
                    to if to > from => format!("{from}–{to}"),
                    _ => from.to_string(),
                })
                .collect();
            let route = if off.is_empty() {
                String::new()
            } else {
                format!(
                    "; concurrency {}: route to a plain server (the line keeps k ≥ 1 there)",
                    off.join(", ")
                )
            };
            out.push(Setting {
                engine: Engine::Trtllm,
                kind: SettingKind::Schedule,
                line: t.yaml(),
                basis: format!(
                    "{measured}{route}; in --extra_llm_api_options, beside your decoding_type and draft model. draft_len_schedule in its newer form (NVIDIA/TensorRT-LLM PR #10860, get_draft_len_for_batch_size): k for batch sizes up to each key, the smallest key's k as max_draft_len, and no max_concurrency beside it (the engine refuses the two together); a build before it reads a key as \"from this batch size on\". Written for a one-engine drafter (MTP, one-model EAGLE-3, DFlash), as the method is not known here: with a two-model drafter (a separate draft model) the line may turn speculation off itself: {}",
                    two_model
                ),
                warnings: [
                    Some("floored at k = 1, no max_concurrency: a one-engine drafter skips its forward where the schedule resolves to 0 (max_concurrency is such an entry) and its state goes stale, so acceptance collapses for the rest of each request once speculation resumes (NVIDIA/TensorRT-LLM #16888)".to_string()),
                    Some("a SpeculationGate (acceptance_window, acceptance_length_threshold) in the same config can turn speculation off for good in the middle of a run: leave it out while the schedule decides".to_string()),
                    t.capped_note(),
                ]
                .into_iter()
                .flatten()
                .collect(),
            });
        }
        out
    }
}

/// A vLLM setting without a line, and why.
fn unwritten_vllm_line(basis: String) -> Setting {
    Setting {
        engine: Engine::Vllm,
        kind: SettingKind::Unwritten,
        line: String::new(),
        basis,
        warnings: Vec::new(),
    }
}

/// The servers' own `--speculative-config` keys, which every vLLM line keeps.
pub(super) fn own_keys(speculative_config: Option<&serde_json::Value>) -> serde_json::Map<String, serde_json::Value> {
    match speculative_config {
        Some(serde_json::Value::Object(m)) => m.clone(),
        _ => serde_json::Map::new(),
    }
}
