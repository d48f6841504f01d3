//! The shuffle's errors towards the NodeManager.

/// What went wrong starting the shuffle or registering an application.
#[derive(Debug, thiserror::Error)]
pub enum ShuffleError {
    #[error("mapreduce_shuffle configuration: {0}")]
    Config(String),
    #[error("mapreduce_shuffle cannot listen on {addr}: {source}")]
    Bind {
        addr: String,
        #[source]
        source: std::io::Error,
    },
    #[error("mapreduce_shuffle: bad application id '{0}'")]
    BadApplication(String),
    #[error("mapreduce_shuffle: bad user name '{0}'")]
    BadUser(String),
    #[error("mapreduce_shuffle: the service data of {app} is not a job token: {problem}")]
    BadServiceData { app: String, problem: String },
}
