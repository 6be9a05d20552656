"""Instruction templates, in our own words: one per method x task kind.

`search_o1_instruction` and `rag_agent_instruction` explain the markers and the limits
and give one worked example per task kind; `task_prompt` adds the answer format;
`reader_prompt` is Reason-in-Documents; `rag_prompt` pastes documents before a question.
"""

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
from search_o1.prompts.examples import AGENT_EXAMPLES, SEARCH_EXAMPLES

FINAL_INFORMATION = "**Final Information**"
NOTHING_FOUND = "No helpful information found."

_ANSWER_FORMATS = {
    "qa": "Give your final answer as a short phrase in the form \\boxed{YOUR_ANSWER}.",
    "multihop": "Give your final answer as a short phrase in the form \\boxed{YOUR_ANSWER}.",
    "math": "Reason step by step and give your final answer in the form \\boxed{YOUR_ANSWER}.",
    "choice": (
        "Choose exactly one option and give its letter (A, B, C or D) in the form \\boxed{LETTER}."
    ),
    "code": (
        "Write a complete Python 3 program that solves the problem. Put the whole program "
        "in one ```python code block at the end of your answer."
    ),
}


def task_prompt(task: str, question: str) -> str:
    """The question with the task's answer-format instruction."""
    return f"{_ANSWER_FORMATS[task]}\n\nQuestion:\n{question.strip()}\n\n"


def search_o1_instruction(task: str, max_searches: int) -> str:
    return (
        "You are a careful reasoning assistant who can search for information while "
        "you think. Whenever you are missing a fact, search for it:\n"
        f"- Write your query as {BEGIN_QUERY} your query {END_QUERY} and stop.\n"
        f"- The system then searches and places what it found as {BEGIN_RESULT} "
        f"relevant information {END_RESULT}.\n"
        "- Read the result, then continue reasoning; search again if you need more.\n"
        f"You may search at most {max_searches} times.\n\n"
        f"Example:\n{SEARCH_EXAMPLES[task]}\n\n"
        "Remember:\n"
        f"- Put each query between {BEGIN_QUERY} and {END_QUERY}, one fact per query.\n"
        "- Keep queries short and specific, like what you would type into a search box.\n"
        "- When you know enough, stop searching and give the final answer.\n\n"
    )


def rag_agent_instruction(task: str, max_searches: int, max_urls: int) -> str:
    return (
        "You are a careful reasoning assistant who can search the web and read pages "
        "while you think.\n"
        f"- To search, write {BEGIN_QUERY} your query {END_QUERY} and stop. The results "
        f"come back as {BEGIN_RESULT} a list of titles, URLs and snippets {END_RESULT}.\n"
        f"- To read a result in full, write {BEGIN_URL} its URL {END_URL} and stop. The "
        f"page comes back as {BEGIN_FULL_PAGE} page text {END_FULL_PAGE}.\n"
        f"You may search at most {max_searches} times and read at most {max_urls} pages.\n\n"
        f"Example:\n{AGENT_EXAMPLES[task]}\n\n"
        "Remember: one fact per query; read a page only when its snippet is not enough; "
        "give the final answer when you know enough.\n\n"
    )


def rag_prompt(documents: str) -> str:
    return (
        "You are a knowledgeable assistant. Use the documents below where they help; "
        "rely on your own knowledge where they do not.\n\n"
        f"Documents:\n{documents}\n\n"
    )


def reader_prompt(previous_reasoning: str, query: str, documents: str) -> str:
    """Reason-in-Documents: distil what the documents say that the reasoning needs."""
    return (
        "**Task**\n"
        "Someone is reasoning through a problem and searched for a fact. Read the "
        "search results and extract what helps their reasoning continue.\n\n"
        "**How**\n"
        "1. Read the previous reasoning steps and the current query, to see what is "
        "needed.\n"
        "2. Read every document; note the facts that answer the query or move the "
        "reasoning forward.\n"
        "3. Keep only accurate, relevant facts, stated briefly, with names and numbers "
        "exactly as the documents give them.\n\n"
        f"**Output format**\n{FINAL_INFORMATION}\n\n[the helpful facts]\n\n"
        f"If the documents contain nothing useful, write:\n{FINAL_INFORMATION}\n\n"
        f"{NOTHING_FOUND}\n\n"
        f"**Previous reasoning steps**\n{previous_reasoning}\n\n"
        f"**Current search query**\n{query}\n\n"
        f"**Search results**\n{documents}\n\n"
        f"Now write {FINAL_INFORMATION} for the query: {query}\n"
    )
