"""Show me some English movies rating no less than 7.0 and no earlier than 2021

RestBench TMDB task #79.
Gold path: GET /discover/movie
"""
import os

import httpx

BASE = "https://api.themoviedb.org/3"
# Under chainsmith the program never sees the key: chainsmith adds it to every request under the
# toolset's base URL (`auth` in chainsmith.toml). Run with plain python3, it passes $TMDB_KEY itself.
AUTH = {"api_key": os.environ["TMDB_KEY"]} if "TMDB_KEY" in os.environ else {}

movies = httpx.get(
    BASE + "/discover/movie",
    params={
        **AUTH,
        "with_original_language": "en",
        "vote_average.gte": 7.0,
        "vote_count.gte": 200,
        "primary_release_date.gte": "2021-01-01",
        "sort_by": "vote_average.desc",
    },
).json()

print(f"{movies['total_results']} English movies since 2021 rated 7.0 or more; the top ones:")
for m in movies["results"][:10]:
    print(f" - {m['title']} ({m['release_date']}): {m['vote_average']}")
