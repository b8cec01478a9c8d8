"""Who has starred in the first movie of Star Wars collection?

RestBench TMDB task #33.
Gold path: GET /search/collection -> GET /collection/{collection_id} -> GET /movie/{movie_id}/credits
"""
import chainsmith.tools.tmdb as t

hits = t.search_collection(query="Star Wars")
collection_id = hits["results"][0]["id"]
collection = t.collection(collection_id=collection_id)

# "First" means earliest released; parts without a release date yet sort last.
parts = sorted(collection["parts"], key=lambda part: part.get("release_date") or "9999")
first = parts[0]
credits = t.movie_credits(movie_id=first["id"])

print(f"Starring in {first['title']} ({first['release_date']}), the first film of {collection['name']}:")
for member in sorted(credits["cast"], key=lambda c: c["order"])[:10]:
    print(f" - {member['name']} as {member['character']}")
