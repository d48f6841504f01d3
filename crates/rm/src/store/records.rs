//! The stored records: plain data, encoded as JSON values inside the store.
//! Ids and states are kept in Hadoop's string forms.

use serde::{Deserialize, Serialize};

/// One application as the store keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredApp {
    pub id: String,
    pub user: String,
    pub name: String,
    pub queue: String,
    pub app_type: String,
    pub tags: Vec<String>,
    pub priority: i32,
    pub am_memory_mb: i64,
    pub am_vcores: i32,
    pub max_attempts: i32,
    pub unmanaged_am: bool,
    pub keep_containers: bool,
    /// The application ACLs as submitted: (`VIEW_APP`/`MODIFY_APP`, ACL).
    pub acls: Vec<(String, String)>,
    pub state: String,
    pub final_status: String,
    pub diagnostics: String,
    pub submit_ms: u64,
    pub start_ms: u64,
    pub launch_ms: u64,
    pub finish_ms: u64,
    pub am_host: String,
    pub am_rpc_port: i32,
    pub tracking_url: String,
    /// The LIFETIME timeout's expiry (epoch milliseconds), once set.
    #[serde(default)]
    pub lifetime_expiry_ms: Option<u64>,
    /// Failed attempts that count towards the maximum.
    pub failed_attempts: i32,
    /// The AM launch context, while the application may need another attempt.
    pub launch: Option<StoredLaunch>,
    pub attempts: Vec<StoredAttempt>,
}

/// The AM launch context as the RM keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredLaunch {
    pub environment: Vec<(String, String)>,
    pub tokens: Option<Vec<u8>>,
    /// The rest of `ContainerLaunchContextProto`, as the client encoded it.
    pub forwarded: Vec<u8>,
}

/// One attempt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredAttempt {
    pub id: String,
    pub state: String,
    pub final_status: String,
    pub am_container: Option<String>,
    pub am_node: Option<String>,
    pub host: String,
    pub rpc_port: i32,
    pub tracking_url: String,
    pub diagnostics: String,
    pub start_ms: u64,
    pub finish_ms: u64,
}

/// A secret manager's keys (their bytes never printed).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredSecret {
    pub current: (i32, Vec<u8>),
    pub previous: Option<(i32, Vec<u8>)>,
}

/// The RM's token master keys.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredKeys {
    pub amrm: StoredSecret,
    pub container_token: StoredSecret,
    pub nm_token: StoredSecret,
}

/// The RM delegation-token master keys, the last sequence number handed
/// out and when the keys last rolled (`crate::model::delegation`).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredDelegationKeys {
    pub keys: Vec<StoredDelegationKey>,
    pub current: i32,
    pub rolled_ms: i64,
    pub sequence: i32,
}

/// One delegation-token master key.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredDelegationKey {
    pub id: i32,
    pub bytes: Vec<u8>,
    pub expiry_ms: i64,
}

/// A live RM delegation token: its identifier as issued (its password is
/// recomputed from its key) and its renew date.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredDelegationToken {
    pub sequence: i32,
    pub identifier: Vec<u8>,
    pub renew_date_ms: i64,
}

impl std::fmt::Debug for StoredDelegationKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredDelegationKeys")
            .field("keys", &self.keys.iter().map(|k| k.id).collect::<Vec<_>>())
            .field("current", &self.current)
            .field("sequence", &self.sequence)
            .finish()
    }
}

impl std::fmt::Debug for StoredSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredSecret")
            .field("current", &self.current.0)
            .field("previous", &self.previous.as_ref().map(|p| p.0))
            .finish()
    }
}
