"""NexusAI's Revit runtime: serves execute (with hold/decide), export_view, context and doctor to the cloud
over an outbound websocket.

Two layers, kept apart on purpose:
- plain modules (protocol, jobs, dispatch, router, connection, transport, backoff, changes, failure_log,
  script_runner, deadline, holds, review_text, guard_log, external_changes, run_services, sender,
  settings, host_info, ids, png, image_files, browser_choice, log, doctor_report): no `clr`, no Revit API,
  no WPF; they run unchanged under IronPython 2.7 and CPython 3 and are tested for real.
- thin Revit-facing modules (event_handler, revit_jobs, executor, failure_handling, change_tracking,
  guards, integrity, external_tracking, hold_review, review_view, review_window, image_export, views,
  context_snapshot, transport_clientwebsocket, config_store, registry, webview, pane, runtime, main_window,
  message_pump, doctor, doctor_window): everything that touches Autodesk.Revit, System, WPF or pyRevit,
  tested against a fake.

Every file uses Python 2.7 syntax (IronPython 2.7 is pyRevit's default engine).
"""

RUNTIME_VERSION = "0.3.0"
