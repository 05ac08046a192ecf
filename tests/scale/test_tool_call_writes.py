"""Issue 29 item 4: a run driven on B writes a tool call's state and the person's copy of its result as one
statement on PostgreSQL (cloud/store/database.py, `write(together=True)`). Another process sees what it relies
on: the model's turn with its tool call and the script's audit row while the change is held, the result, the
state and the whole transcript once the run has ended."""
from __future__ import annotations

from cloud.store import Store
from tests.scale.pair import held_under_ask, host_on_a
from tests.support.client import write_script
from tests.support.spine import assert_transcript_valid, automate, say


def test_a_held_automation_run_on_b_is_in_the_store_while_held_and_its_result_once_kept(instances, scripts_dir, database_url):
    a, b = instances
    with host_on_a(a, b) as pair:
        spec = write_script(scripts_dir / "held.json", [automate("doc.add('Wall', 'Held wall')"), say("Kept.")])
        session_id, run, call_id = held_under_ask(pair, spec, "add a wall")
        reader = Store(database_url)  # a third process's view, while the run waits for the decision
        try:
            calls = [part["id"] for entry in reader.transcript(session_id) if entry["role"] == "assistant"
                     for part in entry["content"] if part.get("type") == "tool_call"]
            assert calls == [call_id]
            assert sorted((r["tool_call_id"], r["kind"]) for r in reader.audit(session_id=session_id)) == \
                [(call_id, "epilogue"), (call_id, "model")]
        finally:
            reader.close()
        response = pair.on_a.call("POST", f"/api/sessions/{session_id}/approval",
                                  json={"tool_call_id": call_id, "decision": "keep"})
        assert response.status_code == 202, response.text
        assert run.join(30).last == {"type": "Complete", "content": "Kept."}
    reader = Store(database_url)
    try:
        transcript = reader.transcript(session_id)
        assert_transcript_valid(transcript)
        assert [e["role"] for e in transcript] == ["user", "assistant", "tool", "assistant", "run_end"]
        assert reader.get_result(session_id, call_id)["committed"] is True
        row = reader.get_session(session_id)
        assert row["status"] == "idle" and row["state"]["last_task_committed"] is True
        assert row["state"]["current_script"] == "doc.add('Wall', 'Held wall')"
    finally:
        reader.close()
