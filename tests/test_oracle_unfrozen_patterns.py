"""Axolotl's reading of ``unfrozen_parameters`` (0.18.0 ``utils/freeze.py``, ``LayerNamePattern``), held to axlint's
(``params.unfrozen_regex``, ``params.unfrozen_pattern_error``) in the oracle venv of tests/oracle: which parameter
names each pattern unfreezes (MEM011, the trainable count), and the ``re.error`` of a pattern that does not compile
(AX242)."""
from __future__ import annotations

import json
import os
import subprocess

from axlint.memory.params import unfrozen_pattern_error, unfrozen_regex
from tests.corpus import ROOT
from tests.oracle.venv import oracle_python

PATTERNS = ["^model.embed_tokens.weight$[:32000]", "model.layers.2[0-9]+.mlp", "model.visual.*", "layers.+mlp",
            "lm_head", "model.layers.1", "(unclosed", "model.layers.[0-9+.mlp", "*.weight", "model.layers.[0-"]
NAMES = ["model.embed_tokens.weight", "model.layers.21.mlp.up_proj.weight", "model.layers.3.mlp.up_proj.weight",
         "model.layers.1.self_attn.q_proj.weight", "model.layers.12.mlp.down_proj.weight",
         "model.visual.blocks.0.attn.qkv.weight", "lm_head.weight", "model.layersXmlp", "model.embed_tokensXweight"]

JUDGE = """
import json, re, sys
from axolotl.utils.freeze import LayerNamePattern
patterns, names = json.loads(sys.argv[1]), json.loads(sys.argv[2])
out = {}
for pattern in patterns:
    try:
        compiled = LayerNamePattern(pattern)
    except re.error as exc:
        out[pattern] = {"error": str(exc)}
    else:
        out[pattern] = {"matches": [name for name in names if compiled.match(name)]}
print(json.dumps(out))
"""


def test_axlint_reads_unfrozen_patterns_as_axolotl_does() -> None:
    done = subprocess.run([str(oracle_python()), "-c", JUDGE, json.dumps(PATTERNS), json.dumps(NAMES)],
                          capture_output=True, text=True, check=True, cwd=ROOT,
                          env={**os.environ, "AXOLOTL_DO_NOT_TRACK": "1"})
    theirs = json.loads(done.stdout.splitlines()[-1])
    ours = {}
    for pattern in PATTERNS:
        error = unfrozen_pattern_error(pattern)
        regex = unfrozen_regex(pattern)
        ours[pattern] = ({"error": error} if error is not None else
                         {"matches": [name for name in NAMES if regex is not None and regex.match(name)]})
    assert ours == theirs
    assert sum("error" in answer for answer in ours.values()) == 4  # both outcomes are reached
