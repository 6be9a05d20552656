"""Serving search-o1: an OpenAI-compatible API, a /retrieve endpoint and a web page.

Needs the `serve` extra (starlette, uvicorn). Entry points: `serve.app.create_app`,
`serve.view.create_view_app`, and `serve.background.serve_in_thread` for tests.
Nothing is imported here, so importing a submodule pulls in only what it needs.
"""
