//! RM delegation tokens (`RM_DELEGATION_TOKEN`): what Hadoop's
//! `RMDelegationTokenSecretManager` does, as plain data with time passed in.
//!
//! A user authenticated by Kerberos asks the client port for a token naming
//! a renewer; whoever holds it then calls the client port as its owner by
//! Hadoop's TOKEN method (Oozie's launchers, a job's own tasks, any process
//! handed a credentials file). A token lives `renew_interval_ms` from its
//! issue or last renewal, never past `max_lifetime_ms` from its issue; its
//! renewer renews it, its owner or renewer cancels it. Master keys roll
//! every `key_update_interval_ms`; a key stays known until every token it
//! signed is past its maximum date.
//!
//! The owner task publishes a [`DelegationView`] to the client port's token
//! verifier after each change (`crate::runtime::delegation_verifier`); the
//! state store keeps the keys, the sequence number and every live token
//! (`StoreOp::PutDelegationKeys`, `PutDelegationToken`,
//! `RemoveDelegationToken`), so tokens outlive a restart and a failover.
//! Messages are Hadoop's (`AbstractDelegationTokenSecretManager`).

use std::collections::BTreeMap;
use std::sync::Arc;

use rand::SeedableRng;
use spindle_common::security::secret::passwords_equal;
use spindle_common::security::{kind, MasterKey, RmDelegationTokenIdentifier, Token};
use tracing::info;

use crate::iso8601::format_log_time as format_time;
use crate::model::keys::random_master_key;
use crate::store::{StoreOp, StoredDelegationKey, StoredDelegationKeys, StoredDelegationToken};

/// `yarn.resourcemanager.delegation.*`, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DelegationConf {
    /// `yarn.resourcemanager.delegation.key.update-interval` (1 day).
    pub key_update_interval_ms: u64,
    /// `yarn.resourcemanager.delegation.token.renew-interval` (1 day).
    pub renew_interval_ms: u64,
    /// `yarn.resourcemanager.delegation.token.max-lifetime` (7 days).
    pub max_lifetime_ms: u64,
    /// How often expired tokens are dropped (Hadoop's RM: one hour, fixed).
    pub remove_scan_interval_ms: u64,
}

impl Default for DelegationConf {
    fn default() -> Self {
        DelegationConf {
            key_update_interval_ms: 86_400_000,
            renew_interval_ms: 86_400_000,
            max_lifetime_ms: 7 * 86_400_000,
            remove_scan_interval_ms: 3_600_000,
        }
    }
}

/// Why a token operation was refused: Hadoop's exception and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DelegationRefusal {
    pub class: &'static str,
    pub message: String,
}

/// The exception classes of refused token operations.
pub mod refusal_class {
    pub const INVALID_TOKEN: &str = "org.apache.hadoop.security.token.SecretManager$InvalidToken";
    pub const ACCESS_CONTROL: &str = "org.apache.hadoop.security.AccessControlException";
    pub const IO: &str = "java.io.IOException";
}

fn refuse(class: &'static str, message: String) -> DelegationRefusal {
    DelegationRefusal { class, message }
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Key {
    key: MasterKey,
    /// Wall ms after which no token it signed can be valid.
    expiry_ms: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Issued {
    ident: RmDelegationTokenIdentifier,
    /// The identifier's bytes as issued: what the password is over.
    identifier: Vec<u8>,
    password: Vec<u8>,
    /// Wall ms: the token is refused after this unless renewed.
    renew_date: i64,
}

/// The client port's view of the live tokens: enough to recompute a
/// presented token's password and to refuse an unknown or expired one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DelegationView {
    /// By sequence number: the identifier as issued, its password and its
    /// renew date.
    tokens: BTreeMap<i32, (RmDelegationTokenIdentifier, Vec<u8>, i64)>,
}

/// A token the verifier accepts: its password and who it authenticates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Presented {
    pub password: Vec<u8>,
    pub owner: String,
    pub real_user: Option<String>,
}

impl DelegationView {
    /// Hadoop's `retrievePassword`: the password of a live token, or why
    /// not, checked at wall time `now_ms`.
    pub fn check(&self, identifier: &[u8], now_ms: i64) -> Result<Presented, String> {
        let ident = RmDelegationTokenIdentifier::decode(identifier).map_err(|e| e.to_string())?;
        let Some((issued, password, renew_date)) = self
            .tokens
            .get(&ident.sequence_number)
            .filter(|(i, _, _)| *i == ident)
        else {
            return Err(format!("token {ident} can't be found in cache"));
        };
        if *renew_date < now_ms {
            return Err(format!(
                "token {ident} is expired, current time: {} expected renewal time: {}",
                format_time(now_ms),
                format_time(*renew_date)
            ));
        }
        Ok(Presented {
            password: password.clone(),
            owner: issued.owner.clone(),
            real_user: issued.real_user().map(str::to_string),
        })
    }

    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }
}

/// A token just issued, with the dates REST answers report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssuedToken {
    pub token: Token,
    /// Wall ms: refused after this unless renewed.
    pub renew_date_ms: i64,
    /// Wall ms: no renewal extends it past this.
    pub max_date_ms: i64,
}

/// The RM's delegation-token secret manager.
#[derive(Debug)]
pub struct DelegationTokens {
    conf: DelegationConf,
    keys: BTreeMap<i32, Key>,
    current_key: i32,
    /// Wall ms of the last key roll and the last expired-token scan.
    rolled_ms: i64,
    scanned_ms: i64,
    /// The last sequence number handed out.
    sequence: i32,
    tokens: BTreeMap<i32, Issued>,
    rng: rand::rngs::StdRng,
    /// Store operations not yet taken (`take_store_ops`), kept only while
    /// a store is on ([`DelegationTokens::record`]).
    pending: Vec<StoreOp>,
    recording: bool,
    /// Counts changes to the live tokens: the owner task publishes a new
    /// view when it moved.
    version: u64,
}

impl DelegationTokens {
    /// A fresh manager with one key, made at wall time `now_ms` from `seed`.
    pub fn new(conf: DelegationConf, now_ms: i64, seed: u64) -> DelegationTokens {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let key = random_master_key(&mut rng, 1);
        let mut dt = DelegationTokens {
            conf,
            keys: BTreeMap::new(),
            current_key: key.key_id,
            rolled_ms: now_ms,
            scanned_ms: now_ms,
            sequence: 0,
            tokens: BTreeMap::new(),
            rng,
            pending: Vec::new(),
            recording: false,
            version: 0,
        };
        dt.keys.insert(
            key.key_id,
            Key {
                key,
                expiry_ms: now_ms + (conf.key_update_interval_ms + conf.max_lifetime_ms) as i64,
            },
        );
        dt
    }

    /// From now on, the changes are kept for the state store. The keys are
    /// written with the first token (each issue writes the sequence number
    /// with them) or roll: until then no token depends on them.
    pub fn record(&mut self) {
        self.recording = true;
    }

    /// The manager a state store kept: its keys, sequence number and
    /// tokens, each token's password recomputed under its key. A token
    /// whose key is gone is dropped (named in the answer's second part).
    pub fn from_stored(
        conf: DelegationConf,
        keys: &StoredDelegationKeys,
        tokens: &[StoredDelegationToken],
        now_ms: i64,
        seed: u64,
    ) -> Result<(DelegationTokens, Vec<String>), String> {
        let mut dt = DelegationTokens {
            conf,
            keys: keys
                .keys
                .iter()
                .map(|k| {
                    (
                        k.id,
                        Key {
                            key: MasterKey::new(k.id, k.bytes.clone()),
                            expiry_ms: k.expiry_ms,
                        },
                    )
                })
                .collect(),
            current_key: keys.current,
            rolled_ms: keys.rolled_ms,
            scanned_ms: now_ms,
            sequence: keys.sequence,
            tokens: BTreeMap::new(),
            rng: rand::rngs::StdRng::seed_from_u64(seed),
            pending: Vec::new(),
            recording: true,
            version: 1,
        };
        if !dt.keys.contains_key(&dt.current_key) {
            return Err(format!(
                "stored delegation-token keys name key {} current but do not hold it",
                dt.current_key
            ));
        }
        let mut dropped = Vec::new();
        for t in tokens {
            let ident = RmDelegationTokenIdentifier::decode(&t.identifier)
                .map_err(|e| format!("stored delegation token {}: {e}", t.sequence))?;
            let Some(key) = dt.keys.get(&ident.master_key_id) else {
                dropped.push(ident.to_string());
                dt.pending.push(StoreOp::RemoveDelegationToken(t.sequence));
                continue;
            };
            let password = key.key.password(&t.identifier);
            dt.tokens.insert(
                ident.sequence_number,
                Issued {
                    ident,
                    identifier: t.identifier.clone(),
                    password,
                    renew_date: t.renew_date_ms,
                },
            );
        }
        Ok((dt, dropped))
    }

    fn keys_changed(&mut self) {
        if self.recording {
            self.pending
                .push(StoreOp::PutDelegationKeys(self.stored_keys()));
        }
    }

    fn stored_keys(&self) -> StoredDelegationKeys {
        StoredDelegationKeys {
            keys: self
                .keys
                .values()
                .map(|k| StoredDelegationKey {
                    id: k.key.key_id,
                    bytes: k.key.bytes.clone(),
                    expiry_ms: k.expiry_ms,
                })
                .collect(),
            current: self.current_key,
            rolled_ms: self.rolled_ms,
            sequence: self.sequence,
        }
    }

    fn token_changed(&mut self, sequence: i32) {
        self.version += 1;
        if !self.recording {
            return;
        }
        match self.tokens.get(&sequence) {
            Some(t) => self
                .pending
                .push(StoreOp::PutDelegationToken(StoredDelegationToken {
                    sequence,
                    identifier: t.identifier.clone(),
                    renew_date_ms: t.renew_date,
                })),
            None => self.pending.push(StoreOp::RemoveDelegationToken(sequence)),
        }
    }

    /// `getDelegationToken`: a token for `owner` (its full name), renewable
    /// by `renewer` (a short name; empty: by nobody), `real_user` when the
    /// owner is impersonated; issued at wall time `now_ms`, with its renew
    /// and maximum dates. Its service is empty, as Hadoop's RM answers: the
    /// client fills in the address.
    pub fn issue(
        &mut self,
        owner: &str,
        renewer: &str,
        real_user: Option<&str>,
        now_ms: i64,
    ) -> IssuedToken {
        self.sequence = self.sequence.wrapping_add(1);
        let ident = RmDelegationTokenIdentifier {
            owner: owner.to_string(),
            renewer: renewer.to_string(),
            real_user: real_user.unwrap_or_default().to_string(),
            issue_date: now_ms,
            max_date: now_ms + self.conf.max_lifetime_ms as i64,
            sequence_number: self.sequence,
            master_key_id: self.current_key,
        };
        let identifier = ident.encode();
        let password = self.keys[&self.current_key].key.password(&identifier);
        let sequence = ident.sequence_number;
        let (renew_date_ms, max_date_ms) =
            (now_ms + self.conf.renew_interval_ms as i64, ident.max_date);
        self.tokens.insert(
            sequence,
            Issued {
                ident,
                identifier: identifier.clone(),
                password: password.clone(),
                renew_date: renew_date_ms,
            },
        );
        self.keys_changed();
        self.token_changed(sequence);
        info!(owner, renewer, sequence, "RM delegation token issued");
        IssuedToken {
            token: Token::new(identifier, password, kind::RM_DELEGATION, ""),
            renew_date_ms,
            max_date_ms,
        }
    }

    /// `renewDelegationToken` by `renewer` (a short name) at `now_ms`:
    /// the token's new expiry.
    pub fn renew(
        &mut self,
        identifier: &[u8],
        password: &[u8],
        renewer: &str,
        now_ms: i64,
    ) -> Result<i64, DelegationRefusal> {
        use refusal_class::*;
        let ident = RmDelegationTokenIdentifier::decode(identifier)
            .map_err(|e| refuse(IO, e.to_string()))?;
        if ident.max_date < now_ms {
            return Err(refuse(
                INVALID_TOKEN,
                format!(
                    "{renewer} tried to renew an expired token {ident} max expiration date: {} \
                     currentTime: {}",
                    format_time(ident.max_date),
                    format_time(now_ms)
                ),
            ));
        }
        if ident.renewer.is_empty() {
            return Err(refuse(
                ACCESS_CONTROL,
                format!("{renewer} tried to renew a token {ident} without a renewer"),
            ));
        }
        if ident.renewer != renewer {
            return Err(refuse(
                ACCESS_CONTROL,
                format!(
                    "{renewer} tries to renew a token {ident} with non-matching renewer {}",
                    ident.renewer
                ),
            ));
        }
        let Some(key) = self.keys.get(&ident.master_key_id) else {
            return Err(refuse(
                INVALID_TOKEN,
                format!(
                    "Unable to find master key for keyId={} from cache. Failed to renew an \
                     unexpired token {ident} with sequenceNumber={}",
                    ident.master_key_id, ident.sequence_number
                ),
            ));
        };
        if !passwords_equal(&key.key.password(identifier), password) {
            return Err(refuse(
                INVALID_TOKEN,
                format!("{renewer} is trying to renew a token {ident} with wrong password"),
            ));
        }
        let renew_date = ident
            .max_date
            .min(now_ms + self.conf.renew_interval_ms as i64);
        let sequence = ident.sequence_number;
        match self.tokens.get_mut(&sequence).filter(|t| t.ident == ident) {
            Some(t) => t.renew_date = renew_date,
            None => {
                return Err(refuse(
                    INVALID_TOKEN,
                    format!("Renewal request for unknown token {ident}"),
                ))
            }
        }
        self.token_changed(sequence);
        Ok(renew_date)
    }

    /// `cancelDelegationToken` by `canceller` (its full name; `short` is
    /// the short name it maps to): its owner, or its renewer.
    pub fn cancel(
        &mut self,
        identifier: &[u8],
        canceller: &str,
        short: &str,
    ) -> Result<(), DelegationRefusal> {
        use refusal_class::*;
        let ident = RmDelegationTokenIdentifier::decode(identifier)
            .map_err(|e| refuse(IO, e.to_string()))?;
        if ident.owner.is_empty() {
            return Err(refuse(
                INVALID_TOKEN,
                format!("Token with no owner {ident}"),
            ));
        }
        if canceller != ident.owner && (ident.renewer.is_empty() || short != ident.renewer) {
            return Err(refuse(
                ACCESS_CONTROL,
                format!("{canceller} is not authorized to cancel the token {ident}"),
            ));
        }
        let sequence = ident.sequence_number;
        if self
            .tokens
            .get(&sequence)
            .filter(|t| t.ident == ident)
            .is_none()
        {
            return Err(refuse(INVALID_TOKEN, format!("Token not found {ident}")));
        }
        self.tokens.remove(&sequence);
        self.token_changed(sequence);
        info!(canceller, sequence, "RM delegation token cancelled");
        Ok(())
    }

    /// The passage of wall time: rolls the master key when its interval
    /// has passed (the old key then expires a maximum lifetime later, so
    /// every token it signed stays renewable), drops expired keys, and
    /// drops tokens past their renew date once per scan interval.
    pub fn tick(&mut self, now_ms: i64) {
        if now_ms - self.rolled_ms >= self.conf.key_update_interval_ms as i64 {
            self.roll(now_ms);
        }
        if now_ms - self.scanned_ms >= self.conf.remove_scan_interval_ms as i64 {
            self.scanned_ms = now_ms;
            let expired: Vec<i32> = self
                .tokens
                .iter()
                .filter(|(_, t)| t.renew_date < now_ms)
                .map(|(s, _)| *s)
                .collect();
            for sequence in expired {
                self.tokens.remove(&sequence);
                self.token_changed(sequence);
                info!(sequence, "expired RM delegation token removed");
            }
        }
    }

    fn roll(&mut self, now_ms: i64) {
        let current = self.current_key;
        self.keys
            .retain(|id, k| *id == current || k.expiry_ms >= now_ms);
        if let Some(k) = self.keys.get_mut(&current) {
            k.expiry_ms = now_ms + self.conf.max_lifetime_ms as i64;
        }
        let id = self.keys.keys().next_back().copied().unwrap_or(0) + 1;
        let key = random_master_key(&mut self.rng, id);
        self.keys.insert(
            id,
            Key {
                key,
                expiry_ms: now_ms
                    + (self.conf.key_update_interval_ms + self.conf.max_lifetime_ms) as i64,
            },
        );
        self.current_key = id;
        self.rolled_ms = now_ms;
        self.keys_changed();
        info!(key_id = id, "RM delegation-token master key rolled");
    }

    /// What the store must write since the last call.
    pub fn take_store_ops(&mut self) -> Vec<StoreOp> {
        std::mem::take(&mut self.pending)
    }

    /// Changes whenever the live tokens do.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// The verifier's view of the live tokens.
    pub fn view(&self) -> Arc<DelegationView> {
        Arc::new(DelegationView {
            tokens: self
                .tokens
                .iter()
                .map(|(s, t)| (*s, (t.ident.clone(), t.password.clone(), t.renew_date)))
                .collect(),
        })
    }

    /// How many tokens are live.
    pub fn live(&self) -> usize {
        self.tokens.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: i64 = 86_400_000;
    const T0: i64 = 1_765_000_000_000;

    fn dt() -> DelegationTokens {
        DelegationTokens::new(DelegationConf::default(), T0, 7)
    }

    #[test]
    fn an_issued_token_verifies_until_its_renew_date_and_renewal_extends_it_to_the_max() {
        let mut dt = dt();
        let token = dt.issue("alice@EXAMPLE.COM", "yarn", None, T0).token;
        assert_eq!(token.kind, "RM_DELEGATION_TOKEN");
        let ident = RmDelegationTokenIdentifier::decode(&token.identifier).expect("ident");
        assert_eq!(
            (
                ident.sequence_number,
                ident.max_date,
                ident.real_user.as_str()
            ),
            (1, T0 + 7 * DAY, "")
        );
        let view = dt.view();
        let ok = view.check(&token.identifier, T0 + DAY).expect("live");
        assert_eq!(ok.password, token.password);
        assert_eq!(ok.owner, "alice@EXAMPLE.COM");
        let late = view
            .check(&token.identifier, T0 + DAY + 1)
            .expect_err("expired");
        assert!(late.contains("is expired, current time: "), "{late}");

        // Renewed a day later: valid for another day, never past max.
        let until = dt
            .renew(&token.identifier, &token.password, "yarn", T0 + DAY)
            .expect("renew");
        assert_eq!(until, T0 + 2 * DAY);
        let last = dt
            .renew(&token.identifier, &token.password, "yarn", T0 + 6 * DAY + 5)
            .expect("renew");
        assert_eq!(last, T0 + 7 * DAY);
        let err = dt
            .renew(&token.identifier, &token.password, "yarn", T0 + 7 * DAY + 1)
            .expect_err("past max");
        assert_eq!(err.class, refusal_class::INVALID_TOKEN);
        assert!(err.message.starts_with("yarn tried to renew an expired token (owner=alice@EXAMPLE.COM, renewer=yarn, realUser=, issueDate="), "{}", err.message);
    }

    #[test]
    fn only_the_renewer_renews_with_the_right_password_and_only_owner_or_renewer_cancels() {
        let mut dt = dt();
        let token = dt.issue("alice@EXAMPLE.COM", "yarn", None, T0).token;
        let err = dt
            .renew(&token.identifier, &token.password, "bob", T0)
            .expect_err("not the renewer");
        assert_eq!(err.class, refusal_class::ACCESS_CONTROL);
        assert!(
            err.message.contains("with non-matching renewer yarn"),
            "{}",
            err.message
        );
        let err = dt
            .renew(&token.identifier, b"forged", "yarn", T0)
            .expect_err("wrong password");
        assert!(
            err.message.contains("with wrong password"),
            "{}",
            err.message
        );
        let nobody = dt.issue("alice@EXAMPLE.COM", "", None, T0).token;
        let err = dt
            .renew(&nobody.identifier, &nobody.password, "alice", T0)
            .expect_err("no renewer");
        assert!(
            err.message.ends_with("without a renewer"),
            "{}",
            err.message
        );

        let err = dt
            .cancel(&token.identifier, "bob@EXAMPLE.COM", "bob")
            .expect_err("bob may not cancel");
        assert!(
            err.message.starts_with(
                "bob@EXAMPLE.COM is not authorized to cancel the token (owner=alice@EXAMPLE.COM"
            ),
            "{}",
            err.message
        );
        // The renewer cancels by its short name; then the token is gone.
        dt.cancel(&token.identifier, "yarn/rm@EXAMPLE.COM", "yarn")
            .expect("the renewer cancels");
        let err = dt
            .cancel(&token.identifier, "alice@EXAMPLE.COM", "alice")
            .expect_err("gone");
        assert!(
            err.message.starts_with("Token not found ("),
            "{}",
            err.message
        );
        let err = dt
            .renew(&token.identifier, &token.password, "yarn", T0)
            .expect_err("gone");
        assert!(
            err.message
                .starts_with("Renewal request for unknown token ("),
            "{}",
            err.message
        );
        assert!(dt.view().check(&token.identifier, T0).is_err());
        // The owner cancels its own.
        dt.cancel(&nobody.identifier, "alice@EXAMPLE.COM", "alice")
            .expect("owner");
        assert_eq!(dt.live(), 0);
    }

    #[test]
    fn a_forged_identifier_is_unknown_even_with_a_live_sequence_number() {
        let mut dt = dt();
        let token = dt.issue("alice@EXAMPLE.COM", "yarn", None, T0).token;
        let mut forged = RmDelegationTokenIdentifier::decode(&token.identifier).expect("ident");
        forged.owner = "root@EXAMPLE.COM".into();
        let err = dt.view().check(&forged.encode(), T0).expect_err("forged");
        assert!(err.contains("can't be found in cache"), "{err}");
    }

    #[test]
    fn keys_roll_and_old_tokens_stay_renewable_until_their_max_date() {
        let mut dt = dt();
        let token = dt.issue("alice@EXAMPLE.COM", "yarn", None, T0).token;
        for day in 1..=6 {
            dt.tick(T0 + day * DAY);
            dt.renew(&token.identifier, &token.password, "yarn", T0 + day * DAY)
                .expect("renewable under an old key");
        }
        assert!(dt.current_key > 1);
        assert!(dt.keys.contains_key(&1), "the key of a live token is kept");
        // Long after: the old key and the token are gone.
        dt.tick(T0 + 30 * DAY);
        dt.tick(T0 + 40 * DAY);
        assert!(!dt.keys.contains_key(&1));
        assert_eq!(dt.live(), 0);
    }

    #[test]
    fn what_the_store_kept_gives_the_same_tokens_back() {
        let mut dt = dt();
        dt.record();
        let token = dt
            .issue("alice@EXAMPLE.COM", "yarn", Some("oozie"), T0)
            .token;
        let kept = dt.issue("bob@EXAMPLE.COM", "yarn", None, T0).token;
        dt.cancel(&kept.identifier, "bob@EXAMPLE.COM", "bob")
            .expect("cancel");
        let mut keys = None;
        let mut tokens = BTreeMap::new();
        for op in dt.take_store_ops() {
            match op {
                StoreOp::PutDelegationKeys(k) => keys = Some(k),
                StoreOp::PutDelegationToken(t) => {
                    tokens.insert(t.sequence, t);
                }
                StoreOp::RemoveDelegationToken(s) => {
                    tokens.remove(&s);
                }
                other => panic!("unexpected {other:?}"),
            }
        }
        let tokens: Vec<_> = tokens.into_values().collect();
        let (mut back, dropped) = DelegationTokens::from_stored(
            DelegationConf::default(),
            &keys.expect("keys"),
            &tokens,
            T0 + 5,
            9,
        )
        .expect("recover");
        assert!(dropped.is_empty());
        let p = back.view().check(&token.identifier, T0 + 5).expect("kept");
        assert_eq!(p.real_user.as_deref(), Some("oozie"));
        assert!(back.view().check(&kept.identifier, T0 + 5).is_err());
        // The sequence continues.
        let next = back.issue("carol@EXAMPLE.COM", "", None, T0 + 6).token;
        let ident = RmDelegationTokenIdentifier::decode(&next.identifier).expect("ident");
        assert_eq!(ident.sequence_number, 3);
    }

    #[test]
    fn hadoops_time_format() {
        assert_eq!(format_time(0), "1970-01-01 00:00:00,000+0000");
        assert_eq!(
            format_time(1_765_000_000_123),
            "2025-12-06 05:46:40,123+0000"
        );
    }
}
