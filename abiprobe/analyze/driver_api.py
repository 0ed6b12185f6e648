"""Driver API symbols newer than CUDA 11, with the CUDA release whose driver first exports them.

Introduction versions come from the ``PFN_<name>_v<NNNNN>`` typedefs of the CUDA 13.0 toolkit's
``cudaTypedefs.h`` (``v12040`` = 12.4; for ``_vN`` names the newest PFN of the base name); every name is a
declaration or a ``#define`` target in that toolkit's ``cuda.h`` (tests check this against the local
headers). Symbols absent from the table are treated as present on every supported driver.
"""

from __future__ import annotations

DRIVER_SYMBOLS: dict[str, tuple[int, int]] = {
    "cuGetProcAddress_v2": (12, 0),
    "cuGraphInstantiateWithParams": (12, 0),
    "cuKernelGetAttribute": (12, 0),
    "cuKernelGetFunction": (12, 0),
    "cuKernelSetAttribute": (12, 0),
    "cuLibraryGetKernel": (12, 0),
    "cuLibraryGetUnifiedFunction": (12, 0),
    "cuLibraryLoadData": (12, 0),
    "cuLibraryLoadFromFile": (12, 0),
    "cuLibraryUnload": (12, 0),
    "cuTensorMapEncodeIm2col": (12, 0),
    "cuTensorMapEncodeTiled": (12, 0),
    "cuTensorMapReplaceAddress": (12, 0),
    "cuCoredumpGetAttribute": (12, 1),
    "cuMulticastAddDevice": (12, 1),
    "cuMulticastBindMem": (12, 1),
    "cuMulticastCreate": (12, 1),
    "cuGraphExecNodeSetParams": (12, 2),
    "cuMemAdvise_v2": (12, 2),
    "cuMemPrefetchAsync_v2": (12, 2),
    "cuFuncGetName": (12, 3),
    "cuGraphAddNode_v2": (12, 3),
    "cuGraphConditionalHandleCreate": (12, 3),
    "cuKernelGetName": (12, 3),
    "cuStreamBeginCaptureToGraph": (12, 3),
    "cuCtxFromGreenCtx": (12, 4),
    "cuDevResourceGenerateDesc": (12, 4),
    "cuDevSmResourceSplitByCount": (12, 4),
    "cuDeviceGetDevResource": (12, 4),
    "cuDeviceRegisterAsyncNotification": (12, 4),
    "cuFuncGetParamInfo": (12, 4),
    "cuFuncIsLoaded": (12, 4),
    "cuFuncLoad": (12, 4),
    "cuGreenCtxCreate": (12, 4),
    "cuGreenCtxDestroy": (12, 4),
    "cuGreenCtxRecordEvent": (12, 4),
    "cuGreenCtxWaitEvent": (12, 4),
    "cuLibraryEnumerateKernels": (12, 4),
    "cuStreamGetGreenCtx": (12, 4),
    "cuCtxCreate_v4": (12, 5),
    "cuCtxRecordEvent": (12, 5),
    "cuCtxWaitEvent": (12, 5),
    "cuGreenCtxStreamCreate": (12, 5),
    "cuKernelGetLibrary": (12, 5),
    "cuMemBatchDecompressAsync": (12, 6),
    "cuCheckpointProcessLock": (12, 8),
    "cuMemcpyBatchAsync": (12, 8),
    "cuStreamGetDevice": (12, 8),
    "cuTensorMapEncodeIm2colWide": (12, 8),
    "cuLogsRegisterCallback": (12, 9),
    "cuCtxGetDevice_v2": (13, 0),
    "cuCtxSynchronize_v2": (13, 0),
    "cuDeviceGetHostAtomicCapabilities": (13, 0),
    "cuMemGetDefaultMemPool": (13, 0),
    "cuMemcpyBatchAsync_v2": (13, 0),
}

_STREAM_SUFFIXES = ("_ptsz", "_ptds")


def driver_symbol_introduced(name: str) -> tuple[int, int] | None:
    """The CUDA release whose driver first exports ``name`` (``_ptsz`` folded); None when older."""
    for suffix in _STREAM_SUFFIXES:
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return DRIVER_SYMBOLS.get(name)


def is_driver_api_name(name: str) -> bool:
    """Driver API entry points: ``cu`` and an upper-case letter (``cuInit``, ``cuGreenCtxCreate``)."""
    return len(name) > 2 and name.startswith("cu") and name[2].isupper()
