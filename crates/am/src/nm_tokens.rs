//! The NMToken cache shared by an ApplicationMaster's scheduler client and
//! its NodeManager client (Hadoop's `NMTokenCache`).
//!
//! The ResourceManager sends an NMToken for a node with the first container
//! it grants there (and again when the NM-token master key rolls). The
//! scheduler client stores each under the node's id string, `host:port`;
//! the NodeManager client authenticates with it when it connects to that
//! node.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use spindle_common::security::Token;

/// Tokens by NodeId string (`host:port`). Cloning shares the cache.
#[derive(Debug, Clone, Default)]
pub struct NmTokenCache {
    tokens: Arc<Mutex<BTreeMap<String, Token>>>,
}

impl NmTokenCache {
    pub fn new() -> NmTokenCache {
        NmTokenCache::default()
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<String, Token>> {
        // A panic while holding the lock cannot leave a map half-updated.
        self.tokens.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Stores `token` for `node`, replacing an older one. Returns whether the
    /// node had a different token before (a rolled key).
    pub fn set(&self, node: impl Into<String>, token: Token) -> bool {
        let previous = self.lock().insert(node.into(), token.clone());
        previous.is_some_and(|p| p != token)
    }

    pub fn get(&self, node: &str) -> Option<Token> {
        self.lock().get(node).cloned()
    }

    pub fn contains(&self, node: &str) -> bool {
        self.lock().contains_key(node)
    }

    pub fn remove(&self, node: &str) -> Option<Token> {
        self.lock().remove(node)
    }

    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    /// The nodes with a token, in order.
    pub fn nodes(&self) -> Vec<String> {
        self.lock().keys().cloned().collect()
    }

    pub fn clear(&self) {
        self.lock().clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(id: &[u8]) -> Token {
        Token::new(id.to_vec(), b"pw".to_vec(), "NMToken", "")
    }

    #[test]
    fn tokens_are_kept_per_node_and_shared_between_clones() {
        let cache = NmTokenCache::new();
        let other = cache.clone();
        assert!(!cache.set("h1:8041", token(b"a")));
        assert!(!cache.set("h2:8041", token(b"b")));
        assert_eq!(other.get("h1:8041"), Some(token(b"a")));
        assert_eq!(other.nodes(), ["h1:8041", "h2:8041"]);
        // The same token again is not a change; a new one replaces it.
        assert!(!cache.set("h1:8041", token(b"a")));
        assert!(other.set("h1:8041", token(b"a2")));
        assert_eq!(cache.get("h1:8041"), Some(token(b"a2")));
        assert!(cache.get("h3:8041").is_none());
        assert_eq!(cache.remove("h2:8041"), Some(token(b"b")));
        assert_eq!(cache.len(), 1);
        cache.clear();
        assert!(other.is_empty());
    }
}
