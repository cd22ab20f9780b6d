"""The `axlint` console script (and `python -m axlint`): the settings of one short-lived process, made before click
and the commands are imported.

This module imports nothing at the top, so that the collector's threshold applies to all of start-up (click and
`typing` included, which otherwise ran a dozen young-generation collections before `axlint.cli` was loaded), and
the code cache is in place before any of axlint's dataclasses are created. A program that imports `axlint.cli`
keeps its own settings.
"""
from __future__ import annotations

GC_THRESHOLD = 50_000
"""Allocations between two young-generation collections in the `axlint` process (Python's default is 700).
Start-up creates about 40,000 objects that live until exit (modules, classes, rules, schemas, the catalog) and
almost no cyclic garbage: each collection that runs before exit walks them again, and with 700 or 10,000 those
collections were ~10 ms of a single check. A young collection costs in proportion to the objects it walks, so over
a long run the threshold changes how often the collector runs, not how much it does; it also bounds the cyclic
garbage held between two collections (the corpus of 252 configs makes ~470 objects of it in all)."""


def main() -> None:
    """Set up the process (collector, output streams, PyYAML's unused regexes, dataclass code cache), run the click
    group, and end the process with its exit status without tearing the interpreter down (`exit_now`)."""
    import gc
    import sys

    gc.set_threshold(GC_THRESHOLD, *gc.get_threshold()[1:])
    for stream in (sys.stdout, sys.stderr):  # a lone surrogate (a file name that is not UTF-8) prints as `\udcff`
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    from axlint import codecache, lazypattern

    lazypattern.defer(lazypattern.YAML_NON_PRINTABLE)  # before `yaml` is imported
    lazypattern.defer(*lazypattern.YAML_TIMESTAMP)
    code = codecache.install()  # before the command's modules create their dataclasses
    from axlint.cli import cli

    status: object = None
    try:
        cli(prog_name="axlint")
    except SystemExit as done:
        status = done.code
    finally:
        code.save()
    if status is None or isinstance(status, int):
        exit_now(status or 0)
    sys.exit(status)


def exit_now(status: int) -> None:
    """Flush the standard streams and end the process with `status` at once (``os._exit``).

    The interpreter's own shutdown frees every module, class, rule, schema and catalog entry one by one, ~5 ms of a
    one-config check (benchmarks/README.md); nothing is left to do by then:
    click has ended the command, the cache files are written and replaced atomically, and the parallel linter's
    processes are joined. Output that cannot be flushed (a closed pipe) is dropped quietly, as click does."""
    import os
    import sys

    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(status)

