"""The HTTP dialect: ``requests`` and ``httpx`` calls to a toolset's base URL go through the host.

An import hook patches ``requests.Session.send`` and ``httpx.Client.send`` /
``httpx.AsyncClient.send`` when the program imports those libraries. A request whose URL starts with
a known base URL is sent to the host, which executes it (adding the toolset's auth), traces it and
counts it against the run's limits; the program gets a genuine ``requests.Response`` /
``httpx.Response`` back. Every other URL is left alone.
"""

import importlib.abc
import importlib.machinery
import os
import sys

from . import _host

_HOOKED = ("requests", "httpx")


def _python():
    return sys.executable or "python3"


def _missing(name):
    return ModuleNotFoundError(
        f"No module named '{name}': this program uses `{name}` (the HTTP dialect), which is not installed "
        f"for the interpreter {_python()} ([runtime] python in chainsmith.toml). Install it with "
        f"`{_python()} -m pip install {name}`, or write the chain in the module dialect "
        f"(`from chainsmith.tools import <toolset>`).",
        name=name,
    )


class _PatchingLoader(importlib.abc.Loader):
    def __init__(self, loader, name):
        self._loader = loader
        self._name = name

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        try:
            _PATCHES[self._name](module)
        except Exception as e:  # a newer library layout must not break the program
            sys.stderr.write(f"chainsmith: could not route {self._name} through the host: {e!r}\n")

    def __getattr__(self, name):
        return getattr(self._loader, name)


class _HookFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        if fullname not in _HOOKED:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        for finder in sys.meta_path:
            if spec is not None:
                break
            if finder is not self and not isinstance(finder, _HookFinder) and hasattr(finder, "find_spec"):
                spec = finder.find_spec(fullname, path, target)
        if spec is None:
            raise _missing(fullname)
        if spec.loader is not None:
            spec.loader = _PatchingLoader(spec.loader, fullname)
        return spec


def _tagged(response, reply):
    response._chainsmith_call = reply.get("id")
    return response


def _patch_requests(requests):
    import datetime
    import http.client

    from requests.structures import CaseInsensitiveDict
    from requests.utils import get_encoding_from_headers

    session_class = requests.sessions.Session
    original = session_class.send
    if getattr(original, "_chainsmith", False):
        return

    def send(self, request, **kwargs):
        url = request.url
        if _host.route(url) is None:
            return original(self, request, **kwargs)
        body = request.body
        if isinstance(body, str):
            body = body.encode("utf-8")
        elif body is not None and not isinstance(body, (bytes, bytearray)):
            body = b"".join(chunk if isinstance(chunk, bytes) else str(chunk).encode() for chunk in body)
        reply = _host.http(request.method, url, [[k, v] for k, v in request.headers.items()], body)
        if not reply.get("ok"):
            error = requests.exceptions.ConnectionError((reply.get("error") or {}).get("message", "failed"), request=request)
            error._chainsmith_call = reply.get("id")
            raise error
        response = requests.models.Response()
        response.status_code = reply["status"]
        response.reason = reply.get("reason") or http.client.responses.get(reply["status"], "")
        response.headers = CaseInsensitiveDict({k: v for k, v in reply.get("headers", [])})
        response._content = _host.reply_body(reply)
        response._content_consumed = True
        response.url = reply.get("url") or url
        response.encoding = get_encoding_from_headers(response.headers)
        response.request = request
        response.elapsed = datetime.timedelta(milliseconds=reply.get("duration_ms", 0))
        response.connection = None
        _tagged(response, reply)
        response = requests.hooks.dispatch_hook("response", request.hooks, response, **kwargs)
        return response

    send._chainsmith = True
    session_class.send = send


def _patch_httpx(httpx):
    def routed(request):
        url = str(request.url)
        if _host.route(url) is None:
            return None
        body = request.read()
        reply = _host.http(request.method, url, [[k, v] for k, v in request.headers.multi_items()], body or None)
        if not reply.get("ok"):
            error = httpx.ConnectError((reply.get("error") or {}).get("message", "failed"), request=request)
            error._chainsmith_call = reply.get("id")
            raise error
        response = httpx.Response(
            reply["status"],
            headers=[(k, v) for k, v in reply.get("headers", []) if k.lower() not in ("content-encoding", "transfer-encoding", "content-length")],
            content=_host.reply_body(reply),
            request=request,
        )
        return _tagged(response, reply)

    sync_original = httpx.Client.send
    if not getattr(sync_original, "_chainsmith", False):

        def send(self, request, **kwargs):
            response = routed(request)
            return sync_original(self, request, **kwargs) if response is None else response

        send._chainsmith = True
        httpx.Client.send = send

    async_original = httpx.AsyncClient.send
    if not getattr(async_original, "_chainsmith", False):

        async def send_async(self, request, **kwargs):
            response = routed(request)
            return await async_original(self, request, **kwargs) if response is None else response

        send_async._chainsmith = True
        httpx.AsyncClient.send = send_async


_PATCHES = {"requests": _patch_requests, "httpx": _patch_httpx}


def install():
    if os.environ.get(_host.DOOR_ENV) is None:
        return
    if not any(isinstance(f, _HookFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _HookFinder())
    for name in _HOOKED:
        module = sys.modules.get(name)
        if module is not None:
            _PATCHES[name](module)
