"""tell me where the company "universal pictures" was founded?

RestBench TMDB task #31.
Gold path: GET /search/company -> GET /company/{company_id}
"""
import os

import requests

BASE = "https://api.themoviedb.org/3"
# Under chainsmith the program never sees the key: chainsmith adds it to every request under the
# toolset's base URL (`auth` in chainsmith.toml). Run with plain python3, it passes $TMDB_KEY itself.
AUTH = {"api_key": os.environ["TMDB_KEY"]} if "TMDB_KEY" in os.environ else {}
SEARCH_URL = BASE + "/search/company"

resp = requests.get(SEARCH_URL, params={**AUTH, "query": "Universal Pictures"})
resp.raise_for_status()
companies = resp.json()["results"]
universal = next((c for c in companies if c["name"].lower() == "universal pictures"), companies[0])

company_id = universal["id"]
company_url = f"{BASE}/company/{company_id}"
company = requests.get(company_url, params=AUTH).json()

# TMDB has no founding place; its headquarters and country of origin are the closest fields.
print(f"{company['name']}: headquarters {company['headquarters'] or 'unknown'}, country {company['origin_country']}.")
