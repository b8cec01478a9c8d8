"""give me the homepage of the network that produced Game of Thrones

RestBench TMDB task #60.
Gold path: GET /search/tv -> GET /tv/{tv_id} -> GET /network/{network_id}
"""
import os

import requests

API = "https://api.themoviedb.org/3"
KEY = os.environ["TMDB_KEY"]

shows = requests.get(API + "/search/tv", params={"api_key": KEY, "query": "Game of Thrones"}).json()
show_id = shows["results"][0]["id"]

tv = requests.get(f"{API}/tv/{show_id}", params={"api_key": KEY}).json()
network_id = tv["networks"][0]["id"]

network = requests.get(API + f"/network/{network_id}", params={"api_key": KEY}).json()

print(f"{tv['name']} was produced by {network['name']}; its homepage is {network['homepage']}")
