"""chainsmith's runtime package: tool calls from a tool-chain program go to the chainsmith host.

Programs import toolsets as modules (``from chainsmith.tools import tmdb``) and call tools with
keyword arguments (``tmdb.search_person(query="Sofia Coppola")``). Each call is sent to the host
(the ``chainsmith run`` process, over a Unix socket it hands the program), which executes
it, records it in the run's trace and answers with the decoded JSON response. A failed call raises
:class:`ToolError`.

This package is embedded in the chainsmith binary and written to a cache folder at run time; it is
not meant to be installed.
"""

__all__ = ["ToolError", "call"]


class ToolError(Exception):
    """A tool call failed: the tool answered an error status, or could not be reached.

    ``tool`` is the tool's id (``toolset.name``), ``status`` the HTTP status (``None`` when there was
    no answer, e.g. connection refused, or for an MCP error result), ``message`` what went wrong.
    """

    def __init__(self, tool, status, message, call_id=None):
        self.tool = tool
        self.status = status
        self.message = message
        self.call_id = call_id
        super().__init__(tool, status, message)

    def __str__(self):
        status = "" if self.status is None else f" {self.status}"
        return f"{self.tool}{status}: {self.message}"

    def __repr__(self):
        return f"ToolError(tool={self.tool!r}, status={self.status!r}, message={self.message!r})"


def call(tool, **arguments):
    """Calls a tool by its id (``"tmdb.search_person"``) with keyword arguments."""
    from . import _host

    return _host.call_tool(tool, arguments)
