//! The engine's own load in one scrape: KV-cache usage, running and waiting requests,
//! preemptions (vLLM's families).

use crate::scrape::prom;

/// vLLM's running-requests gauge (summed over its engines), read here and by the alert rules.
pub const VLLM_RUNNING: &str = "vllm:num_requests_running";

/// The engine's own load in one scrape (vLLM's families): KV-cache usage (mean over engines),
/// running and waiting requests and preemptions so far (summed over engines). A family the
/// text lacks is `None`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LoadSample {
    pub kv_cache_usage: Option<f64>,
    pub running: Option<f64>,
    pub waiting: Option<f64>,
    pub preemptions: Option<u64>,
}

impl LoadSample {
    /// The load families of a metrics text; `None` when the text is not valid exposition or
    /// holds none of them.
    pub fn of_text(text: &str) -> Option<LoadSample> {
        let (mut kv, mut kv_n, mut running, mut waiting, mut preempted) = (0.0, 0u32, None, None, None);
        let add = |slot: &mut Option<f64>, v: f64| *slot = Some(slot.unwrap_or(0.0) + v);
        for sample in prom::samples(text) {
            let sample = sample.ok()?;
            if !sample.value.is_finite() || sample.value < 0.0 {
                continue;
            }
            match sample.name {
                "vllm:kv_cache_usage_perc" => {
                    kv += sample.value;
                    kv_n += 1;
                }
                VLLM_RUNNING => add(&mut running, sample.value),
                "vllm:num_requests_waiting" => add(&mut waiting, sample.value),
                "vllm:num_preemptions_total" => add(&mut preempted, sample.value),
                _ => {}
            }
        }
        let load = LoadSample {
            kv_cache_usage: (kv_n > 0).then(|| kv / f64::from(kv_n)),
            running,
            waiting,
            preemptions: preempted.map(|p| p.round() as u64),
        };
        (load != LoadSample::default()).then_some(load)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::run_result::EngineLoad;

    #[test]
    fn engine_load_over_a_window() {
        let text = |kv: f64, running: u32, preempted: u32| {
            format!(
                "vllm:kv_cache_usage_perc{{engine=\"0\"}} {kv}\nvllm:kv_cache_usage_perc{{engine=\"1\"}} {kv}\n\
                 vllm:num_requests_running{{engine=\"0\"}} {running}\nvllm:num_requests_waiting{{engine=\"0\"}} 1\n\
                 vllm:num_preemptions_total{{engine=\"0\"}} {preempted}.0\n"
            )
        };
        let before = LoadSample::of_text(&text(0.0, 0, 3)).unwrap();
        let during = [
            LoadSample::of_text(&text(0.5, 8, 4)).unwrap(),
            LoadSample::of_text(&text(0.1, 2, 6)).unwrap(),
        ];
        let after = LoadSample::of_text(&text(0.0, 0, 7)).unwrap();
        let load = EngineLoad::over(Some(&before), &during, Some(&after)).unwrap();
        assert_eq!(load.kv_cache_usage_mean, Some(0.3));
        assert_eq!(load.kv_cache_usage_max, Some(0.5));
        assert_eq!(
            (load.preemptions, load.running_mean, load.scrapes),
            (Some(4), Some(5.0), 2)
        );
        // Without live scrapes only the preemptions are known (the idle after-scrape is no mean).
        let bare = EngineLoad::over(Some(&before), &[], Some(&after)).unwrap();
        assert_eq!((bare.kv_cache_usage_mean, bare.preemptions), (None, Some(4)));
        // A counter reset gives no preemption count, not a silent zero; no families: nothing.
        let reset = EngineLoad::over(Some(&after), &during, Some(&before)).unwrap();
        assert_eq!(reset.preemptions, None);
        assert_eq!(LoadSample::of_text("vllm:spec_decode_num_drafts_total 3\n"), None);
        assert_eq!(LoadSample::of_text("not exposition {"), None);
    }
}
