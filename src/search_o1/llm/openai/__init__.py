"""The `openai` backend: any OpenAI-compatible server (vLLM, SGLang, llama.cpp, Ollama, ...).

`OpenAILLM` (client.py) is the model client; the other modules are its parts.
"""

from search_o1.llm.openai.client import DEADLINE_S, STALL_S, OpenAILLM

__all__ = ["DEADLINE_S", "STALL_S", "OpenAILLM"]
