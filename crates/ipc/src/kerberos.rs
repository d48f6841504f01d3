//! Hadoop's KERBEROS authentication method: SASL GSSAPI (RFC 4752) over the
//! MIT Kerberos library, for both sides of a connection.
//!
//! The exchange, as Java's GSSAPI SASL mechanism runs it under Hadoop's
//! `SaslRpcServer` and `SaslRpcClient`:
//!
//! 1. the server's NEGOTIATE announces `KERBEROS`/`GSSAPI` with its
//!    principal split into protocol and server id (`rm/host@R` gives `rm`
//!    and `host`);
//! 2. the client's INITIATE carries its first context token (AP-REQ); the
//!    server answers each token with a CHALLENGE carrying its own (AP-REP)
//!    until the context is established on both sides, and the client then
//!    answers with an empty RESPONSE;
//! 3. the server sends, wrapped, the security layers it offers and its
//!    largest buffer (4 bytes); the client answers, wrapped, with the layer it
//!    chose, its buffer size and optionally an authorization id;
//! 4. the server sends SUCCESS, and the connection belongs to the client's
//!    principal, mapped to a short user name.
//!
//! Only the "authentication" layer (no wrapping of later messages) is offered:
//! `hadoop.rpc.protection` other than `authentication` is refused at start
//! (`spindle_common::conf::refuse`) until the server wraps its frames.

use std::path::PathBuf;
use std::sync::Arc;

use hdfs_native::gss::{GssAcceptor, GssInitiator};
use spindle_common::conf::{keys, Configuration};
use spindle_common::security::auth_to_local::{self, AuthToLocal};

/// The SaslAuth method and mechanism names Hadoop uses for Kerberos.
pub const METHOD_KERBEROS: &str = "KERBEROS";
pub const MECHANISM_GSSAPI: &str = "GSSAPI";

/// RFC 4752's security layers (the bits of the offer's first byte).
const LAYER_NONE: u8 = 1;
const LAYER_INTEGRITY: u8 = 2;
const LAYER_PRIVACY: u8 = 4;
/// The largest wrapped message the server says it takes (Java's default).
const MAX_BUFFER: u32 = 65_536;

/// A server's Kerberos identity: its principal, `_HOST` already replaced
/// (`rm/rm1.example.com@EXAMPLE.COM`), the keytab with its keys, and the
/// `hadoop.security.auth_to_local` rules that name its clients.
#[derive(Debug, Clone)]
pub struct KerberosIdentity {
    pub principal: Principal,
    pub keytab: PathBuf,
    pub names: Arc<AuthToLocal>,
}

impl KerberosIdentity {
    /// An identity whose clients are named by Hadoop's `DEFAULT` rule alone,
    /// the default realm being the principal's.
    pub fn with_default_rule(principal: Principal, keytab: PathBuf) -> KerberosIdentity {
        let names = AuthToLocal::parse(
            "DEFAULT",
            &principal.realm,
            auth_to_local::Mechanism::Hadoop,
        )
        .expect("DEFAULT parses");
        KerberosIdentity {
            principal,
            keytab,
            names: Arc::new(names),
        }
    }
}

impl KerberosIdentity {
    /// Whether the keytab can be read and holds a key for the principal: a
    /// daemon checks this at start, so a wrong keytab stops it with this
    /// message rather than failing each client later.
    pub fn check(&self) -> Result<(), String> {
        GssapiServer::new(self).map(|_| ())
    }
}

/// Whether `hadoop.security.authentication` asks for Kerberos; `simple`
/// (the default) or `kerberos`, and any other value is an error in Hadoop's
/// words (its `UserGroupInformation` takes these two only).
pub fn enabled(conf: &Configuration) -> Result<bool, String> {
    let value = conf
        .get_trimmed(keys::HADOOP_SECURITY_AUTHENTICATION)
        .unwrap_or_else(|| "simple".into());
    if value.eq_ignore_ascii_case("kerberos") {
        Ok(true)
    } else if value.eq_ignore_ascii_case("simple") {
        Ok(false)
    } else {
        Err(format!(
            "Invalid attribute value for {} of {value}",
            keys::HADOOP_SECURITY_AUTHENTICATION
        ))
    }
}

/// A daemon's own Kerberos identity when Kerberos is on (`None` under
/// simple): its principal from `principal_key` (which must be set), `_HOST`
/// replaced by `host`, and its keytab from `keytab_key` (Hadoop's default
/// `/etc/krb5.keytab`), checked now, so that a missing or wrong keytab stops
/// the daemon at start with the keys named.
pub fn daemon_identity(
    conf: &Configuration,
    principal_key: &str,
    keytab_key: &str,
    host: &str,
) -> Result<Option<KerberosIdentity>, String> {
    if !enabled(conf)? {
        return Ok(None);
    }
    let pattern = conf.get_trimmed(principal_key).ok_or_else(|| {
        format!(
            "{principal_key} is not set: with {}=kerberos this daemon needs its principal \
             (for example rm/_HOST@EXAMPLE.COM) and its keytab ({keytab_key})",
            keys::HADOOP_SECURITY_AUTHENTICATION
        )
    })?;
    let pattern = in_default_realm(&pattern, default_realm().as_deref());
    let principal =
        Principal::with_host(&pattern, host).map_err(|e| format!("{principal_key}: {e}"))?;
    let keytab = PathBuf::from(
        conf.get_trimmed(keytab_key)
            .unwrap_or_else(|| keys::DEFAULT_KEYTAB.to_string()),
    );
    if !keytab.is_file() {
        return Err(format!(
            "{keytab_key}: the keytab {} does not exist or is not a file",
            keytab.display()
        ));
    }
    let names = Arc::new(names_of(conf, &principal.realm)?);
    let identity = KerberosIdentity {
        principal,
        keytab,
        names,
    };
    identity
        .check()
        .map_err(|e| format!("{principal_key} and {keytab_key}: {e}"))?;
    Ok(Some(identity))
}

/// MIT's default realm (`default_realm` of `KRB5_CONFIG`, else
/// `/etc/krb5.conf`).
fn default_realm() -> Option<String> {
    auth_to_local::default_realm_from(std::env::var("KRB5_CONFIG").ok().as_deref())
}

/// A configured principal without a realm is in the default realm, as
/// Hadoop's Kerberos login takes it; with no default realm known it is left
/// as written (and refused, named, when parsed).
fn in_default_realm(principal: &str, default_realm: Option<&str>) -> String {
    match default_realm {
        Some(realm) if !principal.contains('@') => format!("{principal}@{realm}"),
        _ => principal.to_string(),
    }
}

/// `hadoop.security.auth_to_local` (default `DEFAULT`) under
/// `hadoop.security.auth_to_local.mechanism` (`hadoop` or `MIT`), `DEFAULT`
/// standing for the default realm of MIT's configuration (`KRB5_CONFIG`,
/// else `/etc/krb5.conf`), or `fallback_realm` when it names none.
pub fn names_of(conf: &Configuration, fallback_realm: &str) -> Result<AuthToLocal, String> {
    let mechanism = match conf
        .get_trimmed(keys::AUTH_TO_LOCAL_MECHANISM)
        .unwrap_or_else(|| "hadoop".into())
    {
        m if m.eq_ignore_ascii_case("hadoop") => auth_to_local::Mechanism::Hadoop,
        m if m.eq_ignore_ascii_case("mit") => auth_to_local::Mechanism::Mit,
        other => {
            return Err(format!(
                "{} = {other:?}: Hadoop takes hadoop or MIT",
                keys::AUTH_TO_LOCAL_MECHANISM
            ))
        }
    };
    let realm = default_realm().unwrap_or_else(|| fallback_realm.to_string());
    let rules = conf.get(keys::AUTH_TO_LOCAL).unwrap_or_default();
    AuthToLocal::parse(&rules, &realm, mechanism)
        .map_err(|e| format!("{}: {e}", keys::AUTH_TO_LOCAL))
}

/// How a client of the ResourceManager authenticates when Kerberos is on
/// (`None` under simple): with `login`, expecting the RM to be
/// `yarn.resourcemanager.principal` (which must be set, as Hadoop's client
/// needs it to know whom it talks to).
pub fn rm_client(
    conf: &Configuration,
    login: KerberosLogin,
) -> Result<Option<KerberosClient>, String> {
    if !enabled(conf)? {
        return Ok(None);
    }
    let server_principal = conf.get_trimmed(keys::RM_PRINCIPAL).ok_or_else(|| {
        format!(
            "{} is not set: with {}=kerberos a client needs the ResourceManager's principal",
            keys::RM_PRINCIPAL,
            keys::HADOOP_SECURITY_AUTHENTICATION
        )
    })?;
    let server_principal = in_default_realm(&server_principal, default_realm().as_deref());
    Principal::parse(&server_principal).map_err(|e| format!("{}: {e}", keys::RM_PRINCIPAL))?;
    Ok(Some(KerberosClient {
        login,
        server_principal,
    }))
}

/// A Kerberos principal, `primary[/instance]@REALM`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    pub primary: String,
    pub instance: Option<String>,
    pub realm: String,
}

impl Principal {
    /// Parses `primary[/instance]@REALM`; a principal without a realm, or with
    /// an empty part, is refused with a message naming it.
    pub fn parse(text: &str) -> Result<Principal, String> {
        let bad = || format!("'{text}' is not a Kerberos principal (primary[/instance]@REALM)");
        let (name, realm) = text.rsplit_once('@').ok_or_else(bad)?;
        let (primary, instance) = match name.split_once('/') {
            Some((p, i)) => (p, Some(i)),
            None => (name, None),
        };
        let part_ok =
            |s: &str| !s.is_empty() && !s.contains(['/', '@']) && !s.contains(char::is_whitespace);
        if !part_ok(primary) || !part_ok(realm) || instance.is_some_and(|i| !part_ok(i)) {
            return Err(bad());
        }
        Ok(Principal {
            primary: primary.to_string(),
            instance: instance.map(str::to_string),
            realm: realm.to_string(),
        })
    }

    /// Hadoop's `_HOST` substitution: `rm/_HOST@R` for the host `host`
    /// (lower-cased, as `SecurityUtil.getServerPrincipal` does).
    pub fn with_host(text: &str, host: &str) -> Result<Principal, String> {
        let mut p = Principal::parse(text)?;
        if p.instance.as_deref() == Some("_HOST") {
            p.instance = Some(host.to_ascii_lowercase());
        }
        Ok(p)
    }
}

impl std::fmt::Display for Principal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.instance {
            Some(i) => write!(f, "{}/{}@{}", self.primary, i, self.realm),
            None => write!(f, "{}@{}", self.primary, self.realm),
        }
    }
}

/// Where the server side of one connection's exchange stands.
enum ServerStage {
    /// Context tokens are being exchanged.
    Accepting,
    /// The context is established; the client's empty RESPONSE is awaited
    /// before the security-layer offer.
    Established,
    /// The offer went out; the client's wrapped choice is awaited.
    Offered,
    Done,
}

/// The server side of one connection's GSSAPI exchange.
pub struct GssapiServer {
    acceptor: GssAcceptor,
    stage: ServerStage,
}

/// What the server sends after a client's token.
#[derive(Debug, PartialEq, Eq)]
pub enum ServerReply {
    /// A CHALLENGE with this token.
    Challenge(Vec<u8>),
    /// SUCCESS: the client authenticated as this principal.
    Success(Principal),
}

impl std::fmt::Debug for GssapiServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let stage = match self.stage {
            ServerStage::Accepting => "accepting",
            ServerStage::Established => "established",
            ServerStage::Offered => "offered",
            ServerStage::Done => "done",
        };
        f.debug_struct("GssapiServer")
            .field("stage", &stage)
            .finish()
    }
}

/// `detail` (MIT's message) preceded by what it means for the operator,
/// for the failures a user meets: an expired ticket, clocks apart, a
/// principal the KDC does not know, a KDC that does not answer.
fn explain(detail: String) -> String {
    let hint = if detail.contains("Ticket expired") {
        "the Kerberos ticket has expired: run kinit again (or renew the keytab login)"
    } else if detail.contains("Clock skew too great") {
        "this host's clock and the KDC's (or the server's) differ by more than the allowed \
         skew: synchronize them (NTP)"
    } else if detail.contains("not found in Kerberos database") {
        "the KDC does not know a principal involved (the client's or the server's)"
    } else if detail.contains("Cannot contact any KDC") {
        "no KDC of the realm answers"
    } else {
        return detail;
    };
    format!("{hint} ({detail})")
}

/// Accepts an HTTP client's SPNEGO token (`Authorization: Negotiate`) with
/// `identity`'s keys, in one step as Kerberos through SPNEGO takes: the
/// client's principal and the token to send back, if any. Blocks in MIT's
/// library: call it where blocking is allowed.
pub fn accept_spnego(
    identity: &KerberosIdentity,
    token: &[u8],
) -> Result<(String, Option<Vec<u8>>), String> {
    let keytab = identity.keytab.to_string_lossy();
    let principal = identity.principal.to_string();
    let mut acceptor = GssAcceptor::new(&keytab, Some(&principal)).map_err(|e| {
        format!("cannot accept Kerberos as {principal} with the keytab {keytab}: {e}")
    })?;
    let (out, complete) = acceptor
        .step(token)
        .map_err(|e| format!("the client's Negotiate token is refused: {e}"))?;
    if !complete {
        return Err("the Negotiate exchange needs more than one round, which is not served".into());
    }
    let peer = acceptor
        .peer()
        .map_err(|e| format!("the client's principal cannot be read: {e}"))?;
    Ok((peer, out))
}

/// The HTTP (SPNEGO) identity of a daemon's web server when
/// `hadoop.http.authentication.type=kerberos` (`None` otherwise): the
/// daemon's own keys (`principal_key`, `keytab_key`: YARN's
/// `….webapp.spnego-principal` and `-keytab-file`) when set, else
/// `hadoop.http.authentication.kerberos.principal` and `.keytab`; `_HOST`
/// is `host`. Short names come from
/// `hadoop.http.authentication.kerberos.name.rules`, else
/// `hadoop.security.auth_to_local`.
pub fn http_identity(
    conf: &Configuration,
    principal_key: &str,
    keytab_key: &str,
    host: &str,
) -> Result<Option<KerberosIdentity>, String> {
    const TYPE: &str = "hadoop.http.authentication.type";
    const PRINCIPAL: &str = "hadoop.http.authentication.kerberos.principal";
    const KEYTAB: &str = "hadoop.http.authentication.kerberos.keytab";
    const NAME_RULES: &str = "hadoop.http.authentication.kerberos.name.rules";
    let kind = conf.get_trimmed(TYPE).unwrap_or_else(|| "simple".into());
    if kind.eq_ignore_ascii_case("simple") {
        return Ok(None);
    }
    if !kind.eq_ignore_ascii_case("kerberos") {
        return Err(format!(
            "{TYPE} = {kind:?}: Spindle's web serves simple and kerberos (SPNEGO); custom \
             authentication handlers are not built, and the web would take the caller's \
             ?user.name= at its word"
        ));
    }
    let pick = |own: &str, shared: &str| {
        conf.get_trimmed(own)
            .filter(|v| !v.is_empty())
            .map(|v| (own.to_string(), v))
            .or_else(|| {
                conf.get_trimmed(shared)
                    .filter(|v| !v.is_empty())
                    .map(|v| (shared.to_string(), v))
            })
    };
    let (principal_from, principal) = pick(principal_key, PRINCIPAL)
        .ok_or_else(|| format!("{TYPE}=kerberos needs {principal_key} or {PRINCIPAL}"))?;
    let (keytab_from, keytab) = pick(keytab_key, KEYTAB)
        .ok_or_else(|| format!("{TYPE}=kerberos needs {keytab_key} or {KEYTAB}"))?;
    // Without a realm, MIT's default one, as for the daemons' principals.
    let principal = in_default_realm(&principal, default_realm().as_deref());
    let principal =
        Principal::with_host(&principal, host).map_err(|e| format!("{principal_from}: {e}"))?;
    let names = match conf.get(NAME_RULES).filter(|r| !r.trim().is_empty()) {
        Some(rules) => {
            let mut with_rules = conf.clone();
            with_rules.set(keys::AUTH_TO_LOCAL, rules);
            names_of(&with_rules, &principal.realm)?
        }
        None => names_of(conf, &principal.realm)?,
    };
    let identity = KerberosIdentity {
        principal,
        keytab: PathBuf::from(keytab),
        names: Arc::new(names),
    };
    identity
        .check()
        .map_err(|e| format!("{principal_from} and {keytab_from}: {e}"))?;
    Ok(Some(identity))
}

impl GssapiServer {
    /// A new exchange with `identity`'s keys; a keytab that cannot be read or
    /// holds no key for the principal is named in the error.
    pub fn new(identity: &KerberosIdentity) -> Result<GssapiServer, String> {
        let keytab = identity.keytab.to_string_lossy();
        let principal = identity.principal.to_string();
        let acceptor = GssAcceptor::new(&keytab, Some(&principal)).map_err(|e| {
            format!("cannot accept Kerberos as {principal} with the keytab {keytab}: {e}")
        })?;
        Ok(GssapiServer {
            acceptor,
            stage: ServerStage::Accepting,
        })
    }

    /// Feeds the client's token (from INITIATE or RESPONSE).
    pub fn step(&mut self, token: &[u8]) -> Result<ServerReply, String> {
        match self.stage {
            ServerStage::Accepting => {
                let (out, complete) = self
                    .acceptor
                    .step(token)
                    .map_err(|e| format!("GSSAPI: the client's Kerberos token is refused: {e}"))?;
                if complete {
                    self.stage = ServerStage::Established;
                }
                Ok(ServerReply::Challenge(out.unwrap_or_default()))
            }
            ServerStage::Established => {
                if !token.is_empty() {
                    return Err(
                        "GSSAPI: the final handshake step should contain no response data".into(),
                    );
                }
                let mut offer = MAX_BUFFER.to_be_bytes();
                offer[0] = LAYER_NONE;
                let wrapped = self
                    .acceptor
                    .wrap(false, &offer)
                    .map_err(|e| format!("GSSAPI: cannot wrap the security layer offer: {e}"))?;
                self.stage = ServerStage::Offered;
                Ok(ServerReply::Challenge(wrapped))
            }
            ServerStage::Offered => {
                let (choice, _) = self
                    .acceptor
                    .unwrap(token)
                    .map_err(|e| format!("GSSAPI: the client's security layer choice: {e}"))?;
                if choice.len() < 4 {
                    return Err(format!(
                        "GSSAPI: the client's security layer choice has {} bytes, not 4",
                        choice.len()
                    ));
                }
                if choice[0] & LAYER_NONE == 0 || choice[0] & (LAYER_INTEGRITY | LAYER_PRIVACY) != 0
                {
                    return Err(format!(
                        "GSSAPI: the client selected an unsupported protection (layer mask {:#x}); \
                         this server offers authentication only",
                        choice[0]
                    ));
                }
                let peer = self
                    .acceptor
                    .peer()
                    .map_err(|e| format!("GSSAPI: the client's principal: {e}"))?;
                let authzid = &choice[4..];
                if !authzid.is_empty() && authzid != peer.as_bytes() {
                    return Err(format!(
                        "GSSAPI: {peer} asked to be authorized as '{}'",
                        String::from_utf8_lossy(authzid)
                    ));
                }
                self.stage = ServerStage::Done;
                Ok(ServerReply::Success(Principal::parse(&peer)?))
            }
            ServerStage::Done => Err("GSSAPI: the exchange is already complete".into()),
        }
    }
}

/// A client's Kerberos credentials.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KerberosLogin {
    /// `principal`'s keys from `keytab` (a daemon: the NM's
    /// `yarn.nodemanager.principal` and `.keytab`).
    Keytab { principal: String, keytab: PathBuf },
    /// The ticket cache of the user (`KRB5CCNAME`, or MIT's default).
    TicketCache,
}

/// A client's Kerberos login and the principal it expects the server to
/// have: Hadoop's `yarn.resourcemanager.principal`, whose `_HOST` stands for
/// the host dialled (`rm/_HOST@R` at `rm1:8032` expects `rm/rm1@R`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KerberosClient {
    pub login: KerberosLogin,
    pub server_principal: String,
}

/// The client side of one connection's GSSAPI exchange.
pub struct GssapiClient {
    initiator: GssInitiator,
    established: bool,
    done: bool,
    principal: Option<String>,
}

impl GssapiClient {
    /// Starts an exchange with the service `protocol/server_id` (from the
    /// server's NEGOTIATE); returns the client and the INITIATE's token.
    pub fn start(
        login: &KerberosLogin,
        protocol: &str,
        server_id: &str,
    ) -> Result<(GssapiClient, Vec<u8>), String> {
        let initiator = match login {
            KerberosLogin::Keytab { principal, keytab } => GssInitiator::new(
                protocol,
                server_id,
                Some(principal),
                Some(&keytab.to_string_lossy()),
                None,
            ),
            KerberosLogin::TicketCache => GssInitiator::new(protocol, server_id, None, None, None),
        }
        .map_err(|e| explain(format!("GSSAPI: no Kerberos credentials ({login:?}): {e}")))?;
        let mut client = GssapiClient {
            initiator,
            established: false,
            done: false,
            principal: None,
        };
        let (token, complete) = client.initiator.step(None).map_err(|e| {
            explain(format!(
                "GSSAPI: cannot start a context with {protocol}/{server_id}: {e}"
            ))
        })?;
        client.established = complete;
        if let KerberosLogin::Keytab { principal, .. } = login {
            client.principal = Some(principal.clone());
        }
        Ok((client, token.unwrap_or_default()))
    }

    /// The RESPONSE to a server's CHALLENGE.
    pub fn respond(&mut self, challenge: &[u8]) -> Result<Vec<u8>, String> {
        if self.done {
            return Err("GSSAPI: a challenge after the exchange was complete".into());
        }
        if !self.established {
            let (out, complete) = self
                .initiator
                .step(Some(challenge))
                .map_err(|e| format!("GSSAPI: the server's token is refused: {e}"))?;
            self.established = complete;
            return Ok(out.unwrap_or_default());
        }
        let (offer, _) = self
            .initiator
            .unwrap(challenge)
            .map_err(|e| format!("GSSAPI: the server's security layer offer: {e}"))?;
        if offer.len() != 4 {
            return Err(format!(
                "GSSAPI: the server's security layer offer has {} bytes, not 4",
                offer.len()
            ));
        }
        if offer[0] & LAYER_NONE == 0 {
            return Err(format!(
                "GSSAPI: the server requires a protection this client does not speak \
                 (layer mask {:#x}); only authentication is supported",
                offer[0]
            ));
        }
        let mut choice = MAX_BUFFER.to_be_bytes();
        choice[0] = LAYER_NONE;
        self.done = true;
        if self.principal.is_none() {
            // A ticket cache's principal, read off the established context.
            self.principal = self.initiator.principal().ok();
        }
        self.initiator
            .wrap(false, &choice)
            .map_err(|e| format!("GSSAPI: cannot wrap the security layer choice: {e}"))
    }

    /// Whether the exchange reached its end on this side (SUCCESS may come).
    pub fn is_complete(&self) -> bool {
        self.done
    }

    /// The principal this side logged in as, when the library can say.
    pub fn principal(&self) -> Option<String> {
        self.principal.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn principals_parse_and_print_back() {
        let p = Principal::parse("rm/host.example.com@EXAMPLE.COM").expect("parse");
        assert_eq!(p.primary, "rm");
        assert_eq!(p.instance.as_deref(), Some("host.example.com"));
        assert_eq!(p.realm, "EXAMPLE.COM");
        assert_eq!(p.to_string(), "rm/host.example.com@EXAMPLE.COM");
        let u = Principal::parse("alice@EXAMPLE.COM").expect("parse");
        assert_eq!(u.instance, None);
        assert_eq!(u.to_string(), "alice@EXAMPLE.COM");
    }

    #[test]
    fn malformed_principals_are_named() {
        for bad in ["rm/host", "@R", "rm/@R", "a/b/c@R", "a@", "a b@R", ""] {
            let err = Principal::parse(bad).expect_err(bad);
            assert!(err.contains(&format!("'{bad}'")), "{err}");
        }
    }

    fn conf(pairs: &[(&str, &str)]) -> Configuration {
        let mut c = Configuration::with_defaults();
        for (k, v) in pairs {
            c.set(k, *v);
        }
        c
    }

    #[test]
    fn only_simple_and_kerberos_are_methods() {
        assert_eq!(enabled(&conf(&[])), Ok(false));
        assert_eq!(
            enabled(&conf(&[(keys::HADOOP_SECURITY_AUTHENTICATION, "Kerberos")])),
            Ok(true)
        );
        assert_eq!(
            enabled(&conf(&[(keys::HADOOP_SECURITY_AUTHENTICATION, "token")])),
            Err("Invalid attribute value for hadoop.security.authentication of token".into())
        );
    }

    #[test]
    fn a_daemon_without_its_principal_or_keytab_is_told_which_key() {
        let krb = (keys::HADOOP_SECURITY_AUTHENTICATION, "kerberos");
        assert!(
            daemon_identity(&conf(&[]), keys::RM_PRINCIPAL, keys::RM_KEYTAB, "h")
                .expect("simple")
                .is_none()
        );
        let err = daemon_identity(&conf(&[krb]), keys::RM_PRINCIPAL, keys::RM_KEYTAB, "h")
            .expect_err("no principal");
        assert!(
            err.starts_with("yarn.resourcemanager.principal is not set"),
            "{err}"
        );
        let bad = conf(&[krb, (keys::RM_PRINCIPAL, "rm/_HOST@")]);
        let err = daemon_identity(&bad, keys::RM_PRINCIPAL, keys::RM_KEYTAB, "h")
            .expect_err("an empty realm");
        assert!(
            err.starts_with("yarn.resourcemanager.principal: 'rm/_HOST@'"),
            "{err}"
        );
        let missing = conf(&[
            krb,
            (keys::RM_PRINCIPAL, "rm/_HOST@R"),
            (keys::RM_KEYTAB, "/nonexistent/rm.keytab"),
        ]);
        let err = daemon_identity(&missing, keys::RM_PRINCIPAL, keys::RM_KEYTAB, "h")
            .expect_err("no keytab");
        assert_eq!(
            err,
            "yarn.resourcemanager.keytab: the keytab /nonexistent/rm.keytab does not exist or \
             is not a file"
        );
        // A client needs the RM's principal too.
        let err = rm_client(&conf(&[krb]), KerberosLogin::TicketCache).expect_err("no principal");
        assert!(
            err.starts_with("yarn.resourcemanager.principal is not set"),
            "{err}"
        );
    }

    #[test]
    fn the_mechanism_of_auth_to_local_is_hadoop_or_mit() {
        let err = names_of(&conf(&[(keys::AUTH_TO_LOCAL_MECHANISM, "ldap")]), "R")
            .expect_err("unknown mechanism");
        assert!(err.contains("Hadoop takes hadoop or MIT"), "{err}");
        let err = names_of(&conf(&[(keys::AUTH_TO_LOCAL, "RULE:[x]")]), "R").expect_err("bad rule");
        assert!(
            err.starts_with("hadoop.security.auth_to_local: Invalid rule"),
            "{err}"
        );
    }

    #[test]
    fn a_principal_without_a_realm_is_in_the_default_realm() {
        assert_eq!(
            in_default_realm("rm/_HOST", Some("EXAMPLE.COM")),
            "rm/_HOST@EXAMPLE.COM"
        );
        assert_eq!(
            in_default_realm("rm/_HOST@OTHER", Some("EXAMPLE.COM")),
            "rm/_HOST@OTHER"
        );
        assert_eq!(in_default_realm("rm/_HOST", None), "rm/_HOST");
    }

    #[test]
    fn host_is_substituted_lower_cased() {
        let p = Principal::with_host("rm/_HOST@EXAMPLE.COM", "RM1.Example.com").expect("parse");
        assert_eq!(p.to_string(), "rm/rm1.example.com@EXAMPLE.COM");
        let fixed = Principal::with_host("rm/other@EXAMPLE.COM", "rm1").expect("parse");
        assert_eq!(fixed.to_string(), "rm/other@EXAMPLE.COM");
    }
}
