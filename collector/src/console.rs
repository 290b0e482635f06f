//! Console output that ends quietly when the reader goes away (`speclens read DIR | head`).

use std::io::Write;

use crate::error::CollectorError;

/// Write `text` to stdout; a closed pipe becomes [`CollectorError::ClosedPipe`], which the
/// binary turns into a quiet exit.
pub fn print(text: &str) -> Result<(), CollectorError> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::BrokenPipe => CollectorError::ClosedPipe,
            _ => CollectorError::Output(format!("cannot write to stdout: {e}")),
        })
}
