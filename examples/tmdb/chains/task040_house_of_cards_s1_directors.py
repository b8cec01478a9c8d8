"""tell me the directors of the first season of House of Cards

RestBench TMDB task #40.
Gold path: GET /search/tv -> GET /tv/{tv_id}/season/{season_number}/credits
"""
from chainsmith.tools import tmdb

# The 2013 Netflix series, not the 1990 BBC original.
shows = tmdb.search_tv(query="House of Cards", first_air_date_year=2013)
show = shows["results"][0]
season = tmdb.tv_season_credits(tv_id=show["id"], season_number=1)

directors = sorted({member["name"] for member in season["crew"] if member["job"] == "Director"})
if directors:
    print(f"Season 1 of {show['name']} ({show['first_air_date'][:4]}) was directed by: " + ", ".join(directors))
else:
    print(f"TMDB lists no directors in the season-level credits of {show['name']} season 1.")
