import pytest

from chatomon import Atom, OrbitalContext, Side
from chatomon.errors import ConfigurationError
from chatomon.orbitals.topics import DEFAULT_REDIRECT, TopicGuard


def ctx(message: str, side: Side = "input") -> OrbitalContext:
    return OrbitalContext(side=side, message=message, annotations={}, turn_id="t")


PARCELS = {"parcels": ["parcel", "delivery", "tracking number"], "billing": ["invoice"]}


def test_allowed_topic_passes_with_annotations():
    verdict = TopicGuard(allowed=PARCELS).check(ctx("My PARCEL and my invoice"))
    assert verdict.action == "allow"
    assert verdict.annotations == {"topics": ["parcels", "billing"]}


def test_off_topic_gets_the_redirect():
    verdict = TopicGuard(allowed=PARCELS, redirect="Parcels only.").check(ctx("Nice weather"))
    assert (verdict.action, verdict.reply, verdict.reason) == (
        "respond",
        "Parcels only.",
        "off_topic",
    )
    assert verdict.annotations == {"topics": []}


def test_keywords_match_whole_words_and_phrases():
    guard = TopicGuard(allowed=PARCELS)
    assert guard.check(ctx("my Tracking\n  Number is lost")).action == "allow"
    assert guard.check(ctx("parcels")).action == "respond"  # "parcel" is a whole word


def test_forbidden_topic_wins():
    guard = TopicGuard(allowed=PARCELS, forbidden={"politics": ["election", "party"]})
    verdict = guard.check(ctx("Will the election delay my parcel?"))
    assert (verdict.action, verdict.reason) == ("respond", "forbidden_topic")
    assert verdict.annotations == {"topics": ["politics"]}
    assert verdict.reply == DEFAULT_REDIRECT


def test_forbidden_only_allows_everything_else():
    guard = TopicGuard(forbidden=["Religion", "politics"])
    assert guard.check(ctx("Hello")).action == "allow"
    assert guard.check(ctx("hello")).annotations is None
    assert guard.check(ctx("RELIGION")).annotations == {"topics": ["religion"]}


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({}, "allowed"),
        ({"allowed": {}}, "allowed"),
        ({"allowed": []}, "allowed"),
        ({"allowed": "parcel"}, "allowed"),
        ({"allowed": {"parcels": []}}, "allowed['parcels']"),
        ({"allowed": {"": ["x"]}}, "allowed"),
        ({"forbidden": {"politics": ["", "vote"]}}, "forbidden['politics']"),
        ({"forbidden": ["x"], "redirect": ""}, "redirect"),
    ],
)
def test_invalid_configuration(arguments, field):
    with pytest.raises(ConfigurationError) as caught:
        TopicGuard(**arguments)
    assert caught.value.field == field


def test_in_an_atom():
    atom = Atom(
        "t",
        nucleus=lambda m, g: "It arrives tomorrow.",
        input=[TopicGuard(allowed=PARCELS, redirect="I can only help with parcels.")],
    )
    on_topic = atom.chat_sync("When does my delivery arrive?")
    assert (on_topic.report.final_action, on_topic.reply) == ("answered", "It arrives tomorrow.")
    off_topic = atom.chat_sync("Tell me a joke")
    assert off_topic.report.final_action == "orbital_response"
    assert off_topic.reply == "I can only help with parcels."
    assert off_topic.report.input[0].reason == "off_topic"


def test_on_the_output_side_the_redirect_replaces_the_reply():
    atom = Atom(
        "t",
        nucleus=lambda m, g: "Let me tell you about the election.",
        output=[TopicGuard(forbidden=["election"], redirect="Let's stay on parcels.")],
    )
    result = atom.chat_sync("hi")
    assert (result.report.final_action, result.reply) == (
        "orbital_response",
        "Let's stay on parcels.",
    )
