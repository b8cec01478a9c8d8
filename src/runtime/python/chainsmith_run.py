"""Runs a tool-chain program under chainsmith (started by the host, never by hand).

The program runs as ``__main__`` with the ``sys.path`` and ``sys.argv`` that ``python3 PROGRAM``
would give it; the HTTP dialect's hooks are installed first. An uncaught exception is reported to
the host (type, message, the program lines of the traceback, the tool call it came from) and then
printed as Python would, without this script's own frames.
"""

import os
import sys
import types


def _main():
    program = os.environ["CHAINSMITH_PROGRAM"]
    source_file = os.environ.get("CHAINSMITH_SOURCE") or program
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[0] = os.path.dirname(os.path.abspath(program))
    if here not in sys.path:
        sys.path.append(here)
    sys.argv = [program] + sys.argv[1:]

    fault_file = os.environ.get("CHAINSMITH_FAULT_FILE")
    if fault_file:
        import faulthandler
        import signal

        # On a timeout the host asks where the program is before stopping it. The file is a FIFO
        # the host reads: opened for reading and writing, it opens without waiting for the host.
        faulthandler.register(signal.SIGUSR1, file=os.open(fault_file, os.O_RDWR), all_threads=False)

    from chainsmith import _host, _http

    _http.install()
    sandbox = os.environ.get("CHAINSMITH_SANDBOX")
    if sandbox:
        _name_the_sandbox(sandbox)

    main = types.ModuleType("__main__")
    main.__file__ = program
    main.__builtins__ = __builtins__
    sys.modules["__main__"] = main
    try:
        with open(source_file, "rb") as f:
            source = f.read()
        if source_file != program:
            # chainsmith's copy: the text it read and judged, written as UTF-8 whatever coding
            # line it holds (which compiling text ignores). Tracebacks show its lines, not those
            # of a file the run may not read or that changed since.
            import io
            import linecache

            source = source.decode("utf-8-sig")
            lines = io.StringIO(source, newline="").readlines()
            linecache.cache[program] = (len(source), None, lines, program)
        code = compile(source, program, "exec")
        exec(code, main.__dict__)
    except SystemExit:
        raise
    except _host.Stopped:
        os._exit(1)
    except BaseException as exc:  # noqa: B902 - every failure is reported, then printed
        _report(_host, exc)
        sys.exit(1)


def _name_the_sandbox(summary):
    """The kernel blocks the network; this says who did it: a connection that is not to the
    host's Unix socket (tools and toolsets' base URLs go there) fails with an error naming the
    sandbox instead of a bare "Network is unreachable"."""
    import socket

    def hook(event, args):
        if event == "socket.connect" and getattr(args[0], "family", None) != socket.AF_UNIX:
            raise PermissionError(
                f"chainsmith sandbox: this program has no network ({summary}); "
                f"call tools through chainsmith, or set [runtime] sandbox = \"off\""
            )
        if event == "socket.getaddrinfo":
            raise PermissionError(
                f"chainsmith sandbox: this program has no network, no name lookup of {args[0]!r} ({summary})"
            )

    writable = [p for p in os.environ.get("CHAINSMITH_WRITABLE", "").split(os.pathsep) if p]
    writes = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC

    def open_hook(event, args):
        if event != "open" or not writable or not isinstance(args[0], str):
            return
        path, mode, flags = args
        wants_write = any(c in (mode or "") for c in "wax+") or bool((flags or 0) & writes)
        if not wants_write:
            return
        full = os.path.realpath(path)
        if not any(full == w or full.startswith(w.rstrip(os.sep) + os.sep) for w in writable):
            raise PermissionError(
                f"chainsmith sandbox: this program may not write {path!r} ({summary}); "
                f"list the folder in [runtime] writable to allow it"
            )

    if "no network" in summary:
        sys.addaudithook(hook)
    if writable:
        sys.addaudithook(open_hook)


def _report(_host, exc):
    import traceback

    try:
        sys.stdout.flush()
    except Exception:
        pass
    try:
        description = _host.describe_error(exc)
        if isinstance(exc, SyntaxError) and not description["frames"] and exc.lineno:
            col = (exc.offset - 1) if exc.offset else None
            end_line = getattr(exc, "end_lineno", None) or exc.lineno
            end_offset = getattr(exc, "end_offset", None)
            end_col = end_offset - 1 if end_offset and end_offset - 1 > (col or 0) else None
            description["frames"] = [{"line": exc.lineno, "end_line": end_line, "col": col, "end_col": end_col}]
            description["message"] = exc.msg
        _host.request(description)
    except BaseException:
        pass
    package = os.path.dirname(os.path.abspath(_host.__file__)) + os.sep
    here = os.path.abspath(__file__)
    if exc.__cause__ is None and (exc.__context__ is None or exc.__suppress_context__):
        # The program's frames and those of the libraries it called, not chainsmith's own.
        frames = [
            f
            for f in traceback.extract_tb(exc.__traceback__)
            if not f.filename.startswith(package) and os.path.abspath(f.filename) != here
        ]
        text = traceback.format_exception_only(type(exc), exc)
        if frames:
            text = ["Traceback (most recent call last):\n"] + traceback.format_list(frames) + text
        sys.stderr.write("".join(text))
    else:
        tb = exc.__traceback__
        while tb is not None and not _host.is_program_file(tb.tb_frame.f_code.co_filename):
            tb = tb.tb_next
        traceback.print_exception(type(exc), exc, tb)
    sys.stderr.flush()


_main()
