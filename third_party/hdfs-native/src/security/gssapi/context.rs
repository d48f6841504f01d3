//! Spindle's addition: GSSAPI (Kerberos 5) security contexts for servers and
//! for clients outside HDFS, over the same dynamically loaded MIT library as
//! the HDFS client's SASL.
//!
//! [`GssAcceptor`] is a server's side: it takes the service's keys from a
//! keytab and accepts one client's context, then wraps and unwraps messages
//! under it (RFC 4752's security layer is built by the caller).
//! [`GssInitiator`] is a client's side: a ticket from a credential cache, or
//! from a keytab into a private in-memory cache, for a host-based service.

use std::ffi::CString;
use std::ptr;

use super::{
    bindings, check_gss_ok, libgssapi, GssBuf, GssClientCtx, GssCred, GssName, GssOwnedBuf,
};
use crate::security::KerberosCredentials;
use crate::HdfsError;

/// Whether the MIT GSSAPI library could be loaded (`libgssapi_krb5.so.2`).
pub fn available() -> bool {
    libgssapi().is_ok()
}

/// The server side of one Kerberos security context.
pub struct GssAcceptor {
    ctx: bindings::gss_ctx_id_t,
    cred: GssCred,
    complete: bool,
}

// The context is used by one task at a time; MIT's GSSAPI is thread-safe for
// distinct contexts.
unsafe impl Send for GssAcceptor {}
unsafe impl Sync for GssAcceptor {}

impl GssAcceptor {
    /// An acceptor holding the keys of `principal` (`None`: any principal the
    /// keytab has keys for) from the keytab file `keytab`.
    pub fn new(keytab: &str, principal: Option<&str>) -> crate::Result<Self> {
        let lib = libgssapi()?;
        if lib.gss_acquire_cred_from.is_err() {
            return Err(HdfsError::OperationFailed(
                "The installed GSSAPI library does not support credential stores".to_string(),
            ));
        }
        let mut desired = principal.map(GssName::with_principal).transpose()?;
        let key = CString::new("keytab").expect("static string does not contain NUL");
        let value = CString::new(keytab).map_err(|_| {
            HdfsError::InvalidArgument("Kerberos keytab path contains a NUL byte".to_string())
        })?;
        let mut elements = [bindings::gss_key_value_element_desc {
            key: key.as_ptr(),
            value: value.as_ptr(),
        }];
        let store = bindings::gss_key_value_set_desc {
            count: 1,
            elements: elements.as_mut_ptr(),
        };
        let mut minor = 0;
        let mut cred = ptr::null_mut();
        let major = unsafe {
            lib.gss_acquire_cred_from(
                &mut minor,
                desired.as_mut().map_or(ptr::null_mut(), |n| n.name),
                bindings::_GSS_C_INDEFINITE,
                ptr::null_mut(),
                bindings::GSS_C_ACCEPT as bindings::gss_cred_usage_t,
                &store,
                &mut cred,
                ptr::null_mut(),
                ptr::null_mut(),
            )
        };
        check_gss_ok(major, minor)?;
        Ok(Self {
            ctx: ptr::null_mut(),
            cred: GssCred { cred },
            complete: false,
        })
    }

    /// Feeds the client's next token. Returns the token to send back (if
    /// any) and whether the context is established.
    pub fn step(&mut self, token: &[u8]) -> crate::Result<(Option<Vec<u8>>, bool)> {
        if self.complete {
            return Err(HdfsError::SASLError(
                "the GSSAPI context is already established".to_string(),
            ));
        }
        let mut minor = 0;
        let mut input = GssBuf::from(token);
        let mut out = GssOwnedBuf::new();
        let major = unsafe {
            libgssapi()?.gss_accept_sec_context(
                &mut minor,
                &mut self.ctx,
                self.cred.cred,
                input.as_ptr(),
                ptr::null_mut(),
                ptr::null_mut(),
                ptr::null_mut(),
                out.as_ptr(),
                ptr::null_mut(),
                ptr::null_mut(),
                ptr::null_mut(),
            )
        };
        check_gss_ok(major, minor)?;
        self.complete = major & bindings::GSS_S_CONTINUE_NEEDED == 0;
        let out = (!out.is_empty()).then(|| out.to_vec());
        Ok((out, self.complete))
    }

    /// The client's principal (`user@REALM`, `nm/host@REALM`) once the
    /// context is established.
    pub fn peer(&mut self) -> crate::Result<String> {
        if !self.complete {
            return Err(HdfsError::SASLError(
                "the GSSAPI context is not established yet".to_string(),
            ));
        }
        let mut minor = 0;
        let mut name = GssName::new();
        let major = unsafe {
            libgssapi()?.gss_inquire_context(
                &mut minor,
                self.ctx,
                name.as_ptr(),
                ptr::null_mut(),
                ptr::null_mut(),
                ptr::null_mut(),
                ptr::null_mut(),
                ptr::null_mut(),
                ptr::null_mut(),
            )
        };
        check_gss_ok(major, minor)?;
        name.display_name()
    }

    /// `msg` protected for the client: signed, and sealed when `encrypt`.
    pub fn wrap(&mut self, encrypt: bool, msg: &[u8]) -> crate::Result<Vec<u8>> {
        wrap(self.ctx, encrypt, msg)
    }

    /// A message from the client, checked (and decrypted); the flag says
    /// whether it was sealed.
    pub fn unwrap(&mut self, msg: &[u8]) -> crate::Result<(Vec<u8>, bool)> {
        unwrap(self.ctx, msg)
    }
}

impl Drop for GssAcceptor {
    fn drop(&mut self) {
        delete_context(&mut self.ctx);
    }
}

/// The client side of one Kerberos security context.
pub struct GssInitiator {
    inner: GssClientCtx,
    complete: bool,
}

unsafe impl Send for GssInitiator {}
unsafe impl Sync for GssInitiator {}

impl GssInitiator {
    /// A context for `service@host` (Hadoop's `rm/host`), as `principal` with
    /// its keys from `keytab`, or from the credential cache `cache` (`None`
    /// for both: the process's default cache, `KRB5CCNAME`).
    pub fn new(
        service: &str,
        host: &str,
        principal: Option<&str>,
        keytab: Option<&str>,
        cache: Option<&str>,
    ) -> crate::Result<Self> {
        let target = GssName::with_target(&format!("{service}@{host}"))?;
        let credential = match KerberosCredentials::new(
            principal.map(str::to_string),
            keytab.map(str::to_string),
            cache.map(str::to_string),
        )? {
            Some(credentials) => Some(GssCred::acquire(&credentials)?),
            None => Some(GssCred::acquire_default()?),
        };
        Ok(Self {
            inner: GssClientCtx::with_credential(target, credential),
            complete: false,
        })
    }

    /// The next token to send, given the server's last one (`None` first).
    pub fn step(&mut self, token: Option<&[u8]>) -> crate::Result<(Option<Vec<u8>>, bool)> {
        let (out, complete) = self.inner.step(token)?;
        self.complete = complete;
        Ok((out, complete))
    }

    /// See [`GssAcceptor::wrap`].
    pub fn wrap(&mut self, encrypt: bool, msg: &[u8]) -> crate::Result<Vec<u8>> {
        wrap(self.inner.ctx, encrypt, msg)
    }

    /// See [`GssAcceptor::unwrap`].
    pub fn unwrap(&mut self, msg: &[u8]) -> crate::Result<(Vec<u8>, bool)> {
        unwrap(self.inner.ctx, msg)
    }

    /// This side's principal, as the credential names it.
    pub fn principal(&mut self) -> crate::Result<String> {
        self.inner.source_name()?.display_name()
    }
}

fn wrap(ctx: bindings::gss_ctx_id_t, encrypt: bool, msg: &[u8]) -> crate::Result<Vec<u8>> {
    let mut minor = 0;
    let mut input = GssBuf::from(msg);
    let mut out = GssOwnedBuf::new();
    let major = unsafe {
        libgssapi()?.gss_wrap(
            &mut minor,
            ctx,
            i32::from(encrypt),
            bindings::GSS_C_QOP_DEFAULT,
            input.as_ptr(),
            ptr::null_mut(),
            out.as_ptr(),
        )
    };
    check_gss_ok(major, minor)?;
    Ok(out.to_vec())
}

fn unwrap(ctx: bindings::gss_ctx_id_t, msg: &[u8]) -> crate::Result<(Vec<u8>, bool)> {
    let mut minor = 0;
    let mut input = GssBuf::from(msg);
    let mut out = GssOwnedBuf::new();
    let mut sealed = 0;
    let major = unsafe {
        libgssapi()?.gss_unwrap(
            &mut minor,
            ctx,
            input.as_ptr(),
            out.as_ptr(),
            &mut sealed,
            ptr::null_mut(),
        )
    };
    check_gss_ok(major, minor)?;
    Ok((out.to_vec(), sealed != 0))
}

fn delete_context(ctx: &mut bindings::gss_ctx_id_t) {
    if ctx.is_null() {
        return;
    }
    let Ok(lib) = libgssapi() else { return };
    let mut minor = bindings::GSS_S_COMPLETE;
    let major = unsafe { lib.gss_delete_sec_context(&mut minor, ctx, ptr::null_mut()) };
    if let Err(e) = check_gss_ok(major, minor) {
        log::warn!("Failed to release GSSAPI context: {:?}", e);
    }
}
