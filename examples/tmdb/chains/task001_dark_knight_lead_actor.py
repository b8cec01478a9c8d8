"""Who was the lead actor in the movie The Dark Knight?

RestBench TMDB task #1.
Gold path: GET /search/movie -> GET /movie/{movie_id}/credits
"""
import os

import requests

BASE = "https://api.themoviedb.org/3"
KEY = os.environ["TMDB_KEY"]

found = requests.get(f"{BASE}/search/movie", params={"api_key": KEY, "query": "The Dark Knight"}).json()
movie = found["results"][0]
movie_id = movie["id"]

credits = requests.get(f"{BASE}/movie/{movie_id}/credits", params={"api_key": KEY}).json()
lead = min(credits["cast"], key=lambda c: c["order"])

print(f"The lead actor in {movie['title']} ({movie['release_date'][:4]}) is {lead['name']}, as {lead['character']}.")
