//! Text made safe to place inside HTML, XML or SVG.
//!
//! Every page, report and document Spindle writes by hand (the RM's and the
//! NM's web pages, the web proxy's notices, `/conf`, the simulators' SVG and
//! HTML reports, the `yarn-site.xml` the benchmark writes) puts strings it
//! did not choose (user names, application names, diagnostics, log lines,
//! configuration values) between tags and inside attribute values. They all
//! escape through this module, so that one set of characters is escaped
//! everywhere and a page cannot be the one that forgot the quote.
//!
//! [`escape`] replaces the five characters that carry meaning in markup:
//! `&`, `<`, `>`, `"` and `'`. Escaping both quotes makes the result safe in
//! element content and in attribute values delimited by either quote, so a
//! caller never has to know which context it writes into. `'` becomes
//! `&#39;` rather than `&apos;`, which HTML 4 does not define; XML reads both.
//! [`escape_xml`] adds what a whole XML document needs beyond that: the
//! characters XML 1.0 cannot hold at all are written as visible text.
//!
//! ```
//! use spindle_common::markup;
//!
//! assert_eq!(
//!     markup::escape("<a title='x'>&</a>"),
//!     "&lt;a title=&#39;x&#39;&gt;&amp;&lt;/a&gt;"
//! );
//! ```

use std::fmt::Write as _;

/// The entity that stands for `b` in markup, or `None` when `b` may stand
/// as it is. Every character escaped is ASCII, so the same table serves
/// UTF-8 text and raw bytes alike.
fn entity(b: u8) -> Option<&'static str> {
    match b {
        b'&' => Some("&amp;"),
        b'<' => Some("&lt;"),
        b'>' => Some("&gt;"),
        b'"' => Some("&quot;"),
        b'\'' => Some("&#39;"),
        _ => None,
    }
}

/// `text` with `&`, `<`, `>`, `"` and `'` replaced by entities, for element
/// content and attribute values (quoted either way) in HTML, XML and SVG.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    push_escaped(&mut out, text, false);
    out
}

/// Appends `text` to `out` escaped; with `xml`, also writes what XML 1.0
/// cannot carry as visible `\uXXXX` text (see [`escape_xml`]).
fn push_escaped(out: &mut String, text: &str, xml: bool) {
    for c in text.chars() {
        match u8::try_from(c).ok().and_then(entity) {
            Some(e) => out.push_str(e),
            None if xml && !allowed_in_xml(c) => {
                // Writing to a String cannot fail.
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            None => out.push(c),
        }
    }
}

/// [`escape`] over bytes that need not be UTF-8 (a log file streamed into
/// an HTML page in chunks): the bytes that are not markup are copied as
/// they are. Since only ASCII bytes are replaced, a multi-byte UTF-8
/// sequence, even one split across two chunks, comes out whole.
pub fn escape_bytes(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len() + bytes.len() / 16);
    for &b in bytes {
        match entity(b) {
            Some(e) => out.extend_from_slice(e.as_bytes()),
            None => out.push(b),
        }
    }
    out
}

/// Whether XML 1.0 allows `c` in a document at all, escaped or not: tab,
/// line feed, carriage return and everything from U+0020 up, except the
/// two non-characters U+FFFE and U+FFFF (Rust strings hold no surrogates).
fn allowed_in_xml(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r') || (c >= ' ' && !matches!(c, '\u{fffe}' | '\u{ffff}'))
}

/// [`escape`] for an XML document (a REST reply, `/conf`, a
/// `*-site.xml`), which must also keep out the characters XML 1.0 cannot
/// carry even as character references: the C0 controls other than tab,
/// line feed and carriage return, and U+FFFE and U+FFFF. A parser refuses
/// the whole document over one of them, so one odd value (a diagnostic
/// with a terminal colour code) would make every other value unreadable.
/// Each is written as visible text, `\u001b`, as JSON would write it, so
/// the reader still sees that something was there.
pub fn escape_xml(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    push_escaped(&mut out, text, true);
    out
}

/// [`escape_xml`] appended to `out`, for a writer that builds a large
/// document (a REST reply with thousands of applications) in one buffer.
pub fn escape_xml_into(out: &mut String, text: &str) {
    push_escaped(out, text, true);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_five_markup_characters_are_escaped_and_the_rest_kept() {
        assert_eq!(
            escape("<script>alert(\"x\")</script>&'"),
            "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;"
        );
        assert_eq!(escape("plain zoë 日本"), "plain zoë 日本");
        assert_eq!(escape(""), "");
        // Already-escaped text is escaped again: the input is text, not markup.
        assert_eq!(escape("&amp;"), "&amp;amp;");
    }

    /// Some of the copies this module replaced left `'` alone, which is
    /// enough between tags and inside `"`-quoted attributes but not inside
    /// a `'`-quoted one: there a value holding `'` ends the attribute and
    /// the rest of the value is read as markup. Escaping both quotes
    /// everywhere means no caller has to know which quote its attribute
    /// uses.
    #[test]
    fn both_quotes_are_escaped_so_any_attribute_is_safe() {
        let value = "x' onmouseover='alert(1)";
        let single = format!("<a title='{}'>", escape(value));
        assert_eq!(single, "<a title='x&#39; onmouseover=&#39;alert(1)'>");
        let value = "x\" onmouseover=\"alert(1)";
        let double = format!("<a title=\"{}\">", escape(value));
        assert_eq!(double, "<a title=\"x&quot; onmouseover=&quot;alert(1)\">");
    }

    #[test]
    fn bytes_are_escaped_like_text_and_other_bytes_copied() {
        let text = "<a href=\"x\">&'é</a>";
        assert_eq!(escape_bytes(text.as_bytes()), escape(text).into_bytes());
        // Not UTF-8, and a UTF-8 sequence cut in two: copied byte for byte.
        assert_eq!(escape_bytes(&[0xff, b'<', 0xc3]), b"\xff&lt;\xc3".to_vec());
    }

    #[test]
    fn xml_documents_leave_out_what_xml_cannot_hold() {
        assert_eq!(escape_xml("a<b&\"c'"), "a&lt;b&amp;&quot;c&#39;");
        assert_eq!(escape_xml("tab\tnl\ncr\r"), "tab\tnl\ncr\r");
        assert_eq!(
            escape_xml("bell\u{7}nul\u{0}esc\u{1b}<"),
            "bell\\u0007nul\\u0000esc\\u001b&lt;"
        );
        assert_eq!(
            escape_xml("non\u{fffe}char\u{ffff}"),
            "non\\ufffechar\\uffff"
        );
        let mut doc = String::from("<a>");
        escape_xml_into(&mut doc, "x\u{1}<y");
        assert_eq!(doc, "<a>x\\u0001&lt;y");
        // DEL and C1 controls are allowed in XML 1.0 and kept.
        assert_eq!(escape_xml("del\u{7f}c1\u{85}"), "del\u{7f}c1\u{85}");
    }
}
