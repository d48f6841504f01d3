//! The scheduler port's AMRMToken check, and the slot both token verifiers
//! read. The state owns the keys ([`crate::model::keys`]) and the live RM
//! delegation tokens ([`crate::model::delegation`]); the owner task
//! publishes the AMRMToken keys here when they change (before any reply
//! carrying a token under a new key leaves) and the delegation tokens'
//! view after each change, and the verifiers read them on connection tasks
//! without waiting for the owner.

use std::sync::{Arc, RwLock};

use spindle_common::security::{kind, AmRmTokenIdentifier, SecretManager};
use spindle_ipc::sasl::{TokenVerifier, VerifiedToken};

use crate::model::delegation::DelegationView;

/// The AMRMToken keys and the live delegation tokens of the RM's current
/// activation (`crate::runtime::active`): none while the RM is standby. The
/// scheduler port's [`AmrmVerifier`] and the client port's
/// [`crate::runtime::delegation_verifier::DelegationVerifier`] read them.
#[derive(Clone, Default)]
pub struct KeySlot {
    keys: Arc<RwLock<Option<Arc<SecretManager>>>>,
    delegation: Arc<RwLock<Option<Arc<DelegationView>>>>,
    /// The standby refusal.
    standby_message: Arc<str>,
}

impl KeySlot {
    /// An empty slot; `standby_message` is what a standby answers.
    pub fn new(standby_message: String) -> KeySlot {
        KeySlot {
            keys: Arc::default(),
            delegation: Arc::default(),
            standby_message: Arc::from(standby_message),
        }
    }

    /// Installs (or, with `None`, removes) the activation's keys and
    /// delegation tokens.
    pub fn set(&self, keys: Option<(SecretManager, Arc<DelegationView>)>) {
        let (keys, delegation) = keys.map_or((None, None), |(k, d)| (Some(k), Some(d)));
        *self.keys.write().unwrap_or_else(|e| e.into_inner()) = keys.map(Arc::new);
        *self.delegation.write().unwrap_or_else(|e| e.into_inner()) = delegation;
    }

    /// Replaces the delegation tokens of an active slot (as [`KeySlot::publish`]).
    pub fn publish_delegation(&self, view: Arc<DelegationView>) {
        let mut slot = self.delegation.write().unwrap_or_else(|e| e.into_inner());
        if slot.is_some() {
            *slot = Some(view);
        }
    }

    pub fn delegation(&self) -> Option<Arc<DelegationView>> {
        self.delegation
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// What a standby answers.
    pub fn standby_message(&self) -> &str {
        &self.standby_message
    }

    /// Replaces the keys of an active slot when they changed (a roll); a
    /// slot emptied by a step down stays empty, so an owner task that has
    /// not stopped yet cannot make a standby verify again.
    pub fn publish(&self, keys: &SecretManager) {
        let mut slot = self.keys.write().unwrap_or_else(|e| e.into_inner());
        if let Some(current) = slot.as_mut() {
            if **current != *keys {
                *current = Arc::new(keys.clone());
            }
        }
    }

    pub fn get(&self) -> Option<Arc<SecretManager>> {
        self.keys.read().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// Checks AMRMTokens on the scheduler port; the connection's user becomes the
/// attempt. A standby (no keys) refuses with a StandbyException.
pub struct AmrmVerifier(pub KeySlot);

impl TokenVerifier for AmrmVerifier {
    fn kind(&self) -> &str {
        kind::AM_RM
    }

    fn standby(&self) -> Option<String> {
        if self.0.get().is_none() {
            Some(self.0.standby_message.to_string())
        } else {
            None
        }
    }

    fn verify(&self, identifier: &[u8]) -> Result<VerifiedToken, String> {
        let ident = AmRmTokenIdentifier::decode(identifier).map_err(|e| e.to_string())?;
        let keys = self
            .0
            .get()
            .ok_or_else(|| self.0.standby_message.to_string())?;
        let password = keys
            .retrieve_password(identifier, ident.key_id)
            .map_err(|e| format!("AMRMToken for {} refused: {e}", ident.attempt))?;
        Ok(VerifiedToken {
            real_user: None,
            password,
            user: ident.user(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::keys::random_master_key;

    /// A roll is published to an active slot; a slot a step down emptied
    /// stays empty whatever an owner still running publishes.
    #[test]
    fn publish_replaces_only_an_active_slots_keys() {
        let mut rng = rand::rng();
        let slot = KeySlot::new("standby".into());
        let keys = SecretManager::new(random_master_key(&mut rng, 1));
        slot.publish(&keys);
        assert!(slot.get().is_none());
        assert_eq!(
            AmrmVerifier(slot.clone()).standby().as_deref(),
            Some("standby")
        );
        slot.set(Some((keys.clone(), Arc::default())));
        let mut rolled = keys.clone();
        rolled.roll(random_master_key(&mut rng, 2)).expect("a roll");
        slot.publish(&rolled);
        assert_eq!(slot.get().map(|k| k.current_key().key_id), Some(2));
        slot.set(None);
        slot.publish(&rolled);
        assert!(slot.get().is_none());
    }
}
