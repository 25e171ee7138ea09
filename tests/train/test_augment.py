"""Augmentation by consistent renaming: every occurrence of a synthetic name changes the same way in every part of
a conversation (so the answer still matches the output), other text stays, and copies differ from each other."""

from __future__ import annotations

import json
import random

from terminus.train.augment import Renamer, fresh_names, renamed_copies, vocabulary


def test_names_are_renamed_inside_identifiers_in_every_casing():
    rename = Renamer({"invoice_total": "kobe_rila", "billing": "zomu"})
    assert rename("cd backend/billing && ctest") == "cd backend/zomu && ctest"
    assert rename("failing: invoice_total_typical; at tests/test_billing_more.c:9") == (
        "failing: kobe_rila_typical; at tests/test_zomu_more.c:9"
    )
    assert rename("--- FAIL: TestInvoiceTotalTypical") == "--- FAIL: TestKobeRilaTypical"
    assert rename("expect(invoiceTotal(1, 2))") == "expect(kobeRila(1, 2))"
    # not part of another word, and other words untouched
    assert rename("billings rebilling Total Test time 3 passed") == "billings rebilling Total Test time 3 passed"


def test_fresh_names_are_new_and_distinct():
    words = vocabulary()
    mapping = fresh_names(words, random.Random(0))
    assert set(mapping) == set(words)
    assert len(set(mapping.values())) == len(words) and not set(mapping.values()) & set(words)
    assert all(len(new.split("_")) == len(old.split("_")) for old, new in mapping.items())


def test_copies_rename_query_commands_output_and_answer_consistently():
    call = {"type": "function", "function": {"name": "run_in_terminal", "arguments": json.dumps(
        {"command": "cd services/payroll && pytest -q", "timeout_ms": 60000})}}  # fmt: skip
    messages = [
        {"role": "user", "content": "Run the payroll tests.", "tool_calls": None, "name": None},
        {"role": "assistant", "content": "", "tool_calls": [call], "name": None},
        {
            "role": "tool",
            "content": "FAILED tests/test_payroll.py::test_gross_pay_typical\n1 failed, 5 passed",
            "tool_calls": None,
            "name": "run_in_terminal",
        },
        {
            "role": "assistant",
            "content": "<final_answer>\nCommand: cd services/payroll && pytest -q\nSummary: "
            "1 failed, 5 passed; failing: test_gross_pay_typical\n</final_answer>",
            "tool_calls": None,
            "name": None,
        },
    ]
    copies = renamed_copies(messages, 2, "seed:trajectory")
    assert len(copies) == 2 and copies[0] != copies[1]
    for copy in copies:
        text = json.dumps(copy)
        assert "payroll" not in text and "gross_pay" not in text and "1 failed, 5 passed" in text
        project = json.loads(copy[1]["tool_calls"][0]["function"]["arguments"])["command"].split()[1].split("/")[1]
        failing = copy[2]["content"].split("::")[1].split("\n")[0]
        assert project in copy[0]["content"] and project in copy[3]["content"]
        assert failing in copy[3]["content"]
    assert messages[0]["content"] == "Run the payroll tests."  # the input is not changed
