"""Generate bench/data/semantic_eval.json: labelled request pairs for the semantic cache.

Each pair is ``{"id", "category", "label", "template", "split", "stored", "lookup"}``:
``label`` is ``"hit"`` when the stored request's plan answers the lookup, ``"miss"`` when it
would be a wrong answer (a trap). ``split`` is ``"tune"`` or ``"report"``, assigned per
*template* (alternately within each category, in the order written below), so the reporting
half holds sentence shapes the tuning half never showed.

Everything is generated from the templates and vocabularies below with a fixed seed, so the
file is reproducible: ``python bench/data/make_semantic_eval.py``. About a third of the
lookups (and some stored sides) are lower-cased, as people type to agents.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

OUT = Path(__file__).with_name("semantic_eval.json")
SEED = 13

CITIES = ["Paris", "London", "Berlin", "Tokyo", "Madrid", "Chicago", "Toronto", "Sydney", "Oslo", "Lima",
          "Cairo", "Denver", "Boston", "Dublin", "Seoul", "Austin", "Prague", "Vienna", "Nairobi", "Porto"]
PEOPLE = ["Alice", "Bob", "Priya", "Marco", "Chen", "Fatima", "Olga", "Diego", "Hannah", "Kofi", "Yuki",
          "Liam", "Sofia", "Omar", "Greta", "Ravi"]
PRODUCTS = ["iPhone 15", "Pixel 8", "Galaxy S24", "ThinkPad X1", "MacBook Air", "Kindle Paperwhite",
            "AirPods Pro", "Switch OLED", "Roomba j7", "Dyson V15"]
REPOS = ["acme/api", "acme/web", "tools/cli", "infra/terraform", "data/pipeline", "mobile/app"]
TEAMS = ["finance", "marketing", "legal", "support", "design", "platform", "sales", "security"]
ITEMS = ["widgets", "gaskets", "bolts", "printer paper", "toner", "coffee beans", "usb cables", "monitors"]
DEVICES = ["living room lights", "kitchen lights", "porch light", "thermostat", "garage door", "front door",
           "bedroom fan", "dishwasher", "sprinklers", "office heater"]
CURRENCIES = ["USD", "EUR", "GBP", "JPY", "CHF", "CAD", "AUD", "INR"]
AIRPORTS = ["NYC", "LA", "SFO", "JFK", "LAX", "ORD", "SEA", "MIA", "BOS", "ATL", "DFW", "LHR", "CDG"]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
MONTHS = ["January", "February", "March", "April", "June", "July", "August", "September", "October",
          "November", "December"]
FILES = ["report.pdf", "notes.txt", "budget.xlsx", "photo.jpg", "backup.tar", "slides.pptx", "data.csv"]
FOLDERS = ["Documents", "Downloads", "Desktop", "Archive", "Projects", "Shared"]
CUISINES = ["Thai", "Italian", "Mexican", "Indian", "Japanese", "Greek", "Korean", "Ethiopian"]
TOPICS = ["the quarterly report", "the launch plan", "the budget review", "the hiring plan", "the outage",
          "the roadmap", "the contract renewal", "the security audit"]
SERVICES = ["Netflix", "Spotify", "the gym membership", "Dropbox", "the newspaper subscription", "Hulu",
            "the meal kit plan", "Adobe Creative Cloud"]


# --- should hit: the same request in other words ----------------------------------------------

# Each template: alternative phrasings of ONE request; a pair takes two of them with the same slots.
PARAPHRASES: list[tuple[str, list[str]]] = [
    ("weather", ["what's the weather in {city}", "tell me {city} weather today", "how is the weather in {city} right now",
                 "what is the current weather in {city}?", "give me the weather for {city}", "{city} weather please",
                 "Could you check the weather in {city}?"]),
    ("email", ["email {person} about {topic}", "send {person} an email regarding {topic}",
               "write to {person} about {topic} by email", "shoot {person} an email on {topic}",
               "compose an email to {person} concerning {topic}"]),
    ("stock", ["how many {item} do we have in stock", "check the inventory of {item}", "what is our stock level for {item}?",
               "look up how many {item} are in the warehouse", "check stock of {item}", "inventory count for {item}"]),
    ("restaurant", ["find a {cuisine} restaurant near me", "where can I get {cuisine} food nearby",
                    "search for {cuisine} restaurants close to me", "any good {cuisine} places around here?",
                    "show me nearby {cuisine} restaurants"]),
    ("meeting", ["schedule a meeting with the {team} team", "set up a meeting with {team}",
                 "book a meeting with the {team} team", "arrange a meeting with the {team} group",
                 "put a meeting with the {team} team on my calendar"]),
    ("price", ["what does the {product} cost", "how much is the {product}", "what's the price of the {product}?",
               "tell me the {product} price", "how expensive is the {product}"]),
    ("summary", ["summarize {topic}", "give me a summary of {topic}", "can you sum up {topic} for me",
                 "write a short summary of {topic}", "what are the key points of {topic}?", "recap {topic}"]),
    ("translate", ["translate this paragraph into {language}", "put this paragraph in {language}",
                   "convert this paragraph to {language}", "how would this paragraph read in {language}?",
                   "give me this paragraph in {language}"]),
    ("directions", ["how do I get to {city} central station", "directions to the central station in {city}",
                    "show me the way to {city}'s central station", "route to {city} central station",
                    "navigate to the main train station of {city}"]),
    ("files", ["list the files in {folder}", "show me what's in the {folder} folder", "what files are in {folder}?",
               "display the contents of {folder}", "ls {folder}"]),
    ("timezone", ["what time is it in {city}", "current time in {city}", "tell me the local time in {city}",
                  "what's the time in {city} now?", "time in {city} please"]),
    ("define", ["what does {word} mean", "define {word}", "give me the definition of {word}",
                "what is the meaning of the word {word}?", "explain the word {word}"]),
]
LANGUAGES = ["French", "German", "Spanish", "Japanese", "Portuguese", "Italian", "Dutch", "Korean"]
WORDS = ["serendipity", "ephemeral", "ubiquitous", "pragmatic", "resilient", "ambiguous", "latency", "idempotent"]

NEAR_REPEAT_EDITS = ["lower", "punct", "please", "filler", "typo", "spaces", "upper_first", "hey"]


def near_repeat(text: str, edit: str, rng: random.Random) -> str:
    if edit == "lower":
        return text.lower()
    if edit == "punct":
        return text.rstrip("?.!") + rng.choice(["?", ".", "!", " ?"])
    if edit == "please":
        return rng.choice(["please ", "Please, "]) + text[0].lower() + text[1:]
    if edit == "filler":
        return text + rng.choice([" thanks", " for me", " thank you", " pls"])
    if edit == "typo":
        words = text.split()
        long = [i for i, w in enumerate(words) if len(w) > 5 and w.isalpha() and w.islower()]
        if not long:
            return text.lower()
        i = rng.choice(long)
        w = words[i]
        j = rng.randrange(1, len(w) - 2)
        words[i] = w[:j] + w[j + 1] + w[j] + w[j + 2:]
        return " ".join(words)
    if edit == "spaces":
        return "  " + text.replace(" ", "  ", 1) + " "
    if edit == "upper_first":
        return text[0].upper() + text[1:]
    return rng.choice(["hey, ", "hi! ", "ok so "]) + text


# --- agent-style tool requests: same call (hit) or other arguments (miss) -------------------------

AGENT_HITS: list[tuple[str, list[str]]] = [
    ("gh_issue", ["create a GitHub issue in {repo} titled '{title}'", "open an issue on {repo} called '{title}'",
                  "file a new issue in the {repo} repo with title '{title}'"]),
    ("deploy", ["deploy {repo} to staging", "push {repo} to the staging environment", "ship {repo} to staging",
                "run the staging deployment for {repo}"]),
    ("calendar", ["add {person}'s birthday on {month} {day_n} to my calendar",
                  "put {person}'s birthday, {month} {day_n}, in my calendar",
                  "create a calendar event for {person}'s birthday on {month} {day_n}"]),
    ("query_db", ["run the sales query for {month}", "execute the {month} sales query",
                  "query the sales numbers for {month}", "pull {month} sales from the database"]),
    ("slack", ["post '{title}' in the #{team} channel", "send '{title}' to #{team} on slack",
               "write '{title}' in the {team} slack channel"]),
    ("ticket", ["assign ticket {ticket} to {person}", "give ticket {ticket} to {person}",
                "make {person} the assignee of ticket {ticket}", "set the assignee of {ticket} to {person}"]),
]
TITLES = ["login fails on Safari", "crash on startup", "update the README", "dark mode colors off",
          "slow search page", "export button missing"]


# --- traps: a lookup that must NOT get the stored plan --------------------------------------------

NEGATION: list[tuple[str, str, str]] = [
    ("neg_dont", "turn on the {device}", "don't turn on the {device}"),
    ("neg_not_from", "show emails from {person}", "show emails not from {person}"),
    ("neg_without", "book a hotel in {city} with breakfast", "book a hotel in {city} without breakfast"),
    ("neg_never", "always cc {person} on {team} emails", "never cc {person} on {team} emails"),
    ("neg_isnt", "tell me which {item} are in stock", "tell me which {item} aren't in stock"),
    ("neg_except", "notify the whole {team} team", "notify the whole {team} team except {person}"),
    ("neg_no", "find flights to {city} with layovers", "find flights to {city} with no layovers"),
    ("neg_stop", "keep sending {person} daily reports", "stop sending {person} daily reports"),
    ("neg_exclude", "search {folder} including hidden files", "search {folder} excluding hidden files"),
    ("neg_do_not", "Archive emails from the {team} team", "Do not archive emails from the {team} team"),
]
# The pairs of opposites below are the *data*; the cache's rules know nothing of this list.
ANTONYM_PAIRS = [
    ("turn on", "turn off"), ("lock", "unlock"), ("open", "close"), ("enable", "disable"), ("increase", "decrease"),
    ("buy", "sell"), ("accept", "decline"), ("start", "stop"), ("upload", "download"), ("add", "remove"),
    ("mute", "unmute"), ("include", "exclude"), ("import", "export"), ("encrypt", "decrypt"), ("raise", "lower"),
    ("subscribe to", "unsubscribe from"), ("connect", "disconnect"), ("approve", "reject"), ("pause", "resume"),
    ("show", "hide"), ("follow", "unfollow"), ("pin", "unpin"), ("archive", "unarchive"), ("hire", "fire"),
    ("win", "lose"), ("allow", "deny"), ("arm", "disarm"), ("plug in", "unplug"), ("freeze", "unfreeze"),
]
ANTONYM_TEMPLATES = [
    ("ant_device", "{a} the {device}", "{b} the {device}"),
    ("ant_please", "please {a} the {device} now", "please {b} the {device} now"),
    ("ant_sort", "sort the {team} tickets in {a} order", "sort the {team} tickets in {b} order"),
    ("ant_adj", "show me {a} {cuisine} restaurants in {city}", "show me {b} {cuisine} restaurants in {city}"),
    ("ant_time", "book the {a} flight to {city} on {day}", "book the {b} flight to {city} on {day}"),
]
ADJ_PAIRS = [("cheap", "expensive"), ("open", "closed"), ("quiet", "noisy"), ("vegetarian", "non-vegetarian"),
             ("popular", "unpopular"), ("indoor", "outdoor"), ("good", "bad"), ("new", "old"), ("hot", "cold"),
             ("small", "large")]
ORDER_PAIRS = [("ascending", "descending"), ("alphabetical", "reverse alphabetical"), ("increasing", "decreasing")]
TIME_PAIRS = [("earliest", "latest"), ("first", "last"), ("morning", "evening"), ("direct", "indirect")]
VERB_TEMPLATES = {"ant_device", "ant_please"}

QUANTIFIER: list[tuple[str, str, str]] = [
    ("q_all_some", "delete all my emails from {person}", "delete some of my emails from {person}"),
    ("q_all_unread", "mark all messages in #{team} as read", "mark only the unread messages in #{team} as read"),
    ("q_every_first", "notify every member of the {team} team", "notify the first member of the {team} team"),
    ("q_any_none", "are any {item} left in the warehouse", "are no {item} left in the warehouse"),
    ("q_both_either", "invite both {person} and {person2}", "invite either {person} or {person2}"),
    ("q_most_few", "most {team} tickets are resolved, list them", "few {team} tickets are resolved, list them"),
    ("q_each_one", "send the invoice to each client in {city}", "send the invoice to one client in {city}"),
    ("q_at_least", "find hotels in {city} with at least {n} stars", "find hotels in {city} with at most {n} stars"),
    ("q_only", "back up {folder}", "back up only part of {folder}"),
    ("q_all_none", "all of the {item} passed inspection?", "none of the {item} passed inspection?"),
]
ENTITY: list[tuple[str, str]] = [
    ("ent_weather", "what's the weather in {x}"),
    ("ent_email", "email {x} the notes from {topic}"),
    ("ent_price", "how much does the {x} cost"),
    ("ent_repo", "show open pull requests in {x}"),
    ("ent_call", "call {x} tomorrow about {topic}"),
    ("ent_flight", "find me a flight to {x} next week"),
    ("ent_stock", "check stock of {x}"),
    ("ent_team", "share {topic} with the {x} team"),
    ("ent_review", "read me reviews of the {x}"),
    ("ent_cuisine", "order {x} food for lunch"),
]
ENTITY_VOCAB = {"ent_weather": CITIES, "ent_email": PEOPLE, "ent_price": PRODUCTS, "ent_repo": REPOS,
                "ent_call": PEOPLE, "ent_flight": CITIES, "ent_stock": ITEMS, "ent_team": TEAMS,
                "ent_review": PRODUCTS, "ent_cuisine": CUISINES}
NUMBERS: list[tuple[str, str, str]] = [
    ("num_timer", "set a timer for {n} minutes", "set a timer for {n} hours"),
    ("num_money", "transfer ${n} to {person}", "transfer ${m} to {person}"),
    ("num_date", "book a table for two on {month} {day_n}", "book a table for two on {month} {day_m}"),
    ("num_time", "wake me up at {h} am", "wake me up at {h} pm"),
    ("num_weight", "order {n} kg of {item}", "order {n} lb of {item}"),
    ("num_count", "buy {n} tickets for the {city} show", "buy {m} tickets for the {city} show"),
    ("num_day", "remind me on {day} to call {person}", "remind me on {day2} to call {person}"),
    ("num_relday", "what's the weather in {city} tomorrow", "what's the weather in {city} on {day}"),
    ("num_this_next", "schedule the review for this {day}", "schedule the review for next {day}"),
    ("num_words", "reserve a table for {word_n} at {cuisine} place", "reserve a table for {word_m} at {cuisine} place"),
    ("num_temp", "set the thermostat to {t} degrees", "set the thermostat to {t2} degrees"),
    ("num_pct", "apply a {n}% discount to the {product}", "apply a {m}% discount to the {product}"),
]
NUMBER_WORDS = ["two", "three", "four", "five", "six", "eight", "ten", "twelve"]
ROLES: list[tuple[str, str, str]] = [
    ("role_convert", "convert {c1} to {c2}", "convert {c2} to {c1}"),
    ("role_flight", "flights from {a1} to {a2}", "flights from {a2} to {a1}"),
    ("role_flight_short", "{a1} to {a2}", "{a2} to {a1}"),
    ("role_transfer", "move ${n} from checking to savings", "move ${n} from savings to checking"),
    ("role_owes", "how much does {person} owe {person2}", "how much does {person2} owe {person}"),
    ("role_copy", "copy {file} from {folder} to {folder2}", "copy {file} from {folder2} to {folder}"),
    ("role_reply", "forward {person}'s email to {person2}", "forward {person2}'s email to {person}"),
    ("role_compare", "is {city} bigger than {city2}", "is {city2} bigger than {city}"),
    ("role_manager", "make {person} the manager of {person2}", "make {person2} the manager of {person}"),
    ("role_train", "next train from {city} to {city2}", "next train to {city} from {city2}"),
]
COMPARATIVE: list[tuple[str, str, str]] = [
    ("cmp_cheaper", "find laptops cheaper than the {product}", "find laptops more expensive than the {product}"),
    ("cmp_more_less", "list customers with more than {n} orders", "list customers with fewer than {n} orders"),
    ("cmp_older", "show files older than {n} days in {folder}", "show files newer than {n} days in {folder}"),
    ("cmp_bigger", "find apartments in {city} bigger than {n}0 square meters",
     "find apartments in {city} smaller than {n}0 square meters"),
    ("cmp_faster", "which route to {city} is faster", "which route to {city} is slower"),
    ("cmp_best", "show the best rated {cuisine} restaurant", "show the worst rated {cuisine} restaurant"),
    ("cmp_above", "alert me when {product} drops below ${n}00", "alert me when {product} rises above ${n}00"),
    ("cmp_highest", "which {team} ticket has the highest priority", "which {team} ticket has the lowest priority"),
    ("cmp_longer", "find flights to {city} longer than {n} hours", "find flights to {city} shorter than {n} hours"),
    ("cmp_most", "which {item} sold the most last month", "which {item} sold the least last month"),
]
MODALITY: list[tuple[str, str, str]] = [
    ("mod_did_should", "did I pay the {item} invoice", "should I pay the {item} invoice"),
    ("mod_was_will", "what was the weather in {city}", "what will the weather be in {city}"),
    ("mod_has_will", "has the {product} order shipped", "will the {product} order ship"),
    ("mod_can_cmd", "cancel my {service} subscription", "can I cancel my {service} subscription"),
    ("mod_did_do", "did {person} approve the {team} budget", "will {person} approve the {team} budget"),
    ("mod_sent_send", "was the contract sent to {person}", "send the contract to {person}"),
    ("mod_could_cmd", "delete {file}", "could I delete {file}"),
    ("mod_must_may", "must I renew my {service} plan", "may I renew my {service} plan"),
    ("mod_past_cmd", "who deployed {repo} last", "deploy {repo}"),
    ("mod_booked_book", "which hotel did I book in {city}", "which hotel should I book in {city}"),
]
AGENT_MISSES: list[tuple[str, str, str]] = [
    ("tool_repo", "create a GitHub issue in {repo} titled '{title}'", "create a GitHub issue in {repo2} titled '{title}'"),
    ("tool_title", "open an issue on {repo} called '{title}'", "open an issue on {repo} called '{title2}'"),
    ("tool_env", "deploy {repo} to staging", "deploy {repo} to production"),
    ("tool_channel", "post '{title}' in the #{team} channel", "post '{title}' in the #{team2} channel"),
    ("tool_ticket", "assign ticket {ticket} to {person}", "assign ticket {ticket2} to {person}"),
    ("tool_lower", "assign the bug to {lperson}", "assign the bug to {lperson2}"),
    ("tool_file", "attach {file} to the email for {person}", "attach {file2} to the email for {person}"),
    ("tool_branch", "merge branch feature-{n} into main", "merge branch feature-{m} into main"),
]


def _slots(rng: random.Random) -> dict[str, str]:
    city, city2 = rng.sample(CITIES, 2)
    person, person2 = rng.sample(PEOPLE, 2)
    team, team2 = rng.sample(TEAMS, 2)
    repo, repo2 = rng.sample(REPOS, 2)
    file, file2 = rng.sample(FILES, 2)
    folder, folder2 = rng.sample(FOLDERS, 2)
    title, title2 = rng.sample(TITLES, 2)
    c1, c2 = rng.sample(CURRENCIES, 2)
    a1, a2 = rng.sample(AIRPORTS, 2)
    day, day2 = rng.sample(DAYS, 2)
    n, m = rng.sample(range(2, 60), 2)
    day_n, day_m = rng.sample(range(1, 29), 2)
    t = rng.randrange(16, 26)
    wn, wm = rng.sample(NUMBER_WORDS, 2)
    return {
        "city": city, "city2": city2, "person": person, "person2": person2, "team": team, "team2": team2,
        "repo": repo, "repo2": repo2, "file": file, "file2": file2, "folder": folder, "folder2": folder2,
        "title": title, "title2": title2, "c1": c1, "c2": c2, "a1": a1, "a2": a2, "day": day, "day2": day2,
        "n": str(n), "m": str(m), "day_n": str(day_n), "day_m": str(day_m), "h": str(rng.randrange(5, 12)),
        "t": str(t), "t2": str(t + rng.choice([-3, -2, 2, 3])), "word_n": wn, "word_m": wm,
        "month": rng.choice(MONTHS), "item": rng.choice(ITEMS), "device": rng.choice(DEVICES),
        "product": rng.choice(PRODUCTS), "topic": rng.choice(TOPICS), "cuisine": rng.choice(CUISINES),
        "service": rng.choice(SERVICES), "language": rng.choice(LANGUAGES), "word": rng.choice(WORDS),
        "ticket": f"PROJ-{rng.randrange(100, 999)}", "ticket2": f"PROJ-{rng.randrange(100, 999)}",
        "lperson": person.lower(), "lperson2": person2.lower(),
    }


def _case(text: str, rng: random.Random, p: float = 0.33) -> str:
    return text.lower() if rng.random() < p else text


def generate() -> list[dict]:
    rng = random.Random(SEED)
    pairs: list[dict] = []

    def add(category: str, label: str, template: str, stored: str, lookup: str) -> None:
        if stored.strip().lower() == lookup.strip().lower() and label == "miss":
            return  # a slot draw that made both sides equal is no trap
        pairs.append({"category": category, "label": label, "template": template, "stored": stored, "lookup": lookup})

    for name, forms in PARAPHRASES:
        for _ in range(26):
            s = _slots(rng)
            a, b = rng.sample(forms, 2)
            add("paraphrase", "hit", name, a.format(**s), _case(b.format(**s), rng))
    for name, forms in PARAPHRASES + AGENT_HITS:
        edit = NEAR_REPEAT_EDITS[len(pairs) % len(NEAR_REPEAT_EDITS)]
        for i in range(12):
            s = _slots(rng)
            text = rng.choice(forms).format(**s)
            add("near_repeat", "hit", f"nr_{name}", text, near_repeat(text, NEAR_REPEAT_EDITS[(i + len(name)) % 8], rng))
        del edit
    for name, forms in AGENT_HITS:
        for _ in range(30):
            s = _slots(rng)
            a, b = rng.sample(forms, 2)
            add("agent_tool", "hit", name, a.format(**s), _case(b.format(**s), rng))
    for name, a, b in AGENT_MISSES:
        for _ in range(22):
            s = _slots(rng)
            add("agent_tool", "miss", name, a.format(**s), _case(b.format(**s), rng))

    def traps(category: str, templates: list[tuple[str, str, str]], count: int) -> None:
        for name, a, b in templates:
            for _ in range(count):
                s = _slots(rng)
                first, second = a.format(**s), b.format(**s)
                if rng.random() < 0.5:  # either side may be the stored one
                    first, second = second, first
                add(category, "miss", name, _case(first, rng, 0.2), _case(second, rng))

    traps("negation", NEGATION, 15)
    for name, a, b in ANTONYM_TEMPLATES:
        vocab = ANTONYM_PAIRS if name in VERB_TEMPLATES else (
            ORDER_PAIRS if name == "ant_sort" else TIME_PAIRS if name == "ant_time" else ADJ_PAIRS)
        for _ in range(32):
            s = _slots(rng)
            x, y = rng.choice(vocab)
            if rng.random() < 0.5:
                x, y = y, x
            add("antonym", "miss", name, _case(a.format(a=x, **s), rng, 0.2), _case(b.format(b=y, **s), rng))
    traps("quantifier", QUANTIFIER, 15)
    for name, template in ENTITY:
        for _ in range(15):
            s = _slots(rng)
            x, y = rng.sample(ENTITY_VOCAB[name], 2)
            lower = rng.random() < 0.5  # half of the entity swaps are all lower-case
            first, second = template.format(x=x, **s), template.format(x=y, **s)
            add("entity_swap", "miss", name, first.lower() if lower else first, second.lower() if lower else second)
    traps("numbers_dates_units", NUMBERS, 13)
    traps("role_swap", ROLES, 15)
    traps("comparative", COMPARATIVE, 15)
    traps("modality_tense", MODALITY, 15)

    # Deduplicate, number, and split by template: within each category templates alternate.
    seen: set[tuple[str, str]] = set()
    unique = []
    for p in pairs:
        k = (p["stored"].lower(), p["lookup"].lower())
        if k not in seen:
            seen.add(k)
            unique.append(p)
    order: dict[str, list[str]] = {}
    for p in unique:
        names = order.setdefault(p["category"], [])
        if p["template"] not in names:
            names.append(p["template"])
    for i, p in enumerate(unique):
        p["id"] = i
        p["split"] = "tune" if order[p["category"]].index(p["template"]) % 2 == 0 else "report"
    return unique


def main() -> None:
    pairs = generate()
    about = ("Labelled request pairs written for actioncache's semantic cache, generated by "
             "bench/data/make_semantic_eval.py. label hit: the stored request's plan answers the lookup; "
             "miss: it would be a wrong answer. split: tune (thresholds and rules may be chosen here) or "
             "report (only measured), assigned per template.")
    OUT.write_text(json.dumps({"about": about, "pairs": pairs}, indent=0, ensure_ascii=False) + "\n")
    counts: dict[tuple[str, str, str], int] = {}
    for p in pairs:
        key = (p["category"], p["label"], p["split"])
        counts[key] = counts.get(key, 0) + 1
    for key in sorted(counts):
        print(*key, counts[key])
    print("total", len(pairs))


if __name__ == "__main__":
    main()
