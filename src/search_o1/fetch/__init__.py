"""Reading web pages for the reader model: guarded fetching, text extraction, windows.

`WebDocuments` is the document step the pipeline uses (built from settings by
`search_o1.wiring.build_documents`); the pieces are public for users who fetch pages
themselves.
"""

from search_o1.fetch.documents import WebDocuments
from search_o1.fetch.fetcher import FetchConfig, FetchError, Page, PageFetcher
from search_o1.fetch.guard import BlockedURLError, HostPolicy, is_public_address
from search_o1.page_text import EXTRACTOR_VERSION, extract_text

__all__ = [
    "EXTRACTOR_VERSION",
    "BlockedURLError",
    "FetchConfig",
    "FetchError",
    "HostPolicy",
    "Page",
    "PageFetcher",
    "WebDocuments",
    "extract_text",
    "is_public_address",
]
