"""give me the homepage of the network that produced Game of Thrones

RestBench TMDB task #60.
Gold path: GET /search/tv -> GET /tv/{tv_id} -> GET /network/{network_id}
"""
import os

import requests

API = "https://api.themoviedb.org/3"
# Under chainsmith the program never sees the key: chainsmith adds it to every request under the
# toolset's base URL (`auth` in chainsmith.toml). Run with plain python3, it passes $TMDB_KEY itself.
AUTH = {"api_key": os.environ["TMDB_KEY"]} if "TMDB_KEY" in os.environ else {}

shows = requests.get(API + "/search/tv", params={**AUTH, "query": "Game of Thrones"}).json()
show_id = shows["results"][0]["id"]

tv = requests.get(f"{API}/tv/{show_id}", params=AUTH).json()
network_id = tv["networks"][0]["id"]

network = requests.get(API + f"/network/{network_id}", params=AUTH).json()

print(f"{tv['name']} was produced by {network['name']}; its homepage is {network['homepage']}")
