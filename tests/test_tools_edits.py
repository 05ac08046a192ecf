"""Anchored edits on the server's current script: hits, misses, duplicates, lenient whitespace, advice."""
from __future__ import annotations

from cloud.tools.edits import apply_edits
from tests.support.client import write_script
from tests.support.spine import automate, edit, say, session, tool_result_texts

SCRIPT = """\
count = 0
for i in doc.by_class('Door'):
    doc.elements[i]['name'] = 'A'
    count += 1
for i in doc.by_class('Wall'):
    doc.elements[i]['name'] = 'A'
    count += 1
print('renamed', count)
"""


def _executed_codes(host) -> list[str]:
    return [m["code"] for m in host.received if m["type"] == "execute"]


def _names(host, cls: str) -> set[str]:
    return {host.document.elements[i]["name"] for i in host.document.by_class(cls)}


def test_edits_over_the_loop_hit_miss_duplicate_and_line(server, alice, host, scripts_dir):
    spec = write_script(scripts_dir / "edits.json", [
        automate(SCRIPT),
        edit({"old": "print('renamed', count)", "new": "print('renamed', count)"},
             {"old": "doc.elements[i]['name'] = 'Z'", "new": "doc.elements[i]['name'] = 'B'"}),
        edit({"old": "doc.elements[i]['name'] = 'A'", "new": "doc.elements[i]['name'] = 'B'"}),
        edit({"old": "doc.elements[i]['name'] = 'A'", "new": "doc.elements[i]['name'] = 'W'", "line": 6}),
        say("Walls are W."),
    ])
    session_id = alice.new_session(host.host_id, spec)
    stream = alice.run(session_id, "rename")
    assert stream.last["content"] == "Walls are W."

    codes = _executed_codes(host)
    assert len(codes) == 2  # the miss and the ambiguous anchor ran nothing
    assert codes[1] == SCRIPT.replace("    doc.elements[i]['name'] = 'A'\n    count += 1\nprint",
                                      "    doc.elements[i]['name'] = 'W'\n    count += 1\nprint")
    assert _names(host, "Door") == {"A"} and _names(host, "Wall") == {"W"}

    first, miss, ambiguous, chosen = tool_result_texts(session(alice, session_id)["messages"])
    assert "edit 2 of 2 could not be applied: the old text was not found" in miss
    assert "Edits applied before it: 1. Nothing was run" in miss
    assert "   6|     doc.elements[i]['name'] = 'A'" in miss  # the nearest lines, numbered
    assert "occurs 2 times (lines 3, 6); add `line` to choose one" in ambiguous
    assert "Edits applied: 1." in chosen and "committed" in chosen
    person = stream.of("Metadata", "tool_result")
    assert [p["metadata"]["ok"] for p in person] == [True, False, False, True]


def test_lenient_whitespace_edit_runs_with_the_script_indentation(server, alice, host, scripts_dir):
    spec = write_script(scripts_dir / "lenient.json", [
        automate(SCRIPT),
        # Wrong indentation and trailing spaces: matched line by line, re-indented to the script's own.
        edit({"old": "for i in doc.by_class('Wall'):  \n  doc.elements[i]['name'] = 'A'",
              "new": "for i in doc.by_class('Wall'):\n  doc.elements[i]['name'] = 'Partition'"}),
        say("done"),
    ])
    session_id = alice.new_session(host.host_id, spec)
    alice.run(session_id, "rename walls")
    codes = _executed_codes(host)
    assert len(codes) == 2
    assert "for i in doc.by_class('Wall'):\n    doc.elements[i]['name'] = 'Partition'\n    count += 1" in codes[1]
    assert _names(host, "Wall") == {"Partition"}


def test_advisory_notes_reach_the_model_and_the_script_still_runs(server, alice, host, scripts_dir):
    spec = write_script(scripts_dir / "advice.json", [
        automate(SCRIPT),
        edit({"old": SCRIPT[SCRIPT.index("for i in doc.by_class('Door')"):],
              "new": "print('nothing to do')\nprint('nothing to do')\n"}),
        edit({"old": "print('nothing to do')", "new": "print('nothing to do'", "line": 3}),
        say("done"),
    ])
    session_id = alice.new_session(host.host_id, spec)
    alice.run(session_id, "go")
    codes = _executed_codes(host)
    assert len(codes) == 3  # advice never blocks, not even a script that does not parse
    _, shrunk, broken = tool_result_texts(session(alice, session_id)["messages"])
    assert "Notes on the merged edits (advisory; the script ran anyway)" in shrunk
    assert "line 3 duplicates the line before it" in shrunk
    assert "the script shrank by more than half" in shrunk
    assert "the merged script does not parse" not in shrunk
    assert "the merged script does not parse" in broken and "SyntaxError" in broken
    assert "rolled back" in broken


def test_edits_without_a_current_script_ask_for_the_full_script(server, alice, host, scripts_dir):
    spec = write_script(scripts_dir / "noscript.json", [
        edit({"old": "a", "new": "b"}), say("I need to send the whole script."),
    ])
    session_id = alice.new_session(host.host_id, spec)
    alice.run(session_id, "go")
    assert _executed_codes(host) == []
    (text,) = tool_result_texts(session(alice, session_id)["messages"])
    assert "no current script" in text and "`code`" in text


# apply_edits itself

def test_exact_hit_replaces_only_the_anchor():
    outcome = apply_edits(SCRIPT, [{"old": "print('renamed', count)", "new": "print(count)"}])
    assert outcome.script == SCRIPT.replace("print('renamed', count)", "print(count)")
    assert outcome.applied == [0] and outcome.notes == []


def test_duplicate_anchor_without_line_is_refused_and_with_line_picks_the_nearest():
    edit_ = {"old": "    count += 1", "new": "    count += 2"}
    refused = apply_edits(SCRIPT, [edit_])
    assert refused.script is None and "occurs 2 times (lines 4, 7)" in refused.problem
    for line, expected_line in ((4, 4), (7, 7), (1, 4), (100, 7)):
        chosen = apply_edits(SCRIPT, [{**edit_, "line": line}])
        assert chosen.script.split("\n")[expected_line - 1] == "    count += 2"
        assert chosen.script.count("count += 2") == 1


def test_miss_reports_the_edits_applied_before_it_and_changes_nothing():
    outcome = apply_edits(SCRIPT, [
        {"old": "count = 0", "new": "count = 10"},
        {"old": "for i in doc.by_class('Window'):", "new": "x"},
    ])
    assert outcome.script is None and outcome.applied == [0]
    assert "edit 2 of 2 could not be applied" in outcome.problem
    assert "Edits applied before it: 1." in outcome.problem
    assert "for i in doc.by_class('Door'):" in outcome.problem or "for i in doc.by_class('Wall'):" in outcome.problem


def test_a_miss_with_nothing_similar_says_so():
    outcome = apply_edits(SCRIPT, [{"old": "zzzzzzzzzzzzzzzzzzzzzzzz", "new": "y"}])
    assert outcome.script is None and "no similar lines found" in outcome.problem


def test_edits_apply_in_order_on_the_result_of_the_previous_one():
    outcome = apply_edits(SCRIPT, [{"old": "count = 0", "new": "total = 0"},
                                   {"old": "total = 0", "new": "total = 100"}])
    assert outcome.script.startswith("total = 100\n")


def test_validators_advise_on_indentation_shrinking_and_syntax():
    outcome = apply_edits(SCRIPT, [{"old": "    count += 1\nfor", "new": "  count += 1\nfor"}])
    assert "edit 1 changes the indentation of its first line" in outcome.notes
    assert any("does not parse" in n for n in outcome.notes)
    assert outcome.script is not None
    shrunk = apply_edits(SCRIPT, [{"old": SCRIPT[20:], "new": "\n"}])
    assert any("shrank by more than half" in n for n in shrunk.notes)
    python2 = apply_edits(SCRIPT, [{"old": "print('renamed', count)", "new": "print 'renamed', count"}],
                          check_syntax=False)
    assert python2.notes == []  # an IronPython 2.7 host's dialect is not judged by CPython 3's parser


def test_lenient_match_maps_the_models_indentation_onto_the_scripts():
    two_spaces = {"old": "for i in doc.by_class('Wall'):\n  doc.elements[i]['name'] = 'A'\n  count += 1",
                  "new": "for i in doc.by_class('Wall'):\n  if i > 0:\n    doc.elements[i]['name'] = 'B'\n  count += 1"}
    outcome = apply_edits(SCRIPT, [two_spaces])
    assert "for i in doc.by_class('Wall'):\n    if i > 0:\n      doc.elements[i]['name'] = 'B'\n    count += 1\n" \
        in outcome.script
    assert outcome.notes == []  # it parses
    unindented = apply_edits(SCRIPT, [{"old": "for i in doc.by_class('Wall'):\ndoc.elements[i]['name'] = 'A'",
                                       "new": "for i in doc.by_class('Wall'):\ndoc.elements[i]['name'] = 'C'"}])
    assert "\n    doc.elements[i]['name'] = 'C'\n" in unindented.script  # uniformly shifted to the script's level
    flattened = apply_edits(SCRIPT, [{"old": "doc.elements[i]['name'] = 'A'\ncount += 1\nprint('renamed', count)",
                                      "new": "doc.elements[i]['name'] = 'C'\ncount += 1\nprint(count)"}])
    assert flattened.script.endswith("    doc.elements[i]['name'] = 'C'\n    count += 1\nprint(count)\n")


def test_a_short_merged_script_is_shown_whole_and_numbered():
    from cloud.tools.edits import merged_excerpt

    text, whole = merged_excerpt("a = 1\nb = 2\n", "a = 1\nb = 3\n")
    assert whole and text == "   1| a = 1\n   2| b = 3\n   3| "


def test_a_long_merged_script_is_shown_around_each_edit_with_line_numbers_as_it_ran():
    from cloud.tools.edits import merged_excerpt

    before = "\n".join(f"x{n} = {n}" for n in range(100))
    after = before.replace("x10 = 10", "x10 = 'ten'").replace("x80 = 80", "x80 = 80\nextra = True")
    text, whole = merged_excerpt(before, after)
    assert not whole
    assert "  11| x10 = 'ten'" in text and "  82| extra = True" in text and "  83| x81 = 81" in text
    assert "   8| x7 = 7" in text and "   7| x6 = 6" not in text  # three lines of context each side
    assert text.startswith("   ...") and text.endswith("   ...") and text.count("   ...") == 3
