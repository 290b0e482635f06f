//! One short definition per figure speclens shows: the pages put it on hover and focus (the
//! `title` of a tile, column or chart), and docs/METRICS.md's glossary holds the same words
//! (a unit test keeps them equal), so a figure means one thing wherever it is read.

/// A figure shown on a page, a report or the console.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Term {
    AcceptanceRate,
    AcceptanceLength,
    AcceptedPerS,
    DraftedPerS,
    DraftsPerS,
    DraftShare,
    Ttft,
    Itl,
    ItlPerToken,
    TokensPerChunk,
    Tpot,
    E2el,
    Interactivity,
    OutputWholeRun,
    OutputSteady,
    Concurrency,
    DraftPosition,
    Ratio,
    Crossing,
    ModelBreakEven,
    DraftLength,
    ImpliedAlpha,
    BestK,
    Goodput,
}

impl Term {
    /// Every term, in the glossary's order.
    pub const ALL: [Term; 24] = [
        Term::AcceptanceRate,
        Term::AcceptanceLength,
        Term::AcceptedPerS,
        Term::DraftedPerS,
        Term::DraftsPerS,
        Term::DraftShare,
        Term::Ttft,
        Term::Itl,
        Term::ItlPerToken,
        Term::TokensPerChunk,
        Term::Tpot,
        Term::E2el,
        Term::Interactivity,
        Term::OutputWholeRun,
        Term::OutputSteady,
        Term::Concurrency,
        Term::DraftPosition,
        Term::Ratio,
        Term::Crossing,
        Term::ModelBreakEven,
        Term::DraftLength,
        Term::ImpliedAlpha,
        Term::BestK,
        Term::Goodput,
    ];

    /// The figure's name as the pages label it.
    pub fn name(self) -> &'static str {
        match self {
            Term::AcceptanceRate => "acceptance rate (%)",
            Term::AcceptanceLength => "acceptance length (E)",
            Term::AcceptedPerS => "accepted tokens/s",
            Term::DraftedPerS => "drafted tokens/s",
            Term::DraftsPerS => "drafts/s",
            Term::DraftShare => "output from drafts (%)",
            Term::Ttft => "TTFT (ms)",
            Term::Itl => "ITL (ms)",
            Term::ItlPerToken => "ITL per token (ms)",
            Term::TokensPerChunk => "tokens per chunk",
            Term::Interactivity => "E2E normalized interactivity (tokens/s/user)",
            Term::Tpot => "TPOT (ms)",
            Term::E2el => "E2E latency (ms)",
            Term::OutputWholeRun => "output tokens/s (whole run)",
            Term::OutputSteady => "output tokens/s (steady window)",
            Term::Concurrency => "concurrency",
            Term::DraftPosition => "draft position",
            Term::Ratio => "spec ÷ plain",
            Term::Crossing => "measured break-even B*",
            Term::ModelBreakEven => "model break-even B*",
            Term::DraftLength => "k (draft length)",
            Term::ImpliedAlpha => "implied α",
            Term::BestK => "best k",
            Term::Goodput => "goodput (req/s)",
        }
    }

    /// What the figure is, in a sentence or two.
    pub fn definition(self) -> &'static str {
        match self {
            Term::AcceptanceRate => "Draft tokens accepted ÷ draft tokens proposed, in percent, over the window named beside it (vLLM's spec_decode acceptance rate).",
            Term::AcceptanceLength => "Tokens emitted per verify step: 1 + accepted ÷ drafts. 1.0 means no draft was ever accepted; k + 1 means every draft was.",
            Term::AcceptedPerS => "Draft tokens accepted per second (from the server's counters).",
            Term::DraftedPerS => "Draft tokens proposed per second (from the server's counters).",
            Term::DraftsPerS => "Verify steps that carried a draft, per second.",
            Term::DraftShare => "Share of output tokens that came from accepted drafts: accepted ÷ (accepted + drafts), in percent.",
            Term::Ttft => "Time to first token: from sending the request to the first streamed token.",
            Term::Itl => "Inter-token latency: the gap between two streamed chunks. A speculative step sends several tokens in one chunk, so ITL grows with speculation while TPOT falls.",
            Term::ItlPerToken => "Inter-token latency per token: each streamed chunk's gap spread over the tokens it carried, counted once per token. Unlike ITL it does not grow when a speculative step sends several tokens in one chunk; it needs the usage so far in every chunk (continuous_usage_stats).",
            Term::TokensPerChunk => "Tokens carried by each streamed chunk after the first: about the acceptance length on a speculative server (a step sends its accepted drafts and one more token), 1 on a plain one.",
            Term::Interactivity => "AIPerf 0.14's E2E normalized interactivity: 1 ÷ the p75 (or p90) of each request's latency ÷ its output tokens, in tokens per second per user. The slow tail's rate, not distorted by chunks.",
            Term::Tpot => "Time per output token after the first: (E2E − TTFT) ÷ (output tokens − 1), per request. The figure that shows what speculation buys a user.",
            Term::E2el => "End-to-end latency: from sending the request to its last token.",
            Term::OutputWholeRun => "Output tokens ÷ the run's whole duration, ramp-up and drain included (vllm bench serve's output_throughput).",
            Term::OutputSteady => "Output tokens per second in the closed loop's steady window, once every slot was busy and before the drain: the figure a sweep compares.",
            Term::Concurrency => "Requests kept in flight at once (the closed loop's --max-concurrency): the batch the server sees.",
            Term::DraftPosition => "Which draft token of a step, numbered from 0 as vLLM's position label: position i is accepted only if positions 0…i−1 were.",
            Term::Ratio => "Speculative arm's steady output tokens/s ÷ the plain arm's at the same concurrency: above 1 speculation pays.",
            Term::Crossing => "The concurrency where the measured spec ÷ plain ratio crosses 1.0 (interpolated between the levels around it; the range comes from the repeats).",
            Term::ModelBreakEven => "The batch where the speedup model's S(B) falls to 1, from the measured E, k, draft cost and the chip's ridge T*.",
            Term::DraftLength => "Draft tokens proposed per step (vLLM's num_speculative_tokens).",
            Term::ImpliedAlpha => "The per-token acceptance α whose geometric curve (α, α², …) gives the measured E at this k; the measured per-position rates show how far the real curve departs from it.",
            Term::BestK => "The draft length the speedup model finds fastest at that batch, from the measured per-position rates and the sweep's costs (a prediction, not a measurement).",
            Term::Goodput => "Completed requests per second that met every --goodput objective (vllm bench serve's request_goodput).",
        }
    }
}

/// The definition of the figure labelled `name` on a page, if the glossary has it.
pub fn definition_of(name: &str) -> Option<&'static str> {
    Term::ALL.iter().find(|t| t.name() == name).map(|t| t.definition())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/METRICS.md's glossary says the same, word for word.
    #[test]
    fn the_docs_glossary_holds_every_definition() {
        let doc = include_str!("../../docs/METRICS.md");
        let glossary = doc
            .split("## Glossary")
            .nth(1)
            .expect("docs/METRICS.md has a Glossary section");
        for t in Term::ALL {
            let row = format!("| {} | {} |", t.name(), t.definition());
            assert!(glossary.contains(&row), "docs/METRICS.md glossary lacks: {row}");
        }
    }

    #[test]
    fn names_are_unique_and_found() {
        for t in Term::ALL {
            assert_eq!(Term::ALL.iter().filter(|u| u.name() == t.name()).count(), 1);
            assert_eq!(definition_of(t.name()), Some(t.definition()));
        }
        assert_eq!(definition_of("no such figure"), None);
    }
}
