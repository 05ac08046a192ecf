"""Two audiences on every refusal, cap and run ending (issue 22, item 7): the person reads plain words, the
model keeps its instructions; a run's ending (marker, usage line) and each call's start stay readable."""
from __future__ import annotations

from string import Formatter

import pytest

from cloud.prompts import message, template
from cloud.tools.result import PERSON_KEYS, ToolResult
from tests.support.client import write_script
from tests.support.spine import automate, say, session, tool_result_texts

FAILING = "doc.add('Door', 'X')\nraise ValueError('not yet')\n"
# Words that instruct the model; none may reach the person's text.
INSTRUCTIONS = ("Do not call", "execute_task_automation", "summarise honestly", "Tell the person",
                "Tell them", "describe to the person")


def _no_instructions(text: str) -> None:
    for words in INSTRUCTIONS:
        assert words not in text, (words, text)


def test_a_spent_fix_budget_reads_plainly_for_the_person_and_instructs_only_the_model(server, alice, host,
                                                                                     scripts_dir):
    turns = [automate(FAILING)] + [automate(FAILING + f"# fix {n}\n") for n in range(1, 7)] + [say("Stopped.")]
    spec = write_script(scripts_dir / "cap.json", turns)
    session_id = alice.new_session(host.host_id, spec)
    stream = alice.run(session_id, "add a door")

    (budget,) = stream.of("Metadata", "budget")
    assert budget["content"] == "Fix budget used up: 5 of 5 attempts after a failure. The agent stops changing " \
                                "the model in this run."
    capped = [m["metadata"] for m in stream.of("Metadata", "tool_result")][6]
    person = capped["person"]
    assert person["key"] == "fix_cap" and person["status"] == "not run" and person["marker"] == budget["content"]
    assert "Not run" in person["text"] and "5" in person["text"]
    _no_instructions(person["text"])
    _no_instructions(budget["content"])
    # The model's copy is untouched: it still tells the model what to do.
    texts = tool_result_texts(session(alice, session_id)["messages"])
    assert texts[6] == message("fix_cap", used=5, cap=5) and "Do not call execute_task_automation" in texts[6]
    # The stored full copy (what a reload shows) carries the same person's words and marker.
    stored = alice.call("GET", f"/api/sessions/{session_id}/results/{capped['tool_call_id']}").json()
    assert stored["person"] == person


@pytest.mark.parametrize(("policy", "key"), [("readonly", "readonly")])
def test_a_read_only_refusal_reads_plainly(server, alice, host, scripts_dir, policy, key):
    spec = write_script(scripts_dir / "ro.json", [automate("doc.add('Door', 'X')"), say("Read-only.")])
    session_id = alice.new_session(host.host_id, spec)
    assert alice.call("PUT", f"/api/sessions/{session_id}/policy", json={"policy": policy}).status_code == 200
    stream = alice.run(session_id, "add a door")
    (result,) = [m["metadata"] for m in stream.of("Metadata", "tool_result")]
    assert result["summary"] == message(key)  # the model's words, as before
    assert result["person"]["key"] == key and result["person"]["status"] == "not run"
    _no_instructions(result["person"]["text"])


def test_each_run_ending_is_kept_for_the_person_and_never_sent_to_the_model(server, alice, host, scripts_dir):
    spec = write_script(scripts_dir / "end.json", [automate("doc.add('Door', 'E')"), say("Done.")])
    session_id = alice.new_session(host.host_id, spec)
    stream = alice.run(session_id, "add a door")
    usage = stream.of("AgenticUsage")[-1]
    (call,) = stream.of("ToolCall")
    assert isinstance(call["metadata"]["started_at"], float)  # the page's wait counts from here

    body = session(alice, session_id)
    ends = [e for e in body["history"] if e["role"] == "run_end"]
    assert ends == [{"role": "run_end", "outcome": "complete", "text": "", "detail": {},
                     "usage": usage["metadata"], "usage_line": usage["content"]}]
    assert all(e["role"] != "run_end" for e in body["messages"])  # the model's view has none


@pytest.mark.parametrize("key", PERSON_KEYS)
def test_every_refusal_and_lost_answer_has_the_persons_own_words(key):
    values = {name: "3" for _, name, _, _ in Formatter().parse(template(key)) if name}
    model_text = message(key, **values)
    person = ToolResult("c1", "execute_task_automation", False, model_text).to_json()["person"]
    assert person["key"] == key and person["text"] != model_text and person["status"]
    _no_instructions(person["text"])


def test_the_terminal_shows_the_persons_words_for_a_refusal_and_the_result_itself_otherwise():
    import io

    from cloud.cli.printer import Printer

    refusal = message("readonly")
    shown = io.StringIO()
    printer = Printer(shown)
    printer.show({"type": "Metadata", "content": refusal,
                  "metadata": {"kind": "tool_result", **ToolResult("c1", "execute_task_automation", False,
                                                                   refusal).to_json()}})
    printer.show({"type": "Metadata", "content": "3 doors\n",
                  "metadata": {"kind": "tool_result", **ToolResult("c2", "execute_data_collection", True,
                                                                   "3 doors\n").to_json()}})
    text = shown.getvalue()
    _no_instructions(text)
    assert "3 doors" in text and refusal not in text
