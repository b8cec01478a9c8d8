//! The tool model and the catalog of every toolset in a workspace.
//!
//! Loaders (`native`, `openapi`, `toolbench`) turn protocol files into [`Tool`]s; the catalog
//! indexes them by toolset and name for the analysis, the CLI and the server. Loading is tolerant:
//! a problem in a protocol file becomes a [`Diagnostic`] located on that file and disables at most
//! the one operation it concerns.

pub mod bundle;
pub mod cache;
pub mod dataflow;
pub mod doc;
pub mod endpoint;
pub mod index;
pub mod loader;
pub mod mcp;
pub mod native;
pub mod openapi;
pub mod overlay;
pub mod refs;
pub mod required;
pub mod schema;
pub mod swagger;
pub mod toolbench;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;

use crate::diagnostic::Diagnostic;
use crate::text::ByteRange;

/// The texts of the protocol files that were read, for positions in diagnostics and definitions.
/// Loading (`workspace`) fills it and the probed overlay (`overlay`) adds its files to it.
pub type Texts = HashMap<PathBuf, Arc<str>>;

/// Where a parameter travels when the tool is called.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum ParamLocation {
    Path,
    Query,
    Header,
    Cookie,
    /// A member of the JSON (or form) request body.
    Body,
    /// An argument of a tool that is not HTTP (MCP, native without transport).
    Argument,
}

impl ParamLocation {
    pub fn as_str(self) -> &'static str {
        match self {
            ParamLocation::Path => "path",
            ParamLocation::Query => "query",
            ParamLocation::Header => "header",
            ParamLocation::Cookie => "cookie",
            ParamLocation::Body => "body",
            ParamLocation::Argument => "argument",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "path" => ParamLocation::Path,
            "query" => ParamLocation::Query,
            "header" => ParamLocation::Header,
            "cookie" => ParamLocation::Cookie,
            "body" => ParamLocation::Body,
            "argument" => ParamLocation::Argument,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Param {
    /// The Python keyword: a safe identifier (`person_id`, `from_`).
    pub name: String,
    /// The name on the wire, as the protocol spells it (`person-id`, `from`).
    pub wire_name: String,
    pub location: ParamLocation,
    pub required: bool,
    pub description: String,
    /// JSON Schema of the value (`{}` when the protocol says nothing).
    pub schema: Value,
    pub default: Option<Value>,
    pub example: Option<Value>,
}

#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Example {
    pub question: Option<String>,
    pub program: Option<String>,
    pub arguments: Option<Value>,
    pub response: Option<Value>,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Provenance {
    Declared,
    Probed { date: String, samples: u32 },
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Transport {
    /// `path` is the template relative to the toolset's base URL (`/person/{person_id}`).
    Http {
        method: String,
        path: String,
    },
    Mcp {
        tool: String,
    },
    Command {
        argv: Vec<String>,
    },
    None,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SourceKind {
    Native,
    OpenApi,
    ToolBench,
    Mcp,
}

impl SourceKind {
    pub fn as_str(self) -> &'static str {
        match self {
            SourceKind::Native => "native",
            SourceKind::OpenApi => "openapi",
            SourceKind::ToolBench => "toolbench",
            SourceKind::Mcp => "mcp",
        }
    }
}

/// Where a tool is declared: the file and the exact byte range of its operation.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Source {
    pub kind: SourceKind,
    /// The protocol file as the workspace names it (relative to the root when inside it).
    pub file: PathBuf,
    /// Byte range of the whole declaration (OpenAPI operation, api_list record, native entry).
    pub range: ByteRange,
    /// Byte range of the declaration's name (operation key, `api_name`, native `name`).
    pub name_range: ByteRange,
    pub method: Option<String>,
    pub path: Option<String>,
    /// ToolBench tool name / MCP tool name as declared.
    pub tool: Option<String>,
    /// ToolBench api name as declared.
    pub api: Option<String>,
    pub operation_id: Option<String>,
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Tool {
    pub name: String,
    pub toolset: String,
    pub category: String,
    pub description: String,
    pub params: Vec<Param>,
    /// JSON Schema of the successful response; `None` when unknown (probing fills it). Read back
    /// from the catalog cache it stays encoded until first asked for: most of a large catalog's
    /// responses are never looked at in one session.
    pub response: cache::Deferred,
    pub statuses: Vec<String>,
    pub examples: Vec<Example>,
    pub provenance: Provenance,
    pub transport: Transport,
    pub source: Source,
    /// Hints the protocol gives about the tool's behaviour: MCP `annotations` as the server sent
    /// them (`readOnlyHint`, `destructiveHint`, `idempotentHint`, `openWorldHint`, `title`).
    pub annotations: Option<Value>,
    /// The named schemas its `$ref`s lead to (shared by every tool of its protocol file; the
    /// catalog cache stores them once per file and shares them again on reading).
    #[serde(skip)]
    pub schemas: Arc<schema::Schemas>,
}

/// A tool answers the references in its own schemas.
impl schema::Refs for Tool {
    fn target(&self, reference: &str) -> Option<&Value> {
        self.schemas.target(reference)
    }
}

impl Tool {
    /// `toolset.name`, the identity used everywhere outside Python code.
    pub fn id(&self) -> String {
        format!("{}.{}", self.toolset, self.name)
    }
    pub fn param(&self, name: &str) -> Option<&Param> {
        self.params.iter().find(|p| p.name == name)
    }
    pub fn required(&self) -> impl Iterator<Item = &Param> {
        self.params.iter().filter(|p| p.required)
    }
    pub fn optional(&self) -> impl Iterator<Item = &Param> {
        self.params.iter().filter(|p| !p.required)
    }
    /// Whether calling the tool only reads: the MCP `readOnlyHint` when given, else `GET`/`HEAD`
    /// for HTTP tools; `None` when nothing says.
    pub fn read_only(&self) -> Option<bool> {
        if let Some(hint) = self.annotations.as_ref().and_then(|a| a.get("readOnlyHint")).and_then(Value::as_bool) {
            return Some(hint);
        }
        match &self.transport {
            Transport::Http { method, .. } => Some(matches!(method.to_ascii_uppercase().as_str(), "GET" | "HEAD")),
            _ => None,
        }
    }
    /// `GET /person/{person_id}` for HTTP tools.
    pub fn endpoint(&self) -> Option<String> {
        match &self.transport {
            Transport::Http { method, path } => Some(format!("{} {}", method.to_ascii_uppercase(), path)),
            _ => None,
        }
    }
}

/// How a toolset authenticates (from chainsmith.toml or the spec's securitySchemes).
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct Auth {
    pub query: Option<String>,
    pub header: Option<String>,
    pub prefix: String,
    pub value_env: Option<String>,
}

#[derive(Debug, Clone)]
pub struct Toolset {
    /// The Python module name (`chainsmith.tools.<name>`).
    pub name: String,
    pub kind: SourceKind,
    pub files: Vec<PathBuf>,
    pub description: String,
    pub base_url: Option<String>,
    pub auth: Option<Auth>,
    pub tools: Vec<Tool>,
    /// The named schemas its tools' `$ref`s lead to.
    pub schemas: Arc<schema::Schemas>,
    /// Why the toolset's tools are not known (an MCP server of an untrusted workspace, or one that
    /// did not start): the module is importable and calls into it are not checked, since a tool
    /// name cannot be told wrong when the list is missing.
    pub unlisted: Option<String>,
}

impl Toolset {
    /// The secret of the user's environment this toolset's auth would send to its base URL, as a
    /// line trust must allow before the host adds it (`None` when it sends none).
    pub fn secret_line(&self) -> Option<crate::trust::Command> {
        let auth = self.auth.as_ref()?;
        let var = auth.value_env.as_deref()?;
        let url = self.base_url.as_deref()?;
        let how = if self.kind == SourceKind::ToolBench {
            "body member toolbench_key".to_string()
        } else if let Some(name) = &auth.query {
            format!("query parameter {name}")
        } else {
            format!("header {}", auth.header.as_deref()?)
        };
        crate::trust::Command::secret(format!("toolset `{}` (auth)", self.name), var, &how, url)
    }

    /// Programs' calls to this toolset's base URL when it lies on this machine or its private
    /// network ([`crate::trust::is_local`]), as a line trust must allow before the host sends one.
    pub fn reach_line(&self) -> Option<crate::trust::Command> {
        let url = reqwest::Url::parse(self.base_url.as_deref()?.trim()).ok()?;
        crate::trust::is_local(&url)
            .then(|| crate::trust::Command::reach(format!("toolset `{}` (base URL)", self.name), &url))
    }

    /// Every line trust must allow before this toolset's HTTP calls go out as declared: its base
    /// URL's ([`Toolset::reach_line`]) and its secret's ([`Toolset::secret_line`]).
    pub fn trust_lines(&self) -> Vec<crate::trust::Command> {
        self.reach_line().into_iter().chain(self.secret_line()).collect()
    }
}

/// What one loader produced from one file.
#[derive(Debug, Default)]
pub struct Loaded {
    pub tools: Vec<Tool>,
    /// The named schemas the tools' `$ref`s lead to.
    pub schemas: Arc<schema::Schemas>,
    pub diagnostics: Vec<Diagnostic>,
    pub base_url: Option<String>,
    pub auth: Option<Auth>,
    pub description: String,
}

/// The longest parameter name (as the program writes it, and as it is sent) a tool is loaded
/// with. An API's names are words; a name of a megabyte is copied into every call a program
/// makes (its arguments, messages and fixes), and 3,000 calls of one took `check` past 3 GB.
pub const MAX_PARAM_NAME: usize = 1024;

impl Loaded {
    /// Leaves out each parameter named longer than [`MAX_PARAM_NAME`], with a warning on its
    /// tool's declaration in `file` (one per tool, however many it loses).
    pub fn without_overlong_names(mut self, file: &std::path::Path) -> Self {
        for tool in &mut self.tools {
            let before = tool.params.len();
            tool.params.retain(|p| p.name.len() <= MAX_PARAM_NAME && p.wire_name.len() <= MAX_PARAM_NAME);
            let lost = before - tool.params.len();
            if lost > 0 {
                self.diagnostics.push(Diagnostic::warning(
                    file,
                    tool.source.name_range,
                    "invalid-operation",
                    format!(
                        "{lost} parameter{} of `{}` named longer than {MAX_PARAM_NAME} bytes {} left out",
                        if lost == 1 { "" } else { "s" },
                        crate::text::quoted(&tool.name),
                        if lost == 1 { "is" } else { "are" }
                    ),
                ));
            }
        }
        self
    }
}

/// Every toolset of a workspace, indexed for lookups by the analysis and the server.
#[derive(Debug, Default)]
pub struct Catalog {
    pub toolsets: Vec<Toolset>,
    /// Diagnostics on protocol files and on chainsmith.toml.
    pub diagnostics: Vec<Diagnostic>,
    by_toolset: HashMap<String, usize>,
    /// (toolset index, tool name) → tool index.
    by_tool: HashMap<(usize, String), usize>,
    /// bare tool name → ids, for the CLI's bare-name lookups.
    by_bare_name: HashMap<String, Vec<(usize, usize)>>,
    /// Per toolset, its tools' indices in name order (completion takes a prefix's range of it).
    name_order: Vec<Vec<usize>>,
    /// (toolset index, alias) → tool index: an OpenAPI `operationId`, snake-cased, resolves too.
    by_alias: HashMap<(usize, String), usize>,
    /// (toolset index, tool index) → its alias.
    aliases: HashMap<(usize, usize), String>,
    /// The text of every protocol file read, for positions (definitions, diagnostics).
    pub texts: Texts,
    /// What this workspace may run, as it was when the catalog was loaded (the runtime asks it
    /// before starting a command tool or the interpreter).
    pub trust: crate::trust::Trust,
    /// The files outside the workspace its protocols name that this load did not read, as the
    /// `read <…>` lines trusting the workspace would record.
    pub outside_reads: Vec<crate::trust::Command>,
    /// Which response feeds which parameter: built on first use, as most sessions never ask.
    flow: std::sync::OnceLock<dataflow::DataFlow>,
}

/// Python builtins an alias must not shadow in a stub (types used in annotations, and common
/// functions).
const PYTHON_BUILTINS: [&str; 24] = [
    "list",
    "dict",
    "str",
    "int",
    "float",
    "bool",
    "set",
    "tuple",
    "bytes",
    "object",
    "type",
    "frozenset",
    "any",
    "all",
    "len",
    "print",
    "id",
    "map",
    "filter",
    "range",
    "sum",
    "min",
    "max",
    "open",
];

/// A reference key starts with its toolset's name (`toolset/file#pointer`): the lookup goes to that
/// toolset's store.
impl schema::Refs for Catalog {
    fn target(&self, reference: &str) -> Option<&Value> {
        let (toolset, _) = reference.split_once('/')?;
        self.toolset(toolset)?.schemas.target(reference)
    }
}

impl Catalog {
    /// A catalog of `toolsets`, trusted with nothing: a catalog made from another one takes its
    /// `texts` and `trust` along.
    pub fn new(toolsets: Vec<Toolset>, diagnostics: Vec<Diagnostic>) -> Self {
        let mut catalog = Catalog { toolsets, diagnostics, ..Default::default() };
        for (ti, ts) in catalog.toolsets.iter().enumerate() {
            catalog.by_toolset.insert(ts.name.clone(), ti);
            for (i, tool) in ts.tools.iter().enumerate() {
                catalog.by_tool.insert((ti, tool.name.clone()), i);
                catalog.by_bare_name.entry(tool.name.clone()).or_default().push((ti, i));
            }
            let mut order: Vec<usize> = (0..ts.tools.len()).collect();
            order.sort_by(|&a, &b| ts.tools[a].name.cmp(&ts.tools[b].name));
            catalog.name_order.push(order);
        }
        for ti in 0..catalog.toolsets.len() {
            catalog.index_aliases(ti);
        }
        catalog
    }

    /// The catalog's data-flow graph ([`dataflow`]), built once, when first asked for.
    pub fn data_flow(&self) -> &dataflow::DataFlow {
        self.flow.get_or_init(|| dataflow::DataFlow::build(self))
    }

    /// A tool's snake-cased `operationId` is its alias (GitHub's `pulls/list` → `pulls_list` for
    /// `repos_pulls_by_owner_and_repo`), unless it is the tool's name, another tool's name, or
    /// shared by two tools (then it would name neither).
    fn index_aliases(&mut self, ti: usize) {
        let tools = &self.toolsets[ti].tools;
        let mut candidates: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, tool) in tools.iter().enumerate() {
            let Some(operation_id) = tool.source.operation_id.as_deref() else { continue };
            let alias = crate::names::snake_case(operation_id);
            // A builtin's name (`list`, `dict`) would shadow it in the toolset's stub.
            let builtin = PYTHON_BUILTINS.contains(&alias.as_str());
            if alias != tool.name
                && !builtin
                && crate::names::is_identifier(&alias)
                && !crate::names::is_python_keyword(&alias)
            {
                candidates.entry(alias).or_default().push(i);
            }
        }
        for (alias, owners) in candidates {
            if let [i] = owners[..]
                && !self.by_tool.contains_key(&(ti, alias.clone()))
            {
                self.aliases.insert((ti, i), alias.clone());
                self.by_alias.insert((ti, alias), i);
            }
        }
    }

    /// The alias a tool also answers to, if it has one.
    pub fn alias_of(&self, tool: &Tool) -> Option<&str> {
        let ti = *self.by_toolset.get(&tool.toolset)?;
        let i = *self.by_tool.get(&(ti, tool.name.clone()))?;
        self.aliases.get(&(ti, i)).map(String::as_str)
    }

    /// Every name a toolset's tools answer to (names, then aliases), for did-you-mean.
    pub fn names_and_aliases<'c>(&'c self, toolset: &str) -> impl Iterator<Item = &'c str> + 'c {
        let ti = self.by_toolset.get(toolset).copied();
        let names = ti.into_iter().flat_map(move |ti| self.toolsets[ti].tools.iter().map(|t| t.name.as_str()));
        // In tool order, so did-you-mean breaks ties the same way every time.
        let aliases = ti.into_iter().flat_map(move |ti| {
            (0..self.toolsets[ti].tools.len()).filter_map(move |i| self.aliases.get(&(ti, i)).map(String::as_str))
        });
        names.chain(aliases)
    }

    /// A toolset's tools whose name starts with `prefix`, in name order (a binary search, not a
    /// scan: completion at ToolBench scale stays independent of the toolset's size).
    pub fn tools_with_prefix<'c>(&'c self, toolset: &str, prefix: &'c str) -> impl Iterator<Item = &'c Tool> + 'c {
        let found = self.by_toolset.get(toolset).map(|&ti| (&self.toolsets[ti], self.name_order[ti].as_slice()));
        let (tools, order): (&[Tool], &[usize]) = match found {
            Some((ts, order)) => (&ts.tools, order),
            None => (&[], &[]),
        };
        let start = order.partition_point(|&i| tools[i].name.as_str() < prefix);
        order[start..].iter().map(move |&i| &tools[i]).take_while(move |t| t.name.starts_with(prefix))
    }

    /// A toolset's tools in name order.
    pub fn tools_by_name<'c>(&'c self, toolset: &str) -> impl Iterator<Item = &'c Tool> + 'c {
        self.tools_with_prefix(toolset, "")
    }

    pub fn toolset(&self, name: &str) -> Option<&Toolset> {
        self.by_toolset.get(name).map(|&i| &self.toolsets[i])
    }

    pub fn tool(&self, toolset: &str, name: &str) -> Option<&Tool> {
        let ti = *self.by_toolset.get(toolset)?;
        let key = (ti, name.to_string());
        let i = *self.by_tool.get(&key).or_else(|| self.by_alias.get(&key))?;
        Some(&self.toolsets[ti].tools[i])
    }

    /// `toolset.name`, or a bare name when it is unique in the workspace.
    pub fn find(&self, id: &str) -> Result<&Tool, String> {
        if let Some((ts, name)) = id.split_once('.')
            && let Some(tool) = self.tool(ts, name)
        {
            return Ok(tool);
        }
        match self.by_bare_name.get(id).map(Vec::as_slice) {
            Some([(ti, i)]) => Ok(&self.toolsets[*ti].tools[*i]),
            Some(many) if many.len() > 1 => Err(format!(
                "`{id}` is ambiguous: {}",
                many.iter().map(|(ti, i)| self.toolsets[*ti].tools[*i].id()).collect::<Vec<_>>().join(", ")
            )),
            _ => Err(format!("no tool `{id}` in the workspace")),
        }
    }

    pub fn tools(&self) -> impl Iterator<Item = &Tool> {
        self.toolsets.iter().flat_map(|ts| ts.tools.iter())
    }

    pub fn tool_count(&self) -> usize {
        self.toolsets.iter().map(|ts| ts.tools.len()).sum()
    }

    pub fn unprobed_count(&self) -> usize {
        self.tools().filter(|t| t.response.is_none()).count()
    }
}

pub type SharedCatalog = Arc<Catalog>;

#[cfg(test)]
pub(crate) mod test_support {
    use std::path::Path;

    use super::{Catalog, Toolset, doc, openapi};

    /// A catalog of one toolset loaded by the real OpenAPI loader from a YAML text.
    pub fn openapi_catalog(name: &str, yaml: &str, base_url: Option<&str>) -> Catalog {
        let (catalog, diagnostics) = openapi_catalog_and_diagnostics(name, yaml, base_url);
        assert!(diagnostics.is_empty(), "{diagnostics:?}");
        catalog
    }

    /// [`openapi_catalog`] of a text the loader has something to say about.
    pub fn openapi_catalog_and_diagnostics(
        name: &str,
        yaml: &str,
        base_url: Option<&str>,
    ) -> (Catalog, Vec<crate::diagnostic::Diagnostic>) {
        let node = doc::parse(yaml, doc::Syntax::Yaml).expect("valid YAML");
        let loaded = openapi::load(&node, yaml, Path::new("spec.yaml"), name);
        let toolset = Toolset {
            name: name.into(),
            kind: super::SourceKind::OpenApi,
            files: vec![],
            description: String::new(),
            base_url: base_url.map(str::to_string).or(loaded.base_url),
            auth: loaded.auth,
            tools: loaded.tools,
            schemas: loaded.schemas,
            unlisted: None,
        };
        (Catalog::new(vec![toolset], vec![]), loaded.diagnostics)
    }
}
