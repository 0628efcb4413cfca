"""Streaming chat requests and the open-loop (Poisson) load generator.

Plain http.client, one thread per in-flight request: the client must never be
the bottleneck, and with at most a few hundred requests per run threads are
simpler than asyncio and time just as well (perf_counter, monotonic).
"""

import http.client
import json
import random
import threading
import time
from dataclasses import dataclass, field, asdict
from typing import Dict, List, Optional
from urllib.parse import urlsplit


@dataclass
class RequestResult:
    index: int = 0
    user_turn: str = ""
    scheduled_s: float = 0.0   # planned arrival, seconds after the run's start
    sent_s: float = 0.0        # actual send, seconds after the run's start
    ok: bool = False
    error: str = ""
    ttft_s: Optional[float] = None
    e2e_s: Optional[float] = None
    tpot_s: Optional[float] = None
    output_tokens: int = 0
    output_tokens_from_usage: bool = False
    prompt_tokens: Optional[int] = None
    content_chunks: int = 0
    itl_s: List[float] = field(default_factory=list)
    finish_reason: Optional[str] = None
    text: str = ""

    def to_json(self) -> Dict:
        return asdict(self)


class Endpoint:
    """host/port of an OpenAI-compatible server plus small JSON helpers."""

    def __init__(self, base_url: str):
        parts = urlsplit(base_url)
        self.base_url = base_url.rstrip("/")
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or 80

    def connection(self, timeout: float) -> http.client.HTTPConnection:
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def request_json(self, method: str, path: str, body=None, timeout: float = 30.0):
        """(status, parsed JSON or None)."""
        conn = self.connection(timeout)
        try:
            data = None if body is None else json.dumps(body).encode()
            headers = {"Content-Type": "application/json"} if data is not None else {}
            conn.request(method, path, body=data, headers=headers)
            resp = conn.getresponse()
            raw = resp.read()
            try:
                return resp.status, json.loads(raw) if raw else None
            except ValueError:
                return resp.status, None
        finally:
            conn.close()

    def health_ok(self) -> bool:
        try:
            status, _ = self.request_json("GET", "/health", timeout=2.0)
            return status == 200
        except OSError:
            return False

    def model_id(self) -> str:
        status, body = self.request_json("GET", "/v1/models")
        if status == 200 and body and body.get("data"):
            return body["data"][0].get("id", "default")
        return "default"

    def tokenize(self, text: str) -> Optional[int]:
        """Token count from POST /tokenize, None when the server has none."""
        try:
            status, body = self.request_json("POST", "/tokenize", {"content": text})
        except OSError:
            return None
        if status == 200 and body and isinstance(body.get("tokens"), list):
            return len(body["tokens"])
        return None


def _chat_body(model: str, messages, max_tokens: int, temperature: float, extra: Dict) -> bytes:
    body = {"model": model, "messages": messages, "max_tokens": max_tokens,
            "temperature": temperature, "stream": True,
            "stream_options": {"include_usage": True}}
    body.update(extra)
    return json.dumps(body).encode()


def _handle_event(res: RequestResult, event: Dict, now: float, t_send: float, last: List[float]):
    """Fold one SSE data object into res; last[0] is the previous content chunk's time."""
    usage = event.get("usage")
    if usage:
        res.output_tokens = int(usage.get("completion_tokens") or 0)
        res.prompt_tokens = usage.get("prompt_tokens")
        res.output_tokens_from_usage = True
    for choice in event.get("choices") or []:
        delta = choice.get("delta") or {}
        content = delta.get("content")
        if content:
            if res.ttft_s is None:
                res.ttft_s = now - t_send
            else:
                res.itl_s.append(now - last[0])
            last[0] = now
            res.content_chunks += 1
            res.text += content
        if choice.get("finish_reason"):
            res.finish_reason = choice["finish_reason"]


def stream_chat(endpoint: Endpoint, model: str, messages, max_tokens: int, temperature: float,
                timeout: float, extra: Optional[Dict] = None, res: Optional[RequestResult] = None,
                clock_zero: float = 0.0) -> RequestResult:
    """Send one streaming chat completion and time it from the client side.

    TTFT: send -> first chunk carrying content. ITL: gaps between content
    chunks. TPOT: (e2e - TTFT) / (output tokens - 1), output tokens from the
    usage chunk when the server sends one, else the content chunk count.
    """
    res = res or RequestResult()
    body = _chat_body(model, messages, max_tokens, temperature, extra or {})
    conn = endpoint.connection(timeout)
    t_send = time.perf_counter()
    res.sent_s = t_send - clock_zero
    last = [t_send]
    try:
        conn.request("POST", "/v1/chat/completions", body=body,
                     headers={"Content-Type": "application/json", "Accept": "text/event-stream"})
        resp = conn.getresponse()
        if resp.status != 200:
            res.error = f"HTTP {resp.status}: {resp.read()[:300]!r}"
            return res
        while True:
            line = resp.readline()
            if not line:
                break
            now = time.perf_counter()
            line = line.strip()
            if not line.startswith(b"data:"):
                continue
            payload = line[5:].strip()
            if payload == b"[DONE]":
                break
            try:
                event = json.loads(payload)
            except ValueError:
                continue
            if "error" in event:
                res.error = f"stream error: {json.dumps(event['error'])[:300]}"
                return res
            _handle_event(res, event, now, t_send, last)
        t_end = time.perf_counter()
    except (OSError, http.client.HTTPException) as exc:
        res.error = f"{type(exc).__name__}: {exc}"
        return res
    finally:
        conn.close()
    res.e2e_s = t_end - t_send
    if not res.output_tokens_from_usage:
        res.output_tokens = res.content_chunks
    if res.ttft_s is None:
        res.error = "no content in the stream"
        return res
    if res.output_tokens > 1:
        res.tpot_s = (res.e2e_s - res.ttft_s) / (res.output_tokens - 1)
    res.ok = True
    return res


def poisson_arrivals(rate: float, count: Optional[int], duration_s: Optional[float],
                     seed: int) -> List[float]:
    """Arrival times (s after start) of a Poisson process: `count` arrivals,
    or as many as fall within duration_s when count is None."""
    rng = random.Random(seed)
    times, t = [], 0.0
    while True:
        if count is not None and len(times) >= count:
            break
        t += rng.expovariate(rate)
        if duration_s is not None and t > duration_s:
            break
        times.append(t)
    return times


def run_open_loop(endpoint: Endpoint, model: str, arrivals: List[float], messages_for, turns: List[str],
                  max_tokens: int, temperature: float, timeout: float, extra: Dict):
    """Send request i at arrivals[i] whatever the server is doing (open loop).

    Returns (results, wall seconds from start until the last response ended).
    """
    results = [RequestResult(index=i, user_turn=turns[i], scheduled_s=a) for i, a in enumerate(arrivals)]
    threads = []
    t0 = time.perf_counter()
    for res in results:
        delay = t0 + res.scheduled_s - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        th = threading.Thread(
            target=stream_chat, daemon=True,
            args=(endpoint, model, messages_for(res.user_turn), max_tokens, temperature, timeout),
            kwargs={"extra": extra, "res": res, "clock_zero": t0})
        th.start()
        threads.append(th)
    for th in threads:
        th.join()
    return results, time.perf_counter() - t0
