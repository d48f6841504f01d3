//! The client-side resource request table of an ApplicationMaster.
//!
//! An AM asks for containers one request at a time ("one container of 1 GB at
//! priority 1, preferably on h1001, h2121 or h3118"). The scheduler protocol
//! does not carry those requests: it carries one row per
//! `(priority, location, capability)` with the **absolute** number of
//! containers still wanted there, where a location is a host, a rack or `*`
//! (anywhere). Each request adds one to every host it names, to every rack
//! it names or that one of its hosts is on (each rack once per request),
//! and to `*`. So two maps whose input splits share host h2121 make the
//! h2121 row 2, and the `*` row counts every container of that shape.
//!
//! [`RequestTable`] keeps both: the requests, and the rows with what was
//! last sent for each. An allocate call sends the rows that a request was
//! added to or removed from since they were last sent, with their current
//! counts — 0 cancels a row — and after the ResourceManager lost the AM's
//! registration it sends the whole table again. A touched row is sent even
//! when its count is back to what was last sent: the scheduler decrements
//! its copy on every grant, so "the same as last sent" is not "the same as
//! the scheduler has" (a grant, its removal and a new request between two
//! calls leave the count unchanged here but at one less there). Hadoop's
//! AMRMClient sends every touched row for the same reason.
//!
//! ## Granted containers: the caller's part of the contract
//!
//! When the scheduler grants a container on host H (rack R) it decrements
//! the H, R and `*` rows *on its side*. The table here is not touched by a
//! grant. The AM must tell it which request the container satisfies, by
//! removing that request ([`RequestTable::remove`], or
//! `AmRmClient::container_granted`, which picks the best match), exactly as
//! a Java AM calls `AMRMClient.removeContainerRequest`. Removing the request
//! decrements every row it contributed to: the rows the scheduler already
//! decremented now agree with the scheduler, and the rows of the other
//! locations the request named (hosts and racks it did not run on) drop to
//! what is still wanted. An AM that forgets to remove satisfied requests
//! keeps stale counts here, and the next change to those rows re-sends
//! them, asking for containers it no longer needs.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::Arc;

use hadoop_protos::yarn as pb;
use spindle_common::Resource;

use crate::convert::{priority_to_pb, resource_to_pb};
use crate::error::AmError;

/// The location that matches every node.
pub const ANY: &str = "*";
/// The rack of a host when no topology is configured.
pub const DEFAULT_RACK: &str = "/default-rack";

/// Maps a host to its rack (Hadoop's `RackResolver`).
pub trait RackResolver: Send + Sync {
    fn rack_of(&self, host: &str) -> String;
}

/// Every host on [`DEFAULT_RACK`]: what Hadoop resolves without a topology
/// script or table.
#[derive(Debug, Clone, Copy, Default)]
pub struct DefaultRackResolver;

impl RackResolver for DefaultRackResolver {
    fn rack_of(&self, _host: &str) -> String {
        DEFAULT_RACK.to_string()
    }
}

/// A fixed host → rack table; hosts not in it are on the fallback rack.
#[derive(Debug, Clone)]
pub struct StaticRackResolver {
    racks: HashMap<String, String>,
    fallback: String,
}

impl StaticRackResolver {
    pub fn new<H: Into<String>, R: Into<String>>(
        pairs: impl IntoIterator<Item = (H, R)>,
    ) -> StaticRackResolver {
        StaticRackResolver {
            racks: pairs
                .into_iter()
                .map(|(h, r)| (h.into(), r.into()))
                .collect(),
            fallback: DEFAULT_RACK.to_string(),
        }
    }

    /// The rack of hosts that are not in the table.
    pub fn with_fallback(mut self, rack: impl Into<String>) -> StaticRackResolver {
        self.fallback = rack.into();
        self
    }
}

impl RackResolver for StaticRackResolver {
    fn rack_of(&self, host: &str) -> String {
        self.racks
            .get(host)
            .cloned()
            .unwrap_or_else(|| self.fallback.clone())
    }
}

/// One container wanted by the AM (Hadoop's `AMRMClient.ContainerRequest`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ContainerRequest {
    /// Lower numbers are served first.
    pub priority: i32,
    pub capability: Resource,
    /// Preferred hosts (empty: no host preference).
    pub hosts: Vec<String>,
    /// Preferred racks, besides the racks of `hosts`.
    pub racks: Vec<String>,
    /// Whether the scheduler may place the container elsewhere when the
    /// preferred locations are busy. `false` with hosts means "only these
    /// hosts"; with racks only, "only these racks".
    pub relax_locality: bool,
}

impl ContainerRequest {
    /// A container anywhere.
    pub fn new(priority: i32, capability: Resource) -> ContainerRequest {
        ContainerRequest {
            priority,
            capability,
            hosts: Vec::new(),
            racks: Vec::new(),
            relax_locality: true,
        }
    }

    pub fn on_hosts<S: Into<String>>(mut self, hosts: impl IntoIterator<Item = S>) -> Self {
        self.hosts = hosts.into_iter().map(Into::into).collect();
        self
    }

    pub fn on_racks<S: Into<String>>(mut self, racks: impl IntoIterator<Item = S>) -> Self {
        self.racks = racks.into_iter().map(Into::into).collect();
        self
    }

    pub fn relax_locality(mut self, relax: bool) -> Self {
        self.relax_locality = relax;
        self
    }
}

/// One row of the table as it goes on the wire (a `ResourceRequestProto`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceRow {
    pub priority: i32,
    /// A host, a rack or [`ANY`].
    pub resource_name: String,
    pub capability: Resource,
    /// The absolute number of containers still wanted here; 0 cancels.
    pub num_containers: i32,
    pub relax_locality: bool,
}

impl ResourceRow {
    pub fn to_pb(&self) -> pb::ResourceRequestProto {
        pb::ResourceRequestProto {
            priority: Some(priority_to_pb(self.priority)),
            resource_name: Some(self.resource_name.clone()),
            capability: Some(resource_to_pb(self.capability)),
            num_containers: Some(self.num_containers),
            relax_locality: Some(self.relax_locality),
            node_label_expression: None,
            execution_type_request: Some(pb::ExecutionTypeRequestProto {
                execution_type: Some(pb::ExecutionTypeProto::Guaranteed as i32),
                enforce_execution_type: Some(false),
            }),
            allocation_request_id: Some(-1),
        }
    }
}

impl fmt::Display for ResourceRow {
    /// `P1 h2121 <memory:1024, vCores:1> x2` (plus ` strict` when locality
    /// may not be relaxed).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "P{} {} {} x{}",
            self.priority, self.resource_name, self.capability, self.num_containers
        )?;
        if !self.relax_locality {
            f.write_str(" strict")?;
        }
        Ok(())
    }
}

/// Hosts sort before racks before `*` within a (priority, capability).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Level {
    Host,
    Rack,
    Any,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
struct RowKey {
    priority: i32,
    memory_mb: i64,
    vcores: i32,
    level: Level,
    name: String,
}

impl RowKey {
    fn capability(&self) -> Resource {
        Resource::new(self.memory_mb, self.vcores)
    }
}

/// What the ResourceManager was last told about a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sent {
    /// Never sent since the table (or the registration) began: a zero row
    /// can be dropped silently.
    Never,
    /// Sent with this count and locality flag.
    Value(i32, bool),
    /// A send was refused: the ResourceManager's value is unknown, so the
    /// row must be sent again even if it is 0.
    Unknown,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Row {
    count: i32,
    relax: bool,
    sent: Sent,
    /// A request was added to or removed from this row since it was last sent.
    touched: bool,
}

impl Row {
    fn changed(&self) -> bool {
        match self.sent {
            Sent::Never => self.count != 0,
            Sent::Value(c, r) => self.touched || c != self.count || r != self.relax,
            Sent::Unknown => true,
        }
    }
}

/// The request table (see the module documentation).
pub struct RequestTable {
    resolver: Arc<dyn RackResolver>,
    rows: BTreeMap<RowKey, Row>,
    /// Outstanding requests, in the order they were added (a multiset: equal
    /// requests may be added several times).
    outstanding: Vec<ContainerRequest>,
}

impl fmt::Debug for RequestTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RequestTable")
            .field("rows", &self.rows)
            .field("outstanding", &self.outstanding.len())
            .finish()
    }
}

impl Default for RequestTable {
    fn default() -> Self {
        RequestTable::new(Arc::new(DefaultRackResolver))
    }
}

/// The locations one request contributes to, with each row's locality flag.
struct Placement {
    rows: Vec<(Level, String, bool)>,
}

impl RequestTable {
    pub fn new(resolver: Arc<dyn RackResolver>) -> RequestTable {
        RequestTable {
            resolver,
            rows: BTreeMap::new(),
            outstanding: Vec::new(),
        }
    }

    /// The rack `host` is on, per this table's resolver.
    pub fn rack_of(&self, host: &str) -> String {
        self.resolver.rack_of(host)
    }

    /// Checks `req` and lists the rows it counts in (see [`Self::rows_of`]).
    fn placement(&self, req: &ContainerRequest) -> Result<Placement, AmError> {
        let bad = |m: String| Err(AmError::InvalidRequest(m));
        if req.priority < 0 {
            return bad(format!("priority {} is negative", req.priority));
        }
        if req.capability.any_negative() {
            return bad(format!("capability {} is negative", req.capability));
        }
        for name in req.hosts.iter().chain(&req.racks) {
            if name.is_empty() || name == ANY || name.trim() != name {
                return bad(format!(
                    "'{name}' is not a host or rack name (names are non-empty, \
                     have no surrounding blanks and are not '*')"
                ));
            }
        }
        if !req.relax_locality && req.hosts.is_empty() && req.racks.is_empty() {
            return bad(
                "a request that may not relax locality must name hosts or racks".to_string(),
            );
        }
        let rows = self.rows_of(req);
        // One name may not be both a host and a rack at the same shape: the
        // wire could not tell the two rows apart.
        for (level, name, _) in &rows {
            let other = match level {
                Level::Host => Level::Rack,
                Level::Rack => Level::Host,
                Level::Any => continue,
            };
            let clash_in_request = rows.iter().any(|(l, n, _)| *l == other && n == name);
            let clash_in_table = self
                .rows
                .get(&Self::key(req, other, name))
                .is_some_and(|r| r.count > 0);
            if clash_in_request || clash_in_table {
                return bad(format!(
                    "'{name}' is used both as a host and as a rack at priority {}",
                    req.priority
                ));
            }
        }
        Ok(Placement { rows })
    }

    fn key(req: &ContainerRequest, level: Level, name: &str) -> RowKey {
        RowKey {
            priority: req.priority,
            memory_mb: req.capability.memory_mb,
            vcores: req.capability.vcores,
            level,
            name: name.to_string(),
        }
    }

    /// Adds one container request: +1 on each of its host rows, rack rows and `*`.
    pub fn add(&mut self, req: &ContainerRequest) -> Result<(), AmError> {
        let placement = self.placement(req)?;
        // Check for overflow before changing anything.
        for (level, name, _) in &placement.rows {
            let count = self
                .rows
                .get(&Self::key(req, *level, name))
                .map_or(0, |r| r.count);
            if count == i32::MAX {
                return Err(AmError::InvalidRequest(format!(
                    "too many containers requested at {name}"
                )));
            }
        }
        for (level, name, relax) in placement.rows {
            let row = self
                .rows
                .entry(Self::key(req, level, &name))
                .or_insert(Row {
                    count: 0,
                    relax,
                    sent: Sent::Never,
                    touched: false,
                });
            row.count += 1;
            row.relax = relax;
            row.touched = true;
        }
        self.outstanding.push(req.clone());
        Ok(())
    }

    /// Removes one outstanding request equal to `req`: −1 on each row it
    /// counted in. Used both to cancel a request and to record that a granted
    /// container satisfied it (see the module documentation).
    pub fn remove(&mut self, req: &ContainerRequest) -> Result<(), AmError> {
        let index = self
            .outstanding
            .iter()
            .position(|r| r == req)
            .ok_or_else(|| {
                AmError::InvalidRequest(format!(
                    "no outstanding request equal to {req:?} (already removed or never added)"
                ))
            })?;
        self.outstanding.remove(index);
        for (level, name, _) in self.rows_of(req) {
            if let Some(row) = self.rows.get_mut(&Self::key(req, level, &name)) {
                row.count = (row.count - 1).max(0);
                row.touched = true;
            }
        }
        Ok(())
    }

    /// The rows `req` counts in, as Hadoop's AMRMClient builds them: each
    /// named host (locality always relaxable there), each named rack
    /// (likewise), each other rack of the named hosts (relaxable only if the
    /// request is), and `*` (relaxable only if the request is). Every
    /// location once.
    fn rows_of(&self, req: &ContainerRequest) -> Vec<(Level, String, bool)> {
        let mut rows: Vec<(Level, String, bool)> = Vec::new();
        let mut push = |level: Level, name: String, relax: bool| {
            if !rows.iter().any(|(l, n, _)| *l == level && *n == name) {
                rows.push((level, name, relax));
            }
        };
        for host in &req.hosts {
            push(Level::Host, host.clone(), true);
        }
        for rack in &req.racks {
            push(Level::Rack, rack.clone(), true);
        }
        for host in &req.hosts {
            push(Level::Rack, self.resolver.rack_of(host), req.relax_locality);
        }
        push(Level::Any, ANY.to_string(), req.relax_locality);
        rows
    }

    /// The requests not yet removed, in the order they were added.
    pub fn outstanding(&self) -> &[ContainerRequest] {
        &self.outstanding
    }

    /// The current count of one row (0 if there is none).
    pub fn count(&self, priority: i32, resource_name: &str, capability: Resource) -> i32 {
        self.rows
            .iter()
            .find(|(k, _)| {
                k.priority == priority && k.name == resource_name && k.capability() == capability
            })
            .map_or(0, |(_, r)| r.count)
    }

    fn row(key: &RowKey, row: &Row) -> ResourceRow {
        ResourceRow {
            priority: key.priority,
            resource_name: key.name.clone(),
            capability: key.capability(),
            num_containers: row.count,
            relax_locality: row.relax,
        }
    }

    /// Every row with containers still wanted, in table order (priority,
    /// capability, hosts, racks, `*`).
    pub fn rows(&self) -> Vec<ResourceRow> {
        self.rows
            .iter()
            .filter(|(_, r)| r.count > 0)
            .map(|(k, r)| Self::row(k, r))
            .collect()
    }

    /// Whether some row differs from what the ResourceManager was last told.
    pub fn has_changes(&self) -> bool {
        self.rows.values().any(Row::changed)
    }

    /// The rows to send now: those whose count or locality flag changed
    /// since they were last sent (0 = cancel). They are recorded as sent.
    /// If the ResourceManager refuses the call, hand the rows back with
    /// [`Self::unsent`].
    ///
    /// Rows at 0 stay in the table after they were sent (so a refused send
    /// can be repeated); a row that went back to 0 before it was ever sent
    /// is dropped.
    pub fn take_changes(&mut self) -> Vec<ResourceRow> {
        let mut out = Vec::new();
        for (key, row) in self.rows.iter_mut() {
            if row.changed() {
                out.push(Self::row(key, row));
                row.sent = Sent::Value(row.count, row.relax);
            }
            row.touched = false;
        }
        self.rows
            .retain(|_, r| !(r.count == 0 && r.sent == Sent::Never));
        out
    }

    /// Rows whose sending failed in a way that leaves the ResourceManager's
    /// value unknown: they are sent again (with their current values) by the
    /// next [`Self::take_changes`], even at 0.
    pub fn unsent(&mut self, rows: &[ResourceRow]) {
        for r in rows {
            for (key, row) in self.rows.iter_mut() {
                if key.priority == r.priority
                    && key.name == r.resource_name
                    && key.capability() == r.capability
                {
                    row.sent = Sent::Unknown;
                }
            }
        }
    }

    /// The ResourceManager forgot everything (the AM had to register again):
    /// every row with containers wanted is sent by the next
    /// [`Self::take_changes`], and zero rows are dropped.
    pub fn resend_all(&mut self) {
        self.rows.retain(|_, r| r.count > 0);
        for row in self.rows.values_mut() {
            row.sent = Sent::Never;
        }
    }

    /// Outstanding requests a container at `priority` of `capability` on
    /// `location` (a host, a rack or [`ANY`]) can satisfy: same priority,
    /// capability no larger than the container's, and
    /// - for a host: requests naming that host;
    /// - for a rack: requests naming the rack, or (if they may relax
    ///   locality) with a host on it;
    /// - for `*`: requests that may relax locality or name no location.
    ///
    /// The closest fit (largest capability) comes first; among equals, the
    /// oldest request.
    pub fn matching(
        &self,
        priority: i32,
        location: &str,
        capability: Resource,
    ) -> Vec<ContainerRequest> {
        let mut out: Vec<&ContainerRequest> = self
            .outstanding
            .iter()
            .filter(|r| r.priority == priority && r.capability.fits_in(&capability))
            .filter(|r| {
                if location == ANY {
                    r.relax_locality || (r.hosts.is_empty() && r.racks.is_empty())
                } else {
                    r.hosts.iter().any(|h| h == location)
                        || r.racks.iter().any(|k| k == location)
                        || (r.relax_locality
                            && r.hosts.iter().any(|h| self.resolver.rack_of(h) == location))
                }
            })
            .collect();
        out.sort_by(|a, b| {
            (b.capability.memory_mb, b.capability.vcores)
                .cmp(&(a.capability.memory_mb, a.capability.vcores))
        });
        out.into_iter().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GB: i64 = 1024;

    fn render(rows: &[ResourceRow]) -> String {
        rows.iter().map(|r| format!("{r}\n")).collect()
    }

    /// The illustration of the scheduler protocol: two maps of 1 GB whose
    /// input splits are on three hosts each, one reduce of 2 GB anywhere.
    /// Maps run at priority 1, the reduce at priority 2 (lower numbers are
    /// served first, so maps go before the reduce).
    fn seed_example() -> (
        RequestTable,
        ContainerRequest,
        ContainerRequest,
        ContainerRequest,
    ) {
        let racks = StaticRackResolver::new([
            ("h1001", "r11"),
            ("h1010", "r11"),
            ("h2121", "r22"),
            ("h3118", "r31"),
            ("h4123", "r45"),
        ]);
        let mut table = RequestTable::new(Arc::new(racks));
        let map0 =
            ContainerRequest::new(1, Resource::new(GB, 1)).on_hosts(["h1001", "h2121", "h3118"]);
        let map1 =
            ContainerRequest::new(1, Resource::new(GB, 1)).on_hosts(["h1010", "h2121", "h4123"]);
        let reduce = ContainerRequest::new(2, Resource::new(2 * GB, 1));
        for r in [&map0, &map1, &reduce] {
            table.add(r).expect("valid request");
        }
        (table, map0, map1, reduce)
    }

    #[test]
    fn seed_example_aggregates_hosts_racks_and_any() {
        let (mut table, ..) = seed_example();
        let initial = table.take_changes();
        assert_eq!(
            render(&initial),
            "\
P1 h1001 <memory:1024, vCores:1> x1
P1 h1010 <memory:1024, vCores:1> x1
P1 h2121 <memory:1024, vCores:1> x2
P1 h3118 <memory:1024, vCores:1> x1
P1 h4123 <memory:1024, vCores:1> x1
P1 r11 <memory:1024, vCores:1> x2
P1 r22 <memory:1024, vCores:1> x2
P1 r31 <memory:1024, vCores:1> x1
P1 r45 <memory:1024, vCores:1> x1
P1 * <memory:1024, vCores:1> x2
P2 * <memory:2048, vCores:1> x1
"
        );
        // Nothing changed since: nothing to send.
        assert!(!table.has_changes());
        assert!(table.take_changes().is_empty());
        assert_eq!(table.rows(), initial);
    }

    #[test]
    fn seed_example_deltas_after_a_grant_and_a_cancel() {
        let (mut table, map0, map1, reduce) = seed_example();
        table.take_changes();

        // A container arrives on r22/h2121 (the scheduler has already taken
        // one off h2121, r22 and * on its side). The AM runs map0 there and
        // removes map0's request: the rows the scheduler decremented now
        // agree with it, and map0's other hosts and racks are invalidated.
        let at_host = table.matching(1, "h2121", Resource::new(GB, 1));
        assert_eq!(at_host, vec![map0.clone(), map1.clone()], "oldest first");
        table.remove(&map0).expect("outstanding");
        assert_eq!(
            render(&table.take_changes()),
            "\
P1 h1001 <memory:1024, vCores:1> x0
P1 h2121 <memory:1024, vCores:1> x1
P1 h3118 <memory:1024, vCores:1> x0
P1 r11 <memory:1024, vCores:1> x1
P1 r22 <memory:1024, vCores:1> x1
P1 r31 <memory:1024, vCores:1> x0
P1 * <memory:1024, vCores:1> x1
"
        );

        // The AM no longer needs the reduce: cancel it.
        table.remove(&reduce).expect("outstanding");
        assert_eq!(
            render(&table.take_changes()),
            "P2 * <memory:2048, vCores:1> x0\n"
        );

        // What is left is exactly map1's share.
        assert_eq!(
            render(&table.rows()),
            "\
P1 h1010 <memory:1024, vCores:1> x1
P1 h2121 <memory:1024, vCores:1> x1
P1 h4123 <memory:1024, vCores:1> x1
P1 r11 <memory:1024, vCores:1> x1
P1 r22 <memory:1024, vCores:1> x1
P1 r45 <memory:1024, vCores:1> x1
P1 * <memory:1024, vCores:1> x1
"
        );
        assert_eq!(table.outstanding(), &[map1]);
        assert!(table.remove(&map0).is_err(), "map0 was removed already");
    }

    #[test]
    fn a_refused_send_is_sent_again_even_at_zero() {
        let (mut table, map0, ..) = seed_example();
        table.take_changes();
        table.remove(&map0).expect("outstanding");
        let sent = table.take_changes();
        assert!(sent
            .iter()
            .any(|r| r.resource_name == "h1001" && r.num_containers == 0));
        // The call carrying these rows was refused: send them again.
        table.unsent(&sent);
        assert_eq!(render(&table.take_changes()), render(&sent));
        assert!(table.take_changes().is_empty());
    }

    #[test]
    fn rows_added_and_removed_before_sending_are_never_sent() {
        let mut table = RequestTable::default();
        let req = ContainerRequest::new(0, Resource::new(512, 1)).on_hosts(["n1"]);
        table.add(&req).expect("add");
        table.remove(&req).expect("remove");
        assert!(!table.has_changes());
        assert!(table.take_changes().is_empty());
    }

    #[test]
    fn resend_all_repeats_every_wanted_row() {
        let (mut table, map0, ..) = seed_example();
        table.take_changes();
        table.remove(&map0).expect("outstanding");
        table.take_changes();
        table.resend_all();
        assert_eq!(table.take_changes(), table.rows());
        assert_eq!(table.rows().len(), 8);
    }

    #[test]
    fn strict_requests_do_not_relax_at_racks_or_any() {
        let mut table = RequestTable::default();
        let strict = ContainerRequest::new(3, Resource::new(256, 1))
            .on_hosts(["n1", "n2"])
            .relax_locality(false);
        table.add(&strict).expect("add");
        assert_eq!(
            render(&table.take_changes()),
            "\
P3 n1 <memory:256, vCores:1> x1
P3 n2 <memory:256, vCores:1> x1
P3 /default-rack <memory:256, vCores:1> x1 strict
P3 * <memory:256, vCores:1> x1 strict
"
        );
        // Off-switch and rack-level containers cannot satisfy it; its hosts can.
        assert!(table.matching(3, ANY, Resource::new(256, 1)).is_empty());
        assert!(table
            .matching(3, DEFAULT_RACK, Resource::new(256, 1))
            .is_empty());
        assert_eq!(table.matching(3, "n2", Resource::new(512, 1)), vec![strict]);
        assert!(
            table.matching(3, "n2", Resource::new(128, 1)).is_empty(),
            "too small"
        );
    }

    #[test]
    fn explicit_racks_count_once_and_stay_relaxable() {
        let racks = StaticRackResolver::new([("a1", "/r1"), ("a2", "/r1")]);
        let mut table = RequestTable::new(Arc::new(racks));
        let req = ContainerRequest::new(1, Resource::new(100, 1))
            .on_hosts(["a1", "a2", "a1"])
            .on_racks(["/r1", "/r2"])
            .relax_locality(false);
        table.add(&req).expect("add");
        assert_eq!(
            render(&table.rows()),
            "\
P1 a1 <memory:100, vCores:1> x1
P1 a2 <memory:100, vCores:1> x1
P1 /r1 <memory:100, vCores:1> x1
P1 /r2 <memory:100, vCores:1> x1
P1 * <memory:100, vCores:1> x1 strict
"
        );
        assert_eq!(table.matching(1, "/r2", Resource::new(100, 1)).len(), 1);
    }

    #[test]
    fn invalid_requests_are_refused_without_changing_the_table() {
        let mut table = RequestTable::default();
        let cap = Resource::new(100, 1);
        for bad in [
            ContainerRequest::new(-1, cap),
            ContainerRequest::new(0, Resource::new(-5, 1)),
            ContainerRequest::new(0, cap).on_hosts(["*"]),
            ContainerRequest::new(0, cap).on_hosts([""]),
            ContainerRequest::new(0, cap).on_racks([" r1"]),
            ContainerRequest::new(0, cap).relax_locality(false),
            ContainerRequest::new(0, cap)
                .on_hosts(["x"])
                .on_racks(["x"]),
        ] {
            let err = table.add(&bad).err();
            assert!(
                matches!(err, Some(AmError::InvalidRequest(_))),
                "{bad:?} must be refused, got {err:?}"
            );
        }
        assert!(table.rows().is_empty());
        assert!(table.outstanding().is_empty());
    }

    #[test]
    fn a_row_touched_between_calls_is_sent_even_at_its_last_sent_count() {
        // Four workers asked for and sent; the scheduler grants all four (its
        // `*` row drops to 0) and the AM removes the four requests. Before the
        // next call the four workers die and the AM asks for four again: the
        // count is 4, as last sent, but the scheduler has 0, so the row must
        // be sent.
        let mut table = RequestTable::default();
        let req = ContainerRequest::new(1, Resource::new(512, 1));
        for _ in 0..4 {
            table.add(&req).expect("add");
        }
        assert_eq!(table.take_changes().len(), 1);
        for _ in 0..4 {
            table.remove(&req).expect("granted");
        }
        for _ in 0..4 {
            table.add(&req).expect("add");
        }
        let sent = table.take_changes();
        assert_eq!(render(&sent), "P1 * <memory:512, vCores:1> x4\n");
        // Sent once; untouched since, it is not sent again.
        assert!(!table.has_changes());
        assert!(table.take_changes().is_empty());
    }

    #[test]
    fn matching_prefers_the_closest_fit() {
        let mut table = RequestTable::default();
        let small = ContainerRequest::new(1, Resource::new(256, 1));
        let big = ContainerRequest::new(1, Resource::new(512, 1));
        table.add(&small).expect("add");
        table.add(&big).expect("add");
        assert_eq!(
            table.matching(1, ANY, Resource::new(512, 1)),
            vec![big, small.clone()]
        );
        assert_eq!(table.matching(1, ANY, Resource::new(300, 1)), vec![small]);
        assert!(table.matching(2, ANY, Resource::new(512, 1)).is_empty());
    }

    #[test]
    fn wire_rows_carry_the_absolute_count() {
        let row = ResourceRow {
            priority: 4,
            resource_name: "h1".into(),
            capability: Resource::new(1024, 2),
            num_containers: 0,
            relax_locality: true,
        };
        let p = row.to_pb();
        assert_eq!(p.num_containers, Some(0));
        assert_eq!(p.priority.and_then(|x| x.priority), Some(4));
        assert_eq!(p.resource_name.as_deref(), Some("h1"));
        assert_eq!(p.capability.and_then(|c| c.memory), Some(1024));
    }
}
