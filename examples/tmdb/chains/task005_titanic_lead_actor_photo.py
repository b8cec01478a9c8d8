"""What dose the lead actor of Titanic look like?

RestBench TMDB task #5.
Gold path: GET /search/movie -> GET /movie/{movie_id}/credits -> GET /person/{person_id}/images
"""
from chainsmith.tools import tmdb

IMAGE_BASE = "https://image.tmdb.org/t/p/original"

movies = tmdb.search_movie(query="Titanic", year=1997)
titanic = movies["results"][0]
credits = tmdb.movie_credits(movie_id=titanic["id"])

# Billing order: 0 is the top-billed cast member.
lead = min(credits["cast"], key=lambda member: member["order"])
images = tmdb.person_images(person_id=lead["id"])

print(f"The lead actor of {titanic['title']} is {lead['name']} ({lead['character']}). Photos:")
for profile in images["profiles"][:3]:
    print(f" - {IMAGE_BASE}{profile['file_path']} ({profile['width']}x{profile['height']})")
