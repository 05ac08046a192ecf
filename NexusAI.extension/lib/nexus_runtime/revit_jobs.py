"""What a job does once Revit's main thread picked it up. Revit-facing (called from the handler)."""
import sys

from nexus_runtime import context_snapshot, doctor, doctor_report, executor, image_export, protocol, show_elements


def make_job_runner(log, services):
    def run_job(job, uiapp):
        if job.kind == "execute":
            return executor.execute(uiapp, job.message, log, services)
        if job.kind == "export_view":
            return image_export.export_view(uiapp, job.message, log)
        if job.kind == "context":
            return context_snapshot.describe(uiapp, job.message)
        if job.kind == "show_elements":
            return show_elements.show_elements(uiapp, job.message, log)
        if job.kind == "doctor":
            return run_doctor(uiapp, job, log, services)
        return protocol.failed_reply_for(job.message, "Unsupported", "unsupported job " + str(job.kind))
    return run_job


def run_doctor(uiapp, job, log, services):
    """The Doctor's report; with `show` (the ribbon button) it also goes to the server at once and is shown
    in Revit as a table until the person closes it."""
    message = job.message
    rows = doctor.revit_checks(uiapp, job, services.settings(), log)
    rows.append(message.get("network") or doctor_report.not_run("server", "no network check was made"))
    application = uiapp.Application
    result = doctor_report.doctor_result(
        message.get("request_id"), rows, "Revit {0} ({1})".format(application.VersionNumber, application.VersionBuild),
        sys.version.replace("\n", " "))
    if message.get("show"):
        if services.can_send():
            services.send(result)  # before the window: the server gets it even while the table is open
        from nexus_runtime.doctor_window import DoctorWindow
        DoctorWindow(doctor_report.table_text(result), doctor_report.phrase(
            "sent_note" if services.can_send() else "not_sent_note")).ShowDialog()
    return result
