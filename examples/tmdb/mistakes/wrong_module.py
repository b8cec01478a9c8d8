"""Deliberate mistake: a toolset that the workspace does not define (`tmbd` for `tmdb`).

See EXPECTED.md. Calls through the unknown module are not reported again.
"""
from chainsmith.tools import tmbd  # mistake: unknown-toolset

found = tmbd.search_person(query="Sofia Coppola")
print(found)
