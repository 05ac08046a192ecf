"""Host capability providers: everything that differs between host applications (Revit, IFC, ...).

Adding a host application is one module and one line: a module exposing `PROVIDER`, an object with
the attributes and methods of `base.HostCapabilityProvider` (display names, script dialect, prompt
fragment, the views `capture_view` offers, epilogue, view policy, API index), and its entry in
`registry.PROVIDER_MODULES`. A host's `hello` is parsed once into a `hello.Hello`. The test suite's
host (tests/support/test_host.py) is a complete example, registered from the tests alone with
`registry.register_provider`.
"""
