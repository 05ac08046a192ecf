# Sourced by scripts/demo and scripts/test (not run on its own): the virtual environment they use.
#
# Debian and Ubuntu mark their Python "externally managed" (PEP 668): `pip install` outside a virtual
# environment is refused. So the README's commands install into .venv inside this checkout (ignored by
# git; delete it to start over), or into the virtual environment already active, or into $NEXUS_VENV.
# The distribution's python3 needs its venv module for that (Debian: python3-venv), installed when missing.
NEXUS_VENV="${NEXUS_VENV:-${VIRTUAL_ENV:-$PWD/.venv}}"
if [ ! -x "$NEXUS_VENV/bin/python" ]; then
  base_python="${PYTHON:-python3}"
  echo "== creating a virtual environment in $NEXUS_VENV with $("$base_python" --version 2>&1) ($(command -v "$base_python"))"
  if ! "$base_python" -m venv "$NEXUS_VENV" >/dev/null 2>&1; then
    rm -rf "$NEXUS_VENV"
    echo "== installing Debian's python3-venv with apt-get (this Python has no working venv module; needs root or sudo; a minute or so)"
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq && $SUDO apt-get install -y -qq python3-venv >/dev/null
    "$base_python" -m venv "$NEXUS_VENV"
  fi
fi
NEXUS_PYTHON="$NEXUS_VENV/bin/python"
export PATH="$NEXUS_VENV/bin:$PATH"  # `nexus` and the tests' subprocesses come from the environment
echo "== using $NEXUS_PYTHON"
