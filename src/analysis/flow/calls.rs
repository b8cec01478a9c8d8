//! Which tool a call reaches, and the module dialect: `tmdb.search_person(query=…)` or
//! `search_person(query=…)` after a toolset import, checked against the catalog's toolset and tool
//! names. Requests through `requests`/`httpx` are handed to `http`; methods of values the walk
//! follows (`.json()`, `.get()`) and builtins to `values`.

use tree_sitter::Node;

use super::args::{ArgSite, GivenArgs};
use super::{Ty, Walker};
use crate::analysis::dialect;
use crate::analysis::parse::{fields, range_of, text_of};
use crate::analysis::{Dialect, ToolCall, ToolsetImport};
use crate::text::{ByteRange, quoted};
use crate::toolset::Tool;

impl<'t, 'c> Walker<'t, 'c> {
    /// Records the program's toolset imports and reports the toolsets and tools they name that the
    /// catalog lacks.
    pub(super) fn check_imports(&mut self) {
        let tokens = std::mem::take(&mut self.imports.toolset_tokens);
        for (alias, toolset, range) in &tokens {
            let known = self.catalog.toolset(toolset).is_some();
            if !known {
                let names = self.catalog.toolsets.iter().map(|t| t.name.as_str());
                let mut d = self.error(*range, "unknown-toolset", format!("no toolset `{toolset}` in this workspace"));
                if let Some(best) = self.did_you_mean(toolset, names) {
                    d.message.push_str(&format!("; did you mean `{best}`?"));
                    d = d.with_suggestion(format!("Change to `{best}`"), *range, best);
                } else if !self.catalog.toolsets.is_empty() {
                    let known: Vec<&str> = self.catalog.toolsets.iter().map(|t| t.name.as_str()).take(8).collect();
                    d.message.push_str(&format!(" (toolsets: {})", known.join(", ")));
                }
                self.diag(d);
            }
            self.out.imports.push(ToolsetImport {
                alias: alias.clone(),
                toolset: toolset.clone(),
                range: *range,
                known,
            });
        }
        self.imports.toolset_tokens = tokens;
        let tool_tokens = std::mem::take(&mut self.imports.tool_tokens);
        for (toolset, tool, range) in &tool_tokens {
            self.check_tool_name(toolset, tool, *range);
        }
        self.imports.tool_tokens = tool_tokens;
    }

    /// Reports an unknown tool of a known toolset; returns the tool when it exists. An unknown
    /// toolset was reported at its import, so its tools are not reported again.
    fn check_tool_name(&mut self, toolset: &str, name: &str, range: ByteRange) -> Option<&'c Tool> {
        let ts = self.catalog.toolset(toolset)?;
        if let Some(tool) = self.catalog.tool(toolset, name) {
            return Some(tool);
        }
        if ts.unlisted.is_some() {
            return None; // no list to check against (an untrusted or unavailable MCP server)
        }
        let mut d = self.error(range, "unknown-tool", format!("toolset `{toolset}` has no tool `{name}`"));
        let catalog = self.catalog;
        if let Some(best) = self.did_you_mean(name, catalog.names_and_aliases(&ts.name)) {
            d.message.push_str(&format!("; did you mean `{best}`?"));
            d = d.with_suggestion(format!("Change to `{best}`"), range, best);
        }
        self.diag(d);
        None
    }

    pub(super) fn call(&mut self, node: Node<'t>) -> Ty<'c> {
        let Some(function) = node.child_by_field_id(fields().function.get()) else { return Ty::Unknown };
        let arguments = node.child_by_field_id(fields().arguments.get());
        match function.kind() {
            "attribute" => self.attribute_call(node, function, arguments),
            "identifier" => self.name_call(node, function, arguments),
            _ => self.opaque_call(node),
        }
    }

    /// `object.name(…)`: a toolset's tool, an HTTP library's function, or a method of a value.
    fn attribute_call(&mut self, node: Node<'t>, function: Node<'t>, arguments: Option<Node<'t>>) -> Ty<'c> {
        let object = function.child_by_field_id(fields().object.get());
        let attr = function.child_by_field_id(fields().attribute.get());
        let (Some(object), Some(attr)) = (object, attr) else { return self.opaque_call(node) };
        let attr_name = text_of(attr, self.text);
        let object_text = text_of(object, self.text);
        // `tmdb.search_person(…)` or `chainsmith.tools.tmdb.search_person(…)`.
        if let Some(toolset) = self.imports.toolsets.get(object_text).cloned() {
            return self.module_call(node, &toolset, attr_name, range_of(attr), arguments);
        }
        // `requests.get(…)`, unless the program rebound the module's name to a value it follows.
        if object.kind() == "identifier"
            && self.imports.http_modules.contains_key(object_text)
            && matches!(self.lookup(object_text), Ty::Unknown)
        {
            return self.http_library_call(node, attr_name, arguments);
        }
        let receiver = self.expr(object);
        match (receiver, attr_name) {
            (Ty::Session, "request") => self.http_call(node, None, arguments),
            (Ty::Session, m) if dialect::HTTP_METHODS.contains(&m) => self.http_call(node, Some(m), arguments),
            _ => self.value_method(receiver, attr_name, node, arguments),
        }
    }

    /// `name(…)`: a tool imported from a toolset, a function imported from an HTTP library, or a
    /// builtin.
    fn name_call(&mut self, node: Node<'t>, function: Node<'t>, arguments: Option<Node<'t>>) -> Ty<'c> {
        let name = text_of(function, self.text);
        if let Some((toolset, tool)) = self.imports.tools.get(name).cloned() {
            return self.module_call(node, &toolset, &tool, range_of(function), arguments);
        }
        if let Some(function) = self.imports.http_functions.get(name).cloned() {
            return self.http_library_call(node, &function, arguments);
        }
        self.builtin_call(name, arguments)
    }

    /// A call the analysis knows nothing about: only what its parts contain is walked.
    pub(super) fn opaque_call(&mut self, node: Node<'t>) -> Ty<'c> {
        self.walk_named_children(node);
        Ty::Unknown
    }

    pub(super) fn eval_args(&mut self, arguments: Option<Node<'t>>) {
        self.eval_args_collect(arguments);
    }

    /// Walks a call's arguments; returns what each positional one is (keyword ones are unknown).
    fn eval_args_collect(&mut self, arguments: Option<Node<'t>>) -> Vec<Ty<'c>> {
        let Some(arguments) = arguments else { return Vec::new() };
        if arguments.kind() == "generator_expression" {
            return vec![self.expr(arguments)];
        }
        let mut cursor = arguments.walk();
        let children: Vec<Node<'t>> = arguments.named_children(&mut cursor).collect();
        children
            .into_iter()
            .map(|c| match c.kind() {
                "keyword_argument" => {
                    c.child_by_field_id(fields().value.get()).map(|v| self.expr(v));
                    Ty::Unknown
                }
                _ => self.expr(c),
            })
            .collect()
    }

    fn module_call(
        &mut self,
        node: Node<'t>,
        toolset: &str,
        name: &str,
        name_range: ByteRange,
        arguments: Option<Node<'t>>,
    ) -> Ty<'c> {
        let target = self.target.take();
        let tool = self.check_tool_name(toolset, name, name_range);
        let given = self.keyword_arguments(arguments, tool);
        let call_index = self.out.calls.len();
        let args_range = arguments.map(range_of).unwrap_or(range_of(node));
        self.out.calls.push(ToolCall {
            tool,
            toolset: toolset.to_string(),
            name: name.to_string(),
            dialect: Dialect::Module,
            range: range_of(node),
            name_range,
            args_range,
            args: Vec::new(),
            target,
            statement_range: self.statement,
            line: node.start_position().row,
        });
        self.check_args(call_index, tool, given, false, name_range, arguments);
        Ty::response_of(tool, call_index)
    }

    /// A module-dialect call's arguments; other expressions among them are walked. A positional
    /// one is reported when the tool is known (tools take keywords only) and, when a required
    /// parameter is left for it (in order, skipping those given by keyword), it is checked as that
    /// parameter and the fix names it (`movie_credits(movie_id)` → `movie_credits(movie_id=movie_id)`),
    /// so the call is not also missing that argument. Optional parameters are not guessed: a fix
    /// applied without review must not turn `tool(title, year)` into `tool(title=title, language=year)`.
    fn keyword_arguments(&mut self, arguments: Option<Node<'t>>, tool: Option<&'c Tool>) -> GivenArgs<'t> {
        let mut given = GivenArgs::default();
        let Some(arguments) = arguments else { return given };
        if arguments.kind() != "argument_list" {
            // `tool(x for x in xs)`: one positional generator, bound to nothing.
            self.expr(arguments);
            if tool.is_some() {
                let d = self.error(
                    range_of(arguments),
                    "positional-argument",
                    "tool calls take keyword arguments only (name=value)".into(),
                );
                self.diag(d);
            }
            return given;
        }
        let mut cursor = arguments.walk();
        let children: Vec<Node<'t>> = arguments.named_children(&mut cursor).collect();
        let keywords: Vec<&str> = children
            .iter()
            .filter(|c| c.kind() == "keyword_argument")
            .filter_map(|c| c.child_by_field_id(fields().name.get()))
            .map(|n| text_of(n, self.text))
            .collect();
        let mut free = tool.into_iter().flat_map(|t| t.required()).filter(|p| !keywords.contains(&p.name.as_str()));
        for child in children {
            match child.kind() {
                "keyword_argument" => {
                    let (Some(n), v) =
                        (child.child_by_field_id(fields().name.get()), child.child_by_field_id(fields().value.get()))
                    else {
                        continue;
                    };
                    given.sites.push(ArgSite {
                        name: text_of(n, self.text).to_string(),
                        name_range: Some(range_of(n)),
                        value: v,
                        text_value: None,
                        value_range: v.map(range_of).unwrap_or(range_of(child)),
                        location: None,
                    });
                }
                "dictionary_splat" | "list_splat" => {
                    given.incomplete = true;
                    self.expr(child);
                }
                "comment" => {}
                _ if tool.is_none() => {
                    self.expr(child);
                }
                _ => {
                    let range = range_of(child);
                    let mut d = self.error(
                        range,
                        "positional-argument",
                        "tool calls take keyword arguments only (name=value)".into(),
                    );
                    match free.next() {
                        Some(param) => {
                            d.message.push_str(&format!("; this one is taken as `{}`", quoted(&param.name)));
                            // Made for each call: a name longer than a message quotes gets no fix.
                            if param.name.len() <= crate::text::QUOTED_CHARS {
                                d = d.with_suggestion(
                                    format!("Pass it as `{}=`", param.name),
                                    ByteRange::new(range.start, range.start),
                                    format!("{}=", param.name),
                                );
                            }
                            // Its value is walked once, by the argument checks.
                            given.sites.push(ArgSite {
                                name: param.name.clone(),
                                name_range: None,
                                value: Some(child),
                                text_value: None,
                                value_range: range,
                                location: None,
                            });
                        }
                        None => {
                            self.expr(child);
                        }
                    }
                    self.diag(d);
                }
            }
        }
        given
    }
}
