"""What a model is shown about team skills (issue 19, item 3): in a real session the system prompt says when
to prefer a proven skill (ask `find_skill` before writing an automation, then `run_skill`), and every turn
offers both tools with their input schemas."""
from __future__ import annotations

from tests.support.client import write_script


def test_the_model_is_told_when_to_prefer_a_skill_and_offered_both_tools(server, alice, host, scripts_dir,
                                                                          scripted_requests):
    spec = write_script(scripts_dir / "hello.json", [[{"text": "ok"}]])
    sid = alice.new_session(host.host_id, spec)
    alice.run(sid, "renumber the doors of Level 1")
    assert scripted_requests, "the model was never asked"
    request = scripted_requests[0]
    guidance = [line for line in request.system.splitlines() if "`find_skill`" in line]
    assert len(guidance) == 1, request.system
    assert "`run_skill`" in guidance[0] and "before writing" in guidance[0].lower()
    tools = {tool["name"]: tool for tool in request.tools}
    assert tools["find_skill"]["input_schema"]["required"] == ["query"]
    assert {"name", "args"} <= set(tools["run_skill"]["input_schema"]["properties"])
    assert "execute_task_automation" in tools  # the skill tools come beside writing code, not instead of it
