#!/usr/bin/env python3
"""Trims an OpenAPI 3 description to the paths whose template starts with one of the given
prefixes, keeping every component those paths reach through `$ref`s (transitively) and nothing
else, so a large real spec can be vendored as a test input of a reasonable size.

    scripts/trim-openapi.py SPEC.json OUT.json /repos/{owner}/{repo}/pulls /users/{username}

The output is the same JSON (key order kept, two-space indentation); info, servers and security
are copied unchanged."""

import json
import sys


def refs_in(node, found):
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/"):
            found.add(ref)
        for value in node.values():
            refs_in(value, found)
    elif isinstance(node, list):
        for value in node:
            refs_in(value, found)


def pointer(doc, ref):
    node = doc
    for part in ref[2:].split("/"):
        node = node[part.replace("~1", "/").replace("~0", "~")]
    return node


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    source, out, prefixes = sys.argv[1], sys.argv[2], sys.argv[3:]
    with open(source, encoding="utf-8") as f:
        doc = json.load(f)
    paths = {p: item for p, item in doc["paths"].items() if any(p.startswith(x) for x in prefixes)}
    seen, todo = set(), set()
    refs_in(paths, todo)
    for scheme in doc.get("components", {}).get("securitySchemes", {}):
        todo.add(f"#/components/securitySchemes/{scheme}")
    while todo:
        ref = todo.pop()
        if ref in seen:
            continue
        seen.add(ref)
        refs_in(pointer(doc, ref), todo)
    components = {}
    for kind, members in doc.get("components", {}).items():
        kept = {name: value for name, value in members.items() if f"#/components/{kind}/{name}" in seen}
        if kept:
            components[kind] = kept
    trimmed = {key: value for key, value in doc.items() if key not in ("paths", "components", "webhooks")}
    trimmed["paths"] = paths
    trimmed["components"] = components
    with open(out, "w", encoding="utf-8") as f:
        json.dump(trimmed, f, indent=2, ensure_ascii=False)
        f.write("\n")
    operations = sum(1 for item in paths.values() for m in item if m in ("get", "put", "post", "delete", "patch", "head", "options", "trace"))
    print(f"{out}: {len(paths)} paths, {operations} operations, {sum(len(v) for v in components.values())} components", file=sys.stderr)


if __name__ == "__main__":
    main()
