//! The spec-decode figures that every engine's counts give, each written once: the acceptance
//! length and the acceptance rate. Counters, per-second rates and per-request counts all come
//! here (a rate's interval cancels out of both ratios).

/// Mean tokens one speculative step emits: the draft tokens accepted per draft, plus the token
/// the target model emits in every step (vLLM's `mean_acceptance_length`, SGLang's
/// `accept_length`, TensorRT-LLM's `acceptance_length`). `None` without a draft.
pub fn acceptance_length(accepted: f64, drafts: f64) -> Option<f64> {
    (drafts > 0.0 && drafts.is_finite()).then(|| 1.0 + accepted / drafts)
}

/// [`acceptance_length`] of whole counts (a request's, a category's, a run's).
pub fn acceptance_length_of_counts(accepted: u64, drafts: u64) -> Option<f64> {
    acceptance_length(accepted as f64, drafts as f64)
}

/// The share of the drafted tokens that were accepted, in percent (vLLM's "Draft acceptance
/// rate"). `None` without a drafted token.
pub fn acceptance_rate_pct(accepted: f64, drafted: f64) -> Option<f64> {
    (drafted > 0.0 && drafted.is_finite()).then(|| accepted / drafted * 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worked_examples() {
        // 100 drafts of 3 tokens, 150 of the 300 accepted: 2.5 tokens a step, 50 %.
        assert_eq!(acceptance_length(150.0, 100.0), Some(2.5));
        assert_eq!(acceptance_rate_pct(150.0, 300.0), Some(50.0));
        assert_eq!(acceptance_length(0.0, 0.0), None);
        assert_eq!(acceptance_rate_pct(0.0, 0.0), None);
        assert_eq!(acceptance_length(1.0, f64::NAN), None);
    }
}
