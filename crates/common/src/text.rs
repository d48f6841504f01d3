//! Text that came from a peer, made safe to write into a log line.
//!
//! User names, application names, diagnostics, host names and paths reach
//! Spindle from clients and NodeManagers. Written to a log as they are, a
//! `\n` in one of them starts a forged log line, and terminal escape
//! sequences can rewrite what an operator sees. [`Escaped`] prints such a
//! string with every control character (C0, DEL, C1) and every Unicode
//! bidirectional-formatting character written as an escape (`\n`, `\r`,
//! `\t`, `\u{1b}`, ...), and a backslash doubled so that an escape in the
//! output cannot be confused with one in the input. Printable text,
//! including non-ASCII letters, is unchanged.
//!
//! ```
//! use spindle_common::text::escaped;
//!
//! let user = "mallory\nINFO forged line";
//! assert_eq!(escaped(user).to_string(), "mallory\\nINFO forged line");
//! assert_eq!(escaped("zoë").to_string(), "zoë");
//! ```

use std::fmt;

/// A `&str` that displays with its control characters escaped; see the
/// module documentation.
#[derive(Clone, Copy)]
pub struct Escaped<'a>(pub &'a str);

/// Wraps `s` for logging: `info!(user = %escaped(&user), ...)`.
pub fn escaped(s: &str) -> Escaped<'_> {
    Escaped(s)
}

/// Whether `c` must not reach a log line as it is.
fn needs_escape(c: char) -> bool {
    c.is_control() // C0, DEL and C1
        || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
        || c == '\\'
}

impl fmt::Display for Escaped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.0;
        if !s.chars().any(needs_escape) {
            return f.write_str(s);
        }
        for c in s.chars() {
            match c {
                '\\' => f.write_str("\\\\")?,
                '\n' => f.write_str("\\n")?,
                '\r' => f.write_str("\\r")?,
                '\t' => f.write_str("\\t")?,
                c if needs_escape(c) => write!(f, "\\u{{{:x}}}", u32::from(c))?,
                c => fmt::Write::write_char(f, c)?,
            }
        }
        Ok(())
    }
}

impl fmt::Debug for Escaped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\"{self}\"")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped_and_text_is_kept() {
        let cases = [
            ("alice", "alice"),
            ("a\nb", "a\\nb"),
            ("a\r\nINFO x", "a\\r\\nINFO x"),
            ("tab\there", "tab\\there"),
            ("\u{1b}[31mred", "\\u{1b}[31mred"),
            ("del\u{7f}", "del\\u{7f}"),
            ("c1\u{85}", "c1\\u{85}"),
            ("bidi\u{202e}txt", "bidi\\u{202e}txt"),
            ("back\\slash", "back\\\\slash"),
            ("日本語 ünïcode", "日本語 ünïcode"),
            ("", ""),
        ];
        for (input, want) in cases {
            assert_eq!(escaped(input).to_string(), want, "{input:?}");
        }
    }

    #[test]
    fn no_escaped_output_contains_a_line_break() {
        // Every char up to U+3000 (covers C0, C1, bidi marks), alone and
        // between letters.
        for c in (0u32..0x3000).filter_map(char::from_u32) {
            let s = format!("x{c}y");
            let out = escaped(&s).to_string();
            assert!(
                !out.chars().any(|o| o.is_control()),
                "U+{:04x} gave {out:?}",
                u32::from(c)
            );
        }
    }

    #[test]
    fn debug_quotes() {
        assert_eq!(format!("{:?}", escaped("a\nb")), "\"a\\nb\"");
    }
}
