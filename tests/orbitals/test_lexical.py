import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chatomon import DEFAULT_REFUSAL, Atom, OrbitalContext, Side
from chatomon.errors import ConfigurationError
from chatomon.orbitals.lexical import Blocklist, MaxLength, RegexGuard, WordMatcher


def ctx(message: str, side: Side = "input") -> OrbitalContext:
    return OrbitalContext(side=side, message=message, annotations={}, turn_id="t")


class TestWordMatcher:
    @pytest.mark.parametrize(
        "text",
        ["Acme Corp", "I love acme.", "(ACME)", "acme's offer", "ACME\nrocks", "acme"],
    )
    def test_whole_word_hits(self, text):
        assert WordMatcher(["acme"]).find(text) == ["acme"]

    @pytest.mark.parametrize("text", ["acmeville", "superacme", "acme_corp", "acme2", "acm e"])
    def test_no_hit_inside_a_word(self, text):
        assert WordMatcher(["acme"]).find(text) == []

    def test_case_folding_uses_casefold(self):
        assert WordMatcher(["strasse"]).search("Hauptstraße? No: STRASSE")
        assert WordMatcher(["Straße"]).search("die strasse")

    def test_phrases_match_across_runs_of_whitespace(self):
        matcher = WordMatcher(["big   deal"])
        assert matcher.terms == ("big deal",)
        assert matcher.search("a BIG \t\n deal")
        assert not matcher.search("bigdeal")
        assert not matcher.search("big deals")

    def test_terms_with_punctuation_are_bounded_too(self):
        matcher = WordMatcher(["c++"])
        assert matcher.search("I write C++.")
        assert not matcher.search("c++x")

    def test_find_reports_every_term_in_configuration_order(self):
        matcher = WordMatcher(["corp", "acme", "acme corp", "ACME"])
        assert matcher.terms == ("corp", "acme", "acme corp")
        assert matcher.find("Acme Corp") == ["corp", "acme", "acme corp"]

    def test_regex_metacharacters_are_literal(self):
        assert not WordMatcher(["a.c"]).search("abc")
        assert WordMatcher(["a.c"]).search("x a.c y")

    @pytest.mark.parametrize("terms", [[], "acme", ["acme", ""], ["  "], [3], None])
    def test_invalid_terms(self, terms):
        with pytest.raises(ConfigurationError) as caught:
            WordMatcher(terms, field="terms")
        assert caught.value.field == "terms"

    @given(st.lists(st.text(min_size=1).filter(str.strip), min_size=1, max_size=5), st.text())
    def test_find_never_raises_and_reports_configured_terms(self, terms, text):
        matcher = WordMatcher(terms)
        assert set(matcher.find(text)) <= set(matcher.terms)
        assert matcher.search(text) == bool(matcher.find(text))


class TestBlocklist:
    def test_blocks_with_reason_and_matched_terms(self):
        verdict = Blocklist(["acme", "globex"]).check(ctx("Call ACME now"))
        assert verdict.action == "block"
        assert verdict.reason == "blocklist"
        assert verdict.reply is None
        assert verdict.annotations == {"terms": ["acme"]}

    def test_allows_other_words(self):
        assert Blocklist(["acme"]).check(ctx("Welcome to Acmeville")).action == "allow"

    def test_reply_and_guidance_are_passed_on(self):
        assert Blocklist(["acme"], reply="No.").check(ctx("acme")).reply == "No."
        verdict = Blocklist(["acme"], guidance="Do not name rivals.").check(ctx("acme"))
        assert verdict.guidance == "Do not name rivals."

    def test_streams_by_default(self):
        assert Blocklist(["acme"]).streaming is True
        assert Blocklist(["acme"], streaming=False).streaming is False

    def test_common_options(self):
        guard = Blocklist(["acme"], name="rivals", side="output", timeout=1.0, on_error="allow")
        assert (guard.name, guard.side, guard.timeout, guard.on_error) == (
            "rivals",
            "output",
            1.0,
            "allow",
        )

    def test_fingerprint_follows_terms(self):
        assert Blocklist(["acme"]).fingerprint == Blocklist(["acme"]).fingerprint
        assert Blocklist(["acme"]).fingerprint != Blocklist(["globex"]).fingerprint

    def test_reply_and_guidance_together_are_refused(self):
        with pytest.raises(ConfigurationError) as caught:
            Blocklist(["acme"], reply="No.", guidance="Refuse.")
        assert caught.value.field == "guidance"

    @pytest.mark.parametrize("field", ["reply", "guidance"])
    def test_blank_texts_are_refused(self, field):
        with pytest.raises(ConfigurationError) as caught:
            Blocklist(["acme"], **{field: " "})
        assert caught.value.field == field

    def test_input_block_in_an_atom(self):
        atom = Atom("t", nucleus=lambda m, g: "unused", input=[Blocklist(["acme"])])
        result = atom.chat_sync("Tell me about Acme Corp")
        assert result.report.final_action == "blocked"
        assert result.reply == DEFAULT_REFUSAL
        assert result.report.input[0].reason == "blocklist"

    def test_output_replacement_in_an_atom(self):
        atom = Atom(
            "t",
            nucleus=lambda m, g: "Try Acme   Corp instead.",
            output=[Blocklist(["acme corp"], reply="Let me help you myself.")],
        )
        result = atom.chat_sync("Any alternatives?")
        assert result.report.final_action == "orbital_response"
        assert result.reply == "Let me help you myself."

    async def test_streamed_reply_is_checked_while_it_grows(self):
        async def nucleus(messages, guidance):
            for word in ["Our ", "partner ", "is ", "Acme ", "Corp, ", "the ", "best."]:
                yield word

        atom = Atom(
            "t", nucleus=nucleus, output=[Blocklist(["acme"], reply="No.")], stream_window=5
        )
        chunks = [event async for event in atom.stream("who?") if hasattr(event, "content")]
        assert "".join(chunk.content for chunk in chunks).endswith("No.")
        assert all("Acme" not in chunk.content for chunk in chunks)

    def test_allowed_reply_in_an_atom(self):
        atom = Atom("t", nucleus=lambda m, g: "Welcome to Acmeville!", output=[Blocklist(["acme"])])
        result = atom.chat_sync("hi")
        assert result.report.final_action == "answered"
        assert result.reply == "Welcome to Acmeville!"


class TestRegexGuard:
    def test_string_and_compiled_patterns(self):
        guard = RegexGuard([r"\bTICKET-\d+\b", re.compile("secret", re.IGNORECASE)])
        assert guard.check(ctx("see TICKET-12")).annotations == {"patterns": [r"\bTICKET-\d+\b"]}
        verdict = guard.check(ctx("a SECRET"))
        assert (verdict.action, verdict.reason) == ("block", "regex")
        assert guard.check(ctx("ticket-12 is fine")).action == "allow"

    def test_reports_every_matching_pattern(self):
        guard = RegexGuard(["a", "b", "c"])
        assert guard.check(ctx("ab")).annotations == {"patterns": ["a", "b"]}

    def test_does_not_stream(self):
        assert RegexGuard(["x"]).streaming is False

    @pytest.mark.parametrize(
        "patterns", [[], "abc", re.compile("x"), ["("], [""], [re.compile(b"x")], [1]]
    )
    def test_invalid_patterns(self, patterns):
        with pytest.raises(ConfigurationError) as caught:
            RegexGuard(patterns)
        assert caught.value.field == "patterns"

    def test_in_an_atom_with_guidance_regenerates(self):
        replies = iter(["Your code is 1234-5678.", "I can't share codes."])
        atom = Atom(
            "t",
            nucleus=lambda m, g: next(replies),
            output=[RegexGuard([r"\d{4}-\d{4}"], guidance="Never share codes.")],
        )
        result = atom.chat_sync("code?")
        assert result.report.final_action == "answered"
        assert result.reply == "I can't share codes."
        assert len(result.report.output) == 2


class TestMaxLength:
    def test_limit_is_inclusive(self):
        guard = MaxLength(5)
        assert guard.check(ctx("12345")).action == "allow"
        verdict = guard.check(ctx("123456"))
        assert (verdict.action, verdict.reason) == ("block", "max_length")
        assert verdict.annotations == {"length": 6, "max_chars": 5}

    @pytest.mark.parametrize("value", [0, -1, 1.5, "10", True, None])
    def test_max_chars_must_be_a_positive_int(self, value):
        with pytest.raises(ConfigurationError) as caught:
            MaxLength(value)
        assert caught.value.field == "max_chars"
        assert caught.value.value == value

    def test_in_an_atom(self):
        atom = Atom("t", nucleus=lambda m, g: "ok", input=[MaxLength(10, reply="Too long.")])
        result = atom.chat_sync("x" * 11)
        assert result.report.final_action == "blocked"
        assert result.reply == "Too long."
        assert atom.chat_sync("short").report.final_action == "answered"
