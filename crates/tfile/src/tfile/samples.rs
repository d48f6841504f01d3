//! Files the tests write and read back.

use std::io::{self, Cursor, Read, Write};

use super::{TFileReader, TFileWriter};

pub(super) fn read_all(bytes: &[u8]) -> io::Result<Vec<(Vec<u8>, Vec<u8>)>> {
    let mut reader = TFileReader::new(Cursor::new(bytes))?;
    let mut scanner = reader.scanner();
    let mut out = Vec::new();
    while let Some(key) = scanner.next_key()? {
        let mut value = Vec::new();
        scanner.read_to_end(&mut value)?;
        out.push((key, value));
    }
    Ok(out)
}

pub(super) fn sample(records: &[(Vec<u8>, Vec<u8>)], min_block: u64) -> Vec<u8> {
    let mut w = TFileWriter::new(Vec::new(), min_block).expect("new");
    for (i, (k, v)) in records.iter().enumerate() {
        if i % 2 == 0 {
            w.append(k, v).expect("append");
        } else {
            let mut value = w.append_streamed(k).expect("append streamed");
            // Uneven pieces so chunks cross piece boundaries.
            for piece in v.chunks(70_001) {
                value.write_all(piece).expect("write all");
            }
            value.finish().expect("finish");
        }
    }
    w.finish().expect("finish")
}

pub(super) fn records() -> Vec<(Vec<u8>, Vec<u8>)> {
    let big: Vec<u8> = (0..3_500_000u32).map(|i| (i * 7 % 251) as u8).collect();
    vec![
        (b"VERSION".to_vec(), vec![0, 0, 0, 1]),
        (b"first".to_vec(), Vec::new()),
        (b"big".to_vec(), big.clone()),
        (b"streamed-big".to_vec(), big),
        (Vec::new(), b"empty key".to_vec()),
        (b"last".to_vec(), b"x".repeat(300_000)),
    ]
}
