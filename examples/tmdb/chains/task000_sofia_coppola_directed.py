"""give me the number of movies directed by Sofia Coppola

RestBench TMDB task #0.
Gold path: GET /search/person -> GET /person/{person_id}/movie_credits
"""
from chainsmith.tools import tmdb

found = tmdb.search_person(query="Sofia Coppola")
person = found["results"][0]
credits = tmdb.person_movie_credits(person_id=person["id"])

# One entry per movie: a person can hold several crew jobs on the same film.
directed = {c["id"]: c["title"] for c in credits["crew"] if c["job"] == "Director"}

print(f"{person['name']} directed {len(directed)} movies:")
for title in sorted(directed.values()):
    print(" -", title)
