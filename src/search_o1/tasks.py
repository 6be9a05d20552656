"""The task kinds: what a question asks for, which decides its instructions and how its
answer is read (a boxed value, a letter, a code block).

Apart from `config` so that the engine, prompts and datasets can name a task without
depending on the user's settings.
"""

from typing import Literal

__all__ = ["TASKS", "TaskKind"]

TaskKind = Literal["qa", "multihop", "math", "choice", "code"]
TASKS: tuple[str, ...] = ("qa", "multihop", "math", "choice", "code")
