//! Parsers for what the Hadoop 3.3 `yarn` CLIs print, so tests can assert on fields
//! rather than on whitespace.

use anyhow::{bail, Context as _};

/// One row of `yarn node -list`, with the `-showDetails` lines that follow it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeRow {
    /// `Node-Id`, `host:port`.
    pub node_id: String,
    /// `Node-State`, e.g. `RUNNING`, `LOST`, `DECOMMISSIONED`.
    pub state: String,
    /// `Node-Http-Address`.
    pub http_address: String,
    /// `Number-of-Running-Containers`.
    pub running_containers: u32,
    /// `-showDetails` lines under the row, as (key, value), e.g.
    /// `("Configured Resources", "<memory:4096, vCores:4>")`.
    pub details: Vec<(String, String)>,
}

impl NodeRow {
    /// The value of a `-showDetails` line, e.g. `detail("Configured Resources")`.
    pub fn detail(&self, key: &str) -> Option<&str> {
        self.details
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// What `yarn node -list [-all] [-showDetails]` printed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeList {
    /// The `Total Nodes:N` figure.
    pub total: usize,
    /// The rows, in the CLI's order.
    pub nodes: Vec<NodeRow>,
}

impl NodeList {
    /// Parses the CLI's stdout. Fails (with the text) when the shape is not the
    /// Hadoop 3.3 one or the total disagrees with the rows.
    pub fn parse(stdout: &str) -> anyhow::Result<Self> {
        let mut total = None;
        let mut nodes: Vec<NodeRow> = Vec::new();
        for line in stdout.lines() {
            if let Some(n) = line.strip_prefix("Total Nodes:") {
                total = Some(
                    n.trim()
                        .parse::<usize>()
                        .with_context(|| format!("bad node count in {line:?}"))?,
                );
            } else if line.starts_with('\t') {
                let (key, value) = split_key_value(line)
                    .with_context(|| format!("unexpected detail line {line:?}"))?;
                let row = nodes
                    .last_mut()
                    .with_context(|| format!("detail line {line:?} before any node row"))?;
                row.details.push((key, value));
            } else if line.trim().is_empty()
                || line.trim_start().starts_with("Node-Id")
                || line.starts_with("Detailed Node Information")
            {
                continue;
            } else {
                let fields: Vec<&str> = line.split('\t').map(str::trim).collect();
                let [node_id, state, http_address, containers] = fields[..] else {
                    bail!("unexpected node row {line:?} in:\n{stdout}");
                };
                nodes.push(NodeRow {
                    node_id: node_id.to_owned(),
                    state: state.to_owned(),
                    http_address: http_address.to_owned(),
                    running_containers: containers
                        .parse()
                        .with_context(|| format!("bad container count in {line:?}"))?,
                    details: Vec::new(),
                });
            }
        }
        let total = total.with_context(|| format!("no `Total Nodes:` line in:\n{stdout}"))?;
        if total != nodes.len() {
            bail!(
                "`Total Nodes:{total}` but {} rows in:\n{stdout}",
                nodes.len()
            );
        }
        Ok(Self { total, nodes })
    }

    /// The row whose node id satisfies `matches`.
    pub fn find(&self, mut matches: impl FnMut(&str) -> bool) -> Option<&NodeRow> {
        self.nodes.iter().find(|n| matches(&n.node_id))
    }
}

/// One row of `yarn application -list`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppRow {
    /// `Application-Id`.
    pub id: String,
    /// `Application-Name`.
    pub name: String,
    /// `Application-Type`.
    pub app_type: String,
    /// `User`.
    pub user: String,
    /// `Queue`.
    pub queue: String,
    /// `State` (YarnApplicationState).
    pub state: String,
    /// `Final-State` (FinalApplicationStatus).
    pub final_state: String,
    /// `Progress`, e.g. `0%`.
    pub progress: String,
    /// `Tracking-URL`.
    pub tracking_url: String,
}

/// What `yarn application -list` printed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppList {
    /// The first line as printed: `Total number of applications (...):N`.
    pub header: String,
    /// The `N` of the header.
    pub total: usize,
    /// The rows, in the CLI's order.
    pub apps: Vec<AppRow>,
}

impl AppList {
    /// Parses the CLI's stdout.
    pub fn parse(stdout: &str) -> anyhow::Result<Self> {
        let mut lines = stdout.lines();
        let header = lines
            .by_ref()
            .find(|l| l.starts_with("Total number of applications"))
            .with_context(|| format!("no `Total number of applications` line in:\n{stdout}"))?;
        let total = header
            .rsplit_once("):")
            .and_then(|(_, n)| n.trim().parse::<usize>().ok())
            .with_context(|| format!("bad application count in {header:?}"))?;
        let mut apps = Vec::new();
        for line in lines {
            if line.trim().is_empty() || line.trim_start().starts_with("Application-Id") {
                continue;
            }
            let fields: Vec<&str> = line.split('\t').map(str::trim).collect();
            let [id, name, app_type, user, queue, state, final_state, progress, tracking_url] =
                fields[..]
            else {
                bail!("unexpected application row {line:?} in:\n{stdout}");
            };
            apps.push(AppRow {
                id: id.to_owned(),
                name: name.to_owned(),
                app_type: app_type.to_owned(),
                user: user.to_owned(),
                queue: queue.to_owned(),
                state: state.to_owned(),
                final_state: final_state.to_owned(),
                progress: progress.to_owned(),
                tracking_url: tracking_url.to_owned(),
            });
        }
        if total != apps.len() {
            bail!(
                "header says {total} applications but {} rows in:\n{stdout}",
                apps.len()
            );
        }
        Ok(Self {
            header: header.to_owned(),
            total,
            apps,
        })
    }

    /// The row for application `id`.
    pub fn find(&self, id: &str) -> Option<&AppRow> {
        self.apps.iter().find(|a| a.id == id)
    }
}

/// The `Key : Value` lines of a report such as `yarn application -status` or
/// `yarn queue -status`, in order, leading tabs removed.
pub fn parse_report(stdout: &str) -> Vec<(String, String)> {
    stdout.lines().filter_map(split_key_value).collect()
}

/// The value of the first `key : value` line of a report.
pub fn report_value<'a>(report: &'a [(String, String)], key: &str) -> Option<&'a str> {
    report
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

fn split_key_value(line: &str) -> Option<(String, String)> {
    let line = line.trim_start_matches('\t');
    let (key, value) = match line.split_once(" : ") {
        Some(kv) => kv,
        None => (line.strip_suffix(" :")?, ""),
    };
    Some((key.trim().to_owned(), value.trim().to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    // Shapes as printed by the Hadoop 3.3.4 CLIs (format strings from the client jar).
    const NODES: &str = "Total Nodes:2\n\
        \x20        Node-Id\t     Node-State\tNode-Http-Address\tNumber-of-Running-Containers\n\
        127.0.0.2:40001\t        RUNNING\t127.0.0.2:40002\t                           0\n\
        Detailed Node Information :\n\
        \tConfigured Resources : <memory:4096, vCores:4>\n\
        \tAllocated Resources : <memory:0, vCores:0>\n\
        \tNode-Labels : \n\
        127.0.0.3:40011\t           LOST\t127.0.0.3:40012\t                           1\n\
        Detailed Node Information :\n\
        \tConfigured Resources : <memory:2048, vCores:2>\n";

    #[test]
    fn parses_node_list_with_details() -> anyhow::Result<()> {
        let list = NodeList::parse(NODES)?;
        assert_eq!(list.total, 2);
        let first = &list.nodes[0];
        assert_eq!(first.node_id, "127.0.0.2:40001");
        assert_eq!(first.state, "RUNNING");
        assert_eq!(first.http_address, "127.0.0.2:40002");
        assert_eq!(first.running_containers, 0);
        assert_eq!(
            first.detail("Configured Resources"),
            Some("<memory:4096, vCores:4>")
        );
        assert_eq!(first.detail("Node-Labels"), Some(""));
        let second = list
            .find(|id| id.ends_with(":40011"))
            .expect("second node row");
        assert_eq!(second.state, "LOST");
        assert_eq!(second.running_containers, 1);
        assert_eq!(
            second.detail("Configured Resources"),
            Some("<memory:2048, vCores:2>")
        );
        Ok(())
    }

    #[test]
    fn node_list_total_must_match_rows() {
        assert!(NodeList::parse("Total Nodes:1\n").is_err());
        assert!(NodeList::parse("no header\n").is_err());
    }

    #[test]
    fn parses_application_list() -> anyhow::Result<()> {
        let out = "Total number of applications (application-types: [], states: [ACCEPTED] and tags: []):1\n\
            \x20               Application-Id\t    Application-Name\t    Application-Type\t      User\t     Queue\t             State\t       Final-State\t       Progress\t                       Tracking-URL\n\
            application_1700000000000_0001\t      my app\t                YARN\t      root\t   default\t          ACCEPTED\t         UNDEFINED\t             0%\t                                N/A\n";
        let list = AppList::parse(out)?;
        assert_eq!(list.total, 1);
        let app = list
            .find("application_1700000000000_0001")
            .expect("the row");
        assert_eq!(app.name, "my app");
        assert_eq!(app.app_type, "YARN");
        assert_eq!(app.user, "root");
        assert_eq!(app.queue, "default");
        assert_eq!(app.state, "ACCEPTED");
        assert_eq!(app.final_state, "UNDEFINED");
        assert_eq!(app.progress, "0%");
        assert_eq!(app.tracking_url, "N/A");
        Ok(())
    }

    #[test]
    fn parses_empty_application_list() -> anyhow::Result<()> {
        let out =
            "Total number of applications (application-types: [], states: [NEW] and tags: []):0\n\
            \x20               Application-Id\t    Application-Name\n";
        let list = AppList::parse(out)?;
        assert_eq!(list.total, 0);
        assert!(list.apps.is_empty());
        Ok(())
    }

    #[test]
    fn parses_reports() {
        let report = parse_report(
            "Application Report : \n\tApplication-Id : application_1_0001\n\tState : KILLED\n\
             Queue Name : default\n\tDiagnostics : a : b\n\tEmpty :\n",
        );
        assert_eq!(
            report_value(&report, "Application-Id"),
            Some("application_1_0001")
        );
        assert_eq!(report_value(&report, "State"), Some("KILLED"));
        assert_eq!(report_value(&report, "Queue Name"), Some("default"));
        assert_eq!(report_value(&report, "Diagnostics"), Some("a : b"));
        assert_eq!(report_value(&report, "Empty"), Some(""));
        assert_eq!(report_value(&report, "Application Report"), Some(""));
    }
}
