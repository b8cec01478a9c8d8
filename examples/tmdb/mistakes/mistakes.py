"""Deliberate mistakes: each line with a trailing mistake comment must get exactly the diagnostic it names.

Loosely based on RestBench TMDB task #0 ("give me the number of movies directed by Sofia Coppola").
The unmarked lines are correct and must stay silent. EXPECTED.md lists every mistake.
"""
import os

import requests
from chainsmith.tools import tmdb

BASE = "https://api.themoviedb.org/3"
KEY = os.environ.get("TMDB_KEY", "")

found = tmdb.search_person(query="Sofia Coppola")
typo = tmdb.search_persn(query="Sofia Coppola")  # mistake: unknown-tool
misspelt = tmdb.search_person(query="Sofia Coppola", incude_adult=False)  # mistake: unknown-argument
no_query = tmdb.search_person(page=1)  # mistake: missing-argument
page_two = tmdb.search_person(query="Sofia Coppola", page="two")  # mistake: wrong-type
trending = tmdb.trending(media_type="movies", time_window="day")  # mistake: not-in-enum
first_id = found["result"][0]["id"]  # mistake: unknown-key
first_hit = found[0]  # mistake: bad-index
all_ids = found["results"]["id"]  # mistake: bad-index
popular = requests.get(BASE + "/search/persons", params={"api_key": KEY, "query": "Sofia Coppola"}).json()  # mistake: unknown-endpoint
credits = tmdb.person_movie_credits(person_id=found["results"][0]["name"])  # mistake: argument-type-mismatch

print(len(found["results"]))
