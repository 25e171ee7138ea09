"""vLLM's server gets a port that is free when chosen but released before vLLM binds it; when another process
takes it in between (here: one that holds it on purpose), the server dies binding it and `vllm_server` starts it
again on another port instead of failing the stage."""

from __future__ import annotations

import socket
import urllib.request

import pytest

from terminus.models import serve


@pytest.mark.slow
def test_a_port_taken_before_vllm_binds_it_is_replaced(tiny_model, tmp_path, monkeypatch):
    pytest.importorskip("vllm")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        lost = taken.getsockname()[1]
        chosen = iter([lost])  # the first choice is the port another process took; then a really free one
        real_free_port = serve.free_port
        monkeypatch.setattr(serve, "free_port", lambda: next(chosen, None) or real_free_port())
        starts = []
        with serve.vllm_server(
            tiny_model, served_name="tiny", log=tmp_path / "vllm.log", on_start=starts.append
        ) as url:
            assert f":{lost}/" not in url
            assert urllib.request.urlopen(url.replace("/v1", "/health"), timeout=5).status == 200
    assert len(starts) == 2 and starts[0].returncode not in (None, 0)


def test_a_given_port_that_is_taken_is_refused_in_one_line():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        port = taken.getsockname()[1]
        taken_port = pytest.raises(serve.ServeError, match=f"port {port} on 127.0.0.1 is taken")
        with taken_port, serve.vllm_server("any-model", port=port):
            pass


def test_a_bind_failure_is_told_from_other_deaths(tmp_path):
    log = tmp_path / "vllm.log"
    log.write_text("OSError: [Errno 98] error while attempting to bind on address ('127.0.0.1', 8000): address in use")
    assert serve._lost_the_port(log)
    log.write_text("RuntimeError: CUDA out of memory")
    assert not serve._lost_the_port(log)
