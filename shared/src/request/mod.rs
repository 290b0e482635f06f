//! What one response gives: the server-sent events of a stream, the spec-decode stats an
//! engine returns with a request, the checks that catch an engine counting tokens it never
//! emitted, and the request's HTTP timings.

pub mod counting;
pub mod http_trace;
pub mod per_request;
pub mod sse;
