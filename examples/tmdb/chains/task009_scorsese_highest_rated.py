"""tell me the highest rated movie directed by Martin Scorsese

RestBench TMDB task #9.
Gold path: GET /search/person -> GET /person/{person_id}/movie_credits
"""
from chainsmith.tools import tmdb

people = tmdb.search_person(query="Martin Scorsese")["results"]
scorsese = next((p for p in people if p["name"] == "Martin Scorsese"), people[0])
credits = tmdb.person_movie_credits(person_id=scorsese["id"])

directed = [m for m in credits["crew"] if m["job"] == "Director"]
# Averages over a handful of votes say little: prefer movies with at least 100 votes.
rated = [m for m in directed if m["vote_count"] >= 100] or directed

if rated:
    best = max(rated, key=lambda m: m["vote_average"])
    print(
        f"The highest rated movie directed by {scorsese['name']} is {best['title']} "
        f"({best['release_date'][:4]}): {best['vote_average']}/10 from {best['vote_count']} votes."
    )
else:
    print(f"TMDB lists no movies directed by {scorsese['name']}.")
