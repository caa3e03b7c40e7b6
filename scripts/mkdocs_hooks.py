"""mkdocs hooks (mkdocs.yml ``hooks:``): the package's docstrings are reST-flavoured (``:class:`X```);
on the API page mkdocstrings leaves the role in front of the code, which this drops."""

from __future__ import annotations

import re

ROLE = re.compile(r":(?:class|attr|func|meth|mod|data|exc|obj|const):<code>~?\.?([^<]*)</code>")


def on_page_content(html: str, **kwargs) -> str:
    return ROLE.sub(r"<code>\1</code>", html)
