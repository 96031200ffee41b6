#!/usr/bin/env python3
"""folio serve against the real `openai` client, end to end, on SmolLM2.

Starts `folio serve` on 127.0.0.1 (a free port, --port 0), with an API key,
and checks: chat and completions, streamed and not, usage (cached prompt
tokens too), logprobs, stop strings, n = 2, seeds, 32 concurrent clients
batched together (/metrics shows more than one running request), a client
that disconnects mid-stream having its request aborted and its blocks freed,
hostile input (oversized and malformed bodies, wrong types, negative and huge
values, unknown model, missing / wrong key) answered with the right status
and error body while the server keeps serving, and SIGTERM (mid-stream) and
SIGINT ending it with status 0. Exits 77 (skipped) without the model or the
openai package, unless FOLIO_REQUIRE_MODELS=1, where that is a failure.
"""
import argparse
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback

SKIPPED = 77
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
API_KEY = "test-key-123"
MAX_BODY = 65536


def skip(message):
    required = os.environ.get("FOLIO_REQUIRE_MODELS") == "1"
    print(("FAIL: " if required else "SKIP: ") + message)
    sys.exit(1 if required else SKIPPED)


try:
    import openai
except ImportError:
    skip("the openai package is missing from .venv (pip install -r tools/requirements.txt)")


class Server:
    """`folio serve` as a child process; its stderr is kept for failure reports."""

    def __init__(self, folio, model, extra=()):
        self.log = []
        cmd = [folio, "serve", "-m", model, "--port", "0", "--api-key", API_KEY, "-c", "2048",
               "--parallel", "4", "--max-body", str(MAX_BODY), *extra]
        self.proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
        deadline = time.time() + 120
        self.port = None
        while time.time() < deadline:
            line = self.proc.stderr.readline()
            if not line:
                break
            self.log.append(line)
            m = re.search(r"on http://127\.0\.0\.1:(\d+)/v1", line)
            if m:
                self.port = int(m.group(1))
                break
        if self.port is None:
            self.proc.kill()
            raise RuntimeError("folio serve did not start:\n" + "".join(self.log))
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self):
        for line in self.proc.stderr:
            self.log.append(line)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def check(condition, message):
    if not condition:
        raise AssertionError(message)


class Suite:
    def __init__(self, server):
        self.server = server
        self.base = f"http://127.0.0.1:{server.port}"
        self.client = openai.OpenAI(base_url=self.base + "/v1", api_key=API_KEY, max_retries=0, timeout=120)
        self.model = self.client.models.list().data[0].id

    # ---- helpers --------------------------------------------------------------
    def http(self, method, path, body=None, key=API_KEY, headers=None):
        """(status, parsed JSON or text) of one plain HTTP request."""
        conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=60)
        h = {"Content-Type": "application/json"}
        if key is not None:
            h["Authorization"] = "Bearer " + key
        h.update(headers or {})
        data = body if isinstance(body, (bytes, str)) or body is None else json.dumps(body)
        conn.request(method, path, body=data, headers=h)
        r = conn.getresponse()
        text = r.read().decode("utf-8", "replace")
        conn.close()
        try:
            return r.status, json.loads(text)
        except ValueError:
            return r.status, text

    def metrics(self):
        status, text = self.http("GET", "/metrics")
        check(status == 200, f"/metrics answered {status}")
        values = {}
        for line in text.splitlines():
            m = re.match(r'^(folio:[a-z_]+)(\{[^}]*\})? ([-0-9.e+]+)$', line)
            if m:
                key = m.group(1) + (re.sub(r',?model_name="[^"]*"', "", m.group(2) or "").replace("{}", ""))
                values[key] = float(m.group(3))
        return values

    def wait_idle(self, seconds=20):
        """Metrics back to nothing running or waiting and every KV block free."""
        deadline = time.time() + seconds
        m = {}
        while time.time() < deadline:
            m = self.metrics()
            if (m.get("folio:num_requests_running") == 0 and m.get("folio:num_requests_waiting") == 0
                    and m.get("folio:kv_cache_usage_perc") == 0):
                return m
            time.sleep(0.1)
        raise AssertionError(f"the engine did not go idle: running {m.get('folio:num_requests_running')}, "
                             f"waiting {m.get('folio:num_requests_waiting')}, KV usage {m.get('folio:kv_cache_usage_perc')}")

    def expect_error(self, status, body, want_status, param=None, code=None, path="/v1/chat/completions"):
        check(status == want_status, f"{path}: status {status}, want {want_status}: {body}")
        check(isinstance(body, dict) and isinstance(body.get("error"), dict), f"no error object: {body}")
        e = body["error"]
        for field in ("message", "type", "param", "code"):
            check(field in e, f"error object lacks '{field}': {e}")
        check(isinstance(e["message"], str) and e["message"], f"empty error message: {e}")
        if param is not None:
            check(e["param"] == param, f"error param {e['param']!r}, want {param!r}: {e}")
        if code is not None:
            check(e["code"] == code, f"error code {e['code']!r}, want {code!r}: {e}")

    def chat(self, content="What is the capital of France?", **kw):
        kw.setdefault("max_tokens", 16)
        kw.setdefault("temperature", 0)
        return self.client.chat.completions.create(model=self.model, messages=[{"role": "user", "content": content}], **kw)

    # ---- the checks ----------------------------------------------------------
    def test_models_and_health(self):
        status, body = self.http("GET", "/health", key=None)
        check(status == 200 and body == {"status": "ok"}, f"/health: {status} {body}")
        models = self.client.models.list().data
        check(len(models) == 1 and models[0].id == MODEL_FILE, f"/v1/models: {models}")

    def test_chat(self):
        r = self.chat()
        check(r.object == "chat.completion", r.object)
        c = r.choices[0]
        check(c.message.role == "assistant" and isinstance(c.message.content, str) and c.message.content.strip(),
              f"empty reply: {r}")
        check(c.finish_reason in ("stop", "length"), c.finish_reason)
        u = r.usage
        check(u.prompt_tokens > 5 and 0 < u.completion_tokens <= 16, f"usage {u}")
        check(u.total_tokens == u.prompt_tokens + u.completion_tokens, f"usage {u}")
        again = self.chat()
        check(again.choices[0].message.content == c.message.content, "greedy replies differ")
        cached = again.usage.prompt_tokens_details.cached_tokens
        check(cached >= 16, f"the repeated prompt found {cached} cached tokens (want at least a block of 16)")

    def test_chat_stream(self):
        plain = self.chat(max_tokens=20)
        stream = self.chat(max_tokens=20, stream=True, stream_options={"include_usage": True})
        text, finishes, usage, roles = "", [], None, 0
        for chunk in stream:
            check(chunk.object == "chat.completion.chunk", chunk.object)
            if chunk.usage is not None:
                usage = chunk.usage
                check(not chunk.choices, "the usage chunk has choices")
                continue
            for ch in chunk.choices:
                if ch.delta.role:
                    roles += 1
                text += ch.delta.content or ""
                if ch.finish_reason:
                    finishes.append(ch.finish_reason)
        check(roles == 1, f"role sent {roles} times")
        check(text == plain.choices[0].message.content, f"stream {text!r} != plain {plain.choices[0].message.content!r}")
        check(finishes == [plain.choices[0].finish_reason], f"finish reasons {finishes}")
        check(usage is not None and usage.completion_tokens == plain.usage.completion_tokens, f"stream usage {usage}")

    def test_completions(self):
        r = self.client.completions.create(model=self.model, prompt="Once upon a time", max_tokens=12, temperature=0)
        check(r.object == "text_completion", r.object)
        text = r.choices[0].text
        check(text and r.usage.completion_tokens == 12 and r.choices[0].finish_reason == "length", f"{r}")
        streamed = "".join(c.choices[0].text for c in self.client.completions.create(
            model=self.model, prompt="Once upon a time", max_tokens=12, temperature=0, stream=True) if c.choices)
        check(streamed == text, f"stream {streamed!r} != plain {text!r}")

    def test_logprobs(self):
        r = self.chat(max_tokens=8, logprobs=True, top_logprobs=3)
        content = r.choices[0].logprobs.content
        check(len(content) == r.usage.completion_tokens, f"{len(content)} logprobs for {r.usage.completion_tokens} tokens")
        for t in content:
            check(t.logprob <= 0 and len(t.top_logprobs) == 3, f"{t}")
            # Greedy: the chosen token is the most likely one.
            check(abs(t.top_logprobs[0].logprob - t.logprob) < 1e-4, f"greedy token is not the best: {t}")
        c = self.client.completions.create(model=self.model, prompt="The sky is", max_tokens=6, temperature=0,
                                           logprobs=2)
        lp = c.choices[0].logprobs
        n = c.usage.completion_tokens
        check(n > 0 and len(lp.tokens) == n and len(lp.token_logprobs) == n and len(lp.top_logprobs) == n, f"{lp}")
        if c.choices[0].finish_reason == "length":  # no end-of-text token, whose text is not shown
            check("".join(lp.tokens) == c.choices[0].text, f"tokens {lp.tokens} do not spell {c.choices[0].text!r}")
        check(all(len(t) == 2 for t in lp.top_logprobs), f"top_logprobs {lp.top_logprobs}")

    def test_stop(self):
        args = dict(model=self.model, prompt="List the days of the week: Monday,", max_tokens=24, temperature=0,
                    extra_body={"ignore_eos": True})
        full = self.client.completions.create(**args).choices[0].text
        check(len(full) > 12, f"too short to cut: {full!r}")
        stop = full[len(full) // 2:len(full) // 2 + 3]
        want = full[:full.index(stop)]
        for form in (stop, [stop, "no such text"]):
            r = self.client.completions.create(stop=form, **args)
            check(r.choices[0].text == want and r.choices[0].finish_reason == "stop",
                  f"stop {form!r}: {r.choices[0].text!r} ({r.choices[0].finish_reason}), want {want!r}")

    def test_n_and_seed(self):
        r = self.chat("Tell me a story.", n=2, temperature=1.0, seed=7, max_tokens=10)
        check(sorted(c.index for c in r.choices) == [0, 1], f"choices {r.choices}")
        check(r.usage.completion_tokens >= 2, f"usage {r.usage}")
        again = self.chat("Tell me a story.", n=2, temperature=1.0, seed=7, max_tokens=10)
        check([c.message.content for c in r.choices] == [c.message.content for c in again.choices],
              "the same seed gave different text")
        texts = {self.chat("Tell me a story.", temperature=1.0, seed=s, max_tokens=16).choices[0].message.content
                 for s in (1, 2, 3)}
        check(len(texts) >= 2, f"three seeds gave one text: {texts}")
        indices = set()
        for chunk in self.chat("Tell me a story.", n=2, temperature=1.0, seed=7, max_tokens=10, stream=True):
            indices.update(c.index for c in chunk.choices)
        check(indices == {0, 1}, f"streamed choices {indices}")

    def test_concurrent_clients(self):
        results, errors, running = [None] * 32, [], []
        done = threading.Event()

        def poll():
            while not done.is_set():
                running.append(self.metrics().get("folio:num_requests_running", 0))
                time.sleep(0.05)

        def one(i):
            try:
                r = self.chat(f"Count to {i + 3}.", max_tokens=24, extra_body={"ignore_eos": True})
                results[i] = r.choices[0].message.content
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(f"client {i}: {e!r}")

        poller = threading.Thread(target=poll)
        poller.start()
        clients = [threading.Thread(target=one, args=(i,)) for i in range(32)]
        for t in clients:
            t.start()
        for t in clients:
            t.join()
        done.set()
        poller.join()
        check(not errors, "; ".join(errors))
        check(all(r for r in results), f"{sum(1 for r in results if not r)} clients got no text")
        check(max(running, default=0) > 1, f"never more than {max(running, default=0)} running requests")
        self.wait_idle()

    def _open_stream(self, max_tokens=1500):
        """A raw streaming request whose socket the caller closes mid-stream."""
        s = socket.create_connection(("127.0.0.1", self.server.port), timeout=60)
        body = json.dumps({"model": self.model, "messages": [{"role": "user", "content": "Write a long essay."}],
                           "max_tokens": max_tokens, "ignore_eos": True, "stream": True})
        s.sendall((f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {API_KEY}\r\n"
                   f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n{body}").encode())
        got = b""
        while got.count(b"data: ") < 3:
            chunk = s.recv(4096)
            check(chunk, "the stream ended early")
            got += chunk
        check(got.startswith(b"HTTP/1.1 200"), got[:80])
        return s

    def test_disconnect_aborts(self):
        before = self.metrics().get('folio:request_success_total{finished_reason="abort"}', 0)
        sockets = [self._open_stream() for _ in range(4)]
        m = self.metrics()
        check(m["folio:num_requests_running"] >= 1 and m["folio:kv_cache_usage_perc"] > 0, f"nothing running: {m}")
        for s in sockets:
            s.close()
        m = self.wait_idle()
        aborted = m.get('folio:request_success_total{finished_reason="abort"}', 0) - before
        check(aborted == 4, f"{aborted} requests ended as aborted, want 4")

    def test_hostile_input(self):
        chat = "/v1/chat/completions"
        msgs = [{"role": "user", "content": "hi"}]
        # Authentication.
        for key in (None, "wrong"):
            status, body = self.http("POST", chat, {"messages": msgs}, key=key)
            self.expect_error(status, body, 401, code="invalid_api_key")
        status, body = self.http("GET", "/metrics", key=None)
        check(status == 401, f"/metrics without a key: {status}")
        try:
            openai.OpenAI(base_url=self.base + "/v1", api_key="wrong", max_retries=0).models.list()
            check(False, "a wrong key was accepted")
        except openai.AuthenticationError:
            pass
        # Bodies: too large (declared, and sent whole), not JSON, not an object, too deep.
        s = socket.create_connection(("127.0.0.1", self.server.port), timeout=30)
        s.sendall((f"POST {chat} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {API_KEY}\r\n"
                   f"Content-Type: application/json\r\nContent-Length: {10 * MAX_BODY}\r\n\r\n").encode()
                  + b"[" * (10 * MAX_BODY))
        reply = b""
        while b"\r\n\r\n" not in reply or not reply.rstrip().endswith(b"}"):
            chunk = s.recv(4096)
            if not chunk:
                break
            reply += chunk
        s.close()
        head, _, rest = reply.partition(b"\r\n\r\n")
        check(head.startswith(b"HTTP/1.1 413"), f"oversized body: {head[:60]!r}")
        self.expect_error(413, json.loads(rest), 413)
        status, body = self.http("POST", chat, '{"messages": [' + '"x",' * 20000 + '"x"]}')
        self.expect_error(status, body, 413)
        for bad in ("{", "not json", "[1]", '{"messages": ' + "[" * 100 + "]" * 100 + "}"):
            status, body = self.http("POST", chat, bad)
            self.expect_error(status, body, 400, code="invalid_json")
        # Wrong types and values, each named.
        cases = [
            ({"messages": "hi"}, "messages"),
            ({"messages": [{"role": "user", "content": 5}]}, "messages[0].content"),
            ({"messages": msgs, "max_tokens": "10"}, "max_tokens"),
            ({"messages": msgs, "max_tokens": -5}, "max_tokens"),
            ({"messages": msgs, "max_tokens": 0}, "max_tokens"),
            ({"messages": msgs, "max_tokens": 10 ** 30}, "max_tokens"),
            ({"messages": msgs, "temperature": -1}, "temperature"),
            ({"messages": msgs, "top_p": "x"}, "top_p"),
            ({"messages": msgs, "n": 0}, "n"),
            ({"messages": msgs, "n": -2}, "n"),
            ({"messages": msgs, "seed": -1}, "seed"),
            ({"messages": msgs, "presence_penalty": 5}, "presence_penalty"),
            ({"messages": msgs, "stop": {"a": 1}}, "stop"),
            ({"messages": msgs, "logprobs": True, "top_logprobs": 100}, "top_logprobs"),
        ]
        for body_in, param in cases:
            status, body = self.http("POST", chat, body_in)
            self.expect_error(status, body, 400, param=param)
        status, body = self.http("POST", "/v1/completions", {"prompt": [1, -1]})
        self.expect_error(status, body, 400, param="prompt[1]", path="/v1/completions")
        status, body = self.http("POST", "/v1/completions", {"prompt": [10 ** 8]})
        self.expect_error(status, body, 400, param="prompt", path="/v1/completions")
        # A huge max_tokens that the integer holds but the context does not: refused, saying so.
        status, body = self.http("POST", chat, {"messages": msgs, "max_tokens": 10 ** 9})
        self.expect_error(status, body, 400, param="max_tokens", code="context_length_exceeded")
        status, body = self.http("POST", chat, {"messages": [{"role": "user", "content": "word " * 3000}]})
        self.expect_error(status, body, 400, code="context_length_exceeded")
        # Unknown model and route.
        status, body = self.http("POST", chat, {"model": "gpt-17", "messages": msgs})
        self.expect_error(status, body, 404, param="model", code="model_not_found")
        try:
            self.client.chat.completions.create(model="gpt-17", messages=msgs)
            check(False, "an unknown model was accepted")
        except openai.NotFoundError:
            pass
        status, body = self.http("GET", "/v1/nothing")
        self.expect_error(status, body, 404, path="/v1/nothing")
        # Tokenize / detokenize, and their bad input.
        status, body = self.http("POST", "/tokenize", {"content": "Hello world", "with_pieces": True})
        check(status == 200 and [p["piece"] for p in body["tokens"]] == ["Hello", " world"], f"/tokenize: {body}")
        ids = [p["id"] for p in body["tokens"]]
        status, body = self.http("POST", "/detokenize", {"tokens": ids})
        check(status == 200 and body == {"content": "Hello world"}, f"/detokenize: {body}")
        status, body = self.http("POST", "/detokenize", {"tokens": [-1]})
        self.expect_error(status, body, 400, param="tokens[0]", path="/detokenize")
        status, body = self.http("POST", "/tokenize", {"content": 3})
        self.expect_error(status, body, 400, param="content", path="/tokenize")
        # Still serving, and nothing leaked.
        check(self.chat(max_tokens=4).choices[0].message.content, "no reply after the hostile input")
        self.wait_idle()


def test_sigterm(folio, model):
    """SIGTERM mid-stream: the stream ends, the process exits 0."""
    server = Server(folio, model)
    try:
        suite = Suite(server)
        s = suite._open_stream()
        server.proc.send_signal(signal.SIGTERM)
        code = server.proc.wait(timeout=30)
        check(code == 0, f"folio serve exited {code} after SIGTERM:\n" + "".join(server.log[-20:]))
        s.settimeout(10)
        rest = b""
        while True:
            try:
                chunk = s.recv(65536)
            except OSError:
                break
            if not chunk:
                break
            rest += chunk
        s.close()
        check(b'"finish_reason":"abort"' in rest, f"the stream did not end as aborted: {rest[-300:]!r}")
    finally:
        server.stop()


def test_sigint(folio, model):
    """SIGINT (Ctrl+C) with nothing in flight: the process exits 0, the port is closed."""
    server = Server(folio, model)
    try:
        server.proc.send_signal(signal.SIGINT)
        code = server.proc.wait(timeout=30)
        check(code == 0, f"folio serve exited {code} after SIGINT:\n" + "".join(server.log[-20:]))
        try:
            socket.create_connection(("127.0.0.1", server.port), timeout=2).close()
            check(False, "the port still accepts connections")
        except OSError:
            pass
    finally:
        server.stop()


def test_disconnect_while_queued(folio, model):
    """A streaming client that leaves before its first token (queued behind
    another request: --max-seqs 1) has its request aborted all the same."""
    server = Server(folio, model, extra=("--max-seqs", "1"))
    try:
        suite = Suite(server)
        first = suite._open_stream()
        queued = socket.create_connection(("127.0.0.1", server.port), timeout=30)
        body = json.dumps({"messages": [{"role": "user", "content": "Hello"}], "max_tokens": 8, "stream": True})
        queued.sendall((f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {API_KEY}\r\n"
                        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n{body}").encode())
        deadline = time.time() + 10
        while suite.metrics().get("folio:num_requests_waiting") != 1:
            check(time.time() < deadline, "the second request never queued")
            time.sleep(0.05)
        queued.close()
        deadline = time.time() + 10
        while True:
            m = suite.metrics()
            if m.get("folio:num_requests_waiting") == 0:
                break
            check(time.time() < deadline, "the queued request of a client that left was not aborted")
            time.sleep(0.1)
        check(m.get("folio:num_requests_running") == 1, f"the first request stopped too: {m}")
        check(m.get('folio:request_success_total{finished_reason="abort"}') == 1, f"abort not counted: {m}")
        first.close()
        suite.wait_idle()
    finally:
        server.stop()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--folio", required=True)
    parser.add_argument("--model")
    parser.add_argument("--only", help="run only the checks whose names contain this")
    args = parser.parse_args()
    models_dir = os.environ.get("FOLIO_MODELS_DIR") or os.path.join(os.environ.get("FOLIO_SOURCE_DIR", "."), "models")
    model = args.model or os.path.join(models_dir, MODEL_FILE)
    if not os.path.exists(model):
        skip(f"test model missing: {model} (run scripts/setup.sh)")

    failures = 0
    started = time.time()
    server = Server(args.folio, model)
    try:
        suite = Suite(server)
        tests = [name for name in dir(Suite) if name.startswith("test_") and (not args.only or args.only in name)]
        for name in tests:
            t0 = time.time()
            try:
                getattr(suite, name)()
                print(f"PASS   : {name} ({time.time() - t0:.1f} s)", flush=True)
            except Exception:  # noqa: BLE001 - every check reports
                failures += 1
                print(f"FAIL!  : {name}\n{traceback.format_exc()}", flush=True)
        if server.proc.poll() is not None:
            failures += 1
            print("FAIL!  : the server died:\n" + "".join(server.log[-30:]))
    finally:
        server.stop()
    for test in (test_disconnect_while_queued, test_sigterm, test_sigint):  # each on a server of its own
        if args.only and args.only not in test.__name__:
            continue
        t0 = time.time()
        try:
            test(args.folio, model)
            print(f"PASS   : {test.__name__} ({time.time() - t0:.1f} s)", flush=True)
        except Exception:  # noqa: BLE001
            failures += 1
            print(f"FAIL!  : {test.__name__}\n{traceback.format_exc()}", flush=True)
    print(f"Totals: {failures} failed, {time.time() - started:.1f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
