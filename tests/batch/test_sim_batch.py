"""The simulator's Batch API: files, the batch lifecycle, failed lines, expiry, cancel, bill."""

from __future__ import annotations

import anyio
import orjson
import pytest

from halugen.errors import FatalCallError, UsageError
from halugen.llm.batch_client import BatchClient
from halugen.simulate.batch_files import parse_multipart
from halugen.simulate.config import BatchSimConfig
from tests.batch.support import BatchClock, in_process


def body(i: int, *, model: str = "gpt-4o-mini", max_tokens: int = 64) -> dict:
    return {
        "model": model,
        "messages": [{"role": "user", "content": f"Tell me about the river Serin{i}."}],
        "temperature": 1.0,
        "max_tokens": max_tokens,
    }


def jsonl(bodies: list[dict], *, url: str = "/v1/chat/completions") -> bytes:
    return b"".join(
        orjson.dumps({"custom_id": f"req-{i}", "method": "POST", "url": url, "body": b}) + b"\n"
        for i, b in enumerate(bodies)
    )


def lines(data: bytes) -> list[dict]:
    return [orjson.loads(x) for x in data.splitlines() if x.strip()]


def client(env) -> BatchClient:
    return BatchClient(base_url="http://sim/v1", api_key="k", transport=env.transport)


def test_a_batch_goes_through_its_states_and_answers_like_the_chat_endpoint():
    env = in_process(BatchClock(step=1.0), validating_s=1.5, duration_s=4.0, finalizing_s=1.0)
    bodies = [body(i) for i in range(8)]

    async def main():
        c = client(env)
        file_id = await c.upload(jsonl(bodies))
        created = await c.create(file_id)
        seen = [created.status]
        while True:
            info = await c.get(created.id)
            seen.append(info.status)
            assert info.completed + info.failed <= info.total == 8
            if info.final:
                break
        out = lines(await c.content(info.output_file_id))
        # the same body sent interactively gets the very same answer
        direct = await env.sim.handle("/v1/chat/completions", {}, orjson.dumps(bodies[3]))
        return seen, info, out, orjson.loads(direct.body)

    seen, info, out, direct = anyio.run(main)
    assert seen[0] == "validating"
    assert "in_progress" in seen and "finalizing" in seen and seen[-1] == "completed"
    assert info.completed == 8 and info.failed == 0 and info.error_file_id is None
    by_id = {line["custom_id"]: line for line in out}
    answer = by_id["req-3"]["response"]
    assert answer["status_code"] == 200 and by_id["req-3"]["error"] is None
    assert answer["body"]["choices"] == direct["choices"]
    assert answer["body"]["usage"] == direct["usage"]


def test_batches_bill_half_price_separately_and_in_the_total():
    env = in_process(duration_s=1.0)
    bodies = [body(i) for i in range(5)]

    async def main():
        c = client(env)
        info = await c.create(await c.upload(jsonl(bodies)))
        while not (await c.get(info.id)).final:
            pass
        for b in bodies[:2]:  # and two interactive calls of the same bodies
            await env.sim.handle("/v1/chat/completions", {}, orjson.dumps(b))

    anyio.run(main)
    stats = env.stats()
    batch = stats["batch"]
    cfg = env.sim.config
    tokens_usd = batch["prompt_tokens"] * cfg.price_in + batch["completion_tokens"] * cfg.price_out
    full = tokens_usd / 1e6
    assert batch["billed_usd"] == pytest.approx(full / 2)
    assert batch["billed_requests"] == 5
    assert stats["interactive_billed_usd"] > 0
    assert stats["billed_usd"] == pytest.approx(stats["interactive_billed_usd"] + full / 2)
    assert stats["billed_requests"] == 7
    assert stats["duplicate_bills"] == 2  # the same two bodies, billed both ways
    assert sum(stats["billed_keys"].values()) == 7


def test_failed_lines_and_context_errors_go_to_the_error_file_unbilled():
    env = in_process(duration_s=1.0, fail_rate=0.5, sim={"context_window": 2000})
    bodies = [body(i) for i in range(20)] + [body(99, max_tokens=5000)]

    async def main():
        c = client(env)
        info = await c.create(await c.upload(jsonl(bodies)))
        while not (info := await c.get(info.id)).final:
            pass
        return (
            info,
            lines(await c.content(info.output_file_id)),
            lines(await c.content(info.error_file_id)),
        )

    info, out, errs = anyio.run(main)
    assert info.status == "completed"
    assert info.completed == len(out) and info.failed == len(errs) == 21 - len(out)
    codes = {e["custom_id"]: e["response"]["status_code"] for e in errs}
    assert codes.pop("req-20") == 400  # the context check of the chat endpoint
    assert codes and set(codes.values()) == {500}
    assert env.stats()["batch"]["billed_requests"] == len(out)


def test_an_expired_batch_keeps_what_it_finished_and_lists_the_rest_as_expired():
    env = in_process(BatchClock(step=1.0), duration_s=10.0, expire_s=4.0)
    bodies = [body(i) for i in range(10)]

    async def main():
        c = client(env)
        info = await c.create(await c.upload(jsonl(bodies)))
        while not (info := await c.get(info.id)).final:
            pass
        return (
            info,
            lines(await c.content(info.output_file_id)),
            lines(await c.content(info.error_file_id)),
        )

    info, out, errs = anyio.run(main)
    assert info.status == "expired"
    assert 0 < len(out) < 10 and len(out) + len(errs) == 10
    assert {e["error"]["code"] for e in errs} == {"batch_expired"}
    assert all(e["response"] is None for e in errs)
    done = [int(line["custom_id"].split("-")[1]) for line in out]
    assert done == list(range(len(out)))  # lines are done in file order
    assert env.stats()["batch"]["billed_requests"] == len(out)


def test_cancel_stops_a_batch_where_it_is():
    clock = BatchClock(step=1.0)
    env = in_process(clock, duration_s=10.0, cancel_s=2.0)

    async def main():
        c = client(env)
        info = await c.create(await c.upload(jsonl([body(i) for i in range(10)])))
        for _ in range(3):
            await c.get(info.id)
        cancelling = await c.cancel(info.id)
        while not (info := await c.get(info.id)).final:
            pass
        with pytest.raises(FatalCallError):
            await c.cancel(info.id)  # a finished batch cannot be cancelled
        return cancelling, info, lines(await c.content(info.error_file_id))

    cancelling, info, errs = anyio.run(main)
    assert cancelling.status == "cancelling"
    assert info.status == "cancelled"
    assert 0 < info.completed < 10
    assert {e["error"]["code"] for e in errs} == {"batch_cancelled"}
    assert env.stats()["batch"]["cancel_requests"] == 1


@pytest.mark.parametrize(
    ("data", "code"),
    [
        (jsonl([body(i) for i in range(6)]), "too_many_requests"),
        (jsonl([body(0), body(1, model="gpt-4o")]), "mismatched_model"),
        (jsonl([body(0)], url="/v1/embeddings"), "invalid_url"),
        (b"{not json\n", "invalid_json_line"),
    ],
)
def test_invalid_input_files_fail_validation_with_the_reason(data, code):
    env = in_process(validating_s=1.0, max_requests=5)

    async def main():
        c = client(env)
        info = await c.create(await c.upload(data))
        while not (info := await c.get(info.id)).final:
            pass
        return info

    info = anyio.run(main)
    assert info.status == "failed"
    assert any(e.startswith(code) for e in info.errors)
    assert env.stats()["batch"]["billed_requests"] == 0


def test_the_batch_list_pages_newest_first_and_finds_a_batch_by_its_file():
    env = in_process()

    async def main():
        c = client(env)
        made = []
        for i in range(5):
            made.append(await c.create(await c.upload(jsonl([body(i)]))))
        first, more = await c.list(limit=2)
        rest, more2 = await c.list(limit=10, after=first[-1].id)
        return made, first, more, rest, more2

    made, first, more, rest, more2 = anyio.run(main)
    assert [b.id for b in first] == [made[4].id, made[3].id] and more
    assert [b.id for b in rest] == [m.id for m in reversed(made[:3])] and not more2
    assert rest[-1].input_file_id == made[0].input_file_id


def test_the_api_key_is_checked_and_unknown_objects_are_404():
    env = in_process(sim={"api_key": "right"})

    async def main():
        wrong = BatchClient(base_url="http://sim/v1", api_key="wrong", transport=env.transport)
        right = BatchClient(base_url="http://sim/v1", api_key="right", transport=env.transport)
        with pytest.raises(FatalCallError) as auth:
            await wrong.upload(jsonl([body(0)]))
        with pytest.raises(FatalCallError) as missing:
            await right.get("batch_nope")
        return auth.value, missing.value

    auth, missing = anyio.run(main)
    assert auth.status == 401 and "right" not in str(auth)
    assert missing.status == 404


def test_multipart_fields_are_read_with_their_file_names():
    body_ = (
        b'--xx\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n'
        b'--xx\r\nContent-Disposition: form-data; name="file"; filename="a.jsonl"\r\n'
        b"Content-Type: application/jsonl\r\n\r\nline1\r\nline2\r\n--xx--\r\n"
    )
    fields = parse_multipart("multipart/form-data; boundary=xx", body_)
    assert fields["purpose"] == (b"batch", "")
    assert fields["file"] == (b"line1\r\nline2", "a.jsonl")


def test_bad_settings_are_refused():
    with pytest.raises(UsageError):
        BatchSimConfig(duration_s=-1)
    with pytest.raises(UsageError):
        BatchSimConfig(fail_rate=2)
