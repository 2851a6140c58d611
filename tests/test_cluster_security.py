"""A cluster's workers compile and run what they are sent: reach one over TLS with its certificates, refuse
tls:// without them, and warn before sending programs over plain TCP beyond this machine; a scheduler out of
reach is the environment's failure."""

import json
import operator

import pytest

pytest.importorskip("distributed")
pytest.importorskip("cryptography")

from loopcost.errors import LoopcostError  # noqa: E402
from loopcost.runner.dask import _open_warning, executor, security_from  # noqa: E402


def test_a_tls_cluster_is_reached_with_its_certificates_and_refused_without(tmp_path):
    from distributed import LocalCluster, Security

    sec = Security.temporary()
    files = {}
    for key in ("tls_ca_file", "tls_client_cert", "tls_client_key"):
        (tmp_path / f"{key}.pem").write_text(getattr(sec, key))
        files[key] = str(tmp_path / f"{key}.pem")
    (tmp_path / "security.json").write_text(json.dumps(files))
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, protocol="tls", security=sec,
                      dashboard_address=None) as lc:
        address = lc.scheduler_address
        assert address.startswith("tls://")
        with executor(1, address, str(tmp_path / "security.json")) as ex:  # a --security file
            assert ex.submit(operator.add, 1, 2).result() == 3
        with executor(1, address, sec) as ex:
            assert ex.submit(operator.mul, 3, 4).result() == 12
        with pytest.raises(LoopcostError, match="needs certificates"), executor(1, address, None):
            pass


def test_plain_tcp_beyond_this_machine_is_warned_about():
    warning = _open_warning("tcp://10.0.0.5:8786")
    assert warning and "run code on its workers" in warning and "tls://" in warning
    assert _open_warning("10.0.0.5:8786")
    for address in ("tcp://127.0.0.1:8786", "tcp://localhost:8786", "tls://10.0.0.5:8786"):
        assert _open_warning(address) is None


def test_a_security_file_is_checked_before_anything_is_sent(tmp_path):
    f = tmp_path / "security.json"
    for text, message in [("not json", "not a readable JSON"), ('{"password": "x"}', "JSON object of"),
                          ('{"tls_ca_file": "/no/such/ca.pem"}', "is not a file")]:
        f.write_text(text)
        with pytest.raises(LoopcostError, match=message):
            security_from(str(f))


def test_a_scheduler_out_of_reach_is_the_environments_failure_in_one_line(monkeypatch, capsys):
    import socket

    from loopcost import cli
    from loopcost.runner import dask

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setattr(dask, "CONNECT_TIMEOUT", 2.0)
    address = f"tcp://127.0.0.1:{port}"
    code = cli.main(["optimize", "gemm", "--size", "small", "--search", "exec", "--cluster", address])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 3 and len(err) == 1 and f"cannot reach Dask scheduler {address}" in err[0], err
