//! `speclens model`: the speedup model's table on the command line (docs/MODEL.md), optionally fed
//! with a measured E and measured per-position rates. Arithmetic only; runs anywhere.

use speclens_shared::model::{gpu_preset, Costs, Measured, ModelReport, Proposer};

use crate::cli::{ModelArgs, ProposerArg};
use crate::error::CollectorError;

/// Validate the flags and build the report.
pub fn report(args: &ModelArgs) -> Result<ModelReport, CollectorError> {
    let invalid = |m: String| CollectorError::InvalidArgument(m);
    if args.alpha.is_empty() || args.alpha.iter().any(|a| !(0.0..=1.0).contains(a)) {
        return Err(invalid("--alpha takes values in [0, 1]".into()));
    }
    if args.kappa.is_empty() || args.kappa.iter().any(|k| !(1..=32).contains(k)) {
        return Err(invalid("--kappa takes whole numbers from 1 to 32".into()));
    }
    let (draft_cost, proposer) = match (args.draft_cost, args.proposer) {
        (Some(c), _) if c.is_finite() && c >= 0.0 => (c, "custom".to_string()),
        (Some(c), _) => return Err(invalid(format!("--draft-cost must be ≥ 0, got {c}"))),
        (None, ProposerArg::Ngram) => (Proposer::Ngram.draft_cost(), Proposer::Ngram.key().to_string()),
        (None, ProposerArg::Drafter1b) => (Proposer::Drafter1b.draft_cost(), Proposer::Drafter1b.key().to_string()),
    };
    let (ridge_tokens, gpu) = match args.ridge {
        Some(t) if t.is_finite() && t > 0.0 => (t, "custom ridge".to_string()),
        Some(t) => return Err(invalid(format!("--ridge must be > 0, got {t}"))),
        None => {
            let g = gpu_preset(&args.gpu)
                .ok_or_else(|| invalid(format!("unknown --gpu {:?}: use h100, h200, a100 or --ridge", args.gpu)))?;
            (g.ridge_tokens, g.name.to_string())
        }
    };
    let measured = match args.measured_e {
        None => None,
        Some(e) => {
            let k = args.measured_k.or(args.kappa.last().copied()).unwrap_or(1);
            if !(e.is_finite() && e >= 1.0 && e <= f64::from(k) + 1.0) {
                return Err(invalid(format!(
                    "--measured-E must be in [1, k + 1] = [1, {}], got {e}",
                    k + 1
                )));
            }
            if let Some(d) = args.draft_tokens {
                if !(d.is_finite() && d > 0.0 && d <= f64::from(k)) {
                    return Err(invalid(format!("--draft-tokens must be in (0, k] = (0, {k}], got {d}")));
                }
            }
            Some(Measured {
                e,
                k,
                draft_tokens: args.draft_tokens,
            })
        }
    };
    if args.draft_tokens.is_some() && args.measured_e.is_none() {
        return Err(invalid("--draft-tokens goes with --measured-E".into()));
    }
    if let Some(rates) = &args.rates {
        if rates.is_empty() || rates.iter().any(|r| !(0.0..=1.0).contains(r)) {
            return Err(invalid("--rates takes fractions in [0, 1]".into()));
        }
    }
    if !(args.batch.is_finite() && args.batch >= 1.0) {
        return Err(invalid("--batch must be ≥ 1".into()));
    }
    let costs = Costs {
        draft_cost,
        ridge_tokens,
    };
    Ok(ModelReport::new(
        &args.alpha,
        &args.kappa,
        costs,
        &proposer,
        &gpu,
        measured,
        args.rates.as_deref().map(|r| (r, args.batch)),
    ))
}

/// Print the report as text or JSON.
pub fn run(args: ModelArgs) -> Result<(), CollectorError> {
    let report = report(&args)?;
    if args.json {
        let text = serde_json::to_string_pretty(&report).map_err(|e| CollectorError::Output(e.to_string()))?;
        println!("{text}");
    } else {
        print!("{}", report.render());
    }
    Ok(())
}
