"""JSON Schemas (draft 2020-12) that pin the wire contract between the cloud and host runtimes."""
from pathlib import Path

SCHEMA_DIR = Path(__file__).resolve().parent
