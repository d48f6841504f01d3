//! Where BCFile blocks lie: the regions of the data index and the meta index's entries.

use std::io::{self, Read};

use crate::encoding::{invalid, read_vlong, vlong_bytes};

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
    pub(super) fn write(&self, out: &mut Vec<u8>) {
        out.extend(vlong_bytes(self.offset as i64));
        out.extend(vlong_bytes(self.stored_size as i64));
        out.extend(vlong_bytes(self.raw_size as i64));
    }

    pub(super) fn read(input: &mut impl Read) -> io::Result<Self> {
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

/// An entry of the meta index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetaBlockInfo {
    /// Compression name (always "none" here).
    pub compression: String,
    /// Where the block lies.
    pub region: BlockRegion,
}
