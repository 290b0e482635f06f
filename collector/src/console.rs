//! Console output. Commands that only show something (`read`, `model`, `report`, `scrape`) end
//! quietly when the reader goes away (`speclens read DIR | head`); commands that measure keep
//! measuring and write their files, printing what they can ([`status`]).

use std::borrow::Cow;
use std::io::Write;

use crate::error::CollectorError;

/// Write `text` to stdout; a closed pipe becomes [`CollectorError::ClosedPipe`], which the
/// binary turns into a quiet exit.
pub fn print(text: &str) -> Result<(), CollectorError> {
    let mut out = std::io::stdout().lock();
    out.write_all(printable(text).as_bytes())
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
    let _ = out.write_all(printable(text).as_bytes()).and_then(|()| out.flush());
}

/// `println!` through [`status`].
#[macro_export]
macro_rules! statusln {
    ($($arg:tt)*) => {
        $crate::console::status(&format!("{}\n", format_args!($($arg)*)))
    };
}

/// `text` with every control character but newline and tab written as a `\u{..}` escape: what
/// a server sent (an error, a model name, a metrics line) cannot move the cursor, retitle or
/// clear the terminal.
pub fn printable(text: &str) -> Cow<'_, str> {
    escape_controls(text, &['\n', '\t'])
}

/// `text` with every control character except those in `keep` written as a `\u{..}` escape.
pub fn escape_controls<'a>(text: &'a str, keep: &[char]) -> Cow<'a, str> {
    let escaped = |c: char| c.is_control() && !keep.contains(&c);
    if !text.chars().any(escaped) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(
        text.chars()
            .map(|c| {
                if escaped(c) {
                    c.escape_unicode().to_string()
                } else {
                    c.to_string()
                }
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::printable;

    #[test]
    fn control_characters_are_escaped_but_lines_and_tabs_stay() {
        assert_eq!(printable("a\tb\nc"), "a\tb\nc");
        assert_eq!(printable("x\u{1b}[2J\r\u{7}y"), "x\\u{1b}[2J\\u{d}\\u{7}y");
    }
}
