"""What is the birthday of the most popular person right now?

RestBench TMDB task #81.
Gold path: GET /person/popular -> GET /person/{person_id}
"""
from chainsmith.tools import tmdb

popular = tmdb.person_popular(page=1)
top = max(popular["results"], key=lambda p: p["popularity"])
details = tmdb.person(person_id=top["id"])

birthday = details.get("birthday") or "unknown"
place = details.get("place_of_birth") or "an unknown place"
print(f"The most popular person right now is {details['name']}, born on {birthday} in {place}.")
