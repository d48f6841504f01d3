//! Walking the records of a TFile's data blocks in order, and reading (or skipping) their
//! chunked values.

use std::io::{self, Read, Seek, SeekFrom};

use super::reader::context;
use super::{TFileReader, MAX_KEY_SIZE};
use crate::encoding::{invalid, read_vint};

/// Walks the records of a [`TFileReader`] in order. [`TFileScanner::next_key`] moves to the
/// next record and returns its key; the scanner then reads ([`Read`]) that record's value,
/// which need not be read whole.
pub struct TFileScanner<'a, R: Read + Seek> {
    reader: &'a mut TFileReader<R>,
    /// The data block of the current record.
    block: usize,
    /// Records of the current block already started.
    record_in_block: u64,
    /// Bytes of the current block not yet consumed.
    block_left: u64,
    /// True while positioned inside a value.
    in_value: bool,
    chunk_left: u64,
    last_chunk: bool,
    started: bool,
}

impl<R: Read + Seek> std::fmt::Debug for TFileScanner<'_, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TFileScanner")
            .field("block", &self.block)
            .field("record_in_block", &self.record_in_block)
            .finish_non_exhaustive()
    }
}

impl<'a, R: Read + Seek> TFileScanner<'a, R> {
    /// A scanner before the first record of `reader`.
    pub(super) fn new(reader: &'a mut TFileReader<R>) -> Self {
        TFileScanner {
            reader,
            block: 0,
            record_in_block: 0,
            block_left: 0,
            in_value: false,
            chunk_left: 0,
            last_chunk: true,
            started: false,
        }
    }

    /// Reads from the current block, failing when the block has no more bytes.
    fn block_read_exact(&mut self, buf: &mut [u8]) -> io::Result<()> {
        if buf.len() as u64 > self.block_left {
            return Err(invalid(format!(
                "record runs past the end of data block {}",
                self.block
            )));
        }
        self.reader
            .input
            .read_exact(buf)
            .map_err(context("data block"))?;
        self.block_left -= buf.len() as u64;
        Ok(())
    }

    fn block_vint(&mut self) -> io::Result<i32> {
        let mut counted = BlockBytes { scanner: self };
        read_vint(&mut counted).map_err(|e| {
            if e.kind() == io::ErrorKind::UnexpectedEof {
                invalid("record runs past the end of its data block")
            } else {
                e
            }
        })
    }

    fn block_skip(&mut self, n: u64) -> io::Result<()> {
        if n > self.block_left {
            return Err(invalid("record runs past the end of its data block"));
        }
        let step = i64::try_from(n).map_err(|_| invalid("skip too large"))?;
        self.reader.input.seek_relative(step)?;
        self.block_left -= n;
        Ok(())
    }

    /// Skips up to `n` bytes of the current value without reading them (seeking); returns
    /// the bytes skipped, fewer only at the value's end.
    pub fn skip_in_value(&mut self, mut n: u64) -> io::Result<u64> {
        let mut skipped = 0;
        while n > 0 {
            self.next_chunk()?;
            if !self.in_value {
                break;
            }
            let step = n.min(self.chunk_left);
            self.block_skip(step)?;
            self.chunk_left -= step;
            n -= step;
            skipped += step;
        }
        Ok(skipped)
    }

    /// Skips what is left of the current value.
    pub fn skip_value(&mut self) -> io::Result<()> {
        while self.in_value {
            if self.chunk_left > 0 {
                self.block_skip(self.chunk_left)?;
                self.chunk_left = 0;
            }
            self.next_chunk()?;
        }
        Ok(())
    }

    /// When the current chunk is used up: reads the next chunk header, or ends the value
    /// after the last chunk.
    fn next_chunk(&mut self) -> io::Result<()> {
        while self.in_value && self.chunk_left == 0 {
            if self.last_chunk {
                self.in_value = false;
                return Ok(());
            }
            let len = i64::from(self.block_vint()?);
            self.last_chunk = len >= 0;
            let len = len.unsigned_abs();
            if len > self.block_left {
                return Err(invalid(format!(
                    "value chunk of {len} bytes runs past the end of data block {}",
                    self.block
                )));
            }
            self.chunk_left = len;
        }
        Ok(())
    }

    /// Moves to the next record (skipping the rest of the current value) and returns its key;
    /// `None` after the last record.
    pub fn next_key(&mut self) -> io::Result<Option<Vec<u8>>> {
        self.skip_value()?;
        let blocks = self.reader.data_blocks.len();
        if !self.started {
            self.started = true;
            self.block = 0;
            self.record_in_block = 0;
            if blocks == 0 {
                return Ok(None);
            }
            self.enter_block()?;
        }
        loop {
            let Some(&records) = self.reader.block_records.get(self.block) else {
                // Past the last block (or none at all).
                return Ok(None);
            };
            if self.record_in_block < records {
                break;
            }
            if self.block_left != 0 {
                return Err(invalid(format!(
                    "data block {} has {} bytes after its last record",
                    self.block, self.block_left
                )));
            }
            if self.block + 1 >= blocks {
                self.block = blocks;
                return Ok(None);
            }
            self.block += 1;
            self.record_in_block = 0;
            self.enter_block()?;
        }
        let key_len = self.block_vint()?;
        let key_len = usize::try_from(key_len)
            .ok()
            .filter(|l| *l <= MAX_KEY_SIZE)
            .ok_or_else(|| invalid(format!("bad key length {key_len}")))?;
        let mut key = vec![0u8; key_len.min(self.block_left as usize)];
        self.block_read_exact(&mut key)?;
        if key.len() != key_len {
            return Err(invalid("key runs past the end of its data block"));
        }
        self.record_in_block += 1;
        self.in_value = true;
        self.last_chunk = false;
        self.chunk_left = 0;
        self.next_chunk()?;
        Ok(Some(key))
    }

    fn enter_block(&mut self) -> io::Result<()> {
        if self.block >= self.reader.data_blocks.len() {
            return Ok(());
        }
        let region = self.reader.data_blocks[self.block];
        self.reader.input.seek(SeekFrom::Start(region.offset))?;
        self.block_left = region.stored_size;
        Ok(())
    }
}

/// Reads single bytes of the current block for the VInt decoder, counting them.
struct BlockBytes<'s, 'a, R: Read + Seek> {
    scanner: &'s mut TFileScanner<'a, R>,
}

impl<R: Read + Seek> Read for BlockBytes<'_, '_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() || self.scanner.block_left == 0 {
            return Ok(0);
        }
        self.scanner.block_read_exact(&mut buf[..1])?;
        Ok(1)
    }
}

/// Reads the current record's value; 0 at its end.
impl<R: Read + Seek> Read for TFileScanner<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.next_chunk()?;
        if !self.in_value || buf.is_empty() {
            return Ok(0);
        }
        let n = (buf.len() as u64).min(self.chunk_left) as usize;
        let got = self.reader.input.read(&mut buf[..n])?;
        if got == 0 {
            return Err(invalid("file ends inside a value"));
        }
        self.chunk_left -= got as u64;
        self.block_left -= got as u64;
        Ok(got)
    }
}

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use super::super::samples::{records, sample};
    use super::*;

    #[test]
    fn skipping_inside_a_value_crosses_chunks() {
        let recs = records();
        let bytes = sample(&recs, 256 * 1024);
        let mut reader = TFileReader::new(Cursor::new(&bytes)).expect("new");
        let mut scanner = reader.scanner();
        for (key, value) in &recs {
            assert_eq!(scanner.next_key().expect("next key").as_ref(), Some(key));
            // Skip all but the last 10 bytes, read those, then nothing is left.
            let keep = value.len().min(10);
            let skip = (value.len() - keep) as u64;
            assert_eq!(scanner.skip_in_value(skip).expect("skip"), skip);
            let mut tail = Vec::new();
            scanner.read_to_end(&mut tail).expect("read");
            assert_eq!(tail, value[value.len() - keep..]);
            assert_eq!(scanner.skip_in_value(5).expect("skip at the end"), 0);
        }
        assert_eq!(scanner.next_key().expect("next key"), None);
    }

    #[test]
    fn the_scanner_stays_at_the_end() {
        for records in [Vec::new(), records()] {
            let bytes = sample(&records, 256 * 1024);
            let mut reader = TFileReader::new(Cursor::new(&bytes)).expect("new");
            let mut scanner = reader.scanner();
            for _ in 0..records.len() {
                assert!(scanner.next_key().expect("next key").is_some());
            }
            for _ in 0..3 {
                assert_eq!(scanner.next_key().expect("next key"), None);
                let mut rest = Vec::new();
                assert_eq!(scanner.read_to_end(&mut rest).expect("read"), 0);
            }
        }
    }
}
