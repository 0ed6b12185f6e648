"""Core, lowest layer: frozen values the layers pass to each other and the pure rules over them: index
files and candidates, targets, requirements, verdicts (with the C++ demangler their text uses,
``cxxnames``), CUDA sonames, the CUDA variant of a wheel (``cuda_variant``), GPU architectures and where
their code runs (``cuda_arch``, ``arch_ranking``), the stack definition (``stack``), environment snapshots.

The core (``model``, ``binary``, ``analyze``, ``solve``, ``report``) never imports an edge (``net``,
``store``, ``index``, ``installers``, ``host``, ``probe``, ``ui``, ``commands``, the CLI): it is given
values, not readers. ``tests/test_import_contract.py`` enforces it, with no exceptions.
"""
