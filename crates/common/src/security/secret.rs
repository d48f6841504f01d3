//! Master keys and token passwords.
//!
//! A token's password is `HmacSHA1(master key, identifier bytes)`, as Hadoop's
//! `SecretManager` computes it. The identifier names the key by id, so a verifier
//! recomputes the password from the key it holds under that id. Keys roll: when a new
//! key becomes active the old one stays valid as the previous key, so tokens issued
//! just before the roll keep working; anything older is refused.
//!
//! This module has no clock and no random source: callers supply key bytes and ids
//! (Hadoop starts key ids at a random int and counts up; see
//! [`SecretManager::next_key_id`]). Keys travel to NodeManagers as `MasterKeyProto`, so
//! HmacSHA1 is kept for compatibility with Hadoop NodeManagers.

use std::fmt;

use hadoop_protos::yarn::MasterKeyProto;
use hmac::{Hmac, Mac};
use sha1::Sha1;
use subtle::ConstantTimeEq;

type HmacSha1 = Hmac<Sha1>;

/// Length of the key bytes Spindle generates. Hadoop's default `KeyGenerator` makes
/// 8-byte keys; HMAC accepts any length and 20 bytes matches SHA-1's output size.
pub const DEFAULT_KEY_BYTES: usize = 20;

/// A master key: an id (carried inside every token identifier) and secret bytes.
#[derive(Clone, PartialEq, Eq)]
pub struct MasterKey {
    pub key_id: i32,
    pub bytes: Vec<u8>,
}

impl fmt::Debug for MasterKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MasterKey")
            .field("key_id", &self.key_id)
            .field(
                "bytes",
                &format_args!("<{} bytes redacted>", self.bytes.len()),
            )
            .finish()
    }
}

impl MasterKey {
    pub fn new(key_id: i32, bytes: Vec<u8>) -> MasterKey {
        MasterKey { key_id, bytes }
    }

    /// The key as sent to NodeManagers in registration and heartbeat responses.
    pub fn to_proto(&self) -> MasterKeyProto {
        MasterKeyProto {
            key_id: Some(self.key_id),
            bytes: Some(self.bytes.clone()),
        }
    }

    /// A key received from the RM. Both fields are required and the key must not be
    /// empty.
    pub fn from_proto(p: &MasterKeyProto) -> Result<MasterKey, SecretError> {
        let key_id = p
            .key_id
            .ok_or_else(|| SecretError::BadKey("master key without a key id".into()))?;
        let bytes = p.bytes.clone().unwrap_or_default();
        if bytes.is_empty() {
            return Err(SecretError::BadKey(format!(
                "master key {key_id} has no key bytes"
            )));
        }
        Ok(MasterKey { key_id, bytes })
    }

    /// The password of a token with `identifier` under this key.
    pub fn password(&self, identifier: &[u8]) -> Vec<u8> {
        password(identifier, self)
    }
}

/// `HmacSHA1(key.bytes, identifier)`: a token's password.
pub fn password(identifier: &[u8], key: &MasterKey) -> Vec<u8> {
    // HMAC accepts keys of any length, so this cannot fail.
    let mut mac = match HmacSha1::new_from_slice(&key.bytes) {
        Ok(m) => m,
        Err(e) => unreachable!("HMAC-SHA1 accepts any key length: {e}"),
    };
    mac.update(identifier);
    mac.finalize().into_bytes().to_vec()
}

/// Compares two passwords in time independent of where they differ.
pub fn passwords_equal(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && bool::from(a.ct_eq(b))
}

/// Why a key or token was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SecretError {
    #[error(
        "master key {key_id} is expired or unknown (current key {current}{})",
        previous.map(|p| format!(", previous key {p}")).unwrap_or_default()
    )]
    UnknownKey {
        key_id: i32,
        current: i32,
        previous: Option<i32>,
    },
    #[error("invalid token password for key {key_id}")]
    BadPassword { key_id: i32 },
    #[error("master key {key_id} already exists with different bytes")]
    KeyIdConflict { key_id: i32 },
    #[error("{0}")]
    BadKey(String),
}

/// The active master key and the one before it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretManager {
    current: MasterKey,
    previous: Option<MasterKey>,
}

impl SecretManager {
    /// A manager whose only key is `initial`.
    pub fn new(initial: MasterKey) -> SecretManager {
        SecretManager {
            current: initial,
            previous: None,
        }
    }

    /// A manager restored with both keys (e.g. a NodeManager re-registering).
    pub fn with_keys(
        current: MasterKey,
        previous: Option<MasterKey>,
    ) -> Result<SecretManager, SecretError> {
        if let Some(p) = &previous {
            if p.key_id == current.key_id {
                return Err(SecretError::KeyIdConflict { key_id: p.key_id });
            }
        }
        Ok(SecretManager { current, previous })
    }

    pub fn current_key(&self) -> &MasterKey {
        &self.current
    }

    pub fn previous_key(&self) -> Option<&MasterKey> {
        self.previous.as_ref()
    }

    /// The id the next key should get: Hadoop counts key ids up from a random start.
    pub fn next_key_id(&self) -> i32 {
        self.current.key_id.wrapping_add(1)
    }

    /// Makes `next` the active key; the active key becomes the previous one and the old
    /// previous key is forgotten (tokens made with it are refused from now on).
    ///
    /// Rolling to the key that is already current is a no-op returning `Ok(false)`
    /// (NodeManagers see the same key in many heartbeats). A different key under the
    /// current or previous id is refused: ids must identify keys.
    pub fn roll(&mut self, next: MasterKey) -> Result<bool, SecretError> {
        if next.key_id == self.current.key_id {
            return if next.bytes == self.current.bytes {
                Ok(false)
            } else {
                Err(SecretError::KeyIdConflict {
                    key_id: next.key_id,
                })
            };
        }
        if self
            .previous
            .as_ref()
            .is_some_and(|p| p.key_id == next.key_id)
        {
            return Err(SecretError::KeyIdConflict {
                key_id: next.key_id,
            });
        }
        let old = std::mem::replace(&mut self.current, next);
        self.previous = Some(old);
        Ok(true)
    }

    /// The current or previous key with `key_id`.
    pub fn key(&self, key_id: i32) -> Result<&MasterKey, SecretError> {
        if self.current.key_id == key_id {
            return Ok(&self.current);
        }
        match &self.previous {
            Some(p) if p.key_id == key_id => Ok(p),
            _ => Err(SecretError::UnknownKey {
                key_id,
                current: self.current.key_id,
                previous: self.previous.as_ref().map(|p| p.key_id),
            }),
        }
    }

    /// The password of a new token with `identifier` under the current key. The
    /// identifier must name [`SecretManager::current_key`]'s id.
    pub fn create_password(&self, identifier: &[u8]) -> Vec<u8> {
        password(identifier, &self.current)
    }

    /// The password a token with `identifier` made under key `key_id` must have.
    /// Refuses keys that are neither current nor previous.
    pub fn retrieve_password(
        &self,
        identifier: &[u8],
        key_id: i32,
    ) -> Result<Vec<u8>, SecretError> {
        Ok(password(identifier, self.key(key_id)?))
    }

    /// Checks a presented token password in constant time.
    pub fn verify_password(
        &self,
        identifier: &[u8],
        key_id: i32,
        presented: &[u8],
    ) -> Result<(), SecretError> {
        let expected = self.retrieve_password(identifier, key_id)?;
        if passwords_equal(&expected, presented) {
            Ok(())
        } else {
            Err(SecretError::BadPassword { key_id })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_sha1_vectors() {
        // RFC 2202 test case 2 and RFC 2104's "Jefe" example.
        let key = MasterKey::new(1, b"Jefe".to_vec());
        let mac = password(b"what do ya want for nothing?", &key);
        assert_eq!(
            mac,
            [
                0xef, 0xfc, 0xdf, 0x6a, 0xe5, 0xeb, 0x2f, 0xa2, 0xd2, 0x74, 0x16, 0xd5, 0xf1, 0x84,
                0xdf, 0x9c, 0x25, 0x9a, 0x7c, 0x79
            ]
        );
        // RFC 2202 test case 1: 20 bytes of 0x0b, "Hi There".
        let key = MasterKey::new(1, vec![0x0b; 20]);
        assert_eq!(
            key.password(b"Hi There"),
            [
                0xb6, 0x17, 0x31, 0x86, 0x55, 0x05, 0x72, 0x64, 0xe2, 0x8b, 0xc0, 0xb6, 0xfb, 0x37,
                0x8c, 0x8e, 0xf1, 0x46, 0xbe, 0x00
            ]
        );
    }

    #[test]
    fn roll_keeps_one_previous_key() {
        let k1 = MasterKey::new(100, vec![1; DEFAULT_KEY_BYTES]);
        let k2 = MasterKey::new(101, vec![2; DEFAULT_KEY_BYTES]);
        let k3 = MasterKey::new(102, vec![3; DEFAULT_KEY_BYTES]);
        let mut m = SecretManager::new(k1.clone());
        let id = b"identifier";
        let p1 = m.create_password(id);
        assert_eq!(m.retrieve_password(id, 100), Ok(p1.clone()));
        assert_eq!(m.next_key_id(), 101);

        assert_eq!(m.roll(k2.clone()), Ok(true));
        assert_eq!(m.current_key(), &k2);
        assert_eq!(m.previous_key(), Some(&k1));
        assert_eq!(
            m.retrieve_password(id, 100),
            Ok(p1.clone()),
            "previous still valid"
        );
        let p2 = m.create_password(id);
        assert_ne!(p1, p2);
        assert!(m.verify_password(id, 101, &p2).is_ok());

        assert_eq!(m.roll(k3), Ok(true));
        let err = m.retrieve_password(id, 100).expect_err("key 100 expired");
        assert_eq!(
            err.to_string(),
            "master key 100 is expired or unknown (current key 102, previous key 101)"
        );
        assert!(m.verify_password(id, 101, &p2).is_ok());
        assert_eq!(
            m.verify_password(id, 101, &p1),
            Err(SecretError::BadPassword { key_id: 101 })
        );
        assert!(m.verify_password(id, 101, &p2[..10]).is_err());
    }

    #[test]
    fn rolling_to_the_same_key_is_idempotent_and_conflicts_are_refused() {
        let k1 = MasterKey::new(-5, vec![1; 8]);
        let mut m = SecretManager::new(k1.clone());
        assert_eq!(m.roll(k1.clone()), Ok(false));
        assert_eq!(m.previous_key(), None);
        assert_eq!(
            m.roll(MasterKey::new(-5, vec![9; 8])),
            Err(SecretError::KeyIdConflict { key_id: -5 })
        );
        assert_eq!(m.roll(MasterKey::new(-4, vec![2; 8])), Ok(true));
        assert_eq!(
            m.roll(MasterKey::new(-5, vec![3; 8])),
            Err(SecretError::KeyIdConflict { key_id: -5 })
        );
        assert!(SecretManager::with_keys(k1.clone(), Some(k1)).is_err());
        // Key ids wrap like Java ints.
        assert_eq!(
            SecretManager::new(MasterKey::new(i32::MAX, vec![1])).next_key_id(),
            i32::MIN
        );
    }

    #[test]
    fn master_key_proto_round_trip() {
        let k = MasterKey::new(7, vec![1, 2, 3]);
        assert_eq!(MasterKey::from_proto(&k.to_proto()), Ok(k.clone()));
        assert!(MasterKey::from_proto(&MasterKeyProto {
            key_id: Some(1),
            bytes: None
        })
        .is_err());
        assert!(MasterKey::from_proto(&MasterKeyProto {
            key_id: None,
            bytes: Some(vec![1])
        })
        .is_err());
        assert!(!format!("{k:?}").contains("[1, 2, 3]"));
    }

    #[test]
    fn password_comparison() {
        assert!(passwords_equal(b"abc", b"abc"));
        assert!(!passwords_equal(b"abc", b"abd"));
        assert!(!passwords_equal(b"abc", b"abcd"));
        assert!(passwords_equal(b"", b""));
    }
}
