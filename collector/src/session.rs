//! The live view a measuring command feeds: its hub, the dashboard it serves when asked (unless
//! an outer command, the demo, serves one), and the serving tail once the work is done. One
//! type for bench, sweep and accept.

use std::path::PathBuf;

use crate::error::CollectorError;
use crate::live::LiveHub;
use crate::serve::{Dashboard, ServeSettings};

/// A command's live view.
pub struct Session {
    /// The hub the command's runs feed.
    pub hub: LiveHub,
    /// The hub is the command's own (no outer command serves it).
    own: bool,
    /// The dashboard this command serves itself, if any.
    dashboard: Option<Dashboard>,
}

impl Session {
    /// Feed `outer` (a hub another command serves, the demo's) or a hub of one's own, which
    /// is detached when no dashboard will watch it (no `dashboard_port`).
    pub fn new(outer: Option<LiveHub>, dashboard_port: Option<u16>) -> Session {
        let hub = match (outer.clone(), dashboard_port) {
            (Some(outer), _) => outer,
            (None, Some(_)) => LiveHub::new(64),
            (None, None) => LiveHub::detached(),
        };
        Session {
            own: outer.is_none(),
            hub,
            dashboard: None,
        }
    }

    /// Serve the live page on 127.0.0.1:`port` (when a port is given and the hub is the
    /// command's own), with `results_dir` as its past runs; prints its URL.
    pub async fn serve(&mut self, port: Option<u16>, results_dir: PathBuf) -> Result<(), CollectorError> {
        let Some(port) = port.filter(|_| self.own) else {
            return Ok(());
        };
        let url = self
            .serve_at(port, crate::serve::resolve_web_dir(None)?, results_dir)
            .await?;
        crate::statusln!("speclens dashboard: {url}");
        Ok(())
    }

    /// Serve the live page on 127.0.0.1:`port` from `web_dir`, with `results_dir` as its past
    /// runs (the demo's own web folder and results folder), and return its URL.
    pub async fn serve_at(
        &mut self,
        port: u16,
        web_dir: crate::serve::WebAssets,
        results_dir: PathBuf,
    ) -> Result<String, CollectorError> {
        let settings = ServeSettings {
            addr: std::net::SocketAddr::from(([127, 0, 0, 1], port)),
            token: None,
            web_dir,
            fragment: Some("live".into()),
            results_dir,
        };
        let dashboard = crate::serve::start(&settings, self.hub.clone()).await?;
        let url = dashboard.url.clone();
        self.dashboard = Some(dashboard);
        Ok(url)
    }

    /// Stop the dashboard this session serves, if any, and return how its server ended.
    pub async fn stop(self) -> Result<(), CollectorError> {
        match self.dashboard {
            Some(d) => d.stop().await,
            None => Ok(()),
        }
    }

    /// After the work: a dashboard of the command's own keeps serving `what` it measured
    /// until Ctrl-C.
    pub async fn close(self, what: &str) -> Result<(), CollectorError> {
        if let Some(d) = self.dashboard {
            eprintln!(
                "The dashboard keeps serving {what} at {} — press Ctrl-C to quit.",
                d.url
            );
            let _ = crate::net::stop_signal().await;
            d.stop().await?;
        }
        Ok(())
    }
}
