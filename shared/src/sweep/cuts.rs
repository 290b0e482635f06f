//! Where a concurrency schedule's cuts go: each between the measured levels on either side of
//! it (where the picks' ratios cross) and, given the concurrencies the user runs at, never
//! within two batch sizes of one, since a batch at a steady load moves across a cut there.

use serde::{Deserialize, Serialize};

/// The rule, printed beside the moves.
pub const CUT_RULE: &str = "each cut lies between the measured levels on either side of it, where their ratios cross; given the concurrency you run at (--operating-concurrency N), no cut lies within two batch sizes of N: a batch at N holds N − 1 to N + 1 requests as one ends and the next one's prefill joins, and vLLM counts prefills in the batch it keys k on (vllm-project/vllm #49548), so the cut moves to the side N's pick is on (to just past N + 1, or just before N − 1), never past a measured level";

/// One cut that sat too near an operating concurrency, and where it went.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CutPlacement {
    /// The concurrency the user runs at that the cut sat near.
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
            "concurrency {n} (--operating-concurrency) sat within two batch sizes of it: a batch at {n} holds {} to {} requests as one ends and the next one's prefill joins, and vLLM counts prefills (#49548)",
            n.saturating_sub(1),
            n + 1
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

/// Moves each cut between consecutive `(from, to)` spans of a concurrency axis (`to` `None`:
/// and above) away from every `operating` concurrency by [`CUT_RULE`]; `measured` are the
/// levels the picks were made at. The cuts that sat near one, and where they went.
pub fn place_cuts(ranges: &mut [(f64, Option<f64>)], measured: &[f64], operating: &[u64]) -> Vec<CutPlacement> {
    let mut out = Vec::new();
    for i in 0..ranges.len().saturating_sub(1) {
        for &n in operating {
            let Some(to) = ranges[i].1 else { break };
            let cut = (to.floor() as u64).max(ranges[i].0 as u64);
            if cut + 2 < n || cut > n + 1 {
                continue;
            }
            let below = measured
                .iter()
                .copied()
                .filter(|l| *l <= to)
                .fold(None, |m: Option<f64>, l| Some(m.map_or(l, |m| m.max(l))));
            let above = measured
                .iter()
                .copied()
                .filter(|l| *l > to)
                .fold(None, |m: Option<f64>, l| Some(m.map_or(l, |m| m.min(l))));
            let (target, limit, fits) = if n as f64 <= to {
                // n runs below the cut: the cut goes up past n + 1, staying below the next level.
                let target = n + 1;
                (Some(target), above, above.is_none_or(|a| (target as f64) < a))
            } else {
                // n runs above it: the cut comes down before n − 1, staying at or above the last.
                let target = n.checked_sub(2).filter(|t| *t >= 1);
                let fits = target.is_some_and(|t| below.is_none_or(|b| t as f64 >= b));
                (target, below, fits)
            };
            let placed_to = target.filter(|_| fits);
            if let Some(t) = placed_to {
                ranges[i].1 = Some(t as f64);
                ranges[i + 1].0 = t as f64;
            }
            out.push(CutPlacement {
                operating: n,
                measured_to: cut,
                placed_to,
                blocked_by: if fits { None } else { limit },
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_near_the_operating_load_moves_to_the_side_of_its_pick() {
        // k = 3 measured at 2 and 4, k = 1 at 8: the crossing at 4.6 cuts after batch 4.
        let measured = [2.0, 4.0, 8.0];
        let cut = || vec![(1.0, Some(4.6)), (4.6, None)];
        // Running at 4 (below the cut): the cut goes up to after 5, so 3, 4 and 5 draft 3.
        let mut r = cut();
        let moves = place_cuts(&mut r, &measured, &[4]);
        assert_eq!((r[0].1, r[1].0), (Some(5.0), 5.0));
        assert_eq!(moves[0].placed_to, Some(5));
        assert!(moves[0]
            .sentence()
            .contains("cut moved from after batch size 4 to after 5"));
        // Running at 5 (above): it comes down to after 3, so 4, 5 and 6 draft 1; but 4 was
        // measured best at k = 3, so it cannot, and says so.
        let mut r = cut();
        let moves = place_cuts(&mut r, &measured, &[5]);
        assert_eq!(r, cut(), "nothing moved");
        assert_eq!((moves[0].placed_to, moves[0].blocked_by), (None, Some(4.0)));
        assert!(moves[0].sentence().contains("would pass the measured level 4"));
        // Far from the load: left where the crossing put it.
        let mut r = cut();
        assert_eq!(place_cuts(&mut r, &measured, &[16]), Vec::new());
        assert_eq!(r, cut());
        // Running at 7 with measured levels 2 and 8: down to after 5 (6, 7, 8 draft 1).
        let mut r = vec![(1.0, Some(6.2)), (6.2, None)];
        let moves = place_cuts(&mut r, &[2.0, 8.0], &[7]);
        assert_eq!((r[0].1, moves[0].placed_to), (Some(5.0), Some(5)));
    }
}
