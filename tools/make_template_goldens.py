#!/usr/bin/env python3
"""Reference renderings of chat templates for Folio's Jinja interpreter.

Made with:
    .venv/bin/python tools/make_template_goldens.py \
        --model models/SmolLM2-135M-Instruct.Q4_1.gguf --out tests/data/chat/goldens.json

Every template is rendered by Python jinja2 through transformers' own
compile function (transformers.utils.chat_template_utils._compile_jinja_template:
ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
extensions=[AssistantTracker, loopcontrols]) with transformers' tojson,
raise_exception, strftime_now, dict and namespace), with the variables
transformers passes (messages, tools=None, documents=None,
add_generation_prompt, bos_token, eos_token, extra kwargs). The C++ test
(tests/chat/chat_template_golden_test.cpp) renders the same cases and compares
byte for byte.

Cases that would not terminate in Python (runaway loops, output bombs) are
recorded without running them; Folio must stop them with an error.

The feature templates and the model-format templates (Llama-3, Qwen2,
Mistral, Phi-3 shapes) below are written for these tests, not copied. So are
the model-family templates in tests/data/chat/templates/ (Llama 3.1 with
tools, Qwen3 with reasoning, Phi-3, Mistral v3/v7-tekken, Gemma 2/3), which
reproduce each family's real format: its special tokens, whitespace rules and
Jinja features; they run on the common conversations and on their own tool,
tool-result and reasoning conversations (FAMILY_CONVERSATIONS, FAMILY_TOOLS
passed as `tools`). Where a template prints strftime_now(fmt), today's date in
the golden is replaced by "<<strftime_now FMT>>" (the case's today_format);
the C++ test puts its own today there.
"""
import argparse
import json
import sys
from datetime import datetime
from pathlib import Path

from transformers.utils.chat_template_utils import _compile_jinja_template

ROOT = Path(__file__).resolve().parent.parent
FAMILY_DIR = ROOT / "tests/data/chat/templates"

CONVERSATIONS = {
    "system_user": [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "Hello!"},
    ],
    "user_only": [{"role": "user", "content": "What is 2+2?"}],
    "multi_turn": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Name a colour."},
        {"role": "assistant", "content": "Blue."},
        {"role": "user", "content": "Another one?"},
    ],
    "multi_turn_no_system": [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello, how can I help?"},
        {"role": "user", "content": "Tell me a joke."},
    ],
    "unicode": [
        {"role": "user", "content": "Héllo wörld — 你好 🌍 ünïcödé"},
        {"role": "assistant", "content": "こんにちは! Ça va? Ελληνικά"},
        {"role": "user", "content": "  padded with spaces and a newline\n"},
    ],
    "special_chars": [
        {"role": "system", "content": "Quotes: 'single' \"double\" and a backslash \\ here."},
        {"role": "user", "content": "Literal {{ braces }} and {% tags %} and <|im_end|>\n\ttab\r\nCRLF"},
    ],
    "empty": [],
}

# Conversations a template is rendered on, with and without the generation prompt.
CHAT_CONVERSATIONS = ["system_user", "user_only", "multi_turn", "multi_turn_no_system", "unicode", "special_chars"]

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather for a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string", "description": "City name, e.g. Zürich"}},
                "required": ["city"],
            },
        },
    }
]

TOOL_CONVERSATION = [
    {"role": "user", "content": "Weather in Paris?"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}],
    },
    {"role": "tool", "content": "{\"temp_c\": 21}"},
    {"role": "assistant", "content": "It is 21 °C."},
]

# ---- model-format templates (written for these tests) ----------------------

LLAMA3_STYLE = """{{- bos_token }}
{%- if messages and messages[0]['role'] == 'system' %}
    {%- set system_message = messages[0]['content'] | trim %}
    {%- set loop_messages = messages[1:] %}
{%- else %}
    {%- set system_message = "" %}
    {%- set loop_messages = messages %}
{%- endif %}
{%- if system_message %}
    {{- '<|start_header_id|>system<|end_header_id|>\\n\\n' + system_message + '<|eot_id|>' }}
{%- endif %}
{%- for message in loop_messages %}
    {{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' }}
    {{- message['content'] | trim }}
    {{- '<|eot_id|>' }}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}
{%- endif %}
"""

QWEN2_TOOLS_STYLE = """{%- set default_system = 'You are a helpful assistant.' %}
{%- set has_system = messages|length > 0 and messages[0].role == 'system' %}
{{- '<|im_start|>system\\n' }}
{{- messages[0].content if has_system else default_system }}
{%- if tools %}
    {{- '\\n\\n# Tools\\n\\nFunctions you may call, one JSON object per line:\\n<tools>' }}
    {%- for tool in tools %}
        {{- '\\n' ~ (tool.function if tool.function is defined else tool) | tojson }}
    {%- endfor %}
    {{- '\\n</tools>\\n\\nAnswer a call as <tool_call>{"name": ..., "arguments": ...}</tool_call>.' }}
{%- endif %}
{{- '<|im_end|>\\n' }}
{%- for message in messages %}
    {%- if message.role == 'system' and loop.first %}
        {%- continue %}
    {%- endif %}
    {%- if message.role == 'assistant' and message.tool_calls is defined and message.tool_calls %}
        {{- '<|im_start|>assistant' }}
        {%- if message.content %}
            {{- '\\n' + message.content }}
        {%- endif %}
        {%- for call in message.tool_calls %}
            {%- set fn = call.function if call.function is defined else call %}
            {{- '\\n<tool_call>\\n{"name": "' + fn.name + '", "arguments": ' + fn.arguments | tojson + '}\\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\\n' }}
    {%- elif message.role == 'tool' %}
        {%- if loop.previtem is not defined or loop.previtem.role != 'tool' %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\\n<tool_response>\\n' + message.content + '\\n</tool_response>' }}
        {%- if loop.last or loop.nextitem.role != 'tool' %}
            {{- '<|im_end|>\\n' }}
        {%- endif %}
    {%- else %}
        {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\\n' }}
{%- endif %}
"""

MISTRAL_STYLE = """{{- bos_token }}
{%- for message in messages %}
    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}
        {{- raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}
    {%- endif %}
    {%- if message['role'] == 'user' %}
        {{- '[INST] ' + message['content'] + ' [/INST]' }}
    {%- elif message['role'] == 'assistant' %}
        {{- ' ' + message['content'] + eos_token }}
    {%- else %}
        {{- raise_exception('Only user and assistant roles are supported!') }}
    {%- endif %}
{%- endfor %}
"""

PHI3_STYLE = (
    "{% for message in messages %}"
    "{% if message['role'] == 'system' %}{{'<|system|>\\n' + message['content'] + '<|end|>\\n'}}"
    "{% elif message['role'] == 'user' %}{{'<|user|>\\n' + message['content'] + '<|end|>\\n'}}"
    "{% elif message['role'] == 'assistant' %}{{'<|assistant|>\\n' + message['content'] + '<|end|>\\n'}}"
    "{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% else %}{{ eos_token }}{% endif %}"
)

# Indented, no whitespace control at all: leans entirely on trim_blocks + lstrip_blocks.
PLAIN_INDENTED = """{% for message in messages %}
    {% if message.role == 'system' %}
System: {{ message.content }}
    {% else %}
{{ message.role | capitalize }}: {{ message.content }}
    {% endif %}
{% endfor %}
{% if add_generation_prompt %}
Assistant:
{% endif %}
"""

# Reasoning models keep only the answer after </think> in earlier assistant turns.
REASONING_STYLE = """{%- set ns = namespace(system='') %}
{%- for message in messages if message.role == 'system' %}
    {%- set ns.system = ns.system + message.content %}
{%- endfor %}
{{- bos_token + ns.system }}
{%- for message in messages %}
    {%- if message.role == 'user' %}
        {{- '<|User|>' + message.content }}
    {%- elif message.role == 'assistant' %}
        {%- set answer = message.content.split('</think>')[-1].lstrip('\\n') %}
        {{- '<|Assistant|>' + answer + eos_token }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|Assistant|><think>\\n' }}
{%- endif %}
"""

# Thinking model with tools: finds the last real user query by scanning
# backwards, keeps reasoning only after it, and groups tool responses.
QWEN3_STYLE = """{%- if tools %}
    {{- '<|im_start|>system\\n' }}
    {%- if messages[0].role == 'system' %}
        {{- messages[0].content + '\\n\\n' }}
    {%- endif %}
    {{- '# Tools\\n<tools>' }}
    {%- for tool in tools %}
        {{- '\\n' }}{{- tool | tojson }}
    {%- endfor %}
    {{- '\\n</tools><|im_end|>\\n' }}
{%- elif messages[0].role == 'system' %}
    {{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}
{%- endif %}
{%- set ns = namespace(multi_step_tool=true, last_query_index=messages|length - 1) %}
{%- for message in messages[::-1] %}
    {%- set index = (messages|length - 1) - loop.index0 %}
    {%- if ns.multi_step_tool and message.role == 'user' and message.content is string
          and not (message.content.startswith('<tool_response>') and message.content.endswith('</tool_response>')) %}
        {%- set ns.multi_step_tool = false %}
        {%- set ns.last_query_index = index %}
    {%- endif %}
{%- endfor %}
{%- for message in messages %}
    {%- set content = message.content if message.content is string else '' %}
    {%- if message.role == 'user' or (message.role == 'system' and not loop.first) %}
        {{- '<|im_start|>' + message.role + '\\n' + content + '<|im_end|>\\n' }}
    {%- elif message.role == 'assistant' %}
        {%- set reasoning = '' %}
        {%- if message.reasoning_content is string %}
            {%- set reasoning = message.reasoning_content %}
        {%- elif '</think>' in content %}
            {%- set reasoning = content.split('</think>')[0].rstrip('\\n').split('<think>')[-1].lstrip('\\n') %}
            {%- set content = content.split('</think>')[-1].lstrip('\\n') %}
        {%- endif %}
        {%- if loop.index0 > ns.last_query_index and (loop.last or reasoning) %}
            {{- '<|im_start|>assistant\\n<think>\\n' + reasoning.strip('\\n') + '\\n</think>\\n\\n' + content.lstrip('\\n') }}
        {%- else %}
            {{- '<|im_start|>assistant\\n' + content }}
        {%- endif %}
        {%- if message.tool_calls %}
            {%- for tool_call in message.tool_calls %}
                {%- if (loop.first and content) or (not loop.first) %}
                    {{- '\\n' }}
                {%- endif %}
                {%- if tool_call.function %}
                    {%- set tool_call = tool_call.function %}
                {%- endif %}
                {{- '<tool_call>\\n{"name": "' }}{{- tool_call.name }}{{- '", "arguments": ' }}
                {%- if tool_call.arguments is string %}
                    {{- tool_call.arguments }}
                {%- else %}
                    {{- tool_call.arguments | tojson }}
                {%- endif %}
                {{- '}\\n</tool_call>' }}
            {%- endfor %}
        {%- endif %}
        {{- '<|im_end|>\\n' }}
    {%- elif message.role == 'tool' %}
        {%- if loop.first or (messages[loop.index0 - 1].role != 'tool') %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\\n<tool_response>\\n' + content + '\\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != 'tool') %}
            {{- '<|im_end|>\\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\\n' }}
    {%- if enable_thinking is defined and enable_thinking is false %}
        {{- '<think>\\n\\n</think>\\n\\n' }}
    {%- endif %}
{%- endif %}
"""

# Llama 3.1 shape: a dated system header, tools placed in the first user turn.
LLAMA31_TOOLS_STYLE = """{{- bos_token }}
{%- if not date_string is defined %}
    {%- set date_string = "1 Jan 2025" %}
{%- endif %}
{%- if not tools_in_user_message is defined %}
    {%- set tools_in_user_message = true %}
{%- endif %}
{%- if messages[0]['role'] == 'system' %}
    {%- set system_message = messages[0]['content'] | trim %}
    {%- set messages = messages[1:] %}
{%- else %}
    {%- set system_message = "" %}
{%- endif %}
{{- "<|start_header_id|>system<|end_header_id|>\\n\\n" }}
{%- if tools is not none %}
    {{- "Environment: ipython\\n" }}
{%- endif %}
{{- "Cutting Knowledge Date: December 2023\\n" }}
{{- "Today Date: " + date_string + "\\n\\n" }}
{{- system_message }}
{{- "<|eot_id|>" }}
{%- if tools_in_user_message and tools is not none %}
    {%- if messages | length != 0 %}
        {%- set first_user_message = messages[0]['content'] | trim %}
        {%- set messages = messages[1:] %}
    {%- else %}
        {{- raise_exception("Cannot put tools in the first user message when there's no first user message!") }}
    {%- endif %}
    {{- '<|start_header_id|>user<|end_header_id|>\\n\\n' -}}
    {{- "Use one of these functions if it helps:\\n\\n" }}
    {%- for t in tools %}
        {{- t | tojson(indent=4) }}
        {{- "\\n\\n" }}
    {%- endfor %}
    {{- first_user_message + "<|eot_id|>" }}
{%- endif %}
{%- for message in messages %}
    {%- if not (message.role == 'ipython' or message.role == 'tool' or 'tool_calls' in message) %}
        {{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' + message['content'] | trim + '<|eot_id|>' }}
    {%- elif 'tool_calls' in message %}
        {%- set tool_call = message.tool_calls[0].function %}
        {{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' -}}
        {{- '{"name": "' + tool_call.name + '", "parameters": ' + tool_call.arguments | tojson + '}' }}
        {{- "<|eot_id|>" }}
    {%- else %}
        {{- "<|start_header_id|>ipython<|end_header_id|>\\n\\n" }}
        {%- if message.content is mapping or message.content is iterable %}
            {{- message.content | tojson }}
        {%- else %}
            {{- message.content }}
        {%- endif %}
        {{- "<|eot_id|>" }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}
{%- endif %}
"""

# Multimodal content lists: a message's content is a string or a list of parts.
MULTIMODAL_STYLE = """{{ bos_token }}
{%- for message in messages %}
    {%- set role = 'model' if message['role'] == 'assistant' else message['role'] %}
    {{- '<start_of_turn>' + role + '\\n' }}
    {%- if message['content'] is string %}
        {{- message['content'] | trim }}
    {%- elif message['content'] is iterable %}
        {%- for item in message['content'] %}
            {%- if item['type'] == 'image' %}
                {{- '<start_of_image>' }}
            {%- elif item['type'] == 'text' %}
                {{- item['text'] | trim }}
            {%- endif %}
        {%- endfor %}
    {%- else %}
        {{- raise_exception('Invalid content type') }}
    {%- endif %}
    {{- '<end_of_turn>\\n' }}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<start_of_turn>model\\n' }}
{%- endif %}
"""

# ---- model families (tests/data/chat/templates/*.jinja) --------------------
#
# Each file is written for these tests to reproduce one family's real format:
# its special tokens, whitespace and the Jinja features its template uses.
# Name (the file stem) -> (bos_token, eos_token).
FAMILIES = {
    "llama31": ("<|begin_of_text|>", "<|eot_id|>"),
    "qwen3": ("", "<|im_end|>"),
    "phi3": ("<s>", "<|endoftext|>"),
    "phi3_medium": ("<s>", "<|endoftext|>"),
    "mistral_v3_tekken": ("<s>", "</s>"),
    "mistral_v7_tekken": ("<s>", "</s>"),
    "gemma2": ("<bos>", "<eos>"),
    "gemma3": ("<bos>", "<eos>"),
}

# strftime_now formats the family templates print; the date in a golden is
# replaced by a placeholder that the C++ test fills with its own today.
TODAY_FORMATS = {"llama31": "%d %b %Y", "mistral_v7_tekken": "%Y-%m-%d"}

FAMILY_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather for a city",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "City name, e.g. Zürich"},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                },
                "required": ["city"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "convert_currency",
            "description": "Convert an amount between currencies",
            "parameters": {
                "type": "object",
                "properties": {"amount": {"type": "number"}, "from": {"type": "string"}, "to": {"type": "string"}},
                "required": ["amount", "from", "to"],
            },
            "return": {"type": "number", "description": "the converted amount"},
        },
    },
]


def tool_call(call_id, name, arguments):
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


FAMILY_CONVERSATIONS = {
    # One call, its result, the answer, and a follow-up question.
    "tool_round_trip": [
        {"role": "system", "content": "You are a travel assistant."},
        {"role": "user", "content": "What's the weather in Paris, in celsius?"},
        {"role": "assistant", "content": "", "tool_calls": [tool_call("call0Pari", "get_weather", {"city": "Paris", "unit": "celsius"})]},
        {"role": "tool", "tool_call_id": "call0Pari", "name": "get_weather", "content": "{\"temp\": 21, \"sky\": \"clear\"}"},
        {"role": "assistant", "content": "It is 21 °C and clear in Paris."},
        {"role": "user", "content": "And 30 EUR in USD?"},
    ],
    # Two calls in one turn (content None, as OpenAI clients send it), two results.
    "parallel_tool_calls": [
        {"role": "user", "content": "Weather in Paris and Rome?"},
        {"role": "assistant", "content": None, "tool_calls": [
            tool_call("callParis", "get_weather", {"city": "Paris"}),
            tool_call("call0Rome", "get_weather", {"city": "Rome"})]},
        {"role": "tool", "tool_call_id": "callParis", "content": "21 °C"},
        {"role": "tool", "tool_call_id": "call0Rome", "content": "24 °C"},
        {"role": "assistant", "content": "Paris: 21 °C, Rome: 24 °C."},
    ],
    # Arguments as a JSON string (the OpenAI wire form) and text before the call.
    "string_arguments": [
        {"role": "user", "content": "Convert 30 EUR to USD."},
        {"role": "assistant", "content": "Let me convert that.", "tool_calls": [
            tool_call("conv12345", "convert_currency", "{\"amount\": 30, \"from\": \"EUR\", \"to\": \"USD\"}")]},
        {"role": "tool", "tool_call_id": "conv12345", "content": "32.7"},
    ],
    # Reasoning: in the content as <think>...</think> and as reasoning_content.
    "reasoning_turns": [
        {"role": "system", "content": "Think before answering."},
        {"role": "user", "content": "2+2?"},
        {"role": "assistant", "content": "<think>\nTwo and two.\n</think>\n\n4"},
        {"role": "user", "content": "And 3+3?"},
        {"role": "assistant", "content": "6", "reasoning_content": "\nThree and three.\n"},
    ],
    # A tool loop after the last query: every turn after it keeps its reasoning.
    "reasoning_tool_loop": [
        {"role": "user", "content": "Is it warm in Rome?"},
        {"role": "assistant", "content": "", "reasoning_content": "I need the weather first.",
         "tool_calls": [tool_call("call0Rome", "get_weather", {"city": "Rome"})]},
        {"role": "tool", "tool_call_id": "call0Rome", "content": "24 °C"},
        {"role": "assistant", "content": "<think>\n24 °C is warm.\n</think>\n\nYes, 24 °C."},
    ],
    # A user turn that is only a wrapped tool response does not count as the query.
    "tool_response_as_user": [
        {"role": "user", "content": "Weather in Oslo?"},
        {"role": "assistant", "content": "<think>\nCall the tool.\n</think>\n\n", "tool_calls": [tool_call("call0Oslo", "get_weather", {"city": "Oslo"})]},
        {"role": "user", "content": "<tool_response>\n-3 °C\n</tool_response>"},
        {"role": "assistant", "content": "<think>\nCold.\n</think>\n\nIt is -3 °C."},
    ],
    # Llama's ipython role, with a structured result.
    "ipython_result": [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": "", "tool_calls": [tool_call("call0Pari", "get_weather", {"city": "Paris"})]},
        {"role": "ipython", "content": {"temp": 21, "sky": "clear"}},
        {"role": "assistant", "content": "21 °C, clear."},
    ],
    # Llama's built-in tools (brave_search) are called in Python syntax.
    "builtin_tool_call": [
        {"role": "system", "content": "Answer with sources."},
        {"role": "user", "content": "Who won the 2022 World Cup?"},
        {"role": "assistant", "content": "", "tool_calls": [tool_call("search001", "brave_search", {"query": "2022 World Cup winner"})]},
        {"role": "ipython", "content": "Argentina beat France on penalties."},
        {"role": "assistant", "content": "Argentina."},
    ],
    # Content as a list of parts (multimodal).
    "image_parts": [
        {"role": "system", "content": [{"type": "text", "text": "Describe images briefly."}]},
        {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": " What is this? "}]},
        {"role": "assistant", "content": [{"type": "text", "text": "A cat."}]},
        {"role": "user", "content": "Thanks"},
    ],
    # Results as objects (Mistral prints them with |string: Python's repr) and numeric arguments.
    "structured_results": [
        {"role": "user", "content": "Convert 30 EUR to USD and CHF."},
        {"role": "assistant", "content": None, "tool_calls": [
            tool_call("convUSD01", "convert_currency", {"amount": 30.0, "from": "EUR", "to": "USD", "fee": 0.015, "max": 9007199254740993}),
            tool_call("convCHF01", "convert_currency", {"amount": 30, "from": "EUR", "to": "CHF", "fee": 1e-07, "round": True})]},
        {"role": "tool", "tool_call_id": "convUSD01", "content": {"content": "32.7 USD"}},
        {"role": "tool", "tool_call_id": "convCHF01", "content": {"amount": 28.2, "ok": True, "note": None, "it's": "quoted \"both\""}},
        {"role": "assistant", "content": "32.7 USD or 28.2 CHF."},
    ],
    # OpenAI clients send "tool_calls": null on plain replies.
    "null_tool_calls": [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello!", "tool_calls": None},
        {"role": "user", "content": "Bye"},
    ],
    "empty_system": [
        {"role": "system", "content": ""},
        {"role": "user", "content": "Hi"},
    ],
    "user_after_user": [
        {"role": "user", "content": "Hi"},
        {"role": "user", "content": "Hello?"},
    ],
    "bad_call_id": [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": "", "tool_calls": [tool_call("call_1", "get_weather", {"city": "Paris"})]},
    ],
}


def add_family_cases(add):
    """The family templates on the common conversations and on their own features."""
    for fam in FAMILIES:
        for conv in CHAT_CONVERSATIONS:
            error = None
            if fam == "gemma2" and CONVERSATIONS[conv][0]["role"] == "system":
                error = "System role not supported"
            for agp in (True, False):
                add(f"{fam}/{conv}/{'gen' if agp else 'nogen'}", fam, conv, agp, expect_error=error, same_error=True)
    # Every family but Phi-3 reads messages[0] unguarded, as the real templates do.
    for fam in FAMILIES:
        add(f"{fam}/empty/gen", fam, "empty", True, expect_error=None if fam.startswith("phi3") else "no element 0",
            same_error=True)

    def fam_case(name, fam, conv, agp=True, variables=None, expect_error=None):
        add(f"{fam}/{name}", fam, None, agp, variables, expect_error=expect_error, messages=FAMILY_CONVERSATIONS[conv],
            same_error=True)

    tools = {"tools": FAMILY_TOOLS}
    # Llama 3.1: tools in the first user turn (the default) or in the system turn, a fixed
    # date, the built-in tools, the ipython role, and its one-call-per-turn rule.
    fam_case("tool_round_trip", "llama31", "tool_round_trip", True, tools)
    fam_case("tool_round_trip/dated", "llama31", "tool_round_trip", False, {**tools, "date_string": "26 Jul 2024"})
    fam_case("tools_in_system", "llama31", "tool_round_trip", True, {**tools, "tools_in_user_message": False})
    fam_case("custom_tools", "llama31", "string_arguments", True, {"custom_tools": FAMILY_TOOLS[1:]})
    fam_case("ipython_result", "llama31", "ipython_result", True, tools)
    fam_case("builtin_tools", "llama31", "builtin_tool_call", True, {"builtin_tools": ["brave_search", "wolfram_alpha", "code_interpreter"]})
    fam_case("builtin_tools_with_custom", "llama31", "builtin_tool_call", False,
             {**tools, "builtin_tools": ["brave_search"], "tools_in_user_message": False})
    fam_case("structured_results", "llama31", "structured_results", True, {**tools, "tools_in_user_message": False},
             expect_error="only supports single tool-calls")
    # 'tool_calls' in message holds for a null list too; its length is then a TypeError.
    fam_case("null_tool_calls", "llama31", "null_tool_calls", True, expect_error="has no len()")
    fam_case("parallel_rejected", "llama31", "parallel_tool_calls", True, tools, expect_error="only supports single tool-calls")
    add("llama31/tools_without_user", "llama31", None, True, tools, messages=[{"role": "system", "content": "Use tools."}],
        expect_error="no first user message", same_error=True)
    # Qwen3: reasoning kept only after the last query, enable_thinking, tools and grouped results.
    fam_case("tool_round_trip", "qwen3", "tool_round_trip", True, tools)
    fam_case("parallel_tool_calls", "qwen3", "parallel_tool_calls", False, tools)
    fam_case("string_arguments", "qwen3", "string_arguments", True, tools)
    fam_case("structured_results", "qwen3", "structured_results", True, tools)
    fam_case("null_tool_calls", "qwen3", "null_tool_calls", True)
    fam_case("reasoning_turns", "qwen3", "reasoning_turns", False)
    fam_case("reasoning_turns/gen", "qwen3", "reasoning_turns", True)
    fam_case("reasoning_tool_loop", "qwen3", "reasoning_tool_loop", False, tools)
    fam_case("tool_response_as_user", "qwen3", "tool_response_as_user", False)
    fam_case("no_thinking", "qwen3", "reasoning_turns", True, {"enable_thinking": False})
    fam_case("no_thinking/tools", "qwen3", "tool_round_trip", True, {**tools, "enable_thinking": False})
    fam_case("thinking_on", "qwen3", "reasoning_turns", True, {"enable_thinking": True})
    fam_case("list_system_rejected", "qwen3", "image_parts", True, expect_error="can only concatenate str (not \"list\") to str")
    # Phi-3: a system turn only when it has text.
    fam_case("empty_system", "phi3", "empty_system", True)
    fam_case("empty_system", "phi3_medium", "empty_system", True)
    # Mistral v3-tekken: tools before the last user turn, calls with ids, results by id.
    fam_case("tool_round_trip", "mistral_v3_tekken", "tool_round_trip", True, tools)
    fam_case("parallel_tool_calls", "mistral_v3_tekken", "parallel_tool_calls", True, tools)
    fam_case("string_arguments", "mistral_v3_tekken", "string_arguments", True, tools)
    fam_case("bad_call_id", "mistral_v3_tekken", "bad_call_id", True, tools, expect_error="length 9")
    fam_case("structured_results", "mistral_v3_tekken", "structured_results", True, tools)
    fam_case("null_tool_calls", "mistral_v3_tekken", "null_tool_calls", True)
    fam_case("user_after_user", "mistral_v3_tekken", "user_after_user", True, expect_error="must alternate")
    # Mistral v7-tekken: [SYSTEM_PROMPT], tools as one JSON list, [TOOL_CONTENT] results, image parts.
    fam_case("tool_round_trip", "mistral_v7_tekken", "tool_round_trip", True, tools)
    fam_case("parallel_tool_calls", "mistral_v7_tekken", "parallel_tool_calls", True, tools)
    fam_case("string_arguments", "mistral_v7_tekken", "string_arguments", True, tools)
    fam_case("image_parts", "mistral_v7_tekken", "image_parts", True)
    fam_case("structured_results", "mistral_v7_tekken", "structured_results", False, tools)
    fam_case("null_tool_calls", "mistral_v7_tekken", "null_tool_calls", True)
    fam_case("bad_call_id", "mistral_v7_tekken", "bad_call_id", True, tools, expect_error="length 9")
    # Gemma: 'model' turns, alternation enforced; Gemma 3 folds the system message in.
    fam_case("user_after_user", "gemma2", "user_after_user", True, expect_error="must alternate")
    fam_case("user_after_user", "gemma3", "user_after_user", True, expect_error="must alternate")
    fam_case("image_parts", "gemma3", "image_parts", True)


# ---- one feature per template ---------------------------------------------

FEATURES = {
    "text_only": ("Hello world\n", {}),
    "trailing_newline_only_one_dropped": ("line\n\n", {}),
    "whitespace_control": ("a  {{- 'b' -}}  c\n{%- if true -%}  d  {%- endif -%}\n e {{ 'f' }} g", {}),
    "trim_and_lstrip_blocks": ("x\n    {% if true %}\n    yes\n    {% endif %}\ndone\n  {# comment #}\nafter\n\t{{ 'var not lstripped' }}", {}),
    "lstrip_disabled_with_plus": ("  {%+ if true %}kept{% endif %}\n  {% if true +%}\nnl kept{% endif %}", {}),
    "comments": ("a{# hidden #}b{#- stripped -#}  c {# multi\nline #}d", {}),
    "raw_block": ("{% raw %}{{ not evaluated }} {% if %}{% endraw %}|{%- raw -%}  x  {%- endraw -%}  |", {}),
    "literals": (
        "{{ 'single' }} {{ \"double\" }} {{ 'esc\\n\\t\\'q\\'' }} {{ 42 }} {{ -7 }} {{ 3.5 }} {{ 1e3 }} {{ 1_000 }} "
        "{{ true }} {{ True }} {{ false }} {{ none }} {{ None }} {{ [1, 'a', none, true, 2.5] }} "
        "{{ {'k': 'v', 'n': [1, 2]} }} {{ (1, 2) }} {{ (1,) }} {{ [] }} {{ {} }}",
        {},
    ),
    "arithmetic": (
        "{{ 7 + 3 }} {{ 7 - 10 }} {{ 6 * 7 }} {{ 7 / 2 }} {{ 6 / 3 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} "
        "{{ 2 ** 10 }} {{ 1.5 + 1 }} {{ 10 / 4 }} {{ 0.1 + 0.2 }} {{ 'ab' * 3 }} {{ [1] * 3 }} {{ 2 + 3 * 4 }} "
        "{{ (2 + 3) * 4 }} {{ -2 ** 2 }} {{ 7.5 // 2 }} {{ -7.5 % 2 }} {{ true + 1 }}",
        {},
    ),
    "concatenation": ("{{ 'a' + 'b' }} {{ 'n=' ~ 5 }} {{ 1 ~ 2 }} {{ none ~ '|' ~ undefined_var ~ '|' }} {{ [1, 2] + [3] }} {{ 'x' ~ 1.5 ~ true }}", {}),
    "comparisons": (
        "{{ 1 == 1.0 }} {{ 'a' != 'b' }} {{ 1 < 2 }} {{ 2 <= 2 }} {{ 'b' > 'a' }} {{ 3 >= 4 }} {{ 'x' in 'xyz' }} "
        "{{ 2 in [1, 2] }} {{ 'k' in {'k': 1} }} {{ 5 not in [1] }} {{ [1, 2] == [1, 2] }} {{ none == none }} "
        "{{ 'abc' < 'abd' }} {{ [1, 2] < [1, 3] }} {{ true == 1 }} {{ {'a': 1} == {'a': 1} }}",
        {},
    ),
    "logic": ("{{ true and false }} {{ true or false }} {{ not true }} {{ 0 or 'fallback' }} {{ 'x' and 'y' }} {{ not none }} {{ 1 and 0 }} {{ [] or {} }} {{ not 1 == 2 }}", {}),
    "ternary": ("{{ 'yes' if flag else 'no' }} {{ 'yes' if not flag else 'no' }} [{{ 'only' if false }}] {{ 'a' if false else 'b' if true else 'c' }}", {"flag": True}),
    "attribute_and_subscript": (
        "{{ obj.name }} {{ obj['name'] }} {{ obj.nested.deep[1] }} {{ obj.nested.deep[-1] }} [{{ obj.missing }}] "
        "[{{ obj['missing'] }}] {{ obj.nested.deep.0 }} {{ obj.nested['deep'][-2] }} [{{ obj.nested.deep[10] }}] {{ messages[0].role }}",
        {"obj": {"name": "n", "nested": {"deep": [10, 20, 30]}}},
    ),
    "slicing": (
        "{{ 'abcdef'[1:4] }} {{ 'abcdef'[::-1] }} {{ 'abcdef'[::2] }} {{ 'abcdef'[-2:] }} {{ 'abcdef'[:-2] }} "
        "{{ [1, 2, 3, 4, 5][1:] }} {{ [1, 2, 3, 4, 5][::-2] }} {{ messages[1:]|length }} {{ 'héllo'[1:3] }} "
        "{{ 'héllo'[::-1] }} {{ 'abc'[5:] }}|{{ [1, 2, 3][-10:2] }} {{ 'héllo'[1] }} {{ 'abc'[-1] }}",
        {},
    ),
    "for_loop_variables": (
        "{% for x in ['a', 'b', 'c'] %}{{ loop.index }}/{{ loop.index0 }}/{{ loop.revindex }}/{{ loop.revindex0 }}/"
        "{{ loop.first }}/{{ loop.last }}/{{ loop.length }}/{{ loop.previtem }}/{{ loop.nextitem }};{% endfor %}",
        {},
    ),
    "for_else": ("{% for x in [] %}{{ x }}{% else %}empty{% endfor %}|{% for x in [1] %}{{ x }}{% else %}empty{% endfor %}|{% for x in [1, 2] if x > 5 %}{{ x }}{% else %}none passed{% endfor %}", {}),
    "for_unpacking": ("{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }};{% endfor %}{% for a, b in [[1, 2], [3, 4]] %}{{ a + b }},{% endfor %}{% for a, b in [(5, 6)] %}{{ a * b }}{% endfor %}", {}),
    "for_inline_filter": ("{% for m in messages if m.role == 'user' %}{{ loop.index }}/{{ loop.length }}:{{ m.content }}{% if not loop.last %}, {% endif %}{% endfor %}", {}),
    "for_over_dict_and_string": ("{% for k in {'x': 1, 'y': 2} %}{{ k }}{% endfor %} {% for c in 'héllo' %}[{{ c }}]{% endfor %} {% for x in missing %}never{% endfor %}", {}),
    "loop_scoping": ("{% set y = 1 %}{% for i in range(3) %}{{ y }}{% set y = i * 10 %}{{ y }},{% endfor %}{{ y }}{% if true %}{% set y = 'if-does-not-scope' %}{% endif %} {{ y }}", {}),
    "namespace": (
        "{% set ns = namespace(count=0, found=false, last='') %}{% for m in messages %}{% if m.role == 'user' %}"
        "{% set ns.count = ns.count + 1 %}{% set ns.found = true %}{% set ns.last = m.content %}{% endif %}{% endfor %}"
        "{{ ns.count }} {{ ns.found }} {{ ns.last }} {{ ns.missing is defined }}",
        {},
    ),
    "break_continue": ("{% for i in range(10) %}{% if i == 2 %}{% continue %}{% endif %}{% if i == 5 %}{% break %}{% endif %}{{ i }}{% endfor %}|{% for i in range(3) %}{% for j in range(3) %}{% if j == 1 %}{% break %}{% endif %}{{ i }}{{ j }} {% endfor %}{% endfor %}", {}),
    "if_elif_else": ("{% for n in [1, 2, 3, 4] %}{% if n == 1 %}one{% elif n == 2 %}two{% elif n == 3 %}three{% else %}many{% endif %} {% endfor %}{% if messages %}has messages{% endif %}", {}),
    "set_statements": ("{% set a = 'x' %}{% set b, c = 1, 2 %}{% set d %}block {{ a }}{% endset %}{{ a }}{{ b }}{{ c }}[{{ d }}]{% set e | upper %}shout{% endset %}{{ e }}{% set t = 1, 2 %} {{ t }}", {}),
    "macro": ("{% macro greet(name, punct='!') %}Hello {{ name }}{{ punct }}{% endmacro %}{{ greet('Ann') }} {{ greet('Bob', punct='?') }} {{ greet(name='Cy') }} {{ greet('Di', '.') }}", {}),
    "macro_sees_top_level": ("{% set who = 'world' %}{% macro hi() %}hi {{ who }} {{ messages|length }}{% endmacro %}{{ hi() }}", {}),
    "call_block": ("{% macro wrap(tag) %}<{{ tag }}>{{ caller() }}</{{ tag }}>{% endmacro %}{% call wrap('b') %}inner {{ 1 + 1 }}{% endcall %}", {}),
    "filter_block": ("{% filter upper %}shout {{ 'this' }}{% endfilter %} {% filter trim %}   padded   {% endfilter %}|", {}),
    "filters_string": (
        "{{ '  pad  '|trim }}|{{ 'xxhixx'|trim('x') }}|{{ 'Hello'|upper }}|{{ 'Hello'|lower }}|{{ 'hello world'|title }}|"
        "{{ 'hELLO wORLD'|capitalize }}|{{ 'a-b-c'|replace('-', '+') }}|{{ 'aaa'|replace('a', 'b', 2) }}|{{ 42|string }}|"
        "{{ 'abc'|reverse }}|{{ '<b>&\"\\''|e }}|{{ '<x>'|escape }}|{{ 'x'|safe }}|{{ 'héllo wörld'|length }}|{{ 'it''s'|title }}|{{ 'one two  three'|wordcount }}",
        {},
    ),
    "filters_sequence": (
        "{{ [3, 1, 2]|first }} {{ [3, 1, 2]|last }} {{ [3, 1, 2]|length }} {{ [3, 1, 2]|count }} {{ ['a', 'b']|join(', ') }} "
        "{{ [1, 2]|join }} {{ [3, 1, 2]|sort }} {{ [3, 1, 2]|sort(reverse=true) }} {{ ['b', 'A', 'c']|sort }} "
        "{{ [1, 2, 3]|reverse|list }} {{ [1, 2, 2, 1]|unique|list }} {{ 'abc'|list }} {{ [1, 2, 3]|sum }} {{ [4, 9, 2]|max }} "
        "{{ [4, 9, 2]|min }} {{ messages|map(attribute='role')|join('/') }} {{ messages|sort(attribute='role')|map(attribute='role')|first }} {{ 'xyz'|first }}",
        {},
    ),
    "filters_conversion": ("{{ '42'|int + 1 }} {{ '3.7'|int }} {{ 'x'|int }} {{ 'x'|int(7) }} {{ 3.9|int }} {{ '2.5'|float }} {{ 4|float }} {{ -3|abs }} {{ 2.567|round(2) }} {{ 2.5|round }} {{ 3.5|round }} {{ 7|round }} {{ 2.4|round(0, 'ceil') }} {{ true|int }}", {}),
    "filters_default": ("{{ missing|default('dflt') }} {{ missing|d('d2') }} [{{ ''|default('empty-kept') }}] {{ ''|default('replaced', true) }} {{ none|default('none-kept') }} {{ false|default('bool', boolean=true) }} [{{ missing|default }}]", {}),
    "filters_dict": (
        "{{ d|items|list }} {{ d.keys()|list }} {{ d.values()|list }} {{ d.get('a') }} {{ d.get('zz') }} {{ d.get('zz', 'fb') }} "
        "{% for k, v in d|dictsort %}{{ k }}{{ v }}{% endfor %} {{ d|length }} {{ d.items()|list }} {{ d|list }}",
        {"d": {"b": 2, "a": 1}},
    ),
    "filters_select_map": (
        "{{ nums|select('odd')|list }} {{ nums|reject('odd')|list }} {{ nums|select('even')|list }} {{ nums|select('divisibleby', 3)|list }} "
        "{{ messages|selectattr('role', 'equalto', 'user')|map(attribute='content')|list }} "
        "{{ messages|rejectattr('role', 'eq', 'user')|map(attribute='role')|join(',') }} {{ messages|map(attribute='role')|unique|list }} "
        "{{ ['a', 'b']|map('upper')|list }} {{ [0, 1, '', 'x']|select|list }} {{ items|selectattr('on')|map(attribute='n')|list }} "
        "{{ items|map(attribute='zz', default='-')|list }} {{ nums|select('>', 4)|list }} {{ nums|select('in', [2, 3])|list }}",
        {"nums": [1, 2, 3, 4, 5, 6], "items": [{"n": "a", "on": True}, {"n": "b", "on": False}]},
    ),
    "tojson": (
        "{{ data|tojson }}\n{{ data|tojson(indent=2) }}\n{{ 'quote\" back\\\\ nl\\n uni é ✓ ctl\\x01'|tojson }}\n"
        "{{ [1.0, 2.5, none, true, 1e20, -0.5]|tojson }}\n{{ data|tojson(sort_keys=true) }}\n{{ {}|tojson }} {{ []|tojson(indent=4) }} "
        "{{ data.required|tojson(indent=0) }}\n{{ 'é'|tojson(ensure_ascii=true) }} {{ {'a': [1, {'b': none}]}|tojson(separators=(',', ':')) }}",
        {"data": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City, e.g. Paris"}}}, "required": ["city"], "unicode": "naïve ☃", "n": 3, "f": 0.25}},
    ),
    "indent_filter": ("{{ 'a\\nb\\n\\nc'|indent(2) }}|{{ 'a\\nb'|indent(4, true) }}|{{ 'a\\n\\nb'|indent(2, blank=true) }}|{{ 'x\\ny'|indent('> ') }}|{{ 'trail\\n'|indent(2) }}", {}),
    "tests": (
        "{{ x is defined }} {{ nope is defined }} {{ nope is undefined }} {{ none is none }} {{ 'a' is string }} {{ 1 is number }} "
        "{{ 1.5 is number }} {{ 1 is integer }} {{ 1.5 is integer }} {{ 1.5 is float }} {{ [] is iterable }} {{ 'a' is iterable }} {{ 1 is iterable }} "
        "{{ {} is mapping }} {{ [] is mapping }} {{ [] is sequence }} {{ 1 is sequence }} {{ true is boolean }} {{ 1 is boolean }} {{ true is true }} "
        "{{ false is false }} {{ 1 is true }} {{ 3 is odd }} {{ 4 is even }} {{ 2 is eq 2 }} {{ 2 is equalto(3) }} {{ 2 is in [1, 2] }} "
        "{{ 'x' is not string }} {{ x is not none }} {{ 6 is divisibleby 3 }} {{ 'abc' is lower }} {{ 'ABC' is upper }} {{ 3 is gt 2 }} "
        "{{ 3 is lt(2) }} {{ 2 is ne 3 }} {{ 'trim' is filter }} {{ 'odd' is test }} {{ raise_exception is callable }}",
        {"x": 1},
    ),
    "string_methods": (
        "{{ '  s  '.strip() }}|{{ 'xxsxx'.strip('x') }}|{{ '  s'.lstrip() }}|{{ 's  '.rstrip() }}|{{ 'a,b,,c'.split(',') }}|"
        "{{ ' a  b '.split() }}|{{ 'a b c'.split(' ', 1) }}|{{ 'hello'.startswith('he') }}|{{ 'hello'.endswith(('lo', 'x')) }}|"
        "{{ 'Hi'.upper() }}{{ 'Hi'.lower() }}|{{ 'a b'.title() }}|{{ 'aXa'.replace('a', 'b') }}|{{ 'abc'.find('c') }}|{{ 'abc'.find('z') }}|"
        "{{ '-'.join(['a', 'b']) }}|{{ 'Hi {}, {name}!'.format('A', name='B') }}|{{ 'l1\\nl2'.splitlines() }}|{{ 'banana'.count('an') }}|"
        "{{ '</think>\\n\\nanswer'.split('</think>')[-1].lstrip() }}|{{ 'x'.capitalize() }}|{{ '42'.isdigit() }}|{{ 'prefix-rest'.removeprefix('prefix-') }}",
        {},
    ),
    "undefined_semantics": (
        "[{{ missing }}][{{ missing|length }}][{{ missing|default('') }}][{{ missing ~ 'x' }}][{% for x in missing %}{{ x }}{% endfor %}]"
        "[{{ missing == none }}][{% if missing %}t{% else %}f{% endif %}][{{ obj.nothing }}][{{ obj.nothing is defined }}][{{ missing|trim }}]"
        "[{{ missing is none }}][{{ obj['nothing'] is undefined }}][{{ 'x' in missing }}]",
        {"obj": {}},
    ),
    "truthiness": ("{% for v in [0, 1, '', 'a', [], [0], {}, {'a': 1}, none, true, false, 0.0, 0.5, ' '] %}{{ 'T' if v else 'F' }}{% endfor %}", {}),
    "range_and_globals": ("{{ range(3)|list }} {{ range(1, 7, 2)|list }} {{ range(5, 0, -2)|list }} {{ range(0)|list }} {{ dict(a=1, b='x') }} {{ namespace(a=1).a }} {{ dict(a=1).a }}", {}),
    "printing_values": ("{{ messages[0] }} {{ 1.0 }} {{ 1e20 }} {{ 1.5e-7 }} {{ 100.0 / 3 }} {{ 'it\\'s' }} {{ ['it\\'s', \"q\\\"\", 'both\\'\"', 'nl\\n', 'uni é'] }} {{ true }} {{ none }} {{ 12345678901234567.0 }} {{ 0.0001 }} {{ -0.0 }} {{ 2 ** 40 }}", {}),
    "string_escapes": ("{{ 'tab\\there' }}|{{ \"nl\\nhere\" }}|{{ 'uni\\u00e9\\x41\\U0001F600' }}|{{ 'back\\\\slash' }}|{{ 'adj' 'acent' }}|{{ 'unknown \\q escape' }}|{{ 'oct\\101' }}", {}),
    "generation_tag": ("{% for m in messages %}{% if m.role == 'assistant' %}{% generation %}{{ m.content }}{% endgeneration %}{% else %}{{ m.content }}{% endif %}|{% endfor %}", {}),
    "loop_cycle_and_nesting": ("{% for i in range(5) %}{{ loop.cycle('odd', 'even') }} {% endfor %}|{% for a in [1, 2] %}{% set outer = loop %}{% for b in ['x', 'y'] %}{{ outer.index }}{{ loop.index }}{{ b }} {% endfor %}{% endfor %}", {}),
    "message_loop_basic": ("{% for message in messages %}{{ message['role'] | upper }}: {{ message['content'] | trim }}\n{% endfor %}", {}),
    "combined_tool_listing": (
        "{%- if tools is not none and tools|length > 0 %}\n"
        "Tools:\n"
        "    {%- for tool in tools %}\n"
        "- {{ tool.function.name }}({{ tool.function.parameters.properties.keys()|join(', ') }}): {{ tool.function.description }}\n"
        "    {%- endfor %}\n"
        "{% endif %}\n"
        "{{ tools|tojson(indent=2) }}\n"
        "{{ documents }}",
        {"tools": TOOLS},
    ),
    "combined_bos_eos": ("{{ bos_token }}{% for m in messages %}{{ m.content }}{{ eos_token if m.role == 'assistant' else '' }}{% endfor %}{% if add_generation_prompt %}>{% endif %}", {}),
}

ERRORS = {
    "unterminated_variable": ("{{ messages[0].content ", "syntax error"),
    "unterminated_block": ("{% if true %}never closed", "expected 'elif' or 'else' or 'endif'"),
    "unterminated_comment": ("{# never closed", "comment"),
    "unterminated_string": ("{{ 'abc }}", "unterminated string"),
    "unknown_filter": ("{{ 'x'|frobnicate }}", "no filter named 'frobnicate'"),
    "unknown_test": ("{{ 'x' is frobnicated }}", "no test named 'frobnicated'"),
    "unknown_tag": ("{% frob %}", "frob"),
    "stray_endfor": ("text{% endfor %}", "endfor"),
    "break_outside_loop": ("{% break %}", "outside of a loop"),
    "raise_exception": ("{{ raise_exception('Custom failure: roles must alternate') }}", "Custom failure: roles must alternate"),
    "undefined_attribute_chain": ("{{ nothing.at.all }}", "'nothing' is undefined"),
    "division_by_zero": ("{{ 1 / 0 }}", "division by zero"),
    "type_error_compare": ("{{ 1 < 'a' }}", "not supported"),
    "type_error_add": ("{{ 'a' + 1 }}", "can only concatenate str (not \"int\") to str"),
    "type_error_add_list": ("{{ [1] + (2,) }}", "can only concatenate list (not \"tuple\") to list"),
    "type_error_add_number_first": ("{{ 1 + 'a' }}", "unsupported operand type(s) for +: 'int' and 'str'"),
    "call_non_callable": ("{{ messages() }}", "not callable"),
    "sandbox_no_list_append": ("{% set l = [] %}{{ l.append(1) }}", "line 1"),
    "range_too_big": ("{{ range(1000000)|length }}", "Range too big"),
    "error_position_reported": ("line one\n{% if true %}\n  {{ 1 + 'x' }}\n{% endif %}", "line 3"),
    "macro_recursion": ("{% macro r(n) %}{{ r(n + 1) }}{% endmacro %}{{ r(0) }}", "call depth"),
    "namespace_underscore": ("{% set ns = namespace() %}{% set ns._secret = 1 %}", "underscore"),
    "unpack_mismatch": ("{% for a, b in [[1, 2, 3]] %}{% endfor %}", "unpack"),
}

# Folio must stop these; Python would run (nearly) forever or build gigabytes.
RUNAWAY = {
    "runaway_nested_loops": ("{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}", "loop limit"),
    "runaway_output": ("{% set s = 'xxxxxxxxxx' %}{% for i in range(100000) %}{{ s * 1000 }}{% endfor %}", "output too large"),
    "runaway_string_growth": ("{% set ns = namespace(s='ab') %}{% for i in range(100) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s|length }}", "too large"),
}


def today_placeholder(fmt):
    """Stands for strftime_now(fmt) of the day the test runs."""
    return f"<<strftime_now {fmt}>>"


def render(source, messages, add_generation_prompt, bos, eos, variables):
    compiled = _compile_jinja_template(source)
    kwargs = dict(variables)
    return compiled.render(
        messages=messages,
        tools=kwargs.pop("tools", None),
        documents=kwargs.pop("documents", None),
        add_generation_prompt=add_generation_prompt,
        bos_token=bos,
        eos_token=eos,
        **kwargs,
    )


def read_model_template(path):
    from gguf import GGUFReader

    reader = GGUFReader(path)
    field = reader.fields["tokenizer.chat_template"]
    return bytes(field.parts[field.data[0]]).decode("utf-8")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=str(ROOT / "models/SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--out", default=str(ROOT / "tests/data/chat/goldens.json"))
    args = ap.parse_args()

    templates = {
        "smollm2": read_model_template(args.model),
        "gemma_builtin": (ROOT / "resources/templates/gemma.jinja").read_text(encoding="utf-8"),
        "chatml_builtin": (ROOT / "resources/templates/chatml.jinja").read_text(encoding="utf-8"),
        "llama3_style": LLAMA3_STYLE,
        "qwen2_tools_style": QWEN2_TOOLS_STYLE,
        "mistral_style": MISTRAL_STYLE,
        "phi3_style": PHI3_STYLE,
        "plain_indented": PLAIN_INDENTED,
        "reasoning_style": REASONING_STYLE,
        "qwen3_style": QWEN3_STYLE,
        "llama31_tools_style": LLAMA31_TOOLS_STYLE,
        "multimodal_style": MULTIMODAL_STYLE,
    }
    for fam in FAMILIES:
        templates[fam] = (FAMILY_DIR / f"{fam}.jinja").read_text(encoding="utf-8")
    special_tokens = {
        "smollm2": ("<|im_start|>", "<|im_end|>"),
        "gemma_builtin": ("<bos>", "<eos>"),
        "llama3_style": ("<|begin_of_text|>", "<|eot_id|>"),
        "mistral_style": ("<s>", "</s>"),
        "reasoning_style": ("<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"),
        **FAMILIES,
    }
    cases = []

    # same_error: jinja2's own message must hold expect_error too (Folio words the error as Python does).
    def add(name, template, conversation, agp=True, variables=None, expect_error=None, run_python=True, messages=None,
            same_error=False):
        bos, eos = special_tokens.get(template, ("<s>", "</s>"))
        variables = variables or {}
        msgs = messages if messages is not None else CONVERSATIONS[conversation]
        case = {"name": name, "template": template, "conversation": conversation if messages is None else None,
                "add_generation_prompt": agp, "bos_token": bos, "eos_token": eos, "variables": variables}
        if messages is not None:
            case["messages"] = msgs
        if run_python:
            fmt = TODAY_FORMATS.get(template)
            today = datetime.now().strftime(fmt) if fmt else None
            try:
                case["expected"] = render(templates[template], msgs, agp, bos, eos, variables)
            except Exception as e:  # jinja2 errors of every kind
                case["python_error"] = f"{type(e).__name__}: {e}"
            if fmt and "expected" in case and today in case["expected"]:
                if datetime.now().strftime(fmt) != today:
                    sys.exit(f"{name}: the date changed while rendering; run again")
                case["expected"] = case["expected"].replace(today, today_placeholder(fmt))
                case["today_format"] = fmt
        else:
            case["python_error"] = "not run: would not terminate in reasonable time or memory"
        if expect_error is not None:
            if "expected" in case:
                sys.exit(f"{name}: expected an error but jinja2 rendered {case['expected']!r}")
            if same_error and expect_error not in case["python_error"]:
                sys.exit(f"{name}: jinja2's error {case['python_error']!r} lacks {expect_error!r}")
            case["error_contains"] = expect_error
        elif "expected" not in case:
            sys.exit(f"{name}: jinja2 failed: {case['python_error']}")
        cases.append(case)

    for tmpl in ["smollm2", "gemma_builtin", "chatml_builtin", "llama3_style", "phi3_style", "plain_indented",
                 "reasoning_style", "qwen2_tools_style", "qwen3_style", "llama31_tools_style", "multimodal_style"]:
        for conv in CHAT_CONVERSATIONS:
            for agp in (True, False):
                add(f"{tmpl}/{conv}/{'gen' if agp else 'nogen'}", tmpl, conv, agp)
        # Templates that read messages[0] unguarded fail on an empty conversation, in jinja2 and in Folio.
        reads_first = tmpl in ("qwen3_style", "llama31_tools_style")
        add(f"{tmpl}/empty/gen", tmpl, "empty", True, expect_error="no element 0" if reads_first else None)
    add("qwen2_tools_style/tools", "qwen2_tools_style", None, True, {"tools": TOOLS}, messages=TOOL_CONVERSATION)
    add("qwen3_style/tools", "qwen3_style", None, True, {"tools": TOOLS}, messages=TOOL_CONVERSATION)
    add("qwen3_style/no_thinking", "qwen3_style", "multi_turn", True, {"enable_thinking": False})
    add("qwen3_style/reasoning", "qwen3_style", None, False, messages=[
        {"role": "user", "content": "2+2?"},
        {"role": "assistant", "content": "<think>\nadd</think>\n\n4"},
        {"role": "user", "content": "and 3+3?"},
        {"role": "assistant", "content": "6", "reasoning_content": "add again"}])
    add("llama31_tools_style/tools", "llama31_tools_style", None, True, {"tools": TOOLS, "date_string": "29 Nov 2026"},
        messages=[{"role": "system", "content": "Use tools."}] + TOOL_CONVERSATION)
    add("llama31_tools_style/tools_no_user", "llama31_tools_style", None, True, {"tools": TOOLS},
        messages=[{"role": "system", "content": "Use tools."}], expect_error="no first user message")
    add("multimodal_style/parts", "multimodal_style", None, True, messages=[
        {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "  What is in this picture? "}]},
        {"role": "assistant", "content": [{"type": "text", "text": "A cat."}]},
        {"role": "user", "content": "Thanks"}])
    add("reasoning_style/think", "reasoning_style", None, True, messages=[
        {"role": "user", "content": "2+2?"},
        {"role": "assistant", "content": "<think>\nsimple</think>\n\n4"},
        {"role": "user", "content": "3+3?"}])
    for conv in ["user_only", "multi_turn_no_system"]:
        add(f"mistral_style/{conv}", "mistral_style", conv, True)
    add("mistral_style/system_rejected", "mistral_style", "system_user", True, expect_error="Conversation roles must alternate")
    add_family_cases(add)

    for name, (source, variables) in FEATURES.items():
        templates[f"feature_{name}"] = source
        add(f"feature/{name}", f"feature_{name}", "multi_turn", True, variables)
    for name, (source, needle) in ERRORS.items():
        templates[f"error_{name}"] = source
        add(f"error/{name}", f"error_{name}", "multi_turn", True, expect_error=needle, same_error=name.startswith("type_error"))
    for name, (source, needle) in RUNAWAY.items():
        templates[f"error_{name}"] = source
        add(f"error/{name}", f"error_{name}", "multi_turn", True, expect_error=needle, run_python=False)

    out = {
        "generator": "tools/make_template_goldens.py (jinja2 via transformers._compile_jinja_template)",
        "conversations": CONVERSATIONS,
        "templates": templates,
        "cases": cases,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {len(cases)} cases, {len(templates)} templates to {args.out}")


if __name__ == "__main__":
    main()
