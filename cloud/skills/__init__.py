"""The team library of skills: a committed, reviewed automation kept as a named, versioned tool.

library.py stores skills per team (immutable versions checked by sha256), parameters.py proposes and binds
parameters from a script's literals, saving.py turns a kept automation into a skill, pyrevit.py exports
pushbutton bundles.
"""
