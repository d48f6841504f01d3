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

impl WebAddresses {
    /// The addresses for an RM whose web app is at `rm` (`host:port` as
    /// Hadoop writes it: the configured host of
    /// `yarn.resourcemanager.webapp.address` resolved as
    /// `WebAppUtils.getResolvedAddress` does, at start-up, with the bound
    /// port); `proxy_address` is `yarn.web-proxy.address` if set.
    pub fn new(rm: String, proxy_address: Option<&str>) -> Self {
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
        WebAddresses::new("rm.example:8088".into(), None)
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
        let w = WebAddresses::new("rm.example:8088".into(), Some("proxy.example:9046"));
        assert!(!w.rm_serves_proxy);
        assert_eq!(
            w.proxy_url(&app()),
            "http://proxy.example:9046/proxy/application_1700000000000_0007/"
        );
        assert_eq!(w.proxy_host(), "proxy.example");
        // The RM's own address as the proxy address: the RM serves it.
        let w = WebAddresses::new("rm.example:8088".into(), Some("rm.example:8088"));
        assert!(w.rm_serves_proxy);
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
