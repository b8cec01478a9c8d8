//! The data flow of a catalog: which field of which tool's response can feed which parameter of
//! another tool (`search_person`'s `results[].id` → `person_movie_credits(person_id=…)`), each
//! edge with a weight and the evidence for it, all of it kept so it can be shown.
//!
//! What the protocols say is enough, as APIphany mines "semantic types" from REST specs: a
//! parameter names an entity (`person_id`, `{id}` under `/users/`, `pull_number`, `repo`), and an
//! object in a response is of an entity when
//! - its keys look like the entity's own (the response of the entity's detail operation, the one
//!   whose path ends in its parameter: `GET /person/{person_id}` for persons),
//! - it sits under a key that names the entity (`owner: {login, …}`), or
//! - it is what its operation's path is about (`/search/movie`'s results), not counting the entity
//!   the path already takes (`/person/{person_id}/movie_credits` lists movies).
//!
//! A field then feeds a parameter when the names fit: the entity's `id` an `<entity>_id`
//! (`movie.id` → `movie_id`), `number` an `<entity>_number`, `login`/`name`/`slug` a parameter
//! that is the entity itself (`owner`, `repo`), and any field the parameter's exact name. A
//! parameter's type against the field's weighs in. Evidence from programs and runs is added where
//! ToolNet learns; this is what the schemas alone give.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use serde_json::Value;

use super::schema;
use super::{Catalog, ParamLocation, Tool, Transport};
use crate::text::quoted;
use crate::textsearch;

/// One step into a response: a key of an object, or any item of an array.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Step {
    Key(String),
    Item,
}

/// Where a value sits in a response (`results[].id`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct FieldPath(pub Vec<Step>);

impl std::fmt::Display for FieldPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut first = true;
        for step in &self.0 {
            match step {
                Step::Key(k) if first => write!(f, "{k}")?,
                Step::Key(k) => write!(f, ".{k}")?,
                Step::Item => write!(f, "[]")?,
            }
            first = false;
        }
        Ok(())
    }
}

impl FieldPath {
    /// The Python subscripts that read it, taking the first item of every array
    /// (`["results"][0]["id"]`).
    pub fn subscripts(&self) -> String {
        self.0
            .iter()
            .map(|s| match s {
                Step::Key(k) => format!("[{}]", serde_json::to_string(k).unwrap_or_default()),
                Step::Item => "[0]".to_string(),
            })
            .collect()
    }
}

/// One reason an edge exists.
#[derive(Debug, Clone, PartialEq)]
pub struct Evidence {
    /// How strongly this alone suggests the edge (0..1).
    pub strength: f64,
    pub why: Arc<str>,
}

/// `from`'s response field `field` can feed `to`'s parameter `param`. A 16k-API catalog has
/// hundreds of thousands: the names, the field and most reasons are shared between edges.
#[derive(Debug, Clone, PartialEq)]
pub struct Edge {
    pub from: Arc<str>,
    pub field: Arc<FieldPath>,
    pub to: Arc<str>,
    pub param: Arc<str>,
    /// The combined strength of the evidence (0..1).
    pub weight: f64,
    pub evidence: Box<[Evidence]>,
}

/// The data-flow graph of one catalog.
#[derive(Debug, Default)]
pub struct DataFlow {
    edges: Vec<Edge>,
    /// Consumer tool id → parameter → edges into it, strongest first.
    into: HashMap<Arc<str>, HashMap<Arc<str>, Vec<usize>>>,
}

/// Limits that keep the build linear in the catalog: response schemas are walked this deep, and
/// only this many object nodes of one response are looked at.
const MAX_DEPTH: usize = 6;
const MAX_OBJECTS_PER_RESPONSE: usize = 200;
/// What each list beyond the first on a field's path keeps of an edge's weight.
const NESTED_LIST: f64 = 0.6;
/// Weaker edges than this are not kept.
const MIN_WEIGHT: f64 = 0.3;

impl DataFlow {
    pub fn build(catalog: &Catalog) -> DataFlow {
        use rayon::prelude::*;
        let consumers = Consumers::of(catalog);
        let shapes = detail_shapes(catalog);
        fn objects_of(tool: &Tool) -> Vec<Object<'_>> {
            let mut objects = Vec::new();
            if let Some(response) = &*tool.response {
                let example = tool.examples.iter().find_map(|e| e.response.as_ref());
                collect_objects(tool, response, example, FieldPath::default(), None, 0, &mut objects);
            }
            objects
        }
        // Each producing tool's objects and edges are its own: they are found on every core (the
        // editor builds the graph after each load, and hover, completion and plans wait for it),
        // and joined in catalog order.
        let tools: Vec<&Tool> = catalog.tools().collect();
        let objects: Vec<Vec<Object>> = tools.par_iter().map(|tool| objects_of(tool)).collect();
        let kinds = ObjectKinds::of(objects.iter().flatten(), &consumers.entities);
        let edges_of_tools: Vec<Vec<Edge>> = tools
            .par_iter()
            .zip(objects.par_iter())
            .map(|(tool, objects)| {
                let context = Producer::of(tool);
                let from: Arc<str> = tool.id().into();
                let mut edges = Vec::new();
                for object in objects {
                    let mut entities = object_entities(object, &context, &shapes, &consumers.entities);
                    kinds.add_alike(object, &mut entities);
                    edges.extend(consumers.fed_by(tool, &from, &context, object, &entities));
                }
                first_of_each(edges)
            })
            .collect();
        let mut flow = DataFlow::default();
        flow.edges.reserve_exact(edges_of_tools.iter().map(Vec::len).sum());
        for edge in edges_of_tools.into_iter().flatten() {
            flow.into.entry(edge.to.clone()).or_default().entry(edge.param.clone()).or_default().push(flow.edges.len());
            flow.edges.push(edge);
        }
        for list in flow.into.values_mut().flat_map(HashMap::values_mut) {
            list.sort_by(|a, b| flow.edges[*b].weight.total_cmp(&flow.edges[*a].weight));
        }
        flow
    }

    pub fn edges(&self) -> &[Edge] {
        &self.edges
    }

    /// The edges into `tool`'s parameter `param`, strongest first.
    pub fn producers<'a>(&'a self, tool: &str, param: &str) -> impl Iterator<Item = &'a Edge> + 'a {
        self.into.get(tool).and_then(|params| params.get(param)).into_iter().flatten().map(|&i| &self.edges[i])
    }

    /// Which tools can follow which: `y` follows `x` when `x` can feed every required parameter
    /// of `y` that any tool can feed (ToolNet's data-flow back-off).
    pub fn followers(&self, catalog: &Catalog) -> HashMap<String, Vec<String>> {
        let mut links: HashMap<String, Vec<String>> = HashMap::new();
        for tool in catalog.tools() {
            let id = tool.id();
            let fed: Vec<&str> =
                tool.required().map(|p| p.name.as_str()).filter(|p| self.producers(&id, p).next().is_some()).collect();
            let Some(first) = fed.first() else { continue };
            let mut from: Vec<&str> = self.producers(&id, first).map(|e| &*e.from).collect();
            from.sort_unstable();
            from.dedup();
            for x in from {
                if fed.iter().all(|p| self.producers(&id, p).any(|e| &*e.from == x)) {
                    links.entry(x.to_string()).or_default().push(id.clone());
                }
            }
        }
        links
    }
}

/// What a parameter asks for: the entity it names and the field of that entity it wants.
#[derive(Debug, Clone, PartialEq)]
struct Want {
    entity: String,
    /// `id`, `number`, or `None` when the parameter is the entity itself (`repo`, `owner`).
    field: Option<&'static str>,
}

/// The entity and field a parameter names, if it names one.
fn want_of(tool: &Tool, name: &str) -> Option<Want> {
    // `userId`, `user-id` and `user_id` name the same thing.
    let lower = crate::names::snake_case(name);
    for (suffix, field) in [("_id", "id"), ("_number", "number"), ("_slug", "slug")] {
        if let Some(entity) = lower.strip_suffix(suffix).filter(|e| !e.is_empty()) {
            let entity = entity.trim_end_matches('_');
            if !entity.is_empty() {
                return Some(Want { entity: singular(entity), field: Some(field) });
            }
        }
    }
    if lower == "id" {
        // `/users/{id}`: the entity is the path segment before it.
        let Transport::Http { path, .. } = &tool.transport else { return None };
        let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
        let at = segments.iter().position(|s| *s == "{id}")?;
        let before = segments.get(at.checked_sub(1)?)?;
        return (!before.starts_with('{')).then(|| Want { entity: singular(before), field: Some("id") });
    }
    if lower == "username" || lower == "login" {
        return Some(Want { entity: "user".into(), field: None });
    }
    Some(Want { entity: singular(&lower), field: None })
}

/// The singular of a path or key word (`movies` → `movie`, `companies` → `company`), with the
/// short forms APIs use for the same thing made one (`repositories` → `repo`).
pub(crate) fn singular(word: &str) -> String {
    let w = word.to_ascii_lowercase().replace('-', "_");
    let one = if let Some(stem) = w.strip_suffix("ies").filter(|s| s.len() > 2) {
        format!("{stem}y")
    } else if w.ends_with("ss") || w.ends_with("us") {
        w
    } else {
        w.strip_suffix('s').filter(|s| s.len() > 2).map(str::to_string).unwrap_or(w)
    };
    match one.as_str() {
        "repository" => "repo".into(),
        "organization" | "organisation" => "org".into(),
        "people" => "person".into(),
        _ => one,
    }
}

/// A parameter that can take a value from another tool: required or not, in the path, query or
/// body, naming an entity.
struct Consumer {
    tool: Arc<str>,
    param: Arc<str>,
    want: Want,
    types: Vec<&'static str>,
    /// Why a field of each name it takes feeds it (its field: `id`, `number`, `slug`; or `login`,
    /// `name`, `slug`, `id` for a parameter that is the thing itself), written once for all its
    /// producers.
    identified_by: Vec<(&'static str, Arc<str>)>,
}

impl Consumer {
    /// Why the field `key` of a thing of its entity feeds it (a key written otherwise than the
    /// prepared names, `ID`, gets its own sentence).
    fn identified_why(&self, key: &str) -> Arc<str> {
        match self.identified_by.iter().find(|(handle, _)| *handle == key) {
            Some((_, why)) => why.clone(),
            None => identifies(key, &self.want.entity, &self.param),
        }
    }
}

/// The fields that identify a thing to a parameter that is the thing itself (`repo`, `owner`).
const THING_HANDLES: [&str; 4] = ["login", "name", "slug", "id"];

fn identifies(key: &str, entity: &str, param: &str) -> Arc<str> {
    format!("`{key}` identifies a {entity}, and `{param}` takes a {entity}").into()
}

struct Consumers {
    /// By the entity they want.
    by_entity: HashMap<String, Vec<Consumer>>,
    /// Every entity some parameter names.
    entities: BTreeSet<String>,
}

impl Consumers {
    fn of(catalog: &Catalog) -> Consumers {
        let mut by_entity: HashMap<String, Vec<Consumer>> = HashMap::new();
        for tool in catalog.tools() {
            for param in &tool.params {
                if !matches!(
                    param.location,
                    ParamLocation::Path | ParamLocation::Query | ParamLocation::Body | ParamLocation::Argument
                ) {
                    continue;
                }
                // An optional query filter rarely starts a chain; the path and required ones do.
                if !param.required && param.location != ParamLocation::Path {
                    continue;
                }
                if schema::enum_values(tool, &param.schema).is_some() {
                    continue;
                }
                let Some(want) = want_of(tool, &param.wire_name) else { continue };
                let types = schema::types(tool, &param.schema);
                if types.iter().any(|t| matches!(*t, "object" | "array" | "boolean")) {
                    continue;
                }
                let handles = match want.field {
                    Some(field) => vec![field],
                    None => THING_HANDLES.to_vec(),
                };
                let identified_by =
                    handles.iter().map(|handle| (*handle, identifies(handle, &want.entity, &param.name))).collect();
                by_entity.entry(want.entity.clone()).or_default().push(Consumer {
                    tool: tool.id().into(),
                    param: param.name.as_str().into(),
                    want,
                    types,
                    identified_by,
                });
            }
        }
        // A "parameter that is the entity itself" only counts when it is an identifier-like
        // word: `repo`, `owner`, `site`; a `query` or `language` names no entity.
        let entities: BTreeSet<String> = by_entity
            .iter()
            .filter(|(_, consumers)| consumers.iter().any(|c| c.want.field.is_some()))
            .map(|(entity, _)| entity.clone())
            .collect();
        by_entity.retain(|entity, consumers| {
            consumers.retain(|c| c.want.field.is_some() || entities.contains(entity) || is_identity_word(entity));
            !consumers.is_empty()
        });
        let entities = by_entity.keys().cloned().collect();
        Consumers { by_entity, entities }
    }

    /// The edges from `tool` (whose id is `from`)'s response object `object` of `entities` into
    /// consumers.
    fn fed_by(
        &self,
        tool: &Tool,
        from: &Arc<str>,
        context: &Producer,
        object: &Object,
        entities: &[(String, Evidence)],
    ) -> Vec<Edge> {
        let mut out = Vec::new();
        for (key, field_schema) in &object.fields {
            let field_types = schema::types(tool, field_schema);
            if field_types.iter().any(|t| matches!(*t, "object" | "array")) {
                continue;
            }
            let path = Arc::new(FieldPath(object.path.0.iter().cloned().chain([Step::Key(key.to_string())]).collect()));
            let key_lower = key.to_ascii_lowercase();
            // The top level's id of an operation that takes that entity echoes its argument
            // (`/movie/{movie_id}/credits` → `id`); lists inside it are other things of the kind
            // (`/movie/{movie_id}/similar` → `results[].id`).
            let echoes = |entity: &str| object.path.0.is_empty() && context.takes(entity);
            // The field is the entity's identifier, for each entity the object may be.
            for (entity, why) in entities {
                let Some(consumers) = self.by_entity.get(entity) else { continue };
                for consumer in consumers {
                    let fits = match consumer.want.field {
                        Some(field) => key_lower == field,
                        None => THING_HANDLES.contains(&key_lower.as_str()),
                    };
                    if !fits || consumer.tool == *from || echoes(entity) {
                        continue;
                    }
                    // A parameter that is the thing itself (`repo`, `owner`) takes its handle:
                    // a login or slug before a name, a name before a number.
                    let strength = match (consumer.want.field, key_lower.as_str()) {
                        (Some(_), _) => 0.9,
                        (None, "login" | "slug") => 0.6,
                        (None, "name") => 0.55,
                        (None, _) => 0.35,
                    };
                    let named = Evidence { strength, why: consumer.identified_why(key) };
                    out.extend(edge(from, &path, consumer, &field_types, vec![why.clone(), named]));
                }
            }
            // The field carries the parameter's own name (`movie_id` in a response).
            let want = want_of(tool, key);
            if let Some(want) = want.filter(|w| w.field.is_some())
                && !echoes(&want.entity)
                && let Some(consumers) = self.by_entity.get(&want.entity)
            {
                for consumer in consumers.iter().filter(|c| c.tool != *from && c.want.field == want.field) {
                    let same = Evidence {
                        strength: if *consumer.param == **key { 0.9 } else { 0.75 },
                        why: format!(
                            "`{}` names the {} that `{}` takes",
                            quoted(key),
                            quoted(&want.entity),
                            quoted(&consumer.param)
                        )
                        .into(),
                    };
                    out.extend(edge(from, &path, consumer, &field_types, vec![same]));
                }
            }
        }
        out
    }
}

/// The thing a parameter identifies (singular, short forms made one: `repo`, `user`), when it
/// identifies one: an id, number or slug of it, a path parameter, or a word that names the thing
/// itself (`owner`, `username`). `query` or `language` identify nothing.
pub(crate) fn identified_by(tool: &Tool, param: &crate::toolset::Param) -> Option<String> {
    let want = want_of(tool, &param.wire_name)?;
    let identifies = want.field.is_some() || param.location == ParamLocation::Path || is_identity_word(&want.entity);
    identifies.then_some(want.entity)
}

/// Words that name an entity when a parameter is that entity itself (`repo`, `owner`).
fn is_identity_word(word: &str) -> bool {
    matches!(word, "owner" | "repo" | "repository" | "user" | "org" | "organization" | "team" | "project" | "site")
}

fn edge(
    from: &Arc<str>,
    path: &Arc<FieldPath>,
    consumer: &Consumer,
    field_types: &[&str],
    mut evidence: Vec<Evidence>,
) -> Option<Edge> {
    let mut weight = combine(&evidence);
    let compatible = consumer.types.is_empty()
        || field_types.is_empty()
        || field_types.iter().any(|t| consumer.types.contains(t))
        || (field_types.contains(&"integer") && consumer.types.contains(&"number"))
        || (field_types.contains(&"integer") && consumer.types.contains(&"string"));
    if !compatible {
        weight *= 0.5;
        evidence.push(Evidence {
            strength: 0.0,
            why: format!("types differ: {} into {}", field_types.join("|"), consumer.types.join("|")).into(),
        });
    }
    // An item of a list inside a list's item (a found person's `known_for[]` movies) is a thing
    // the response mentions in passing: taking the first of the first is a guess.
    let lists = path.0.iter().filter(|s| **s == Step::Item).count();
    if lists > 1 {
        weight *= NESTED_LIST.powi(lists as i32 - 1);
        evidence.push(Evidence { strength: 0.0, why: IN_A_LIST_IN_A_LIST.clone() });
    }
    (weight >= MIN_WEIGHT).then(|| Edge {
        from: from.clone(),
        field: path.clone(),
        to: consumer.tool.clone(),
        param: consumer.param.clone(),
        weight,
        evidence: evidence.into_boxed_slice(),
    })
}

/// One producing tool's edges, one per (field, consumer, parameter): the first found is kept.
/// Edges of different producers never repeat each other (tool ids are unique in a catalog), so
/// each producer's are de-duplicated alone; and within one, a field's edges share its path and a
/// consumer's its names, so the same edge is the same three pointers (hashing the paths and names
/// themselves took a fifth of the build at 16k APIs). Were two equal names ever two allocations,
/// an edge would be kept twice, never one lost.
fn first_of_each(edges: Vec<Edge>) -> Vec<Edge> {
    let mut seen = std::collections::HashSet::new();
    edges
        .into_iter()
        .filter(|e| {
            let name = |name: &Arc<str>| Arc::as_ptr(name).cast::<u8>() as usize;
            seen.insert((Arc::as_ptr(&e.field) as usize, name(&e.to), name(&e.param)))
        })
        .collect()
}

static IN_A_LIST_IN_A_LIST: std::sync::LazyLock<Arc<str>> =
    std::sync::LazyLock::new(|| "it sits in a list inside a list's item".into());

/// Independent evidence combined: 1 − Π(1 − s).
fn combine(evidence: &[Evidence]) -> f64 {
    1.0 - evidence.iter().fold(1.0, |rest, e| rest * (1.0 - e.strength.clamp(0.0, 1.0)))
}

/// What a producing tool's path says: the entities it is about, and those it takes (its own
/// parameters: `/person/{person_id}/movie_credits` takes a person and lists movies).
struct Producer {
    nouns: Vec<String>,
    takes: Vec<String>,
}

impl Producer {
    fn of(tool: &Tool) -> Producer {
        let takes: Vec<String> = tool
            .params
            .iter()
            .filter_map(|p| want_of(tool, &p.wire_name))
            .filter(|w| w.field.is_some())
            .map(|w| w.entity)
            .collect();
        let mut nouns = Vec::new();
        if let Transport::Http { path, .. } = &tool.transport {
            for segment in path.split('/').filter(|s| !s.is_empty() && !s.starts_with('{')) {
                for word in segment.split(['_', '-']).filter(|w| !w.is_empty()) {
                    nouns.push(singular(word));
                }
                nouns.push(singular(segment));
            }
        } else {
            nouns.extend(textsearch::tokens(&tool.name, true).iter().map(|w| singular(w)));
        }
        Producer { nouns, takes }
    }

    fn takes(&self, entity: &str) -> bool {
        self.takes.iter().any(|t| t == entity)
    }
}

/// An object node of a response: where it is, the key it sits under, its scalar and other fields
/// (borrowed from the catalog: objects of every tool are held at once while the graph is built).
struct Object<'c> {
    path: FieldPath,
    parent_key: Option<&'c str>,
    fields: Vec<(&'c str, &'c Value)>,
}

/// The objects of a response schema, read beside an example response where the tool has one:
/// a property whose name a generator lost (`""`) takes the name of the one key the example has
/// and the schema does not (RestBench TMDB's `trending` answers `results` there), and a list
/// where the example has one, so what it holds still feeds other calls.
fn collect_objects<'c>(
    tool: &'c Tool,
    schema: &'c Value,
    example: Option<&'c Value>,
    path: FieldPath,
    parent_key: Option<&'c str>,
    depth: usize,
    out: &mut Vec<Object<'c>>,
) {
    if depth > MAX_DEPTH || out.len() >= MAX_OBJECTS_PER_RESPONSE {
        return;
    }
    let types = schema::types(tool, schema);
    if types.contains(&"array") || (types.is_empty() && schema::items(tool, schema).is_some()) {
        if let Some(items) = schema::items(tool, schema) {
            let mut inner = path.clone();
            inner.0.push(Step::Item);
            let example = example.and_then(Value::as_array).and_then(|items| items.first());
            collect_objects(tool, items, example, inner, parent_key, depth + 1, out);
        }
        return;
    }
    let mut keys = schema::keys(tool, schema);
    let lost = schema::empty_named(tool, schema).and_then(|lost| {
        let example = example?.as_object()?;
        let mut unknown = example.keys().filter(|k| !k.is_empty() && !keys.iter().any(|(name, _)| name == k));
        let name = unknown.next()?;
        unknown.next().is_none().then_some((name.as_str(), lost))
    });
    keys.extend(lost);
    if keys.is_empty() {
        return;
    }
    out.push(Object { path: path.clone(), parent_key, fields: keys.clone() });
    for (key, value) in keys {
        let mut inner = path.clone();
        inner.0.push(Step::Key(key.to_string()));
        let example = example.and_then(|e| e.get(key));
        let declared_list = schema::types(tool, value).contains(&"array") || schema::items(tool, value).is_some();
        match example.and_then(Value::as_array) {
            Some(items) if !declared_list => {
                inner.0.push(Step::Item);
                collect_objects(tool, value, items.first(), inner, Some(key), depth + 2, out);
            }
            _ => collect_objects(tool, value, example, inner, Some(key), depth + 1, out),
        }
    }
}

/// The entities objects of one key set sit under across the catalog: GitHub's `owner` of a
/// repository and `user` of a pull request are both its `simple-user` shape, so a repository
/// owner's `login` is a user's and feeds `username`.
struct ObjectKinds {
    under: HashMap<u64, BTreeSet<String>>,
}

/// Fewer keys than this are too common a shape to say two objects are one kind of thing.
const KINDRED_SHAPE_KEYS: usize = 4;

impl ObjectKinds {
    fn of<'c: 'o, 'o>(objects: impl Iterator<Item = &'o Object<'c>>, entities: &BTreeSet<String>) -> ObjectKinds {
        let mut under: HashMap<u64, BTreeSet<String>> = HashMap::new();
        for object in objects {
            let (Some(parent), Some(shape)) = (&object.parent_key, shape_of(object)) else { continue };
            let entity = singular(parent);
            if entities.contains(&entity) || is_identity_word(&entity) {
                under.entry(shape).or_default().insert(entity);
            }
        }
        under.retain(|_, kinds| kinds.len() > 1);
        ObjectKinds { under }
    }

    /// Adds to `entities` what objects of `object`'s shape sit under elsewhere, as weaker evidence
    /// than the key it sits under itself.
    fn add_alike(&self, object: &Object, entities: &mut Vec<(String, Evidence)>) {
        let (Some(parent), Some(kinds)) = (&object.parent_key, shape_of(object).and_then(|s| self.under.get(&s)))
        else {
            return;
        };
        let own = singular(parent);
        let new: Vec<&String> = kinds.iter().filter(|k| **k != own && !entities.iter().any(|(e, _)| e == *k)).collect();
        for kind in new {
            let why = format!("it sits under `{parent}` and has the keys of the objects under `{kind}`");
            entities.push((kind.clone(), Evidence { strength: 0.7, why: why.into() }));
        }
    }
}

/// A hash of an object's key set, when it has enough keys to tell a kind of thing.
fn shape_of(object: &Object) -> Option<u64> {
    use std::hash::{Hash, Hasher};
    if object.fields.len() < KINDRED_SHAPE_KEYS {
        return None;
    }
    let mut keys: Vec<&str> = object.fields.iter().map(|(k, _)| *k).collect();
    keys.sort_unstable();
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    keys.hash(&mut hasher);
    Some(hasher.finish())
}

/// Each entity's shape: the keys of its detail operation's response (the operation whose path
/// ends in the parameter that names it), and how many shapes each key is in.
#[derive(Default)]
struct Shapes {
    keys: HashMap<String, BTreeSet<String>>,
    in_shapes: HashMap<String, usize>,
}

impl Shapes {
    fn iter(&self) -> impl Iterator<Item = (&String, &BTreeSet<String>)> {
        self.keys.iter()
    }

    /// How much a key says about an entity: the log of how rare it is among shapes.
    fn idf(&self, key: &str) -> f64 {
        let n = self.keys.len() as f64;
        let df = self.in_shapes.get(key).copied().unwrap_or(0) as f64;
        ((n + 1.0) / (df + 0.5)).ln().max(0.0)
    }
}

fn detail_shapes(catalog: &Catalog) -> Shapes {
    let mut shapes = Shapes::default();
    for tool in catalog.tools() {
        let Transport::Http { method, path } = &tool.transport else { continue };
        if !method.eq_ignore_ascii_case("get") {
            continue;
        }
        let Some(last) = path.rsplit('/').find(|s| !s.is_empty()) else { continue };
        let Some(name) = last.strip_prefix('{').and_then(|s| s.strip_suffix('}')) else { continue };
        let Some(want) = want_of(tool, name) else { continue };
        let Some(response) = &*tool.response else { continue };
        let keys: BTreeSet<String> = schema::keys(tool, response).iter().map(|(k, _)| k.to_string()).collect();
        if keys.len() >= 3 && !shapes.keys.contains_key(&want.entity) {
            for key in &keys {
                *shapes.in_shapes.entry(key.clone()).or_default() += 1;
            }
            shapes.keys.insert(want.entity, keys);
        }
    }
    shapes
}

/// The entities an object may be, with the evidence for each.
fn object_entities(
    object: &Object,
    producer: &Producer,
    shapes: &Shapes,
    entities: &BTreeSet<String>,
) -> Vec<(String, Evidence)> {
    let keys: BTreeSet<&str> = object.fields.iter().map(|(k, _)| *k).collect();
    let mut found: Vec<(String, Evidence)> = Vec::new();
    let mut add = |entity: &str, evidence: Evidence| match found.iter_mut().find(|(e, _)| e == entity) {
        Some((_, best)) if best.strength < evidence.strength => *best = evidence,
        Some(_) => {}
        None => found.push((entity.to_string(), evidence)),
    };
    // Keys most entities have (`id`, `name`, `overview`) say little; a key of one entity's shape
    // alone (`title`, `release_date` for movies) says much. The best-fitting entity by those
    // weights wins; another counts only when it fits nearly as well.
    let fits: Vec<(&String, Vec<&str>, f64)> = shapes
        .iter()
        .map(|(entity, shape)| {
            let shared: Vec<&str> =
                shape.iter().map(String::as_str).filter(|k| keys.contains(k) && *k != "id").collect();
            let weight = shared.iter().map(|k| shapes.idf(k)).sum::<f64>();
            (entity, shared, weight)
        })
        .collect();
    let best_fit = fits.iter().map(|(_, _, w)| *w).fold(0.0, f64::max);
    for (entity, shared, weight) in fits {
        let shape = &shapes.keys[entity];
        let smaller = keys.len().min(shape.len()).max(1) as f64;
        let share = shared.len() as f64 / smaller;
        if shared.len() >= 3 && share >= 0.3 && weight >= 0.8 * best_fit {
            let strength = (0.4 + share * 0.5).min(0.9);
            let sample = crate::text::some_of(&shared, 4);
            let why = format!("it shares {} of its keys with a {} ({sample})", shared.len(), quoted(entity));
            add(entity, Evidence { strength, why: why.into() });
        }
    }
    if let Some(parent) = &object.parent_key {
        let entity = singular(parent);
        if entities.contains(&entity) || is_identity_word(&entity) {
            add(&entity, Evidence { strength: 0.8, why: format!("it sits under `{}`", quoted(parent)).into() });
        }
    }
    // What the path is about, for the operation's own results (not objects nested in them).
    let own_results = match object.path.0.iter().filter(|s| matches!(s, Step::Key(_))).count() {
        // The top level is the path's subject only when the path takes no entity (else its `id`
        // echoes the argument).
        0 => producer.takes.is_empty(),
        1 => object.path.0.last() == Some(&Step::Item),
        _ => false,
    };
    if own_results {
        for noun in &producer.nouns {
            if entities.contains(noun) && !producer.takes(noun) {
                add(
                    noun,
                    Evidence { strength: 0.75, why: format!("the operation's path is about {}s", quoted(noun)).into() },
                );
            }
        }
    }
    // The strongest reading first; a weak reading beside a much stronger one is dropped.
    found.sort_by(|a, b| b.1.strength.total_cmp(&a.1.strength));
    if let Some(best) = found.first().map(|(_, e)| e.strength) {
        found.retain(|(_, e)| e.strength >= best - 0.1);
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::toolset::test_support::openapi_catalog;

    const SPEC: &str = r#"{"openapi": "3.0.0", "info": {"title": "t", "version": "1"}, "paths": {
      "/search/person": {"get": {"parameters": [{"name": "query", "in": "query", "required": true, "schema": {"type": "string"}}],
        "responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {"type": "object", "properties": {
          "results": {"type": "array", "items": {"type": "object", "properties": {"id": {"type": "integer"}, "name": {"type": "string"}, "known_for_department": {"type": "string"}, "profile_path": {"type": "string"}}}}}}}}}}}},
      "/person/{person_id}": {"get": {"parameters": [{"name": "person_id", "in": "path", "required": true, "schema": {"type": "integer"}}],
        "responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {"type": "object", "properties": {
          "id": {"type": "integer"}, "name": {"type": "string"}, "known_for_department": {"type": "string"}, "profile_path": {"type": "string"}, "biography": {"type": "string"}}}}}}}}},
      "/person/{person_id}/movie_credits": {"get": {"parameters": [{"name": "person_id", "in": "path", "required": true, "schema": {"type": "integer"}}],
        "responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {"type": "object", "properties": {
          "id": {"type": "integer"},
          "cast": {"type": "array", "items": {"type": "object", "properties": {"id": {"type": "integer"}, "title": {"type": "string"}, "release_date": {"type": "string"}, "overview": {"type": "string"}}}}}}}}}}}},
      "/movie/{movie_id}": {"get": {"parameters": [{"name": "movie_id", "in": "path", "required": true, "schema": {"type": "integer"}}],
        "responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {"type": "object", "properties": {
          "id": {"type": "integer"}, "title": {"type": "string"}, "release_date": {"type": "string"}, "overview": {"type": "string"}, "budget": {"type": "integer"}}}}}}}}},
      "/movie/{movie_id}/credits": {"get": {"parameters": [{"name": "movie_id", "in": "path", "required": true, "schema": {"type": "integer"}}],
        "responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {"type": "object", "properties": {
          "id": {"type": "integer"},
          "cast": {"type": "array", "items": {"type": "object", "properties": {"id": {"type": "integer"}, "name": {"type": "string"}, "character": {"type": "string"}, "profile_path": {"type": "string"}, "known_for_department": {"type": "string"}}}}}}}}}}}}
    }}"#;

    fn flow() -> DataFlow {
        DataFlow::build(&openapi_catalog("tmdb", SPEC, None))
    }

    fn producers(flow: &DataFlow, tool: &str, param: &str) -> Vec<String> {
        flow.producers(tool, param).map(|e| format!("{} {}", e.from, e.field)).collect()
    }

    #[test]
    fn a_search_feeds_the_id_its_results_identify() {
        let flow = flow();
        let into_credits = producers(&flow, "tmdb.person_movie_credits", "person_id");
        assert!(into_credits.contains(&"tmdb.search_person results[].id".to_string()), "{into_credits:?}");
        // A person's cast entries are persons by their keys, a person's movie credits are movies.
        let into_movie = producers(&flow, "tmdb.movie_credits", "movie_id");
        assert_eq!(into_movie, vec!["tmdb.person_movie_credits cast[].id".to_string()]);
        let into_person = producers(&flow, "tmdb.person", "person_id");
        assert!(into_person.contains(&"tmdb.movie_credits cast[].id".to_string()), "{into_person:?}");
        assert!(!into_person.iter().any(|p| p.starts_with("tmdb.person_movie_credits")), "{into_person:?}");
        // An operation never feeds the entity it already takes (its `id` echoes the argument).
        assert!(!into_movie.iter().any(|p| p.starts_with("tmdb.movie ")), "{into_movie:?}");
    }

    #[test]
    fn every_edge_says_why() {
        let flow = flow();
        let edge = flow
            .producers("tmdb.person_movie_credits", "person_id")
            .find(|e| &*e.from == "tmdb.search_person")
            .unwrap();
        assert!(edge.weight > 0.8, "{edge:?}");
        let reasons: Vec<&str> = edge.evidence.iter().map(|e| &*e.why).collect();
        assert!(reasons.iter().any(|r| r.contains("shares")), "{reasons:?}");
        assert_eq!(edge.field.subscripts(), "[\"results\"][0][\"id\"]");
    }

    #[test]
    fn a_field_in_a_list_inside_a_list_item_feeds_weakly() {
        let spec = include_str!("../../examples/tmdb/specs/tmdb_oas.json");
        // The real spec has one quirk (`trending`'s nameless property), warned about elsewhere.
        let (catalog, _) = crate::toolset::test_support::openapi_catalog_and_diagnostics("tmdb", spec, None);
        let flow = DataFlow::build(&catalog);
        let from = |tool: &str| flow.producers("tmdb.movie_credits", "movie_id").find(|e| &*e.from == tool).unwrap();
        let nested = from("tmdb.search_person");
        assert_eq!(nested.field.to_string(), "results[].known_for[].id");
        assert!(nested.evidence.iter().any(|e| &*e.why == "it sits in a list inside a list's item"), "{nested:?}");
        let direct = from("tmdb.search_movie");
        assert_eq!(direct.field.to_string(), "results[].id");
        assert!(nested.weight < 0.7 * direct.weight, "{} vs {}", nested.weight, direct.weight);
    }

    /// RestBench TMDB's `trending` declares its list under a property named `""`; its example
    /// says `results`, and that is where the ids the next call needs are read.
    #[test]
    fn a_property_whose_name_was_lost_is_read_by_the_examples_name() {
        let spec = include_str!("../../examples/tmdb/specs/tmdb_oas.json");
        let (catalog, _) = crate::toolset::test_support::openapi_catalog_and_diagnostics("tmdb", spec, None);
        let flow = DataFlow::build(&catalog);
        let fields: Vec<String> = flow
            .producers("tmdb.movie_credits", "movie_id")
            .filter(|e| &*e.from == "tmdb.trending")
            .map(|e| e.field.to_string())
            .collect();
        assert_eq!(fields, ["results[].id"]);
    }

    /// A repository's `owner` has the keys of a pull request's `user`: both are users, so the
    /// owner's `login` feeds `username` — no operation in the spec says what an owner is.
    #[test]
    fn objects_of_one_shape_under_different_keys_are_one_kind() {
        let spec = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/specs/api.github.com.pulls.json"
        ))
        .unwrap();
        let flow = DataFlow::build(&openapi_catalog("github", &spec, None));
        let edge = flow
            .producers("github.users_repos", "username")
            .find(|e| &*e.from == "github.search_repositories")
            .expect("the searched repositories' owners feed username");
        assert_eq!(edge.field.to_string(), "items[].owner.login");
        assert!(edge.evidence.iter().any(|e| e.why.contains("keys of the objects under `user`")), "{edge:?}");
    }

    #[test]
    fn a_catalog_without_ids_has_no_edges() {
        let spec = r#"{"openapi": "3.0.0", "info": {"title": "t", "version": "1"}, "paths": {"/time": {"get": {"responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {"type": "object", "properties": {"now": {"type": "string"}}}}}}}}}}}"#;
        assert!(DataFlow::build(&openapi_catalog("clock", spec, None)).edges().is_empty());
    }
}
