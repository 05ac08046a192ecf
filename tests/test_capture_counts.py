"""What a view image could not show in full reaches the model in words: undrawn elements, simplified, boxed and
sketched ones."""
from __future__ import annotations

from tests.support.client import write_script
from tests.support.spine import say, session, tool_result_texts


def test_the_model_is_told_how_many_elements_were_undrawn_and_drawn_as_boxes(alice, host, scripts_dir):
    host.undrawn, host.simplified, host.boxed, host.sketched = 1, 4, 3, 2
    spec = write_script(scripts_dir / "view.json", [
        [{"tool_call": {"name": "capture_view", "input": {"view": "Level 1"}}}], say("Shown.")])
    session_id = alice.new_session(host.host_id, spec)
    stream = alice.run(session_id, "show level 1")
    assert stream.last["content"] == "Shown."
    (text,) = tool_result_texts(session(alice, session_id)["messages"])
    assert "1 element(s) of this view could not be drawn" in text
    assert "4 element(s) of this view are drawn simplified" in text
    assert "3 element(s) of this view are drawn as plain boxes" in text
    assert "2 element(s) of this view are drawn only from their footprint or axis" in text
    (result,) = [c["metadata"] for c in stream.of("Metadata", "tool_result")]
    image = result["image"]
    assert (image["undrawn"], image["simplified"], image["boxed"], image["sketched"]) == (1, 4, 3, 2)  # the person's copy too


def test_the_model_is_told_that_a_later_capture_draws_the_bodies_built_in_the_background(alice, host, scripts_dir):
    host.undrawn, host.boxed, host.sketched, host.building = 0, 6, 0, 6
    spec = write_script(scripts_dir / "view.json", [
        [{"tool_call": {"name": "capture_view", "input": {"view": "Level 1"}}}], say("Shown.")])
    session_id = alice.new_session(host.host_id, spec)
    alice.run(session_id, "show level 1")
    (text,) = tool_result_texts(session(alice, session_id)["messages"])
    assert "6 element(s) of this view are drawn as plain boxes" in text
    assert "building the shape of 6 of them in the background" in text and "capture the view again" in text
