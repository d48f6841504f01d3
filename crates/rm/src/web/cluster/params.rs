//! The query parameters of the REST resources, read and checked as
//! Hadoop's `RMWebServices` and `ApplicationsRequestBuilder` do, with their
//! error messages.

use std::collections::BTreeSet;

use axum::http::{StatusCode, Uri};
use spindle_common::states::{AppState, FinalStatus};
use spindle_web::WebError;

use super::dao::DeSelects;
use crate::cluster::nodes::NodeState;
use crate::model::apps::{AppFilter, AppScope};
use crate::web::caller::decode;

/// A request's query parameters, decoded, in order; a name may repeat.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Params(Vec<(String, String)>);

impl Params {
    /// The query of `uri`; bad percent-encoding or non-UTF-8 is a bad request.
    pub fn of(uri: &Uri) -> Result<Params, WebError> {
        Self::parse(uri.query().unwrap_or(""))
    }

    pub fn parse(query: &str) -> Result<Params, WebError> {
        let mut out = Vec::new();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            out.push((decode(k)?, decode(v)?));
        }
        Ok(Params(out))
    }

    /// The first value of `name` (a JAX-RS `@QueryParam String`).
    pub fn one(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Every value of `name` (a JAX-RS `@QueryParam Set<String>`).
    pub fn all(&self, name: &str) -> Vec<&str> {
        self.0
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }

    /// The first value of `name`, when not empty.
    fn given(&self, name: &str) -> Option<&str> {
        self.one(name).filter(|v| !v.is_empty())
    }
}

/// What `/ws/v1/cluster/apps` asks: the filter for the state and the final
/// status (which Hadoop checks after the limit is applied).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AppsQuery {
    pub filter: AppFilter,
    pub final_status: Option<FinalStatus>,
    pub deselects: DeSelects,
    /// A queue the capacity scheduler must know (`queue`).
    pub queue: Option<String>,
}

/// Java's `Long.parseLong`, with Hadoop's message for a non-number.
fn long(name: &str, value: &str) -> Result<i64, WebError> {
    value
        .parse::<i64>()
        .map_err(|_| WebError::bad_request(format!("{name} value must be a number!")))
}

/// Comma-separated values of every occurrence of `name`, trimmed and
/// lower-cased, blanks left out (`RMWebServices.parseQueries`).
pub fn split_values(params: &Params, name: &str) -> BTreeSet<String> {
    params
        .all(name)
        .into_iter()
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// `parseQueries(..., true)`: application states, each checked.
pub fn app_states<'a>(
    values: impl IntoIterator<Item = &'a str>,
) -> Result<BTreeSet<AppState>, WebError> {
    let mut out = BTreeSet::new();
    for v in values
        .into_iter()
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|v| !v.is_empty())
    {
        let state = v.parse::<AppState>().map_err(|_| {
            WebError::bad_request(format!(
                "Invalid application-state {v} specified. It should be one of [{}]",
                AppState::ALL.map(AppState::as_str).join(", ")
            ))
        })?;
        out.insert(state);
    }
    Ok(out)
}

/// `DeSelectFields.initFields`.
pub fn deselects(params: &Params) -> Result<DeSelects, WebError> {
    let mut d = DeSelects::default();
    for v in params
        .all("deSelects")
        .into_iter()
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|v| !v.is_empty())
    {
        let field = match v.to_ascii_lowercase().as_str() {
            "resourcerequests" => &mut d.resource_requests,
            "timeouts" => &mut d.timeouts,
            "amnodelabelexpression" => &mut d.am_node_label_expression,
            "appnodelabelexpression" => &mut d.app_node_label_expression,
            "resourceinfo" => &mut d.resource_info,
            _ => {
                return Err(WebError::bad_request(format!(
                    "Invalid deSelects string {v} specified. It should be one of \
                     [RESOURCE_REQUESTS, TIMEOUTS, AM_NODE_LABEL_EXPRESSION, \
                     APP_NODE_LABEL_EXPRESSION, RESOURCE_INFO]"
                )))
            }
        };
        *field = true;
    }
    Ok(d)
}

/// The query of `/ws/v1/cluster/apps`, checked in Hadoop's order.
pub fn apps_query(params: &Params) -> Result<AppsQuery, WebError> {
    let mut filter = AppFilter {
        scope: AppScope::All,
        ..AppFilter::default()
    };
    let queue = params.given("queue").map(str::to_string);
    let limit = params
        .given("limit")
        .map(|v| long("limit", v))
        .transpose()?;
    let started_begin = params
        .given("startedTimeBegin")
        .map(|v| long("startedTimeBegin", v))
        .transpose()?;
    let started_end = params
        .given("startedTimeEnd")
        .map(|v| long("startedTimeEnd", v))
        .transpose()?;
    let finished_begin = params
        .given("finishedTimeBegin")
        .map(|v| long("finishedTimeBegin", v))
        .transpose()?;
    let finished_end = params
        .given("finishedTimeEnd")
        .map(|v| long("finishedTimeEnd", v))
        .transpose()?;
    if let Some(limit) = limit {
        if limit <= 0 {
            return Err(WebError::bad_request("limit value must be greater then 0"));
        }
        filter.limit = Some(usize::try_from(limit).unwrap_or(usize::MAX));
    }
    let (sb, se) = (started_begin.unwrap_or(0), started_end.unwrap_or(i64::MAX));
    if sb < 0 {
        return Err(WebError::bad_request(
            "startedTimeBegin must be greater than 0",
        ));
    }
    if se < 0 {
        return Err(WebError::bad_request(
            "startedTimeEnd must be greater than 0",
        ));
    }
    if sb > se {
        return Err(WebError::bad_request(
            "startedTimeEnd must be greater than startTimeBegin",
        ));
    }
    let (fb, fe) = (
        finished_begin.unwrap_or(0),
        finished_end.unwrap_or(i64::MAX),
    );
    if fb < 0 {
        return Err(WebError::bad_request(
            "finishTimeBegin must be greater than 0",
        ));
    }
    if fe < 0 {
        return Err(WebError::bad_request(
            "finishTimeEnd must be greater than 0",
        ));
    }
    if fb > fe {
        return Err(WebError::bad_request(
            "finishTimeEnd must be greater than finishTimeBegin",
        ));
    }
    if started_begin.is_some() || started_end.is_some() {
        filter.started = Some((sb as u64, se as u64));
    }
    if finished_begin.is_some() || finished_end.is_some() {
        filter.finished = Some((fb as u64, fe as u64));
    }
    let mut states: Vec<&str> = params.all("states");
    if let Some(s) = params.given("state") {
        states.push(s);
    }
    filter.states = app_states(states)?;
    if let Some(user) = params.given("user") {
        filter.users.insert(user.to_string());
    }
    if let Some(q) = &queue {
        filter.queues.insert(q.clone());
    }
    filter.types = split_values(params, "applicationTypes");
    filter.tags = split_values(params, "applicationTags");
    filter.name = params.one("name").map(str::to_string);
    let final_status = match params.given("finalStatus") {
        None => None,
        Some(v) => Some(v.parse::<FinalStatus>().map_err(|_| {
            WebError::new(
                StatusCode::BAD_REQUEST,
                "java.lang.IllegalArgumentException",
                format!(
                    "No enum constant org.apache.hadoop.yarn.api.records.FinalApplicationStatus.{v}"
                ),
            )
        })?),
    };
    Ok(AppsQuery {
        filter,
        final_status,
        deselects: deselects(params)?,
        queue,
    })
}

/// The `states` of `/ws/v1/cluster/nodes` (every state when absent), as
/// Hadoop's `NodeState.valueOf` takes them.
pub fn node_states(params: &Params) -> Result<BTreeSet<NodeState>, WebError> {
    let Some(states) = params.one("states") else {
        return Ok(NodeState::ALL.into_iter().collect());
    };
    states
        .split(',')
        .map(|s| {
            let upper = s.to_uppercase();
            NodeState::ALL
                .into_iter()
                .find(|st| st.as_str() == upper)
                .ok_or_else(|| {
                    WebError::new(
                        StatusCode::BAD_REQUEST,
                        "java.lang.IllegalArgumentException",
                        format!(
                            "No enum constant org.apache.hadoop.yarn.api.records.NodeState.{upper}"
                        ),
                    )
                })
        })
        .collect()
}

/// The `states` and the one `applicationTypes` of `/appstatistics`
/// (`None`: any type).
pub fn statistics_query(params: &Params) -> Result<(BTreeSet<AppState>, Option<String>), WebError> {
    let mut states = app_states(params.all("states"))?;
    let types = split_values(params, "applicationTypes");
    if types.len() > 1 {
        return Err(WebError::bad_request(format!(
            "# of applicationTypes = {}, we temporarily support at most one applicationType",
            types.len()
        )));
    }
    if states.is_empty() {
        states = AppState::ALL.into_iter().collect();
    }
    Ok((states, types.into_iter().next()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(q: &str) -> Params {
        Params::parse(q).expect("query parses")
    }

    #[test]
    fn bad_queries_are_refused_with_hadoops_messages() {
        let cases: &[(&str, &str)] = &[
            ("limit=0", "limit value must be greater then 0"),
            ("limit=-3", "limit value must be greater then 0"),
            (
                "limit=99999999999999999999",
                "limit value must be a number!",
            ),
            ("limit=ten", "limit value must be a number!"),
            (
                "startedTimeBegin=-1",
                "startedTimeBegin must be greater than 0",
            ),
            ("startedTimeEnd=-1", "startedTimeEnd must be greater than 0"),
            (
                "startedTimeBegin=5&startedTimeEnd=4",
                "startedTimeEnd must be greater than startTimeBegin",
            ),
            (
                "finishedTimeBegin=x",
                "finishedTimeBegin value must be a number!",
            ),
            ("finishedTimeEnd=-2", "finishTimeEnd must be greater than 0"),
            (
                "finishedTimeBegin=9&finishedTimeEnd=1",
                "finishTimeEnd must be greater than finishTimeBegin",
            ),
            (
                "states=running,bogus",
                "Invalid application-state bogus specified. It should be one of \
                 [NEW, NEW_SAVING, SUBMITTED, ACCEPTED, RUNNING, FINISHED, FAILED, KILLED]",
            ),
            (
                "state=nope",
                "Invalid application-state nope specified. It should be one of \
                 [NEW, NEW_SAVING, SUBMITTED, ACCEPTED, RUNNING, FINISHED, FAILED, KILLED]",
            ),
            (
                "deSelects=foo",
                "Invalid deSelects string foo specified. It should be one of \
                 [RESOURCE_REQUESTS, TIMEOUTS, AM_NODE_LABEL_EXPRESSION, \
                 APP_NODE_LABEL_EXPRESSION, RESOURCE_INFO]",
            ),
        ];
        for (q, msg) in cases {
            let e = apps_query(&p(q)).expect_err(q);
            assert_eq!(e.status, StatusCode::BAD_REQUEST, "{q}");
            assert_eq!(e.message, *msg, "{q}");
        }
        let e = apps_query(&p("finalStatus=maybe")).expect_err("bad final status");
        assert_eq!(e.exception(), "IllegalArgumentException");
    }

    #[test]
    fn good_queries_build_the_filter() {
        let q = apps_query(&p(
            "states=RUNNING,accepted&state=killed&user=alice&queue=root.a&limit=2\
             &startedTimeBegin=10&applicationTypes=SPARK,%20MapReduce\
             &applicationTags=X&name=job&finalStatus=succeeded&deSelects=timeouts",
        ))
        .expect("valid");
        let f = &q.filter;
        assert_eq!(
            f.states,
            [AppState::Running, AppState::Accepted, AppState::Killed]
                .into_iter()
                .collect()
        );
        assert!(f.users.contains("alice") && f.queues.contains("root.a"));
        assert_eq!(f.limit, Some(2));
        assert_eq!(f.started, Some((10, i64::MAX as u64)));
        assert_eq!(f.finished, None);
        assert_eq!(
            f.types,
            ["spark", "mapreduce"]
                .map(String::from)
                .into_iter()
                .collect()
        );
        assert_eq!(f.tags, ["x".to_string()].into_iter().collect());
        assert_eq!(f.name.as_deref(), Some("job"));
        assert_eq!(q.final_status, Some(FinalStatus::Succeeded));
        assert!(q.deselects.timeouts && !q.deselects.resource_info);
        assert_eq!(q.queue.as_deref(), Some("root.a"));

        let empty = apps_query(&p("")).expect("no parameters");
        assert!(empty.filter.states.is_empty() && empty.filter.limit.is_none());
        assert_eq!(empty.filter.scope, AppScope::All);
    }

    #[test]
    fn repeated_and_encoded_parameters() {
        let ps = p("states=a&x=1&states=b%2Cc&y");
        assert_eq!(ps.all("states"), vec!["a", "b,c"]);
        assert_eq!(ps.one("y"), Some(""));
        assert!(Params::parse("a=%e9").is_err());
        assert!(Params::parse("a=%").is_err());
    }

    #[test]
    fn node_states_default_to_all_and_check_names() {
        assert_eq!(node_states(&p("")).expect("all").len(), 8);
        assert_eq!(
            node_states(&p("states=running,LOST")).expect("two"),
            [NodeState::Running, NodeState::Lost].into_iter().collect()
        );
        let e = node_states(&p("states=RUNNING,gone")).expect_err("bad");
        assert_eq!(
            e.message,
            "No enum constant org.apache.hadoop.yarn.api.records.NodeState.GONE"
        );
        assert_eq!(e.status, StatusCode::BAD_REQUEST);
    }

    #[test]
    fn statistics_take_at_most_one_type() {
        let (states, ty) = statistics_query(&p("")).expect("defaults");
        assert_eq!(states.len(), 8);
        assert_eq!(ty, None);
        let (states, ty) =
            statistics_query(&p("states=running&applicationTypes=YARN")).expect("one");
        assert_eq!(states, [AppState::Running].into_iter().collect());
        assert_eq!(ty.as_deref(), Some("yarn"));
        let e = statistics_query(&p("applicationTypes=a,b")).expect_err("two types");
        assert_eq!(
            e.message,
            "# of applicationTypes = 2, we temporarily support at most one applicationType"
        );
    }
}
