"""What is top-1 rated movie?

RestBench TMDB task #16.
Gold path: GET /movie/top_rated
"""
import os

import requests

KEY = os.environ["TMDB_KEY"]

top = requests.get("https://api.themoviedb.org/3/movie/top_rated", params={"api_key": KEY, "page": 1}).json()
best = top["results"][0]

print(f"The top-1 rated movie is {best['title']} ({best['release_date'][:4]}), rated {best['vote_average']}/10.")
