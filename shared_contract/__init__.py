"""JSON Schemas (draft 2020-12) that pin the wire contract between the cloud and host runtimes, and
`validate` (checking messages, tool inputs and chunks against them; the content hash that stamps the
scripts sent to hosts), importable by every party without importing any of the others."""
from pathlib import Path

SCHEMA_DIR = Path(__file__).resolve().parent
