"""One worked example per task kind, shown inside the instruction (our own examples)."""

from __future__ import annotations

from search_o1.markers import (
    BEGIN_FULL_PAGE,
    BEGIN_QUERY,
    BEGIN_RESULT,
    BEGIN_URL,
    END_FULL_PAGE,
    END_QUERY,
    END_RESULT,
    END_URL,
)


def _search(query: str, result: str) -> str:
    return f"{BEGIN_QUERY}{query}{END_QUERY}\n\n{BEGIN_RESULT}\n{result}\n{END_RESULT}\n"


_QA = (
    'Question: "Who designed the Eiffel Tower\'s structure?"\n'
    "Assistant thinking: I should confirm who engineered the structure.\n"
    + _search(
        "Eiffel Tower structural design engineer",
        "The structure was designed by Maurice Koechlin and Émile Nouguier, engineers "
        "at Gustave Eiffel's company.",
    )
)

_MULTIHOP = (
    'Question: "In which city was the director of the film Amélie born?"\n'
    "Assistant thinking: First I need the director, then where they were born.\n"
    + _search("Amélie film director", "Amélie (2001) was directed by Jean-Pierre Jeunet.")
    + "Now the director's birthplace.\n"
    + _search("Jean-Pierre Jeunet birthplace", "Jean-Pierre Jeunet was born in Roanne, France.")
)

_MATH = (
    'Question: "What is the sum of the first 100 prime numbers?"\n'
    "Assistant thinking: Adding them by hand is error-prone; a reference value helps.\n"
    + _search("sum of the first 100 primes", "The sum of the first 100 prime numbers is 24133.")
)

_CHOICE = (
    "Question: \"Which gas makes up most of Titan's atmosphere? (A) methane (B) nitrogen "
    '(C) argon (D) hydrogen"\n'
    "Assistant thinking: I recall methane is present, but is it the main component?\n"
    + _search(
        "Titan atmosphere composition",
        "Titan's atmosphere is about 95% nitrogen, with methane making up most of the rest.",
    )
)

_CODE = (
    'Question: "Count the inversions of an array of up to 200000 integers."\n'
    "Assistant thinking: An O(n log n) method is needed; let me recall the usual one.\n"
    + _search(
        "count inversions n log n algorithm",
        "Inversions can be counted during merge sort, or with a Fenwick tree over "
        "compressed values.",
    )
)

SEARCH_EXAMPLES = {
    "qa": _QA,
    "multihop": _MULTIHOP,
    "math": _MATH,
    "choice": _CHOICE,
    "code": _CODE,
}

_AGENT_TAIL = (
    f"{BEGIN_URL}https://example.org/page{END_URL}\n\n{BEGIN_FULL_PAGE}\n"
    f"... the page text ...\n{END_FULL_PAGE}\n"
)

AGENT_EXAMPLES = {
    task: text.replace(
        END_RESULT + "\n", END_RESULT + "\nThe snippet is brief; read the page.\n" + _AGENT_TAIL, 1
    )
    for task, text in SEARCH_EXAMPLES.items()
}
