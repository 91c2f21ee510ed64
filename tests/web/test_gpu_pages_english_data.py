"""The GPU list and compare pages mark the datasheet's English words ``lang="en"`` on the Russian page, as every
page marks the planner's own English (stop 54, branch qa11): the scale-up link ("none (no NVLink)", "Infinity Fabric
(3rd gen, 8 links; up to 4 packages per node)") and the training sources' tooltips were English text in a Russian
page with nothing saying so (a screen reader read them with Russian rules)."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient

from anchorgpu.hardware import list_gpus


def test_the_scale_up_link_and_the_source_tooltips_are_marked_english_on_the_russian_pages(client: TestClient) -> None:
    ru = client.get("/gpus?lang=ru").text
    for gpu in list_gpus():
        assert re.search(r'<td class="small" lang="en">' + re.escape(gpu.interconnect.replace("&", "&amp;"))
                         .replace("'", "(?:'|&#39;)") + "</td>", ru), gpu.name
    for page in (ru, client.get("/gpus/compare?a=h100&b=mi300x&lang=ru").text):
        tips = re.findall(r"<abbr [^>]*>", page)
        assert tips and all('lang="en"' in tip for tip in tips), tips[:3]
    en = client.get("/gpus?lang=en").text
    assert '<td class="small" lang="en">' not in en  # the English page needs no mark
