"""What is top-1 rated movie?

RestBench TMDB task #16.
Gold path: GET /movie/top_rated
"""
import os

import requests

# Under chainsmith the program never sees the key: chainsmith adds it to every request under the
# toolset's base URL (`auth` in chainsmith.toml). Run with plain python3, it passes $TMDB_KEY itself.
AUTH = {"api_key": os.environ["TMDB_KEY"]} if "TMDB_KEY" in os.environ else {}

top = requests.get("https://api.themoviedb.org/3/movie/top_rated", params={**AUTH, "page": 1}).json()
best = top["results"][0]

print(f"The top-1 rated movie is {best['title']} ({best['release_date'][:4]}), rated {best['vote_average']}/10.")
