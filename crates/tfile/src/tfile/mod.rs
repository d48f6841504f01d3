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
//!
//! The files: `region.rs` the BCFile's block regions and meta index entries; `writer.rs`
//! [`TFileWriter`] and the chunked [`ValueWriter`]; `reader.rs` [`TFileReader`] (the
//! trailer, the meta index and the three index blocks, checked against each other and the
//! file size); `scanner.rs` [`TFileScanner`], the records of the data blocks in order.

mod reader;
mod region;
#[cfg(test)]
mod samples;
mod scanner;
mod writer;

pub use reader::TFileReader;
pub use region::{BlockRegion, MetaBlockInfo};
pub use scanner::TFileScanner;
pub use writer::{TFileWriter, ValueWriter};

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

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use super::samples::{read_all, records, sample};
    use super::*;

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
    fn empty_file_round_trips() {
        let bytes = TFileWriter::new(Vec::new(), 1024)
            .expect("new")
            .finish()
            .expect("finish");
        assert!(read_all(&bytes).expect("read all").is_empty());
    }
}
