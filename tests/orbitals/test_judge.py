import asyncio
import json
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest

from chatomon import (
    DEFAULT_REFUSAL,
    Atom,
    Message,
    NucleusReply,
    NucleusRequest,
    OrbitalContext,
    Side,
    TextChunk,
)
from chatomon.errors import ConfigurationError
from chatomon.orbitals.judge import JudgeAnswer, JudgeOutputError, LLMJudge, parse_judge_answer


def ctx(message: str, side: Side = "input") -> OrbitalContext:
    return OrbitalContext(side=side, message=message, annotations={}, turn_id="t")


def answering(text: str):
    prompts: list[list[Message]] = []

    def judge(messages, guidance):
        prompts.append(messages)
        return text

    judge.prompts = prompts
    return judge


ALLOW = '{"verdict": "allow", "reason": "fine"}'
BLOCK = '{"verdict": "block", "reason": "Medical advice!"}'


class TestParse:
    @pytest.mark.parametrize(
        "text",
        [
            ALLOW,
            f"  {ALLOW}\n",
            f"```json\n{ALLOW}\n```",
            f"```JSON\n{ALLOW}\n```",
            f"```\n{ALLOW}\n```",
            f"```json {ALLOW} ```",
        ],
    )
    def test_accepted(self, text):
        assert parse_judge_answer(text) == JudgeAnswer(verdict="allow", reason="fine")

    @pytest.mark.parametrize(
        "text",
        [
            "",
            "allow",
            "not json {",
            f"Sure! {ALLOW}",
            f"{ALLOW} Hope this helps.",
            f"Here:\n```json\n{ALLOW}\n```",
            f"```json\n{ALLOW}\n``` done",
            f"```python\n{ALLOW}\n```",
            '{"verdict": "allow", "reason": "fine", "confidence": 0.9}',
            '{"verdict": "maybe", "reason": "fine"}',
            '{"verdict": "ALLOW", "reason": "fine"}',
            '{"verdict": "allow"}',
            '{"reason": "fine"}',
            '{"verdict": "allow", "reason": 3}',
            '{"verdict": "allow", "reason": ""}',
            json.dumps({"verdict": "allow", "reason": "x" * 65}),
            f"[{ALLOW}]",
        ],
    )
    def test_rejected(self, text):
        with pytest.raises(JudgeOutputError):
            parse_judge_answer(text)

    def test_error_is_a_value_error_and_does_not_quote_the_reply(self):
        with pytest.raises(ValueError, match="not the required JSON") as caught:
            parse_judge_answer('{"verdict": "allow", "reason": "fine", "secret user text": 1}')
        assert "fine" not in str(caught.value)
        assert caught.value.__cause__ is None
        assert caught.value.__suppress_context__


class TestCheck:
    async def test_allow(self):
        verdict = await LLMJudge(answering(ALLOW), instructions="Block medical advice.").check(
            ctx("Hello")
        )
        assert verdict.action == "allow"

    async def test_block_maps_reason_to_a_label(self):
        judge = LLMJudge(
            answering(BLOCK), instructions="Block medical advice.", reply="Ask a doctor."
        )
        verdict = await judge.check(ctx("Which pills?"))
        assert (verdict.action, verdict.reply) == ("block", "Ask a doctor.")
        assert verdict.reason == "llm_judge:medical_advice"

    @pytest.mark.parametrize(
        ("reason", "label"),
        [
            ("off topic", "off_topic"),
            ("  ", "unspecified"),
            ("Été-2024", "t_2024"),
            ("a__b", "a__b"),
        ],
    )
    async def test_reason_labels(self, reason, label):
        answer = json.dumps({"verdict": "block", "reason": reason})
        verdict = await LLMJudge(answering(answer), instructions="x").check(ctx("y"))
        assert verdict.reason == f"llm_judge:{label}"
        assert re.fullmatch(r"llm_judge:[a-z0-9_]+", verdict.reason or "")

    async def test_block_with_guidance(self):
        judge = LLMJudge(answering(BLOCK), instructions="x", guidance="Refuse kindly.")
        verdict = await judge.check(ctx("y"))
        assert (verdict.guidance, verdict.reply) == ("Refuse kindly.", None)

    async def test_prompt_holds_instructions_text_and_schema(self):
        judge_function = answering(ALLOW)
        judge = LLMJudge(judge_function, instructions="Block medical advice.")
        await judge.check(ctx("Which {pills} should I take?", side="output"))
        (messages,) = judge_function.prompts
        assert [message.role for message in messages] == ["user"]
        prompt = messages[0].content
        assert prompt.startswith("Block medical advice.")
        assert "assistant reply" in prompt
        marker = re.search(r"=====TEXT-[0-9a-f]{16}=====", prompt)
        assert marker is not None
        assert prompt.count(marker.group()) == 3  # named once, then around the text
        inside = prompt.split(marker.group())[2]
        assert inside == "\nWhich {pills} should I take?\n"
        assert '"additionalProperties": false' in prompt
        assert '"enum": ["allow", "block"]' in prompt

    async def test_markers_change_per_call(self):
        judge_function = answering(ALLOW)
        judge = LLMJudge(judge_function, instructions="x")
        await judge.check(ctx("a"))
        await judge.check(ctx("a"))
        first, second = (m[0].content for m in judge_function.prompts)
        assert first != second

    async def test_async_judge(self):
        async def judge(messages, guidance):
            await asyncio.sleep(0)
            return BLOCK

        assert (await LLMJudge(judge, instructions="x").check(ctx("y"))).action == "block"

    async def test_nucleus_judge_chunks_are_joined(self):
        class Chunks:
            async def run(self, request: NucleusRequest) -> AsyncIterator[Any]:
                assert request.turn_id == "t"
                for part in ['{"verdict": ', '"block", ', '"reason": "x"}']:
                    yield TextChunk(part)

        assert (await LLMJudge(Chunks(), instructions="x").check(ctx("y"))).action == "block"

    async def test_nucleus_reply_text_wins(self):
        class Final:
            async def run(self, request: NucleusRequest) -> AsyncIterator[Any]:
                yield TextChunk("Thinking...")
                yield NucleusReply(BLOCK)

        assert (await LLMJudge(Final(), instructions="x").check(ctx("y"))).action == "block"

    async def test_invalid_output_raises(self):
        with pytest.raises(JudgeOutputError):
            await LLMJudge(answering("I think it's fine"), instructions="x").check(ctx("y"))

    def test_not_streaming_and_named(self):
        judge = LLMJudge(answering(ALLOW), instructions="x")
        assert (judge.streaming, judge.name, judge.side) == (False, "llm_judge", None)

    @pytest.mark.parametrize(
        ("arguments", "field"),
        [
            ({"judge": "gpt", "instructions": "x"}, "judge"),
            ({"judge": None, "instructions": "x"}, "judge"),
            ({"judge": answering(ALLOW), "instructions": ""}, "instructions"),
            (
                {"judge": answering(ALLOW), "instructions": "x", "reply": "a", "guidance": "b"},
                "guidance",
            ),
        ],
    )
    def test_invalid_configuration(self, arguments, field):
        with pytest.raises(ConfigurationError) as caught:
            LLMJudge(**arguments)
        assert caught.value.field == field


class TestInAnAtom:
    async def test_block_replaces_the_reply(self):
        atom = Atom(
            "t",
            nucleus=lambda m, g: "Take two aspirin.",
            output=[
                LLMJudge(
                    answering(BLOCK), instructions="Block medical advice.", reply="See a doctor."
                )
            ],
        )
        result = await atom.chat("My head hurts")
        assert (result.report.final_action, result.reply) == ("orbital_response", "See a doctor.")
        assert result.report.output[0].results[0].reason == "llm_judge:medical_advice"

    async def test_allow_answers(self):
        atom = Atom(
            "t", nucleus=lambda m, g: "Hi!", input=[LLMJudge(answering(ALLOW), instructions="x")]
        )
        result = await atom.chat("hello")
        assert (result.report.final_action, result.reply) == ("answered", "Hi!")

    async def test_fenced_json_through_an_atom(self):
        judge = LLMJudge(answering(f"```json\n{BLOCK}\n```"), instructions="x")
        atom = Atom("t", nucleus=lambda m, g: "unused", input=[judge])
        result = await atom.chat("hello")
        assert (result.report.final_action, result.reply) == ("blocked", DEFAULT_REFUSAL)

    @pytest.mark.parametrize(
        "bad", ["I'd allow it.", '{"verdict": "allow", "reason": "x", "extra": 1}']
    )
    async def test_invalid_output_with_on_error_allow_lets_the_reply_through(self, bad):
        judge = LLMJudge(answering(bad), instructions="x", on_error="allow")
        atom = Atom("t", nucleus=lambda m, g: "Here you go.", output=[judge])
        result = await atom.chat("hello")
        assert (result.report.final_action, result.reply) == ("answered", "Here you go.")
        judged = result.report.output[0].results[0]
        assert (judged.error_type, judged.error_policy, judged.action) == (
            "JudgeOutputError",
            "allow",
            "allow",
        )

    async def test_invalid_output_with_on_error_block_sends_the_refusal(self):
        judge = LLMJudge(answering("not json"), instructions="x", on_error="block")
        atom = Atom("t", nucleus=lambda m, g: "Here you go.", output=[judge])
        result = await atom.chat("hello")
        assert (result.report.final_action, result.reply) == ("fallback_refusal", DEFAULT_REFUSAL)
        judged = result.report.output[0].results[0]
        assert judged.error_type == "JudgeOutputError"
        assert judged.error_policy == "block"

    def test_sync_chat(self):
        atom = Atom(
            "t", nucleus=lambda m, g: "Hi!", output=[LLMJudge(answering(BLOCK), instructions="x")]
        )
        result = atom.chat_sync("hello")
        assert (result.report.final_action, result.reply) == ("fallback_refusal", DEFAULT_REFUSAL)
