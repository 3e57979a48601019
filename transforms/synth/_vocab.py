"""Word lists and sentence templates of the synthetic trace generator (data, not logic)."""

from __future__ import annotations

__all__ = ["FAMILIES", "NUMBERS", "PER_TRACE", "SALAD_WORDS", "SHARED"]

NUMBERS = {"ref": (100, 99999), "count": (0, 500), "wait": (2, 30), "age": (18, 92)}
NUMBERS["amount"] = (5, 1500)
PER_TRACE = {"subject", "detail", "quarter", "ref", "age", "amount"}
"""Slots drawn once per trace, so the objective and its steps speak of the same thing."""

SHARED: dict[str, str] = {
    "thought": "I need to {goal} for {subject} before doing anything else|Start by checking "
    "{source} for signs of {detail}|The most likely explanation is {detail}, so {source} is "
    "the next thing to read|Plan: read {source}, then {action} if {detail} is confirmed|"
    "Compare what {source} says with the expected state of {subject}|Before answering, "
    "verify the figures in {source} once more|{finding}, so the next step is to {action}|"
    "Not enough information yet; I should {goal}",
    "tool_call": "Querying {source} to {goal}|Fetching {source} for {subject}|Calling the "
    "tool to {goal}",
    "observation": "Found that {finding}|{source} shows that {finding}|No sign of {detail} in "
    "{source} for {subject}|Confirmed in {source}: {finding}|The data for {subject} matches "
    "what the user described|{source} returned {count} entries related to {detail}",
    "error_recovery": "{problem}; retrying with a smaller request|Recovered after {problem} "
    "by reading {source} instead|{problem}, waiting {wait} seconds before the next attempt|"
    "The retry failed again because {problem}, so I am trying a different approach|Caught an "
    "error: {problem}. Falling back to cached data for {subject}",
    "output": "Returned {count} results|Fetched {source} with {count} records|OK: {count} "
    "items for {subject}|Done in one page, {count} rows matched",
    "output_err": "Error: {problem}|Failed: {problem}",
    "result_ok": "{finding}; recommended to {action}|Completed the request for {subject}: "
    "{finding}|Resolved: decided to {action} after checking {detail}",
    "result_fail": "Could not finish because {problem}|Stopped after {problem}; the case of "
    "{subject} was escalated to a human|Partial answer only: {detail} could not be verified",
    "raw": "{query}",
}
FAMILIES: tuple[dict[str, str], ...] = (
    {
        "objective": "Summarise {subject} and list the {detail} for the team by Friday|Find "
        "the {detail} in {subject} and prepare a short report for the manager|Check {subject} "
        "for {detail} and notify the owners of anything unclear|Answer a colleague's question "
        "about the {detail} using {subject} as the only source",
        "subject": "the quarterly planning document|the team onboarding guide|the vendor "
        "contract|last week's incident report|the marketing newsletter draft|the product "
        "roadmap|the meeting notes from Monday|the hiring pipeline spreadsheet",
        "detail": "action items|open risks|deadlines|budget changes|missing owners|conflicting "
        "dates|key decisions",
        "finding": "three action items have no owner|the deadline moved to next Friday|the "
        "travel budget was cut by half|two sections contradict each other|the contract renews "
        "automatically in March|the launch date slipped by two weeks",
        "action": "send the summary to the team|create tickets for the open items|ask the owner "
        "for confirmation|update the shared calendar|highlight the risks at the top",
        "source": "the shared drive|the wiki page|the email thread|the calendar|the project "
        "tracker|the search results",
        "problem": "the search API returned no results|the document was too long for one "
        "request|the calendar service timed out|permission was denied for the shared folder",
        "goal": "collect the relevant documents|extract the key points|check the dates|draft "
        "a short summary|find the right owner",
        "query": "quarterly plan|onboarding checklist|vendor renewal|incident timeline|roadmap Q3",
        "w": "violin|glacier|marzipan|orbit|tapestry|lichen|saxophone|pumice|origami|walrus|"
        "nebula|quilt|fjord|cinnamon|harpoon|meadow|kaleidoscope|turnip|zeppelin|obsidian|"
        "lullaby|porcupine|sundial|tundra|gondola|mosaic|hibiscus|anchovy|telescope|velvet|"
        "canyon|pretzel|falcon|lagoon|trombone|cobblestone|jellyfish|papyrus|monsoon|thimble|"
        "avalanche|mandolin|coral|parsnip|lantern|ostrich|crater|biscuit|chandelier|sequoia",
        "tools": 'web_search={"query":"{query}"}|calendar={"days":{wait}}|read_document='
        '{"doc_id":{ref}}|http_get={"url":"https://intranet.example.com/api/{ref}"}|'
        'calculator={"expression":"{count} * 12"}',
    },
    {
        "objective": "Review pull request #{ref} for {detail} in {subject} before it is "
        "merged|Find the root cause of the failing build in {subject} and propose a minimal "
        "fix|Refactor {subject} to remove {detail} without changing its public behaviour|"
        "Write unit tests for {subject} that cover {detail} and the usual edge cases|Check "
        "{subject} for {detail} before merging pull request #{ref} into main",
        "subject": "the payments service|the auth middleware|the billing module|the search "
        "indexer|the CLI argument parser|the checkout API|the CSV import job|the rate limiter|"
        "the session cache|the webhook handler",
        "detail": "SQL injection|race conditions|missing input validation|unhandled "
        "exceptions|N+1 queries|memory leaks|hard-coded secrets|off-by-one errors|flaky tests",
        "finding": "an unsanitized SQL string in handler.ts|a missing await in the retry loop|"
        "two tests that depend on wall-clock time|a secret key committed in config.py|an "
        "unchecked null return from the cache|a quadratic loop over all users|a lock that is "
        "never released on error|a regex that backtracks on long input",
        "action": "use a parameterized query|wrap the call in a timeout|pin the dependency "
        "version|add a regression test|move the secret to the vault|add an index on user_id|"
        "release the lock in a finally block",
        "source": "the diff|the CI logs|the test report|the commit history|the static "
        "analysis output|the coverage report",
        "problem": "the test runner timed out|the linter crashed on a syntax error|the GitHub "
        "API returned 502|the build cache was stale|a merge conflict blocked the checkout",
        "goal": "find security issues|check test coverage|confirm the fix|locate the "
        "regression|measure the performance impact",
        "query": "src/handler.ts|auth/middleware.py|billing/invoice.py|api/checkout.go|"
        "lib/cache.rs|jobs/import_csv.py",
        "tools": 'github_pr_read={"pr":{ref}}|static_analysis={"file":"{query}","rules":'
        '"security"}|run_tests={"path":"tests/","verbose":true}|grep_repo={"pattern":'
        '"{query}"}|lint={"file":"{query}"}|type_check={"strict":true,"target":"{query}"}',
    },
    {
        "objective": "Process a refund for order #{ref} after the customer reported "
        "{subject}|Answer a customer complaint about {subject} and check {detail}|Decide "
        "whether order #{ref} qualifies for {detail} under the current policy|Resolve the "
        "support ticket about {subject} within the service level agreement",
        "subject": "a damaged blender|a late laptop delivery|a duplicate card charge|a "
        "cancelled gym membership|a missing promo discount|a wrong size jacket|a broken "
        "headphone warranty claim|a locked customer account",
        "detail": "refund eligibility|the return window|shipping delays|warranty coverage|a "
        "partial refund|store credit|the cancellation fee",
        "finding": "the order was delivered 12 days late|the customer was charged twice on "
        "the same day|the item is still inside the 30 day return window|the warranty expired "
        "last month|the shipping fee was already refunded|the courier marked the parcel as lost",
        "action": "issue a full refund|offer store credit|send a prepaid return label|escalate "
        "to the billing team|reset the account password|reship the item by express delivery",
        "source": "the order history|the payment ledger|the CRM notes|the courier tracking "
        "page|the refund policy|the previous chat transcript",
        "problem": "the refund API returned 500|the CRM search timed out|the order id was not "
        "found|the payment gateway rejected the request|the email service was rate limited",
        "goal": "confirm the order details|check refund eligibility|verify the customer "
        "identity|find the shipping status|draft a reply to the customer",
        "query": "order status|refund policy|late delivery|double charge|account locked",
        "tools": 'order_lookup={"order_id":{ref}}|refund_api={"amount":{amount},'
        '"order_id":{ref}}|crm_search={"query":"{query}"}|payment_ledger={"order_id":{ref}}'
        '|courier_tracking={"tracking":"{query}"}',
    },
    {
        "objective": "Change the flight on booking {ref} for a traveller with {subject}|Find "
        "a cheaper way to handle {subject} and explain {detail} to the passenger|Rebook the "
        "passenger affected by {subject} and check {detail} before confirming",
        "subject": "a missed connection in Frankfurt|a cancelled flight to Lisbon|a family "
        "booking to Tokyo|a business trip to Chicago|an overbooked flight from Madrid|a seat "
        "upgrade request to Sydney|a name correction on a ticket to Toronto",
        "detail": "a same-day flight change|the change fee|the fare difference|travel "
        "insurance|a rebooking on a partner airline|a hotel voucher|the baggage allowance",
        "finding": "the next direct flight leaves at 14:20 with 3 seats left|the fare "
        "difference is 120 euros|the ticket is non-refundable but changeable|the partner "
        "airline has an earlier connection|the delay exceeds three hours so compensation applies",
        "action": "rebook on the next available flight|waive the change fee|issue a travel "
        "voucher|book a hotel near the airport|refund the unused segment",
        "source": "the booking record|the fare rules|the seat map|the flight status board|the "
        "loyalty profile|the airline schedule",
        "problem": "the booking system returned a timeout|the fare quote expired|the seat map "
        "service was unavailable|the partner airline rejected the booking",
        "goal": "find alternative flights|compare fares|check seat availability|confirm the "
        "new itinerary|calculate the change fee",
        "query": "LIS-FRA|JFK-ORD|MAD-CDG|SEA-SFO|NRT-HND",
        "tools": 'flight_search={"query":"{query}"}|fare_rules={"booking":{ref}}|seat_map='
        '{"flight":"{query}"}|booking_modify={"booking":{ref},"waive_fee":true}|'
        'loyalty_lookup={"member":{ref}}',
    },
    {
        "objective": "Analyze the {quarter} earnings report of {subject} with a focus on "
        "{detail}|Compare the {detail} of {subject} with its three closest competitors|"
        "Summarise the latest earnings call of {subject} for the investment committee|Check "
        "whether {subject} can sustain its {detail} over the next two years",
        "quarter": "Q1 2024|Q2 2024|Q3 2024|Q4 2024|Q1 2025|Q2 2025|Q3 2025|Q4 2025",
        "subject": "TSMC|Nvidia|Apple|Siemens|Toyota|Unilever|Shopify|HSBC|Nestle|ASML|Maersk",
        "detail": "gross margin|free cash flow|revenue growth|operating expenses|guidance|"
        "inventory levels|share buybacks|currency effects",
        "finding": "revenue rose 14.3 percent year over year|gross margin came in at 57.9 "
        "percent, above the industry average|free cash flow fell because of higher capital "
        "spending|guidance was cut for the second time this year|net debt dropped below one "
        "times EBITDA|currency headwinds reduced sales by 2 percent",
        "action": "flag the margin decline for the analyst|update the valuation model|compare "
        "with the previous four quarters|add the result to the earnings summary",
        "source": "the quarterly report|the earnings call transcript|the SEC filing|the market "
        "data feed|the analyst consensus|the cash flow statement",
        "problem": "the market data API hit its rate limit|the filing PDF could not be parsed|"
        "the ticker symbol was ambiguous|the consensus data was one quarter old",
        "goal": "extract revenue and margin data|compare against consensus|check the cash "
        "flow trend|summarise the guidance|compute year over year growth",
        "query": "Q4 revenue|gross margin|free cash flow|EPS guidance|capex",
        "tools": 'financial_data_api={"query":"{query}"}|comparison_tool={"metric":'
        '"{query}"}|sec_filings_search={"form":"10-Q","query":"{query}"}|fx_rates={"days":'
        '{wait}}|spreadsheet_calc={"cells":{count}}',
    },
    {
        "objective": "Triage a patient aged {age} who presents with {subject} and check "
        "{detail}|Review the medication of patient {ref} for {detail} before discharge|Decide "
        "if a patient with {subject} needs urgent care, considering {detail}|Summarise the lab "
        "results of patient {ref}, who reported {subject} yesterday",
        "subject": "chest pain|shortness of breath|a severe headache|abdominal pain|a high "
        "fever|dizziness|a skin rash|back pain after a fall",
        "detail": "drug interactions|the triage category|red flag symptoms|the need for "
        "imaging|allergy history|kidney function|dosage limits",
        "finding": "troponin is within the normal range|blood pressure is 168 over 95|the "
        "patient takes warfarin and ibuprofen together|oxygen saturation dropped to 91 percent|"
        "creatinine is elevated at 1.9|the ECG shows sinus rhythm",
        "action": "assign triage category two|refer to the emergency department|recommend a "
        "follow-up in 48 hours|stop the interacting drug|ask a physician to review",
        "source": "the electronic health record|the lab results|the medication list|the "
        "triage protocol|the vital signs chart|the discharge notes",
        "problem": "the EHR session expired|the lab system returned no results|the drug "
        "database timed out|the patient record was locked",
        "goal": "check vital signs|review the medication list|assess red flag symptoms|look "
        "up recent lab results|decide the triage level",
        "query": "warfarin ibuprofen|chest pain|troponin|R07.9|headache red flags",
        "tools": 'ehr_lookup={"patient_id":{ref}}|drug_interaction_check={"query":'
        '"{query}"}|lab_results={"patient_id":{ref}}|triage_protocol={"symptom":"{query}"}|'
        'icd10_search={"query":"{query}"}',
    },
    {
        "objective": "Translate {subject} into French and keep {detail} of the original|Plan "
        "{subject} for {count} guests with a budget of {amount} euros|Write a short poem "
        "about {subject} using {detail}|Explain {subject} to a curious child with {detail}",
        "subject": "the history of the printing press|a birthday party in a lighthouse|the "
        "migration of arctic terns|a wedding speech for a beekeeper|the rules of medieval "
        "chess|a hiking weekend in Patagonia|the chemistry of sourdough bread|a jazz playlist "
        "for a rainy afternoon|the life cycle of a star|a vegan menu for a sailing trip",
        "detail": "a playful tone|simple analogies|rhyming couplets|three historical "
        "anecdotes|a formal register|short bullet points|a hand-drawn map",
        "finding": "the lighthouse can host at most 40 people|terns fly about 70000 km a year|"
        "the dough needs 18 hours to ferment|the trail is closed in winter|the speech should "
        "stay under five minutes|red giants expand as they burn helium",
        "action": "add a short introduction|shorten the second paragraph|offer two "
        "alternatives|include a packing list|end with a question for the reader",
        "source": "an encyclopedia entry|a travel blog|a cookbook|a museum website|a poetry "
        "anthology|an astronomy forum",
        "problem": "the image generator refused the prompt|the translation service returned "
        "gibberish|the venue website was offline|the recipe site blocked automated requests",
        "goal": "gather background facts|find a suitable venue|check the weather forecast|"
        "collect rhyming words|verify the dates",
        "query": "lighthouse venues|arctic tern migration|sourdough hydration|Patagonia "
        "trails|red giant stars",
    },
    {
        "objective": "{w} {w}|{w} {w} {w}",
        "thought": "{w}",
        "tool_call": "{w}",
        "observation": "{w} {w}",
        "error_recovery": "{w}",
        "output": "{w} {count}",
        "output_err": "{w}",
        "result_ok": "{w} {w}",
        "result_fail": "{w}",
        "raw": "{w}",
    },
)
"""Vocabularies and templates per family (general, code, support, travel, finance,
medical, off-topic, word salad); `|` separates entries, `{slot}` marks a slot."""


SALAD_WORDS = (
    "violin glacier marzipan orbit tapestry lichen saxophone pumice origami walrus nebula quilt "
    "fjord cinnamon harpoon meadow kaleidoscope turnip zeppelin obsidian lullaby porcupine "
    "sundial tundra gondola mosaic hibiscus anchovy telescope velvet canyon pretzel falcon "
    "lagoon trombone cobblestone jellyfish papyrus monsoon thimble avalanche mandolin coral "
    "parsnip lantern ostrich crater biscuit chandelier sequoia accordion basalt cardamom "
    "dandelion eclipse flamingo gargoyle hammock iceberg jasmine kiwi lemur magnolia narwhal "
    "octopus pagoda quartz raccoon saffron tambourine umbrella vanilla waffle xylophone yodel "
    "zucchini abacus bonsai catapult dolphin emerald fossil geyser harmonica igloo juniper "
    "kayak lobster mammoth nutmeg opal pelican quokka rhubarb sardine tortoise ukulele volcano "
    "wombat yarn zebra almond blizzard cactus dune elk fern gazelle hazelnut ivy jaguar kelp "
    "lava mango nectar oyster pumpkin quince reindeer sorbet tulip urchin vulture walnut yak "
    "acorn bagpipe comet driftwood embers fiddle granite heron inkwell jigsaw kettle lilac"
)
"""Words of the word-salad traces, whose texts resemble no other trace."""
