//! The DAG model: vertices, edges, validation, topological helpers and the
//! vertex priority schemes of `mr3.vertex.priority.scheme`.
//!
//! A [`DagSpec`] is what a client submits: named vertices, each with a task
//! count, the memory and cores one task needs, a command template and an
//! optional priority, and edges between vertices that are either
//! one-to-one (task *i* of the consumer reads only task *i* of the
//! producer) or all-to-all (every consumer task reads every producer
//! task). [`DagSpec::validate`] turns it into a [`Dag`]: names unique,
//! every edge between known vertices, no cycle, one-to-one edges only
//! between vertices with equal task counts, every size within
//! [`DagLimits`].
//!
//! # Priorities
//!
//! As in MR3 (and Tez before it), a **lower number is a higher priority**:
//! priority 0 runs first. [`vertex_priorities`] computes the priority of
//! every vertex under a [`VertexPriorityScheme`]. The seed only names the
//! schemes and says their precise definition is subtle for DAGs that are
//! not trees; the definitions chosen here, and why, are documented on each
//! variant. All of them except `intact` share one property the task
//! scheduler relies on: a producer always has a strictly higher priority
//! (smaller number) than its consumers, so priority order is a
//! topological order.

use std::collections::BTreeMap;
use std::fmt;

// The limits and the priority scheme are configuration; DAG errors are shared
// with the cores' errors.
pub use crate::config::{DagLimits, VertexPriorityScheme};
pub use crate::types::DagError;
use crate::types::{DagId, Resource};

/// The top of the range `normalize` maps priorities into:
/// 2^4 * 3^2 * 5 * 7 * 11 * 13 * 17, a highly composite number, so that it
/// divides evenly into any number of levels up to 18 (and many more).
pub const NORMALIZE_MAX: u32 = 12_252_240;

/// How two vertices are connected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EdgeKind {
    /// Consumer task *i* reads producer task *i* only; both vertices must
    /// have the same number of tasks. A consumer task becomes ready as
    /// soon as its own producer task has succeeded.
    OneToOne,
    /// Every consumer task reads the output of every producer task (a
    /// shuffle). Consumer tasks become ready when the whole producer
    /// vertex has succeeded.
    AllToAll,
}

impl EdgeKind {
    pub fn name(self) -> &'static str {
        match self {
            EdgeKind::OneToOne => "one-to-one",
            EdgeKind::AllToAll => "all-to-all",
        }
    }
}

impl fmt::Display for EdgeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A vertex as submitted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VertexSpec {
    /// Unique within the DAG.
    pub name: String,
    /// Number of tasks, at least 1.
    pub tasks: u32,
    /// What one task needs on a worker. Memory must be positive.
    pub resource: Resource,
    /// The command a worker runs for one task attempt. `{dag}`, `{vertex}`,
    /// `{task}` and `{attempt}` are replaced by [`Dag::render_command`];
    /// any other brace text (such as a shell's `${HOME}`) is left alone.
    pub command: String,
    /// Used by the `intact` and `normalize` schemes (lower runs first).
    pub priority: Option<u32>,
}

impl VertexSpec {
    pub fn new(name: impl Into<String>, tasks: u32, resource: Resource) -> VertexSpec {
        VertexSpec {
            name: name.into(),
            tasks,
            resource,
            command: String::new(),
            priority: None,
        }
    }

    pub fn with_command(mut self, command: impl Into<String>) -> VertexSpec {
        self.command = command.into();
        self
    }

    pub fn with_priority(mut self, priority: u32) -> VertexSpec {
        self.priority = Some(priority);
        self
    }
}

/// An edge as submitted, by vertex names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EdgeSpec {
    pub from: String,
    pub to: String,
    pub kind: EdgeKind,
}

impl EdgeSpec {
    pub fn new(from: impl Into<String>, to: impl Into<String>, kind: EdgeKind) -> EdgeSpec {
        EdgeSpec {
            from: from.into(),
            to: to.into(),
            kind,
        }
    }
}

/// A DAG as submitted by a client.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DagSpec {
    pub name: String,
    pub vertices: Vec<VertexSpec>,
    pub edges: Vec<EdgeSpec>,
}

impl DagSpec {
    pub fn new(name: impl Into<String>) -> DagSpec {
        DagSpec {
            name: name.into(),
            vertices: Vec::new(),
            edges: Vec::new(),
        }
    }

    pub fn vertex(mut self, vertex: VertexSpec) -> DagSpec {
        self.vertices.push(vertex);
        self
    }

    pub fn edge(mut self, from: &str, to: &str, kind: EdgeKind) -> DagSpec {
        self.edges.push(EdgeSpec::new(from, to, kind));
        self
    }

    /// Checks the spec and builds the indexed [`Dag`].
    pub fn validate(&self, limits: &DagLimits) -> Result<Dag, DagError> {
        Dag::build(self, limits)
    }
}

/// A validated vertex.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Vertex {
    pub name: String,
    pub tasks: u32,
    pub resource: Resource,
    pub command: String,
    pub priority: Option<u32>,
    /// Indexes into [`Dag::edges`] of the edges ending here, in declaration
    /// order.
    pub inputs: Vec<u32>,
    /// Indexes into [`Dag::edges`] of the edges starting here, in
    /// declaration order.
    pub outputs: Vec<u32>,
}

impl Vertex {
    /// A root reads only external input data: it has no incoming edge.
    pub fn is_root(&self) -> bool {
        self.inputs.is_empty()
    }

    /// A leaf produces the DAG's output: it has no outgoing edge.
    pub fn is_leaf(&self) -> bool {
        self.outputs.is_empty()
    }
}

/// A validated edge, by vertex index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Edge {
    pub from: u32,
    pub to: u32,
    pub kind: EdgeKind,
}

/// A validated, indexed DAG. Vertices keep their declaration order; that
/// order is the tie-break everywhere a choice between vertices is made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dag {
    name: String,
    vertices: Vec<Vertex>,
    edges: Vec<Edge>,
    by_name: BTreeMap<String, u32>,
    topo: Vec<u32>,
    total_tasks: u64,
}

fn check_name(dag: &str, what: &'static str, name: &str, max_bytes: usize) -> Result<(), DagError> {
    let reason = if name.is_empty() {
        Some("it is empty".to_string())
    } else if name.len() > max_bytes {
        Some(format!("it is {} bytes long, over {max_bytes}", name.len()))
    } else if name.chars().any(char::is_control) {
        Some("it contains control characters".to_string())
    } else if name.trim() != name {
        Some("it has leading or trailing whitespace".to_string())
    } else {
        None
    };
    match reason {
        Some(reason) => Err(DagError::InvalidName {
            dag: dag.to_string(),
            what,
            name: name.to_string(),
            reason,
        }),
        None => Ok(()),
    }
}

impl Dag {
    fn build(spec: &DagSpec, limits: &DagLimits) -> Result<Dag, DagError> {
        let dag = spec.name.as_str();
        check_name(dag, "DAG", dag, limits.max_name_bytes)?;
        if spec.vertices.is_empty() {
            return Err(DagError::NoVertices {
                dag: dag.to_string(),
            });
        }
        let too_large = |what: &'static str, value: u64, limit: u64| {
            if value > limit {
                Err(DagError::TooLarge {
                    dag: dag.to_string(),
                    what,
                    value,
                    limit,
                })
            } else {
                Ok(())
            }
        };
        too_large(
            "vertices",
            spec.vertices.len() as u64,
            u64::from(limits.max_vertices),
        )?;
        too_large(
            "edges",
            spec.edges.len() as u64,
            u64::from(limits.max_edges),
        )?;

        let mut by_name = BTreeMap::new();
        let mut vertices = Vec::with_capacity(spec.vertices.len());
        let mut total_tasks: u64 = 0;
        for (i, v) in spec.vertices.iter().enumerate() {
            check_name(dag, "vertex", &v.name, limits.max_name_bytes)?;
            if v.tasks == 0 {
                return Err(DagError::NoTasks {
                    dag: dag.to_string(),
                    vertex: v.name.clone(),
                });
            }
            too_large(
                "tasks per vertex",
                u64::from(v.tasks),
                u64::from(limits.max_tasks_per_vertex),
            )?;
            if v.resource.memory_mb == 0 {
                return Err(DagError::NoMemory {
                    dag: dag.to_string(),
                    vertex: v.name.clone(),
                });
            }
            too_large(
                "command bytes",
                v.command.len() as u64,
                limits.max_command_bytes as u64,
            )?;
            total_tasks += u64::from(v.tasks);
            // Index fits: vertex count is bounded by a u32 limit above.
            let index = i as u32;
            if by_name.insert(v.name.clone(), index).is_some() {
                return Err(DagError::DuplicateVertex {
                    dag: dag.to_string(),
                    vertex: v.name.clone(),
                });
            }
            vertices.push(Vertex {
                name: v.name.clone(),
                tasks: v.tasks,
                resource: v.resource,
                command: v.command.clone(),
                priority: v.priority,
                inputs: Vec::new(),
                outputs: Vec::new(),
            });
        }
        too_large("tasks per DAG", total_tasks, limits.max_tasks_per_dag)?;

        let mut edges = Vec::with_capacity(spec.edges.len());
        let mut seen = BTreeMap::new();
        for e in &spec.edges {
            let lookup = |name: &str| {
                by_name
                    .get(name)
                    .copied()
                    .ok_or_else(|| DagError::UnknownVertex {
                        dag: dag.to_string(),
                        from: e.from.clone(),
                        to: e.to.clone(),
                        unknown: name.to_string(),
                    })
            };
            let from = lookup(&e.from)?;
            let to = lookup(&e.to)?;
            if from == to {
                return Err(DagError::Cycle {
                    dag: dag.to_string(),
                    cycle: vec![e.from.clone(), e.to.clone()],
                });
            }
            if seen.insert((from, to), ()).is_some() {
                return Err(DagError::DuplicateEdge {
                    dag: dag.to_string(),
                    from: e.from.clone(),
                    to: e.to.clone(),
                });
            }
            let (ft, tt) = (vertices[from as usize].tasks, vertices[to as usize].tasks);
            if e.kind == EdgeKind::OneToOne && ft != tt {
                return Err(DagError::OneToOneMismatch {
                    dag: dag.to_string(),
                    from: e.from.clone(),
                    to: e.to.clone(),
                    from_tasks: ft,
                    to_tasks: tt,
                });
            }
            let index = edges.len() as u32;
            vertices[from as usize].outputs.push(index);
            vertices[to as usize].inputs.push(index);
            edges.push(Edge {
                from,
                to,
                kind: e.kind,
            });
        }

        let topo = topological_order(&vertices, &edges).map_err(|cycle| DagError::Cycle {
            dag: dag.to_string(),
            cycle: cycle
                .into_iter()
                .map(|v| vertices[v as usize].name.clone())
                .collect(),
        })?;

        Ok(Dag {
            name: spec.name.clone(),
            vertices,
            edges,
            by_name,
            topo,
            total_tasks,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn vertices(&self) -> &[Vertex] {
        &self.vertices
    }

    pub fn vertex(&self, index: u32) -> Option<&Vertex> {
        self.vertices.get(index as usize)
    }

    pub fn vertex_index(&self, name: &str) -> Option<u32> {
        self.by_name.get(name).copied()
    }

    pub fn edges(&self) -> &[Edge] {
        &self.edges
    }

    pub fn total_tasks(&self) -> u64 {
        self.total_tasks
    }

    /// Every vertex once, producers before consumers; among vertices
    /// ready at the same time, the one declared first comes first.
    pub fn topological_order(&self) -> &[u32] {
        &self.topo
    }

    /// Vertices with no incoming edge, in declaration order.
    pub fn roots(&self) -> Vec<u32> {
        (0..self.vertices.len() as u32)
            .filter(|&v| self.vertices[v as usize].is_root())
            .collect()
    }

    /// Vertices with no outgoing edge, in declaration order.
    pub fn leaves(&self) -> Vec<u32> {
        (0..self.vertices.len() as u32)
            .filter(|&v| self.vertices[v as usize].is_leaf())
            .collect()
    }

    /// The producer of every incoming edge of `vertex`, with the edge kind,
    /// in edge declaration order.
    pub fn producers(&self, vertex: u32) -> impl Iterator<Item = (u32, EdgeKind)> + '_ {
        self.vertices[vertex as usize]
            .inputs
            .iter()
            .map(move |&e| (self.edges[e as usize].from, self.edges[e as usize].kind))
    }

    /// The consumer of every outgoing edge of `vertex`, with the edge kind,
    /// in edge declaration order.
    pub fn consumers(&self, vertex: u32) -> impl Iterator<Item = (u32, EdgeKind)> + '_ {
        self.vertices[vertex as usize]
            .outputs
            .iter()
            .map(move |&e| (self.edges[e as usize].to, self.edges[e as usize].kind))
    }

    /// For every vertex, the length of the longest path from any root to it
    /// (roots are 0). The longest rather than the shortest path, so that a
    /// consumer is always deeper than each of its producers.
    pub fn depth_from_roots(&self) -> Vec<u32> {
        let mut depth = vec![0u32; self.vertices.len()];
        for &v in &self.topo {
            for (p, _) in self.producers(v) {
                depth[v as usize] = depth[v as usize].max(depth[p as usize] + 1);
            }
        }
        depth
    }

    /// For every vertex, the length of the longest path from it to any leaf
    /// (leaves are 0).
    pub fn height_to_leaves(&self) -> Vec<u32> {
        let mut height = vec![0u32; self.vertices.len()];
        for &v in self.topo.iter().rev() {
            for (c, _) in self.consumers(v) {
                height[v as usize] = height[v as usize].max(height[c as usize] + 1);
            }
        }
        height
    }

    /// The command of one attempt: the vertex's template with `{dag}` (the
    /// DAG id's number), `{dag_name}`, `{vertex}` (the vertex name),
    /// `{task}` (index from 0) and `{attempt}` (from 1) substituted. Other
    /// text, braces included, is copied as is.
    pub fn render_command(&self, dag_id: DagId, vertex: u32, task: u32, attempt: u32) -> String {
        let Some(v) = self.vertices.get(vertex as usize) else {
            return String::new();
        };
        let mut out = String::with_capacity(v.command.len() + 16);
        let mut rest = v.command.as_str();
        while let Some(start) = rest.find('{') {
            out.push_str(&rest[..start]);
            let tail = &rest[start..];
            let replaced = [
                ("{dag}", dag_id.0.to_string()),
                ("{dag_name}", self.name.clone()),
                ("{vertex}", v.name.clone()),
                ("{task}", task.to_string()),
                ("{attempt}", attempt.to_string()),
            ]
            .into_iter()
            .find(|(key, _)| tail.starts_with(key));
            match replaced {
                Some((key, value)) => {
                    out.push_str(&value);
                    rest = &tail[key.len()..];
                }
                None => {
                    out.push('{');
                    rest = &tail[1..];
                }
            }
        }
        out.push_str(rest);
        out
    }
}

/// Kahn's algorithm, taking the lowest-indexed ready vertex first. On a
/// cycle, returns one cycle (vertex indexes, first vertex repeated last).
fn topological_order(vertices: &[Vertex], edges: &[Edge]) -> Result<Vec<u32>, Vec<u32>> {
    let n = vertices.len();
    let mut missing: Vec<usize> = vertices.iter().map(|v| v.inputs.len()).collect();
    let mut ready: std::collections::BTreeSet<u32> = (0..n as u32)
        .filter(|&v| missing[v as usize] == 0)
        .collect();
    let mut order = Vec::with_capacity(n);
    while let Some(v) = ready.pop_first() {
        order.push(v);
        for &e in &vertices[v as usize].outputs {
            let to = edges[e as usize].to as usize;
            missing[to] -= 1;
            if missing[to] == 0 {
                ready.insert(to as u32);
            }
        }
    }
    if order.len() == n {
        return Ok(order);
    }
    // Every vertex left has an unprocessed producer that is also left: walk
    // backwards along such producers until a vertex repeats.
    let left: Vec<bool> = missing.iter().map(|&m| m > 0).collect();
    let start = left.iter().position(|&l| l).unwrap_or(0);
    let mut walk = vec![start as u32];
    let mut position = BTreeMap::new();
    position.insert(start as u32, 0usize);
    let mut current = start as u32;
    loop {
        let Some(producer) = vertices[current as usize]
            .inputs
            .iter()
            .map(|&e| edges[e as usize].from)
            .find(|&p| left[p as usize])
        else {
            // Cannot happen for a vertex left over by Kahn's algorithm; fall
            // back to naming the vertices involved.
            return Err(walk);
        };
        if let Some(&at) = position.get(&producer) {
            // `walk` follows edges backwards; reverse it to follow them
            // forwards and start at the lowest index for a stable message.
            let mut cycle: Vec<u32> = walk[at..].to_vec();
            cycle.reverse();
            let lowest = (0..cycle.len()).min_by_key(|&i| cycle[i]).unwrap_or(0);
            cycle.rotate_left(lowest);
            cycle.push(cycle[0]);
            return Err(cycle);
        }
        position.insert(producer, walk.len());
        walk.push(producer);
        current = producer;
    }
}

/// The priority of every vertex of `dag` (indexed like
/// [`Dag::vertices`]) under `scheme`. Lower runs first.
pub fn vertex_priorities(dag: &Dag, scheme: VertexPriorityScheme) -> Vec<u32> {
    match scheme {
        VertexPriorityScheme::Intact => intact(dag),
        VertexPriorityScheme::Roots => dag.depth_from_roots(),
        VertexPriorityScheme::Leaves => {
            let height = dag.height_to_leaves();
            let top = height.iter().copied().max().unwrap_or(0);
            height.into_iter().map(|h| top - h).collect()
        }
        VertexPriorityScheme::Postorder => postorder(dag),
        VertexPriorityScheme::Normalize => normalize(&intact(dag)),
    }
}

fn intact(dag: &Dag) -> Vec<u32> {
    let depth = dag.depth_from_roots();
    dag.vertices
        .iter()
        .zip(depth)
        .map(|(v, d)| v.priority.unwrap_or(d))
        .collect()
}

fn postorder(dag: &Dag) -> Vec<u32> {
    const UNSET: u32 = u32::MAX;
    let n = dag.vertices.len();
    let mut number = vec![UNSET; n];
    let mut visited = vec![false; n];
    let mut next = 0u32;
    for leaf in dag.leaves() {
        if visited[leaf as usize] {
            continue;
        }
        // Iterative DFS: (vertex, index of the next input edge to follow).
        let mut stack: Vec<(u32, usize)> = vec![(leaf, 0)];
        visited[leaf as usize] = true;
        while let Some(top) = stack.last_mut() {
            let (v, i) = *top;
            let inputs = &dag.vertices[v as usize].inputs;
            if i < inputs.len() {
                top.1 += 1;
                let p = dag.edges[inputs[i] as usize].from;
                if !visited[p as usize] {
                    visited[p as usize] = true;
                    stack.push((p, 0));
                }
            } else {
                number[v as usize] = next;
                next += 1;
                stack.pop();
            }
        }
    }
    // Every vertex reaches some leaf in a finite DAG, so all are numbered.
    debug_assert!(number.iter().all(|&x| x != UNSET));
    number
}

/// Dense-rank normalisation into `0..=NORMALIZE_MAX`; see
/// [`VertexPriorityScheme::Normalize`].
pub fn normalize(priorities: &[u32]) -> Vec<u32> {
    let mut levels: Vec<u32> = priorities.to_vec();
    levels.sort_unstable();
    levels.dedup();
    let steps = levels.len().saturating_sub(1) as u64;
    priorities
        .iter()
        .map(|p| {
            if steps == 0 {
                return 0;
            }
            // `p` comes from `priorities`, so it is among the levels.
            let rank = levels.binary_search(p).unwrap_or(0) as u64;
            // rank <= steps, so the result is at most NORMALIZE_MAX.
            (rank * u64::from(NORMALIZE_MAX) / steps) as u32
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r() -> Resource {
        Resource::new(1024, 1)
    }

    fn v(name: &str, tasks: u32) -> VertexSpec {
        VertexSpec::new(name, tasks, r())
    }

    /// A DAG shaped like a typical Hive query: two scans joined, an
    /// aggregation, and a side scan feeding the final vertex.
    ///
    /// ```text
    ///   m1   m2
    ///     \ /
    ///     r1     m3
    ///      \    /
    ///       r2
    /// ```
    fn query_like() -> Dag {
        DagSpec::new("q")
            .vertex(v("m1", 4))
            .vertex(v("m2", 4))
            .vertex(v("r1", 2))
            .vertex(v("m3", 3))
            .vertex(v("r2", 1))
            .edge("m1", "r1", EdgeKind::AllToAll)
            .edge("m2", "r1", EdgeKind::AllToAll)
            .edge("r1", "r2", EdgeKind::AllToAll)
            .edge("m3", "r2", EdgeKind::AllToAll)
            .validate(&DagLimits::default())
            .expect("valid")
    }

    #[test]
    fn validation_errors_name_the_problem() {
        let limits = DagLimits::default();
        let dup = DagSpec::new("d").vertex(v("a", 1)).vertex(v("a", 2));
        assert_eq!(
            dup.validate(&limits)
                .expect_err("must be refused")
                .to_string(),
            "DAG 'd': vertex 'a' is declared twice"
        );
        let cyc = DagSpec::new("d")
            .vertex(v("a", 1))
            .vertex(v("b", 1))
            .vertex(v("c", 1))
            .edge("a", "b", EdgeKind::AllToAll)
            .edge("b", "c", EdgeKind::AllToAll)
            .edge("c", "b", EdgeKind::AllToAll);
        assert_eq!(
            cyc.validate(&limits)
                .expect_err("must be refused")
                .to_string(),
            "DAG 'd' has a cycle: b -> c -> b"
        );
        let selfloop = DagSpec::new("d")
            .vertex(v("a", 1))
            .edge("a", "a", EdgeKind::OneToOne);
        assert!(matches!(
            selfloop.validate(&limits),
            Err(DagError::Cycle { .. })
        ));
        let mismatch = DagSpec::new("d").vertex(v("a", 2)).vertex(v("b", 3)).edge(
            "a",
            "b",
            EdgeKind::OneToOne,
        );
        assert_eq!(
            mismatch
                .validate(&limits)
                .expect_err("must be refused")
                .to_string(),
            "DAG 'd': one-to-one edge a -> b joins vertices with different task counts (2 and 3); \
             one-to-one edges need equal counts"
        );
        let unknown = DagSpec::new("d")
            .vertex(v("a", 1))
            .edge("a", "zz", EdgeKind::AllToAll);
        assert!(matches!(
            unknown.validate(&limits),
            Err(DagError::UnknownVertex { unknown, .. }) if unknown == "zz"
        ));
        let dup_edge = DagSpec::new("d")
            .vertex(v("a", 1))
            .vertex(v("b", 1))
            .edge("a", "b", EdgeKind::AllToAll)
            .edge("a", "b", EdgeKind::OneToOne);
        assert!(matches!(
            dup_edge.validate(&limits),
            Err(DagError::DuplicateEdge { .. })
        ));
        assert!(matches!(
            DagSpec::new("d").vertex(v("a", 0)).validate(&limits),
            Err(DagError::NoTasks { .. })
        ));
        assert!(matches!(
            DagSpec::new("d")
                .vertex(VertexSpec::new("a", 1, Resource::new(0, 1)))
                .validate(&limits),
            Err(DagError::NoMemory { .. })
        ));
        assert!(matches!(
            DagSpec::new("d").validate(&limits),
            Err(DagError::NoVertices { .. })
        ));
        assert!(matches!(
            DagSpec::new("").vertex(v("a", 1)).validate(&limits),
            Err(DagError::InvalidName { .. })
        ));
        let small = DagLimits {
            max_tasks_per_vertex: 3,
            ..limits
        };
        assert_eq!(
            DagSpec::new("d")
                .vertex(v("a", 4))
                .validate(&small)
                .expect_err("must be refused")
                .to_string(),
            "DAG 'd': tasks per vertex = 4 is over the limit of 3"
        );
    }

    #[test]
    fn topological_helpers() {
        let d = query_like();
        assert_eq!(d.topological_order(), &[0, 1, 2, 3, 4]);
        assert_eq!(d.roots(), vec![0, 1, 3]);
        assert_eq!(d.leaves(), vec![4]);
        assert_eq!(d.depth_from_roots(), vec![0, 0, 1, 0, 2]);
        assert_eq!(d.height_to_leaves(), vec![2, 2, 1, 1, 0]);
        assert_eq!(
            d.producers(4).collect::<Vec<_>>(),
            vec![(2, EdgeKind::AllToAll), (3, EdgeKind::AllToAll)]
        );
        assert_eq!(d.vertex_index("r1"), Some(2));
        assert_eq!(d.total_tasks(), 14);
    }

    #[test]
    fn topological_order_prefers_declaration_order() {
        let d = DagSpec::new("d")
            .vertex(v("late", 1))
            .vertex(v("early", 1))
            .edge("early", "late", EdgeKind::AllToAll)
            .validate(&DagLimits::default())
            .expect("valid");
        assert_eq!(d.topological_order(), &[1, 0]);
    }

    #[test]
    fn priority_schemes_on_a_query_shaped_dag() {
        let d = query_like();
        use VertexPriorityScheme::*;
        // Vertex order: m1 m2 r1 m3 r2.
        assert_eq!(vertex_priorities(&d, Intact), vec![0, 0, 1, 0, 2]);
        assert_eq!(vertex_priorities(&d, Roots), vec![0, 0, 1, 0, 2]);
        // m3 is one step from the leaf, so it waits until r1's level.
        assert_eq!(vertex_priorities(&d, Leaves), vec![0, 0, 1, 1, 2]);
        // Walk from r2: r1 (m1, m2 first), then m3, then r2.
        assert_eq!(vertex_priorities(&d, Postorder), vec![0, 1, 2, 3, 4]);
        assert_eq!(
            vertex_priorities(&d, Normalize),
            vec![0, 0, 6_126_120, 0, 12_252_240]
        );
    }

    #[test]
    fn intact_keeps_given_priorities() {
        let d = DagSpec::new("d")
            .vertex(v("a", 1).with_priority(30))
            .vertex(v("b", 1).with_priority(7))
            .edge("a", "b", EdgeKind::AllToAll)
            .validate(&DagLimits::default())
            .expect("valid");
        assert_eq!(
            vertex_priorities(&d, VertexPriorityScheme::Intact),
            vec![30, 7]
        );
        assert_eq!(
            vertex_priorities(&d, VertexPriorityScheme::Normalize),
            vec![NORMALIZE_MAX, 0]
        );
    }

    #[test]
    fn normalize_is_exact_for_up_to_nineteen_levels() {
        assert_eq!(NORMALIZE_MAX, 16 * 9 * 5 * 7 * 11 * 13 * 17);
        assert_eq!(normalize(&[5, 5, 5]), vec![0, 0, 0]);
        assert_eq!(normalize(&[]), Vec::<u32>::new());
        for k in 2..=19u32 {
            let input: Vec<u32> = (0..k).map(|i| i * 3 + 3).collect();
            let out = normalize(&input);
            assert_eq!(out[0], 0);
            assert_eq!(*out.last().expect("non-empty"), NORMALIZE_MAX);
            let step = NORMALIZE_MAX / (k - 1);
            assert_eq!(step * (k - 1), NORMALIZE_MAX, "{k} levels divide evenly");
            for (i, o) in out.iter().enumerate() {
                assert_eq!(*o, i as u32 * step);
            }
        }
    }

    #[test]
    fn postorder_gives_distinct_priorities_in_topological_order() {
        // A diamond with an extra leaf.
        let d = DagSpec::new("d")
            .vertex(v("a", 1))
            .vertex(v("b", 1))
            .vertex(v("c", 1))
            .vertex(v("d", 1))
            .vertex(v("e", 1))
            .edge("a", "b", EdgeKind::AllToAll)
            .edge("a", "c", EdgeKind::AllToAll)
            .edge("b", "d", EdgeKind::AllToAll)
            .edge("c", "d", EdgeKind::AllToAll)
            .edge("c", "e", EdgeKind::AllToAll)
            .validate(&DagLimits::default())
            .expect("valid");
        let p = vertex_priorities(&d, VertexPriorityScheme::Postorder);
        // d first (leaf declared first): a, b, c, d; then e.
        assert_eq!(p, vec![0, 1, 2, 3, 4]);
        let mut sorted = p.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), p.len());
    }

    #[test]
    fn render_command_substitutes_known_placeholders_only() {
        let d = DagSpec::new("etl")
            .vertex(v("map", 2).with_command(
                "run {dag_name}/{vertex} --task {task} --try {attempt} dag={dag} ${HOME} {x",
            ))
            .validate(&DagLimits::default())
            .expect("valid");
        assert_eq!(
            d.render_command(DagId(7), 0, 1, 2),
            "run etl/map --task 1 --try 2 dag=7 ${HOME} {x"
        );
    }
}
