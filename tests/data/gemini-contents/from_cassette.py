"""How `retry.json` was made (tests/data/SOURCES.md): the conversation of a recorded Gemini
call as a chat's history keeps it, the last request's `contents` (as sent) and the reply's
`candidates[0].content` after them, from a VCR cassette of pydantic-ai's tests.

Run: python from_cassette.py CASSETTE.yaml OUT.json
"""

import json
import sys

import yaml

cassette, out = sys.argv[1:3]
with open(cassette, encoding="utf-8") as handle:
    last = yaml.safe_load(handle)["interactions"][-1]
request = last["request"].get("parsed_body") or json.loads(last["request"]["body"])
reply = last["response"]["parsed_body"]["candidates"][0]["content"]
with open(out, "w", encoding="utf-8") as handle:
    json.dump([*request["contents"], reply], handle, indent=2, ensure_ascii=False)
