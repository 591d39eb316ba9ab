"""Stock-client compatibility harness: scenarios x clients against a broker, with a verdict each.

``python -m compat`` runs the matrix (see compat/__main__.py); tests/compat runs the same
scenarios under pytest. Public entry points: ``compat.runner.run_matrix``, ``compat.runner.run_one``,
``compat.scenarios.SCENARIOS``, ``compat.clients.ADAPTERS``, the report writers in ``compat.report``
and the targets in ``compat.targets``. What we knowingly do not support is listed in compat/GAPS.md.
"""
