//! Hadoop's TFile (`org.apache.hadoop.io.file.tfile.TFile` on `BCFile`), uncompressed, as
//! Hadoop 3.3.4 writes it.
//!
//! Layout of a file (all integers big endian; "VInt"/"VLong" are TFile's variable-length
//! integers, a "string" is a VInt length and UTF-8 bytes):
//!
//! ```text
//! magic (16 bytes)
//! data block*        records: VInt key length, key, value in chunks
//! meta block*        user meta blocks, then "TFile.meta", "TFile.index", "BCFile.index"
//! meta index         VInt count, per block (sorted by name): string "data:<name>",
//!                    string compression, region
//! trailer            i64 offset of the meta index, BCFile version (i16 1, i16 0), magic
//! ```
//!
//! A region is three VLongs: offset, stored size, raw size. "BCFile.index" holds the default
//! compression name and the data blocks' regions; "TFile.meta" the TFile version, the record
//! count and the comparator ("" for unsorted keys, what YARN uses); "TFile.index" the first key
//! and, per data block, its last key and record count.
//!
//! A value of unknown length (`prepareAppendValue(-1)`, what YARN writes) is a sequence of
//! chunks: VInt `-n` then `n` bytes for every chunk but the last, VInt `n >= 0` then `n` bytes
//! for the last. The writer buffers up to `tfile.io.chunk.size` (1 MiB) before writing a chunk,
//! exactly as Hadoop's `Chunk.ChunkEncoder` does, so a caller that writes the same pieces in the
//! same order gets the bytes Hadoop writes. A data block ends after the first record that
//! brings it to the minimum block size given to the writer (YARN passes 256 KiB).
//!
//! Only the compression "none" is supported (YARN's default,
//! `yarn.nodemanager.log-aggregation.compression-type`); a file using another is rejected with
//! a clear error.

use std::collections::BTreeMap;
use std::io::{self, BufReader, BufWriter, Read, Seek, SeekFrom, Write};

use crate::encoding::{invalid, read_string, read_vint, read_vlong, vlong_bytes, write_string};

/// The 16 bytes at both ends of every BCFile.
pub const MAGIC: [u8; 16] = [
    0xd1, 0x11, 0xd3, 0x68, 0x91, 0xb5, 0xd7, 0xb6, 0x39, 0xdf, 0x41, 0x40, 0x92, 0xba, 0xe1, 0x50,
];

/// The only compression this crate writes and reads.
pub const COMPRESSION_NONE: &str = "none";

/// Hadoop's `tfile.io.chunk.size` default: the buffer of a value of unknown length.
pub const CHUNK_SIZE: usize = 1024 * 1024;

/// The largest key Hadoop's writer accepts (`TFile.MAX_KEY_SIZE`).
pub const MAX_KEY_SIZE: usize = 64 * 1024;

/// The meta block with the TFile version, record count and comparator.
pub const META_BLOCK_TFILE_META: &str = "TFile.meta";
/// The meta block with the first key and the per-block last keys and record counts.
pub const META_BLOCK_TFILE_INDEX: &str = "TFile.index";
/// The meta block with the data blocks' regions.
pub const META_BLOCK_BCFILE_INDEX: &str = "BCFile.index";

/// Major and minor version of both the BCFile and the TFile layer.
const API_VERSION: (i16, i16) = (1, 0);

/// Trailer: i64 meta index offset, two i16 version halves, magic.
const TRAILER_LEN: u64 = 8 + 4 + MAGIC.len() as u64;

/// Longest meta block name or compression name the reader accepts.
const MAX_NAME_LEN: usize = 4096;

/// Where a block lies in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockRegion {
    /// Offset of the block's first byte.
    pub offset: u64,
    /// Bytes the block occupies in the file.
    pub stored_size: u64,
    /// Bytes before compression (equal to `stored_size` without compression, except that
    /// Hadoop caps it at `i32::MAX`).
    pub raw_size: u64,
}

impl BlockRegion {
    fn write(&self, out: &mut Vec<u8>) {
        out.extend(vlong_bytes(self.offset as i64));
        out.extend(vlong_bytes(self.stored_size as i64));
        out.extend(vlong_bytes(self.raw_size as i64));
    }

    fn read(input: &mut impl Read) -> io::Result<Self> {
        let mut field = |what: &str| -> io::Result<u64> {
            let v = read_vlong(input)?;
            u64::try_from(v).map_err(|_| invalid(format!("block region: negative {what} {v}")))
        };
        Ok(Self {
            offset: field("offset")?,
            stored_size: field("size")?,
            raw_size: field("raw size")?,
        })
    }
}

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

/// An entry of the meta index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetaBlockInfo {
    /// Compression name (always "none" here).
    pub compression: String,
    /// Where the block lies.
    pub region: BlockRegion,
}

/// Reads an uncompressed TFile from any [`Read`] + [`Seek`]: its meta blocks and, through a
/// [`TFileScanner`], every record in order.
///
/// Every length read from the file is checked against the bytes actually available before
/// anything is allocated or read; a corrupt or truncated file gives an
/// [`io::ErrorKind::InvalidData`] (or `UnexpectedEof`) error, never a panic.
pub struct TFileReader<R: Read + Seek> {
    input: BufReader<R>,
    meta_index_offset: u64,
    meta: BTreeMap<String, MetaBlockInfo>,
    data_blocks: Vec<BlockRegion>,
    /// Records per data block, from "TFile.index".
    block_records: Vec<u64>,
    entry_count: u64,
    comparator: String,
    first_key: Option<Vec<u8>>,
}

impl<R: Read + Seek> std::fmt::Debug for TFileReader<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TFileReader")
            .field("entries", &self.entry_count)
            .field("data_blocks", &self.data_blocks)
            .field("meta", &self.meta)
            .finish_non_exhaustive()
    }
}

/// Wraps a read error of a structure with what was being read; an end of data inside it
/// means a corrupt file.
fn context(what: &'static str) -> impl Fn(io::Error) -> io::Error {
    move |e| match e.kind() {
        io::ErrorKind::UnexpectedEof => invalid(format!("{what}: truncated")),
        kind => io::Error::new(kind, format!("{what}: {e}")),
    }
}

impl<R: Read + Seek> TFileReader<R> {
    /// Opens the file: reads the trailer, the meta index, "BCFile.index", "TFile.meta" and
    /// "TFile.index", checking each against the others and the file size.
    pub fn new(inner: R) -> io::Result<Self> {
        let mut input = BufReader::with_capacity(64 * 1024, inner);
        let file_len = input.seek(SeekFrom::End(0))?;
        if file_len < MAGIC.len() as u64 + TRAILER_LEN {
            return Err(invalid(format!(
                "not a TFile: {file_len} bytes is shorter than the magic and the trailer"
            )));
        }
        input.seek(SeekFrom::Start(0))?;
        let mut magic = [0u8; 16];
        input.read_exact(&mut magic)?;
        if magic != MAGIC {
            return Err(invalid("not a TFile: bad magic at the start"));
        }
        input.seek(SeekFrom::Start(file_len - TRAILER_LEN))?;
        let mut trailer = [0u8; TRAILER_LEN as usize];
        input.read_exact(&mut trailer)?;
        if trailer[12..] != MAGIC {
            return Err(invalid(
                "not a TFile: bad magic at the end (truncated file?)",
            ));
        }
        let mut offset_bytes = [0u8; 8];
        offset_bytes.copy_from_slice(&trailer[..8]);
        let meta_index_offset = i64::from_be_bytes(offset_bytes);
        let major = i16::from_be_bytes([trailer[8], trailer[9]]);
        if major != API_VERSION.0 {
            return Err(invalid(format!("unsupported BCFile version {major}")));
        }
        let meta_index_end = file_len - TRAILER_LEN;
        let meta_index_offset = u64::try_from(meta_index_offset)
            .ok()
            .filter(|o| (MAGIC.len() as u64..=meta_index_end).contains(o))
            .ok_or_else(|| {
                invalid(format!(
                    "meta index offset {meta_index_offset} out of range"
                ))
            })?;

        // The meta index.
        input.seek(SeekFrom::Start(meta_index_offset))?;
        let mut section = (&mut input).take(meta_index_end - meta_index_offset);
        let meta = Self::read_meta_index(&mut section, meta_index_offset)
            .map_err(context("BCFile meta index"))?;

        let mut reader = Self {
            input,
            meta_index_offset,
            meta,
            data_blocks: Vec::new(),
            block_records: Vec::new(),
            entry_count: 0,
            comparator: String::new(),
            first_key: None,
        };

        // BCFile.index: the data blocks.
        let data_blocks = reader
            .with_meta_block(META_BLOCK_BCFILE_INDEX, |block, size| {
                let compression = read_string(block, MAX_NAME_LEN, "compression name")?;
                check_compression(&compression)?;
                let count = read_vint(block)?;
                let count = usize::try_from(count)
                    .map_err(|_| invalid(format!("bad data block count {count}")))?;
                // Each region takes at least three bytes: no more than that many fit.
                if count as u64 > size / 3 {
                    return Err(invalid(format!(
                        "data block count {count} exceeds the index"
                    )));
                }
                // Grown as regions are read, not sized by the count read from the file.
                let mut blocks = Vec::with_capacity(count.min(1024));
                for _ in 0..count {
                    blocks.push(BlockRegion::read(block)?);
                }
                Ok(blocks)
            })
            .map_err(context("BCFile data index"))?;
        for region in &data_blocks {
            reader.check_region(region, "data block")?;
        }
        reader.data_blocks = data_blocks;

        // TFile.meta: version, record count, comparator.
        let (entry_count, comparator) = reader
            .with_meta_block(META_BLOCK_TFILE_META, |block, _| {
                let mut version = [0u8; 4];
                block.read_exact(&mut version)?;
                let major = i16::from_be_bytes([version[0], version[1]]);
                if major != API_VERSION.0 {
                    return Err(invalid(format!("unsupported TFile version {major}")));
                }
                let count = read_vlong(block)?;
                let count = u64::try_from(count)
                    .map_err(|_| invalid(format!("negative record count {count}")))?;
                let comparator = read_string(block, MAX_NAME_LEN, "comparator")?;
                Ok((count, comparator))
            })
            .map_err(context("TFile.meta"))?;
        reader.entry_count = entry_count;
        reader.comparator = comparator;

        // TFile.index: first key, per block last key and record count.
        let blocks = reader.data_blocks.len();
        let (first_key, block_records) = reader
            .with_meta_block(META_BLOCK_TFILE_INDEX, |block, _| {
                let size = read_vint(block)?;
                if size <= 0 {
                    if blocks != 0 {
                        return Err(invalid(format!("no first key but {blocks} data blocks")));
                    }
                    return Ok((None, Vec::new()));
                }
                let first = read_sized(block, size)?;
                let mut first_in = &first[..];
                let key_len = read_vint(&mut first_in)?;
                let key = read_sized(&mut first_in, key_len)?;
                let mut records = Vec::with_capacity(blocks);
                for _ in 0..blocks {
                    let size = read_vint(block)?;
                    let entry = read_sized(block, size)?;
                    let mut entry_in = &entry[..];
                    let key_len = read_vint(&mut entry_in)?;
                    read_sized(&mut entry_in, key_len)?;
                    let count = read_vlong(&mut entry_in)?;
                    let count = u64::try_from(count)
                        .map_err(|_| invalid(format!("negative block record count {count}")))?;
                    records.push(count);
                }
                Ok((Some(key), records))
            })
            .map_err(context("TFile.index"))?;
        let total = block_records
            .iter()
            .try_fold(0u64, |acc, n| acc.checked_add(*n))
            .ok_or_else(|| invalid("TFile.index: record counts overflow"))?;
        if total != reader.entry_count {
            return Err(invalid(format!(
                "TFile.meta counts {} records but TFile.index {total}",
                reader.entry_count
            )));
        }
        reader.first_key = first_key;
        reader.block_records = block_records;
        Ok(reader)
    }

    fn read_meta_index(
        section: &mut io::Take<&mut BufReader<R>>,
        meta_index_offset: u64,
    ) -> io::Result<BTreeMap<String, MetaBlockInfo>> {
        let count = read_vint(section)?;
        if count < 0 || count as u64 > section.limit() {
            return Err(invalid(format!("bad meta block count {count}")));
        }
        let mut meta = BTreeMap::new();
        for _ in 0..count {
            let full = read_string(section, MAX_NAME_LEN, "meta block name")?;
            let name = full
                .strip_prefix("data:")
                .ok_or_else(|| invalid(format!("meta block name {full:?} lacks \"data:\"")))?;
            let compression = read_string(section, MAX_NAME_LEN, "compression name")?;
            let region = BlockRegion::read(section)?;
            let end = region.offset.checked_add(region.stored_size);
            if region.offset < MAGIC.len() as u64 || end.is_none_or(|e| e > meta_index_offset) {
                return Err(invalid(format!(
                    "meta block {name:?} lies outside the file"
                )));
            }
            meta.insert(
                name.to_string(),
                MetaBlockInfo {
                    compression,
                    region,
                },
            );
        }
        Ok(meta)
    }

    fn check_region(&self, region: &BlockRegion, what: &str) -> io::Result<()> {
        let end = region.offset.checked_add(region.stored_size);
        if region.offset < MAGIC.len() as u64 || end.is_none_or(|e| e > self.meta_index_offset) {
            return Err(invalid(format!(
                "{what} at {} of {} bytes lies outside the file",
                region.offset, region.stored_size
            )));
        }
        Ok(())
    }

    /// Runs `parse` over the bytes of meta block `name` (bounded to the block; the block's
    /// size is also passed).
    fn with_meta_block<T>(
        &mut self,
        name: &str,
        parse: impl FnOnce(&mut io::Take<&mut BufReader<R>>, u64) -> io::Result<T>,
    ) -> io::Result<T> {
        let info = self
            .meta
            .get(name)
            .ok_or_else(|| invalid(format!("meta block {name:?} is missing")))?;
        check_compression(&info.compression)?;
        let region = info.region;
        self.input.seek(SeekFrom::Start(region.offset))?;
        let mut block = (&mut self.input).take(region.stored_size);
        parse(&mut block, region.stored_size)
    }

    /// Records in the file (from "TFile.meta").
    pub fn entry_count(&self) -> u64 {
        self.entry_count
    }

    /// The comparator name: "" for unsorted keys, what YARN writes.
    pub fn comparator(&self) -> &str {
        &self.comparator
    }

    /// The first key, when there is a record.
    pub fn first_key(&self) -> Option<&[u8]> {
        self.first_key.as_deref()
    }

    /// The data blocks' regions.
    pub fn data_blocks(&self) -> &[BlockRegion] {
        &self.data_blocks
    }

    /// Records per data block.
    pub fn block_record_counts(&self) -> &[u64] {
        &self.block_records
    }

    /// Every meta block by name (TFile's and BCFile's own included).
    pub fn meta_blocks(&self) -> &BTreeMap<String, MetaBlockInfo> {
        &self.meta
    }

    /// The bytes of meta block `name` (its size was checked against the file).
    pub fn meta_block(&mut self, name: &str) -> io::Result<Vec<u8>> {
        self.with_meta_block(name, |block, size| {
            let mut data = Vec::new();
            block.read_to_end(&mut data)?;
            if data.len() as u64 != size {
                return Err(invalid(format!("meta block {name:?} truncated")));
            }
            Ok(data)
        })
    }

    /// A scanner over every record, from the first.
    pub fn scanner(&mut self) -> TFileScanner<'_, R> {
        TFileScanner {
            reader: self,
            block: 0,
            record_in_block: 0,
            block_left: 0,
            in_value: false,
            chunk_left: 0,
            last_chunk: true,
            started: false,
        }
    }
}

fn check_compression(name: &str) -> io::Result<()> {
    if name == COMPRESSION_NONE {
        Ok(())
    } else {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            format!("TFile compression {name:?} is not supported (only \"none\")"),
        ))
    }
}

/// Reads `size` bytes from a bounded input: the size was checked to be non-negative and the
/// read fails on a short input before allocating more than it holds.
fn read_sized(input: &mut impl Read, size: i32) -> io::Result<Vec<u8>> {
    let size = u64::try_from(size).map_err(|_| invalid(format!("negative length {size}")))?;
    let mut data = Vec::new();
    input.take(size).read_to_end(&mut data)?;
    if data.len() as u64 != size {
        return Err(io::Error::from(io::ErrorKind::UnexpectedEof));
    }
    Ok(data)
}

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

impl<R: Read + Seek> TFileScanner<'_, R> {
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
    use super::*;
    use std::io::Cursor;

    fn read_all(bytes: &[u8]) -> io::Result<Vec<(Vec<u8>, Vec<u8>)>> {
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

    fn sample(records: &[(Vec<u8>, Vec<u8>)], min_block: u64) -> Vec<u8> {
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

    fn records() -> Vec<(Vec<u8>, Vec<u8>)> {
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

    #[test]
    fn round_trip_keeps_every_record_and_splits_blocks() {
        let recs = records();
        let bytes = sample(&recs, 256 * 1024);
        assert_eq!(read_all(&bytes).expect("read all"), recs);
        let mut reader = TFileReader::new(Cursor::new(&bytes)).expect("new");
        assert_eq!(reader.entry_count(), recs.len() as u64);
        assert_eq!(reader.first_key(), Some(&b"VERSION"[..]));
        assert_eq!(reader.comparator(), "");
        // "big" closes the first block, "streamed-big" the second, "last" the third.
        assert_eq!(reader.block_record_counts(), [3, 1, 2]);
        let names: Vec<_> = reader.meta_blocks().keys().cloned().collect();
        assert_eq!(names, ["BCFile.index", "TFile.index", "TFile.meta"]);
        let meta = reader.meta_block("TFile.meta").expect("meta block");
        assert_eq!(meta, [0, 1, 0, 0, 6, 0]);
        assert!(reader.meta_block("nope").is_err());
    }

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

    #[test]
    fn empty_file_round_trips() {
        let bytes = TFileWriter::new(Vec::new(), 1024)
            .expect("new")
            .finish()
            .expect("finish");
        assert!(read_all(&bytes).expect("read all").is_empty());
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

    #[test]
    fn truncated_files_are_errors_not_panics() {
        let bytes = sample(&records(), 256 * 1024);
        // Every prefix fails cleanly (sampled: every length up to 4 KiB, then strided).
        let lengths = (0..4096).chain((4096..bytes.len()).step_by(9973));
        for len in lengths {
            assert!(
                read_all(&bytes[..len]).is_err(),
                "prefix of {len} bytes read"
            );
        }
    }

    #[test]
    fn corrupted_bytes_are_errors_or_different_data_never_panics() {
        let recs = vec![
            (b"VERSION".to_vec(), vec![0, 0, 0, 1]),
            (b"c1".to_vec(), b"hello world".repeat(50)),
            (b"c2".to_vec(), b"x".repeat(2000)),
        ];
        let bytes = sample(&recs, 512);
        for pos in 0..bytes.len() {
            for flip in [0x01u8, 0x80, 0xff] {
                let mut bad = bytes.clone();
                bad[pos] ^= flip;
                // Either an error, or some records; never a panic or a huge allocation.
                if let Ok(back) = read_all(&bad) {
                    assert!(back.len() <= recs.len() + 1, "at {pos}");
                }
            }
        }
    }

    #[test]
    fn specific_corruptions_name_the_problem() {
        let bytes = sample(&records(), 256 * 1024);
        let mut bad = bytes.clone();
        bad[0] ^= 1;
        let err = TFileReader::new(Cursor::new(&bad)).expect_err("new fails");
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        assert!(err.to_string().contains("magic"), "{err}");

        let err = read_all(&bytes[..bytes.len() - 1]).expect_err("read all fails");
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);

        // A meta index offset pointing past the end.
        let mut bad = bytes.clone();
        let at = bytes.len() - TRAILER_LEN as usize;
        bad[at..at + 8].copy_from_slice(&(1i64 << 40).to_be_bytes());
        let err = TFileReader::new(Cursor::new(&bad)).expect_err("new fails");
        assert!(err.to_string().contains("out of range"), "{err}");

        // Another compression is refused by name.
        let at = bytes
            .windows(4)
            .rposition(|w| w == b"none")
            .expect("rposition");
        let mut bad = bytes.clone();
        bad[at..at + 4].copy_from_slice(b"lzo!");
        let err = TFileReader::new(Cursor::new(&bad)).expect_err("new fails");
        assert!(err.to_string().contains("not supported"), "{err}");
    }
}
