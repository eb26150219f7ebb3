"""`python -m schedmate.llama_server ARGS`: llama-cpp-python's server plus a "gemma3" chat format.

Why this shim: the packaged Gemma-3 GGUF carries no `tokenizer.chat_template`, so llama-cpp-python
falls back to llama-2 prompts (the model then babbles `[INST]`/`<<SYS>>`), and its built-in
"gemma" format silently drops system messages. "gemma3" reproduces Gemma 3's official template:
`<start_of_turn>user|model` turns, system text folded into the first user turn. Everything else
(ARGS, API) is llama_cpp.server's own. Imported only in the server process: needs llama_cpp.
"""

from __future__ import annotations

import json
from typing import Any

from llama_cpp import llama_chat_format

GEMMA3 = "gemma3"


def format_gemma3(messages: list[dict[str, Any]], **_: Any) -> llama_chat_format.ChatFormatterResponse:
    """Gemma 3 prompt for OpenAI-style messages (BOS is added by the tokenizer)."""
    system = "\n\n".join(_text(m) for m in messages if m.get("role") in ("system", "developer"))
    turns: list[str] = []
    for m in messages:
        role = m.get("role")
        if role in ("system", "developer"):
            continue
        content = _text(m)
        if role == "tool":
            content = f"Tool result: {content}"
        if not turns and system:
            content = f"{system}\n\n{content}"
        turns.append(f"<start_of_turn>{'model' if role == 'assistant' else 'user'}\n{content.strip()}<end_of_turn>\n")
    if not turns and system:  # system-only conversation
        turns.append(f"<start_of_turn>user\n{system.strip()}<end_of_turn>\n")
    return llama_chat_format.ChatFormatterResponse(prompt="".join(turns) + "<start_of_turn>model\n", stop="<end_of_turn>")


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):  # content parts
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    if content is None and message.get("tool_calls"):
        return json.dumps([c.get("function", {}) for c in message["tool_calls"]])
    return str(content or "")


def main() -> None:
    llama_chat_format.register_chat_format(GEMMA3)(format_gemma3)
    from llama_cpp.server.__main__ import main as serve

    serve()


if __name__ == "__main__":
    main()
