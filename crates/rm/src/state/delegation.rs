//! RM delegation tokens: issued, renewed and cancelled through the state
//! (so the store keeps them and a failover gives them back), with the
//! secret manager in [`crate::model::delegation`].

use super::RmState;
use crate::model::delegation::{DelegationTokens, DelegationView, IssuedToken};
use crate::model::refusal::Refusal;
use crate::state::command::{CancelDelegationToken, GetDelegationToken, RenewDelegationToken};
use crate::time::Now;

impl RmState {
    pub(super) fn get_delegation_token(&mut self, now: Now, c: GetDelegationToken) -> IssuedToken {
        self.delegation.issue(
            &c.owner,
            &c.renewer,
            c.real_user.as_deref(),
            now.wall_ms as i64,
        )
    }

    pub(super) fn renew_delegation_token(
        &mut self,
        now: Now,
        c: RenewDelegationToken,
    ) -> Result<i64, Refusal> {
        self.delegation
            .renew(
                &c.token.identifier,
                &c.token.password,
                &c.renewer,
                now.wall_ms as i64,
            )
            .map_err(Refusal::DelegationToken)
    }

    pub(super) fn cancel_delegation_token(
        &mut self,
        c: CancelDelegationToken,
    ) -> Result<(), Refusal> {
        self.delegation
            .cancel(&c.token.identifier, &c.canceller, &c.short)
            .map_err(Refusal::DelegationToken)
    }

    /// The live delegation tokens as the client port's verifier sees them,
    /// and a number that moves whenever they change.
    pub fn delegation_view(&self) -> std::sync::Arc<DelegationView> {
        self.delegation.view()
    }

    pub fn delegation_version(&self) -> u64 {
        self.delegation.version()
    }

    /// Replaces the delegation-token manager (at build: configured, or as
    /// the store kept it).
    pub(crate) fn set_delegation(&mut self, delegation: DelegationTokens) {
        self.delegation = delegation;
    }
}
