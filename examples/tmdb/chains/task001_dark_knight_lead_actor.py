"""Who was the lead actor in the movie The Dark Knight?

RestBench TMDB task #1.
Gold path: GET /search/movie -> GET /movie/{movie_id}/credits
"""
import os

import requests

BASE = "https://api.themoviedb.org/3"
# Under chainsmith the program never sees the key: chainsmith adds it to every request under the
# toolset's base URL (`auth` in chainsmith.toml). Run with plain python3, it passes $TMDB_KEY itself.
AUTH = {"api_key": os.environ["TMDB_KEY"]} if "TMDB_KEY" in os.environ else {}

found = requests.get(f"{BASE}/search/movie", params={**AUTH, "query": "The Dark Knight"}).json()
movie = found["results"][0]
movie_id = movie["id"]

credits = requests.get(f"{BASE}/movie/{movie_id}/credits", params=AUTH).json()
lead = min(credits["cast"], key=lambda c: c["order"])

print(f"The lead actor in {movie['title']} ({movie['release_date'][:4]}) is {lead['name']}, as {lead['character']}.")
