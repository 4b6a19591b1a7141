"""The FoundationDB engine's own parts: URI, API version, and a clear error without libfdb_c.
(Its behaviour is the contract suite's, which runs it when ``USHAS_FDB_CLUSTER_FILE`` is set.)"""
from __future__ import annotations

import ctypes.util
import subprocess
import sys

import fdb
import pytest
from skip_policy import FDB_LIBRARY_SKIP_REASON

from ushas_catalog.errors import InvalidArgument, StoreUnavailable
from ushas_catalog.kv import open_database
from ushas_catalog.kv.fdb import PREFERRED_API_VERSION, api_version, client_library_name, cluster_file_of

HAS_CLIENT_LIBRARY = ctypes.util.find_library("fdb_c") is not None


@pytest.mark.parametrize("uri,cluster_file", [
    ("fdb://", None),
    ("fdb:///", None),
    ("fdb:///etc/foundationdb/fdb.cluster", "/etc/foundationdb/fdb.cluster"),
    ("fdb:///tmp/with%20space/fdb.cluster", "/tmp/with space/fdb.cluster"),
])
def test_cluster_file_of(uri: str, cluster_file: str | None) -> None:
    assert cluster_file_of(uri) == cluster_file


@pytest.mark.parametrize("uri", ["fdb://host:4500/x", "fdb:///a?b=c", "fdbx:///a"])
def test_bad_fdb_uris(uri: str) -> None:
    with pytest.raises(InvalidArgument):
        cluster_file_of(uri)


def test_api_version_is_chosen_once_and_supported_by_the_bindings() -> None:
    assert api_version() == min(PREFERRED_API_VERSION, fdb.LATEST_API_VERSION)
    assert 710 <= api_version() <= fdb.LATEST_API_VERSION


@pytest.mark.skipif(HAS_CLIENT_LIBRARY, reason=FDB_LIBRARY_SKIP_REASON)
@pytest.mark.parametrize("uri", ["fdb://", "fdb:///etc/foundationdb/fdb.cluster"])
def test_without_libfdb_c_opening_names_the_missing_library(uri: str) -> None:
    with pytest.raises(StoreUnavailable, match="libfdb_c") as info:
        open_database(uri)
    assert client_library_name() in info.value.message


def test_tuple_versionstamps_pack_in_a_fresh_process() -> None:
    """``fdb.tuple`` packing of versionstamps works once ``ushas_catalog.kv`` is imported,
    with or without libfdb_c (the bindings otherwise need ``fdb.impl``)."""
    code = ("import ushas_catalog.kv, fdb.tuple as t; "
            "k = t.pack_with_versionstamp(('x', t.Versionstamp()), prefix=b'p'); "
            "assert k[-4:] == (len(b'p') + 4).to_bytes(4, 'little'), k; "
            "assert t.pack((t.Versionstamp(bytes(10), 1),)) == b'\\x33' + bytes(10) + b'\\x00\\x01'")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
