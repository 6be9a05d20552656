"""The paper's `math_equal`: string equivalence after the Hendrycks-MATH normalisation.

The paper's evaluation compares a predicted answer with the gold one by rewriting both
into a canonical string and testing equality: no algebra, so `x^2+1` and `1+x^2` differ
while `\\dfrac{1}{2}`, `\\frac12`, `0.5` and `1/2` agree. Its tables report this
column for MATH500, AMC and AIME. Our own implementation of that published rule set
(the MATH benchmark's `_strip_string` / `is_equiv`), rule for rule, including its quirks:

- only `\\$` and `\\%` are removed (a bare `$` or `%` stays);
- units go only when written `\\text{ ...}` with a leading space, once;
- `k = 3` drops the left side only when it is at most two characters;
- when a rule meets input it cannot handle (a second `\\text{ `, a bare `\\sqrt` or
  `\\frac` at the very end), the original strings are compared as they are.
"""

from __future__ import annotations

__all__ = ["canonical_math", "math_equal"]


class _Unhandled(Exception):
    """The normaliser cannot rewrite this input; compare the raw strings instead."""


def _braced_fracs(s: str) -> str:
    r"""`\frac12` -> `\frac{1}{2}`, `\frac1{72}` -> `\frac{1}{72}`; braced ones stay."""
    head, *tails = s.split("\\frac")
    out = [head]
    for tail in tails:
        out.append("\\frac")
        if not tail:
            raise _Unhandled
        if tail[0] == "{":
            out.append(tail)
        elif len(tail) < 2:
            return s  # too short to be two arguments: the whole string stays as it was
        elif tail[1] == "{":
            out.append("{" + tail[0] + "}" + tail[1:])
        else:
            out.append("{" + tail[0] + "}{" + tail[1] + "}" + tail[2:])
    return "".join(out)


def _braced_sqrt(s: str) -> str:
    r"""`\sqrt3` -> `\sqrt{3}` (one character only, as in the original rule)."""
    head, *tails = s.split("\\sqrt")
    out = [head]
    for tail in tails:
        if not tail:
            raise _Unhandled
        out.append("\\sqrt" + (tail if tail[0] == "{" else "{" + tail[0] + "}" + tail[1:]))
    return "".join(out)


def _slash_to_frac(s: str) -> str:
    r"""`3/4` -> `\frac{3}{4}` when both sides are plain integers written canonically."""
    parts = s.split("/")
    if len(parts) != 2:
        return s
    try:
        a, b = int(parts[0]), int(parts[1])
    except ValueError:
        return s
    return f"\\frac{{{a}}}{{{b}}}" if s == f"{a}/{b}" else s


def _drop_units(s: str) -> str:
    pieces = s.split("\\text{ ")
    if len(pieces) > 2:
        raise _Unhandled
    return pieces[0]


def _drop_short_lhs(s: str) -> str:
    parts = s.split("=")
    return parts[1] if len(parts) == 2 and len(parts[0]) <= 2 else s


_DELETIONS = ("\n", "\\!")
_REPLACEMENTS = (("\\\\", "\\"), ("tfrac", "frac"), ("dfrac", "frac"))
_MARKUP = ("\\left", "\\right", "^{\\circ}", "^\\circ", "\\$")


def canonical_math(answer: str) -> str:
    r"""The canonical string of an answer (raises `_Unhandled` where the rules give up).

    >>> canonical_math(r"\dfrac12"), canonical_math("0.5"), canonical_math("3/4")
    ('\\frac{1}{2}', '\\frac{1}{2}', '\\frac{3}{4}')
    >>> canonical_math(r"k = \left( 1, 2 \right)"), canonical_math(r"5\text{ cm}")
    ('(1,2)', '5')
    """
    s = answer
    for token in _DELETIONS:
        s = s.replace(token, "")
    for old, new in _REPLACEMENTS:
        s = s.replace(old, new)
    for token in _MARKUP:
        s = s.replace(token, "")
    s = _drop_units(s).replace("\\%", "")
    s = s.replace(" .", " 0.").replace("{.", "{0.")
    if not s:
        return s
    if s[0] == ".":
        s = "0" + s
    s = _braced_sqrt(_drop_short_lhs(s)).replace(" ", "")
    s = _braced_fracs(s)
    if s == "0.5":
        s = "\\frac{1}{2}"
    return _slash_to_frac(s)


def math_equal(prediction: str | None, gold: str | None) -> bool:
    r"""The paper's check: equal canonical strings (raw equality where the rules give up).

    >>> math_equal(r"\frac{1}{2}", "0.5"), math_equal("x^2+1", "1+x^2")
    (True, False)
    >>> math_equal(r"10^\circ", "10"), math_equal("$5$", "5"), math_equal(None, "5")
    (True, False, False)
    """
    if prediction is None or gold is None:
        return prediction is None and gold is None
    try:
        return canonical_math(prediction) == canonical_math(gold)
    except _Unhandled:
        return prediction == gold
