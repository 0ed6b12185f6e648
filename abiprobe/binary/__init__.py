"""Core: pure readers of binary structure over bytes or a bounded stream: ELF (``elf``, ``elf_layout``,
``elf_dynsym``), CUDA fatbins and cubins (``cuda``, ``cuda_fatbin``; the rules deciding where GPU code
runs are values of ``abiprobe.model.cuda_arch``), both joined (``objects``), zip directories (``zipdir``,
``zipguard``), wheel member paths (``wheel_members``), wheels and unpacked trees as facts (``wheel``), the
bounded reader they share (``bounded``) and Python sources (``pysource``). Itanium C++ names, which
verdicts carry, are demangled by ``abiprobe.model.cxxnames``.

Nothing here opens a connection, or a file other than the one it is given, and nothing imports a layer
above it (``analyze``, ``solve``, ``report``, the edges); ``tests/test_import_contract.py`` enforces it.
"""
