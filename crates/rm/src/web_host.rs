//! The host the RM writes in the web addresses it hands out, resolved
//! once at start-up as Hadoop's `WebAppUtils.getResolvedAddress` does (the
//! machine's resolver: host name, forward and reverse lookups).

use std::net::IpAddr;

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

/// The machine's host name (`gethostname(2)`).
pub(crate) fn machine_hostname() -> Option<String> {
    let name = nix::unistd::gethostname().ok()?;
    let name = name.to_str()?.trim().to_string();
    (!name.is_empty()).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
