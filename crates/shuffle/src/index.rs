//! A map output's index file (`file.out.index`), as `SpillRecord` reads it.
//!
//! The file holds one 24-byte `IndexRecord` per partition (big-endian longs `startOffset`,
//! `rawLength`, `partLength`), then the CRC-32 of those bytes as a big-endian long.
//! `SpillRecord` reads `length / 24` records and then the checksum; so do we, in bounded
//! chunks, keeping only the record asked for.

use std::io::{self, Read};

/// `MapTask.MAP_OUTPUT_INDEX_RECORD_LENGTH`.
pub const INDEX_RECORD_LENGTH: u64 = 24;

/// Where one partition of a map output lies in `file.out`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexRecord {
    pub start_offset: i64,
    /// Length before compression (the header's `uncompressedLength`).
    pub raw_length: i64,
    /// Length in the file (the header's `compressedLength`).
    pub part_length: i64,
}

impl IndexRecord {
    fn from_bytes(b: &[u8; 24]) -> IndexRecord {
        let long = |i: usize| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&b[i..i + 8]);
            i64::from_be_bytes(a)
        };
        IndexRecord {
            start_offset: long(0),
            raw_length: long(8),
            part_length: long(16),
        }
    }

    /// The 24 bytes `SpillRecord.putIndex` stores.
    pub fn to_bytes(&self) -> [u8; 24] {
        let mut b = [0u8; 24];
        b[0..8].copy_from_slice(&self.start_offset.to_be_bytes());
        b[8..16].copy_from_slice(&self.raw_length.to_be_bytes());
        b[16..24].copy_from_slice(&self.part_length.to_be_bytes());
        b
    }
}

/// `SpillRecord.writeToFile`: the records, then their CRC-32.
pub fn encode_index(records: &[IndexRecord]) -> Vec<u8> {
    let mut out = Vec::with_capacity(records.len() * 24 + 8);
    for r in records {
        out.extend_from_slice(&r.to_bytes());
    }
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&u64::from(crc).to_be_bytes());
    out
}

/// Reads every record of an index of `file_len` bytes, checking the trailing checksum as
/// `SpillRecord` does (the caller bounds `file_len`).
pub fn read_all(mut input: impl Read, file_len: u64, name: &str) -> io::Result<Vec<IndexRecord>> {
    let partitions = file_len / INDEX_RECORD_LENGTH;
    let size = usize::try_from(partitions * INDEX_RECORD_LENGTH)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, format!("{name} is too large")))?;
    let mut bytes = vec![0u8; size + 8];
    input.read_exact(&mut bytes)?;
    let (body, trailer) = bytes.split_at(size);
    let mut t = [0u8; 8];
    t.copy_from_slice(trailer);
    if u64::from(crc32fast::hash(body)) != u64::from_be_bytes(t) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("Checksum error reading spill index: {name}"),
        ));
    }
    Ok(body
        .chunks_exact(24)
        .map(|c| {
            let mut rec = [0u8; 24];
            rec.copy_from_slice(c);
            IndexRecord::from_bytes(&rec)
        })
        .collect())
}

/// Partition `reduce`'s record of a whole index, refused as [`read_record`] refuses it.
pub fn pick(records: &[IndexRecord], reduce: i32, name: &str) -> io::Result<IndexRecord> {
    let record = usize::try_from(reduce)
        .ok()
        .and_then(|r| records.get(r))
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "{name} has {} partitions; there is no partition {reduce}",
                    records.len()
                ),
            )
        })?;
    check_record(*record, reduce, name)
}

fn check_record(record: IndexRecord, reduce: i32, name: &str) -> io::Result<IndexRecord> {
    if record.start_offset < 0 || record.part_length < 0 || record.raw_length < 0 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{name}: partition {reduce} has a negative offset or length"),
        ));
    }
    Ok(record)
}

/// Reads partition `reduce`'s record from an index of `file_len` bytes, checking the
/// trailing checksum as `SpillRecord` does. Errors are `InvalidData` with Hadoop's wording
/// where it has one.
pub fn read_record(
    mut input: impl Read,
    file_len: u64,
    reduce: i32,
    name: &str,
) -> io::Result<IndexRecord> {
    let partitions = file_len / INDEX_RECORD_LENGTH;
    let wanted = u64::try_from(reduce).ok().filter(|r| *r < partitions);
    let Some(wanted) = wanted else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{name} has {partitions} partitions; there is no partition {reduce}"),
        ));
    };
    let mut hasher = crc32fast::Hasher::new();
    let mut record = None;
    let mut buf = [0u8; 24 * 512];
    let mut left = partitions * INDEX_RECORD_LENGTH;
    let mut at = 0u64;
    while left > 0 {
        let n = usize::try_from(left.min(buf.len() as u64)).unwrap_or(buf.len());
        input.read_exact(&mut buf[..n])?;
        hasher.update(&buf[..n]);
        let first = at / INDEX_RECORD_LENGTH;
        let count = n as u64 / INDEX_RECORD_LENGTH;
        if (first..first + count).contains(&wanted) {
            let off = usize::try_from((wanted - first) * INDEX_RECORD_LENGTH).unwrap_or(0);
            let mut rec = [0u8; 24];
            rec.copy_from_slice(&buf[off..off + 24]);
            record = Some(IndexRecord::from_bytes(&rec));
        }
        at += n as u64;
        left -= n as u64;
    }
    let mut trailer = [0u8; 8];
    input.read_exact(&mut trailer)?;
    if u64::from(hasher.finalize()) != u64::from_be_bytes(trailer) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("Checksum error reading spill index: {name}"),
        ));
    }
    let record = record.ok_or_else(|| io::Error::other("index record not read"))?;
    check_record(record, reduce, name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recs(n: i64) -> Vec<IndexRecord> {
        (0..n)
            .map(|i| IndexRecord {
                start_offset: i * 100,
                raw_length: i * 10 + 1,
                part_length: 100,
            })
            .collect()
    }

    #[test]
    fn reads_each_partition_of_a_checked_index() {
        for n in [1, 3, 513, 1100] {
            let records = recs(n);
            let bytes = encode_index(&records);
            assert_eq!(bytes.len() as i64, n * 24 + 8);
            for (i, want) in records.iter().enumerate() {
                let got =
                    read_record(&bytes[..], bytes.len() as u64, i as i32, "f").expect("record");
                assert_eq!(&got, want);
            }
        }
    }

    #[test]
    fn index_layout_is_records_then_their_crc() {
        // Two partitions (0,10,12) and (12,3,5), as SpillRecord.writeToFile writes them.
        let bytes = encode_index(&[
            IndexRecord {
                start_offset: 0,
                raw_length: 10,
                part_length: 12,
            },
            IndexRecord {
                start_offset: 12,
                raw_length: 3,
                part_length: 5,
            },
        ]);
        assert_eq!(&bytes[24..32], &12i64.to_be_bytes());
        // java.util.zip.CRC32 of the 48 record bytes, computed independently.
        let crc = crc32fast::hash(&bytes[..48]);
        assert_eq!(&bytes[48..], &u64::from(crc).to_be_bytes());
    }

    #[test]
    fn refuses_bad_checksums_partitions_and_truncation() {
        let mut bytes = encode_index(&recs(4));
        let len = bytes.len() as u64;
        assert!(read_record(&bytes[..], len, 4, "f").is_err());
        assert!(read_record(&bytes[..], len, -1, "f").is_err());
        bytes[5] ^= 1;
        let e = read_record(&bytes[..], len, 0, "f").expect_err("checksum");
        assert!(e.to_string().contains("Checksum error"), "{e}");
        let good = encode_index(&recs(4));
        assert!(read_record(&good[..50], len, 0, "f").is_err());
        assert!(read_record(&good[..], 7, 0, "f").is_err());
    }

    #[test]
    fn whole_indexes_read_as_the_streaming_reader() {
        for n in [1, 2, 600] {
            let records = recs(n);
            let bytes = encode_index(&records);
            let all = read_all(&bytes[..], bytes.len() as u64, "f").expect("all");
            assert_eq!(all, records);
            for r in 0..n as i32 {
                assert_eq!(
                    pick(&all, r, "f").expect("pick"),
                    read_record(&bytes[..], bytes.len() as u64, r, "f").expect("record")
                );
            }
            assert!(pick(&all, n as i32, "f").is_err());
            assert!(pick(&all, -1, "f").is_err());
        }
        let mut bad = encode_index(&recs(3));
        bad[0] ^= 0x80;
        assert!(read_all(&bad[..], bad.len() as u64, "f").is_err());
        assert!(read_all(&bad[..10], bad.len() as u64, "f").is_err());
    }

    #[test]
    fn refuses_negative_lengths() {
        let bytes = encode_index(&[IndexRecord {
            start_offset: 0,
            raw_length: 1,
            part_length: -5,
        }]);
        assert!(read_record(&bytes[..], bytes.len() as u64, 0, "f").is_err());
    }
}
