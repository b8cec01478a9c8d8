"""How many episodes does 2 Broke Girls have in total?

RestBench TMDB task #52.
Gold path: GET /search/tv -> GET /tv/{tv_id}
"""
import os

import requests

BASE = "https://api.themoviedb.org/3"
# Under chainsmith the program never sees the key: chainsmith adds it to every request under the
# toolset's base URL (`auth` in chainsmith.toml). Run with plain python3, it passes $TMDB_KEY itself.
AUTH = {"api_key": os.environ["TMDB_KEY"]} if "TMDB_KEY" in os.environ else {}

session = requests.Session()
shows = session.get(BASE + "/search/tv", params={**AUTH, "query": "2 Broke Girls"}).json()
show = shows["results"][0]

details = session.get(f"{BASE}/tv/{show['id']}", params=AUTH).json()

print(f"{details['name']} has {details['number_of_episodes']} episodes in {details['number_of_seasons']} seasons:")
for season in details["seasons"]:
    print(f" - {season['name']}: {season['episode_count']} episodes")
