//! Where a concurrency schedule's cuts go: each between the measured levels on either side of
//! it (where the picks' ratios cross) and, given the concurrencies the user runs at, never
//! within two batch sizes of one, since a batch at a steady load moves across a cut there.

use serde::{Deserialize, Serialize};

/// The rule, printed beside the moves.
pub const CUT_RULE: &str = "each cut lies between the measured levels on either side of it, where their ratios cross; given the concurrency you run at (--operating-concurrency N), no cut splits the batch sizes N − 1 to N + 1 (a batch at N holds that many requests as one ends and the next one's prefill joins, and vLLM counts prefills in the batch it keys k on: vllm-project/vllm #49548): such a cut moves to the nearest batch size that splits none of them, never past a measured level";

/// One cut that split the batch sizes around an operating concurrency, and where it went.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CutPlacement {
    /// The concurrency the user runs at whose batch sizes the cut split.
    pub operating: u64,
    /// The last batch size of the range below the cut, as the crossing placed it.
    pub measured_to: u64,
    /// The last batch size below the cut once moved; `None` when it could not move without
    /// passing the measured level `blocked_by`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placed_to: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocked_by: Option<f64>,
}

impl CutPlacement {
    /// The console's and the page's sentence.
    pub fn sentence(&self) -> String {
        let n = self.operating;
        let why = format!(
            "it split concurrency {n}'s batch sizes (--operating-concurrency): a batch at {n} holds {} to {} requests as one ends and the next one's prefill joins, and vLLM counts prefills (#49548)",
            n.saturating_sub(1),
            n.saturating_add(1)
        );
        match (self.placed_to, self.blocked_by) {
            (Some(to), _) => format!(
                "cut moved from after batch size {} to after {to}: {why}",
                self.measured_to
            ),
            (None, level) => format!(
                "the cut after batch size {} stays: {why}, and moving it would pass the measured level {}; expect it to switch k at that load, or measure levels nearer {n} to place it",
                self.measured_to,
                level.map_or_else(|| "beside it".to_string(), |l| l.to_string())
            ),
        }
    }
}

/// Moves each cut between consecutive `(from, to, k)` spans of a concurrency axis (`to` `None`:
/// and above; neighbours of one k are no cut) so that it splits no operating concurrency's
/// batch sizes, by [`CUT_RULE`]; `measured` are the levels the picks were made at. The cuts
/// that split some, and where they went.
pub fn place_cuts(ranges: &mut [(f64, Option<f64>, u32)], measured: &[f64], operating: &[u64]) -> Vec<CutPlacement> {
    // The cut after batch size c splits N − 1 … N + 1 when it is N − 1 or N.
    let splits = |c: u64| operating.iter().copied().find(|&n| c.saturating_add(1) == n || c == n);
    let mut out = Vec::new();
    for i in 0..ranges.len().saturating_sub(1) {
        let Some(to) = ranges[i].1 else { break };
        if ranges[i].2 == ranges[i + 1].2 {
            continue;
        }
        let cut = (to.floor() as u64).max(ranges[i].0 as u64);
        let Some(n) = splits(cut) else { continue };
        // Between the measured levels beside it: the last one at or below stays below the cut,
        // the first one above stays above.
        let below = measured.iter().copied().filter(|l| *l <= to).reduce(f64::max);
        let above = measured.iter().copied().filter(|l| *l > to).reduce(f64::min);
        let lowest = below.map_or(1, |b| b.ceil() as u64).max(1);
        let highest = above.map_or(u64::MAX, |a| (a.ceil() as u64).saturating_sub(1));
        // The nearest batch size that splits none, up first at equal distance.
        let reach = 2 * operating.len() as u64 + 2;
        let placed_to = (1..=reach).find_map(|d| {
            [cut.checked_add(d), cut.checked_sub(d)]
                .into_iter()
                .flatten()
                .find(|&c| (lowest..=highest).contains(&c) && splits(c).is_none())
        });
        if let Some(t) = placed_to {
            ranges[i].1 = Some(t as f64);
            ranges[i + 1].0 = t as f64;
        }
        out.push(CutPlacement {
            operating: n,
            measured_to: cut,
            placed_to,
            blocked_by: match placed_to {
                Some(_) => None,
                // N below the cut wanted it up, past the next level; above, down past the last.
                None if n <= cut => above,
                None => below,
            },
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_that_splits_the_operating_load_moves_to_the_nearest_batch_that_splits_none() {
        // k = 3 measured at 2 and 4, k = 1 at 8: the crossing at 4.6 cuts after batch 4.
        let measured = [2.0, 4.0, 8.0];
        let cut = || vec![(1.0, Some(4.6), 3), (4.6, None, 1)];
        // Running at 4 (the cut after 4 splits 3 … 5): up to after 5, so 3, 4 and 5 draft 3.
        let mut r = cut();
        let moves = place_cuts(&mut r, &measured, &[4]);
        assert_eq!((r[0].1, r[1].0), (Some(5.0), 5.0));
        assert_eq!(moves[0].placed_to, Some(5));
        assert!(moves[0]
            .sentence()
            .contains("cut moved from after batch size 4 to after 5"));
        // Running at 5 (it splits 4 … 6): down to after 3 would put 4, measured best at k = 3,
        // above it, and after 5 splits too: up to after 6, which keeps 8 above it.
        let mut r = cut();
        let moves = place_cuts(&mut r, &measured, &[5]);
        assert_eq!((r[0].1, moves[0].placed_to), (Some(6.0), Some(6)), "{moves:?}");
        // A cut one batch size clear of N − 1 … N + 1 (after 4 for N = 6 or N = 3) splits none.
        for n in [6, 3, 16] {
            let mut r = cut();
            assert_eq!(place_cuts(&mut r, &measured, &[n]), Vec::new(), "{n}");
            assert_eq!(r, cut());
        }
        // Two loads whose batch sizes leave no room between the measured levels: it stays.
        let mut r = vec![(1.0, Some(10.5), 3), (10.5, None, 1)];
        let moves = place_cuts(&mut r, &[10.0, 12.0], &[10, 12]);
        assert_eq!(
            (moves[0].placed_to, moves[0].blocked_by),
            (None, Some(12.0)),
            "{moves:?}"
        );
        assert!(moves[0].sentence().contains("would pass the measured level 12"));
        // Neighbours of one k are no cut.
        let mut same = vec![(1.0, Some(4.6), 3), (4.6, None, 3)];
        assert_eq!(place_cuts(&mut same, &measured, &[4]), Vec::new());
        // Running at 7 with measured levels 2 and 8 (the cut after 6 splits 6 … 8): after 5.
        let mut r = vec![(1.0, Some(6.2), 3), (6.2, None, 1)];
        let moves = place_cuts(&mut r, &[2.0, 8.0], &[7]);
        assert_eq!((r[0].1, moves[0].placed_to), (Some(5.0), Some(5)));
        // A load near u64::MAX cannot overflow.
        let mut r = cut();
        assert_eq!(place_cuts(&mut r, &measured, &[u64::MAX]), Vec::new());
    }
}
