//! Opening a TFile: the trailer, the meta index, "BCFile.index", "TFile.meta" and
//! "TFile.index", each checked against the others and the file size; meta blocks by name.

use std::collections::BTreeMap;
use std::io::{self, BufReader, Read, Seek, SeekFrom};

use super::{
    BlockRegion, MetaBlockInfo, TFileScanner, API_VERSION, COMPRESSION_NONE, MAGIC, MAX_NAME_LEN,
    META_BLOCK_BCFILE_INDEX, META_BLOCK_TFILE_INDEX, META_BLOCK_TFILE_META, TRAILER_LEN,
};
use crate::encoding::{invalid, read_string, read_vint, read_vlong};

/// Reads an uncompressed TFile from any [`Read`] + [`Seek`]: its meta blocks and, through a
/// [`TFileScanner`], every record in order.
///
/// Every length read from the file is checked against the bytes actually available before
/// anything is allocated or read; a corrupt or truncated file gives an
/// [`io::ErrorKind::InvalidData`] (or `UnexpectedEof`) error, never a panic.
pub struct TFileReader<R: Read + Seek> {
    pub(super) input: BufReader<R>,
    meta_index_offset: u64,
    meta: BTreeMap<String, MetaBlockInfo>,
    pub(super) data_blocks: Vec<BlockRegion>,
    /// Records per data block, from "TFile.index".
    pub(super) block_records: Vec<u64>,
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
pub(super) fn context(what: &'static str) -> impl Fn(io::Error) -> io::Error {
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
        TFileScanner::new(self)
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

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use super::super::samples::{read_all, records, sample};
    use super::*;

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
