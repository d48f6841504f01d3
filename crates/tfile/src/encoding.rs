//! The primitive encodings the two formats share: TFile's variable-length integers
//! (`org.apache.hadoop.io.file.tfile.Utils.writeVLong`/`readVLong`), TFile's strings (a VInt
//! length and UTF-8 bytes, `Utils.writeString`), and Java's `DataOutput.writeUTF` (a 16-bit big
//! endian length and "modified UTF-8").

use std::io::{self, Read, Write};

/// An `InvalidData` error with `msg`.
pub(crate) fn invalid(msg: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.into())
}

/// Appends TFile's encoding of `n` (1 to 9 bytes) to `out`.
///
/// Values in -32..128 take one byte; otherwise the first byte says how many bytes follow:
/// -52..-73 one more byte, -88..-105 two more, -112..-120 three more, -121..-128 four to eight.
pub(crate) fn encode_vlong(n: i64, out: &mut Vec<u8>) {
    if (-32..128).contains(&n) {
        out.push(n as u8);
        return;
    }
    let un = if n < 0 { !n } else { n };
    // Bytes needed to hold the number with its sign bit.
    let len = (64 - un.leading_zeros()) / 8 + 1;
    let mut first = n >> ((len - 1) * 8);
    // The cascade of Hadoop's switch: each case falls through to a one byte longer form.
    let mut case = len;
    if case == 1 {
        first >>= 8;
        case = 2;
    }
    if case == 2 {
        if (-20..20).contains(&first) {
            out.push((first - 52) as u8);
            out.push(n as u8);
            return;
        }
        first >>= 8;
        case = 3;
    }
    if case == 3 {
        if (-16..16).contains(&first) {
            out.push((first - 88) as u8);
            out.extend_from_slice(&(n as u16).to_be_bytes());
            return;
        }
        first >>= 8;
        case = 4;
    }
    if case == 4 {
        if (-8..8).contains(&first) {
            out.push((first - 112) as u8);
            out.extend_from_slice(&((n as i32 as u32) >> 8).to_be_bytes()[2..]);
            out.push(n as u8);
            return;
        }
        out.push((len as i64 - 129) as u8);
        out.extend_from_slice(&(n as i32).to_be_bytes());
        return;
    }
    // Five to eight bytes: the low `len` bytes of the number, big endian.
    out.push((len as i64 - 129) as u8);
    out.extend_from_slice(&n.to_be_bytes()[8 - len as usize..]);
}

/// TFile's encoding of `n` as bytes.
pub(crate) fn vlong_bytes(n: i64) -> Vec<u8> {
    let mut out = Vec::with_capacity(9);
    encode_vlong(n, &mut out);
    out
}

/// Writes TFile's encoding of `n`.
pub(crate) fn write_vlong(out: &mut impl Write, n: i64) -> io::Result<()> {
    out.write_all(&vlong_bytes(n))
}

fn read_u8(input: &mut impl Read) -> io::Result<u8> {
    let mut b = [0u8; 1];
    input.read_exact(&mut b)?;
    Ok(b[0])
}

/// Reads one of TFile's variable-length integers.
pub(crate) fn read_vlong(input: &mut impl Read) -> io::Result<i64> {
    let first = read_u8(input)? as i8 as i64;
    if first >= -32 {
        return Ok(first);
    }
    let mut rest = |n: usize| -> io::Result<u64> {
        let mut buf = [0u8; 8];
        input.read_exact(&mut buf[..n])?;
        Ok(buf[..n]
            .iter()
            .fold(0u64, |acc, b| (acc << 8) | u64::from(*b)))
    };
    match (first + 128) / 8 {
        7..=11 => Ok(((first + 52) << 8) | rest(1)? as i64),
        3..=6 => Ok(((first + 88) << 16) | rest(2)? as i64),
        1 | 2 => Ok(((first + 112) << 24) | rest(3)? as i64),
        0 => {
            let len = (first + 129) as usize;
            if !(4..=8).contains(&len) {
                return Err(invalid("corrupted VLong encoding"));
            }
            let raw = rest(len)?;
            // Sign-extend from `len` bytes.
            let shift = 64 - 8 * len as u32;
            Ok(((raw << shift) as i64) >> shift)
        }
        _ => Err(invalid("corrupted VLong encoding")),
    }
}

/// Reads a VInt: a VLong that must fit an `i32`.
pub(crate) fn read_vint(input: &mut impl Read) -> io::Result<i32> {
    let n = read_vlong(input)?;
    i32::try_from(n).map_err(|_| invalid(format!("VInt {n} does not fit 32 bits")))
}

/// Writes a TFile string: VInt byte length, UTF-8 bytes.
pub(crate) fn write_string(out: &mut impl Write, s: &str) -> io::Result<()> {
    write_vlong(out, s.len() as i64)?;
    out.write_all(s.as_bytes())
}

/// Reads a TFile string of at most `max` bytes (a null string, length -1, is an error: the
/// formats here never write one).
pub(crate) fn read_string(input: &mut impl Read, max: usize, what: &str) -> io::Result<String> {
    let len = read_vint(input)?;
    let len = usize::try_from(len).map_err(|_| invalid(format!("{what}: bad length {len}")))?;
    if len > max {
        return Err(invalid(format!("{what}: length {len} exceeds {max}")));
    }
    let mut buf = vec![0u8; len];
    input.read_exact(&mut buf)?;
    String::from_utf8(buf).map_err(|_| invalid(format!("{what}: not UTF-8")))
}

/// Java's `writeUTF` bytes of `s`: the big endian 16-bit length, then modified UTF-8 (NUL as
/// two bytes, characters beyond the BMP as two three-byte surrogates). Fails as Java does
/// when the encoding exceeds 65535 bytes.
pub(crate) fn java_utf(s: &str) -> io::Result<Vec<u8>> {
    let mut out = vec![0u8, 0u8];
    for unit in s.encode_utf16() {
        match unit {
            0x0001..=0x007f => out.push(unit as u8),
            0x0000 | 0x0080..=0x07ff => {
                out.push(0xc0 | ((unit >> 6) & 0x1f) as u8);
                out.push(0x80 | (unit & 0x3f) as u8);
            }
            _ => {
                out.push(0xe0 | ((unit >> 12) & 0x0f) as u8);
                out.push(0x80 | ((unit >> 6) & 0x3f) as u8);
                out.push(0x80 | (unit & 0x3f) as u8);
            }
        }
    }
    let len = out.len() - 2;
    let len = u16::try_from(len).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("string too long for writeUTF: {len} encoded bytes"),
        )
    })?;
    out[..2].copy_from_slice(&len.to_be_bytes());
    Ok(out)
}

/// The result of [`read_java_utf`]: a string, or the end of the stream before its first byte.
pub(crate) enum JavaUtf {
    Value(String),
    Eof,
}

/// Reads a Java `writeUTF` string; `Eof` when the input ends before the length (Hadoop's
/// readers treat that `EOFException` as the end of a list), an error when it ends inside.
pub(crate) fn read_java_utf(input: &mut impl Read) -> io::Result<JavaUtf> {
    let mut len = [0u8; 2];
    let mut got = 0;
    while got < 2 {
        match input.read(&mut len[got..]) {
            Ok(0) if got == 0 => return Ok(JavaUtf::Eof),
            Ok(0) => return Err(io::Error::from(io::ErrorKind::UnexpectedEof)),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    let len = usize::from(u16::from_be_bytes(len));
    let mut bytes = vec![0u8; len];
    input.read_exact(&mut bytes)?;
    decode_modified_utf8(&bytes).map(JavaUtf::Value)
}

/// Reads a Java `writeUTF` string that must be present.
pub(crate) fn read_java_utf_required(input: &mut impl Read, what: &str) -> io::Result<String> {
    match read_java_utf(input)? {
        JavaUtf::Value(s) => Ok(s),
        JavaUtf::Eof => Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!("{what}: end of data"),
        )),
    }
}

fn decode_modified_utf8(bytes: &[u8]) -> io::Result<String> {
    let bad = || invalid("malformed modified UTF-8 string");
    let mut units = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let cont = |k: usize| -> io::Result<u16> {
            match bytes.get(i + k) {
                Some(c) if c & 0xc0 == 0x80 => Ok(u16::from(c & 0x3f)),
                _ => Err(bad()),
            }
        };
        match b >> 4 {
            0..=7 => {
                units.push(u16::from(b));
                i += 1;
            }
            12 | 13 => {
                units.push((u16::from(b & 0x1f) << 6) | cont(1)?);
                i += 2;
            }
            14 => {
                units.push((u16::from(b & 0x0f) << 12) | (cont(1)? << 6) | cont(2)?);
                i += 3;
            }
            _ => return Err(bad()),
        }
    }
    String::from_utf16(&units).map_err(|_| invalid("string with an unpaired surrogate"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round(n: i64) -> i64 {
        let bytes = vlong_bytes(n);
        let mut slice = &bytes[..];
        let back = read_vlong(&mut slice).expect("read vlong");
        assert!(slice.is_empty(), "{n}: {} bytes left", slice.len());
        back
    }

    #[test]
    fn vlong_round_trips_across_every_length() {
        let mut samples = vec![0, 1, -1, 127, 128, -32, -33, i64::MAX, i64::MIN];
        for shift in 0..63 {
            let p = 1i64 << shift;
            samples.extend([p - 1, p, p + 1, -p, -p - 1, -p + 1]);
        }
        for n in samples {
            assert_eq!(round(n), n, "{n}");
        }
    }

    #[test]
    fn vlong_bytes_match_hadoop() {
        // Worked from Utils.writeVLong by hand.
        assert_eq!(vlong_bytes(0), [0x00]);
        assert_eq!(vlong_bytes(127), [0x7f]);
        assert_eq!(vlong_bytes(-32), [0xe0]);
        assert_eq!(vlong_bytes(128), [0xcc, 0x80]); // first byte 0 - 52
        assert_eq!(vlong_bytes(-33), [0xcb, 0xdf]); // first byte -1 - 52
        assert_eq!(vlong_bytes(5119), [0xdf, 0xff]); // 19 - 52
        assert_eq!(vlong_bytes(5120), [0xa8, 0x14, 0x00]); // 0 - 88
        assert_eq!(vlong_bytes(1 << 20), [0x90, 0x10, 0x00, 0x00]); // 0 - 112: four bytes
        assert_eq!(vlong_bytes(-(1 << 20)), [0x98, 0x00, 0x00]); // -16 - 88: three bytes
        assert_eq!(vlong_bytes(1 << 27), [0x83, 0x08, 0x00, 0x00, 0x00]); // 4 - 129, an int
        assert_eq!(vlong_bytes(i64::MAX)[0], 0x87); // 8 - 129
    }

    #[test]
    fn corrupt_vlong_is_an_error() {
        // 0x80 = -128: len -128 + 129 = 1, not a valid long form.
        let err = read_vlong(&mut &[0x80u8][..]).expect_err("read vlong fails");
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        let err = read_vlong(&mut &[0xccu8][..]).expect_err("read vlong fails");
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
    }

    #[test]
    fn java_utf_matches_modified_utf8() {
        assert_eq!(java_utf("ab").expect("java utf"), [0, 2, b'a', b'b']);
        assert_eq!(java_utf("\0").expect("java utf"), [0, 2, 0xc0, 0x80]);
        assert_eq!(java_utf("é").expect("java utf"), [0, 2, 0xc3, 0xa9]);
        // U+1F600 as a surrogate pair, three bytes each.
        assert_eq!(
            java_utf("😀").expect("java utf"),
            [0, 6, 0xed, 0xa0, 0xbd, 0xed, 0xb8, 0x80]
        );
        for s in ["", "plain", "n\0ul", "日本語", "😀x", "stderr"] {
            let bytes = java_utf(s).expect("java utf");
            match read_java_utf(&mut &bytes[..]).expect("read java utf") {
                JavaUtf::Value(back) => assert_eq!(back, s),
                JavaUtf::Eof => panic!("eof"),
            }
        }
        assert!(java_utf(&"x".repeat(65536)).is_err());
        assert!(matches!(
            read_java_utf(&mut &[][..]).expect("read java utf"),
            JavaUtf::Eof
        ));
        assert!(read_java_utf(&mut &[0u8][..]).is_err());
        assert!(read_java_utf(&mut &[0u8, 1, 0xff][..]).is_err());
    }
}
