//! The client port's RM delegation-token check (Hadoop's TOKEN method with
//! `RM_DELEGATION_TOKEN`): a live token's password, recomputed from the
//! view the owner task publishes ([`super::amrm_verifier::KeySlot`]); the
//! connection acts as the token's owner (its short name), impersonated by
//! its real user when it has one. A standby refuses with a
//! StandbyException, so clients fail over.

use std::sync::Arc;

use spindle_common::security::auth_to_local::AuthToLocal;
use spindle_common::security::kind;
use spindle_common::time::wall_ms;
use spindle_ipc::sasl::{TokenVerifier, VerifiedToken};

use super::amrm_verifier::KeySlot;

pub struct DelegationVerifier {
    pub slot: KeySlot,
    /// `hadoop.security.auth_to_local`: the owner's short name.
    pub names: Arc<AuthToLocal>,
}

impl TokenVerifier for DelegationVerifier {
    fn kind(&self) -> &str {
        kind::RM_DELEGATION
    }

    fn standby(&self) -> Option<String> {
        self.slot
            .delegation()
            .is_none()
            .then(|| self.slot.standby_message().to_string())
    }

    fn verify(&self, identifier: &[u8]) -> Result<VerifiedToken, String> {
        let view = self
            .slot
            .delegation()
            .ok_or_else(|| self.slot.standby_message().to_string())?;
        let presented = view.check(identifier, wall_ms())?;
        let short = |name: &str| {
            self.names
                .short_name(name)
                .map_err(|e| format!("token owner {name}: {e}"))
        };
        Ok(VerifiedToken {
            password: presented.password,
            user: short(&presented.owner)?,
            real_user: presented.real_user.as_deref().map(short).transpose()?,
        })
    }
}
