pub(crate) mod block_reader;
pub(crate) mod block_writer;
pub(crate) mod connection;
pub(crate) mod crypto;
#[cfg(test)]
pub(crate) mod fake_datanode;
pub(crate) mod protocol;
pub(crate) mod proxy;
pub(crate) mod replace_datanode;
