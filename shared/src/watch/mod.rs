//! Past one run: the collector's formulas handed to the tools a team keeps running. PromQL for
//! each figure per engine (`promql`), Prometheus recording and alerting rules (`rules`), and a
//! Grafana dashboard over the recorded series (`grafana`).

pub mod grafana;
pub mod promql;
pub mod rules;
