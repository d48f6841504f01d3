//! Query strings as Hadoop's servlet containers read them.

/// Percent-decodes a query component (`+` is a space); `None` for a bad
/// escape or bytes that are not UTF-8 (callers answer 400).
pub fn decode_component(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = bytes
                    .get(i + 1..i + 3)
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u8::from_str_radix(h, 16).ok())?;
                out.push(hex);
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_strictly() {
        assert_eq!(decode_component("a+b%2Fc").as_deref(), Some("a b/c"));
        assert_eq!(decode_component("%zz"), None);
        assert_eq!(decode_component("%4"), None);
        assert_eq!(decode_component("%ff"), None, "not UTF-8");
        assert_eq!(decode_component("%C3%A9").as_deref(), Some("é"));
    }
}
