//! Query strings as Hadoop's servlet containers read them.

/// Why a query component could not be decoded (callers answer 400).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecodeError {
    /// A `%` not followed by two hex digits.
    BadEscape,
    /// The decoded bytes are not UTF-8.
    NotUtf8,
}

/// Percent-decodes a query component (`+` is a space), strictly.
pub fn decode_component(text: &str) -> Result<String, DecodeError> {
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
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .ok_or(DecodeError::BadEscape)?;
                out.push(hex);
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).map_err(|_| DecodeError::NotUtf8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_strictly() {
        assert_eq!(decode_component("a+b%2Fc").as_deref(), Ok("a b/c"));
        assert_eq!(decode_component("%zz"), Err(DecodeError::BadEscape));
        assert_eq!(decode_component("%4"), Err(DecodeError::BadEscape));
        assert_eq!(decode_component("%ff"), Err(DecodeError::NotUtf8));
        assert_eq!(decode_component("%C3%A9").as_deref(), Ok("é"));
    }
}
