"""How the two files here were made (tests/data/SOURCES.md): the conversation of a recorded
Bedrock Converse call as an app keeps it, the last request's `messages` (as sent) and the
reply's `output.message` after them, from a VCR cassette of pydantic-ai's tests.

Run: python from_cassette.py CASSETTE.yaml OUT.json
"""

import json
import sys

import yaml

cassette, out = sys.argv[1:3]
with open(cassette, encoding="utf-8") as handle:
    last = yaml.safe_load(handle)["interactions"][-1]
request = last["request"].get("parsed_body") or json.loads(last["request"]["body"])
reply = last["response"]["parsed_body"]["output"]["message"]
document = {"messages": [*request["messages"], reply], "system": request.get("system", [])}
with open(out, "w", encoding="utf-8") as handle:
    json.dump(document, handle, indent=2, ensure_ascii=False)
