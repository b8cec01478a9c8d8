#!/usr/bin/env python3
"""A TMDB-like HTTP server for chainsmith's tests (Python standard library only).

It answers every GET endpoint of an OpenAPI document (RestBench's TMDB spec) with the response
example the document gives for status 200, under the spec's base path (``/3``) or at the root.

    python3 tmdb_server.py --spec examples/tmdb/specs/tmdb_oas.json [--api-key KEY]
                           [--fail PATH_PREFIX=STATUS]... [--slow PATH_PREFIX=SECONDS]...

It listens on 127.0.0.1 on a free port and prints ``PORT <n>`` as its first line. It stops when its
standard input closes (so it never outlives the test that started it), or on SIGTERM.

Switches for failures:
- a path segment ``404`` or ``500`` (``/person/404``) answers that status with TMDB's error body;
- ``--fail /person/=404`` answers 404 for every path starting with ``/person/`` (after ``/3``);
- ``--slow /search/person=5`` answers after 5 seconds;
- ``--api-key KEY``: requests without ``api_key=KEY`` in the query (or ``Authorization: Bearer KEY``)
  get 401;
- ``POST .../virtual`` answers like a ToolBench server: ``{"error": "", "response": "<JSON text>"}``
  echoing the call's ``tool_name``, ``api_name`` and ``tool_input``;
- ``GET .../undocumented/vaults/search?query=…`` hands out a vault ID and ``GET
  .../undocumented/vaults/<id>`` answers only for that ID (404 otherwise): endpoints no spec
  describes, one needing an ID from the other (for probing);
- at run time: ``POST /__control`` with ``{"fail": {prefix: status}, "slow": {prefix: seconds}}``
  replaces the failure and delay rules; ``GET /__requests`` lists the requests received so far
  (``[{method, path, query, headers}]``, headers lower-cased); ``POST /__reset`` clears that list.
"""

import argparse
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

NOT_FOUND = {"status_code": 34, "status_message": "The resource you requested could not be found.", "success": False}
SERVER_ERROR = {"status_code": 11, "status_message": "Internal error: Something went wrong, contact TMDb.", "success": False}
BAD_KEY = {"status_code": 7, "status_message": "Invalid API key: You must be granted a valid key.", "success": False}


def load_routes(spec_path):
    """[(segments, example)] for every GET operation with a 200 example; segments hold ``None``
    for path parameters."""
    with open(spec_path, encoding="utf-8") as f:
        spec = json.load(f)
    routes = []
    for path, item in spec.get("paths", {}).items():
        operation = item.get("get")
        if not isinstance(operation, dict):
            continue
        ok = operation.get("responses", {}).get("200", {})
        media = ok.get("content", {}).get("application/json", {})
        example = media.get("example")
        if example is None:
            for value in (media.get("examples") or {}).values():
                if isinstance(value, dict) and "value" in value:
                    example = value["value"]
                    break
        if example is None:
            continue
        segments = [None if s.startswith("{") else s for s in path.strip("/").split("/")]
        routes.append((segments, example))
    return routes


class State:
    def __init__(self, routes, api_key, fail, slow):
        self.routes = routes
        self.api_key = api_key
        self.fail = dict(fail)
        self.slow = dict(slow)
        self.requests = []
        self.lock = threading.Lock()

    def match(self, path):
        segments = path.strip("/").split("/")
        best = None
        for template, example in self.routes:
            if len(template) != len(segments):
                continue
            if all(t is None or t == s for t, s in zip(template, segments)):
                literal = sum(t is not None for t in template)
                if best is None or literal > best[0]:
                    best = (literal, template, example)
        return best


def make_handler(state):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Headers and body go out in separate writes: without this, Nagle's algorithm and the
        # client's delayed ACK add 40 ms to every answer.
        disable_nagle_algorithm = True

        def log_message(self, format, *args):
            pass

        def send_json(self, status, value):
            body = json.dumps(value).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json;charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def read_body(self):
            length = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(length) if length else b""

        def do_POST(self):
            url = urlsplit(self.path)
            body = self.read_body()
            if url.path == "/__control":
                rules = json.loads(body or b"{}")
                with state.lock:
                    state.fail = {k: int(v) for k, v in (rules.get("fail") or {}).items()}
                    state.slow = {k: float(v) for k, v in (rules.get("slow") or {}).items()}
                return self.send_json(200, {"fail": state.fail, "slow": state.slow})
            if url.path == "/__reset":
                with state.lock:
                    state.requests.clear()
                return self.send_json(200, {})
            self.record(url, body)
            if url.path.endswith("/virtual"):
                # A ToolBench / StableToolBench server: the call comes back as the response text.
                call = json.loads(body or b"{}")
                answer = {"tool": call.get("tool_name"), "api": call.get("api_name"), "input": call.get("tool_input")}
                return self.send_json(200, {"error": "", "response": json.dumps(answer)})
            return self.send_json(405, {"status_code": 3, "status_message": "Only GET is served here."})

        def record(self, url, body=b""):
            with state.lock:
                state.requests.append(
                    {
                        "method": self.command,
                        "path": url.path,
                        "query": {k: v if len(v) > 1 else v[0] for k, v in parse_qs(url.query, keep_blank_values=True).items()},
                        "headers": {k.lower(): v for k, v in self.headers.items()},
                        "body": body.decode("utf-8", "replace"),
                    }
                )

        def do_GET(self):
            url = urlsplit(self.path)
            if url.path == "/__requests":
                with state.lock:
                    return self.send_json(200, list(state.requests))
            self.record(url)
            path = url.path
            if path == "/3" or path.startswith("/3/"):
                path = path[2:] or "/"
            with state.lock:
                delay = next((s for prefix, s in state.slow.items() if path.startswith(prefix)), 0)
                forced = next((code for prefix, code in state.fail.items() if path.startswith(prefix)), None)
            if delay:
                time.sleep(delay)
            if state.api_key is not None:
                query = parse_qs(url.query)
                bearer = self.headers.get("Authorization", "")
                if query.get("api_key", [None])[0] != state.api_key and bearer != f"Bearer {state.api_key}":
                    return self.send_json(401, BAD_KEY)
            segments = path.strip("/").split("/")
            if forced is None and "500" in segments:
                forced = 500
            if forced is None and "404" in segments:
                forced = 404
            if forced is not None:
                return self.send_json(forced, SERVER_ERROR if forced >= 500 else NOT_FOUND)
            if path.startswith("/undocumented/"):
                return self.undocumented(path, parse_qs(url.query))
            found = state.match(path)
            if found is None:
                return self.send_json(404, NOT_FOUND)
            return self.send_json(200, found[2])

        def undocumented(self, path, query):
            # Endpoints no spec describes (for probing): a search handing out vault IDs, and a
            # lookup that only knows the IDs the search hands out.
            segments = path.strip("/").split("/")
            if segments[1:] == ["vaults", "search"]:
                title = (query.get("query") or [""])[0]
                return self.send_json(
                    200, {"page": 1, "results": [{"vault_id": "v-7731", "title": title or "Archive", "owner": "ana"}]}
                )
            if len(segments) == 3 and segments[1] == "vaults" and segments[2] in VAULTS:
                return self.send_json(200, VAULTS[segments[2]])
            return self.send_json(404, NOT_FOUND)

    return Handler


VAULTS = {
    "v-7731": {
        "vault_id": "v-7731",
        "title": "Archive",
        "locked": False,
        "items": [{"name": "deed.pdf", "size": 2048}, {"name": "notes.txt", "size": 12, "tags": ["old"]}],
    }
}


def rule(text, convert):
    prefix, _, value = text.rpartition("=")
    if not prefix:
        raise argparse.ArgumentTypeError(f"expected PATH_PREFIX=VALUE, got {text!r}")
    return prefix, convert(value)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", required=True)
    parser.add_argument("--api-key")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--fail", action="append", default=[], type=lambda t: rule(t, int))
    parser.add_argument("--slow", action="append", default=[], type=lambda t: rule(t, float))
    args = parser.parse_args()

    state = State(load_routes(args.spec), args.api_key, args.fail, args.slow)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), make_handler(state))
    server.daemon_threads = True
    print(f"PORT {server.server_address[1]}", flush=True)

    def watch_stdin():
        try:
            while sys.stdin.buffer.read(1024):
                pass
        except (OSError, ValueError):
            pass
        os._exit(0)

    threading.Thread(target=watch_stdin, daemon=True).start()
    server.serve_forever()


if __name__ == "__main__":
    main()
