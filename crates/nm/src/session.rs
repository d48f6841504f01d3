//! What the node knows from the ResourceManager: the RM's identity from the
//! current registration, the master keys that sign container tokens and
//! NMTokens (current and previous), and the node's resource.
//!
//! The node status updater writes it; the container manager and the token
//! checks read it through a `watch` channel. It depends on nothing but the
//! wire form of the keys, so that all of them can depend on it.

use spindle_common::Resource;

use crate::wire::MasterKey;

/// What the node currently knows from the ResourceManager.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RmSession {
    /// The RM's identifier (its start time) from the current registration;
    /// `None` before registering and while re-registering. Container tokens
    /// must carry this value.
    pub rm_identifier: Option<i64>,
    /// The version the RM reported, if any.
    pub rm_version: Option<String>,
    /// Key that signs container tokens.
    pub container_token_master_key: Option<MasterKey>,
    /// The container-token key before the last roll (tokens signed with it
    /// are still accepted).
    pub previous_container_token_master_key: Option<MasterKey>,
    /// Key that signs NM tokens.
    pub nm_token_master_key: Option<MasterKey>,
    /// The NM-token key before the last roll.
    pub previous_nm_token_master_key: Option<MasterKey>,
    /// The resources this node offers (the configured ones unless the RM
    /// overrode them).
    pub total_resource: Resource,
    /// How many times the node has registered (1 after the first, +1 per resync).
    pub registrations: u64,
}

/// Installs `new` as the current key; the one it replaces becomes the
/// previous key (a re-sent current key changes nothing).
fn roll_key(current: &mut Option<MasterKey>, previous: &mut Option<MasterKey>, new: MasterKey) {
    if current.as_ref().is_some_and(|c| c.key_id == new.key_id) {
        *current = Some(new);
        return;
    }
    *previous = current.take();
    *current = Some(new);
}

impl RmSession {
    /// Applies keys sent by the ResourceManager.
    pub(crate) fn apply_keys(&mut self, container: Option<MasterKey>, nm: Option<MasterKey>) {
        if let Some(k) = container {
            roll_key(
                &mut self.container_token_master_key,
                &mut self.previous_container_token_master_key,
                k,
            );
        }
        if let Some(k) = nm {
            roll_key(
                &mut self.nm_token_master_key,
                &mut self.previous_nm_token_master_key,
                k,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(id: i32) -> MasterKey {
        MasterKey::new(id, vec![id as u8; 8])
    }

    #[test]
    fn rolled_keys_keep_the_previous_one() {
        let mut s = RmSession::default();
        s.apply_keys(Some(key(1)), Some(key(10)));
        assert_eq!(s.container_token_master_key, Some(key(1)));
        assert_eq!(s.previous_container_token_master_key, None);
        // The same key again (every registration sends it) changes nothing.
        s.apply_keys(Some(key(1)), None);
        assert_eq!(s.previous_container_token_master_key, None);
        s.apply_keys(Some(key(2)), Some(key(11)));
        assert_eq!(s.container_token_master_key, Some(key(2)));
        assert_eq!(s.previous_container_token_master_key, Some(key(1)));
        assert_eq!(s.nm_token_master_key, Some(key(11)));
        assert_eq!(s.previous_nm_token_master_key, Some(key(10)));
        s.apply_keys(Some(key(3)), None);
        assert_eq!(s.previous_container_token_master_key, Some(key(2)));
        assert_eq!(s.previous_nm_token_master_key, Some(key(10)));
    }
}
