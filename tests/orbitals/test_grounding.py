from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from chatomon import Atom, Message, OrbitalContext
from chatomon.chat.pipeline import AtomConfig, ChatService
from chatomon.chat.store import MemoryStore
from chatomon.data.actor import SimpleActor
from chatomon.errors import ConfigurationError
from chatomon.evals.fixtures import FIXTURES
from chatomon.orbitals.grounding import GroundingGuard, claims, source_values, ungrounded
from chatomon.providers.testing import ScriptedProvider, tool_call

USER = SimpleActor(id=1, is_authenticated=True)
RESULTS = [{"data": [{"id": 1, "name": "Steel", "density": 7.8}], "total_count": 1}]


def ctx(
    message: str, *, question: str = "Which material?", history: tuple[Message, ...] | None = None
) -> OrbitalContext:
    return OrbitalContext(
        side="output",
        message=message,
        history=history if history is not None else (Message(role="user", content=question),),
        annotations={},
        turn_id="t",
    )


class TestClaims:
    def test_numbers_and_mid_sentence_names(self):
        found = claims("The Gear of Apollo weighs 1,234.5 kg and costs 12.")
        assert found.numbers == ("1,234.5", "12")
        assert found.names == ("Gear", "Apollo")

    def test_common_sentence_openers_are_not_names(self):
        found = claims("There are three. However, I think you're right. Here's Cobalt.")
        assert found.names == ("Cobalt",)

    def test_an_uncommon_word_opening_a_sentence_is_a_name(self):
        assert claims("Titanium is light.").names == ("Titanium",)

    def test_list_items_open_like_sentences(self):
        assert claims("Parts:\n- Bolt\n- The Gear").names == ("Parts", "Bolt", "Gear")

    def test_codes_and_possessives(self):
        assert claims("See Apollo's code CLITIC-001.").names == ("Apollo", "CLITIC")
        assert claims("See CLITIC-001.").numbers == ("001",)

    def test_curly_apostrophes_are_contractions_too(self):
        assert claims("You\u2019re welcome.").names == ()


class TestUngrounded:
    def test_values_and_names_from_results_are_grounded(self):
        assert ungrounded("Steel has a density of 7.8 g/cm³.", RESULTS) == ()

    def test_made_up_figures_and_names_are_returned(self):
        assert ungrounded("Steel is 7.9, like Titanium.", RESULTS) == ("7.9", "Titanium")

    def test_a_plural_of_a_held_name_is_held(self):
        assert ungrounded("Two Steels.", RESULTS) == ()
        assert ungrounded("Two Steelx.", RESULTS) == ("Steelx",)

    def test_names_match_ignoring_case(self):
        assert ungrounded("The word is STEEL.", RESULTS) == ()

    @pytest.mark.parametrize("written", ["6.47", "6.5", "6", "6.467"])
    def test_a_rounded_figure_is_grounded(self, written):
        assert ungrounded(f"About {written}.", [{"avg": 6.466666666666666}]) == ()

    def test_a_wrongly_rounded_figure_is_not(self):
        assert ungrounded("About 6.46.", [{"avg": 6.466666666666666}]) == ("6.46",)

    def test_numbers_inside_source_text_count(self):
        assert (
            ungrounded(
                "Ticket 3 is CLITIC-003.", [{"name": "Clinic ticket 3", "code": "CLITIC-003"}]
            )
            == ()
        )

    def test_thousands_separators_are_the_same_number(self):
        assert ungrounded("We have 1,234 parts.", [{"count": 1234}]) == ()

    def test_allow_accepts_terms(self):
        assert ungrounded("Ask Chatomon.", [], allow=["chatomon"]) == ()

    def test_keys_and_booleans_are_source_text(self):
        found = source_values([{"has_more": False}])
        assert "has_more" in found.text
        assert "false" in found.text


class TestGroundingGuard:
    def test_blocks_with_guidance_to_regenerate(self):
        guard = GroundingGuard(sources=lambda c: RESULTS)
        verdict = guard.check(ctx("Steel has a density of 9.1."))
        assert verdict.action == "block"
        assert verdict.reason == "ungrounded"
        assert verdict.guidance is not None
        assert "'9.1'" in verdict.guidance
        assert verdict.annotations == {"ungrounded": ["9.1"]}

    def test_annotate_mode_allows_and_annotates(self):
        guard = GroundingGuard("annotate", sources=lambda c: RESULTS)
        verdict = guard.check(ctx("Steel has a density of 9.1."))
        assert verdict.action == "allow"
        assert verdict.annotations == {"ungrounded": ["9.1"]}

    def test_a_grounded_answer_passes(self):
        verdict = GroundingGuard(sources=lambda c: RESULTS).check(ctx("Steel: 7.8."))
        assert (verdict.action, verdict.reason) == ("allow", None)

    def test_the_question_is_a_source(self):
        guard = GroundingGuard(sources=lambda c: [])
        assert (
            guard.check(ctx("Titanium is not in the data.", question="Titanium?")).action == "allow"
        )
        assert guard.check(ctx("Titanium is not in the data.", question="Metal?")).action == "block"

    def test_only_the_current_user_message_is_the_question(self):
        history = (
            Message(role="user", content="Titanium?"),
            Message(role="assistant", content="No."),
        )
        verdict = GroundingGuard(sources=lambda c: []).check(ctx("Titanium.", history=history))
        assert verdict.action == "block"

    def test_without_tool_results_every_figure_is_ungrounded(self):
        verdict = GroundingGuard().check(ctx("Titanium is 4.5."))
        assert (verdict.action, verdict.reason) == ("block", "ungrounded")

    def test_the_context_tool_results_are_the_sources(self):
        context = ctx("Steel is 7.8, Titanium 4.5.").model_copy(update={"tool_results": RESULTS})
        verdict = GroundingGuard().check(context)
        assert verdict.annotations == {"ungrounded": ["4.5", "Titanium"]}

    def test_a_bad_mode_is_a_configuration_error(self):
        with pytest.raises(ConfigurationError, match="'block' or 'annotate'"):
            GroundingGuard("warn")

    def test_is_an_output_orbital_with_a_fingerprint_of_its_arguments(self):
        guard = GroundingGuard("annotate", allow=["ACME"])
        assert guard.side == "output"
        assert guard.name == "grounding_guard"
        assert guard.fingerprint != GroundingGuard().fingerprint

    def test_in_an_atom_the_nucleus_writes_the_answer_again(self):
        replies = iter(["Steel has a density of 9.1.", "Steel has a density of 7.8."])
        seen_guidance = []

        def nucleus(messages, guidance):
            seen_guidance.append(guidance)
            return next(replies)

        atom = Atom("t", nucleus=nucleus, output=[GroundingGuard(sources=lambda c: RESULTS)])
        result = atom.chat_sync("How dense is steel?")
        assert result.reply == "Steel has a density of 7.8."
        assert "no tool result" in seen_guidance[1][-1]
        assert result.report.output[0].results[0].reason == "ungrounded"


class TestInChatService:
    """GroundingGuard reads the turn's tool results from the context, across a confirmation."""

    def service(self, script: list[Any]) -> ChatService:
        return ChatService(
            store=MemoryStore(),
            provider=ScriptedProvider(script),
            toolset=FIXTURES["toy"].toolset(),
            atom_config=AtomConfig(output=[GroundingGuard()]),
        )

    async def test_a_made_up_figure_is_written_again(self):
        read = tool_call("query", {"manager": "MaterialManager", "filters": {"name": "Steel"}})
        chat = self.service([[read], ["Steel is 9.9 g/cm³."], ["Steel is 7.8 g/cm³."]])
        events = [e async for e in chat.run_turn(USER, "How dense is it?")]
        assert events[-1]["type"] == "done"
        assert events[-1]["reply"] == "Steel is 7.8 g/cm³."
        record = await chat.store.get_turn(events[-1]["turn_id"])
        first = record.report["output"][0]["results"][0]
        assert (first["action"], first["reason"]) == ("block", "ungrounded")

    async def test_results_before_a_confirmation_still_count_after_it(self):
        first = tool_call("query", {"manager": "ProjectManager", "order_by": ["id"], "limit": 1})
        rename = {"mutation": "renameProject", "input": {"project_id": 1, "name": "Artemis"}}
        chat = self.service(
            [[first], [tool_call("mutate", rename)], ["Apollo is now called Artemis."]]
        )
        events = [e async for e in chat.run_turn(USER, "Rename the first project to Artemis.")]
        assert events[-1]["type"] == "confirm_mutation"
        resumed = [e async for e in chat.resolve_confirmation(USER, events[-1]["id"], True)]
        assert resumed[-1]["reply"] == "Apollo is now called Artemis."


NAMES = st.sampled_from(["Steel", "Apollo", "Gear", "Mercury", "Cobalt"])
FIGURES = st.decimals(min_value=0, max_value=10_000, places=2, allow_nan=False)


@given(st.lists(st.tuples(NAMES, FIGURES), min_size=1, max_size=5))
def test_an_answer_built_from_the_results_is_grounded(rows):
    results = [{"data": [{"name": name, "value": str(value)} for name, value in rows]}]
    answer = " ".join(f"The {name} has {value}." for name, value in rows)
    assert ungrounded(answer, results) == ()


@given(st.lists(st.tuples(NAMES, FIGURES), min_size=1, max_size=5), FIGURES)
def test_a_figure_no_result_holds_is_found(rows, other):
    results = [{"data": [{"name": name, "value": str(value)} for name, value in rows]}]
    assume(all(abs(other - value) >= 1 for _, value in rows))  # else rounding may hold it
    assert str(other) in ungrounded(f"It is {other}.", results)


def test_a_numbered_lists_markers_are_no_claims() -> None:
    results = [{"data": [{"name": "Steel", "density": 7.85}, {"name": "Iron", "density": 7.87}]}]
    answer = "The materials:\n1. Steel (7.85)\n2) Iron (7.87)"
    assert ungrounded(answer, results) == ()
    assert ungrounded("1. Steel (8.2)", results) == ("8.2",)
