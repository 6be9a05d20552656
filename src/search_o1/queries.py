"""Is a query worth searching? Placeholders copied from our instructions, and forced
queries that are not queries at all.

Two rules, both plain text tests with no model in the loop:

- **Placeholder** (any query): the query repeats one of the queries shown in the
  chain's own instruction (the text between the query markers there: "your query", the
  worked examples) and shares no content word with the question or the chain so far
  (its queries left out), or it is made of filler words only ("and", "the", "...").
  It is not searched, and the model is told why.
- **Plausible forced query** (the one-line query a small model writes when the engine
  opens its chain with a query marker): at most `MAX_FORCED_WORDS` words and
  `MAX_FORCED_CHARS` characters; not a sentence (no final `.`, `!` or `:`, no sentence
  break inside, and no "is/was/are/were" unless it opens with a question word, so
  "Tosca was written by Verdi" is a statement while "who was Tosca's composer" is a
  query); not a placeholder; and sharing a content word with the question (a made-up
  statement about something else shares none). Otherwise the question itself is
  searched.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from search_o1.markers import BEGIN_QUERY, END_QUERY, neutralise, result_block
from search_o1.types import Prompt, SearchRecord

MAX_FORCED_WORDS = 12
MAX_FORCED_CHARS = 100
_WORD = re.compile(r"\w+", re.UNICODE)
# A query span, closed or still open at the end of the text.
_QUERY_SPAN = re.compile(re.escape(BEGIN_QUERY) + ".*?(?:" + re.escape(END_QUERY) + "|$)", re.S)
# Words that name no topic. A query of nothing else searches for nothing ("and", "to
# the", "your query"), while a short real one ("AI", "C++") is kept; content words (3+
# characters, none of these) decide whether two texts share a topic.
_FILLER = frozenset(
    {
        *("a", "an", "as", "at", "be", "by", "do", "i", "if", "in", "is", "it", "me", "my"),
        *("of", "on", "or", "so", "to", "we", "and", "are", "for", "from", "how", "its"),
        *("query", "search", "the", "this", "that", "was", "what", "when", "where"),
        *("which", "who", "why", "with", "your", "you"),
    }
)
_QUESTION_WORDS = frozenset(("who", "whom", "whose", "what", "which", "when", "where", "why"))
_QUESTION_WORDS |= {"how", "is", "was", "are", "were", "does", "did", "do", "can"}
_COPULAS = frozenset(("is", "was", "are", "were"))
_EMPTY_NOTE = (
    "The search query was empty. Write the query between the query markers, "
    "or continue without searching."
)
_PLACEHOLDER_NOTE = (
    'The query "{query}" was copied from the instructions, so nothing was searched. '
    "Write the fact you need in your own words between the query markers, or continue "
    "without searching."
)
_LIMIT_NOTE = (
    "The search limit has been reached. You may not search any more; continue with what you know."
)


def _only_filler(text: str) -> bool:
    """No word at all, or only words that name no topic ("and", "your query", "...")."""
    return all(w in _FILLER for w in _WORD.findall(text.lower()))


def content_words(text: str) -> set[str]:
    """Lower-cased words of 3+ characters that are not filler.

    >>> sorted(content_words("Who directed the film Amélie?"))
    ['amélie', 'directed', 'film']
    """
    return {w for w in _WORD.findall(text.lower()) if len(w) >= 3 and w not in _FILLER}


def shown_queries(prompt: Prompt) -> frozenset[str]:
    """Every query the chain's instruction shows between the query markers, normalised."""
    text = "\n".join(m.content for m in prompt.messages)
    found = set()
    for part in text.split(BEGIN_QUERY)[1:]:
        end = part.find(END_QUERY)
        if end >= 0:
            found.add(_normal(part[:end]))
    return frozenset(found)


def is_placeholder(query: str, shown: Iterable[str], context: str) -> bool:
    """A query copied from the instruction (unrelated to `context`), or no query.

    `context`: the question and the chain so far; queries in it are left out, so a
    copied example does not vouch for itself.

    >>> shown = {"your query", "amélie film director"}
    >>> [is_placeholder(q, shown, "Where was Tosca's composer born?")
    ...  for q in ("your query", "and", "...", "Amélie film director", "Tosca composer", "AI")]
    [True, True, True, True, False, False]
    >>> is_placeholder("Amélie film director", shown, "Who directed Amélie?")
    False
    >>> is_placeholder("Amélie film director", shown, "q? <|begin_search_query|>Amélie film")
    True
    """
    if _only_filler(query):
        return True
    if _normal(query) not in set(shown):
        return False
    return not content_words(query) & content_words(_QUERY_SPAN.sub(" ", context))


_NOT_SEARCH_WORDS = re.compile(r"\w@\w|(?:^|\s)#\w|://")


def plausible_forced_query(query: str, question: str, shown: Iterable[str] = ()) -> bool:
    """Whether a forced query looks like a search-box query about the question.

    >>> q = "Which country is the birthplace of the composer of the opera Tosca?"
    >>> plausible_forced_query("Tosca composer birthplace", q)
    True
    >>> plausible_forced_query("Tosca was composed by Verdi in the year 1890.", q)
    False
    >>> plausible_forced_query("The Eiffel Tower stands in Paris", q)
    False
    >>> plausible_forced_query("Tosca was written by Verdi", q)
    False
    >>> plausible_forced_query("where was the composer of Tosca born", q)
    True
    >>> plausible_forced_query("Tosca composer puccini@gmail.com #opera", q)
    False
    """
    text = query.strip()
    if not text or len(text) > MAX_FORCED_CHARS or len(text.split()) > MAX_FORCED_WORDS:
        return False
    if text[-1] in ".!:" or re.search(r"[.!?]\s+\w", text) or _statement(text):
        return False
    if _NOT_SEARCH_WORDS.search(text):  # a small model's run-on: mail, tags, links
        return False
    if is_placeholder(text, shown, question):
        return False
    asked = content_words(question)
    return not asked or bool(content_words(text) & asked)


def refusal(
    query: str,
    *,
    context: str,
    shown: Iterable[str],
    earlier: Mapping[str, str],
    searches_left: int,
    placeholders: bool = True,
) -> SearchRecord | None:
    """Whether a query is refused: the record of its refusal, or None to search it.

    In this order: empty; repeated (`earlier` maps a query to its inserted result);
    placeholder (unless `placeholders` is false); over the search limit. A placeholder
    does not use up a search.
    """
    if not query:
        return SearchRecord(query, "empty", inserted=result_block(_EMPTY_NOTE))
    if query in earlier:
        return SearchRecord(query, "repeated", inserted=earlier[query])
    if placeholders and is_placeholder(query, shown, context):
        note = _PLACEHOLDER_NOTE.format(query=neutralise(query))
        return SearchRecord(query, "placeholder", inserted=result_block(note))
    if searches_left <= 0:
        return SearchRecord(query, "limit", inserted=result_block(_LIMIT_NOTE))
    return None


def _statement(text: str) -> bool:
    words = _WORD.findall(text.lower())
    return bool(words) and words[0] not in _QUESTION_WORDS and bool(_COPULAS & set(words))


def _normal(text: str) -> str:
    return " ".join(text.lower().split()).strip(" .?!\"'")
