"""Batch runs: one reviewed script or one prompt applied to many IFC models, each in its own host process,
transaction and report; on a real task queue (Dramatiq on Redis) or an embedded in-process pool."""
