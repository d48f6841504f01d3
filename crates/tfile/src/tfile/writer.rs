//! Writing a TFile: records into data blocks (values of unknown length in chunks), then
//! the meta blocks, the meta index and the trailer.

use std::collections::BTreeMap;
use std::io::{self, BufWriter, Write};

use super::{
    BlockRegion, API_VERSION, CHUNK_SIZE, COMPRESSION_NONE, MAGIC, MAX_KEY_SIZE,
    META_BLOCK_BCFILE_INDEX, META_BLOCK_TFILE_INDEX, META_BLOCK_TFILE_META,
};
use crate::encoding::{vlong_bytes, write_string};

/// Counts the bytes written through it: the writer's offsets.
struct Counting<W: Write> {
    inner: BufWriter<W>,
    pos: u64,
}

impl<W: Write> Write for Counting<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.pos += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WriterState {
    /// Ready for a record or a meta block.
    Ready,
    /// A value writer was handed out and not finished.
    InValue,
    /// An I/O error happened: the output is incomplete.
    Failed,
}

/// The data block being written.
struct OpenBlock {
    start: u64,
    records: u64,
}

/// Writes an unsorted, uncompressed TFile to any [`Write`], as Hadoop's `TFile.Writer` does
/// with a `null` comparator and compression "none".
///
/// Records go in with [`TFileWriter::append`] (value of known length) or
/// [`TFileWriter::append_streamed`] (value of unknown length, chunked); [`TFileWriter::finish`]
/// writes the indexes and the trailer and returns the output. The output is buffered; after
/// any I/O error the writer refuses further use.
pub struct TFileWriter<W: Write> {
    out: Counting<W>,
    min_block_size: u64,
    state: WriterState,
    block: Option<OpenBlock>,
    data_blocks: Vec<BlockRegion>,
    /// Per data block: its last key and record count.
    index: Vec<(Vec<u8>, u64)>,
    first_key: Option<Vec<u8>>,
    last_key: Vec<u8>,
    records: u64,
    meta_blocks: BTreeMap<String, BlockRegion>,
    chunk: Vec<u8>,
}

impl<W: Write> std::fmt::Debug for TFileWriter<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TFileWriter")
            .field("position", &self.out.pos)
            .field("records", &self.records)
            .field("data_blocks", &self.data_blocks.len())
            .finish_non_exhaustive()
    }
}

impl<W: Write> TFileWriter<W> {
    /// Starts a file on `out`, which must be empty (offsets are counted from the first byte
    /// written, as Hadoop requires a fresh file): writes the magic. A data block is closed
    /// after the record that brings it to `min_block_size` bytes (YARN's log aggregation
    /// uses 256 KiB).
    pub fn new(out: W, min_block_size: u64) -> io::Result<Self> {
        let mut writer = Self {
            out: Counting {
                inner: BufWriter::with_capacity(256 * 1024, out),
                pos: 0,
            },
            min_block_size,
            state: WriterState::Ready,
            block: None,
            data_blocks: Vec::new(),
            index: Vec::new(),
            first_key: None,
            last_key: Vec::new(),
            records: 0,
            meta_blocks: BTreeMap::new(),
            chunk: Vec::new(),
        };
        writer.io(|w| w.out.write_all(&MAGIC))?;
        Ok(writer)
    }

    /// Bytes written so far (including what is still buffered).
    pub fn position(&self) -> u64 {
        self.out.pos
    }

    /// Records appended so far.
    pub fn record_count(&self) -> u64 {
        self.records
    }

    /// Runs an output step; an error poisons the writer.
    fn io<T>(&mut self, step: impl FnOnce(&mut Self) -> io::Result<T>) -> io::Result<T> {
        let result = step(self);
        if result.is_err() {
            self.state = WriterState::Failed;
        }
        result
    }

    fn check_ready(&self) -> io::Result<()> {
        match self.state {
            WriterState::Ready => Ok(()),
            WriterState::InValue => Err(io::Error::other(
                "TFile writer: the previous value was not finished",
            )),
            WriterState::Failed => Err(io::Error::other(
                "TFile writer: an earlier write failed, the file is incomplete",
            )),
        }
    }

    /// Writes the key of a new record (opening a data block when none is open).
    fn begin_record(&mut self, key: &[u8]) -> io::Result<()> {
        self.check_ready()?;
        if key.len() > MAX_KEY_SIZE {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("TFile key of {} bytes exceeds {MAX_KEY_SIZE}", key.len()),
            ));
        }
        if !self.meta_blocks.is_empty() {
            return Err(io::Error::other(
                "TFile writer: no record may follow a meta block",
            ));
        }
        self.io(|w| {
            if w.block.is_none() {
                w.block = Some(OpenBlock {
                    start: w.out.pos,
                    records: 0,
                });
            }
            w.out.write_all(&vlong_bytes(key.len() as i64))?;
            w.out.write_all(key)
        })?;
        if self.first_key.is_none() {
            self.first_key = Some(key.to_vec());
        }
        self.last_key.clear();
        self.last_key.extend_from_slice(key);
        Ok(())
    }

    /// Counts a completed record and closes the block when it reached the minimum size.
    fn end_record(&mut self) -> io::Result<()> {
        self.records += 1;
        if let Some(block) = &mut self.block {
            block.records += 1;
        }
        self.finish_data_block(false)
    }

    fn finish_data_block(&mut self, force: bool) -> io::Result<()> {
        let Some(block) = &self.block else {
            return Ok(());
        };
        let size = self.out.pos - block.start;
        if force || size >= self.min_block_size {
            self.index.push((self.last_key.clone(), block.records));
            self.data_blocks.push(BlockRegion {
                offset: block.start,
                stored_size: size,
                raw_size: size.min(i32::MAX as u64),
            });
            self.block = None;
        }
        Ok(())
    }

    /// Appends a record whose value length is known (Hadoop's `append(key, value)`: a single
    /// chunk).
    pub fn append(&mut self, key: &[u8], value: &[u8]) -> io::Result<()> {
        let len = i32::try_from(value.len())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "TFile value over 2 GiB"))?;
        self.begin_record(key)?;
        self.io(|w| {
            w.out.write_all(&vlong_bytes(i64::from(len)))?;
            w.out.write_all(value)?;
            w.end_record()
        })
    }

    /// Starts a record whose value is streamed (Hadoop's `prepareAppendKey(-1)` then
    /// `prepareAppendValue(-1)`): write the value into the returned writer, then call
    /// [`ValueWriter::finish`]. Dropping it unfinished leaves the TFile unusable.
    pub fn append_streamed(&mut self, key: &[u8]) -> io::Result<ValueWriter<'_, W>> {
        self.begin_record(key)?;
        self.state = WriterState::InValue;
        self.chunk.clear();
        if self.chunk.capacity() < CHUNK_SIZE {
            self.chunk.reserve_exact(CHUNK_SIZE);
        }
        Ok(ValueWriter { writer: self })
    }

    /// Writes a meta block named `name` (uncompressed). Data records may not follow.
    pub fn meta_block(&mut self, name: &str, data: &[u8]) -> io::Result<()> {
        self.check_ready()?;
        let reserved = [
            META_BLOCK_TFILE_META,
            META_BLOCK_TFILE_INDEX,
            META_BLOCK_BCFILE_INDEX,
        ];
        if self.meta_blocks.contains_key(name) || reserved.contains(&name) {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("TFile meta block {name:?} already exists"),
            ));
        }
        self.io(|w| {
            w.finish_data_block(true)?;
            w.write_meta_block(name, data)
        })
    }

    fn write_meta_block(&mut self, name: &str, data: &[u8]) -> io::Result<()> {
        let offset = self.out.pos;
        self.out.write_all(data)?;
        let size = data.len() as u64;
        self.meta_blocks.insert(
            name.to_string(),
            BlockRegion {
                offset,
                stored_size: size,
                raw_size: size.min(i32::MAX as u64),
            },
        );
        Ok(())
    }

    /// Closes the last data block, writes "TFile.meta", "TFile.index", "BCFile.index", the
    /// meta index and the trailer, flushes, and returns the output.
    pub fn finish(mut self) -> io::Result<W> {
        self.check_ready()?;
        self.finish_data_block(true)?;

        let mut meta = Vec::new();
        meta.extend(API_VERSION.0.to_be_bytes());
        meta.extend(API_VERSION.1.to_be_bytes());
        meta.extend(vlong_bytes(self.records as i64));
        write_string(&mut meta, "")?;
        self.write_meta_block(META_BLOCK_TFILE_META, &meta)?;

        let mut index = Vec::new();
        match &self.first_key {
            None => index.extend(vlong_bytes(0)),
            Some(first) => {
                let mut entry = vlong_bytes(first.len() as i64);
                entry.extend_from_slice(first);
                index.extend(vlong_bytes(entry.len() as i64));
                index.extend(entry);
                for (key, records) in &self.index {
                    let mut entry = vlong_bytes(key.len() as i64);
                    entry.extend_from_slice(key);
                    entry.extend(vlong_bytes(*records as i64));
                    index.extend(vlong_bytes(entry.len() as i64));
                    index.extend(entry);
                }
            }
        }
        self.write_meta_block(META_BLOCK_TFILE_INDEX, &index)?;

        let mut data_index = Vec::new();
        write_string(&mut data_index, COMPRESSION_NONE)?;
        data_index.extend(vlong_bytes(self.data_blocks.len() as i64));
        for region in &self.data_blocks {
            region.write(&mut data_index);
        }
        self.write_meta_block(META_BLOCK_BCFILE_INDEX, &data_index)?;

        let meta_index_offset = self.out.pos;
        let mut tail = vlong_bytes(self.meta_blocks.len() as i64);
        for (name, region) in &self.meta_blocks {
            write_string(&mut tail, &format!("data:{name}"))?;
            write_string(&mut tail, COMPRESSION_NONE)?;
            region.write(&mut tail);
        }
        tail.extend((meta_index_offset as i64).to_be_bytes());
        tail.extend(API_VERSION.0.to_be_bytes());
        tail.extend(API_VERSION.1.to_be_bytes());
        tail.extend(MAGIC);
        self.out.write_all(&tail)?;
        self.out.flush()?;
        self.out
            .inner
            .into_inner()
            .map_err(|e| io::Error::new(e.error().kind(), e.error().to_string()))
    }
}

/// The value of a record being streamed (see [`TFileWriter::append_streamed`]); encodes it in
/// chunks as Hadoop's `Chunk.ChunkEncoder` does.
pub struct ValueWriter<'a, W: Write> {
    writer: &'a mut TFileWriter<W>,
}

impl<W: Write> std::fmt::Debug for ValueWriter<'_, W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ValueWriter")
            .field("buffered", &self.writer.chunk.len())
            .finish_non_exhaustive()
    }
}

impl<W: Write> ValueWriter<'_, W> {
    /// One `write(byte[], off, len)` of Hadoop's encoder: when the buffered bytes and `data`
    /// reach the chunk size, both go out as one non-final chunk; otherwise `data` is buffered.
    /// `data` must be shorter than 1 GiB (the chunk length is an `i32`).
    fn put(&mut self, data: &[u8]) -> io::Result<()> {
        let w = &mut *self.writer;
        if w.state != WriterState::InValue {
            return Err(io::Error::other(
                "TFile writer: an earlier write failed, the file is incomplete",
            ));
        }
        if data.len() + w.chunk.len() >= CHUNK_SIZE {
            let total = data.len() + w.chunk.len();
            w.io(|w| {
                w.out.write_all(&vlong_bytes(-(total as i64)))?;
                w.out.write_all(&w.chunk)?;
                w.chunk.clear();
                w.out.write_all(data)
            })
        } else {
            w.chunk.extend_from_slice(data);
            Ok(())
        }
    }

    /// Writes exactly `data` as one write of Hadoop's encoder, even when empty (which
    /// [`Write::write_all`] would skip): lets a caller reproduce Hadoop's chunk boundaries.
    pub fn write_piece(&mut self, data: &[u8]) -> io::Result<()> {
        for piece in data.chunks(1 << 30) {
            self.put(piece)?;
        }
        if data.is_empty() {
            self.put(data)?;
        }
        Ok(())
    }

    /// Bytes written to the file so far (the record's key and value chunks included).
    pub fn position(&self) -> u64 {
        self.writer.out.pos + self.writer.chunk.len() as u64
    }

    /// Writes the final chunk and completes the record.
    pub fn finish(self) -> io::Result<()> {
        let w = self.writer;
        if w.state != WriterState::InValue {
            return Err(io::Error::other(
                "TFile writer: an earlier write failed, the file is incomplete",
            ));
        }
        w.io(|w| {
            w.out.write_all(&vlong_bytes(w.chunk.len() as i64))?;
            w.out.write_all(&w.chunk)?;
            w.chunk.clear();
            w.end_record()
        })?;
        w.state = WriterState::Ready;
        Ok(())
    }
}

impl<W: Write> Write for ValueWriter<'_, W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = buf.len().min(1 << 30);
        self.put(&buf[..n])?;
        Ok(n)
    }

    /// Does nothing: like Hadoop's, a value's chunks only end at [`ValueWriter::finish`].
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use super::super::samples::read_all;
    use super::*;
    use crate::tfile::TFileReader;

    #[test]
    fn chunks_follow_hadoops_encoder() {
        let mut w = TFileWriter::new(Vec::new(), 1 << 40).expect("new");
        let mut value = w.append_streamed(b"k").expect("append streamed");
        value.write_piece(&[1u8; 600_000]).expect("write piece"); // buffered
        value.write_piece(&[2u8; 600_000]).expect("write piece"); // 1.2 MB >= 1 MiB: one chunk of both
        value.write_piece(&[3u8; 10]).expect("write piece"); // buffered, the last chunk
        value.finish().expect("finish");
        let bytes = w.finish().expect("finish");
        // magic, key length 1, key, chunk header -(1_200_000).
        let header = vlong_bytes(-1_200_000);
        assert_eq!(&bytes[16..18], &[1, b'k']);
        assert_eq!(&bytes[18..18 + header.len()], &header[..]);
        let last = 18 + header.len() + 1_200_000;
        assert_eq!(&bytes[last..last + 11], &[10, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3]);
        let recs = read_all(&bytes).expect("read all");
        assert_eq!(recs[0].1.len(), 1_200_010);
    }

    #[test]
    fn user_meta_blocks_are_readable_and_end_the_records() {
        let mut w = TFileWriter::new(Vec::new(), 1024).expect("new");
        w.append(b"a", b"1").expect("append");
        w.meta_block("mine", b"hello").expect("meta block");
        assert!(w.meta_block("mine", b"again").is_err());
        assert!(w.append(b"b", b"2").is_err());
        let bytes = w.finish().expect("finish");
        let mut reader = TFileReader::new(Cursor::new(&bytes)).expect("new");
        assert_eq!(reader.meta_block("mine").expect("meta block"), b"hello");
        assert_eq!(
            read_all(&bytes).expect("read all"),
            vec![(b"a".to_vec(), b"1".to_vec())]
        );
    }

    #[test]
    fn unfinished_value_blocks_the_writer() {
        let mut w = TFileWriter::new(Vec::new(), 1024).expect("new");
        {
            let _unfinished = w.append_streamed(b"a").expect("append streamed");
        }
        assert!(w.append(b"b", b"").is_err());
        assert!(w.finish().is_err());
    }
}
