"""The bundled JSON Schemas (Axolotl and DeepSpeed releases, the rule pack format) and the checker that walks a
config against them (`validator`)."""
