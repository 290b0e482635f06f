//! What a run's two spec-decode paths say about each other, and about the server: the counter
//! window against the sum of the run's own per-request stats (other traffic, or a replica no
//! scrape reached), drafts shorter than k, and a server that returned no per-request stats.
//! Each finding is a typed value with its console sentence; the collector prints them, writes
//! them to `result.json` and shows them on the dashboard.

use serde::{Deserialize, Serialize};

use crate::scrape::SpecCounters;

/// Drafts, draft tokens and accepted tokens: what both paths count.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpecTotals {
    pub drafts: u64,
    pub draft_tokens: u64,
    pub accepted_tokens: u64,
}

impl SpecTotals {
    /// The totals of a counter window.
    pub fn from_counters(c: &SpecCounters) -> SpecTotals {
        SpecTotals {
            drafts: c.num_drafts,
            draft_tokens: c.num_draft_tokens,
            accepted_tokens: c.num_accepted_tokens,
        }
    }

    /// `self − other` in each figure, saturating at zero.
    fn minus(&self, other: &SpecTotals) -> SpecTotals {
        SpecTotals {
            drafts: self.drafts.saturating_sub(other.drafts),
            draft_tokens: self.draft_tokens.saturating_sub(other.draft_tokens),
            accepted_tokens: self.accepted_tokens.saturating_sub(other.accepted_tokens),
        }
    }

    fn phrase(&self) -> String {
        format!(
            "{} drafts, {} draft tokens and {} accepted tokens",
            self.drafts, self.draft_tokens, self.accepted_tokens
        )
    }
}

/// How the counter window and the run's per-request totals compare.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "verdict")]
pub enum Agreement {
    /// Equal in every figure.
    Equal,
    /// The counters grew by more than this run's requests report: the difference came from
    /// elsewhere (another client of the same server, or requests of this run that returned no
    /// stats).
    OtherTraffic { difference: SpecTotals },
    /// This run's requests report more than the counters grew: some of them were served where
    /// no scrape reached (a replica behind a router, or a metrics URL left out).
    Unscraped { difference: SpecTotals },
    /// Some figures higher on one path, some on the other: the two paths do not describe the
    /// same traffic.
    Inconsistent,
}

/// The two paths side by side.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathAgreement {
    /// Growth of the scraped counters over the run's window (every scraped endpoint summed).
    pub counters: SpecTotals,
    /// Sum of the per-request stats of the run's window.
    pub per_request: SpecTotals,
    /// Requests of the window that returned no per-request stats (failed ones included).
    pub requests_without_stats: u64,
    #[serde(flatten)]
    pub agreement: Agreement,
}

impl PathAgreement {
    pub fn compare(counters: SpecTotals, per_request: SpecTotals, requests_without_stats: u64) -> PathAgreement {
        let more = [
            (counters.drafts, per_request.drafts),
            (counters.draft_tokens, per_request.draft_tokens),
            (counters.accepted_tokens, per_request.accepted_tokens),
        ];
        let counters_higher = more.iter().any(|(c, p)| c > p);
        let requests_higher = more.iter().any(|(c, p)| p > c);
        let agreement = match (counters_higher, requests_higher) {
            (false, false) => Agreement::Equal,
            (true, false) => Agreement::OtherTraffic {
                difference: counters.minus(&per_request),
            },
            (false, true) => Agreement::Unscraped {
                difference: per_request.minus(&counters),
            },
            (true, true) => Agreement::Inconsistent,
        };
        PathAgreement {
            counters,
            per_request,
            requests_without_stats,
            agreement,
        }
    }

    /// The console sentence; `None` when the paths agree.
    pub fn message(&self) -> Option<String> {
        let both = format!(
            "the /metrics window counted {}; this run's requests reported {}",
            self.counters.phrase(),
            self.per_request.phrase()
        );
        match self.agreement {
            Agreement::Equal => None,
            Agreement::OtherTraffic { difference } => {
                let own = if self.requests_without_stats > 0 {
                    format!(
                        " or {} of this run's requests that returned no stats",
                        self.requests_without_stats
                    )
                } else {
                    String::new()
                };
                Some(format!(
                    "Paths disagree: {both}. {} came from other traffic on the server{own}; the scrape figures include it, the per-request figures do not.",
                    capitalise(&difference.phrase())
                ))
            }
            Agreement::Unscraped { difference } => Some(format!(
                "Paths disagree: {both}. {} were served where no scrape reached (a replica behind a router, or a server missing from --metrics-url): the scrape figures miss them.",
                capitalise(&difference.phrase())
            )),
            Agreement::Inconsistent => Some(format!(
                "Paths disagree: {both}; neither holds the other, so they do not describe the same traffic (a counter reset, or a replica missed while others saw other traffic)."
            )),
        }
    }
}

fn capitalise(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().collect::<String>() + chars.as_str(),
        None => String::new(),
    }
}

/// Draft tokens per draft against the configured k. n-gram and suffix proposers draft fewer
/// than k tokens when their match is short, so costs charged for full k-token drafts are too
/// high.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DraftLength {
    /// Draft tokens ÷ drafts.
    pub mean_draft_tokens: f64,
    /// The configured number of speculative tokens.
    pub k: u32,
}

impl DraftLength {
    /// The measured mean, when there were drafts and k is known.
    pub fn measure(drafts: u64, draft_tokens: u64, k: Option<u32>) -> Option<DraftLength> {
        let k = k.filter(|k| *k > 0)?;
        (drafts > 0).then(|| DraftLength {
            mean_draft_tokens: draft_tokens as f64 / drafts as f64,
            k,
        })
    }

    /// Whether the drafts were shorter than k on average (by more than rounding).
    pub fn is_short(&self) -> bool {
        self.mean_draft_tokens < f64::from(self.k) - 0.005
    }

    /// The console sentence; `None` when drafts were k tokens long.
    pub fn message(&self) -> Option<String> {
        self.is_short().then(|| {
            format!(
                "Drafts were shorter than k: {:.2} draft tokens per draft for k = {} (the proposer drafts fewer tokens when its match is short). The sweep's prediction and the what-if charge the measured length, not k (by hand: speclens model --draft-tokens {:.2}).",
                self.mean_draft_tokens, self.k, self.mean_draft_tokens
            )
        })
    }
}

/// How to make each engine return per-request stats, for a run that got none.
pub const PER_REQUEST_HOW_TO: &str = "vLLM: start the server with --per-request-spec-decode-metrics summary (or detailed); SGLang: speclens sends return_spec_tokens_details to servers that name themselves SGLang in /v1/models (--sglang-spec-details forces it); TensorRT-LLM: released trtllm-serve returns only avg_decoded_tokens_per_iter per choice, per-request counts need its per_request_spec_decode_stats option (PR #19311, not merged)";

/// The sentence for a run whose successful requests carried no per-request stats, or `None`
/// when nothing is missing. `drafts` is what the server's counters show (`Some(0)`: a server
/// that does not speculate, so no stats are due; `None`: no counters were read).
pub fn missing_per_request_stats(successful: u64, with_stats: u64, drafts: Option<u64>) -> Option<String> {
    if successful == 0 || with_stats > 0 || drafts == Some(0) {
        return None;
    }
    let (seen, turn_on) = match drafts {
        Some(d) => (format!(" although its counters show {d} drafts"), "To turn them on"),
        None => (String::new(), "If it speculates, turn them on"),
    };
    Some(format!(
        "The server returned no per-request spec-decode stats with any of the {successful} successful responses{seen}, so the per-request figures are missing. {turn_on}: {PER_REQUEST_HOW_TO}."
    ))
}

/// Everything a run noticed about its paths, as written to `result.json` (`notices`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Notices {
    /// The counter window against the per-request totals, when both paths have figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_agreement: Option<PathAgreement>,
    /// Draft tokens per draft, when k and the drafts are known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub draft_length: Option<DraftLength>,
    /// True when the requests succeeded but none carried per-request stats.
    #[serde(default)]
    pub per_request_stats_missing: bool,
    /// The sentences, in the order the console prints them.
    pub messages: Vec<String>,
    /// How the workload biases the acceptance measured ([`workload_warnings`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workload: Vec<String>,
}

/// What [`Notices::assess`] compares.
#[derive(Debug, Clone, Default)]
pub struct PathFigures<'a> {
    /// The counters' growth over the window, when every scraped endpoint's window is valid.
    pub counters: Option<&'a SpecCounters>,
    /// The per-request totals, when any request carried stats.
    pub per_request: Option<SpecTotals>,
    /// k as the per-request stats name it.
    pub per_request_k: Option<u32>,
    /// Requests of the window, successful ones, and those that carried per-request stats.
    pub requests: u64,
    pub successful: u64,
    pub with_stats: u64,
    /// Whether the server's counters show it speculates: `Some(false)` for a server without
    /// spec-decode metrics, `None` when no counters were read.
    pub server_speculates: Option<bool>,
}

impl Notices {
    pub fn assess(f: &PathFigures<'_>) -> Notices {
        let path_agreement = match (f.counters, f.per_request) {
            (Some(c), Some(p)) => Some(PathAgreement::compare(
                SpecTotals::from_counters(c),
                p,
                f.requests.saturating_sub(f.with_stats),
            )),
            _ => None,
        };
        let k = f
            .per_request_k
            .or_else(|| f.counters.map(|c| c.accepted_per_pos.len() as u32));
        let draft_length = match (f.counters, f.per_request) {
            (Some(c), _) => DraftLength::measure(c.num_drafts, c.num_draft_tokens, k),
            (None, Some(p)) => DraftLength::measure(p.drafts, p.draft_tokens, k),
            (None, None) => None,
        };
        let drafts_seen = match (f.server_speculates, f.counters) {
            (Some(false), _) => Some(0),
            (_, Some(c)) => Some(c.num_drafts),
            (Some(true), None) | (None, None) => None,
        };
        let missing = missing_per_request_stats(f.successful, f.with_stats, drafts_seen);
        let messages = [
            path_agreement.and_then(|a| a.message()),
            draft_length.and_then(|d| d.message()),
            missing.clone(),
        ]
        .into_iter()
        .flatten()
        .collect();
        Notices {
            path_agreement,
            draft_length,
            per_request_stats_missing: missing.is_some(),
            messages,
            workload: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn totals(drafts: u64, draft_tokens: u64, accepted_tokens: u64) -> SpecTotals {
        SpecTotals {
            drafts,
            draft_tokens,
            accepted_tokens,
        }
    }

    #[test]
    fn equal_paths_say_nothing() {
        let a = PathAgreement::compare(totals(10, 28, 20), totals(10, 28, 20), 0);
        assert_eq!(a.agreement, Agreement::Equal);
        assert_eq!(a.message(), None);
    }

    #[test]
    fn other_traffic_is_named_with_its_size() {
        let a = PathAgreement::compare(totals(920, 2484, 1730), totals(702, 1895, 1321), 0);
        assert_eq!(
            a.agreement,
            Agreement::OtherTraffic {
                difference: totals(218, 589, 409)
            }
        );
        let text = a.message().unwrap();
        assert!(
            text.contains("218 drafts, 589 draft tokens and 409 accepted tokens came from other traffic"),
            "{text}"
        );
        let own = PathAgreement::compare(totals(920, 2484, 1730), totals(702, 1895, 1321), 3);
        assert!(own.message().unwrap().contains("or 3 of this run's requests"));
    }

    #[test]
    fn an_unscraped_replica_and_a_mixed_picture() {
        let a = PathAgreement::compare(totals(500, 1400, 900), totals(702, 1895, 1321), 0);
        assert_eq!(
            a.agreement,
            Agreement::Unscraped {
                difference: totals(202, 495, 421)
            }
        );
        assert!(a.message().unwrap().contains("no scrape reached"));
        let b = PathAgreement::compare(totals(800, 1400, 900), totals(702, 1895, 1321), 0);
        assert_eq!(b.agreement, Agreement::Inconsistent);
        let json = serde_json::to_value(a).unwrap();
        assert_eq!(json["verdict"], "unscraped");
        assert_eq!(json["difference"]["drafts"], 202);
    }

    #[test]
    fn short_drafts_are_reported() {
        let d = DraftLength::measure(300, 778, Some(3)).unwrap();
        assert!((d.mean_draft_tokens - 778.0 / 300.0).abs() < 1e-12);
        assert!(d.message().unwrap().contains("2.59 draft tokens per draft for k = 3"));
        assert_eq!(DraftLength::measure(300, 900, Some(3)).unwrap().message(), None);
        assert_eq!(DraftLength::measure(0, 0, Some(3)), None);
        assert_eq!(DraftLength::measure(3, 9, None), None);
    }

    #[test]
    fn missing_stats_say_how_to_turn_them_on() {
        let text = missing_per_request_stats(16, 0, Some(300)).unwrap();
        assert!(text.contains("16 successful responses although its counters show 300 drafts"));
        assert!(text.contains("--per-request-spec-decode-metrics summary"));
        assert_eq!(missing_per_request_stats(16, 1, Some(300)), None);
        assert_eq!(missing_per_request_stats(0, 0, None), None);
        assert_eq!(missing_per_request_stats(16, 0, Some(0)), None);
        assert!(missing_per_request_stats(16, 0, None)
            .unwrap()
            .contains("If it speculates"));
    }

    #[test]
    fn a_run_assessed_from_both_paths() {
        let counters = SpecCounters::new(920, 2484, 1730, &[600, 500, 400]);
        let n = Notices::assess(&PathFigures {
            counters: Some(&counters),
            per_request: Some(totals(702, 1895, 1321)),
            per_request_k: Some(3),
            requests: 40,
            successful: 40,
            with_stats: 40,
            server_speculates: Some(true),
        });
        assert!(matches!(
            n.path_agreement.unwrap().agreement,
            Agreement::OtherTraffic { .. }
        ));
        assert_eq!(n.draft_length.unwrap().k, 3);
        assert!(!n.per_request_stats_missing);
        assert_eq!(n.messages.len(), 2, "{:?}", n.messages);
        let plain = Notices::assess(&PathFigures {
            requests: 8,
            successful: 8,
            server_speculates: Some(false),
            ..PathFigures::default()
        });
        assert_eq!(plain, Notices::default());
        let silent = Notices::assess(&PathFigures {
            counters: Some(&counters),
            requests: 8,
            successful: 8,
            server_speculates: Some(true),
            ..PathFigures::default()
        });
        assert!(silent.per_request_stats_missing);
        assert_eq!(silent.draft_length.unwrap().k, 3, "k from the per-position counters");
    }
}
