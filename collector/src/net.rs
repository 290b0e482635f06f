//! Small network helpers shared by the collector's servers.

use std::net::SocketAddr;

use tokio::net::TcpListener;

use crate::error::CollectorError;

/// Bind `addr` and return the listener with the address it really got (port 0 resolved).
pub async fn bind(addr: SocketAddr) -> Result<(TcpListener, SocketAddr), CollectorError> {
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|source| CollectorError::Bind { addr, source })?;
    let local = listener.local_addr().map_err(CollectorError::Serve)?;
    Ok((listener, local))
}

/// Compare secrets in constant time, so a token cannot be guessed byte by byte from timings.
pub fn same_secret(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets() {
        assert!(same_secret("abc", "abc"));
        assert!(!same_secret("abc", "abd"));
        assert!(!same_secret("abc", "abcd"));
    }
}
