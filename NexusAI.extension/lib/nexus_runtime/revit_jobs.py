"""What a job does once Revit's main thread picked it up. Revit-facing (called from the handler)."""
from nexus_runtime import context_snapshot, executor, image_export, protocol


def make_job_runner(log, services):
    def run_job(job, uiapp):
        if job.kind == "execute":
            return executor.execute(uiapp, job.message, log, services)
        if job.kind == "export_view":
            return image_export.export_view(uiapp, job.message, log)
        if job.kind == "context":
            return context_snapshot.describe(uiapp, job.message)
        return protocol.failed_reply_for(job.message, "Unsupported", "unsupported job " + str(job.kind))
    return run_job
