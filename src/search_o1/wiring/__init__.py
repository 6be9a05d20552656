"""Settings -> explicit objects: the one place a run's `Settings` reach the backends.

Every module below the pipeline takes plain constructor arguments; the functions here
read what each needs from `Settings`. They are the built-in backends' registry factories
(`llms`, `searches`, named in pyproject.toml's entry points) and the run's shared pieces
(`storage`: the cache and the document step). A third-party backend's factory receives
`Settings` the same way (see docs/extending.md).
"""

from search_o1.wiring.storage import build_documents, open_cache

__all__ = ["build_documents", "open_cache"]
