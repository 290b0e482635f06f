//! Console output. Commands that only show something (`read`, `model`, `report`, `scrape`) end
//! quietly when the reader goes away (`speclens read DIR | head`); commands that measure keep
//! measuring and write their files, printing what they can ([`status`]).

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

/// `println!` through [`print`]: evaluates to its `Result`, so a closed pipe ends the command
/// quietly instead of panicking.
#[macro_export]
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::console::print(&format!("{}\n", format_args!($($arg)*)))
    };
}

/// Progress and reports of a command that measures: written when stdout takes them; a closed or
/// failing stdout never stops the run (its files are what count).
pub fn status(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
}

/// `println!` through [`status`].
#[macro_export]
macro_rules! statusln {
    ($($arg:tt)*) => {
        $crate::console::status(&format!("{}\n", format_args!($($arg)*)))
    };
}
