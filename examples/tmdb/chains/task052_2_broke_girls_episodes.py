"""How many episodes does 2 Broke Girls have in total?

RestBench TMDB task #52.
Gold path: GET /search/tv -> GET /tv/{tv_id}
"""
import os

import requests

BASE = "https://api.themoviedb.org/3"
KEY = os.environ["TMDB_KEY"]

session = requests.Session()
shows = session.get(BASE + "/search/tv", params={"api_key": KEY, "query": "2 Broke Girls"}).json()
show = shows["results"][0]

details = session.get(f"{BASE}/tv/{show['id']}", params={"api_key": KEY}).json()

print(f"{details['name']} has {details['number_of_episodes']} episodes in {details['number_of_seasons']} seasons:")
for season in details["seasons"]:
    print(f" - {season['name']}: {season['episode_count']} episodes")
