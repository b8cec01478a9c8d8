"""The channel to the chainsmith host: newline-delimited JSON over a Unix domain socket.

Every request is one line of JSON and gets one line of JSON back. The connection is per process
(re-opened after a fork) and serialised by a lock, so threads may call tools concurrently. A
connection is one end of a fresh socket pair whose other end is sent to the host through the door
the run inherits (the descriptor ``CHAINSMITH_HOST_FD`` names); no socket has a path.
"""

import json
import math
import os
import socket
import sys
import threading

from . import ToolError

DOOR_ENV = "CHAINSMITH_HOST_FD"
PROGRAM_ENV = "CHAINSMITH_PROGRAM"

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


class HostUnavailable(RuntimeError):
    pass


class Stopped(BaseException):
    """The host stopped the run (a limit was reached); not an ``Exception`` so that ``except
    Exception`` in the program cannot swallow it."""


def program_path():
    path = os.environ.get(PROGRAM_ENV)
    return os.path.realpath(path) if path else None


_PROGRAM = program_path()


_program_files = {}


def is_program_file(filename):
    if not filename or _PROGRAM is None:
        return False
    if filename == _PROGRAM:
        return True
    known = _program_files.get(filename)
    if known is None:
        try:
            known = os.path.realpath(filename) == _PROGRAM
        except (OSError, ValueError):
            known = False
        _program_files[filename] = known
    return known


def caller_line():
    """The line of the program (the file being run) that is executing the current tool call:
    the innermost frame of the program file, or ``None`` when the call does not come from it."""
    frame = sys._getframe(1)
    while frame is not None:
        if is_program_file(frame.f_code.co_filename):
            return frame.f_lineno
        frame = frame.f_back
    return None


class _Connection:
    def __init__(self):
        self._lock = threading.Lock()
        self._sock = None
        self._reader = None
        self._pid = None

    def _connect(self):
        door = os.environ.get(DOOR_ENV)
        if not door:
            raise HostUnavailable(
                "chainsmith tools only run under `chainsmith run` or the chainsmith editor command "
                f"(no host: {DOOR_ENV} is not set)"
            )
        sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            with socket.socket(fileno=os.dup(int(door))) as channel:
                socket.send_fds(channel, [b"c"], [theirs.fileno()])
        except (OSError, ValueError) as e:
            sock.close()
            raise HostUnavailable(f"cannot reach the chainsmith host (descriptor {door}): {e}") from None
        finally:
            theirs.close()
        self._sock = sock
        self._reader = sock.makefile("rb")
        self._pid = os.getpid()

    def request(self, message):
        data = (json.dumps(message, separators=(",", ":"), ensure_ascii=False) + "\n").encode("utf-8")
        with self._lock:
            if self._sock is None or self._pid != os.getpid():
                self._connect()
            try:
                self._sock.sendall(data)
                line = self._reader.readline()
            except OSError as e:
                self._sock = None
                raise HostUnavailable(f"the chainsmith host went away: {e}") from None
        if not line:
            self._sock = None
            raise HostUnavailable("the chainsmith host closed the connection")
        reply = json.loads(line)
        if isinstance(reply, dict) and reply.get("stop"):
            raise Stopped(reply["stop"])
        return reply


_connection = _Connection()
_manifest = None
_manifest_lock = threading.Lock()


def request(message):
    return _connection.request(message)


def manifest():
    """``{"toolsets": {name: {"base_url": str | None, "tools": {tool: [param, ...]}}}}``."""
    global _manifest
    with _manifest_lock:
        if _manifest is None:
            _manifest = request({"op": "hello", "pid": os.getpid()})
        return _manifest


def toolsets():
    return manifest().get("toolsets", {})


def _jsonable(value, where):
    """Arguments as JSON values: tuples and sets become lists; anything else that JSON cannot
    carry is a ``TypeError`` naming the argument."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise TypeError(f"{where} is {value!r}, which JSON cannot carry")
        return value
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise TypeError(f"{where} has a key {k!r} that is not a string")
            out[k] = _jsonable(v, f"{where}[{k!r}]")
        return out
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=repr) if isinstance(value, (set, frozenset)) else value
        return [_jsonable(v, f"{where}[{i}]") for i, v in enumerate(items)]
    raise TypeError(f"{where} is a {type(value).__name__}, which is not JSON (use str, int, float, bool, list or dict)")


def call_tool(tool, arguments):
    """Runs one tool call through the host: the decoded response, or ``ToolError``."""
    args = {name: _jsonable(value, f"argument `{name}` of {tool}") for name, value in arguments.items()}
    reply = request({"op": "call", "tool": tool, "arguments": args, "line": caller_line()})
    if reply.get("ok"):
        return reply.get("response")
    error = reply.get("error") or {}
    raise ToolError(error.get("tool", tool), error.get("status"), error.get("message", "the call failed"), reply.get("id"))


def http(method, url, headers, body):
    """Sends an HTTP-dialect request through the host. ``body`` is bytes or ``None``; bodies that
    are not UTF-8 travel as ``body_latin1`` (one character per byte). The reply is ``{"ok": True,
    "id", "status", "reason", "headers": [[k, v]...], "body" | "body_latin1", "url"}`` or
    ``{"ok": False, "id", "error": {"message"}}``."""
    message = {"op": "http", "method": method, "url": url, "headers": headers, "line": caller_line()}
    if body is not None:
        try:
            message["body"] = bytes(body).decode("utf-8")
        except UnicodeDecodeError:
            message["body_latin1"] = bytes(body).decode("latin-1")
    return request(message)


def reply_body(reply):
    if "body_latin1" in reply:
        return reply["body_latin1"].encode("latin-1")
    return (reply.get("body") or "").encode("utf-8")


def route(url):
    """The toolset whose base URL ``url`` starts with (the longest one), else ``None``."""
    if os.environ.get(DOOR_ENV) is None:
        return None
    stripped = _strip_scheme(url)
    best = None
    for name, toolset in toolsets().items():
        base = toolset.get("base_url")
        if not base:
            continue
        base = _strip_scheme(base.rstrip("/"))
        if not base or not stripped.startswith(base):
            continue
        rest = stripped[len(base):]
        if rest and rest[0] not in "/?#":
            continue
        if best is None or len(base) > best[1]:
            best = (name, len(base))
    return best[0] if best else None


def _strip_scheme(url):
    lower = url[:8].lower()
    if lower.startswith("https://"):
        return url[8:]
    if lower.startswith("http://"):
        return url[7:]
    return url


def describe_error(exc):
    """What the host needs to attribute an uncaught exception: its type and message, the program
    lines of its traceback (outermost first, with columns where Python knows them) and the tool
    call it came from, when it came from one."""
    import traceback

    frames = []
    for frame in traceback.extract_tb(exc.__traceback__):
        if is_program_file(frame.filename):
            frames.append(
                {
                    "line": frame.lineno,
                    "end_line": getattr(frame, "end_lineno", None),
                    "col": getattr(frame, "colno", None),
                    "end_col": getattr(frame, "end_colno", None),
                }
            )
    call_id = getattr(exc, "call_id", None)
    if call_id is None:
        response = getattr(exc, "response", None)
        call_id = getattr(response, "_chainsmith_call", None)
    if call_id is None:
        call_id = getattr(exc, "_chainsmith_call", None)
    message = str(exc)
    if isinstance(exc, ToolError):
        message = exc.message
    elif isinstance(exc, PermissionError) and exc.filename and os.environ.get("CHAINSMITH_WRITABLE"):
        # The sandbox's refusal reads like any other: say what a run may read and how to widen it
        # (where Landlock confines files: then chainsmith names the writable folders).
        message += (
            " (a confined program reads the workspace, its interpreter's folders and what every user may;"
            " list the path in [runtime] readable to read it, [runtime] writable to write it)"
        )
    return {
        "op": "error",
        "type": type(exc).__name__,
        "message": message,
        "frames": frames,
        "call": call_id,
        "tool": getattr(exc, "tool", None) if isinstance(exc, ToolError) else None,
        "status": getattr(exc, "status", None) if isinstance(exc, ToolError) else None,
    }
