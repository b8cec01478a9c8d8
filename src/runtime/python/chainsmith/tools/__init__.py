"""``chainsmith.tools.<toolset>``: one module per toolset of the workspace, made on first import.

``from chainsmith.tools import tmdb``, ``import chainsmith.tools.tmdb as t`` and
``from chainsmith.tools.tmdb import search_person`` all work for every toolset the host knows;
each attribute of a toolset module is a function taking the tool's arguments as keywords.
"""

import difflib
import importlib
import importlib.abc
import importlib.machinery
import sys
import types

from .. import _host

_PREFIX = __name__ + "."


def _suggest(word, candidates):
    close = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.75)
    return f"; did you mean `{close[0]}`?" if close else ""


def _make_tool(toolset, name, params):
    tool_id = f"{toolset}.{name}"

    def tool(*args, **kwargs):
        if args:
            raise TypeError(f"{tool_id}() takes keyword arguments only ({', '.join(params) or 'none'}), got {len(args)} positional")
        return _host.call_tool(tool_id, kwargs)

    tool.__name__ = name
    tool.__qualname__ = name
    tool.__module__ = _PREFIX + toolset
    tool.__doc__ = f"The tool {tool_id}; arguments: {', '.join(params) or 'none'}."
    return tool


class ToolsetModule(types.ModuleType):
    """A toolset: its tools appear as attributes on first use."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        toolset = self.__name__[len(_PREFIX):]
        tools = _host.toolsets().get(toolset, {}).get("tools", {})
        if name not in tools:
            raise AttributeError(f"toolset `{toolset}` has no tool `{name}`{_suggest(name, tools)}")
        function = _make_tool(toolset, name, tools[name])
        setattr(self, name, function)
        return function

    def __dir__(self):
        toolset = self.__name__[len(_PREFIX):]
        return sorted(set(super().__dir__()) | set(_host.toolsets().get(toolset, {}).get("tools", {})))


class _ToolsetFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith(_PREFIX) or "." in fullname[len(_PREFIX):]:
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=False)

    def create_module(self, spec):
        toolset = spec.name[len(_PREFIX):]
        try:
            known = _host.toolsets()
        except _host.HostUnavailable:
            known = None
        if known is not None and toolset not in known:
            listed = ", ".join(sorted(known)) or "none"
            raise ModuleNotFoundError(
                f"No module named '{spec.name}': the workspace has no toolset `{toolset}`"
                f"{_suggest(toolset, known)} (toolsets: {listed})"
            )
        return ToolsetModule(spec.name)

    def exec_module(self, module):
        module.__file__ = None


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    try:
        return importlib.import_module(_PREFIX + name)
    except ModuleNotFoundError as e:
        raise AttributeError(str(e)) from None


def __dir__():
    try:
        return sorted(_host.toolsets())
    except _host.HostUnavailable:
        return []


if not any(isinstance(f, _ToolsetFinder) for f in sys.meta_path):
    sys.meta_path.insert(0, _ToolsetFinder())
