//! Where an application's web UI is: the tracking URLs reports carry and
//! the addresses of the RM's web app and of the web proxy, as Hadoop's
//! `RMAppAttemptImpl`, `ProxyUriUtils` and `WebAppUtils` make them.
//!
//! A managed AM's reports carry `trackingUrl = http://<proxy>/proxy/<appId>/`
//! from the moment the application has an attempt, and
//! `originalTrackingUrl` = the URL the AM gave (register, allocate, and
//! the final one at unregister), `N/A` until it gave one. Once the attempt
//! is KILLED or FAILED both are the RM's application page
//! (`http://<rm-webapp>/cluster/app/<appId>`: "don't leave the tracking URL
//! pointing to a non-existent AM"). An unmanaged AM's tracking URL is its
//! own. A report the caller may not view says `N/A` for both.

use std::net::{IpAddr, SocketAddr};

use spindle_common::ids::ApplicationId;
use spindle_common::states::AttemptState;

use crate::model::reports::{AmTracking, AppReport, AttemptReport};

/// Hadoop's word for a value a report does not have.
pub const UNAVAILABLE: &str = "N/A";

/// `yarn.web-proxy.address`.
pub const PROXY_ADDRESS_KEY: &str = "yarn.web-proxy.address";

/// The web addresses the RM hands out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebAddresses {
    /// `http://host:port` of the RM's web app (Hadoop's
    /// `getResolvedRMWebAppURLWithScheme`), with the bound port.
    pub rm_web: String,
    /// `host:port` of the web proxy: `yarn.web-proxy.address` when set,
    /// else the RM's web app.
    pub proxy: String,
    /// Whether the RM serves `/proxy/` itself (Hadoop: only when the proxy
    /// address is the RM's web app address; otherwise a separate proxy
    /// server does).
    pub rm_serves_proxy: bool,
}

/// A report's two tracking URLs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrackingUrls {
    pub tracking: String,
    pub original: String,
}

impl TrackingUrls {
    fn unavailable() -> TrackingUrls {
        TrackingUrls {
            tracking: UNAVAILABLE.into(),
            original: UNAVAILABLE.into(),
        }
    }
}

/// `host:port` as Hadoop's `WebAppUtils.getResolvedAddress` writes a
/// listen address: a wildcard host stands for the local host
/// (`NetUtils.getConnectAddress`), and when that, or the host itself, is a
/// loopback address, Hadoop writes the local host's canonical name
/// (`InetAddress.getLocalHost().getCanonicalHostName()`); a wildcard that
/// stands for another address is written as the machine's host name.
/// Other hosts are written as given.
pub fn resolved_host_port(host: &str, port: u16) -> String {
    format!("{}:{port}", resolved_host(host, &SystemResolver))
}

/// The name lookups [`resolved_host`] makes, apart so that tests can give
/// the answers of other machines.
trait Resolver {
    /// `gethostname(2)`.
    fn host_name(&self) -> Option<String>;
    /// The addresses `name` resolves to, in the resolver's order.
    fn addresses(&self, name: &str) -> Vec<IpAddr>;
    /// The name `ip` resolves back to, if it has one.
    fn name_of(&self, ip: IpAddr) -> Option<String>;
}

/// The machine's resolver (`getaddrinfo`, `getnameinfo`), as the JVM uses it.
struct SystemResolver;

impl Resolver for SystemResolver {
    fn host_name(&self) -> Option<String> {
        machine_hostname()
    }

    fn addresses(&self, name: &str) -> Vec<IpAddr> {
        use std::net::ToSocketAddrs;
        (name, 0)
            .to_socket_addrs()
            .map(|found| found.map(|a| a.ip()).collect())
            .unwrap_or_default()
    }

    fn name_of(&self, ip: IpAddr) -> Option<String> {
        dns_lookup::lookup_addr(&ip).ok()
    }
}

fn resolved_host(host: &str, r: &dyn Resolver) -> String {
    let host = host.trim();
    let ip = match host.parse::<IpAddr>() {
        Ok(ip) => Some(ip),
        Err(_) if host.is_empty() => Some(IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED)),
        Err(_) if host.eq_ignore_ascii_case("localhost") => {
            Some(IpAddr::V4(std::net::Ipv4Addr::LOCALHOST))
        }
        Err(_) => None,
    };
    let Some(ip) = ip else {
        return host.to_string();
    };
    let local_name = r.host_name();
    let fallback = || local_name.clone().unwrap_or_else(|| host.to_string());
    if ip.is_unspecified() {
        // NetUtils.getConnectAddress: the local host, written by its name
        // unless it is a loopback address.
        return match local_host(r, local_name.as_deref()) {
            Some(local) if local.is_loopback() => canonical_name(r, local),
            _ => fallback(),
        };
    }
    if ip.is_loopback() {
        return match local_host(r, local_name.as_deref()) {
            Some(local) => canonical_name(r, local),
            None => fallback(),
        };
    }
    host.to_string()
}

/// Java's `InetAddress.getLocalHost()`: the loopback address for a host
/// named `localhost`, else the host name's first address (IPv4 ones first,
/// as the JVM orders them by default).
fn local_host(r: &dyn Resolver, name: Option<&str>) -> Option<IpAddr> {
    let name = name?;
    if name == "localhost" {
        return Some(IpAddr::V4(std::net::Ipv4Addr::LOCALHOST));
    }
    let found = r.addresses(name);
    found
        .iter()
        .find(|ip| ip.is_ipv4())
        .or_else(|| found.first())
        .copied()
}

/// Java's `InetAddress.getCanonicalHostName()`: the name `ip` resolves back
/// to, if that name resolves to `ip` again; else `ip` written out.
fn canonical_name(r: &dyn Resolver, ip: IpAddr) -> String {
    r.name_of(ip)
        .filter(|name| r.addresses(name).contains(&ip))
        .unwrap_or_else(|| ip.to_string())
}

fn machine_hostname() -> Option<String> {
    let name = nix::unistd::gethostname().ok()?;
    let name = name.to_str()?.trim().to_string();
    (!name.is_empty()).then_some(name)
}

impl WebAddresses {
    /// The addresses for an RM whose web app is configured as
    /// `configured_host` (the host of `yarn.resourcemanager.webapp.address`,
    /// not the bind host) and bound at `bound`; `proxy_address` is
    /// `yarn.web-proxy.address` if set.
    pub fn new(configured_host: &str, bound: SocketAddr, proxy_address: Option<&str>) -> Self {
        let rm = resolved_host_port(configured_host, bound.port());
        let proxy = proxy_address
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(|p| strip_scheme(p).to_string())
            .unwrap_or_else(|| rm.clone());
        WebAddresses {
            rm_web: format!("http://{rm}"),
            rm_serves_proxy: proxy == rm,
            proxy,
        }
    }

    /// The host the proxy connects to AMs from (Hadoop binds its client
    /// socket to it, since the AM's `AmIpFilter` accepts only requests
    /// from the proxy hosts).
    pub fn proxy_host(&self) -> &str {
        host_of(&self.proxy)
    }

    /// `http://<proxy>/proxy/<appId>/`, `ProxyUriUtils.getProxyUri(null, ..)`.
    pub fn proxy_url(&self, app: &ApplicationId) -> String {
        format!("http://{}/proxy/{app}/", self.proxy)
    }

    /// The RM's page of the application.
    pub fn rm_app_page(&self, app: &ApplicationId) -> String {
        format!("{}/cluster/app/{app}", self.rm_web)
    }

    /// The tracking URLs of an attempt with this state and AM URL.
    pub fn urls(&self, app: &ApplicationId, unmanaged: bool, am: &AmTracking) -> TrackingUrls {
        if matches!(am.state, AttemptState::Killed | AttemptState::Failed) {
            let page = self.rm_app_page(app);
            return TrackingUrls {
                tracking: page.clone(),
                original: page,
            };
        }
        let original = sanitize(&am.url);
        let tracking = if unmanaged {
            original.clone()
        } else {
            self.proxy_url(app)
        };
        TrackingUrls { tracking, original }
    }

    /// An application report's tracking URLs (its current attempt's).
    pub fn app_urls(&self, r: &AppReport) -> TrackingUrls {
        match (&r.am_tracking, r.viewable) {
            (Some(am), true) => self.urls(&r.app.id, r.app.unmanaged_am, am),
            _ => TrackingUrls::unavailable(),
        }
    }

    /// An attempt report's tracking URLs.
    pub fn attempt_urls(&self, r: &AttemptReport) -> TrackingUrls {
        self.urls(&r.id.app, r.unmanaged, &r.am_tracking())
    }
}

/// Hadoop's `sanitizeTrackingUrl`: an empty URL is "N/A".
pub fn sanitize(url: &str) -> String {
    if url.trim().is_empty() {
        UNAVAILABLE.into()
    } else {
        url.to_string()
    }
}

fn strip_scheme(address: &str) -> &str {
    address
        .split_once("://")
        .map_or(address, |(_, rest)| rest)
        .trim_end_matches('/')
}

/// The host of `host:port` (an IPv6 literal in brackets keeps them off).
pub fn host_of(host_port: &str) -> &str {
    if let Some(rest) = host_port.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    match host_port.rsplit_once(':') {
        Some((host, port)) if port.chars().all(|c| c.is_ascii_digit()) => host,
        _ => host_port,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn app() -> ApplicationId {
        ApplicationId::new(1700000000000, 7)
    }

    fn addresses() -> WebAddresses {
        WebAddresses::new("rm.example", "10.0.0.1:8088".parse().expect("addr"), None)
    }

    #[test]
    fn proxy_url_and_rm_page() {
        let w = addresses();
        assert_eq!(w.rm_web, "http://rm.example:8088");
        assert!(w.rm_serves_proxy);
        assert_eq!(
            w.proxy_url(&app()),
            "http://rm.example:8088/proxy/application_1700000000000_0007/"
        );
        assert_eq!(
            w.rm_app_page(&app()),
            "http://rm.example:8088/cluster/app/application_1700000000000_0007"
        );
        assert_eq!(w.proxy_host(), "rm.example");
    }

    #[test]
    fn a_separate_proxy_is_not_served_by_the_rm() {
        let w = WebAddresses::new(
            "rm.example",
            "10.0.0.1:8088".parse().expect("addr"),
            Some("proxy.example:9046"),
        );
        assert!(!w.rm_serves_proxy);
        assert_eq!(
            w.proxy_url(&app()),
            "http://proxy.example:9046/proxy/application_1700000000000_0007/"
        );
        assert_eq!(w.proxy_host(), "proxy.example");
        // The RM's own address as the proxy address: the RM serves it.
        let w = WebAddresses::new(
            "rm.example",
            "10.0.0.1:8088".parse().expect("addr"),
            Some("rm.example:8088"),
        );
        assert!(w.rm_serves_proxy);
    }

    /// A machine's answers: its host name, forward and reverse entries.
    struct Machine {
        name: &'static str,
        forward: &'static [(&'static str, &'static [&'static str])],
        reverse: &'static [(&'static str, &'static str)],
    }

    impl Resolver for Machine {
        fn host_name(&self) -> Option<String> {
            Some(self.name.to_string())
        }

        fn addresses(&self, name: &str) -> Vec<IpAddr> {
            self.forward
                .iter()
                .filter(|(n, _)| *n == name)
                .flat_map(|(_, ips)| ips.iter().map(|ip| ip.parse().expect("ip")))
                .collect()
        }

        fn name_of(&self, ip: IpAddr) -> Option<String> {
            self.reverse
                .iter()
                .find(|(i, _)| i.parse::<IpAddr>().ok() == Some(ip))
                .map(|(_, n)| n.to_string())
        }
    }

    #[test]
    fn loopback_hosts_become_the_local_hosts_canonical_name_as_hadoop_writes_them() {
        // /etc/hosts: 127.0.0.1 localhost; 127.0.0.1 vm. Hadoop's RM on
        // 127.0.0.1 writes http://localhost:port (the reverse name of vm's
        // address), not vm.
        let vm = Machine {
            name: "vm",
            forward: &[("vm", &["127.0.0.1"]), ("localhost", &["::1", "127.0.0.1"])],
            reverse: &[("127.0.0.1", "localhost")],
        };
        for host in ["127.0.0.1", "localhost", "0.0.0.0", "", "::"] {
            assert_eq!(resolved_host(host, &vm), "localhost", "{host:?}");
        }
        // Debian's 127.0.1.1 vm.example.org vm.
        let debian = Machine {
            name: "vm",
            forward: &[("vm", &["127.0.1.1"]), ("vm.example.org", &["127.0.1.1"])],
            reverse: &[("127.0.1.1", "vm.example.org")],
        };
        assert_eq!(resolved_host("127.0.0.1", &debian), "vm.example.org");
        assert_eq!(resolved_host("0.0.0.0", &debian), "vm.example.org");
        // A container (172.17.0.2 c0ffee): its host name is its own address,
        // not a loopback one, so a wildcard is written as the name, and a
        // loopback host as that address's reverse name.
        let container = Machine {
            name: "c0ffee",
            forward: &[("c0ffee", &["172.17.0.2"]), ("c0ffee.lan", &["172.17.0.2"])],
            reverse: &[("172.17.0.2", "c0ffee.lan")],
        };
        assert_eq!(resolved_host("0.0.0.0", &container), "c0ffee");
        assert_eq!(resolved_host("127.0.0.1", &container), "c0ffee.lan");
        // A reverse name that does not resolve back is not used; nor one that
        // is missing.
        let unconfirmed = Machine {
            name: "vm",
            forward: &[("vm", &["127.0.0.1"])],
            reverse: &[("127.0.0.1", "elsewhere")],
        };
        assert_eq!(resolved_host("127.0.0.1", &unconfirmed), "127.0.0.1");
        // A host name that does not resolve: the name, as before.
        let lost = Machine {
            name: "lost",
            forward: &[],
            reverse: &[],
        };
        assert_eq!(resolved_host("127.0.0.1", &lost), "lost");
        // Other hosts are written as given.
        assert_eq!(resolved_host("10.1.2.3", &vm), "10.1.2.3");
        assert_eq!(resolved_host("rm.example", &vm), "rm.example");
        assert_eq!(resolved_host_port("10.1.2.3", 1), "10.1.2.3:1");
    }

    #[test]
    fn urls_follow_the_attempt() {
        let w = addresses();
        let proxy = w.proxy_url(&app());
        let page = w.rm_app_page(&app());
        let am = |state, url: &str| AmTracking {
            state,
            url: url.into(),
        };
        // Not registered yet: the proxy URL, no original.
        let u = w.urls(&app(), false, &am(AttemptState::Scheduled, ""));
        assert_eq!((u.tracking.as_str(), u.original.as_str()), (&*proxy, "N/A"));
        let u = w.urls(&app(), false, &am(AttemptState::Running, "am:4040"));
        assert_eq!(
            (u.tracking.as_str(), u.original.as_str()),
            (&*proxy, "am:4040")
        );
        let u = w.urls(&app(), false, &am(AttemptState::Finished, "http://hs/x"));
        assert_eq!(
            (u.tracking.as_str(), u.original.as_str()),
            (&*proxy, "http://hs/x")
        );
        for state in [AttemptState::Killed, AttemptState::Failed] {
            let u = w.urls(&app(), false, &am(state, "am:4040"));
            assert_eq!((u.tracking.as_str(), u.original.as_str()), (&*page, &*page));
        }
        // Unmanaged: the AM's own URL.
        let u = w.urls(&app(), true, &am(AttemptState::Running, "am:1"));
        assert_eq!((u.tracking.as_str(), u.original.as_str()), ("am:1", "am:1"));
    }

    #[test]
    fn host_of_host_port() {
        assert_eq!(host_of("a.b:80"), "a.b");
        assert_eq!(host_of("[::1]:80"), "::1");
        assert_eq!(host_of("a.b"), "a.b");
    }
}
