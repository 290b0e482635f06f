//! A real Prometheus server for the tests (Debian's `prometheus`, which the test command
//! installs), on 127.0.0.1 with its own data folder, scraping the jobs given every 200 ms (a 180 ms timeout, wide enough for a
//! busy 2-core machine) and
//! evaluating a rule file every 200 ms; queried through its HTTP API.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use super::browser::free_port;
use super::wait_for;

/// `host:port` of a base URL.
pub fn host_port(url: &str) -> String {
    url.trim_start_matches("http://").trim_end_matches('/').to_string()
}

/// One scrape job: its name, its targets' base URLs and the metrics path.
pub struct ScrapeJob {
    pub name: String,
    pub targets: Vec<String>,
    pub path: String,
}

impl ScrapeJob {
    pub fn new(name: &str, targets: &[String]) -> ScrapeJob {
        ScrapeJob {
            name: name.into(),
            targets: targets.to_vec(),
            path: "/metrics".into(),
        }
    }

    pub fn at_path(mut self, path: &str) -> ScrapeJob {
        self.path = path.into();
        self
    }
}

/// A Prometheus server; killed when dropped.
pub struct Prometheus {
    child: Child,
    pub url: String,
    _data: tempfile::TempDir,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Prometheus {
    /// Start Prometheus scraping `jobs` every 200 ms (loading `rules`, evaluated every 200 ms);
    /// wait until every target is up.
    pub async fn start(jobs: &[ScrapeJob], rules: Option<&Path>) -> Prometheus {
        let bin = std::env::var("PROMETHEUS").unwrap_or_else(|_| "/usr/bin/prometheus".into());
        assert!(
            Path::new(&bin).exists(),
            "prometheus not found at {bin}: `bash scripts/test.sh` installs Debian's prometheus"
        );
        let data = tempfile::tempdir().unwrap();
        let mut config =
            String::from("global:\n  scrape_interval: 200ms\n  scrape_timeout: 180ms\n  evaluation_interval: 200ms\n");
        if let Some(rules) = rules {
            config.push_str(&format!("rule_files:\n  - '{}'\n", rules.display()));
        }
        config.push_str("scrape_configs:\n");
        for job in jobs {
            let list: Vec<String> = job.targets.iter().map(|t| format!("'{}'", host_port(t))).collect();
            config.push_str(&format!(
                "  - job_name: {}\n    metrics_path: '{}'\n    static_configs:\n      - targets: [{}]\n",
                job.name,
                job.path,
                list.join(", ")
            ));
        }
        std::fs::write(data.path().join("prometheus.yml"), config).unwrap();
        let port = free_port();
        let child = Command::new(&bin)
            .arg(format!(
                "--config.file={}",
                data.path().join("prometheus.yml").display()
            ))
            .arg(format!("--storage.tsdb.path={}", data.path().join("data").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg("--log.level=warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start prometheus");
        let p = Prometheus {
            child,
            url: format!("http://127.0.0.1:{port}"),
            _data: data,
        };
        let want: usize = jobs.iter().map(|j| j.targets.len()).sum();
        wait_for("every target up in Prometheus", Duration::from_secs(60), || async {
            let v = p.query("sum(up)").await.ok()?;
            (v["data"]["result"][0]["value"][1].as_str()? == want.to_string()).then_some(())
        })
        .await;
        p
    }

    /// An instant query's answer (its JSON, whatever its status).
    pub async fn query(&self, promql: &str) -> Result<Value, reqwest::Error> {
        reqwest::Client::new()
            .get(format!("{}/api/v1/query", self.url))
            .query(&[("query", promql)])
            .send()
            .await?
            .json()
            .await
    }

    /// Every sample of an instant query's vector answer: its labels and value. Panics on an
    /// error answer, naming the query.
    pub async fn vector(&self, promql: &str) -> Vec<(serde_json::Map<String, Value>, f64)> {
        let v = self.query(promql).await.unwrap_or_else(|e| panic!("{promql}: {e}"));
        assert_eq!(v["status"], "success", "{promql}: {v}");
        v["data"]["result"]
            .as_array()
            .unwrap_or_else(|| panic!("{promql}: not a vector: {v}"))
            .iter()
            .map(|s| {
                let value: f64 = s["value"][1].as_str().unwrap().parse().unwrap();
                (s["metric"].as_object().unwrap().clone(), value)
            })
            .collect()
    }
}
