//! What one response gives: the server-sent events of a stream, the spec-decode stats an
//! engine returns with a request, and the request's HTTP timings.

pub mod http_trace;
pub mod per_request;
pub mod sse;
