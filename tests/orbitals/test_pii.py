import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chatomon import DEFAULT_REFUSAL, Atom, OrbitalContext, Side
from chatomon.errors import ConfigurationError
from chatomon.orbitals.pii import PII_KINDS, PIIGuard, PIIMatch, find_pii, redact_pii


def ctx(message: str, side: Side = "input") -> OrbitalContext:
    return OrbitalContext(side=side, message=message, annotations={}, turn_id="t")


def found(text: str, kinds=PII_KINDS) -> list[tuple[str, str]]:
    return [(match.kind, text[match.start : match.end]) for match in find_pii(text, kinds)]


class TestCards:
    @pytest.mark.parametrize(
        "card",
        [
            "4111 1111 1111 1111",
            "4111-1111-1111-1111",
            "4111111111111111",
            "5500 0000 0000 0004",
            "3782 822463 10005",
            "6011 0009 9013 9424",
        ],
    )
    def test_luhn_valid_numbers_are_cards(self, card):
        assert found(f"my card: {card}.") == [("credit_card", card)]

    @pytest.mark.parametrize(
        "number", ["4111 1111 1111 1112", "4111111111111112", "1234 5678 9012 3456"]
    )
    def test_luhn_invalid_numbers_are_not_cards(self, number):
        assert found(number, ["credit_card"]) == []
        assert found(number) == []

    def test_card_followed_by_more_digits(self):
        assert found("4111 1111 1111 1111 123") == [("credit_card", "4111 1111 1111 1111")]

    def test_too_short_or_too_long_runs(self):
        assert found("411111111111", ["credit_card"]) == []  # 12 digits
        assert found("41111111111111111111", ["credit_card"]) == []  # 20 digits, one group

    def test_lists_of_small_numbers_are_not_cards(self):
        assert found("1 2 3 4 5 6 7 8 9 1 2 3 0", ["credit_card"]) == []


class TestIbans:
    @pytest.mark.parametrize(
        "iban",
        [
            "GB82 WEST 1234 5698 7654 32",
            "DE89 3704 0044 0532 0130 00",
            "DE89370400440532013000",
            "gb82 west 1234 5698 7654 32",
            "FR14 2004 1010 0505 0001 3M02 606",
        ],
    )
    def test_valid_ibans(self, iban):
        assert found(f"IBAN {iban} please") == [("iban", iban)]

    @pytest.mark.parametrize(
        "text", ["GB82 WEST 1234 5698 7654 33", "DE88 3704 0044 0532 0130 00", "GB82 WEST"]
    )
    def test_wrong_checksum_or_length(self, text):
        assert found(text, ["iban"]) == []


class TestEmailsAndPhones:
    @pytest.mark.parametrize(
        "email", ["ada@example.org", "a.b+tag@mail.example.co.uk", "j_doe-1@sub.example.io"]
    )
    def test_emails(self, email):
        assert found(f"write to {email}, thanks") == [("email", email)]

    @pytest.mark.parametrize("text", ["x@y", "a @ b.com", "user@localhost", "@example.com"])
    def test_not_emails(self, text):
        assert found(text) == []

    @pytest.mark.parametrize(
        "phone",
        [
            "+44 20 7946 0958",
            "+1 (555) 123-4567",
            "+33 6 12 34 56 78",
            "+442079460958",
            "(555) 123-4567",
            "555-123-4567",
            "555.123.4567",
            "020 7946 0958",
            "06 12 34 56 78",
            "0171 1234567",
            "0044 20 7946 0958",
        ],
    )
    def test_phones(self, phone):
        assert found(f"call {phone} today") == [("phone", phone)]

    @pytest.mark.parametrize(
        "text",
        [
            "call 42",
            "order 123456",
            "2024-01-15",
            "01.02.2024",
            "12/05/2023",
            "10.0.0.1",
            "1.234.567.890",
            "version 0.12.3",
            "+1",
            "0123456789",
            "at 10:30",
            "$1,234.56",
        ],
    )
    def test_numbers_that_are_not_phones(self, text):
        assert found(text) == []


class TestFindPii:
    def test_kinds_filter_and_text_order(self):
        text = "ada@example.org, +44 20 7946 0958, 4111 1111 1111 1111"
        assert [match.kind for match in find_pii(text)] == ["email", "phone", "credit_card"]
        assert found(text, ["phone"]) == [("phone", "+44 20 7946 0958")]

    def test_overlaps_keep_the_iban(self):
        assert [m.kind for m in find_pii("DE89 3704 0044 0532 0130 00")] == ["iban"]

    def test_match_is_a_dataclass(self):
        assert find_pii("a@b.io") == [PIIMatch(kind="email", start=0, end=6)]

    @pytest.mark.parametrize("kinds", [[], ["ssn"], "email"])
    def test_invalid_kinds(self, kinds):
        with pytest.raises(ConfigurationError) as caught:
            find_pii("x", kinds)
        assert caught.value.field == "kinds"

    @given(st.text())
    def test_never_raises_and_spans_are_inside_the_text(self, text):
        matches = find_pii(text)
        for match in matches:
            assert 0 <= match.start < match.end <= len(text)
        assert all(a.end <= b.start for a, b in itertools.pairwise(matches))

    pieces = st.sampled_from(
        ["4111 1111 1111 1111", "GB82 WEST 1234 5698 7654 32", "ada@example.org",
         "+44 20 7946 0958", "(555) 123-4567", " ", "-", "+", "@", ".", "0", "7", "x", "\n"]
    )  # fmt: skip

    @settings(max_examples=300)
    @given(st.lists(st.one_of(pieces, st.text(max_size=5)), max_size=12).map("".join))
    def test_redacted_text_holds_no_detected_pii(self, text):
        redacted = redact_pii(text)
        verdict = PIIGuard(mode="redact").check(ctx(text, "output"))
        if verdict.reason == "pii_redacted":
            assert verdict.reply == redacted
            assert find_pii(redacted) == []
        else:
            assert verdict.action == "allow" or verdict.reason == "pii"


class TestPIIGuard:
    def test_block_mode_annotates_kinds_only(self):
        verdict = PIIGuard().check(ctx("I am ada@example.org, card 4111 1111 1111 1111"))
        assert (verdict.action, verdict.reason) == ("block", "pii")
        assert verdict.annotations == {"kinds": ["credit_card", "email"]}
        assert "ada" not in str(verdict)

    def test_clean_text_is_allowed(self):
        assert PIIGuard().check(ctx("My order 12345 arrived on 2024-01-15")).action == "allow"

    def test_kinds_restrict_detection(self):
        assert PIIGuard(kinds=["iban"]).check(ctx("ada@example.org")).action == "allow"

    def test_redact_on_output(self):
        reply = "Mail ada@example.org or pay to DE89 3704 0044 0532 0130 00."
        verdict = PIIGuard(mode="redact").check(ctx(reply, "output"))
        assert verdict.action == "block"
        assert verdict.reason == "pii_redacted"
        assert verdict.reply == "Mail [email removed] or pay to [iban removed]."

    def test_custom_replacement(self):
        verdict = PIIGuard(mode="redact", replacement="<{kind}>").check(ctx("a@b.io", "output"))
        assert verdict.reply == "<email>"
        assert (
            PIIGuard(mode="redact", replacement="***").check(ctx("a@b.io", "output")).reply == "***"
        )

    def test_redact_mode_blocks_on_input(self):
        verdict = PIIGuard(mode="redact", reply="No personal data, please.").check(ctx("a@b.io"))
        assert (verdict.reason, verdict.reply) == ("pii", "No personal data, please.")

    def test_redact_through_an_atom(self):
        atom = Atom(
            "t",
            nucleus=lambda m, g: "Reach Ada at ada@example.org or +44 20 7946 0958.",
            output=[PIIGuard(mode="redact")],
        )
        result = atom.chat_sync("How do I reach Ada?")
        assert result.report.final_action == "orbital_response"
        assert result.reply == "Reach Ada at [email removed] or [phone removed]."
        assert result.report.output[0].results[0].reason == "pii_redacted"

    def test_redact_guard_without_side_blocks_in_the_input_chain(self):
        atom = Atom("t", nucleus=lambda m, g: "unused", input=[PIIGuard(mode="redact")])
        result = atom.chat_sync("my card is 4111 1111 1111 1111")
        assert result.report.final_action == "blocked"
        assert result.reply == DEFAULT_REFUSAL

    def test_block_through_an_atom_input(self):
        atom = Atom("t", nucleus=lambda m, g: "ok", input=[PIIGuard(side="input")])
        assert atom.chat_sync("IBAN GB82 WEST 1234 5698 7654 32").report.final_action == "blocked"
        assert atom.chat_sync("IBAN GB82 WEST 1234 5698 7654 33").report.final_action == "answered"

    def test_redact_on_input_side_is_refused(self):
        with pytest.raises(ConfigurationError) as caught:
            PIIGuard(mode="redact", side="input")
        assert caught.value.field == "side"

    @pytest.mark.parametrize(
        ("arguments", "field"),
        [
            ({"mode": "mask"}, "mode"),
            ({"kinds": ["passport"]}, "kinds"),
            ({"kinds": []}, "kinds"),
            ({"replacement": ""}, "replacement"),
            ({"replacement": "{other}"}, "replacement"),
            ({"replacement": "{}"}, "replacement"),
            ({"replacement": "{kind"}, "replacement"),
            ({"replacement": "x@example.com"}, "replacement"),
            ({"replacement": 5}, "replacement"),
            ({"reply": ""}, "reply"),
        ],
    )
    def test_invalid_configuration(self, arguments, field):
        with pytest.raises(ConfigurationError) as caught:
            PIIGuard(**arguments)
        assert caught.value.field == field
