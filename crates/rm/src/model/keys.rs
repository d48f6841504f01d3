//! Token master keys and the tokens the RM mints with them: AMRMTokens (an
//! AM's credential on the scheduler port), NMTokens (a client's credential
//! at a NodeManager) and container tokens (a NodeManager's proof that the RM
//! granted a container).
//!
//! Pure: the [`KeyRing`] is plain data the state owns through its
//! [`TokenIssuer`], rolled with time passed in and randomness from a seeded
//! generator. The scheduler port's token verifier does not share it: the
//! owner task publishes the AMRMToken keys to it after each change
//! (`crate::runtime::amrm_verifier`).

use spindle_common::ids::{ApplicationAttemptId, NodeId};
pub use spindle_common::security::ContainerKind;
use spindle_common::security::{
    kind, AmRmTokenIdentifier, ContainerTokenIdentifier, MasterKey, NmTokenIdentifier,
    SecretManager, Token,
};
use tracing::{info, warn};

use crate::model::attempts::Granted;
use crate::store::{StoredKeys, StoredSecret};

/// The RM's token secret managers.
#[derive(Debug, Clone)]
pub struct KeyRing {
    pub amrm: SecretManager,
    pub nm_token: SecretManager,
    pub container_token: SecretManager,
}

impl KeyRing {
    /// Fresh keys drawn from `rng` (seeded from the OS by the RM, from its
    /// seed by the simulation, so that a run replays exactly).
    pub fn generate(rng: &mut impl rand::Rng) -> KeyRing {
        let mut key = || {
            let id = rng.random_range(1..i32::MAX / 2);
            random_master_key(rng, id)
        };
        KeyRing {
            amrm: SecretManager::new(key()),
            nm_token: SecretManager::new(key()),
            container_token: SecretManager::new(key()),
        }
    }
}

/// The current and previous key ids of the three managers: what changes when a key rolls.
pub type KeyIds = [(i32, Option<i32>); 3];

fn stored_secret(keys: &SecretManager) -> StoredSecret {
    StoredSecret {
        current: (keys.current_key().key_id, keys.current_key().bytes.clone()),
        previous: keys.previous_key().map(|k| (k.key_id, k.bytes.clone())),
    }
}

fn from_stored(s: &StoredSecret, what: &str) -> Result<SecretManager, String> {
    let current = MasterKey::new(s.current.0, s.current.1.clone());
    let previous = s
        .previous
        .as_ref()
        .map(|p| MasterKey::new(p.0, p.1.clone()));
    SecretManager::with_keys(current, previous)
        .map_err(|e| format!("stored {what} master keys: {e}"))
}

impl KeyRing {
    /// The keys as a state store keeps them.
    pub fn snapshot(&self) -> StoredKeys {
        StoredKeys {
            amrm: stored_secret(&self.amrm),
            container_token: stored_secret(&self.container_token),
            nm_token: stored_secret(&self.nm_token),
        }
    }

    /// The keys a state store kept: tokens minted before a restart verify after it.
    pub fn from_stored(keys: &StoredKeys) -> Result<KeyRing, String> {
        Ok(KeyRing {
            amrm: from_stored(&keys.amrm, "AMRMToken")?,
            nm_token: from_stored(&keys.nm_token, "NMToken")?,
            container_token: from_stored(&keys.container_token, "container token")?,
        })
    }

    /// See [`KeyIds`].
    pub fn key_ids(&self) -> KeyIds {
        let ids = |k: &SecretManager| (k.current_key().key_id, k.previous_key().map(|p| p.key_id));
        [
            ids(&self.amrm),
            ids(&self.container_token),
            ids(&self.nm_token),
        ]
    }
}

/// A fresh master key for a secret manager, its bytes drawn from `rng`.
pub fn random_master_key(rng: &mut impl rand::RngCore, key_id: i32) -> MasterKey {
    let mut bytes = vec![0u8; spindle_common::security::secret::DEFAULT_KEY_BYTES];
    rng.fill_bytes(&mut bytes);
    MasterKey::new(key_id, bytes)
}

/// Makes a fresh key from `rng` current in `keys`; the old one stays
/// valid as the previous key.
fn roll(keys: &mut SecretManager, rng: &mut impl rand::RngCore) {
    let next = random_master_key(rng, keys.next_key_id());
    roll_to(keys, next);
}

/// Makes `next` current in `keys`; the old one stays valid as the previous key.
fn roll_to(keys: &mut SecretManager, next: MasterKey) {
    if let Err(e) = keys.roll(next) {
        warn!(error = %e, "master key roll failed");
    }
}

/// When each master key was last rolled and how often it rolls
/// (`yarn.resourcemanager.{am-rm,container,nm}-tokens.master-key-rolling-interval-secs`),
/// in monotonic milliseconds.
///
/// As in Hadoop's RM, a rolled container-token or NMToken key is first only handed
/// to the NodeManagers (in their heartbeats) and signs tokens `activation_delay_ms`
/// later (Hadoop: 1.5 × `yarn.nm.liveness-monitor.expiry-interval-ms`), when every
/// live node has it: a node never gets a token under a key it has not heard of. The
/// AMRMToken key, which only the RM verifies, is active at once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyRolling {
    pub amrm_interval_ms: u64,
    pub container_interval_ms: u64,
    pub nm_interval_ms: u64,
    pub activation_delay_ms: u64,
    pub amrm_rolled_ms: u64,
    pub container_rolled_ms: u64,
    pub nm_rolled_ms: u64,
}

impl KeyRolling {
    /// Hadoop's default: every key rolls daily, the first time a day after `now_ms`;
    /// node keys activate 15 minutes after they roll (1.5 × the default 10-minute NM
    /// liveness expiry).
    pub fn daily(now_ms: u64) -> KeyRolling {
        let day = 86_400_000;
        KeyRolling {
            amrm_interval_ms: day,
            container_interval_ms: day,
            nm_interval_ms: day,
            activation_delay_ms: 900_000,
            amrm_rolled_ms: now_ms,
            container_rolled_ms: now_ms,
            nm_rolled_ms: now_ms,
        }
    }
}

/// The master keys NodeManagers verify with, as they get them at
/// registration and after every roll.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NmMasterKeys {
    pub container_token: MasterKey,
    pub nm_token: MasterKey,
}

/// Mints the RM's tokens and rolls their keys.
#[derive(Debug)]
pub struct TokenIssuer {
    keys: KeyRing,
    rolling: KeyRolling,
    /// The scheduler address as a token service (`ip:port`), AMRMTokens' service.
    scheduler_service: String,
    /// The cluster timestamp, the `rm_identifier` of container tokens.
    rm_identifier: i64,
    /// `yarn.resourcemanager.rm.container-allocation.expiry-interval-ms`.
    container_token_expiry_ms: u64,
    /// Rolled container-token and NMToken keys waiting for their activation time
    /// (monotonic ms): nodes get them, tokens do not use them yet.
    next_container_key: Option<(MasterKey, u64)>,
    next_nm_key: Option<(MasterKey, u64)>,
    /// Where rolled keys come from: seeded once, so the state draws no
    /// randomness of its own (a simulated run replays from its seed).
    rng: rand::rngs::StdRng,
}

impl TokenIssuer {
    /// `key_seed` seeds the keys that later rolls make.
    pub fn new(
        keys: KeyRing,
        rolling: KeyRolling,
        scheduler_service: String,
        rm_identifier: i64,
        container_token_expiry_ms: u64,
        key_seed: u64,
    ) -> TokenIssuer {
        use rand::SeedableRng;
        TokenIssuer {
            keys,
            rolling,
            scheduler_service,
            rm_identifier,
            container_token_expiry_ms,
            next_container_key: None,
            next_nm_key: None,
            rng: rand::rngs::StdRng::seed_from_u64(key_seed),
        }
    }

    /// The AMRMToken of `attempt` under the current key.
    pub fn amrm(&self, attempt: ApplicationAttemptId) -> Token {
        let keys = &self.keys.amrm;
        let id = AmRmTokenIdentifier::new(attempt, keys.current_key().key_id).encode();
        let password = keys.create_password(&id);
        Token::new(id, password, kind::AM_RM, self.scheduler_service.clone())
    }

    /// The id of the current AMRMToken key: an AM authenticated under another
    /// gets a fresh token in its next allocate answer.
    pub fn current_amrm_key_id(&self) -> i32 {
        self.keys.amrm.current_key().key_id
    }

    /// An NMToken for `attempt` at `node`, submitted by `user`.
    pub fn nm(&self, attempt: ApplicationAttemptId, node: &NodeId, user: &str) -> Token {
        let keys = &self.keys.nm_token;
        let key_id = keys.current_key().key_id;
        let id = NmTokenIdentifier::new(attempt, node.clone(), user, key_id).encode();
        let password = keys.create_password(&id);
        Token::new(id, password, kind::NM, node.to_string())
    }

    /// The container token of a granted container, created at `wall_ms` and
    /// valid until the allocation expiry interval has passed (both wall
    /// clock, as the NodeManager checks them).
    pub fn container(
        &self,
        container: &Granted,
        user: &str,
        kind: ContainerKind,
        wall_ms: u64,
    ) -> Token {
        let keys = &self.keys.container_token;
        let key_id = keys.current_key().key_id;
        let ident = ContainerTokenIdentifier::new(
            container.container,
            container.node.to_string(),
            user,
            container.resource,
            (wall_ms + self.container_token_expiry_ms) as i64,
            key_id,
            self.rm_identifier,
            container.priority,
            wall_ms as i64,
            kind.into(),
        );
        let id = ident.encode();
        let password = keys.create_password(&id);
        Token::new(id, password, kind::CONTAINER, container.node.to_string())
    }

    /// The current keys NodeManagers need: what a registering node gets.
    pub fn nm_master_keys(&self) -> NmMasterKeys {
        NmMasterKeys {
            container_token: self.keys.container_token.current_key().clone(),
            nm_token: self.keys.nm_token.current_key().clone(),
        }
    }

    /// The newest keys, what heartbeating nodes must have: a rolled key waiting
    /// for its activation, else the current one. A node takes a key it is handed
    /// as its current and keeps the one before as the previous key, so the tokens
    /// signed until the activation stay valid on it.
    pub fn newest_nm_master_keys(&self) -> NmMasterKeys {
        let current = self.nm_master_keys();
        NmMasterKeys {
            container_token: self
                .next_container_key
                .as_ref()
                .map_or(current.container_token, |(k, _)| k.clone()),
            nm_token: self
                .next_nm_key
                .as_ref()
                .map_or(current.nm_token, |(k, _)| k.clone()),
        }
    }

    /// Rolls master keys whose interval has passed at `now_ms` (monotonic) and
    /// activates rolled node keys whose delay has passed (see [`KeyRolling`]).
    /// NodeManagers get new keys in their next heartbeat, AMs a new AMRMToken in
    /// their next allocate answer; tokens under the previous key stay valid until
    /// the following roll.
    pub fn roll_due(&mut self, now_ms: u64) {
        let r = &mut self.rolling;
        if now_ms.saturating_sub(r.amrm_rolled_ms) >= r.amrm_interval_ms {
            r.amrm_rolled_ms = now_ms;
            roll(&mut self.keys.amrm, &mut self.rng);
            info!("AMRMToken master key rolled");
        }
        let activate_at = now_ms.saturating_add(r.activation_delay_ms);
        if now_ms.saturating_sub(r.container_rolled_ms) >= r.container_interval_ms {
            r.container_rolled_ms = now_ms;
            if self.next_container_key.is_none() {
                let id = self.keys.container_token.next_key_id();
                let next = random_master_key(&mut self.rng, id);
                info!(
                    key_id = next.key_id,
                    delay_ms = r.activation_delay_ms,
                    "container-token master key rolled; nodes get it now, it signs after the delay"
                );
                self.next_container_key = Some((next, activate_at));
            }
        }
        if now_ms.saturating_sub(r.nm_rolled_ms) >= r.nm_interval_ms {
            r.nm_rolled_ms = now_ms;
            if self.next_nm_key.is_none() {
                let id = self.keys.nm_token.next_key_id();
                let next = random_master_key(&mut self.rng, id);
                info!(
                    key_id = next.key_id,
                    delay_ms = r.activation_delay_ms,
                    "NMToken master key rolled; nodes get it now, it signs after the delay"
                );
                self.next_nm_key = Some((next, activate_at));
            }
        }
        if let Some((next, _)) = self.next_container_key.take_if(|(_, at)| now_ms >= *at) {
            info!(key_id = next.key_id, "container-token master key activated");
            roll_to(&mut self.keys.container_token, next);
        }
        if let Some((next, _)) = self.next_nm_key.take_if(|(_, at)| now_ms >= *at) {
            info!(key_id = next.key_id, "NMToken master key activated");
            roll_to(&mut self.keys.nm_token, next);
        }
    }

    /// The key ring: what the store keeps, and what the scheduler port's
    /// verifier is given of it.
    pub fn keys(&self) -> &KeyRing {
        &self.keys
    }
}
