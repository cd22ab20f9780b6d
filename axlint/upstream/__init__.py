"""Axolotl's own start-up validation, run at lint time when Axolotl is installed (`check --axolotl-validators`).

`axolotl_validation` is the worker that runs inside an interpreter with Axolotl (stdlib and Axolotl only, never
axlint); `validators` is axlint's side: it starts the worker, sends it configs and turns its answers into findings.
Nothing here is imported unless the option is on, so the default check path never pays for Axolotl's imports.
"""
