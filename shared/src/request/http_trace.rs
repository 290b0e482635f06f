//! One request's HTTP timings as the load generator's transport measured them, and AIPerf's
//! fourteen `http_req_*` figures derived from them as AIPerf 0.13 derives its own
//! (`metrics/types/http_trace_metrics.py`; docs/METRICS.md §7.4): the phases count from the
//! call, so on a new connection `sending` holds the connect time and `total` counts it twice,
//! as AIPerf's do; on a reused connection the lookup and connect phases are 0. Beside them, the
//! server's own timings a vLLM 0.33 response carries.

use serde::{Deserialize, Serialize};

/// What the transport saw of one exchange, in milliseconds from the call that sent it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct HttpTrace {
    /// Resolving the host name (0: an address, or a reused connection).
    pub dns_lookup_ms: f64,
    /// Opening the connection, the lookup included (0 on a reused connection).
    pub connecting_ms: f64,
    /// When the request's last byte was handed to the socket.
    pub written_ms: f64,
    /// The first and last reads of the response body (none for an empty body).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_read_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_read_ms: Option<f64>,
    /// Reads that brought response body bytes.
    pub chunks_received: u64,
    /// Request and response body bytes (headers and chunked framing not counted).
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// The request went on a kept-alive connection.
    pub reused: bool,
}

/// AIPerf's `http_req_*` metrics in its export order: tag, header, unit.
pub const HTTP_NAMES: [(&str, &str, &str); 14] = [
    ("http_req_blocked", "HTTP Blocked", "ms"),
    ("http_req_dns_lookup", "HTTP DNS Lookup", "ms"),
    ("http_req_connecting", "HTTP Connecting", "ms"),
    ("http_req_sending", "HTTP Sending", "ms"),
    ("http_req_waiting", "HTTP Waiting (TTFB)", "ms"),
    ("http_req_receiving", "HTTP Receiving", "ms"),
    ("http_req_duration", "HTTP Duration (excl. conn)", "ms"),
    ("http_req_total", "HTTP Total Time", "ms"),
    ("http_req_connection_overhead", "HTTP Connection Overhead", "ms"),
    ("http_req_data_sent", "HTTP Data Sent", "KB"),
    ("http_req_data_received", "HTTP Data Received", "KB"),
    ("http_req_chunks_sent", "HTTP Chunks Sent", "count"),
    ("http_req_chunks_received", "HTTP Chunks Received", "count"),
    ("http_req_connection_reused", "HTTP Connection Reused", "ratio"),
];

/// AIPerf's kilobyte.
const KB: f64 = 1024.0;

impl HttpTrace {
    /// The last body read less the first; 0 for one read, none for no read.
    pub fn receiving_ms(&self) -> Option<f64> {
        match self.chunks_received {
            0 => None,
            1 => Some(0.0),
            _ => Some(self.last_read_ms? - self.first_read_ms?),
        }
    }

    /// The request's value of each of [`HTTP_NAMES`] in its unit (`None` where AIPerf leaves
    /// the metric out), as AIPerf splits an exchange (`http_trace_metrics.py` over aiohttp's
    /// trace): sending and duration run from the call, so a new connection's set-up is inside
    /// them (aiohttp stamps the send's start before it connects), and connecting is the TCP
    /// part of the set-up, the lookup apart. speclens's transport has no connection pool limit,
    /// so nothing ever waits for one (`http_req_blocked` 0); it writes a request's body at once
    /// (one chunk).
    pub fn values(&self) -> [Option<f64>; 14] {
        let blocked = 0.0;
        let tcp = (self.connecting_ms - self.dns_lookup_ms).max(0.0);
        let sending = self.written_ms;
        // A first read stamped before the last write (the kernel's receive time against the
        // writer's clock) is no waiting time: left out, as AIPerf leaves a negative phase out.
        let waiting = self
            .first_read_ms
            .map(|first| first - self.written_ms)
            .filter(|w| *w >= 0.0);
        let receiving = self.receiving_ms();
        let overhead = blocked + self.dns_lookup_ms + tcp;
        let total = match (waiting, receiving) {
            (Some(w), Some(r)) => Some(overhead + sending + w + r),
            _ => None,
        };
        [
            Some(blocked),
            Some(self.dns_lookup_ms),
            Some(tcp),
            Some(sending),
            waiting,
            receiving,
            self.last_read_ms,
            total,
            Some(overhead),
            Some(self.bytes_sent as f64 / KB),
            Some(self.bytes_received as f64 / KB),
            Some(1.0),
            Some(self.chunks_received as f64),
            Some(if self.reused { 1.0 } else { 0.0 }),
        ]
    }
}

/// The server's own timings of one request, in ms: vLLM 0.33's `--enable-per-request-metrics`
/// adds them to the response's `metrics` object (beside its spec-decode stats).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerTimings {
    /// Waiting in the scheduler's queue before the request was first scheduled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_time_ms: Option<f64>,
    /// From the scheduler taking the request to its first token: after the queue (vLLM 0.33's
    /// `first_token_ts − scheduled_ts`, `entrypoints/generate/base/serving.py`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_to_first_token_ms: Option<f64>,
    /// From the first token to the last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation_time_ms: Option<f64>,
}

impl ServerTimings {
    /// Take what a `metrics` object holds; a value that is not a finite number ≥ 0 is left
    /// out, as `vllm bench serve` leaves it out.
    pub(crate) fn note(&mut self, metrics: &serde_json::Map<String, serde_json::Value>) {
        let read = |key: &str| {
            metrics
                .get(key)
                .and_then(serde_json::Value::as_f64)
                .filter(|v| v.is_finite() && *v >= 0.0)
        };
        self.queue_time_ms = read("queue_time_ms").or(self.queue_time_ms);
        self.time_to_first_token_ms = read("time_to_first_token_ms").or(self.time_to_first_token_ms);
        self.generation_time_ms = read("generation_time_ms").or(self.generation_time_ms);
    }

    pub(crate) fn is_empty(&self) -> bool {
        *self == ServerTimings::default()
    }

    /// The part of the client's TTFT the server does not account for (network, the client's
    /// own time): client TTFT − queue time − server TTFT (the server's TTFT starts after the
    /// queue); none without both.
    pub fn outside_server_ms(&self, client_ttft_ms: f64) -> Option<f64> {
        Some(client_ttft_ms - self.queue_time_ms? - self.time_to_first_token_ms?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(t: &HttpTrace, tag: &str) -> Option<f64> {
        let i = HTTP_NAMES.iter().position(|n| n.0 == tag).unwrap();
        t.values()[i]
    }

    /// A new connection: 2 ms to connect, the request written at 2.5 ms, the body read at 10,
    /// 12 and 30 ms. AIPerf's sending holds the connect, its total counts it twice.
    #[test]
    fn a_new_connection_worked_by_hand() {
        let t = HttpTrace {
            dns_lookup_ms: 0.0,
            connecting_ms: 2.0,
            written_ms: 2.5,
            first_read_ms: Some(10.0),
            last_read_ms: Some(30.0),
            chunks_received: 3,
            bytes_sent: 2048,
            bytes_received: 512,
            reused: false,
        };
        assert_eq!(value(&t, "http_req_sending"), Some(2.5));
        assert_eq!(value(&t, "http_req_waiting"), Some(7.5));
        assert_eq!(value(&t, "http_req_receiving"), Some(20.0));
        // duration = sending + waiting + receiving, from the call to the last read.
        assert_eq!(value(&t, "http_req_duration"), Some(30.0));
        assert_eq!(value(&t, "http_req_total"), Some(32.0));
        assert_eq!(value(&t, "http_req_connection_overhead"), Some(2.0));
        assert_eq!(value(&t, "http_req_data_sent"), Some(2.0));
        assert_eq!(value(&t, "http_req_data_received"), Some(0.5));
        assert_eq!(value(&t, "http_req_connection_reused"), Some(0.0));
        assert_eq!(value(&t, "http_req_chunks_sent"), Some(1.0));
        assert_eq!(value(&t, "http_req_chunks_received"), Some(3.0));
    }

    #[test]
    fn one_read_receives_in_no_time_and_no_read_leaves_the_reading_phases_out() {
        let one = HttpTrace {
            written_ms: 0.1,
            first_read_ms: Some(4.0),
            last_read_ms: Some(4.0),
            chunks_received: 1,
            reused: true,
            ..HttpTrace::default()
        };
        assert_eq!(value(&one, "http_req_receiving"), Some(0.0));
        assert_eq!(value(&one, "http_req_connection_reused"), Some(1.0));
        assert_eq!(value(&one, "http_req_total"), Some(4.0));
        // The first read stamped (by the kernel) before the last write returned: no waiting,
        // and no total, as AIPerf leaves a negative phase out.
        let early = HttpTrace {
            written_ms: 0.5,
            first_read_ms: Some(0.4),
            last_read_ms: Some(3.0),
            chunks_received: 2,
            ..HttpTrace::default()
        };
        assert_eq!(
            (value(&early, "http_req_waiting"), value(&early, "http_req_total")),
            (None, None)
        );
        assert_eq!(value(&early, "http_req_duration"), Some(3.0));
        let none = HttpTrace {
            written_ms: 0.1,
            ..HttpTrace::default()
        };
        for tag in [
            "http_req_waiting",
            "http_req_receiving",
            "http_req_duration",
            "http_req_total",
        ] {
            assert_eq!(value(&none, tag), None, "{tag}");
        }
    }
}
