//! The DAG file a client submits (YAML, or JSON, which YAML reads too) and
//! its mapping onto the core's [`DagSpec`].
//!
//! ```yaml
//! name: wordcount
//! queue: high                 # optional: mr3.dag.queue.name (capacity scheduling)
//! group:                      # optional: the ContainerGroup (default: the session's)
//!   name: big-workers
//!   worker_memory_mb: 2048
//!   worker_vcores: 2
//!   properties:               # optional: strings; merged only with equal properties
//!     team: analytics
//! vertices:
//!   - name: map
//!     tasks: 3
//!     memory_mb: 256
//!     vcores: 1
//!     command: "tr -s ' ' '\\n' < /data/in-{task}.txt > $SPINDLE_OUTPUT_DIR/words"
//!     priority: 0             # optional; lower runs first
//!   - name: reduce
//!     tasks: 1
//!     memory_mb: 256
//!     command: "cat $SPINDLE_INPUT_DIR/map/*/words | sort | uniq -c > /data/counts"
//! edges:
//!   - from: map
//!     to: reduce
//!     kind: all-to-all        # or one-to-one
//! ```
//!
//! Unknown fields are errors, so a misspelt key is reported rather than
//! silently ignored.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use spindle_dag::container_scheduler::GroupSpec;
use spindle_dag::dag::{DagSpec, EdgeKind, VertexSpec};
use spindle_dag::Resource;

/// Largest DAG file read from disk (the AM bounds what it accepts again).
pub const MAX_DAG_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// A DAG as written in a DAG file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DagFile {
    pub name: String,
    /// The capacity queue (`mr3.dag.queue.name`); `--dag-queue` overrides it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<String>,
    /// The ContainerGroup the DAG runs in; the session's default group when
    /// absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<GroupFile>,
    pub vertices: Vec<VertexFile>,
    #[serde(default)]
    pub edges: Vec<EdgeFile>,
}

/// A ContainerGroup as a DAG file names it. DAGs naming the same group
/// share it (the group is merged) only when the worker size and every
/// property match; while a group of that name exists, a DAG giving it
/// another size or other properties is refused. Groups whose workers have
/// the same size may exchange workers, whatever their properties.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupFile {
    pub name: String,
    pub worker_memory_mb: u64,
    #[serde(default = "one")]
    pub worker_vcores: u32,
    /// The group's other properties (`key: value` strings). Spindle gives
    /// them no meaning of its own: they only decide, with the name and the
    /// worker size, whether two DAGs share a group.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub properties: BTreeMap<String, String>,
}

impl GroupFile {
    /// The core's view of the group.
    pub fn to_spec(&self) -> GroupSpec {
        let mut spec = GroupSpec::new(
            self.name.clone(),
            Resource::new(self.worker_memory_mb, self.worker_vcores),
        );
        spec.properties = self.properties.clone();
        spec
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VertexFile {
    pub name: String,
    pub tasks: u32,
    pub memory_mb: u64,
    #[serde(default = "one")]
    pub vcores: u32,
    /// A shell command template: `{dag}`, `{dag_name}`, `{vertex}`, `{task}`
    /// and `{attempt}` are substituted.
    pub command: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<u32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum EdgeKindFile {
    #[serde(rename = "one-to-one")]
    OneToOne,
    #[serde(rename = "all-to-all")]
    AllToAll,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EdgeFile {
    pub from: String,
    pub to: String,
    pub kind: EdgeKindFile,
}

fn one() -> u32 {
    1
}

impl DagFile {
    /// Parses a DAG file's text (YAML or JSON). `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<DagFile, String> {
        serde_norway::from_str(text).map_err(|e| format!("{origin}: not a valid DAG file: {e}"))
    }

    /// Reads and parses a DAG file.
    pub fn read(path: &Path) -> Result<DagFile, String> {
        let shown = path.display();
        let meta = std::fs::metadata(path).map_err(|e| format!("cannot read {shown}: {e}"))?;
        if meta.len() > MAX_DAG_FILE_BYTES {
            return Err(format!(
                "{shown} is {} bytes; DAG files are limited to {MAX_DAG_FILE_BYTES} bytes",
                meta.len()
            ));
        }
        let text =
            std::fs::read_to_string(path).map_err(|e| format!("cannot read {shown}: {e}"))?;
        DagFile::parse(&text, &shown.to_string())
    }

    /// The core's view of the DAG (validated later, by the AM's core).
    pub fn to_spec(&self) -> DagSpec {
        let mut spec = DagSpec::new(self.name.clone());
        for v in &self.vertices {
            let mut vs = VertexSpec::new(
                v.name.clone(),
                v.tasks,
                Resource::new(v.memory_mb, v.vcores),
            )
            .with_command(v.command.clone());
            if let Some(p) = v.priority {
                vs = vs.with_priority(p);
            }
            spec = spec.vertex(vs);
        }
        for e in &self.edges {
            let kind = match e.kind {
                EdgeKindFile::OneToOne => EdgeKind::OneToOne,
                EdgeKindFile::AllToAll => EdgeKind::AllToAll,
            };
            spec = spec.edge(&e.from, &e.to, kind);
        }
        spec
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use spindle_dag::dag::DagLimits;

    const DIAMOND: &str = r#"
name: diamond
queue: high
vertices:
  - name: a
    tasks: 2
    memory_mb: 256
    command: "echo {task} > $SPINDLE_OUTPUT_DIR/out"
  - name: b
    tasks: 2
    memory_mb: 256
    vcores: 2
    command: "cat $SPINDLE_INPUT_DIR/a/*/out > $SPINDLE_OUTPUT_DIR/out"
    priority: 3
  - name: c
    tasks: 2
    memory_mb: 256
    command: "true"
  - name: d
    tasks: 1
    memory_mb: 512
    command: "true"
edges:
  - {from: a, to: b, kind: one-to-one}
  - {from: a, to: c, kind: one-to-one}
  - {from: b, to: d, kind: all-to-all}
  - {from: c, to: d, kind: all-to-all}
"#;

    #[test]
    fn a_yaml_dag_maps_onto_the_core_spec() {
        let file = DagFile::parse(DIAMOND, "diamond.yaml").expect("parses");
        assert_eq!(file.queue.as_deref(), Some("high"));
        let spec = file.to_spec();
        assert_eq!(spec.vertices.len(), 4);
        assert_eq!(spec.vertices[1].resource, Resource::new(256, 2));
        assert_eq!(spec.vertices[1].priority, Some(3));
        assert_eq!(spec.vertices[0].resource.vcores, 1, "vcores default to 1");
        assert_eq!(spec.edges[2].kind, EdgeKind::AllToAll);
        let dag = spec.validate(&DagLimits::default()).expect("valid");
        assert_eq!(dag.roots(), vec![0]);
        assert_eq!(dag.leaves(), vec![3]);
    }

    #[test]
    fn a_group_may_carry_properties() {
        let text = "name: g\ngroup:\n  name: big\n  worker_memory_mb: 2048\n  properties:\n    team: analytics\n    image: \"v2\"\nvertices: []\n";
        let file = DagFile::parse(text, "g.yaml").expect("parses");
        let group = file.group.as_ref().expect("a group");
        let spec = group.to_spec();
        assert_eq!(spec.name, "big");
        assert_eq!(spec.worker_resource, Resource::new(2048, 1));
        assert_eq!(
            spec.properties,
            BTreeMap::from([
                ("image".to_string(), "v2".to_string()),
                ("team".to_string(), "analytics".to_string())
            ])
        );
        let json = serde_json::to_string(&file).expect("serialises");
        assert_eq!(DagFile::parse(&json, "g.json").expect("parses"), file);
        // Without properties, none are serialised.
        let plain = DagFile::parse(
            "name: g\ngroup: {name: big, worker_memory_mb: 2048}\nvertices: []\n",
            "p.yaml",
        )
        .expect("parses");
        let json = serde_json::to_string(&plain).expect("serialises");
        assert!(!json.contains("properties"), "{json}");
        let err = DagFile::parse(
            "name: g\ngroup: {name: big, worker_memory_mb: 2048, properties: [a]}\nvertices: []\n",
            "bad.yaml",
        )
        .expect_err("a list is not a map");
        assert!(err.starts_with("bad.yaml: "), "{err}");
    }

    #[test]
    fn json_is_read_too_and_round_trips() {
        let file = DagFile::parse(DIAMOND, "d").expect("parses");
        let json = serde_json::to_string(&file).expect("serialises");
        let back = DagFile::parse(&json, "d.json").expect("JSON parses as YAML");
        assert_eq!(back, file);
    }

    #[test]
    fn mistakes_are_reported_with_the_file_name() {
        let err = DagFile::parse("name: x\nvertices: []\nedgez: []\n", "bad.yaml")
            .expect_err("unknown field");
        assert!(err.starts_with("bad.yaml: "), "{err}");
        assert!(err.contains("edgez"), "{err}");
        let err = DagFile::parse(
            "name: x\nvertices: []\nedges: [{from: a, to: b, kind: many-to-many}]\n",
            "k.yaml",
        )
        .expect_err("unknown kind");
        assert!(err.contains("many-to-many"), "{err}");
    }
}

#[cfg(test)]
mod examples {
    use super::*;
    use spindle_dag::dag::DagLimits;

    /// Every example under `conf/dag/` reads and validates.
    #[test]
    fn the_shipped_examples_are_valid() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../conf/dag");
        let mut seen = 0;
        for entry in std::fs::read_dir(&dir).expect("conf/dag exists") {
            let path = entry.expect("entry").path();
            if path.extension().and_then(|e| e.to_str()) != Some("yaml") {
                continue;
            }
            let file = DagFile::read(&path).unwrap_or_else(|e| panic!("{e}"));
            if let Some(g) = &file.group {
                assert!(
                    file.vertices
                        .iter()
                        .all(|v| Resource::new(v.memory_mb, v.vcores)
                            .fits_in(&g.to_spec().worker_resource)),
                    "{}: a task larger than a worker of group {}",
                    path.display(),
                    g.name
                );
            }
            file.to_spec()
                .validate(&DagLimits::default())
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            seen += 1;
        }
        assert!(seen >= 3, "the word count, diamond and grouped examples");
    }
}
