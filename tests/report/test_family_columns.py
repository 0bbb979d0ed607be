"""The attention families' table names its second column for what it holds: the kinds of kernel each family ran,
several where it ran several (the H200 cuDNN trace: its generated SDPA kernel and a memset launched inside
``aten::_cudnn_attention_forward``, counted as a helper), in the terminal and on the page alike."""

from __future__ import annotations

import json

from attnscope.cli.main import main
from tests.rawtrace import H200, raw_events


def test_the_column_is_named_for_the_several_kinds_it_lists(tmp_path, capsys, monkeypatch):
    # the premise, from the raw trace: two GPU events, the generated SDPA kernel and a memset
    gpu = [e["name"] for e in raw_events(H200 / "sdpa_cudnn.json") if e.get("cat") in ("kernel", "gpu_memset")]
    assert len(gpu) == 2 and any(n.startswith("cudnn_generated_fort_native_sdpa") for n in gpu)
    monkeypatch.setenv("COLUMNS", "200")
    doc, page = tmp_path / "a.json", tmp_path / "a.html"
    assert main(["analyze", str(H200 / "sdpa_cudnn.json"), "--json", str(doc), "--html", str(page)]) == 0
    text = capsys.readouterr().out
    (fam,) = json.loads(doc.read_text())["results"][0]["trace_summary"]["attention_families"]
    kinds = ", ".join(fam["implementations"])
    assert kinds == "cuDNN generated SDPA, helper kernel"  # two kinds in one cell
    assert f"kernel kinds: {kinds}" in text or ("kernel kinds" in text and kinds in text)
    assert "implementation" not in text.split("attention", 1)[1].split("top kernels", 1)[0]
    html = page.read_text()
    assert "<th>kernel kinds</th>" in html and "<th>implementation</th>" not in html
